"""Talos machine-config patches per pool, for ``talosctl patch mc --patch @file``.

The patch pins ``machine.install.image`` to the pool's installer (same schematic as its boot
image), loads the modules the extensions install but do not load (``machine.kernel.modules``,
or one ``KernelModuleConfig`` document per module from Talos 1.14), sets the sysctls the
NVIDIA decision asks for (``net.core.bpf_jit_harden`` up to Talos 1.12), and carries the
cluster file's registry mirrors (``machine.registries.mirrors``, or one ``RegistryMirrorConfig``
document per registry from Talos 1.12).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from schematic.cluster import PoolPlan
from schematic.render.urls import installer_image
from schematic.talos import TalosVersion

__all__ = ["KERNEL_MODULE_DOCUMENTS_FROM", "MIRROR_DOCUMENTS_FROM", "machine_config_patch"]

KERNEL_MODULE_DOCUMENTS_FROM = TalosVersion(1, 14, 0)
# Talos 1.12 moved registry settings to their own documents; 1.13's schema no longer has
# machine.registries.
MIRROR_DOCUMENTS_FROM = TalosVersion(1, 12, 0)


def _module(name: str, parameters: tuple[str, ...]) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name}
    if parameters:
        entry["parameters"] = list(parameters)
    return entry


def _mirror_document(host: str, mirror: Mapping[str, Any]) -> dict[str, Any]:
    """Cozystack's (v1alpha1) mirror shape as a RegistryMirrorConfig document: overridePath
    moved onto each endpoint."""
    endpoint_extra = {"overridePath": True} if mirror.get("overridePath") else {}
    document: dict[str, Any] = {
        "apiVersion": "v1alpha1",
        "kind": "RegistryMirrorConfig",
        "name": host,
        "endpoints": [{"url": url} | endpoint_extra for url in mirror["endpoints"]],
    }
    if mirror.get("skipFallback"):
        document["skipFallback"] = True
    return document


def machine_config_patch(pool: PoolPlan) -> list[dict[str, Any]]:
    """The patch documents: the v1alpha1 part first, then any typed documents."""
    # machine.install is deprecated in 1.14 but still honoured, while a node carrying the
    # replacing UnattendedInstallConfig document refuses machine.install: in a patch for an
    # existing config, machine.install.image is the form every release accepts.
    machine: dict[str, Any] = {"install": {"image": installer_image(pool)}}
    talos = TalosVersion.parse(pool.talos.version)
    documents: list[dict[str, Any]] = []
    if pool.kernel_modules:
        if talos >= KERNEL_MODULE_DOCUMENTS_FROM:
            documents = [
                {"apiVersion": "v1alpha1", "kind": "KernelModuleConfig"}
                | _module(module.name, module.parameters)
                for module in pool.kernel_modules
            ]
        else:
            machine["kernel"] = {
                "modules": [_module(m.name, m.parameters) for m in pool.kernel_modules]
            }
    if pool.sysctls:
        machine["sysctls"] = dict(pool.sysctls)
    mirrors = pool.registry_mirrors
    if mirrors:
        if talos >= MIRROR_DOCUMENTS_FROM:
            documents += [_mirror_document(host, mirror) for host, mirror in mirrors.items()]
        else:
            machine["registries"] = {"mirrors": mirrors}
    return [{"machine": machine}, *documents]
