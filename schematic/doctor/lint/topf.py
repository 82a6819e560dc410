"""topf's cluster directory: ``topf.yaml`` and its patch folders, one pool per node.

As topf (postfinance/topf at 2a60138c) builds a node's config: its ``schematicId`` (the node's,
else the cluster's) is an ID or ``@path`` to a schematic file relative to ``topf.yaml``
(``internal/schematic/resolver.go``), decoded here by ``id``'s decoder; its patches are every
file whose name matches ``.ya?ml(.tpl)?`` under ``all/``, ``<role>/`` and ``node/<host>/`` of
``patchesDir`` (``topf.yaml``'s folder unless set), walked in lexical order through symlinks
(``pkg/config/patches.go``); its installer is ``<factory>/<platform>-installer[-secureboot]/
<ID>:v<talosVersion>`` unless a patch pins another (``internal/topf/node.go``, ``nodes.go``).
A ``.tpl`` patch is a Go template: the one form ``generate -f topf`` writes (a patch guarded by
its schematic ID) is read for the nodes of that schematic; any other template is not
evaluated, and the node's config is then not known whole.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import yaml

from schematic.core.model import Schematic
from schematic.doctor.lint.inventory import Inventory, Place, Pool, SchematicUse, config_patch_pool
from schematic.doctor.lint.loader import Document, Path_, parse_yaml
from schematic.errors import SchematicError
from schematic.facts.talos import talhelper_installer
from schematic.output.render.topf import DEFAULT_FACTORY, guard_line
from schematic.safe_yaml import InputKind, read_text

__all__ = ["add_topf_pools", "is_topf_config"]

_ROLES = ("control-plane", "worker")
# topf's patch file pattern (pkg/config/patches.go), matched anywhere in the name as Go's
# regexp.MatchString does.
_PATCH_NAME = re.compile(r".*\.ya?ml(\.tpl)?")
_ID = re.compile(r"[0-9a-f]{64}")
# The guard generate -f topf writes, as the renderer spells it.
_GUARD = re.compile(
    "^" + re.escape(guard_line("0" * 64)).replace("0" * 64, "(?P<id>[0-9a-f]{64})"), re.MULTILINE
)


def is_topf_config(data: Any) -> bool:
    """A ``topf.yaml``: a cluster endpoint and nodes, each with a host and a role."""
    if not isinstance(data, dict) or not isinstance(data.get("clusterEndpoint"), str):
        return False
    nodes = data.get("nodes")
    return isinstance(nodes, list) and all(
        isinstance(node, dict) and "host" in node and "role" in node for node in nodes
    )


def _patch_files(folder: Path) -> list[Path]:
    """The patch files of ``folder``, in topf's order (lexical, through symlinks)."""
    found: list[Path] = []
    for root, folders, files in os.walk(folder, followlinks=True):
        folders.sort()
        for name in sorted(files):
            if _PATCH_NAME.search(name):
                found.append(Path(root) / name)
    return sorted(found)


def _read_patch(path: Path, schematic_id: str | None) -> tuple[list[Document], bool]:
    """The documents topf loads from ``path`` for a node of ``schematic_id``; and whether they
    are known (a template other than the guarded patch is not evaluated)."""
    try:
        text = read_text(str(path), kind=InputKind.LINT)
    except OSError:
        return [], False
    if path.name.endswith(".tpl") and "{{" in text:
        guard = _GUARD.search(text)
        # The guard's two actions and its end, and any escaped literal (two each): no other.
        if guard is None or text.count("{{") != 2 * text.count('{{ "{{" }}') + 3:
            return [], False
        if guard["id"] != schematic_id:
            return [], True  # another schematic's patch: it renders to comments
        text = text.replace('{{ "{{" }}', "{{")
    try:
        return parse_yaml(text, str(path)), True
    except yaml.YAMLError:
        return [], False  # topf itself reports a patch it cannot parse


