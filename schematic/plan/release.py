"""A Talos release resolved once: what planning and every output read of it.

A cluster file names its release as text (``talos.version``, or a pool's own). Planning turns
each distinct one into a frozen :class:`Release` here, once: the packaged tables that plan it
(its extension catalogue, its NVIDIA driver row and its NVIDIA rules-table answers) and every
release-dependent form the outputs take (the installer repository's default, where the
installer is pinned, how kernel modules and registry mirrors are written). Nothing after
planning parses a version again: it reads these fields.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from schematic.errors import CatalogError, NvidiaError
from schematic.facts.catalog import extensions_for, overlays_for, resolve_version, talos_versions
from schematic.facts.nvidia_rules import ReleaseRules, rules_for
from schematic.facts.release_facts import (
    FactsInEffect,
    drivers_of,
    facts_in_effect,
    refuse_withdrawn,
)
from schematic.facts.talos import (
    METAL_INSTALLER_FROM,
    DriverTableMatch,
    TalosVersion,
    default_installer_repository,
)

if TYPE_CHECKING:
    from schematic.inputs.cluster_values import ClusterFile

__all__ = [
    "KERNEL_MODULE_DOCUMENTS_FROM",
    "MIRROR_DOCUMENTS_FROM",
    "UNATTENDED_INSTALL_FROM",
    "ZSTD_FROM",
    "Release",
    "refuse_withdrawn_releases",
    "release_of",
    "target_release",
]

# Talos 1.14 loads modules from KernelModuleConfig documents (machine.kernel.modules is
# deprecated there) and reads the installer from an UnattendedInstallConfig document.
KERNEL_MODULE_DOCUMENTS_FROM = TalosVersion(1, 14, 0)
UNATTENDED_INSTALL_FROM = TalosVersion(1, 14, 0)
# Talos 1.12 moved registry settings to their own documents; 1.13's schema no longer has
# machine.registries.
MIRROR_DOCUMENTS_FROM = TalosVersion(1, 12, 0)
# The factory reads the format from the file name; zstd exists from Talos 1.8 (when the metal
# images moved to it from xz), so older releases get those images as .xz.
ZSTD_FROM = TalosVersion(1, 8, 0)


@dataclass(frozen=True)
class Release:
    """One Talos release, resolved: the facts of its tables and the forms its outputs take."""

    # The release the nodes run: what every image reference and values key carries.
    version: TalosVersion
    # The release whose tables plan it: ``version`` itself, or the newest known one for a
    # release beyond the tables (see :func:`target_release`).
    tables: TalosVersion
    # The NVIDIA rules table's answers for ``tables`` (GB10, GPUDirect Storage, NVLink-5 and
    # which NVIDIA extensions it offers): what every NVIDIA decision of the release reads.
    nvidia_rules: ReleaseRules = field(repr=False)
    # The official extensions and overlays of ``tables``.
    extensions: frozenset[str] = field(default=frozenset(), repr=False)
    overlays: frozenset[str] = field(default=frozenset(), repr=False)
    # The NVIDIA driver row (what every NVIDIA decision of the release reads); None for a
    # release before the NVIDIA extensions or one whose drivers are unknown, and then why.
    drivers: DriverTableMatch | None = None
    drivers_error: NvidiaError | None = field(default=None, compare=False, repr=False)
    # The release whose catalogue and driver row plan it: ``version`` itself when the facts
    # file or the tables have it, else the nearest packaged one (a newer patch: its line's last).
    planned_with: str = ""

    def nvidia_drivers(self) -> DriverTableMatch:
        """The release's NVIDIA drivers; NvidiaError when they are unknown (a GPU pool's
        decision asks, so a release without them fails only the pools that need them)."""
        if self.drivers is None:
            assert self.drivers_error is not None  # release_of sets one of the two
            raise self.drivers_error
        return self.drivers

    @property
    def tables_note(self) -> str:
        """Why its extensions and drivers are another release's; empty when they are its own."""
        said = []
        if self.planned_with not in ("", self.name):
            said.append(
                f"Talos {self.name} is not in the packaged extension catalogue; planned with "
                f"the nearest release's, {self.planned_with}'s"
            )
        if self.drivers is not None and self.drivers.note:
            said.append(self.drivers.note)
        return "; ".join(said)

    @property
    def name(self) -> str:
        """``v1.13.9``: the release as every output writes it."""
        return str(self.version)

    @property
    def kernel_module_documents(self) -> bool:
        """Whether the machine config loads modules with KernelModuleConfig documents."""
        return self.version >= KERNEL_MODULE_DOCUMENTS_FROM

    @property
    def mirror_documents(self) -> bool:
        """Whether registry mirrors are RegistryMirrorConfig documents."""
        return self.version >= MIRROR_DOCUMENTS_FROM

    @property
    def unattended_install(self) -> bool:
        """Whether the release has the UnattendedInstallConfig document."""
        return self.version.release >= UNATTENDED_INSTALL_FROM

    @property
    def platform_installers(self) -> bool:
        """Whether a node upgrades from its platform's installer (``metal-installer``) by
        default: from Talos 1.14, when the plain ``installer`` is no longer published."""
        return self.version.release >= METAL_INSTALLER_FROM

    def default_installer_repository(self, image_platform: str) -> str:
        """The repository a pool booting ``image_platform`` upgrades from when the user names
        none."""
        return default_installer_repository(self.version, image_platform)

    def __str__(self) -> str:
        return self.name


