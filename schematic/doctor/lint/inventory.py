"""Recognise objects by shape and gather pools, clusters and rendered manifests from documents.

Recognised (by ``kind`` where there is one, else by keys):

- ``KubernetesNodes`` objects, bare kubernetes-nodes values, and Flux ``HelmRelease`` values of
  either chart; all three schematic layouts (``talos.schematicID``, root ``schematicID``,
  ``osImage.factory|builtin``);
- ``Kubernetes`` app objects and bare kubernetes values (``nodeGroups``, ``addons``,
  cluster-wide ``talos``); a node group's own schematic in PR #3294's union
  (``nodeGroups.<g>.image.factory|builtin``) or PR #3571's flat ``nodeGroups.<g>.schematicID``;
- rendered ``KubevirtMachineTemplate``, ``TalosConfigTemplate``, ``MachineDeployment``, the
  reconcile ``Job`` whose command carries a TalosConfigTemplate heredoc, ``Service`` and
  ``KamajiControlPlane``;
- schematic files (top-level keys among ``owner``, ``overlay``, ``customization``);
- the management cluster's platform values (a top-level ``gpu`` mapping with
  ``permittedHostDevices`` or ``replaceDefaults``, bare or in the ``cozystack-platform``
  ``Package`` under ``spec.components.platform.values``): which GPUs KubeVirt may pass through;
- Talos machine configs and patches (a top-level ``machine`` mapping, with the
  ``KernelModuleConfig`` documents of the same file), e.g. the generator's
  ``machine-config-patch.yaml`` or what `talosctl gen config` wrote: one pool per file, whose
  GPUs are unknown.

Rendered objects are grouped into pools by name: a MachineDeployment's ``configRef`` and
``infrastructureRef`` when one is present; otherwise a KubevirtMachineTemplate belongs to the
pool named by its ``cluster.x-k8s.io/deployment-name`` label (else its name without the
trailing ``-<6 hex>`` content hash), and a TalosConfigTemplate to the pool of its name (with or
without such a hash suffix). Both are named ``<release>-<group>`` by the charts.
"""

from __future__ import annotations

import itertools
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, Literal

import yaml

from schematic.core.model import Customization, Schematic
from schematic.doctor.lint.loader import Document, Path_, is_schematic_file, parse_yaml, walk
from schematic.errors import SchematicError
from schematic.facts.talos import EMPTY_SCHEMATIC_ID

__all__ = [
    "COZYSTACK_DEFAULT_SCHEMATIC",
    "Cluster",
    "GpuUse",
    "Inventory",
    "KernelModules",
    "Place",
    "Pool",
    "SchematicUse",
    "build_inventory",
    "config_patch_pool",
]

COZYSTACK_DEFAULT_SCHEMATIC = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
_ID = r"[0-9a-f]{64}"
_BOOT_URL = re.compile(rf"/image/(?P<id>{_ID})/(?P<version>v[0-9][^/]*)/")
_INSTALLER = re.compile(rf"/(?P<id>{_ID}):(?P<version>v[0-9][^\s\"']*)")
# Vanilla Talos's install image up to 1.13 names no schematic: it is the empty one, as is
# 1.14's default factory.talos.dev/metal-installer/<empty schematic>.
_PLAIN_INSTALLER = re.compile(r"ghcr\.io/siderolabs/installer:(?P<version>v[0-9][^\s\"']*)")
_HASH_SUFFIX = re.compile(r"-[0-9a-f]{6}$")
_HEREDOC = re.compile(r"<<-?\s*['\"]?(?P<marker>[A-Za-z_]\w*)['\"]?[^\n]*\n")
_SCHEMATIC_KEYS = frozenset({"owner", "overlay", "customization"})
# What goes under `customization:`. Written at the top instead (a snippet's
# `systemExtensions:` pasted as the whole file), the factory refuses the schematic: such a
# document is read as a schematic, so the decoder says so.
_CUSTOMIZATION_KEYS = frozenset(
    field.alias or name for name, field in Customization.model_fields.items()
)


