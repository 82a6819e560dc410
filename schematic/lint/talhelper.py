"""talhelper's ``talconfig.yaml``: one pool per node, as talhelper would build its config.

A talconfig names the cluster (``clusterName``), its Talos release (``talosVersion``) and its
``nodes``; ``controlPlane`` and ``worker`` hold what every node of that role gets. A node's own
key wins over its role's when set; ``patches`` add up — the cluster's, then the role's (unless
the node says ``overridePatches``), then the node's — in the order talhelper applies them
(budimanjojo/talhelper ``pkg/config/nodeconfigs.go``, ``mergeNodeConfigs``). Each node becomes
a pool whose GPUs are unknown (a talconfig does not say), whose installer carries the node's
``schematic``, and whose machine config is what its ``kernelModules`` and patches load.
A patch is inline YAML or ``@file`` relative to the talconfig, in strategic-merge or RFC 6902
form.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from schematic.errors import SchematicError
from schematic.lint.inventory import Inventory, Place, Pool, SchematicUse, config_patch_pool
from schematic.lint.loader import Document, Path_, parse_yaml
from schematic.model import Schematic
from schematic.safe_yaml import read_text

__all__ = ["add_talhelper_pools", "is_talconfig"]

_ROLES = ("controlPlane", "worker")


def is_talconfig(data: Any) -> bool:
    """A talhelper config: ``clusterName`` and a ``nodes`` list, and no Kubernetes ``kind``."""
    return (
        isinstance(data, dict)
        and "kind" not in data
        and isinstance(data.get("clusterName"), str)
        and isinstance(data.get("nodes"), list)
    )


def _setting(doc: Document, node: Path_, role: Path_, key: str) -> Path_ | None:
    """Where the node's effective ``key`` is written: its own, else its role's."""
    for base in (node, role):
        value = doc.get((*base, key))
        if value not in (None, "", [], {}):
            return (*base, key)
    return None


def _patches(doc: Document, node: Path_, role: Path_) -> list[Document]:
    """Every patch of the node, in talhelper's order, as documents with their own lines."""
    bases: list[Path_] = [()]
    if doc.get((*node, "overridePatches")) is not True:
        bases.append(role)
    bases.append(node)
    found: list[Document] = []
    for base in bases:
        patches = doc.get((*base, "patches"))
        for index, patch in enumerate(patches if isinstance(patches, list) else []):
            if not isinstance(patch, str):
                continue
            path = (*base, "patches", index)
            try:
                if patch.startswith("@"):
                    shown = str(Path(doc.file).parent / patch[1:])
                    found.extend(parse_yaml(read_text(shown), shown))
                else:
                    # An inline patch is a block scalar: its text starts on the next line.
                    found.extend(parse_yaml(patch, doc.file, line_offset=doc.line(path)))
            except (OSError, yaml.YAMLError):
                continue  # talhelper itself reports a patch it cannot read
    return found


def _kernel_modules(doc: Document, where: Path_ | None) -> Document:
    """The node's ``kernelModules`` as the machine config talhelper writes from them."""
    modules = doc.get(where) if where is not None else None
    data = {"machine": {"kernel": {"modules": modules}}} if isinstance(modules, list) else {}
    lines: dict[Path_, int] = {}
    if where is not None:
        for path, line in doc.lines.items():
            if path[: len(where)] == where:
                lines[("machine", "kernel", "modules", *path[len(where) :])] = line
        lines[()] = doc.line(where)
    return Document(doc.file, doc.index, data or {"machine": {}}, lines, doc.text)


def _schematic(doc: Document, where: Path_, inventory: Inventory) -> Schematic | None:
    try:
        # Values kept their go-yaml typing when read: dumped and decoded again, they mean the
        # same to the factory's decoder.
        text = yaml.safe_dump(doc.get(where), sort_keys=False)
        schematic = Schematic.from_yaml(text, source=f"{doc.file}:{doc.line(where)}")
    except SchematicError as err:
        inventory.schematic_problems.append((err, Place(doc, where)))
        return None
    inventory.schematic_files.append((schematic, Place(doc, where)))
    return schematic


def add_talhelper_pools(doc: Document, inventory: Inventory) -> None:
    """One pool per node of the talconfig ``doc``, named by its hostname."""
    talos = doc.get(("talosVersion",))
    for index, node in enumerate(doc.data["nodes"]):
        if not isinstance(node, dict):
            continue
        here: Path_ = ("nodes", index)
        role: Path_ = (_ROLES[0] if node.get("controlPlane") is True else _ROLES[1],)
        name = node.get("hostname") if isinstance(node.get("hostname"), str) else f"nodes[{index}]"
        configs = [*_patches(doc, here, role)]
        configs.append(_kernel_modules(doc, _setting(doc, here, role, "kernelModules")))
        pool = config_patch_pool(configs, f"node {name}") or Pool(
            f"node {name}", Place(doc, here), gpus_known=False
        )
        pool.place = Place(doc, here)
        if isinstance(talos, str) and pool.talos is None:
            pool.talos, pool.talos_place = talos, Place(doc, ("talosVersion",))
        where = _setting(doc, here, role, "schematic")
        if where is not None and (schematic := _schematic(doc, where, inventory)) is not None:
            pool.schematics.insert(
                0, SchematicUse(schematic.id, Place(doc, where), "talhelper schematic")
            )
        inventory.pools.append(pool)
