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
- ``kernelModules``: talhelper writes them into ``machine.kernel.modules``, so up to Talos 1.13
  the modules the extensions install but do not load go there.
- ``patches``: the rest of the pool's machine-config patch
  (:mod:`schematic.output.render.machineconfig`, the one place that decides it), one inline
  patch per document: sysctls and pre-1.12 registry mirrors as a v1alpha1 patch, and the typed
  documents (``KernelModuleConfig`` from Talos 1.14, ``RegistryMirrorConfig`` from 1.12).
  ``machine.install.image`` is left to talhelper.
"""

from __future__ import annotations

import textwrap
from typing import Any

from schematic.facts.media import platform_media
from schematic.facts.talos import TalosVersion, talhelper_installer
from schematic.output.render import yamltext
from schematic.output.render.machineconfig import patch_without_installer
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


# The factory serves ``<platform>-installer`` from Talos 1.10; ``installer`` is the metal one
# (DOMAIN: the installer image row), so before 1.10 talhelper's metal-installer does not exist.
_PLATFORM_INSTALLERS_FROM = TalosVersion(1, 10, 0)


def _talhelper_installs(pool: PoolPlan, pinned: str) -> bool:
    """Whether talhelper's own installer for the pool is ``pinned`` (or the same image)."""
    registry = pool.talos.image_factory_url.split("://", 1)[-1].rstrip("/")
    mode = platform_media(pool.profile.platform).image_platform
    secure = pool.media.secureboot_enabled
    derived = talhelper_installer(registry, mode, secure, pool.schematic_id)
    if pinned == derived:
        return True
    legacy = f"{registry}/installer{'-secureboot' if secure else ''}/{pool.schematic_id}"
    served = TalosVersion.of(pool.talos.version).release >= _PLATFORM_INSTALLERS_FROM
    return mode == "metal" and pinned == legacy and served


def _machine_spec(pool: PoolPlan) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    mode = platform_media(pool.profile.platform).image_platform
    if mode != _DEFAULT_MODE:
        spec["mode"] = mode
    if pool.profile.architecture != _DEFAULT_ARCH:
        spec["arch"] = pool.profile.architecture
    if pool.media.secureboot_enabled:
        spec["secureboot"] = True
    return spec


def _modules_and_patches(pool: PoolPlan) -> tuple[list[Any], list[dict[str, Any]]]:
    """The pool's patch split into talhelper's ``kernelModules`` and its remaining documents."""
    # talhelper writes the installer from schematic / talosImageURL.
    v1alpha1, *documents = patch_without_installer(pool)
    machine = dict(v1alpha1["machine"])
    kernel = machine.pop("kernel", {})
    modules: list[Any] = list(kernel.get("modules", ()))
    patches = [{"machine": machine}] if machine else []
    return modules, [*patches, *documents]


def talhelper_fragment(pool: PoolPlan) -> str:
    """The talconfig keys of ``pool``, after a comment naming the pool and where they go."""
    installer = pool.references.installer
    version = pool.talos.version
    lines = [
        f"# talhelper keys for pool {pool.name} (talosVersion {version}): paste them into each",
        "# of the pool's entries under nodes:, or under worker: when every worker is of this pool.",
        f"# schematic {pool.schematic_id}",
        f"# installer {installer}",
    ]
    fields: dict[str, Any] = {}
    pinned = pool.references.installer_unversioned
    if _talhelper_installs(pool, pinned):
        lines.append("# (what talhelper derives: <factory>/<mode>-installer[-secureboot]/<ID>)")
    else:
        # talhelper would install <factory>/<machineSpec.mode>-installer/<ID>: another image.
        lines.append("# (talhelper derives <factory>/<mode>-installer/<ID>: talosImageURL pins it)")
        fields["talosImageURL"] = pinned
    out = "\n".join(lines) + "\n" + _nested("schematic", pool.posted_canonical)
    if pool.boot_canonical is not None:
        out += _nested("imageSchematic", pool.boot_canonical)
    if spec := _machine_spec(pool):
        fields["machineSpec"] = spec
    modules, patches = _modules_and_patches(pool)
    if modules:
        fields["kernelModules"] = modules
    if fields:
        out += yamltext.dump(fields)
    if patches:
        out += "patches:\n" + "".join(_literal(yamltext.dump(patch)) for patch in patches)
    return out
