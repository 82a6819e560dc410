"""``APPLY.md``: where each file of an output directory goes, and the command that applies it.

One set of steps per place the pools' nodes live, each only where a pool of the directory
lives there (:data:`PLACES`): Cozystack for KubeVirt pools (:mod:`.apply_cozystack`), Talos
nodes configured through talosctl (:mod:`.apply_talos`), and the tools that configure a cluster
themselves (:mod:`.apply_tools`). The plan is made from the directory's final list of files
(those this run writes and those an earlier run left), so it describes what is there, in the
order it is applied: the factory first, then each place, then the records.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Collection
from dataclasses import dataclass

from schematic.output.outdir import APPLY, INDEX, LOCK
from schematic.output.render.apply_cozystack import cozystack_sections
from schematic.output.render.apply_talos import talos_workload_sections, talosctl_sections
from schematic.output.render.apply_tools import tool_sections
from schematic.output.render.applysteps import Directory, Entry, Section, code
from schematic.output.render.kinds import SUMMARY
from schematic.plan.cluster import ClusterPlan

__all__ = ["APPLY_FILE", "PLACES", "Place", "apply_text"]

APPLY_FILE = APPLY


@dataclass(frozen=True)
class Place:
    """Where nodes live, and the steps that put a directory's files there, in order.
    ``once_nodes_run``: the steps that need the pools' nodes up (an operator, smoke tests),
    given after every place's own steps, since another tool may be what configures them."""

    name: str
    steps: Callable[[Directory], list[Section | None]]
    once_nodes_run: Callable[[Directory], list[Section | None]] | None = None


def _cozystack_steps(directory: Directory) -> list[Section | None]:
    return cozystack_sections(directory)[0]


# In the order their steps are applied: a tool reading the directory comes last.
PLACES: tuple[Place, ...] = (
    Place("a Cozystack tenant cluster (KubeVirt pools)", _cozystack_steps),
    Place("Talos nodes of your own (talosctl)", talosctl_sections, talos_workload_sections),
    Place("tools that configure the cluster themselves", tool_sections),
)


def _factory(directory: Directory) -> Section | None:
    held = directory.pool_files("schematic.yaml")
    if not held:
        return None
    factory = directory.plan.talos.image_factory_url
    entries = tuple(
        Entry(path, f"the Image Factory ({factory}): schematic `{pool.schematic_id}`")
        for pool, path in held
    )
    command = "talos-schematic register " + " ".join(path for _, path in held)
    if factory != "https://factory.talos.dev":
        command += f" --factory {shlex.quote(factory)}"  # a URL may hold `, $
    return Section(
        "The Image Factory",
        "The factory builds images only for a schematic posted to it once (the IDs here "
        "were computed offline; posting again is harmless). Before any pool boots:\n\n"
        + code([command]).rstrip("\n"),
        entries,
    )


def _records(directory: Directory) -> Section:
    said = {
        INDEX: "what the tool wrote here: nothing to apply",
        SUMMARY: "each pool's decision, for tools: nothing to apply",
        LOCK: "the extension catalogue the run checked against: nothing to apply",
        APPLY_FILE: "this plan",
    }
    entries = [
        Entry(path, what)
        for path, what in said.items()
        if path in directory.paths or path in (INDEX, APPLY_FILE)
    ]
    entries += cozystack_sections(directory)[1]
    return Section("Records", "Files that are read, never applied.", tuple(entries))


def _section_text(number: int, section: Section) -> str:
    parts = [f"## {number}. {section.title}\n\n{section.intro}\n\n"]
    for entry in section.entries:
        parts.append(f"- `{entry.path}`: {entry.goes_to}\n")
        blocks = []
        if entry.example is not None:
            language, text = entry.example  # written first, then the commands that use it
            blocks.append(f"```{language}\n{text}```\n")
        if entry.commands:
            blocks.append(code(entry.commands))
        indented = [
            "".join(f"  {line}\n" if line else "\n" for line in block.splitlines())
            for block in blocks
        ]
        if indented:
            parts.append("\n" + "\n".join(indented) + "\n")
    return "".join(parts).rstrip("\n") + "\n"


def apply_text(plan: ClusterPlan, paths: Collection[str], held_back: Collection[str] = ()) -> str:
    """``APPLY.md`` for a directory holding ``paths`` (relative; the index and this file need
    not be among them), from ``plan`` (every pool, whichever this run wrote). ``held_back``:
    pools whose files a ``--pool`` run left older than ``plan``."""
    directory = Directory(plan, paths)
    places: list[str] = []
    sections: list[Section] = []
    later: list[Section] = []
    for place in PLACES:
        steps = [section for section in place.steps(directory) if section is not None]
        after = place.once_nodes_run(directory) if place.once_nodes_run else []
        then = [section for section in after if section is not None]
        if steps or then:
            places.append(place.name)
        sections += steps
        later += then
    sections += later
    factory = _factory(directory)
    shown = [*([factory] if factory else []), *sections, _records(directory)]
    where = f" Its steps are for {_listed(places)}." if places else ""
    head = (
        "<!-- Generated by talos-schematic generate; regenerate instead of editing. -->\n"
        f'# Applying cluster "{plan.cluster}"\n\n'
        "Where each file of this directory goes, and the command that applies it, in order. "
        f"Run the commands from this directory.{where}\n"
    )
    if held_back:
        names = ", ".join(f"`{name}`" for name in sorted(held_back))
        head += (
            f"\n**Not regenerated by the last run** (`generate --pool`): {names}. Their files "
            "here are not what the cluster file now says (another schematic, or a pool no longer "
            "in it), while the IDs and images below are the cluster file's: run `generate` "
            "without `--pool` before applying them.\n"
        )
    return head + "".join(f"\n{_section_text(n, s)}" for n, s in enumerate(shown, 1))


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
