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

A file holding only a node's keys with a ``schematic`` (what ``generate -f talhelper`` writes,
to paste into a node entry or under ``worker:``) is read as one such node.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from schematic.core.model import Schematic
from schematic.doctor.lint.inventory import Inventory, Place, Pool, SchematicUse, config_patch_pool
from schematic.doctor.lint.loader import Document, Path_, parse_yaml
from schematic.errors import SchematicError
from schematic.facts.talos import talhelper_installer
from schematic.safe_yaml import InputKind, read_text

__all__ = [
    "NODE_CONFIG_KEYS",
    "NODE_OWN_KEYS",
    "add_talhelper_fragment_pool",
    "add_talhelper_pools",
    "is_talconfig",
    "is_talhelper_fragment",
]

_ROLES = ("controlPlane", "worker")
# talhelper's node keys (pkg/config/config.go NodeConfigs): no Cozystack values key among them.
NODE_CONFIG_KEYS = frozenset(
    {
        "nodeLabels",
        "nodeAnnotations",
        "nodeTaints",
        "machineDisks",
        "machineFiles",
        "disableSearchDomain",
        "kernelModules",
        "nameservers",
        "networkInterfaces",
        "extraManifests",
        "certSANs",
        "patches",
        "talosImageURL",
        "noSchematicValidate",
        "schematic",
        "imageSchematic",
        "machineSpec",
        "ingressFirewall",
        "extensionServices",
        "volumes",
        "userVolumes",
        "filenameTmpl",
    }
)


# The keys of a talhelper node besides those it shares with a role (pkg/config/config.go Node).
NODE_OWN_KEYS = frozenset(
    {
        "hostname",
        "ipAddress",
        "controlPlane",
        "installDisk",
        "installDiskSelector",
        "ignoreHostname",
        "overridePatches",
        "overrideExtraManifests",
        "overrideMachineCertSANs",
    }
)


def _is_node(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and isinstance(item.get("hostname"), str)
        and set(item) <= NODE_CONFIG_KEYS | NODE_OWN_KEYS
    )


def is_talconfig(data: Any) -> bool:
    """A talhelper config: ``clusterName`` and a ``nodes`` list, and no Kubernetes ``kind``;
    or the parts guides show without ``clusterName``: a ``nodes`` list of talhelper nodes, or
    that list alone (``- hostname: ...`` at the top)."""
    if isinstance(data, list):
        return bool(data) and all(_is_node(item) for item in data)
    if not isinstance(data, dict) or "kind" in data or "apiVersion" in data:
        return False
    if "clusterEndpoint" in data:
        return False  # topf's topf.yaml (talhelper's key is endpoint)
    nodes = data.get("nodes")
    if not isinstance(nodes, list):
        return False
    return isinstance(data.get("clusterName"), str) or (
        bool(nodes) and all(_is_node(item) for item in nodes)
    )


def is_talhelper_fragment(data: Any) -> bool:
    """A node's talhelper keys alone, with a ``schematic`` mapping."""
    return (
        isinstance(data, dict)
        and isinstance(data.get("schematic"), dict)
        and set(data) <= NODE_CONFIG_KEYS
    )


# A schematic ID as a path segment of an installer reference, and a reference that has a tag.
_PINNED_ID = re.compile(r"/(?P<id>[0-9a-f]{64})(?=$|[:@/])")
_TAGGED = re.compile(r":[^/]+$")


def _setting(doc: Document, node: Path_, role: Path_ | None, key: str) -> Path_ | None:
    """Where the node's effective ``key`` is written: its own, else its role's."""
    for base in (node,) if role is None else (node, role):
        value = doc.get((*base, key))
        # talhelper keeps the node's field unless Go's reflect calls it zero: a missing or null
        # key and "" are; an empty list (`kernelModules: []`) or mapping is the node's own.
        if value is not None and value != "":
            return (*base, key)
    return None


