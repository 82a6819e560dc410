"""TS143: a pool GPU the management cluster does not permit for KubeVirt passthrough.

Checked only when the management cluster's platform values are among the inputs (a ``gpu``
mapping with ``permittedHostDevices`` / ``replaceDefaults``): Cozystack's platform chart permits
its default list (:func:`schematic.plan.gpupath.passthrough_defaults`) unless
``gpu.replaceDefaults: true``, plus every ``gpu.permittedHostDevices.pciHostDevices`` entry. A
VM asking for any other resource is refused by KubeVirt's admission, so the pool never starts.
"""

from __future__ import annotations

from schematic.doctor.lint.findings import Collector
from schematic.doctor.lint.inventory import Inventory, Place
from schematic.plan.gpupath import passthrough_defaults

__all__ = ["check_passthrough", "permitted_resources"]


def permitted_resources(places: list[Place]) -> set[str]:
    """Every resource name the platform values permit (defaults unless replaced, and theirs)."""
    permitted: set[str] = set()
    for place in places:
        gpu = place.doc.get(place.path)
        if not isinstance(gpu, dict):
            continue
        if gpu.get("replaceDefaults") is not True:
            permitted.update(entry.resource_name for entry in passthrough_defaults())
        listed = place.doc.get((*place.path, "permittedHostDevices", "pciHostDevices"))
        for entry in listed if isinstance(listed, list) else []:
            if isinstance(entry, dict) and isinstance(entry.get("resourceName"), str):
                permitted.add(entry["resourceName"])
    return permitted


def check_passthrough(inventory: Inventory, out: Collector) -> None:
    if not inventory.platform_gpu:
        return
    permitted = permitted_resources(inventory.platform_gpu)
    where = ", ".join(dict.fromkeys(place.file for place in inventory.platform_gpu))
    for pool in inventory.pools:
        for gpu in dict.fromkeys(use.name for use in pool.nvidia_gpus):
            if gpu in permitted:
                continue
            use = next(use for use in pool.nvidia_gpus if use.name == gpu)
            out.add(
                "TS143",
                message=f"pool {pool.name!r}: GPU {gpu} is not permitted by the management "
                "cluster's "
                f"platform values ({where}); KubeVirt refuses the pool's VMs",
                file=use.place.file,
                line=use.place.line,
                obj=pool.name,
            )
