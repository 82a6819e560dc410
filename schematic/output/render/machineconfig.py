"""Talos machine-config patches per pool, for ``talosctl patch mc --patch @file``.

The patch pins the pool's installer (same schematic as its boot image) in the form its plan
chose (``PoolPlan.references.install_form``): ``machine.install.image`` (every release) or,
from Talos 1.14, an ``UnattendedInstallConfig`` document's ``installer.image``. It loads the
modules the extensions install but do not load
(``machine.kernel.modules``, or one ``KernelModuleConfig`` document per module from Talos
1.14), sets the sysctls the NVIDIA decision asks for (``net.core.bpf_jit_harden`` up to Talos
1.12), and carries the cluster file's registry mirrors (``machine.registries.mirrors``, or one
``RegistryMirrorConfig`` document per registry from Talos 1.12).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from schematic.plan.cluster import PoolPlan

__all__ = [
    "kernel_module_entries",
    "machine_config_patch",
    "patch_with_module_list",
    "patch_without_installer",
]


def _module(name: str, parameters: tuple[str, ...]) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name}
    if parameters:
        entry["parameters"] = list(parameters)
    return entry


def kernel_module_entries(pool: PoolPlan) -> list[dict[str, Any]]:
    """The pool's modules in the ``machine.kernel.modules`` form (name, parameters), the form
    every release up to 1.13 takes and Talos 1.14 still accepts."""
    return [_module(module.name, module.parameters) for module in pool.kernel_modules]


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
    machine: dict[str, Any] = {}
    documents: list[dict[str, Any]] = []
    installer = pool.references.installer
    if pool.references.install_form == "machine-install":
        machine["install"] = {"image": installer}
    else:
        # Merged into the config's own UnattendedInstallConfig (which holds the disk
        # selector Talos requires); only the image is this tool's.
        documents.append(
            {
                "apiVersion": "v1alpha1",
                "kind": "UnattendedInstallConfig",
                "installer": {"image": installer},
            }
        )
    if pool.kernel_modules:
        if pool.release.kernel_module_documents:
            documents += [
                {"apiVersion": "v1alpha1", "kind": "KernelModuleConfig"}
                | _module(module.name, module.parameters)
                for module in pool.kernel_modules
            ]
        else:
            machine["kernel"] = {"modules": kernel_module_entries(pool)}
    if pool.sysctls:
        machine["sysctls"] = dict(pool.sysctls)
    mirrors = pool.registry_mirrors
    if mirrors:
        if pool.release.mirror_documents:
            documents += [_mirror_document(host, mirror) for host, mirror in mirrors.items()]
        else:
            machine["registries"] = {"mirrors": mirrors}
    return [{"machine": machine}, *documents] if machine else documents


def patch_without_installer(pool: PoolPlan) -> list[dict[str, Any]]:
    """The patch without the installer pin (either form): the v1alpha1 part first, always,
    then the typed documents. For comparing what else changed, and for tools that pin the
    installer themselves (talhelper)."""
    documents = machine_config_patch(pool)
    machine: dict[str, Any] = {}
    if "machine" in documents[0]:
        machine = dict(documents[0]["machine"])
        machine.pop("install", None)
        documents = documents[1:]
    rest = [d for d in documents if d.get("kind") != "UnattendedInstallConfig"]
    return [{"machine": machine}, *rest]


def patch_with_module_list(pool: PoolPlan) -> list[dict[str, Any]]:
    """:func:`patch_without_installer` with the modules as ``machine.kernel.modules`` on every
    release: for tools whose bundled Talos machinery predates the ``KernelModuleConfig``
    document and refuses a patch holding one (talhelper's last release, topf), while Talos
    1.14 still accepts the module list."""
    v1alpha1, *documents = patch_without_installer(pool)
    machine = dict(v1alpha1["machine"])
    if pool.kernel_modules:
        machine["kernel"] = {"modules": kernel_module_entries(pool)}
    typed = [d for d in documents if d.get("kind") != "KernelModuleConfig"]
    return [{"machine": machine}, *typed]