@dataclass(frozen=True)
class Place:
    """A place in the input: a document and a key path inside it."""

    doc: Document
    path: Path_ = ()

    @property
    def file(self) -> str:
        return self.doc.file

    @property
    def line(self) -> int:
        return self.doc.line(self.path)


@dataclass(frozen=True)
class SchematicUse:
    """A schematic ID a pool boots or upgrades with, and where the ID is written."""

    id: str
    place: Place
    role: str  # "talos.schematicID", "boot disk", "installer image", ...
    inherited: bool = False  # from the cluster-wide talos.schematicID
    # The URL or image reference the ID was read from ("" when it is a bare ID).
    reference: str = ""


@dataclass(frozen=True)
class GpuUse:
    name: str
    place: Place


@dataclass(frozen=True)
class KernelModules:
    state: Literal["unset", "null", "list"]
    names: tuple[str, ...] = ()
    place: Place | None = None
    source: str = "kernelModules"  # or "machine config"


@dataclass
class Pool:
    """One pool of identical workers, as values describe it or as manifests render it."""

    name: str
    place: Place
    cluster: str = ""
    rendered: bool = False
    gpus: list[GpuUse] = field(default_factory=list)
    schematics: list[SchematicUse] = field(default_factory=list)
    talos: str | None = None
    talos_place: Place | None = None
    modules: KernelModules = field(default_factory=lambda: KernelModules("unset"))
    machine_config_modules: KernelModules | None = None
    # False for a standalone machine config: it does not say which GPUs the node has.
    gpus_known: bool = True
    # Every piece of the node's machine config was read (a whole talconfig and every patch it
    # names): what it loads is all the node loads.
    config_complete: bool = False
    # A node group of a Kubernetes app (spec.nodeGroups), not a KubernetesNodes object.
    node_group: bool = False
    # From a machine config read here: its machine.sysctls, and where it sets
    # machine.install.extensions.
    sysctls: dict[str, str] | None = None
    install_extensions: Place | None = None
    # Where a machine config names the plain ghcr.io/siderolabs/installer (vanilla Talos).
    plain_installer: Place | None = None
    # The Talos release the pool's image union pins (osImage / image .factory|builtin .version)
    # and the talos.version beside it (a node group's: the app's), each with where it is.
    image_version: tuple[str, Place, str] | None = None
    talos_version: tuple[str, Place, str] | None = None
    # A KubernetesNodes pool described by values: each top-level key and talos.<key> it sets,
    # to hold against the chart the values are for (lint --chart).
    value_keys: dict[str, Place] | None = None
    # Keys a machine config of the pool writes twice: file, line, key path, first line.
    duplicate_keys: list[tuple[str, int, str, int]] = field(default_factory=list)

    @property
    def nvidia_gpus(self) -> list[GpuUse]:
        return [gpu for gpu in self.gpus if gpu.name.startswith("nvidia.com/")]


@dataclass
class Cluster:
    """A Kubernetes app (or kubernetes values): its cluster-wide schematic and add-ons."""

    name: str
    place: Place
    base: Path_
    schematic: SchematicUse
    talos: str | None
    pools: list[Pool] = field(default_factory=list)


@dataclass
class Inventory:
    pools: list[Pool] = field(default_factory=list)
    clusters: list[Cluster] = field(default_factory=list)
    schematic_files: list[tuple[Schematic, Place]] = field(default_factory=list)
    schematic_problems: list[tuple[SchematicError, Place]] = field(default_factory=list)
    services: list[Place] = field(default_factory=list)
    control_planes: list[Place] = field(default_factory=list)
    # gpu-operator values: of a HelmRelease, or of Cozystack's gpu-operator Package.
    operator_values: list[Place] = field(default_factory=list)
    # The platform values' `gpu` mappings: what the management cluster permits for passthrough.
    platform_gpu: list[Place] = field(default_factory=list)


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _kind(data: dict[str, Any]) -> str:
    return _str(data.get("kind"))


def _name(doc: Document) -> str:
    return _str(doc.get(("metadata", "name")))


