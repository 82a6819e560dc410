"""`talos-schematic profiles, overlays`: what a cluster file can name, listed."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from schematic.cli.base import (
    JsonAliasOption,
    ProfilesOption,
    TextFormat,
    TextFormatOption,
    app,
    fail,
    json_alias,
)
from schematic.errors import TalosSchematicError


def _gpus(document: dict[str, Any]) -> str:
    gpus = document.get("gpus") or []
    return ", ".join(f"{gpu['count']}x {gpu['id']}" for gpu in gpus) or "no GPU"


def _name_and_aliases(document: dict[str, Any]) -> str:
    # A pool's `profile` may name either; the README's examples use the short aliases.
    aliases = document.get("aliases") or []
    return f"{document['name']} ({', '.join(aliases)})" if aliases else str(document["name"])


@app.command(short_help="List the hardware profiles a pool's `profile` may name.")
def profiles(
    profile_dirs: ProfilesOption = None,
    output_format: TextFormatOption = TextFormat.text,
    as_json: JsonAliasOption = False,
) -> None:
    """List the hardware profiles: the shipped ones and those of --profiles directories (which
    shadow a shipped profile of the same name), with their aliases (in parentheses; a pool's
    profile may name either), platform, GPUs and description.

    Example: talos-schematic profiles --profiles ./profiles -f json
    """
    from schematic.inputs.profiles import list_profiles

    try:
        documents = [profile.as_document() for profile in list_profiles(profile_dirs or ())]
    except TalosSchematicError as err:
        raise fail(err) from None
    if json_alias(output_format, as_json, TextFormat.text) == TextFormat.json:
        sys.stdout.write(json.dumps(documents, indent=2, ensure_ascii=False) + "\n")
        return
    names = [_name_and_aliases(document) for document in documents]
    width = max(map(len, names), default=0)
    for name, document in zip(names, documents, strict=True):
        where = f"{document['platform']}-{document['architecture']}"
        sys.stdout.write(
            f"{name:<{width}}  {where:<14}  {_gpus(document)}"
            f"  {document.get('description', '')}".rstrip()
            + "\n"
        )


@app.command(short_help="List the official board overlays of a Talos version.")
def overlays(
    talos: Annotated[
        str, typer.Option("--talos", metavar="vX.Y.Z", help="Talos version, e.g. v1.13.9.")
    ],
    output_format: TextFormatOption = TextFormat.text,
    as_json: JsonAliasOption = False,
) -> None:
    """List the official board overlays (overlay.name → its image) the packaged catalogue
    holds for a Talos release: what a pool's `overlay.name` may be.

    Example: talos-schematic overlays --talos v1.13.9
    """
    from schematic.facts.catalog import overlay_image, overlays_for

    try:
        rows = [
            {"name": name, "image": overlay_image(name)} for name in sorted(overlays_for(talos))
        ]
    except TalosSchematicError as err:
        raise fail(err) from None
    if json_alias(output_format, as_json, TextFormat.text) == TextFormat.json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    width = max((len(row["name"]) for row in rows), default=0)
    for row in rows:
        sys.stdout.write(f"{row['name']:<{width}}  {row['image']}\n")
