"""What every command shares: the typer app they register on, and how they report.

Command modules import this module and the library, never each other.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import typer

from schematic.errors import TalosSchematicError

__all__ = ["app", "fail", "progress_line"]

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


@app.callback()
def _root() -> None:
    """Talos Image Factory schematics for NVIDIA GPU node pools."""


def progress_line(label: str) -> Callable[[int, int], None] | None:
    """A self-overwriting progress line on stderr, only when stderr is a terminal."""
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int) -> None:
        end = "\n" if done == total else ""
        print(f"\r{label} {done}/{total}", end=end, file=sys.stderr, flush=True)

    return show
