"""Talos machine-config patches per pool, for ``talosctl patch mc --patch @file``.

The patch pins ``machine.install.image`` to the pool's installer (same schematic as its boot
image), loads the modules the extensions install but do not load (``machine.kernel.modules``,
or one ``KernelModuleConfig`` document per module from Talos 1.14), and sets the sysctls the
NVIDIA decision asks for (``net.core.bpf_jit_harden`` up to Talos 1.12).
"""

from __future__ import annotations

from typing import Any

from schematic.cluster import PoolPlan
from schematic.render.urls import installer_image
from schematic.talos import TalosVersion

__all__ = ["KERNEL_MODULE_DOCUMENTS_FROM", "machine_config_patch"]

KERNEL_MODULE_DOCUMENTS_FROM = TalosVersion(1, 14, 0)


def _module(name: str, parameters: tuple[str, ...]) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name}
    if parameters:
        entry["parameters"] = list(parameters)
    return entry


def machine_config_patch(pool: PoolPlan) -> list[dict[str, Any]]:
    """The patch documents: the v1alpha1 part first, then any typed documents."""
    # machine.install is deprecated in 1.14 but still honoured, while a node carrying the
    # replacing UnattendedInstallConfig document refuses machine.install: in a patch for an
    # existing config, machine.install.image is the form every release accepts.
    machine: dict[str, Any] = {"install": {"image": installer_image(pool)}}
    documents: list[dict[str, Any]] = []
    if pool.kernel_modules:
        if TalosVersion.parse(pool.talos.version) >= KERNEL_MODULE_DOCUMENTS_FROM:
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
    return [{"machine": machine}, *documents]
