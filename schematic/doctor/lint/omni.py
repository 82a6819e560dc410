"""Omni cluster templates: one pool per machine set (and per machine with its own extensions).

An Omni cluster template is a multi-document YAML file whose documents have a ``kind`` and no
``apiVersion``: one ``Cluster``, one ``ControlPlane``, any number of ``Workers`` and ``Machine``
(siderolabs/omni ``client/pkg/template/internal/models``). Omni builds each machine's
schematic itself from the ``systemExtensions`` (and ``kernelArgs``) of the machine, else of
its machine set, else of the cluster, and merges the config patches of the cluster, the
machine set and the machine. A template does not say which GPUs its machines hold, except
where ``generate -f omni`` recorded them in the machine set's ``talos-schematic/gpus``
annotation (and the Talos release, which a lone machine set does not name, in
``talos-schematic/talos-version``); without them the GPU rules that need the hardware do not
run.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from schematic.core.model import Customization, Schematic, SystemExtensions
from schematic.doctor.lint.findings import Collector
from schematic.doctor.lint.inventory import (
    GpuUse,
    Inventory,
    Place,
    Pool,
    SchematicUse,
    config_patch_pool,
)
from schematic.doctor.lint.loader import Document, Path_, parse_yaml
from schematic.errors import CatalogError
from schematic.output.render.omni import GPUS_ANNOTATION, TALOS_ANNOTATION
from schematic.safe_yaml import InputKind, read_text

__all__ = [
    "OMNI_KINDS",
    "add_omni_pools",
    "check_template_releases",
    "is_omni_template",
    "omni_extension_name",
]

OMNI_KINDS = frozenset({"Cluster", "ControlPlane", "Workers", "Machine"})
_MACHINE_SETS = ("ControlPlane", "Workers")


def is_omni_template(data: Any) -> bool:
    """A document of an Omni cluster template: one of its kinds, and no Kubernetes
    ``apiVersion`` (Cluster API has a ``Cluster`` and a ``Machine`` of its own)."""
    return isinstance(data, dict) and data.get("kind") in OMNI_KINDS and "apiVersion" not in data


def _part(doc: Document, path: Path_, data: Any) -> Document:
    """``data`` found at ``path`` of ``doc`` as a document of its own, keeping its lines."""
    lines = {key[len(path) :]: line for key, line in doc.lines.items() if key[: len(path)] == path}
    lines[()] = doc.line(path)
    return Document(doc.file, doc.index, data, lines, doc.text)


def _patches(doc: Document) -> list[Document]:
    """The machine-config documents of ``doc``'s ``patches``: inline (a mapping, a list of
    mappings, or a YAML text) or a file relative to the template."""
    found: list[Document] = []
    patches = doc.get(("patches",))
    for index, patch in enumerate(patches if isinstance(patches, list) else []):
        if not isinstance(patch, dict):
            continue
        inline: Path_ = ("patches", index, "inline")
        content = doc.get(inline)
        try:
            if isinstance(content, dict):
                found.append(_part(doc, inline, content))
            elif isinstance(content, list):
                found += [
                    _part(doc, (*inline, i), item)
                    for i, item in enumerate(content)
                    if isinstance(item, dict)
                ]
            elif isinstance(content, str):
                found += parse_yaml(content, doc.file, line_offset=doc.line(inline))
            elif isinstance(patch.get("file"), str):
                shown = str(Path(doc.file).parent / patch["file"])
                found += parse_yaml(read_text(shown, kind=InputKind.CONFIG_PATCH), shown)
        except (OSError, yaml.YAMLError):
            continue  # Omni itself refuses a patch it cannot read
    return found


def _extensions(doc: Document, cluster: Document | None) -> tuple[Document, bool] | None:
    """The document whose ``systemExtensions`` apply, and whether it is the cluster's."""
    if isinstance(doc.get(("systemExtensions",)), list):
        return doc, False
    if cluster is not None and isinstance(cluster.get(("systemExtensions",)), list):
        return cluster, True
    return None


