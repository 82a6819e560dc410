"""Boot media and installer references of a pool, planned once: every one carries its schematic.

The worker boots ``<factory>/image/<id>/<version>/<asset>`` (or a PXE script,
``<pxe>/pxe/<id>/<version>/<platform>-<arch>``) and upgrades with
``<installerRepository>/<id>:<version>``. All of them follow the factory's path grammar
(image-factory ``internal/profile`` ``ParseFromPath``):

    disk image   <platform>-<arch>[-secureboot].<raw|qcow2|vhd|ova>[.xz|.gz|.zst|.tar.gz]
    ISO          <platform>-<arch>[-secureboot].iso
    UKI          <platform>-<arch>-secureboot-uki.efi
    PXE script   /pxe/<id>/<version>/<platform>-<arch>[-secureboot]
    installer    <repository>[-secureboot]/<id>:<version>

Board (overlay) images are ``metal-arm64.raw.xz``: the board is in the schematic, not the name.
A pool's boot media may carry a schematic of their own (``boot.schematic``); the installer
always carries the pool's. Where the machine config pins the installer (the install form) is
decided here too, so the outputs only write what the plan says.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from schematic.facts.media import ImageOptions, installer_repository_for, platform_media
from schematic.facts.talos import TalosVersion, default_installer_repository
from schematic.inputs.cluster_values import DEFAULT_IMAGE_FACTORY_URL, TalosSettings
from schematic.plan.release import ZSTD_FROM, Release

__all__ = [
    "PXE_FACTORY_URL",
    "BootKind",
    "InstallForm",
    "Medium",
    "MediumKind",
    "PoolReferences",
    "installer_reference",
    "medium_kinds",
    "medium_reference",
    "plan_references",
    "schematic_media",
]

MediumKind = Literal["disk", "iso", "uki", "pxe", "installer"]
BootKind = Literal["disk", "iso", "uki", "pxe"]
InstallForm = Literal["machine-install", "unattended"]
# The official factory serves PXE scripts (and the images they point to) from its own host,
# reachable over plain HTTP for iPXE builds without TLS; a self-hosted factory serves /pxe/.
PXE_FACTORY_URL = "https://pxe.factory.talos.dev"
# Board images (sbcs.go): always a raw xz image, whatever the metal default.
_BOARD_DISK_SUFFIX = "raw.xz"
# Cozystack's KubeVirt workers: the chart's TalosConfigTemplate writes machine.install itself.
_CHART_WRITES_MACHINE_INSTALL = frozenset({"kubevirt"})


@dataclass(frozen=True)
class Medium:
    """One thing a pool's nodes boot or install from."""

    kind: MediumKind
    secureboot: bool
    url: str
    schematic_id: str


@dataclass(frozen=True)
class PoolReferences:
    """What a pool's nodes boot and install from, and where its machine config pins it."""

    # The repository the pool upgrades from, before any SecureBoot suffix (the values'
    # talos.installerRepository): the user's, else the release's for the booted platform.
    installer_repository: str
    # ``<repository>[-secureboot]/<schematic ID>:<version>``: what the pool installs.
    installer: str
    # Every medium the platform and options allow, boot media first, the installer last.
    media: tuple[Medium, ...]
    install_form: InstallForm

    @property
    def boot_image(self) -> str:
        """The medium the nodes boot first: the disk image, else the ISO, else PXE."""
        return next(m.url for m in self.media if m.kind in ("disk", "iso", "pxe"))

    @property
    def iso(self) -> str | None:
        """The installation ISO, for platforms that boot one."""
        return next((m.url for m in self.media if m.kind == "iso"), None)

    @property
    def installer_unversioned(self) -> str:
        """The installer without its ``:<version>`` tag (talhelper appends its own)."""
        return self.installer.rpartition(":")[0]


def installer_reference(
    repository: str, *, schematic_id: str, version: TalosVersion, secureboot: bool
) -> str:
    """``<repository>[-secureboot]/<id>:<version>``; ValueError for a SecureBoot pool whose
    repository names no factory installer image."""
    return f"{installer_repository_for(repository, secureboot=secureboot)}/{schematic_id}:{version}"


