"""What every command shares: the typer app they register on, and how they report.

Command modules import this module and the library, never each other.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from typer.core import TyperGroup

from schematic.errors import TalosSchematicError, printable

__all__ = [
    "CREDENTIALS_HELP",
    "JsonAliasOption",
    "MaxInputSizeOption",
    "PoolOption",
    "ProfilesOption",
    "TextFormat",
    "TextFormatOption",
    "app",
    "check_pool_names",
    "describe_os_error",
    "fail",
    "json_alias",
    "progress_line",
]

# Said once here, for every command that asks a factory (register, verify, versions,
# extensions --live, generate --register / --live-catalogue, lint --factory, upgrade
# --live-catalogue); each of those commands' own help says it again.
CREDENTIALS_HELP = (
    "Credentials, if the factory needs them, come only from the environment: "
    "TALOS_SCHEMATIC_FACTORY_TOKEN (bearer token) or TALOS_SCHEMATIC_FACTORY_AUTH "
    "(user:password); they are never printed."
)


class _ReportingGroup(TyperGroup):
    """Runs a command and turns what it lets escape into one message and an exit code.

    Commands map their own errors; this is the net under them, so a path nobody thought to
    check (a name longer than 255 bytes, a symbolic-link loop, a vanished directory) ends as
    ``talos-schematic: PATH: reason`` and exit 1, never a traceback.
    """

    def invoke(self, ctx: Any) -> Any:  # typer's click Context, a private module's name
        try:
            return super().invoke(ctx)
        except TalosSchematicError as err:
            raise fail(err) from None
        except OSError as err:
            raise fail(TalosSchematicError(describe_os_error(err))) from None


def describe_os_error(err: OSError) -> str:
    """``PATH: reason`` for a failed file-system call (both paths of a rename or link)."""
    names = [str(name) for name in (err.filename, err.filename2) if name is not None]
    reason = err.strerror or str(err) or type(err).__name__
    return ": ".join([" → ".join(names), reason] if names else [reason])


app = typer.Typer(
    name="talos-schematic",
    cls=_ReportingGroup,
    help=(
        "Talos Image Factory schematics for NVIDIA GPU node pools: offline schematic IDs, "
        "open/proprietary NVIDIA extension choice by GPU generation, and Cozystack "
        "KubernetesNodes values and Talos machine-config patches per pool.\n\n"
        "Offline unless a command or option asks the Image Factory. " + CREDENTIALS_HELP
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def fail(err: TalosSchematicError) -> typer.Exit:
    """Print a user-fixable error to stderr; the caller raises the returned Exit."""
    print(f"talos-schematic: {printable(str(err))}", file=sys.stderr)
    return typer.Exit(err.exit_code)


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
        end = "\n" if done == total else ""
        print(f"\r{label} {done}/{total}", end=end, file=sys.stderr, flush=True)

    return show


def _apply_max_input_size(value: str | None) -> str | None:
    # Every run sets the limit, so one run's --max-input-size never outlives it.
    from schematic.safe_yaml import DEFAULT_MAX_INPUT_SIZE, parse_size, set_max_input_size

    try:
        set_max_input_size(parse_size(value) if value else DEFAULT_MAX_INPUT_SIZE)
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
        help="Largest input file read, e.g. 64MiB or 500k (default 16MiB); "
        "a larger one is an error, read no further than the limit.",
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


def check_pool_names(source: str, known: list[str], wanted: list[str] | None) -> None:
    """A usage error naming each --pool the cluster file does not have, and the ones it has."""
    unknown = [name for name in dict.fromkeys(wanted or ()) if name not in known]
    if unknown:
        raise typer.BadParameter(
            f"{source} has no pool {', '.join(map(repr, unknown))}; its pools: {', '.join(known)}",
            param_hint="--pool",
        )


ProfilesOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--profiles",
        metavar="DIR",
        help="Directory of hardware profiles, searched before the shipped ones (repeatable).",
    ),
]