# Omni writes an extension under the name the cluster's Talos release gives it, renamed either
# way: an old name on a newer release, a new name on an older one. Names some extensions'
# manifests got wrong, always; then one table per release that renamed extensions, applied
# forward from it and backward before it. siderolabs/omni internal/backend/extensions
# (MapNames, MapNamesByVersion; taken by Omni from the Image Factory's profile.go).
_OMNI_MISNAMED = {
    "siderolabs/v4l-uvc": "siderolabs/v4l-uvc-drivers",
    "siderolabs/usb-modem": "siderolabs/usb-modem-drivers",
    "siderolabs/gasket": "siderolabs/gasket-driver",
    "siderolabs/talos-vmtoolsd": "siderolabs/vmtoolsd-guest-agent",
}
_OMNI_RENAMES: tuple[tuple[tuple[int, int], dict[str, str]], ...] = (
    ((1, 7), {"siderolabs/xe-guest-utilities": "siderolabs/xen-guest-agent"}),
    (
        (1, 8),
        {
            "siderolabs/nvidia-container-toolkit": "siderolabs/nvidia-container-toolkit-lts",
            "siderolabs/nvidia-open-gpu-kernel-modules": (
                "siderolabs/nvidia-open-gpu-kernel-modules-lts"
            ),
            "siderolabs/nonfree-kmod-nvidia": "siderolabs/nonfree-kmod-nvidia-lts",
            # Omni's target for the old fabric-manager name names no published extension;
            # the name is then kept as written, and TS150 names it.
            "siderolabs/nvidia-fabricmanager": "siderolabs/nvidia-fabric-manager-lts",
        },
    ),
    (
        (1, 9),
        {
            "siderolabs/i915-ucode": "siderolabs/i915",
            "siderolabs/amdgpu-firmware": "siderolabs/amdgpu",
        },
    ),
)


def omni_extension_name(name: str, talos: str | None) -> str:
    """The extension Omni installs for ``name`` on Talos release ``talos`` (unchanged when the
    release is unknown, or the rename names no extension the catalogue knows)."""
    from schematic.facts.catalog import extension_releases
    from schematic.facts.talos import TalosVersion

    name = _OMNI_MISNAMED.get(name, name)
    try:
        version = TalosVersion.parse(talos) if talos else None
    except CatalogError:
        version = None
    if version is None:
        return name
    for (major, minor), renames in _OMNI_RENAMES:
        # Omni compares semantic versions (talosVersion.GTE(1.9.0)): a pre-release of the
        # first release of a rename is still before it.
        after = version >= TalosVersion(major, minor, 0)
        table = renames if after else {new: old for old, new in renames.items()}
        renamed = table.get(name)
        if renamed is not None and extension_releases(renamed):
            return renamed
    return name


def _schematic(where: Document, inventory: Inventory, talos: str | None) -> Schematic:
    """The schematic Omni builds from ``where``'s extensions and kernel arguments.

    Omni orders nothing the user sees by the schematic ID, so the extensions are taken sorted
    (the ID of the same set a factory's UI submits), each under the name Omni gives it on
    Talos release ``talos``."""
    names = where.get(("systemExtensions",))
    args = where.get(("kernelArgs",))
    listed = {omni_extension_name(str(n), talos) for n in names if n}
    schematic = Schematic(
        customization=Customization(
            system_extensions=SystemExtensions(official_extensions=tuple(sorted(listed))),
            extra_kernel_args=tuple(str(a) for a in args if a) if isinstance(args, list) else (),
        )
    )
    inventory.schematic_files.append((schematic, Place(where, ("systemExtensions",))))
    return schematic


def _annotation(doc: Document, key: str) -> tuple[str, Place] | None:
    path: Path_ = ("annotations", key)
    value = doc.get(path)
    return (value, Place(doc, path)) if isinstance(value, str) else None


def _pool(
    doc: Document,
    name: str,
    cluster: Document | None,
    inventory: Inventory,
    machine_set: Document | None = None,
) -> Pool:
    """The pool of a machine set, or of a ``Machine`` (with the set that lists it, whose
    patches and annotations it shares)."""
    levels = [level for level in (cluster, machine_set, doc) if level is not None]
    configs = [config for level in levels for config in _patches(level)]
    # An empty v1alpha1 document: what loads nothing is read as a config too, so an NVIDIA
    # machine set without a module patch is found (TS123).
    configs.append(_part(doc, ("patches",), {"machine": {}}))
    pool = config_patch_pool(configs, name) or Pool(name, Place(doc))
    pool.place = Place(doc)
    own = (doc, machine_set) if machine_set is not None else (doc,)
    gpus = next((a for d in own if (a := _annotation(d, GPUS_ANNOTATION))), None)
    pool.gpus_known = gpus is not None
    if gpus is not None:
        text, place = gpus
        pool.gpus = [GpuUse(n.strip(), place) for n in text.split(",") if n.strip()]
    talos = next((a for d in own if (a := _annotation(d, TALOS_ANNOTATION))), None)
    if talos is None and cluster is not None and isinstance(cluster.get(("talos", "version")), str):
        talos = cluster.get(("talos", "version")), Place(cluster, ("talos", "version"))
    if talos is not None:
        pool.talos, pool.talos_place = talos
    found = _extensions(doc, cluster)
    if found is not None:
        where, inherited = found
        schematic = _schematic(where, inventory, pool.talos)
        role = "cluster systemExtensions" if inherited else "systemExtensions"
        place = Place(where, ("systemExtensions",))
        pool.schematics.insert(0, SchematicUse(schematic.id, place, role, inherited))
    return pool


