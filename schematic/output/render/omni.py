"""A pool as the machine set an Omni cluster template takes.

An Omni cluster template (siderolabs/omni ``client/pkg/template``) is a multi-document YAML
file: one ``Cluster``, one ``ControlPlane``, any number of ``Workers`` machine sets and
``Machine`` entries, each decoded strictly (an unknown key is an error). Omni builds every
machine's schematic itself from the ``systemExtensions`` (and ``kernelArgs``) of its machine
set, and merges the set's config ``patches`` into its machine configs. The fragment is one
``Workers`` document per pool, to add to the user's template:

- ``name`` the pool's, and ``machineClass`` a class of the same name (the user's, selecting
  the pool's machines by their labels), ``size: unlimited``: every machine it selects joins;
- ``systemExtensions``: the pool's extensions, the ones its schematic carries;
- ``kernelArgs``: the pool's extra kernel arguments, when it has any;
- ``patches``: the pool's machine-config patch
  (:mod:`schematic.output.render.machineconfig`, the one place that decides it), one inline
  patch per document, without the installer: Omni pins the installer from the schematic it
  builds and refuses ``UnattendedInstallConfig`` in a patch;
- ``annotations``: the GPUs the pool was planned for and its Talos release (a lone machine set
  does not name it), so that ``lint`` can hold the extensions against the hardware.
"""

from __future__ import annotations

from typing import Any

from schematic.output.render import yamltext
from schematic.output.render.machineconfig import patch_without_installer
from schematic.plan.cluster import PoolPlan

__all__ = ["GPUS_ANNOTATION", "TALOS_ANNOTATION", "omni_workers"]

# Omni reserves the omni.sidero.dev/ prefix; these are read back by lint.
GPUS_ANNOTATION = "talos-schematic/gpus"
TALOS_ANNOTATION = "talos-schematic/talos-version"


def _patch_name(pool: PoolPlan, document: dict[str, Any]) -> str:
    kind = document.get("kind")
    if kind is None:
        return f"{pool.name}-machine"
    return f"{pool.name}-{str(kind).lower()}-{document.get('name', '')}".rstrip("-")


def omni_workers(pool: PoolPlan) -> str:
    """The ``Workers`` document of ``pool``, after a comment naming the pool and its schematic."""
    version = pool.talos.version
    lines = [
        f"# Omni machine set for pool {pool.name} (Talos {version}): add this document to the",
        f"# cluster template; the machine class {pool.name} selects the pool's machines.",
        f"# extensions and kernel arguments of schematic {pool.schematic_id}",
    ]
    document: dict[str, Any] = {
        "kind": "Workers",
        "name": pool.name,
        "annotations": {
            GPUS_ANNOTATION: ",".join(dict.fromkeys(pool.gpu_resources)),
            TALOS_ANNOTATION: version,
        },
        "machineClass": {"name": pool.name, "size": "unlimited"},
        "systemExtensions": list(pool.extensions),
    }
    if pool.kernel_args:
        document["kernelArgs"] = list(pool.kernel_args)
    v1alpha1, *typed = patch_without_installer(pool)
    patches = [v1alpha1] if v1alpha1["machine"] else []
    if patches or typed:
        document["patches"] = [
            {"name": _patch_name(pool, patch), "inline": patch} for patch in [*patches, *typed]
        ]
    return "\n".join(lines) + "\n" + yamltext.dump(document)
