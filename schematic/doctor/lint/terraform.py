"""Terraform JSON (``*.tf.json``) for the siderolabs/talos provider: one pool per schematic.

Each ``talos_image_factory_schematic`` resource whose ``schematic`` is a literal is a pool
booting and upgrading with that schematic. What ``generate -f terraform`` writes beside it, the
local value of the same name (``schematic_id``, ``gpus``, ``talos_version``,
``config_patches``), says which GPUs the pool has, its Talos release and the machine-config
patch its nodes get. A ``talos_machine_configuration_apply`` resource whose ``config_patches``
are literals is a node config of its own, whose GPUs are unknown. An expression (``${...}``,
``yamlencode(...)``) is not evaluated: what it builds is not read.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import yaml

from schematic.core.model import Schematic
from schematic.doctor.lint.inventory import (
    GpuUse,
    Inventory,
    Place,
    Pool,
    SchematicUse,
    config_patch_pool,
)
from schematic.doctor.lint.loader import Document, Path_, parse_yaml
from schematic.errors import SchematicError
from schematic.output.render.terraform import SCHEMATIC_RESOURCE

__all__ = ["add_terraform_pools", "is_terraform_json"]

_APPLY_RESOURCE = "talos_machine_configuration_apply"
_RESOURCES = (SCHEMATIC_RESOURCE, _APPLY_RESOURCE)


def is_terraform_json(data: Any) -> bool:
    """Terraform JSON declaring a schematic or a machine-config apply of the Talos provider."""
    resources = data.get("resource") if isinstance(data, dict) else None
    return isinstance(resources, dict) and any(
        isinstance(resources.get(kind), dict) for kind in _RESOURCES
    )


def _literal(value: Any) -> str | None:
    """A JSON string as the text Terraform makes of it, or None for a template with an
    expression in it (``$${`` and ``%%{`` are escaped literals)."""
    if not isinstance(value, str):
        return None
    unescaped = value.replace("$${", "\0").replace("%%{", "\1")
    if "${" in unescaped or "%{" in unescaped:
        return None
    return unescaped.replace("\0", "${").replace("\1", "%{")


def _on_one_line(parsed: Document, line: int) -> Document:
    """``parsed`` with every key placed on ``line``: a JSON string holds no line break, so all
    of a patch written as one sits on the string's line of the file."""
    duplicates = tuple((path, line, line) for path, _, _ in parsed.duplicates)
    return replace(parsed, lines=dict.fromkeys(parsed.lines, line), duplicates=duplicates)


def _patches(doc: Document, path: Path_) -> list[Document]:
    found: list[Document] = []
    patches = doc.get(path)
    for index, patch in enumerate(patches if isinstance(patches, list) else []):
        text = _literal(patch)
        if text is None:
            continue
        try:
            parsed = parse_yaml(text, doc.file)
        except yaml.YAMLError:
            continue  # the provider refuses a patch it cannot read
        found += [_on_one_line(one, doc.line((*path, index))) for one in parsed]
    return found


def _schematic_pool(doc: Document, name: str, inventory: Inventory) -> Pool | None:
    path: Path_ = ("resource", SCHEMATIC_RESOURCE, name, "schematic")
    text = _literal(doc.get(path))
    if text is None:
        return None
    place = Place(doc, path)
    local: Path_ = ("locals", name)
    configs = _patches(doc, (*local, "config_patches"))
    known = doc.has(local)
    if known:
        # What loads nothing is read as a config too, so a pool without a module patch is found.
        configs.append(Document(doc.file, doc.index, {"machine": {}}, {(): doc.line(local)}))
    pool = config_patch_pool(configs, f"terraform {name}") or Pool(f"terraform {name}", place)
    pool.place = place
    pool.gpus_known = isinstance(doc.get((*local, "gpus")), list)
    pool.gpus = [
        GpuUse(gpu, Place(doc, (*local, "gpus", index)))
        for index, gpu in enumerate(doc.get((*local, "gpus")) or [])
        if isinstance(gpu, str) and gpu
    ]
    talos = doc.get((*local, "talos_version"))
    if isinstance(talos, str) and pool.talos is None:
        pool.talos, pool.talos_place = talos, Place(doc, (*local, "talos_version"))
    try:
        schematic = Schematic.from_yaml(text, source=f"{doc.file}:{place.line}")
    except SchematicError as err:
        # The schematic is one JSON string on the place's line: no line within it to add.
        err.line = None
        inventory.schematic_problems.append((err, place))
        return pool
    inventory.schematic_files.append((schematic, place))
    pool.schematics.insert(0, SchematicUse(schematic.id, place, SCHEMATIC_RESOURCE))
    return pool


def add_terraform_pools(doc: Document, inventory: Inventory) -> None:
    """The pools of one Terraform JSON document."""
    resources = doc.get(("resource",))
    schematics, applies = (resources.get(kind) for kind in _RESOURCES)
    for name in schematics if isinstance(schematics, dict) else {}:
        pool = _schematic_pool(doc, name, inventory)
        if pool is not None:
            inventory.pools.append(pool)
    for name in applies if isinstance(applies, dict) else {}:
        path: Path_ = ("resource", _APPLY_RESOURCE, name, "config_patches")
        configs = _patches(doc, path)
        pool = config_patch_pool(configs, f"terraform {_APPLY_RESOURCE}.{name}")
        if pool is not None:
            inventory.pools.append(pool)