def _schematic_id(
    doc: Document, where: Path_, base: Path, inventory: Inventory
) -> tuple[str | None, str]:
    """The node's schematic ID and how it was given."""
    value = doc.get(where)
    if not isinstance(value, str):
        return None, ""
    if not value.startswith("@"):
        return (value, "topf schematicId") if _ID.fullmatch(value) else (None, "")
    path = Path(value[1:]) if os.path.isabs(value[1:]) else base / value[1:]
    if path.name.endswith(".tpl"):
        return None, ""  # a templated schematic is not evaluated
    try:
        schematic = Schematic.from_yaml(read_text(str(path), kind=InputKind.LINT), str(path))
    except OSError:
        return None, ""
    except SchematicError as err:
        inventory.schematic_problems.append((err, Place(doc, where)))
        return None, ""
    inventory.schematic_files.append((schematic, Place(doc, where)))
    return schematic.id, f"topf schematic {value}"


def _setting(doc: Document, node: Path_, key: str) -> Path_ | None:
    """Where the node's ``key`` is set: its own, else the cluster's."""
    for where in ((*node, key), (key,)):
        if doc.get(where) not in (None, ""):
            return where
    return None


def _installer(doc: Document, node: Path_, schematic_id: str, version: str) -> str:
    factory = doc.get(_setting(doc, node, "factory") or ("factory",)) or DEFAULT_FACTORY
    platform = doc.get(_setting(doc, node, "platform") or ("platform",)) or "metal"
    secure = doc.get(_setting(doc, node, "secureboot") or ("secureboot",)) is True
    installer = talhelper_installer(str(factory), str(platform), secure, schematic_id)
    return f"{installer}:v{version.removeprefix('v')}"


def _pins_installer(configs: list[Document]) -> bool:
    return any(
        isinstance(d.data, dict)
        and isinstance(d.data.get("machine"), dict)
        and isinstance(d.data["machine"].get("install"), dict)
        and "image" in d.data["machine"]["install"]
        for d in configs
    )


def _node_pool(doc: Document, index: int, base: Path, inventory: Inventory) -> Pool:
    here: Path_ = ("nodes", index)
    node = doc.data["nodes"][index]
    host, role = str(node["host"]), str(node["role"])
    where = _setting(doc, here, "schematicId")
    schematic_id, given = None, ""
    if where is not None:
        schematic_id, given = _schematic_id(doc, where, base, inventory)
    patches_dir = doc.get(("patchesDir",))
    folder = base / patches_dir if isinstance(patches_dir, str) else base
    configs: list[Document] = []
    every = True
    for part in ("all", role if role in _ROLES else "", f"node/{host}"):
        for path in _patch_files(folder / part) if part else ():
            found, known = _read_patch(path, schematic_id)
            configs += found
            every = every and known
    # What loads nothing is read as a config too, so a node without patches is a pool.
    configs.append(Document(doc.file, doc.index, {"machine": {}}, {(): doc.line(here)}))
    name = f"node {host}"
    pool = config_patch_pool(configs, name) or Pool(name, Place(doc, here), gpus_known=False)
    pool.place = Place(doc, here)
    pool.config_complete = every
    talos = _setting(doc, here, "talosVersion")
    if talos is not None and pool.talos is None:
        pool.talos, pool.talos_place = str(doc.get(talos)), Place(doc, talos)
    if schematic_id is not None and where is not None:
        place = Place(doc, where)
        pool.schematics.insert(0, SchematicUse(schematic_id, place, given))
        if pool.talos is not None and not _pins_installer(configs[:-1]):
            installer = _installer(doc, here, schematic_id, pool.talos)
            pool.schematics.append(
                SchematicUse(schematic_id, place, "installer image", reference=installer)
            )
    return pool


def add_topf_pools(doc: Document, inventory: Inventory) -> None:
    """One pool per node of the ``topf.yaml`` ``doc``, named by its host."""
    base = Path(doc.file).parent
    for index, node in enumerate(doc.data["nodes"]):
        if isinstance(node, dict) and isinstance(node.get("host"), str):
            inventory.pools.append(_node_pool(doc, index, base, inventory))