def _patches(doc: Document, node: Path_, role: Path_ | None) -> tuple[list[Document], bool]:
    """Every patch of the node, in talhelper's order, as documents with their own lines
    (a fragment, with no role, is its own and only level); and whether every one was read."""
    bases: list[Path_] = [()]
    if role is not None:
        if doc.get((*node, "overridePatches")) is not True:
            bases.append(role)
        bases.append(node)
    found: list[Document] = []
    every = True
    for base in bases:
        patches = doc.get((*base, "patches"))
        for index, patch in enumerate(patches if isinstance(patches, list) else []):
            if not isinstance(patch, str):
                continue
            path = (*base, "patches", index)
            try:
                if patch.startswith("@"):
                    shown = str(Path(doc.file).parent / patch[1:])
                    found.extend(parse_yaml(read_text(shown, kind=InputKind.CONFIG_PATCH), shown))
                else:
                    # An inline patch is a block scalar: its text starts on the next line.
                    found.extend(parse_yaml(patch, doc.file, line_offset=doc.line(path)))
            except (OSError, yaml.YAMLError):
                every = False  # talhelper itself reports a patch it cannot read
    return found, every


def _kernel_modules(doc: Document, where: Path_ | None, node: Path_) -> Document:
    """The node's ``kernelModules`` as the machine config talhelper writes from them (placed
    at the node when it has none)."""
    modules = doc.get(where) if where is not None else None
    data = {"machine": {"kernel": {"modules": modules}}} if isinstance(modules, list) else {}
    lines: dict[Path_, int] = {}
    if where is not None:
        for path, line in doc.lines.items():
            if path[: len(where)] == where:
                lines[("machine", "kernel", "modules", *path[len(where) :])] = line
    lines[()] = doc.line(node if where is None else where)
    return Document(doc.file, doc.index, data or {"machine": {}}, lines, doc.text)


def _schematic(doc: Document, where: Path_, inventory: Inventory) -> Schematic | None:
    try:
        # The node's own text, by the factory's decoder: what talhelper sends is what the
        # node says (0x10, 1.50, 012 and a timestamp mean to it what they mean to `id`).
        schematic = Schematic.from_yaml_at(doc.text, where, source=doc.file)
    except SchematicError as err:
        # The error's line counts from the document's first line.
        inventory.schematic_problems.append((err, Place(doc)))
        return None
    inventory.schematic_files.append((schematic, Place(doc, where)))
    return schematic


def _node_pool(doc: Document, here: Path_, role: Path_ | None, name: str) -> Pool:
    configs, every_patch_read = _patches(doc, here, role)
    configs.append(_kernel_modules(doc, _setting(doc, here, role, "kernelModules"), here))
    pool = config_patch_pool(configs, name) or Pool(name, Place(doc, here), gpus_known=False)
    pool.place = Place(doc, here)
    # A whole talconfig (clusterName) shows every patch talhelper writes into the node's
    # config; an excerpt does not show the file's global or role patches.
    whole = isinstance(doc.data, dict) and isinstance(doc.data.get("clusterName"), str)
    pool.config_complete = whole and role is not None and every_patch_read
    return pool


def _spec(doc: Document, here: Path_, role: Path_ | None, key: str, default: Any) -> Any:
    """The node's ``machineSpec.<key>``, else talhelper's default. talhelper takes the node's
    whole machineSpec when any of its fields is set (Go's reflect.IsZero on the struct), else
    its role's whole one: a node setting only ``mode`` does not inherit its role's ``arch``."""
    for base in (here,) if role is None else (here, role):
        spec = doc.get((*base, "machineSpec"))
        if isinstance(spec, dict) and any(v not in (None, "", False) for v in spec.values()):
            value = spec.get(key)
            return default if value in (None, "") else value
    return default