def _is_operator_values(data: dict[str, Any], file: str) -> bool:
    """The GPU Operator's own values file (``helm -f``, as ``generate`` writes
    ``cluster/gpu-operator-values.yaml``): named so, or saying whether the operator runs its
    driver and toolkit."""
    if PurePath(file).name.endswith("gpu-operator-values.yaml"):
        return True
    parts = [_dict(data.get(part)) for part in ("driver", "toolkit")]
    return all("enabled" in part for part in parts)


def _is_schematic(data: dict[str, Any], file: str) -> bool:
    """A schematic, as ``id`` would be given one: the schematic's own keys, the keys of its
    customization at the top, or any kind-less document of a file named schematic.yaml."""
    if not data or "kind" in data:
        return False
    keys = set(data)
    if keys <= _SCHEMATIC_KEYS:
        return True
    if keys & _CUSTOMIZATION_KEYS and keys <= _SCHEMATIC_KEYS | _CUSTOMIZATION_KEYS:
        return True
    return is_schematic_file(file)


_PLATFORM_GPU_KEYS = ("permittedHostDevices", "replaceDefaults")


def _platform_gpu(data: dict[str, Any]) -> bool:
    gpu = data.get("gpu")
    return isinstance(gpu, dict) and any(key in gpu for key in _PLATFORM_GPU_KEYS)


def _is_app_values(values: dict[str, Any]) -> bool:
    return isinstance(values.get("nodeGroups"), dict) or isinstance(values.get("addons"), dict)


def _is_bare_spec(data: dict[str, Any]) -> bool:
    """A ``Kubernetes`` app or ``KubernetesNodes`` object shown without its kind, as guides
    show the part that matters: ``spec:`` (and perhaps ``metadata:``) alone at the top."""
    return isinstance(data.get("spec"), dict) and set(data) <= {"spec", "metadata"}


def _is_nodes_values(values: dict[str, Any]) -> bool:
    shaped = (
        isinstance(values.get("gpus"), list)
        or isinstance(values.get("talos"), dict)
        or isinstance(values.get("osImage"), dict)
        or isinstance(values.get("schematicID"), str)
        or "kernelModules" in values
    )
    # This tool's index.yaml (pools: [...]) and urls.yaml (pool: NAME) describe pools without
    # being values of one.
    listing = "pools" in values or "pool" in values
    return shaped and not listing and not _is_app_values(values)


# --- pools described by values ---------------------------------------------------------------


def _own_schematic(doc: Document, base: Path_, union: str = "osImage") -> SchematicUse | None:
    """The pool's own schematic, newest layout first (the image union, root schematicID,
    talos). ``union`` is ``osImage`` for a KubernetesNodes pool, ``image`` for a node group of
    the kubernetes chart (PR #3294)."""
    for source in ("factory", "builtin"):
        path = (*base, union, source, "schematicID")
        if _str(doc.get(path)):
            return SchematicUse(doc.get(path), Place(doc, path), f"{union}.{source}.schematicID")
    for path, role in (
        ((*base, "schematicID"), "schematicID"),
        ((*base, "talos", "schematicID"), "talos.schematicID"),
    ):
        if _str(doc.get(path)):
            return SchematicUse(doc.get(path), Place(doc, path), role)
    return None


def _image_version(doc: Document, base: Path_, union: str) -> tuple[str, Place, str] | None:
    for source in ("factory", "builtin"):
        path = (*base, union, source, "version")
        if _str(doc.get(path)):
            return doc.get(path), Place(doc, path), f"{union}.{source}.version"
    return None


def _own_talos(doc: Document, base: Path_, union: str = "osImage") -> tuple[str, Place] | None:
    image = _image_version(doc, base, union)
    if image is not None:
        return image[0], image[1]
    path = (*base, "talos", "version")
    if _str(doc.get(path)):
        return doc.get(path), Place(doc, path)
    return None


def _gpus(doc: Document, path: Path_, key: str = "name") -> list[GpuUse]:
    found: list[GpuUse] = []
    items = doc.get(path)
    if isinstance(items, list):
        for index, item in enumerate(items):
            name = _str(_dict(item).get(key))
            if name:
                found.append(GpuUse(name, Place(doc, (*path, index, key))))
    return found


