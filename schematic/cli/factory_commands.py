"""`talos-schematic register, verify, extensions, versions`."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from schematic.cli.base import (
    CREDENTIALS_HELP,
    JsonAliasOption,
    MaxInputSizeOption,
    PoolOption,
    TextFormat,
    TextFormatOption,
    app,
    fail,
    json_alias,
    progress_line,
)
from schematic.errors import OutputError, SchematicError, TalosSchematicError

if TYPE_CHECKING:
    from schematic.core.model import Schematic
    from schematic.factory.client import FactoryClient


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
    typer.Option("--jobs", metavar="N", min=1, max=64, help="Requests in flight at once."),
]


def _client(factory: str | None, jobs: int = 8) -> FactoryClient:
    from schematic.factory.client import FactoryClient, resolve_factory_url

    return FactoryClient(resolve_factory_url(factory), max_in_flight=jobs)


def _read_schematic(path: Path) -> Schematic:
    from schematic.core.model import Schematic
    from schematic.safe_yaml import read_bytes, read_problem

    source = str(path)
    try:
        text = read_bytes(source)
    except OSError as exc:
        raise SchematicError(read_problem(exc), source=source) from None
    return Schematic.from_yaml(text, source=source)


@app.command(
    help=f"Register schematic files with the Image Factory. {CREDENTIALS_HELP}\n\n"
    "Example: talos-schematic register deploy/mycluster/*/schematic.yaml",
    short_help="Register schematic files with the Image Factory and print their IDs.",
)
def register(
    files: Annotated[
        list[Path],
        typer.Argument(metavar="FILE...", help="Schematic files (YAML or JSON); - for stdin."),
    ],
    factory: FactoryOption = None,
    jobs: JobsOption = 8,
    max_input_size: MaxInputSizeOption = None,
) -> None:
    """POST each distinct schematic once and print `<id>  <file>` per file."""
    from schematic.factory.client import register_schematics

    try:
        items = [(str(path), _read_schematic(path)) for path in files]
        with _client(factory, jobs) as client:
            registrations = register_schematics(
                client, items, progress=progress_line("registering schematics")
            )
    except TalosSchematicError as err:
        raise fail(err) from None
    notices = dict.fromkeys(r.notice for r in registrations.values() if r.notice)
    for notice in notices:
        print(f"talos-schematic: {notice}", file=sys.stderr)
    for subject in dict.fromkeys(subject for subject, _ in items):
        print(f"{registrations[subject].id}  {subject}")


def _schematic_files(path: Path) -> list[Path]:
    if not path.is_dir():
        return [path]
    # Links are not followed, and an entry that vanishes or cannot be listed while the walk runs
    # (`verify /` passes /proc) is passed by, as rglob did not.
    inside = sorted(
        Path(root, name)
        for root, _, names in os.walk(path, onerror=lambda _: None)
        for name in names
        if name.endswith(".schematic.yaml")
    )
    if not inside:
        raise SchematicError("no *.schematic.yaml files here", source=str(path))
    return inside


# What `verify` checks: a subject (file or pools), the ID, and the body expected under it.
_Check = tuple[str, str, "Schematic | None"]


def _cluster_text(path: Path) -> str | None:
    """The file's text when it is a cluster file (a mapping with ``pools``), else None."""
    import yaml

    if str(path) == "-" or not path.is_file():
        return None
    from schematic.safe_yaml import load, read_text

    try:
        text = read_text(path)
        data = load(text)
    except (OSError, yaml.YAMLError):
        return None  # read again as a schematic, whose error then says what is wrong
    return text if isinstance(data, dict) and "pools" in data else None


def _cluster_checks(
    path: Path, text: str, profiles: list[Path] | None, pools: list[str] | None
) -> tuple[list[_Check], str]:
    """One check per distinct schematic of the cluster file's plan, and its factory URL."""
    from schematic.inputs.cluster_file import parse_cluster
    from schematic.plan.cluster import (
        boot_media_schematics,
        plan_cluster,
        pools_by_schematic,
        pools_label,
    )

    cluster = parse_cluster(text, str(path))
    plan = plan_cluster(
        cluster, source=str(path), base_dir=path.parent, profile_dirs=tuple(profiles or ())
    )
    if pools:
        import dataclasses

        plan = dataclasses.replace(plan, pools=tuple(p for p in plan.pools if p.name in pools))
    checks: list[_Check] = [
        (pools_label(plan.source, [pool.name for pool in pools]), schematic_id, pools[0].schematic)
        for schematic_id, pools in pools_by_schematic(plan).items()
    ]
    # The boot media's own schematics (boot.schematic), one check per distinct one.
    booting = boot_media_schematics(plan)
    if booting:
        from schematic.core.model import Schematic

        checks += [(label, key, Schematic.from_yaml(body)) for label, key, body in booting]
    return checks, plan.talos.image_factory_url


