"""A pool as the keys a talhelper user pastes into ``talconfig.yaml``.

talhelper (budimanjojo/talhelper) builds each node's machine config from its ``talconfig.yaml``;
a node entry under ``nodes:`` and the ``worker:`` / ``controlPlane:`` groups take the same keys
(``NodeConfigs`` in its ``pkg/config/config.go``). The fragment is a mapping of those keys, so it
pastes unchanged into the pool's node entries, or under ``worker:`` when every worker belongs
to the pool (a talconfig has one ``worker:`` group, and a cluster has several pools):

- ``schematic``: the pool's schematic, the factory's own text, so the installer talhelper
  derives from it through its image factory carries the pool's schematic ID;
  ``imageSchematic`` when the boot media carry a schematic of their own.
- ``talosImageURL``: only when the installer the pool upgrades with is not the one talhelper
  derives by default, ``<factory host>/<machineSpec.mode>-installer[-secureboot]/<ID>`` with
  its ``talosVersion`` appended (``metal-installer`` by default, ``openstack-installer`` for a
  KubeVirt pool's mode; budimanjojo/talhelper ``pkg/config/defaults.go`` at 39b69792, the
  ``InstallerURLTmpl`` default since 6b09d815), e.g. a custom installer repository.
- ``machineSpec``: the boot media's platform, architecture and SecureBoot, when not
  talhelper's defaults (``metal``, ``amd64``, off).
- ``kernelModules``: talhelper writes them into ``machine.kernel.modules`` (``NodeConfigs``'
  ``[]*v1alpha1.KernelModuleConfig``, the v1alpha1 module entry; ``pkg/talos/nodeconfig.go``).
  They go there for every release, 1.14 too: talhelper's last release (v3.1.17; the
  repository is archived) bundles a Talos machinery that predates the ``KernelModuleConfig``
  document and refuses a patch holding one, while Talos 1.14 still accepts the module list.
- ``patches``: the rest of the pool's machine-config patch
  (:mod:`schematic.output.render.machineconfig`, the one place that decides it), one inline
  patch per document: sysctls and pre-1.12 registry mirrors as a v1alpha1 patch, and
  ``RegistryMirrorConfig`` documents from 1.12. ``machine.install.image`` is left to talhelper.

The keys are indented as a node entry's under ``nodes:`` (four spaces, below its
``- hostname:`` line), so the block pastes there unchanged.
"""

from __future__ import annotations

import textwrap
from typing import Any

from schematic.output.render import yamltext
from schematic.output.render.machineconfig import kernel_module_entries, patch_with_module_list
from schematic.output.render.platform_installer import (
    derived_installer,
    derives_the_pools_installer,
    node_platform,
)
from schematic.plan.cluster import PoolPlan

__all__ = ["talhelper_fragment"]

# talhelper's machineSpec defaults (pkg/config/config.go): what the fragment need not say.
_DEFAULT_MODE = "metal"
_DEFAULT_ARCH = "amd64"


def _nested(key: str, text: str) -> str:
    """``text`` (block YAML) as the value of ``key``: block YAML nests by indentation alone."""
    return f"{key}:\n{textwrap.indent(text, '  ')}"


def _literal(text: str) -> str:
    """``text`` as a list item holding a literal block scalar: each patch stays readable YAML."""
    return f"- |\n{textwrap.indent(text, '    ')}"


def _machine_spec(pool: PoolPlan) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    mode = node_platform(pool)
    if mode != _DEFAULT_MODE:
        spec["mode"] = mode
    if pool.profile.architecture != _DEFAULT_ARCH:
        spec["arch"] = pool.profile.architecture
    if pool.media.secureboot_enabled:
        spec["secureboot"] = True
    return spec


def _patches(pool: PoolPlan) -> list[dict[str, Any]]:
    """The pool's patch without what talhelper writes itself: the installer (from
    ``schematic`` / ``talosImageURL``) and the modules (from ``kernelModules``)."""
    v1alpha1, *documents = patch_with_module_list(pool)
    machine = dict(v1alpha1["machine"])
    machine.pop("kernel", None)
    return [*([{"machine": machine}] if machine else []), *documents]


# Where the keys go: a node entry's keys under ``nodes:``, below its ``- hostname:`` line.
_NODE_ENTRY_INDENT = "    "


def talhelper_fragment(pool: PoolPlan) -> str:
    """The talconfig keys of ``pool``, indented as a node entry's, after a comment naming the
    pool, its schematic and the installer talhelper writes from them."""
    version = pool.talos.version
    lines = [
        f"# talhelper keys for pool {pool.name} (talosVersion {version}): paste them into each",
        "# of the pool's entries under nodes:, below its - hostname: line, as indented here",
        "# (under worker:, when every worker is of this pool, two spaces less).",
        f"# schematic {pool.schematic_id}",
    ]
    fields: dict[str, Any] = {}
    pinned = pool.references.installer_unversioned
    if derives_the_pools_installer(pool):
        installer = derived_installer(pool)
        lines.append(f"# installer {installer}:{version} (talhelper derives it from schematic)")
    else:
        # talhelper would install <factory>/<machineSpec.mode>-installer/<ID>: another image.
        lines.append(f"# installer {pinned}:{version} (talosImageURL pins it)")
        fields["talosImageURL"] = pinned
    keys = _nested("schematic", pool.posted_canonical)
    if pool.boot_canonical is not None:
        keys += _nested("imageSchematic", pool.boot_canonical)
    if spec := _machine_spec(pool):
        fields["machineSpec"] = spec
    if modules := kernel_module_entries(pool):
        fields["kernelModules"] = modules
    if fields:
        keys += yamltext.dump(fields)
    if patches := _patches(pool):
        keys += "patches:\n" + "".join(_literal(yamltext.dump(patch)) for patch in patches)
    return "\n".join(lines) + "\n" + textwrap.indent(keys, _NODE_ENTRY_INDENT)