def _kernel_modules(doc: Document, base: Path_) -> KernelModules:
    path = (*base, "kernelModules")
    if not doc.has(path):
        return KernelModules("unset")
    value = doc.get(path)
    if value is None:
        return KernelModules("null", place=Place(doc, path))
    names = (
        tuple(_str(_dict(item).get("name")) for item in value) if isinstance(value, list) else ()
    )
    return KernelModules("list", tuple(n for n in names if n), Place(doc, path))


def _values_pool(
    doc: Document, base: Path_, name: str, cluster: str, union: str = "osImage"
) -> Pool:
    pool = Pool(name=name, place=Place(doc, base), cluster=cluster)
    pool.gpus = _gpus(doc, (*base, "gpus"))
    pool.modules = _kernel_modules(doc, base)
    talos = _own_talos(doc, base, union)
    if talos is not None:
        pool.talos, pool.talos_place = talos
    pool.image_version = _image_version(doc, base, union)
    path = (*base, "talos", "version")
    if _str(doc.get(path)):
        pool.talos_version = (doc.get(path), Place(doc, path), "talos.version")
    return pool


def _value_keys(doc: Document, base: Path_) -> dict[str, Place]:
    keys: dict[str, Place] = {}
    for key in _dict(doc.get(base)):
        keys[str(key)] = Place(doc, (*base, key))
        if key == "talos":
            for sub in _dict(doc.get((*base, "talos"))):
                keys[f"talos.{sub}"] = Place(doc, (*base, "talos", sub))
    return keys


def _nodes_pool(doc: Document, base: Path_) -> Pool:
    name = _name(doc) or doc.file
    cluster = _str(doc.get((*base, "cluster")))
    pool = _values_pool(doc, base, name, _cluster_key(cluster))
    pool.value_keys = _value_keys(doc, base)
    own = _own_schematic(doc, base)
    if own is None:
        # The chart's default applies: the vanilla Cozystack schematic.
        own = SchematicUse(COZYSTACK_DEFAULT_SCHEMATIC, Place(doc, base), "chart default")
    pool.schematics.append(own)
    return pool


def _cluster_key(name: str) -> str:
    return name.removeprefix("kubernetes-")


def _app(doc: Document, base: Path_, inventory: Inventory) -> None:
    name = _name(doc) or doc.file
    path = (*base, "talos", "schematicID")
    if _str(doc.get(path)):
        wide = SchematicUse(doc.get(path), Place(doc, path), "cluster-wide talos.schematicID")
    else:
        wide = SchematicUse(COZYSTACK_DEFAULT_SCHEMATIC, Place(doc, base), "chart default")
    talos_path = (*base, "talos", "version")
    talos = _str(doc.get(talos_path)) or None
    cluster = Cluster(_cluster_key(name), Place(doc, base), base, wide, talos)
    groups = _dict(doc.get((*base, "nodeGroups")))
    for group in groups:
        group_base = (*base, "nodeGroups", group)
        pool = _values_pool(
            doc, group_base, f"{name} nodeGroups.{group}", cluster.name, union="image"
        )
        pool.node_group = True
        own = _own_schematic(doc, group_base, union="image")
        if own is None:
            # The chart's default is written nowhere: a finding on it points at the group.
            written = wide.role != "chart default"
            place = wide.place if written else Place(doc, group_base)
            own = SchematicUse(wide.id, place, wide.role, inherited=True)
        pool.schematics.append(own)
        if pool.talos is None and talos:
            pool.talos, pool.talos_place = talos, Place(doc, talos_path)
        if pool.talos_version is None and talos:
            pool.talos_version = (talos, Place(doc, talos_path), "talos.version")
        cluster.pools.append(pool)
        inventory.pools.append(pool)
    inventory.clusters.append(cluster)


# --- rendered manifests -----------------------------------------------------------------------


@dataclass
class _Rendered:
    kmts: list[tuple[str, Document]] = field(default_factory=list)
    tcts: list[tuple[str, Document, str]] = field(default_factory=list)  # name, doc, pool hint
    machine_deployments: dict[str, str] = field(default_factory=dict)  # template name -> pool


