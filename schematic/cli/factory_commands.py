"""`talos-schematic register, verify, extensions, versions`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from schematic.cli import app as app
from schematic.cli import fail
from schematic.errors import SchematicError, TalosSchematicError

if TYPE_CHECKING:
    from collections.abc import Callable

    from schematic.factory import FactoryClient
    from schematic.model import Schematic

_CREDENTIALS_HELP = (
    "Credentials, if the factory needs them, come only from the environment: "
    "TALOS_SCHEMATIC_FACTORY_TOKEN (bearer token) or TALOS_SCHEMATIC_FACTORY_AUTH "
    "(user:password); they are never printed."
)

FactoryOption = Annotated[
    str | None,
    typer.Option(
        "--factory",
        metavar="URL",
        help="Image Factory base URL (default: $TALOS_SCHEMATIC_FACTORY, else "
        "https://factory.talos.dev).",
        show_default=False,
    ),
]
JobsOption = Annotated[
    int,
    typer.Option("--jobs", min=1, max=64, help="Requests in flight at once."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of lines.")]


def _client(factory: str | None, jobs: int = 8) -> FactoryClient:
    from schematic.factory import FactoryClient, resolve_factory_url

    return FactoryClient(resolve_factory_url(factory), max_in_flight=jobs)


def _read_schematic(path: Path) -> Schematic:
    from schematic.model import Schematic

    source = str(path)
    try:
        text = sys.stdin.buffer.read() if source == "-" else path.read_bytes()
    except OSError as exc:
        raise SchematicError(f"cannot read the file: {exc.strerror}", source=source) from None
    return Schematic.from_yaml(text, source=source)


def _progress(label: str) -> Callable[[int, int], None] | None:
    """A self-overwriting progress line on stderr, only when stderr is a terminal."""
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int) -> None:
        end = "\n" if done == total else ""
        print(f"\r{label} {done}/{total}", end=end, file=sys.stderr, flush=True)

    return show


@app.command(help=f"Register schematic files with the Image Factory. {_CREDENTIALS_HELP}")
def register(
    files: Annotated[
        list[Path],
        typer.Argument(metavar="FILE", help="Schematic files (YAML or JSON); - for stdin."),
    ],
    factory: FactoryOption = None,
    jobs: JobsOption = 8,
) -> None:
    """POST each distinct schematic once and print `<id>  <file>` per file."""
    from schematic.factory import register_schematics

    try:
        items = [(str(path), _read_schematic(path)) for path in files]
        with _client(factory, jobs) as client:
            registrations = register_schematics(
                client, items, progress=_progress("registering schematics")
            )
    except TalosSchematicError as err:
        raise fail(err) from None
    notices = dict.fromkeys(r.notice for r in registrations.values() if r.notice)
    for notice in notices:
        print(f"talos-schematic: {notice}", file=sys.stderr)
    for subject in dict.fromkeys(subject for subject, _ in items):
        print(f"{registrations[subject].id}  {subject}")


def _schematic_files(paths: list[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            inside = sorted(path.rglob("*.schematic.yaml"))
            if not inside:
                raise SchematicError("no *.schematic.yaml files here", source=str(path))
            found += inside
        else:
            found.append(path)
    return list(dict.fromkeys(found))


@app.command(
    help="Check that the Image Factory holds the given schematics, with the same body. "
    "Exit 3 when one is missing or different. " + _CREDENTIALS_HELP
)
def verify(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="PATH", help="Schematic files, or directories searched for *.schematic.yaml."
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", metavar="DIR", help="Generated output directory.")
    ] = None,
    factory: FactoryOption = None,
    jobs: JobsOption = 8,
) -> None:
    """`GET /schematics/{id}` for every schematic: present, missing or different."""
    from schematic.factory import verify_ids

    targets = [*(paths or []), *([out] if out is not None else [])]
    if not targets:
        raise typer.BadParameter("give schematic files, a directory, or --out DIR")
    try:
        files = _schematic_files(targets)
        schematics = [(str(path), _read_schematic(path)) for path in files]
        with _client(factory, jobs) as client:
            results = verify_ids(client, [(subject, s.id, s) for subject, s in schematics])
    except TalosSchematicError as err:
        raise fail(err) from None
    for result in results:
        print(f"{result.status:<9}  {result.id}  {result.subject}")
        if result.detail:
            print(f"talos-schematic: {result.subject}: {result.detail}", file=sys.stderr)
    bad = [r for r in results if r.status != "present"]
    if bad:
        print(
            f"talos-schematic: {client.url}: {len(bad)} of {len(results)} schematics missing "
            "or different; `talos-schematic register` them",
            file=sys.stderr,
        )
        raise typer.Exit(3)


@app.command(
    help="List the official extensions of a Talos version: the packaged catalogue, or with "
    "--live the factory's list with each extension's image ref and digest. " + _CREDENTIALS_HELP
)
def extensions(
    talos: Annotated[str, typer.Option("--talos", metavar="vX.Y.Z", help="Talos version.")],
    live: Annotated[
        bool, typer.Option("--live", help="Ask the factory (refreshes the on-disk cache).")
    ] = False,
    as_json: JsonOption = False,
    factory: FactoryOption = None,
) -> None:
    """Official extensions for one Talos version."""
    try:
        if live:
            from schematic.factory import live_extensions

            with _client(factory) as client:
                infos = live_extensions(client, talos, ttl=0)
            rows = [info.model_dump() for info in sorted(infos, key=lambda i: i.name)]
        else:
            from schematic.catalog import extensions_for

            rows = [{"name": name} for name in sorted(extensions_for(talos))]
    except TalosSchematicError as err:
        raise fail(err) from None
    if as_json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    width = max((len(row["name"]) for row in rows), default=0)
    for row in rows:
        if live:
            print(f"{row['name']:<{width}}  {row['ref']}  {row['digest']}")
        else:
            print(row["name"])


@app.command(help=f"List the Talos versions the Image Factory offers. {_CREDENTIALS_HELP}")
def versions(as_json: JsonOption = False, factory: FactoryOption = None) -> None:
    """`GET /versions`."""
    try:
        with _client(factory) as client:
            listed = client.versions()
    except TalosSchematicError as err:
        raise fail(err) from None
    if as_json:
        print(json.dumps(listed, indent=2))
    else:
        for version in listed:
            print(version)
