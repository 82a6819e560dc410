"""Options several commands share: which factory they ask, and which facts they decide by.

``--facts FILE`` names a facts file written by ``talos-schematic facts refresh``; without it a
run uses ``talos-facts.yaml`` beside the cluster file (or, for a command without one, in the
current directory) when there is one, else the shipped tables. ``--assume-drivers-of vX.Y.Z``
plans a release neither knows with another release's NVIDIA drivers, said in the output.
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer

__all__ = [
    "AssumeDriversOption",
    "FactoryOption",
    "FactsOption",
    "QuietOption",
    "deciding_by_facts",
    "quieted",
]

# The exits that are a command's verdict, not an error that stopped it: 0 passed, 3 found
# errors (lint, check, triage), 4 nothing could be judged (triage).
VERDICT_EXITS = frozenset({0, 3, 4})

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

FactsOption = Annotated[
    Path | None,
    typer.Option(
        "--facts",
        metavar="FILE",
        show_default=False,
        help="Facts file from `talos-schematic facts refresh` (releases, withdrawn releases, "
        "extensions and NVIDIA drivers as the Image Factory serves them); default: "
        "talos-facts.yaml beside the cluster file (or in the current directory) if present, "
        "else the shipped tables.",
    ),
]
AssumeDriversOption = Annotated[
    str | None,
    typer.Option(
        "--assume-drivers-of",
        metavar="vX.Y.Z",
        show_default=False,
        help="For a release whose NVIDIA drivers neither the facts file nor the shipped "
        "tables know, use this release's drivers (said in the output) instead of refusing.",
    ),
]

QuietOption = Annotated[
    bool,
    typer.Option(
        "--quiet",
        "-q",
        help="Print nothing; the exit code alone is the verdict. An error that stops the run "
        "(exit 1 or 2) is still printed.",
    ),
]


@contextlib.contextmanager
def quieted(quiet: bool) -> Iterator[None]:
    """With --quiet, hold back what the block prints. What it said on stderr is printed after
    all when it ends in an error rather than a verdict, so a script still learns why."""
    if not quiet:
        yield
        return
    shown_out, shown_err = sys.stdout, sys.stderr
    held = io.StringIO()
    sys.stdout, sys.stderr = io.StringIO(), held
    try:
        yield
    except typer.Exit as done:
        if done.exit_code not in VERDICT_EXITS:
            shown_err.write(held.getvalue())
        raise
    except BaseException:
        shown_err.write(held.getvalue())
        raise
    finally:
        sys.stdout, sys.stderr = shown_out, shown_err


@contextlib.contextmanager
def deciding_by_facts(
    facts: Path | None, assume_drivers_of: str | None, beside: Path | None = None
) -> Iterator[str]:
    """Run the block with the facts file chosen by the rule above in effect; yields the line
    saying which facts these are and their date. Errors are the library's (the caller maps
    them to exit codes)."""
    from schematic.facts.release_facts import (
        facts_file_for,
        facts_note,
        load_facts,
        using_facts,
    )

    chosen = facts_file_for(facts, beside if beside is not None else Path())
    loaded = None if chosen is None else load_facts(chosen)
    with using_facts(loaded, assume_drivers_of):
        yield facts_note()