def _machine_config(doc: Document, data_path: Path_) -> list[Document]:
    text = doc.get(data_path)
    if not isinstance(text, str):
        return []
    try:
        # The block's text starts on the line after `data: |`.
        return parse_yaml(text, doc.file, line_offset=doc.line(data_path))
    except yaml.YAMLError:
        return []


def _tct_data_path(doc: Document) -> Path_:
    for path in (("spec", "template", "spec", "data"), ("spec", "data")):
        if isinstance(doc.get(path), str):
            return path
    return ("spec", "template", "spec", "data")


def _tct_pool(doc: Document, pool: Pool) -> None:
    talos_path: Path_ = ("spec", "template", "spec", "talosVersion")
    if not doc.has(talos_path):
        talos_path = ("spec", "talosVersion")
    if _str(doc.get(talos_path)) and pool.talos is None:
        pool.talos, pool.talos_place = doc.get(talos_path), Place(doc, talos_path)
    _machine_config_pool(_machine_config(doc, _tct_data_path(doc)), pool, Place(doc))


def _machine_config_pool(configs: list[Document], pool: Pool, fallback: Place) -> None:
    """What a machine config's documents say of the pool: installer, modules, sysctls."""
    modules: list[str] = []
    modules_place: Place | None = None
    for config in configs:
        data = _dict(config.data)
        for path, line, first in config.duplicates:
            key = ".".join(str(part) for part in path)
            pool.duplicate_keys.append((config.file, line, key, first))
        if _kind(data) == "KernelModuleConfig" and _str(data.get("name")):
            modules.append(data["name"])
            modules_place = modules_place or Place(config, ("name",))
        image_path: Path_ = (
            ("installer", "image") if _is_install_config(data) else ("machine", "install", "image")
        )
        image = _str(config.get(image_path)).strip()
        match = _INSTALLER.search(image)
        found = match or _PLAIN_INSTALLER.fullmatch(image)
        if found is not None:
            place = Place(config, image_path)
            schematic_id = match["id"] if match else EMPTY_SCHEMATIC_ID
            pool.schematics.append(
                SchematicUse(schematic_id, place, "installer image", reference=image)
            )
            if match is None:
                pool.plain_installer = place
            if pool.talos is None:
                pool.talos, pool.talos_place = found["version"], place
        listed = config.get(("machine", "kernel", "modules"))
        if isinstance(listed, list):
            modules += [_str(_dict(item).get("name")) for item in listed]
            modules_place = modules_place or Place(config, ("machine", "kernel", "modules"))
        sysctls = config.get(("machine", "sysctls"))
        if isinstance(data.get("machine"), dict):
            pool.sysctls = dict(pool.sysctls or {})
            if isinstance(sysctls, dict):
                pool.sysctls.update({str(key): str(value) for key, value in sysctls.items()})
        extensions_path: Path_ = ("machine", "install", "extensions")
        if config.get(extensions_path):
            pool.install_extensions = Place(config, extensions_path)
    if config_found := [m for m in modules if m]:
        pool.machine_config_modules = KernelModules(
            "list", tuple(config_found), modules_place, "machine config"
        )
    elif pool.machine_config_modules is None:
        pool.machine_config_modules = KernelModules("list", (), fallback, "machine config")


_PATCH_OPERATIONS = frozenset({"add", "remove", "replace", "move", "copy", "test"})


def _is_json6902(data: Any) -> bool:
    """An RFC 6902 patch list (``- op: add, path: /machine/..., value: ...``), the form the Talos
    docs used up to 1.5 and ``talosctl --config-patch`` still accepts."""
    return (
        isinstance(data, list)
        and bool(data)
        and all(
            isinstance(item, dict)
            and item.get("op") in _PATCH_OPERATIONS
            and _str(item.get("path")).startswith("/")
            for item in data
        )
    )


def _pointer(path: str) -> tuple[str, ...]:
    # RFC 6901: "~1" is "/", "~0" is "~", in that order.
    return tuple(part.replace("~1", "/").replace("~0", "~") for part in path.split("/")[1:])