def _pool_file(directory: Path, index_path: Path, name: str, file: str) -> bytes | None:
    """A pool's file, read as the tool reads its own (never through a link, never a FIFO,
    within the size limit); None when the index records no such file."""
    from schematic.output.outdir import read_owned_file

    try:
        return read_owned_file(directory, f"{name}/{file}")
    except OSError as err:
        raise OutputError(
            f"{index_path}: pool {name!r}: {name}/{file}: {err.strerror or err}; not read"
        ) from None


def _generated_checks(directory: Path, pools: list[str] | None) -> tuple[list[_Check], str | None]:
    """One check per pool of a `generate --out` directory (the ``pools`` named, if any): its
    index ID, and its ``schematic.yaml`` as the expected body when that file was written; and
    the factory the index records."""
    from schematic.core.model import Schematic
    from schematic.output.outdir import INDEX, read_index

    index = read_index(directory)
    index_path = directory / INDEX
    if index is None:
        raise OutputError(f"{index_path}: not found")
    checks: list[_Check] = []
    boot_checks: list[_Check] = []  # listed after the installers' schematics
    recorded: str | None = index.image_factory_url
    for entry in index.pools:
        name, schematic_id = str(entry["name"]), str(entry["schematicID"])
        if pools and name not in pools:
            continue
        boot_id = entry.get("bootSchematicID")
        urls = f"{name}/urls.yaml" in index.files
        if isinstance(boot_id, str):
            subject = f'{index_path}: pool "{name}" boot media'
            body = _pool_file(directory, index_path, name, "urls.yaml") if urls else None
            boot_checks.append(_boot_check(index_path, name, boot_id, body, subject))
        if f"{name}/schematic.yaml" not in index.files:
            # Written without the schematic kind: only presence can be checked.
            checks.append((f'{index_path}: pool "{name}"', schematic_id, None))
            continue
        path = directory / name / "schematic.yaml"
        text = _pool_file(directory, index_path, name, "schematic.yaml")
        if text is None:
            raise SchematicError(
                "missing; the directory was edited, regenerate it", source=str(path)
            )
        schematic = Schematic.from_yaml(text, source=str(path))
        if schematic.id != schematic_id:
            raise SchematicError(
                f"this body's ID is {schematic.id}, but {INDEX} gives pool {name!r} the "
                f"ID {schematic_id}; the directory was edited, regenerate it",
                source=str(path),
            )
        checks.append((str(path), schematic_id, schematic))
    return checks + boot_checks, recorded


def _boot_check(
    index_path: Path, name: str, boot_id: str, urls: bytes | None, subject: str
) -> _Check:
    """A pool's boot-media schematic: its ``urls.yaml`` holds the body (``bootSchematic``)."""
    import yaml

    from schematic.core.model import Schematic
    from schematic.safe_yaml import load

    if urls is None:
        return (subject, boot_id, None)  # written without urls.yaml: only presence
    path = index_path.parent / name / "urls.yaml"
    try:
        document = load(urls)
    except (yaml.YAMLError, ValueError):
        document = None
    body = document.get("bootSchematic") if isinstance(document, dict) else None
    if not isinstance(body, str):
        raise SchematicError(
            f"{index_path.name} gives pool {name!r} the boot schematic {boot_id}, but this "
            "file holds no bootSchematic body; the directory was edited, regenerate it",
            source=str(path),
        )
    schematic = Schematic.from_yaml(body, source=str(path))
    if schematic.id != boot_id:
        raise SchematicError(
            f"this bootSchematic's ID is {schematic.id}, but {index_path.name} gives pool "
            f"{name!r} the boot schematic {boot_id}; the directory was edited, regenerate it",
            source=str(path),
        )
    return (f"{path} (bootSchematic)", boot_id, schematic)


def _verify_checks(
    paths: list[Path], profiles: list[Path] | None, pools: list[str] | None = None
) -> tuple[list[_Check], list[str]]:
    """Checks for every path in order, and the factory URLs the cluster files (or the URLs
    generated from them) name."""
    from schematic.output.outdir import INDEX

    checks: list[_Check] = []
    named_urls: list[str] = []
    seen: set[Path] = set()
    for path in paths:
        found: list[_Check]
        url: str | None
        if path.is_dir() and (path / INDEX).is_file():
            found, url = _generated_checks(path, pools)
        elif (text := _cluster_text(path)) is not None:
            found, url = _cluster_checks(path, text, profiles, pools)
        else:
            for file in _schematic_files(path):
                if file not in seen:
                    seen.add(file)
                    schematic = _read_schematic(file)
                    checks.append((str(file), schematic.id, schematic))
            continue
        checks += found
        if url is not None:
            named_urls.append(url)
    return checks, list(dict.fromkeys(named_urls))


