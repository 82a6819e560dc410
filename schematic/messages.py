"""What a run tells besides its output: a warning or a note, in parts a reader can take in.

A message says where (the file, the pools), its cause in one clause, the fix in another, and
the details that explain them. ``str()`` is the whole message on one line, as a library caller
or a log reads it; the command line prints the cause and the fix, the details on ``-v``
(:mod:`schematic.cli.telling`). The same message for several pools is one message naming them
(:func:`merged`): a note repeated per pool is a wall nobody reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

__all__ = ["POOLS_SHOWN", "Message", "merged", "pools_label"]

# Past this many pools a label says "and N more": the whole list is for -v.
POOLS_SHOWN = 3


def pools_label(source: str, names: Sequence[str], shown: int | None = POOLS_SHOWN) -> str:
    """``cluster.yaml: pool "a"`` or ``cluster.yaml: pools "a", "b", "c" and 9 more`` (every
    pool when ``shown`` is None)."""
    if len(names) == 1:
        return f'{source}: pool "{names[0]}"'
    named = names if shown is None else names[:shown]
    listed = ", ".join(f'"{name}"' for name in named)
    rest = len(names) - len(named)
    return f"{source}: pools {listed}" + (f" and {rest} more" if rest > 0 else "")


@dataclass(frozen=True, kw_only=True)
class Message:
    """A warning (something will not work as written) or a note (something to know).

    ``source`` is the file it is about ("" for none), ``pools`` the pools of that file it
    concerns; ``cause`` what is so, ``fix`` what to do (a clause, "" when nothing is to be
    done), ``details`` why, or how to check.
    """

    level: str
    cause: str
    fix: str = ""
    details: str = ""
    source: str = ""
    pools: tuple[str, ...] = ()

    def where(self, *, every_pool: bool = False) -> str:
        """The file and the pools: ``cluster.yaml: pools "a", "b"``."""
        if not self.pools:
            return self.source
        return pools_label(self.source, self.pools, None if every_pool else POOLS_SHOWN)

    def __str__(self) -> str:
        where = self.where(every_pool=True)
        said = "; ".join(part for part in (self.cause, self.details, self.fix) if part)
        return f"{self.level}: " * bool(self.level) + f"{where}: " * bool(where) + said


def merged(messages: Iterable[Message]) -> list[Message]:
    """Each message once, in the order first told; messages alike but for their pools become
    one naming every pool."""
    by_text: dict[Message, list[str]] = {}
    for message in messages:
        pools = by_text.setdefault(replace(message, pools=()), [])
        pools += [pool for pool in message.pools if pool not in pools]
    return [replace(message, pools=tuple(pools)) for message, pools in by_text.items()]
