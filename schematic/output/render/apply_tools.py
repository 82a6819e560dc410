"""``APPLY.md``'s steps for tools that configure a cluster themselves (talhelper, Omni,
Terraform): each file goes into that tool's repository, and the tool's commands apply it.
Each step is its kind's row in :data:`schematic.output.render.kinds.OUTPUT_KINDS`."""

from __future__ import annotations

from schematic.output.render.applysteps import Directory, Entry, Section
from schematic.output.render.kinds import OUTPUT_KINDS

__all__ = ["tool_sections"]


def _tools(directory: Directory) -> Section | None:
    # Each kind with an apply step in the kinds' table, in the table's order.
    entries: list[Entry] = []
    for kind in OUTPUT_KINDS:
        if kind.apply is None or kind.pool_file is None:
            continue
        for pool, path in directory.pool_files(kind.pool_file):
            step = kind.apply(pool, path)
            entries.append(Entry(path, step.goes_to, step.commands, step.example))
    if not entries:
        return None
    return Section(
        "Other tools",
        "Files for tools that configure the cluster themselves: copy each into that tool's "
        "repository, then run its commands there.",
        tuple(entries),
    )


def tool_sections(directory: Directory) -> list[Section | None]:
    """The steps for the files of tools that configure the cluster themselves."""
    return [_tools(directory)]