def medium_reference(
    kind: BootKind,
    *,
    schematic_id: str,
    version: TalosVersion,
    platform: str,
    architecture: str,
    secureboot: bool = False,
    board: bool = False,
    image_factory_url: str = DEFAULT_IMAGE_FACTORY_URL,
) -> str:
    """The URL of one boot medium, from the path grammar.

    ``platform`` is the pool's platform (``kubevirt`` boots the ``openstack`` image);
    ``board`` marks a single-board computer with an overlay.
    """
    media = platform_media(platform)
    stem = f"{media.image_platform}-{architecture}" + ("-secureboot" if secureboot else "")
    if kind == "pxe":
        base = PXE_FACTORY_URL if image_factory_url == DEFAULT_IMAGE_FACTORY_URL else None
        return f"{base or image_factory_url}/pxe/{schematic_id}/{version}/{stem}"
    if kind == "iso":
        asset = f"{stem}.iso"
    elif kind == "uki":
        if not secureboot:
            raise ValueError("the factory builds UKIs as SecureBoot media only")
        asset = f"{stem}-uki.efi"
    else:
        suffix = _BOARD_DISK_SUFFIX if board else media.disk_suffix or "raw.xz"
        if suffix.endswith(".zst") and version < ZSTD_FROM:
            suffix = suffix.removesuffix(".zst") + ".xz"
        asset = f"{stem}.{suffix}"
    return f"{image_factory_url}/image/{schematic_id}/{version}/{asset}"


def medium_kinds(platform: str, *, secureboot: bool, board: bool) -> list[MediumKind]:
    """The media a platform boots from, boot media first, the installer last.

    SecureBoot adds the UKI (and makes every medium a SecureBoot one); a board boots its disk
    image only.
    """
    media = platform_media(platform)
    kinds: list[MediumKind] = []
    if board:
        kinds.append("disk")
    else:
        if "disk-image" in media.boot_methods:
            kinds.append("disk")
        if "iso" in media.boot_methods:
            kinds.append("iso")
        if secureboot:
            kinds.append("uki")
        if "pxe" in media.boot_methods:
            kinds.append("pxe")
    kinds.append("installer")
    return kinds


def schematic_media(
    schematic_id: str,
    version: TalosVersion,
    platform: str,
    architecture: str,
    *,
    installer_repository: str | None,
    boot_schematic_id: str | None = None,
    secureboot: bool = False,
    board: bool = False,
    image_factory_url: str = DEFAULT_IMAGE_FACTORY_URL,
) -> tuple[Medium, ...]:
    """Every medium of a schematic for a release and platform, boot media first, installer
    last. ``installer_repository`` None: the release's for the platform's image (the
    ``urls`` command's default, as for a pool that names none)."""
    repository = installer_repository or default_installer_repository(
        version, platform_media(platform).image_platform
    )
    boot_id = boot_schematic_id or schematic_id
    media = []
    for kind in medium_kinds(platform, secureboot=secureboot, board=board):
        if kind == "installer":
            url = installer_reference(
                repository, schematic_id=schematic_id, version=version, secureboot=secureboot
            )
        else:
            url = medium_reference(
                kind,
                schematic_id=boot_id,
                version=version,
                platform=platform,
                architecture=architecture,
                secureboot=secureboot,
                board=board,
                image_factory_url=image_factory_url,
            )
        media.append(
            Medium(
                kind=kind,
                secureboot=secureboot,
                url=url,
                schematic_id=schematic_id if kind == "installer" else boot_id,
            )
        )
    return tuple(media)


def _install_form(release: Release, talos: TalosSettings, platform: str) -> InstallForm:
    """Where the patch pins the installer: the cluster file's ``talos.installConfig``, or by
    default ``unattended`` from Talos 1.14 (what ``talosctl gen config`` 1.14 writes) except on
    KubeVirt pools, whose Cozystack chart writes ``machine.install``; ``machine-install`` for a
    pool before 1.14 whatever the file says (no UnattendedInstallConfig there)."""
    # A pool on an older release than the file's (its own talos.version) has no such document.
    if not release.unattended_install:
        return "machine-install"
    if talos.install_config != "auto":
        return talos.install_config
    if platform in _CHART_WRITES_MACHINE_INSTALL:
        return "machine-install"
    return "unattended"


def plan_references(
    *,
    release: Release,
    talos: TalosSettings,
    platform: str,
    architecture: str,
    media: ImageOptions,
    schematic_id: str,
    boot_schematic_id: str | None,
) -> PoolReferences:
    """A pool's references: its installer repository (the user's, else the release's default
    for the platform it boots: ``openstack-installer`` for KubeVirt workers from Talos 1.14),
    every medium, and the install form."""
    if talos.installer_repository_default:
        repository = release.default_installer_repository(platform_media(platform).image_platform)
    else:
        repository = talos.installer_repository
    every = schematic_media(
        schematic_id,
        release.version,
        platform,
        architecture,
        installer_repository=repository,
        boot_schematic_id=boot_schematic_id,
        secureboot=media.secureboot_enabled,
        board=media.overlay is not None,
        image_factory_url=talos.image_factory_url,
    )
    return PoolReferences(
        installer_repository=repository,
        installer=every[-1].url,
        media=every,
        install_form=_install_form(release, talos, platform),
    )