def refuse_withdrawn_releases(cluster: ClusterFile, source: str) -> None:
    """CatalogError when the facts in effect say the factory withdrew a release the file names
    for its nodes to run (``generate``, ``check``; ``upgrade`` plans away from one)."""
    refuse_withdrawn(cluster.talos.version, f"{source}: talos.version")
    for pool in cluster.pools:
        if pool.talos_version is not None:
            refuse_withdrawn(pool.talos_version, f'{source}: pool "{pool.name}": talos.version')


def target_release(wanted: str) -> tuple[str, str, str]:
    """``(release, planned_as, note)`` for a release to plan at.

    ``planned_as`` is the release whose packaged tables the plan uses: the release itself when
    the catalogue knows it or a newer patch of a known minor (the tables say which patch they
    use), and the newest known release for anything beyond the tables, with a note saying so.
    Raises CatalogError for text that is not a release.
    """
    version = TalosVersion.parse(wanted)
    if version.prerelease:
        raise CatalogError(
            f"{wanted!r} is a pre-release; upgrade plans are for releases such as v1.13.9"
        )
    facts = facts_in_effect().facts
    if facts is not None and facts.extension_names(version) is not None:
        return str(version), str(version), ""
    known = talos_versions()
    newest = TalosVersion.parse(known[-1])
    if version.minor_line > newest.minor_line:
        note = (
            f"Talos {version} is newer than the packaged tables (newest {newest}); planned with "
            f"{newest}'s extensions and NVIDIA drivers, which may differ from {version}'s: check "
            "with --live-catalogue and the release notes"
        )
        return str(version), str(newest), note
    resolve_version(str(version))  # raises, naming the closest known releases
    if str(version) not in known:
        same_line = [v for v in known if TalosVersion.parse(v).minor_line == version.minor_line]
        if same_line and TalosVersion.parse(same_line[-1]) < version:
            note = (
                f"Talos {version} is newer than the packaged tables' last "
                f"{version.major}.{version.minor} release ({same_line[-1]}); planned with its "
                "extensions and NVIDIA drivers"
            )
            return str(version), str(version), note
    return str(version), str(version), ""


def release_of(version: str, tables: str | None = None) -> Release:
    """The release ``version`` (``v1.13.9``), resolved once per run and cached.

    The facts file in effect answers first (its extensions and the drivers their tags carry);
    ``tables`` names the packaged release that plans it when that is not ``version`` itself
    (a release beyond them, planned with the newest known one). Raises CatalogError for a
    release neither can plan.
    """
    return _release_of(version, tables, facts_in_effect())


@functools.cache
def _release_of(version: str, tables: str | None, in_effect: FactsInEffect) -> Release:
    parsed = TalosVersion.parse(version)
    from_facts = None if in_effect.facts is None else in_effect.facts.extension_names(parsed)
    planned_as = version if from_facts is not None else tables or version
    if from_facts is not None:
        # Overlays are not in the facts file: the nearest packaged release's.
        known = talos_versions()
        nearest = known[-1] if parsed > TalosVersion.parse(known[-1]) else version
        catalogue, extensions = version, from_facts
        overlays = overlays_for(resolve_version(str(TalosVersion.parse(nearest).release)))
    else:
        catalogue = resolve_version(planned_as)
        extensions, overlays = extensions_for(catalogue), overlays_for(catalogue)
    drivers: DriverTableMatch | None = None
    drivers_error: NvidiaError | None = None
    try:
        drivers = drivers_of(parsed)
    except NvidiaError as err:
        drivers_error = err  # a GPU pool is refused with it when decided
    return Release(
        version=parsed,
        tables=TalosVersion.parse(planned_as),
        extensions=extensions,
        overlays=overlays,
        drivers=drivers,
        drivers_error=drivers_error,
        nvidia_rules=rules_for(TalosVersion.parse(planned_as)),
        planned_with=catalogue,
    )