def add_omni_pools(documents: list[Document], inventory: Inventory) -> None:
    """One pool per ``ControlPlane`` and ``Workers`` document of a template, and one per
    ``Machine`` that sets its own extensions; ``documents`` are one file's, in order."""
    by_file: dict[str, list[Document]] = {}
    for doc in documents:
        by_file.setdefault(doc.file, []).append(doc)
    for docs in by_file.values():
        cluster = next((d for d in docs if d.data.get("kind") == "Cluster"), None)
        set_of = {
            machine: doc
            for doc in docs
            if doc.data["kind"] in _MACHINE_SETS and isinstance(doc.get(("machines",)), list)
            for machine in doc.get(("machines",))
            if isinstance(machine, str)
        }
        for doc in docs:
            kind = doc.data["kind"]
            if kind in _MACHINE_SETS:
                label = doc.get(("name",)) if isinstance(doc.get(("name",)), str) else ""
                name = f"omni {kind} {label}".rstrip()
            elif kind == "Machine" and isinstance(doc.get(("systemExtensions",)), list):
                machine = doc.get(("name",))
                name = f"omni Machine {machine}"
                machine_set = set_of.get(machine) if isinstance(machine, str) else None
                inventory.pools.append(_pool(doc, name, cluster, inventory, machine_set))
                continue
            else:
                continue
            inventory.pools.append(_pool(doc, name, cluster, inventory))


# The first Talos release that reads KernelModuleConfig documents (DOMAIN: the module list).
_MODULE_DOCUMENTS_FROM = (1, 14)


def _release(text: str) -> tuple[int, int] | None:
    from schematic.facts.talos import TalosVersion

    try:
        version = TalosVersion.parse(text)
    except CatalogError:
        return None
    return (version.major, version.minor)


def check_template_releases(documents: Sequence[Document], out: Collector) -> None:
    """TS157: a template whose machine sets are for another Talos release than its Cluster's
    (their ``talos-schematic/talos-version``), or for each other's when it has no Cluster; or
    whose Cluster's release is before 1.14 while a machine set patches in a
    ``KernelModuleConfig``."""
    by_file: dict[str, list[Document]] = {}
    for doc in documents:
        if is_omni_template(doc.data):
            by_file.setdefault(doc.file, []).append(doc)
    for docs in by_file.values():
        cluster = next((d for d in docs if d.data.get("kind") == "Cluster"), None)
        version = cluster.get(("talos", "version")) if cluster is not None else None
        sets = [d for d in docs if d.data["kind"] in _MACHINE_SETS]
        annotated = [(d, a) for d in sets if (a := _annotation(d, TALOS_ANNOTATION))]
        if not isinstance(version, str):
            # No Cluster here: the first machine set's release is the one the others must share.
            version = annotated[0][1][0] if annotated else None
        if version is None:
            continue
        for doc, (release, place) in annotated:
            if _release(release) != _release(version):
                out.add(
                    "TS157",
                    message=f"omni {doc.data['kind']} {doc.get(('name',))}: written for Talos "
                    f"{release}, in a template for Talos {version}",
                    file=place.file,
                    line=place.line,
                )
        cluster_release = _release(version)
        if cluster_release is None or cluster_release >= _MODULE_DOCUMENTS_FROM:
            continue
        for doc in sets:
            documents = [
                patch
                for patch in _patches(doc)
                if isinstance(patch.data, dict) and patch.data.get("kind") == "KernelModuleConfig"
            ]
            for patch in documents[:1]:  # one finding per machine set, at its first
                out.add(
                    "TS157",
                    message=f"omni {doc.data['kind']} {doc.get(('name',))}: a "
                    "KernelModuleConfig patch (Talos 1.14 and later), in a template for "
                    f"Talos {version}",
                    file=patch.file,
                    line=patch.line(("kind",)),
                )