@app.command(
    short_help="Check that the Image Factory holds the given schematics, with the same body.",
    help="Check that the Image Factory holds the given schematics, with the same body. "
    "PATH is a directory `generate --out` wrote (its index.yaml IDs, each pool's "
    "schematic.yaml as the body, and a boot.schematic's bootSchematic in urls.yaml), a "
    "cluster file (its plan, one check per distinct schematic), a schematic file, or a "
    "directory searched for *.schematic.yaml. "
    "Exit 3 when one is missing or different. " + CREDENTIALS_HELP + "\n\n"
    "Example: talos-schematic verify deploy/mycluster cluster.yaml",
)
def verify(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="[PATH]...",
            help="Generated output directories, cluster files, schematic files, or "
            "directories searched for *.schematic.yaml.",
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", metavar="DIR", help="Directory an earlier `generate --out` wrote."),
    ] = None,
    factory: Annotated[
        str | None,
        typer.Option(
            "--factory",
            metavar="URL",
            help="Image Factory base URL (default: $TALOS_SCHEMATIC_FACTORY, else the cluster "
            "file's talos.imageFactoryURL, or for generated output the factory its urls.yaml "
            "boot from, else https://factory.talos.dev).",
            show_default=False,
        ),
    ] = None,
    profiles: Annotated[
        list[Path] | None,
        typer.Option(
            "--profiles",
            metavar="DIR",
            help="Directory of hardware profiles for cluster files (repeatable).",
        ),
    ] = None,
    pool: PoolOption = None,
    jobs: JobsOption = 8,
    max_input_size: MaxInputSizeOption = None,
) -> None:
    """`GET /schematics/{id}` for every schematic: present, missing or different."""
    from schematic.factory.client import FACTORY_ENV, FactoryClient, resolve_factory_url, verify_ids

    targets = [*(paths or []), *([out] if out is not None else [])]
    if not targets:
        raise typer.BadParameter("give --out DIR, a cluster file, schematic files or a directory")
    try:
        checks, named_urls = _verify_checks(targets, profiles, pool)
        if len(named_urls) > 1 and not (factory or os.environ.get(FACTORY_ENV)):
            raise typer.BadParameter(
                f"the inputs name different factories ({', '.join(named_urls)})",
                param_hint="--factory",
            )
        url = resolve_factory_url(factory, named_urls[0] if named_urls else None)
        with FactoryClient(url, max_in_flight=jobs) as client:
            results = verify_ids(client, checks)
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
            "or different; register them (`talos-schematic generate --register`, or "
            "`talos-schematic register`)",
            file=sys.stderr,
        )
        raise typer.Exit(3)


@app.command(
    short_help="List the official extensions of a Talos version (packaged, or --live).",
    help="List the official extensions of a Talos version: the packaged catalogue, or with "
    "--live the factory's list with each extension's image ref and digest. "
    + CREDENTIALS_HELP
    + "\n\nExample: talos-schematic extensions --talos v1.13.9 --live --format json",
)
def extensions(
    talos: Annotated[str, typer.Option("--talos", metavar="vX.Y.Z", help="Talos version.")],
    live: Annotated[
        bool, typer.Option("--live", help="Ask the factory (refreshes the on-disk cache).")
    ] = False,
    output_format: TextFormatOption = TextFormat.text,
    as_json: JsonAliasOption = False,
    factory: FactoryOption = None,
) -> None:
    """Official extensions for one Talos version."""
    as_json = json_alias(output_format, as_json, TextFormat.text) == TextFormat.json
    try:
        if live:
            from schematic.factory.cache import live_extensions

            with _client(factory) as client:
                infos = live_extensions(client, talos, ttl=0)
            rows = [info.model_dump() for info in sorted(infos, key=lambda i: i.name)]
        else:
            from schematic.facts.catalog import extensions_for

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


@app.command(
    help=f"List the Talos versions the Image Factory offers. {CREDENTIALS_HELP}\n\n"
    "Example: talos-schematic versions --factory https://factory.example.com -f json",
    short_help="List the Talos versions the Image Factory offers.",
)
def versions(
    output_format: TextFormatOption = TextFormat.text,
    as_json: JsonAliasOption = False,
    factory: FactoryOption = None,
) -> None:
    """`GET /versions`."""
    as_json = json_alias(output_format, as_json, TextFormat.text) == TextFormat.json
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