def _media(
    doc: Document, here: Path_, role: Path_ | None, schematic_id: str, version: str
) -> tuple[str, str]:
    """The installer and boot image talhelper derives for the node from its machineSpec
    (mode ``metal``, arch ``amd64``, no SecureBoot unless set) and ``talosImageURL``, with its
    default templates (budimanjojo/talhelper ``pkg/config/defaults.go`` at 39b69792)."""
    registry = doc.get(("imageFactory", "registryURL")) if role is not None else None
    registry = registry if isinstance(registry, str) and registry else "factory.talos.dev"
    mode = str(_spec(doc, here, role, "mode", "metal"))
    arch = str(_spec(doc, here, role, "arch", "amd64"))
    secure = _spec(doc, here, role, "secureboot", False) is True
    pinned = _setting(doc, here, role, "talosImageURL")
    installer = (
        str(doc.get(pinned))
        if pinned is not None
        else talhelper_installer(registry, mode, secure, schematic_id)
    )
    suffix = "-secureboot" if secure else ""
    medium = f"https://{registry}/image/{schematic_id}/{version}/{mode}-{arch}{suffix}.iso"
    return f"{installer}:{version}", medium


def _add_schematic(
    doc: Document, here: Path_, role: Path_ | None, pool: Pool, inventory: Inventory
) -> None:
    where = _setting(doc, here, role, "schematic")
    pinned = _setting(doc, here, role, "talosImageURL")
    if where is None and pinned is not None:
        # No schematic of its own: the node installs the one its talosImageURL names
        # (talhelper appends the release), e.g. factory.talos.dev/installer/<ID>.
        url = str(doc.get(pinned))
        found = _PINNED_ID.search(url)
        if found is not None:
            version = pool.talos or "<talosVersion>"
            installer = url if _TAGGED.search(url) else f"{url}:{version}"
            pool.schematics.append(
                SchematicUse(
                    found["id"], Place(doc, pinned), "installer image", reference=installer
                )
            )
    if where is not None and (schematic := _schematic(doc, where, inventory)) is not None:
        place = Place(doc, where)
        pool.schematics.insert(0, SchematicUse(schematic.id, place, "talhelper schematic"))
        # What talhelper installs and boots from it, so that the media rules (SecureBoot
        # pairs, board overlays) see the node's machineSpec; a node whose boot media carry a
        # schematic of their own (imageSchematic) is meant to differ from its installer.
        version = pool.talos or "<talosVersion>"
        installer, medium = _media(doc, here, role, schematic.id, version)
        pool.schematics.append(
            SchematicUse(schematic.id, place, "installer image", reference=installer)
        )
        if _setting(doc, here, role, "imageSchematic") is None:
            pool.schematics.append(SchematicUse(schematic.id, place, "boot disk", reference=medium))
    inventory.pools.append(pool)


def add_talhelper_pools(doc: Document, inventory: Inventory) -> None:
    """One pool per node of the talconfig ``doc`` (or of its node list alone), named by its
    hostname."""
    alone = isinstance(doc.data, list)
    talos = None if alone else doc.get(("talosVersion",))
    for index, node in enumerate(doc.data if alone else doc.data["nodes"]):
        if not isinstance(node, dict):
            continue
        here: Path_ = (index,) if alone else ("nodes", index)
        role: Path_ = (_ROLES[0] if node.get("controlPlane") is True else _ROLES[1],)
        name = node.get("hostname") if isinstance(node.get("hostname"), str) else f"nodes[{index}]"
        pool = _node_pool(doc, here, role, f"node {name}")
        if isinstance(talos, str) and pool.talos is None:
            pool.talos, pool.talos_place = talos, Place(doc, ("talosVersion",))
        _add_schematic(doc, here, role, pool, inventory)


def add_talhelper_fragment_pool(doc: Document, inventory: Inventory) -> None:
    """The node keys ``doc`` holds as one pool (its Talos release is the talconfig's: unknown
    here, so ``--talos`` gives it)."""
    pool = _node_pool(doc, (), None, f"talhelper keys {doc.file}")
    _add_schematic(doc, (), None, pool, inventory)
