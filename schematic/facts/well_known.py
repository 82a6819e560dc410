"""The well-known schematic IDs users meet (the empty schematic, Cozystack's, the NVIDIA sets),
as the package data ``schematic/data/well-known-schematics.json`` records them: each ID, where
its extension set comes from, and its canonical YAML. `lint` builds schematics from them;
`triage` needs the IDs alone, to write out those its rule texts shorten."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources

__all__ = ["WELL_KNOWN_FILE", "WellKnownEntry", "well_known_entries"]

WELL_KNOWN_FILE = "well-known-schematics.json"


@dataclass(frozen=True)
class WellKnownEntry:
    id: str
    source: str
    canonical: str  # the schematic's YAML, as the factory hashes it


@functools.cache
def well_known_entries() -> tuple[WellKnownEntry, ...]:
    """The packaged well-known IDs, in the file's order."""
    text = resources.files("schematic.data").joinpath(WELL_KNOWN_FILE).read_text("utf-8")
    return tuple(
        WellKnownEntry(entry["id"], entry["source"], entry["canonical"])
        for entry in json.loads(text)["schematics"]
    )