def _apply_operation(config: dict[str, Any], keys: tuple[str, ...], value: Any) -> Path_ | None:
    """Write ``value`` at ``keys`` (``-`` appends to a list); the path written, or None when
    the pointer goes through something that is not a mapping."""
    node: Any = config
    written: list[str | int] = []
    for key, following in itertools.pairwise(keys):
        if not isinstance(node, dict):
            return None
        wanted: type = list if following == "-" or following.isdigit() else dict
        if not isinstance(node.get(key), wanted):
            node[key] = wanted()
        node = node[key]
        written.append(key)
        if isinstance(node, list):
            if following != "-" and not (following.isdigit() and int(following) <= len(node)):
                return None
            index = len(node) if following == "-" else int(following)
            node.insert(index, value)
            return (*written, index)
    if not isinstance(node, dict) or not keys:
        return None
    node[keys[-1]] = value
    return (*written, keys[-1])


def _json6902_config(doc: Document) -> Document:
    """The machine-config fragment a patch list's ``add`` and ``replace`` operations write, with
    each key at the line of the operation that wrote it."""
    config: dict[str, Any] = {}
    lines: dict[Path_, int] = {}
    for index, operation in enumerate(doc.data):
        if operation["op"] not in ("add", "replace") or "value" not in operation:
            continue
        written = _apply_operation(config, _pointer(operation["path"]), operation["value"])
        if written is None:
            continue
        for end in range(1, len(written) + 1):
            lines.setdefault(written[:end], doc.line((index, "path")))
        for path, line in doc.lines.items():
            if path[:2] == (index, "value"):
                lines[(*written, *path[2:])] = line
    return Document(doc.file, doc.index, config, lines, doc.text)


def _as_machine_configs(documents: list[Document]) -> list[Document]:
    return [_json6902_config(doc) if _is_json6902(doc.data) else doc for doc in documents]


def config_patch_pool(documents: list[Document], name: str) -> Pool | None:
    """One node config from patches applied in order (``lint --config-patch``): what they load,
    install and set together; None when none of them is a machine config."""
    configs = [
        doc
        for doc in _as_machine_configs(documents)
        if isinstance(doc.data, dict)
        and (_states_a_node_config(doc.data) or _kind(doc.data) == "KernelModuleConfig")
    ]
    if not any(_states_a_node_config(_dict(config.data)) for config in configs):
        return None
    pool = Pool(name=name, place=Place(configs[0]), gpus_known=False)
    _machine_config_pool(configs, pool, Place(configs[0]))
    return pool


def _is_machine_config(data: dict[str, Any]) -> bool:
    """A Talos v1alpha1 machine config or a patch of one (no ``kind``, a ``machine`` mapping)."""
    return not _kind(data) and isinstance(data.get("machine"), dict)


def _is_install_config(data: dict[str, Any]) -> bool:
    """Talos 1.14's ``UnattendedInstallConfig`` document: the installer a node installs, what
    ``machine.install.image`` said before (siderolabs/talos
    ``pkg/machinery/config/types/runtime/unattended_install.go``; SOURCES.md)."""
    return _kind(data) == "UnattendedInstallConfig" and data.get("apiVersion") == "v1alpha1"


def _states_a_node_config(data: dict[str, Any]) -> bool:
    """A document that makes a file a node's config, not only modules: a v1alpha1 machine
    config (or patch), or Talos 1.14's installer document."""
    return _is_machine_config(data) or _is_install_config(data)


def _standalone_machine_configs(documents: list[Document], inventory: Inventory) -> None:
    """One pool per file holding a machine config (with that file's KernelModuleConfigs)."""
    by_file: dict[str, list[Document]] = {}
    for doc in _as_machine_configs(documents):
        data = doc.data
        if isinstance(data, dict) and (
            _states_a_node_config(data)
            or (_kind(data) == "KernelModuleConfig" and data.get("apiVersion") == "v1alpha1")
        ):
            by_file.setdefault(doc.file, []).append(doc)
    for file, configs in by_file.items():
        if not any(_states_a_node_config(_dict(config.data)) for config in configs):
            continue  # KernelModuleConfig documents alone say too little to judge
        pool = Pool(name=file, place=Place(configs[0]), gpus_known=False)
        _machine_config_pool(configs, pool, Place(configs[0]))
        inventory.pools.append(pool)


