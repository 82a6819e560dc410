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
from schematic.cli.options import FactoryOption, FactsOption, deciding_by_facts
from schematic.cli.telling import tell
from schematic.errors import TalosSchematicError
from schematic.messages import Message

if TYPE_CHECKING:
    from schematic.factory.client import FactoryClient


JobsOption = Annotated[
    int,
    typer.Option("--jobs", metavar="N", min=1, max=64, help="Requests in flight at once."),
]


def _client(factory: str | None, jobs: int = 8) -> FactoryClient:
    from schematic.factory.client import FactoryClient, resolve_factory_url

    return FactoryClient(resolve_factory_url(factory), max_in_flight=jobs)


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
        from schematic.factory.checks import read_schematic

        items = [(str(path), read_schematic(path)) for path in files]
        with _client(factory, jobs) as client:
            registrations = register_schematics(
                client, items, progress=progress_line("registering schematics")
            )
    except TalosSchematicError as err:
        raise fail(err) from None
    tell(Message(level="", cause=r.notice) for r in registrations.values() if r.notice)
    for subject in dict.fromkeys(subject for subject, _ in items):
        print(f"{registrations[subject].id}  {subject}")


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
    from schematic.factory.checks import verify_checks
    from schematic.factory.client import FACTORY_ENV, FactoryClient, resolve_factory_url, verify_ids

    targets = [*(paths or []), *([out] if out is not None else [])]
    if not targets:
        raise typer.BadParameter("give --out DIR, a cluster file, schematic files or a directory")
    try:
        checks, named_urls = verify_checks(targets, tuple(profiles or ()), tuple(pool or ()))
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
    facts: FactsOption = None,
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
            from schematic.plan.release import release_of

            with deciding_by_facts(facts, None) as facts_used:
                release = release_of(talos)
            rows = [{"name": name} for name in sorted(release.extensions)]
            tables = [release.tables_note] if release.tables_note else []
            tell(
                [
                    Message(level="", cause=facts_used),
                    *(Message(level="note", cause=note) for note in tables),
                ]
            )
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
