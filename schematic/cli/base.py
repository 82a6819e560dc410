"""What every command shares: the typer app they register on, and how they report.

Command modules import this module and the library, never each other.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from schematic.cli.group import ReportingGroup, fail
from schematic.cli.telling import tell
from schematic.errors import TalosSchematicError
from schematic.facts.chart_targets import chart_choices

if TYPE_CHECKING:
    from schematic.api.requests import Detail, Result

__all__ = [
    "CREDENTIALS_HELP",
    "AllowIgnoredOption",
    "ChartOption",
    "ClusterArgument",
    "JsonAliasOption",
    "LayoutChoice",
    "LayoutOption",
    "LiveCatalogueOption",
    "MaxInputSizeOption",
    "PoolOption",
    "ProfilesOption",
    "TextFormat",
    "TextFormatOption",
    "app",
    "fail",
    "json_alias",
    "out_directory",
    "progress_line",
    "run_library",
]

# Said once here, for every command that asks a factory (register, verify, versions,
# extensions --live, generate --register / --live-catalogue, lint --factory, upgrade
# --live-catalogue); each of those commands' own help says it again.
CREDENTIALS_HELP = (
    "Credentials, if the factory needs them, come only from the environment: "
    "TALOS_SCHEMATIC_FACTORY_TOKEN (bearer token) or TALOS_SCHEMATIC_FACTORY_AUTH "
    "(user:password); they are never printed."
)


app = typer.Typer(
    name="talos-schematic",
    cls=ReportingGroup,
    help=(
        "Talos Image Factory schematics for NVIDIA GPU node pools: offline schematic IDs, "
        "open/proprietary NVIDIA extension choice by GPU generation, and Cozystack "
        "KubernetesNodes values and Talos machine-config patches per pool.\n\n"
        "Offline unless a command or option asks the Image Factory. " + CREDENTIALS_HELP
    ),
    no_args_is_help=True,
    # --install-completion and --show-completion; the scripts call back through
    # _TALOS_SCHEMATIC_COMPLETE, which docs/commands.md shows as well.
    add_completion=True,
    pretty_exceptions_enable=False,
    # Plain help (cli/group.py says why): every word of every help text is printed.
    rich_markup_mode=None,
)


def _print_version(value: bool) -> None:
    if value:
        from schematic import __version__

        print(f"talos-schematic {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    _version: Annotated[
        bool,
        typer.Option(
            "--version",
            is_eager=True,
            callback=_print_version,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    """Talos Image Factory schematics for NVIDIA GPU node pools."""


def progress_line(label: str) -> Callable[[int, int], None] | None:
    """A self-overwriting progress line on stderr, only when stderr is a terminal."""
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int) -> None:
        stream = getattr(sys.stderr, "unescaped", sys.stderr)  # its own \r, not escaped
        print(f"\r{label} {done}/{total}", end="\n" * (done == total), file=stream, flush=True)

    return show


def _apply_max_input_size(value: str | None) -> str | None:
    # Every run sets the limit, so one run's --max-input-size never outlives it.
    from schematic.safe_yaml import parse_size, set_max_input_size

    try:
        set_max_input_size(parse_size(value) if value else None)  # None: each kind's own
    except ValueError as err:
        raise typer.BadParameter(str(err)) from None
    return value


MaxInputSizeOption = Annotated[
    str | None,
    typer.Option(
        "--max-input-size",
        metavar="SIZE",
        callback=_apply_max_input_size,
        show_default=False,
        help="Largest input file read, for every kind, e.g. 64MiB or 500k (default: each kind's "
        "own limit, from 256KiB for a hardware profile to 64MiB for JSON evidence; the table is "
        "in docs/security.md); a larger one is an error.",
    ),
]


# One spelling of JSON output across commands: `--format json` (`-f json`) is the option,
# `--json` its alias, on every command that prints a report.
class TextFormat(StrEnum):
    text = "text"
    json = "json"


TextFormatOption = Annotated[
    TextFormat, typer.Option("--format", "-f", help="Print as text or json.")
]
JsonAliasOption = Annotated[bool, typer.Option("--json", help="The same as --format json.")]
_Format = TypeVar("_Format", bound=str)
_Asked = TypeVar("_Asked")  # a request of the library's


def json_alias(chosen: _Format, as_json: bool, default: _Format) -> _Format:
    """``--format`` after ``--json``: json, unless another non-default format was also asked
    for, which is a usage error. Formats are a StrEnum's members or plain strings."""
    if not as_json:
        return chosen
    json_format = type(chosen)("json")
    if chosen not in (default, json_format):
        raise typer.BadParameter(f"--json is --format json, not {chosen}", param_hint="--json")
    return json_format


PoolOption = Annotated[
    list[str] | None,
    typer.Option(
        "--pool",
        metavar="NAME",
        help=(
            "Only this pool of the cluster file (repeatable); with generate --out, the other "
            "pools' files are kept as they are."
        ),
        show_default=False,
    ),
]


ProfilesOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--profiles",
        metavar="DIR",
        help="Directory of hardware profiles, searched before the shipped ones (repeatable).",
    ),
]


class LayoutChoice(StrEnum):
    osimage = "osimage"
    schematicid = "schematicid"
    talos = "talos"


ClusterArgument = Annotated[
    Path,
    typer.Argument(help="Cluster file (YAML): cluster, talos, nvidia, pools.", metavar="CLUSTER"),
]
LayoutOption = Annotated[
    LayoutChoice | None,
    typer.Option(
        "--layout",
        help=(
            "Where values carry the schematic: osimage (osImage.factory), schematicid "
            "(root schematicID, cozystack PR #3571), talos (talos.schematicID, Cozystack v1.6.x); "
            "default: the chart target's."
        ),
        show_default=False,
    ),
]
ChartOption = Annotated[
    str | None,
    typer.Option(
        "--chart",
        metavar="TARGET",
        help=(
            f"The Cozystack release or chart the values are for: {chart_choices()}; overrides "
            "the cluster file's cozystack.version."
        ),
        show_default=False,
    ),
]
AllowIgnoredOption = Annotated[
    bool,
    typer.Option(
        "--allow-ignored-keys",
        help=(
            "Write keys the chart target ignores instead of refusing them, with a warning "
            "naming what will not happen."
        ),
    ),
]
LiveCatalogueOption = Annotated[
    bool,
    typer.Option(
        "--live-catalogue",
        help=(
            "Check every pool's extensions (cached on disk for a day) and board overlay "
            "against the factory's lists for the Talos version; with --out, also write "
            "extensions.lock.yaml pinning each "
            "extension's image ref and digest."
        ),
    ),
]


def out_directory(out: str | None) -> Path | None:
    """``--out`` as a path; an empty one (an unset shell variable) is a usage error, not the
    current directory."""
    if out is None:
        return None
    if not out:
        raise typer.BadParameter(
            "is empty (an unset variable?); give the directory to write", param_hint="--out"
        )
    return Path(out)


def run_library(
    call: Callable[[_Asked], Result[Detail]], request: _Asked, *, verbose: bool = False
) -> Result[Detail]:
    """A call of the library: its text and messages printed (their details with
    ``verbose``), its errors mapped to exit codes."""
    try:
        result = call(request)
    except TalosSchematicError as err:
        raise fail(err) from None
    # Text first: what a run tells follows the artifact it tells about, as on a terminal.
    # An artifact: as it is to a pipe or file (TerminalSafeStream.write_data).
    getattr(sys.stdout, "write_data", sys.stdout.write)(result.text)
    sys.stdout.flush()
    tell(result.messages, verbose=verbose)
    return result
