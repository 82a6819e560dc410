"""The `talos-schematic` command line: parse arguments, call the library, map errors to exit codes.

Exit codes: 0 ok, 1 error (bad input, refused combination, factory failure), 2 usage,
3 `check` found drift / `lint` found errors / `verify` found a missing schematic /
`detect --against` found a difference.

Each command lives in its own module below and registers itself on ``app``; command modules
import the library lazily, inside the command, so `--help` and offline commands start fast.
"""

from __future__ import annotations

import sys

import typer

from schematic.errors import TalosSchematicError

app = typer.Typer(
    name="talos-schematic",
    help=(
        "Talos Image Factory schematics for NVIDIA GPU node pools: offline schematic IDs, "
        "open/proprietary NVIDIA extension choice by GPU generation, and Cozystack "
        "KubernetesNodes values and Talos machine-config patches per pool."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def fail(err: TalosSchematicError) -> typer.Exit:
    """Print a user-fixable error to stderr; the caller raises the returned Exit."""
    print(f"talos-schematic: {err}", file=sys.stderr)
    return typer.Exit(err.exit_code)


def _register_commands() -> None:
    # Imported for their side effect of adding commands to `app`.
    from schematic.cli import (  # noqa: F401
        detect_command,
        factory_commands,
        generate_command,
        gpu_command,
        id_command,
        lint_command,
        schema_command,
    )


def main() -> None:
    """Console-script entry point."""
    _register_commands()
    try:
        app()
    except TalosSchematicError as err:
        raise SystemExit(fail(err).exit_code) from None
