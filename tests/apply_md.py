"""Reading ``APPLY.md`` back in tests: the command lines of its ``sh`` blocks."""

from __future__ import annotations

import re


def commands(plan: str) -> list[str]:
    """Every command line of APPLY.md's sh blocks, in order."""
    lines: list[str] = []
    for block in re.findall(r"```sh\n(.*?)```", plan, flags=re.DOTALL):
        lines += [line.strip() for line in block.splitlines() if line.strip()]
    return lines
