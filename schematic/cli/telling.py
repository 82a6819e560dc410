"""How every command tells its warnings and notes: the one printer of :class:`Message`.

Each message is told once per command, a message alike for several pools once naming them;
its cause on the first line, its fix on the next, its details only with ``-v``. On a terminal
the lines are wrapped to its width; to a pipe or a file each part stays one line, whatever
the terminal the run came from, so a CI log is the same bytes on every machine and one
``grep`` finds a whole cause. ``COLUMNS``, when set, is the width either way (a user's choice
for a log, a test's for a terminal).
"""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Iterable
from typing import Annotated, Any, TextIO

import typer

from schematic.messages import Message, merged

__all__ = ["VerboseOption", "message_lines", "say", "tell", "width_of"]

PREFIX = "talos-schematic: "
# Narrower than this, wrapping breaks words into letters: the lines are left whole instead.
NARROWEST = 20

VerboseOption = Annotated[
    bool,
    typer.Option(
        "--verbose",
        "-v",
        help="Tell each warning's and note's details too (why, how to check), and every pool "
        "it concerns.",
    ),
]


def width_of(stream: Any) -> int | None:
    """The width to wrap at: ``COLUMNS`` when set, else the terminal's when ``stream`` is
    one; None (no wrapping) for a pipe or a file, or a width under :data:`NARROWEST`."""
    given = os.environ.get("COLUMNS", "")
    width: int | None = int(given) if given.isdigit() else None
    if width is None:
        try:
            width = os.get_terminal_size(stream.fileno()).columns if stream.isatty() else None
        except (AttributeError, OSError, ValueError):  # no descriptor (a test's capture)
            width = None
    return width if width is not None and width >= NARROWEST else None


def _wrapped(parts: list[str], width: int | None) -> list[str]:
    """Each part (a line of its own) wrapped at ``width``, its continuation indented under it
    by four more spaces; each part as it is without a width."""
    if width is None:
        return parts
    wrapped = []
    for part in parts:
        indent = " " * (len(part) - len(part.lstrip(" ")) + 4)
        # A name or a path stays whole where it fits: no break at its hyphens.
        wrapped += textwrap.wrap(part, width, subsequent_indent=indent, break_on_hyphens=False)
    return wrapped


def say(*lines: str, stream: TextIO | None = None) -> None:
    """Print report lines (a summary, what a check found) on stderr, wrapped as messages are."""
    out = sys.stderr if stream is None else stream
    for line in _wrapped(list(lines), width_of(out)):
        print(line, file=out)


def message_lines(message: Message, width: int | None, *, verbose: bool = False) -> list[str]:
    """The lines ``message`` is told in: cause, fix, and with ``verbose`` its details."""
    where = message.where(every_pool=verbose)
    head = f"{message.level}: " * bool(message.level) + f"{where}: " * bool(where)
    parts = [f"{PREFIX}{head}{message.cause}"]
    if message.fix:
        parts.append(f"  fix: {message.fix}")
    if verbose and message.details:
        parts.append(f"  details: {message.details}")
    # A part written on several lines (a refusal's "works on" and "options") keeps them.
    return _wrapped([line for part in parts for line in part.split("\n")], width)


def tell(
    messages: Iterable[Message], *, verbose: bool = False, stream: TextIO | None = None
) -> None:
    """Print ``messages`` (on stderr), each once, the same for several pools once."""
    out = sys.stderr if stream is None else stream
    width = width_of(out)
    for message in merged(messages):
        for line in message_lines(message, width, verbose=verbose):
            print(line, file=out)
