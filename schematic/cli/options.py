"""Options several commands share: which factory they ask, and which facts they decide by.

``--facts FILE`` names a facts file written by ``talos-schematic facts refresh``; without it a
run uses ``talos-facts.yaml`` beside the cluster file (or, for a command without one, in the
current directory) when there is one, else the shipped tables. ``--assume-drivers-of vX.Y.Z``
plans a release neither knows with another release's NVIDIA drivers, said in the output.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer

__all__ = ["AssumeDriversOption", "FactoryOption", "FactsOption", "deciding_by_facts"]

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
