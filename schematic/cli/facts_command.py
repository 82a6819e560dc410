"""`talos-schematic facts refresh`: the factory's releases and drivers, into a facts file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from schematic.cli.base import CREDENTIALS_HELP, app, fail, progress_line
from schematic.cli.options import FactoryOption
from schematic.errors import TalosSchematicError

facts_app = typer.Typer(
    name="facts",
    help="Facts about Talos releases, read from an Image Factory.\n\n"
    "Example: talos-schematic facts refresh --factory https://factory.talos.dev",
    no_args_is_help=True,
)
app.add_typer(facts_app)


@facts_app.command(
    help="Read the factory's releases, the ones it withdrew and each release's official "
    "extensions (with the NVIDIA drivers their tags carry) into a facts file, to commit "
    "beside the cluster file; every command that decides by release reads it from there "
    "(or from --facts FILE). The file changes only when the factory's answers do. "
    + CREDENTIALS_HELP
    + "\n\nExample: talos-schematic facts refresh --out talos-facts.yaml",
    short_help="Read the factory's releases and NVIDIA drivers into a facts file.",
)
def refresh(
    factory: FactoryOption = None,
    out: Annotated[
        Path, typer.Option("--out", metavar="FILE", help="The facts file to write.")
    ] = Path("talos-facts.yaml"),
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="vX.Y.Z",
            show_default=False,
            help="Read the extensions of releases from this one on (default: the newest two "
            "minor lines the factory serves).",
        ),
    ] = None,
) -> None:
    """Write the facts file when the factory's answers changed."""
    from schematic.factory.client import FactoryClient, resolve_factory_url
    from schematic.factory.refresh import refresh_facts

    try:
        with FactoryClient(resolve_factory_url(factory)) as client:
            done = refresh_facts(
                client, out, since=since, progress=progress_line("reading releases:")
            )
    except TalosSchematicError as err:
        raise fail(err) from None
    if not done.written:
        typer.echo(f"{out}: unchanged ({len(done.releases)} releases)", err=True)
        return
    first, last = (done.releases[0], done.releases[-1]) if done.releases else ("-", "-")
    typer.echo(f"{out}: {len(done.releases)} releases ({first} … {last})", err=True)
    if done.withdrawn is None:
        typer.echo("the factory does not list withdrawn releases (before v1.3.3)", err=True)
    elif done.withdrawn:
        typer.echo("withdrawn: " + ", ".join(map(str, done.withdrawn)), err=True)
    for line in done.drivers:
        typer.echo(line, err=True)
