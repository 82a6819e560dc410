"""Derive `schematic/data/extensions.json` from a per-release extension listing.

Usage: python scripts/build_catalog.py REFERENCE.json [--output PATH] [--snapshot YYYY-MM]

The input lists, for every Talos release, the official system extension names and the
overlays (``{"name", "image", "digest"}``). The output keeps every (release, name) fact but
stores each name once, with the inclusive ranges of consecutive known releases that offer it.
Overlay digests are dropped: schematics name an overlay by image and name only.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

VERSION = re.compile(r"^v(\d+)\.(\d+)\.(\d+)$")
DEFAULT_OUTPUT = Path(__file__).resolve().parents[1] / "schematic" / "data" / "extensions.json"


def version_key(version: str) -> tuple[int, int, int]:
    match = VERSION.match(version)
    if match is None:
        raise SystemExit(f"not a release version (vX.Y.Z): {version!r}")
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch)


def ranges(present: list[bool], versions: list[str]) -> list[list[str]]:
    """Inclusive [first, last] runs of releases where ``present`` holds."""
    runs: list[list[str]] = []
    start: int | None = None
    for index, flag in enumerate([*present, False]):
        if flag and start is None:
            start = index
        elif not flag and start is not None:
            runs.append([versions[start], versions[index - 1]])
            start = None
    return runs


def derive(reference: dict[str, Any], snapshot: str) -> dict[str, Any]:
    releases = sorted(reference["versions"], key=lambda entry: version_key(entry["version"]))
    versions = [entry["version"] for entry in releases]
    if len(set(versions)) != len(versions):
        raise SystemExit("a release is listed twice")

    extension_sets = [set(entry["systemExtensions"] or ()) for entry in releases]
    overlay_sets: list[set[str]] = []
    overlay_images: dict[str, str] = {}
    for entry in releases:
        names = set()
        for overlay in entry["overlays"] or ():
            image = overlay_images.setdefault(overlay["name"], overlay["image"])
            if image != overlay["image"]:
                # The compact form keeps one image per overlay name; refuse to lose a fact.
                raise SystemExit(f"overlay {overlay['name']!r} changes image in {entry['version']}")
            names.add(overlay["name"])
        overlay_sets.append(names)

    extensions = {
        name: ranges([name in s for s in extension_sets], versions)
        for name in sorted(set().union(*extension_sets))
    }
    overlays = {
        name: {
            "image": overlay_images[name],
            "versions": ranges([name in s for s in overlay_sets], versions),
        }
        for name in sorted(overlay_images)
    }
    return {
        "source": reference.get("source", ""),
        "snapshot": snapshot,
        "generator": "scripts/build_catalog.py",
        "versions": versions,
        "extensions": extensions,
        "overlays": overlays,
    }


def render(catalog: dict[str, Any]) -> str:
    """JSON with one entry per line, so refreshes diff line by line."""
    lines = ["{"]
    for key in ("source", "snapshot", "generator"):
        lines.append(f"  {json.dumps(key)}: {json.dumps(catalog[key])},")
    lines.append(f'  "versions": {json.dumps(catalog["versions"])},')
    for section in ("extensions", "overlays"):
        lines.append(f'  "{section}": {{')
        items = list(catalog[section].items())
        for index, (name, value) in enumerate(items):
            comma = "," if index < len(items) - 1 else ""
            lines.append(f"    {json.dumps(name)}: {json.dumps(value)}{comma}")
        lines.append("  }," if section == "extensions" else "  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reference", type=Path, help="extensions-by-version.json")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument(
        "--snapshot",
        help="date of the listing (YYYY-MM or YYYY-MM-DD); default: read from its source text",
    )
    args = parser.parse_args(argv)

    reference = json.loads(args.reference.read_text(encoding="utf-8"))
    snapshot = args.snapshot
    if snapshot is None:
        found = re.search(r"\b(\d{4}-\d{2}(?:-\d{2})?)\b", reference.get("source", ""))
        if found is None:
            raise SystemExit("the source text names no date; pass --snapshot")
        snapshot = found.group(1)
    catalog = derive(reference, snapshot)
    text = render(catalog)
    if json.loads(text) != catalog:
        raise SystemExit("rendered catalogue does not read back")
    tmp = args.output.with_suffix(".json.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(args.output)
    print(
        f"{args.output}: {len(catalog['versions'])} releases, "
        f"{len(catalog['extensions'])} extensions, {len(catalog['overlays'])} overlays",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