def _kmt_pool(doc: Document, pool: Pool) -> None:
    vm_spec: Path_ = ("spec", "template", "spec", "virtualMachineTemplate", "spec")
    domain: Path_ = (*vm_spec, "template", "spec", "domain", "devices")
    pool.gpus += _gpus(doc, (*domain, "gpus"), "deviceName")
    pool.gpus += _gpus(doc, (*domain, "hostDevices"), "deviceName")
    for path, value in walk(doc.data):
        if path[-2:] == ("http", "url") and isinstance(value, str):
            match = _BOOT_URL.search(value)
            if match:
                pool.schematics.append(
                    SchematicUse(match["id"], Place(doc, path), "boot disk", reference=value)
                )
                if pool.talos is None:
                    pool.talos, pool.talos_place = match["version"], Place(doc, path)


def _kmt_key(doc: Document, rendered: _Rendered) -> str:
    name = _name(doc)
    if name in rendered.machine_deployments:
        return rendered.machine_deployments[name]
    labels_path: Path_ = (
        "spec", "template", "spec", "virtualMachineTemplate", "spec", "template", "metadata",
        "labels", "cluster.x-k8s.io/deployment-name",
    )  # fmt: skip
    return _str(doc.get(labels_path)) or _HASH_SUFFIX.sub("", name) or doc.file


def _job_tcts(doc: Document) -> list[tuple[Document, str]]:
    """TalosConfigTemplates applied by a reconcile Job's script, with their pool name."""
    found: list[tuple[Document, str]] = []
    containers = doc.get(("spec", "template", "spec", "containers"))
    for c_index, container in enumerate(containers if isinstance(containers, list) else []):
        container = _dict(container)
        env = {
            _str(_dict(item).get("name")): _str(_dict(item).get("value"))
            for item in container.get("env") or []
            if isinstance(item, dict) and isinstance(item.get("value"), str)
        }
        for key in ("command", "args"):
            items = container.get(key)
            for i_index, script in enumerate(items if isinstance(items, list) else []):
                if not isinstance(script, str) or "TalosConfigTemplate" not in script:
                    continue
                path = ("spec", "template", "spec", "containers", c_index, key, i_index)
                found += _heredoc_tcts(doc, path, script, env)
    return found


def _substitute(text: str, env: dict[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        return env.get(match[1] or match[2], match[0])

    return re.sub(r"\$\{(\w+)\}|\$(\w+)", value, text)


def _heredoc_tcts(
    doc: Document, path: Path_, script: str, env: dict[str, str]
) -> list[tuple[Document, str]]:
    found: list[tuple[Document, str]] = []
    for match in _HEREDOC.finditer(script):
        body_start = match.end()
        lines = script[body_start:].split("\n")
        end = next(
            (i for i, line in enumerate(lines) if line.strip() == match["marker"]), len(lines)
        )
        body = textwrap.dedent("\n".join(lines[:end]))
        if "TalosConfigTemplate" not in body:
            continue
        offset = doc.line(path) + script.count("\n", 0, body_start)
        try:
            embedded = parse_yaml(_substitute(body, env), doc.file, line_offset=offset)
        except yaml.YAMLError:
            continue
        for inner in embedded:
            if _kind(_dict(inner.data)) == "TalosConfigTemplate":
                hint = ""
                if env.get("RELEASE") and env.get("GROUP_NAME"):
                    hint = f"{env['RELEASE']}-{env['GROUP_NAME']}"
                found.append((inner, hint))
    return found


def _rendered_pools(rendered: _Rendered, inventory: Inventory) -> None:
    pools: dict[str, Pool] = {}

    def pool_for(key: str, doc: Document) -> Pool:
        if key not in pools:
            pools[key] = Pool(name=key, place=Place(doc), rendered=True)
        return pools[key]

    for _, doc in rendered.kmts:
        _kmt_pool(doc, pool_for(_kmt_key(doc, rendered), doc))
    for name, doc, hint in rendered.tcts:
        key = rendered.machine_deployments.get(name) or hint
        if not key:
            stripped = _HASH_SUFFIX.sub("", name)
            key = name if name in pools or stripped not in pools else stripped
        _tct_pool(doc, pool_for(key or doc.file, doc))
    inventory.pools += pools.values()


# --- entry point ------------------------------------------------------------------------------


def _schematic_file(doc: Document, inventory: Inventory) -> None:
    try:
        schematic = Schematic.from_yaml(doc.text, doc.file)
    except SchematicError as err:
        inventory.schematic_problems.append((err, Place(doc)))
        return
    inventory.schematic_files.append((schematic, Place(doc)))


def _helm_release(doc: Document, inventory: Inventory) -> None:
    base: Path_ = ("spec", "values")
    values = _dict(doc.get(base))
    if _is_app_values(values):
        _app(doc, base, inventory)
    elif _is_nodes_values(values):
        inventory.pools.append(_nodes_pool(doc, base))
    elif "gpu-operator" in values or _name(doc).endswith("gpu-operator"):
        inventory.operator_values.append(Place(doc, base))


def build_inventory(documents: list[Document]) -> Inventory:
    """Sort every document into pools, clusters, schematic files and manifests."""
    inventory = Inventory()
    rendered = _Rendered()
    template_spec: Path_ = ("spec", "template", "spec")
    for doc in documents:
        if isinstance(doc.data, dict) and _kind(doc.data) == "MachineDeployment":
            for ref_path in (
                (*template_spec, "bootstrap", "configRef", "name"),
                (*template_spec, "infrastructureRef", "name"),
            ):
                if _str(doc.get(ref_path)):
                    rendered.machine_deployments[doc.get(ref_path)] = _name(doc)
    for doc in documents:
        data = doc.data
        if not isinstance(data, dict):
            continue
        kind = _kind(data)
        if kind == "KubernetesNodes":
            inventory.pools.append(_nodes_pool(doc, ("spec",)))
        elif kind == "Kubernetes" and "cozystack" in _str(data.get("apiVersion")):
            _app(doc, ("spec",), inventory)
        elif kind == "HelmRelease":
            _helm_release(doc, inventory)
        elif kind == "KubevirtMachineTemplate":
            rendered.kmts.append((_name(doc), doc))
        elif kind == "TalosConfigTemplate":
            rendered.tcts.append((_name(doc), doc, ""))
        elif kind == "Job":
            for tct, hint in _job_tcts(doc):
                rendered.tcts.append((_name(tct), tct, hint))
        elif kind == "Service":
            inventory.services.append(Place(doc))
        elif kind == "KamajiControlPlane":
            inventory.control_planes.append(Place(doc))
        elif kind == "Package" and "cozystack" in _str(data.get("apiVersion")):
            values_path: Path_ = ("spec", "components", "platform", "values")
            if _platform_gpu(_dict(doc.get(values_path))):
                inventory.platform_gpu.append(Place(doc, (*values_path, "gpu")))
            # The gpu-operator package's values (packages/system/gpu-operator/examples).
            operator_path: Path_ = ("spec", "components", "gpu-operator", "values")
            if isinstance(doc.get(operator_path), dict):
                inventory.operator_values.append(Place(doc, operator_path))
        elif not kind and _platform_gpu(data):
            inventory.platform_gpu.append(Place(doc, ("gpu",)))
        elif not kind and _is_operator_values(data, doc.file):
            inventory.operator_values.append(Place(doc, ()))
        elif not kind and _is_schematic(data, doc.file):
            _schematic_file(doc, inventory)
        elif not kind and _is_app_values(data):
            _app(doc, (), inventory)
        elif not kind and _is_nodes_values(data):
            inventory.pools.append(_nodes_pool(doc, ()))
        elif _is_bare_spec(data) and _is_app_values(data["spec"]):
            _app(doc, ("spec",), inventory)
        elif _is_bare_spec(data) and _is_nodes_values(data["spec"]):
            inventory.pools.append(_nodes_pool(doc, ("spec",)))
    _rendered_pools(rendered, inventory)
    _standalone_machine_configs(documents, inventory)
    for cluster in inventory.clusters:
        for pool in inventory.pools:
            if pool.cluster == cluster.name and pool not in cluster.pools:
                cluster.pools.append(pool)
    return inventory
