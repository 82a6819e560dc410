"""Boot media and installer references: every one carries the pool's schematic ID.

The worker boots ``<factory>/image/<id>/<version>/<asset>`` (or a PXE script,
``<pxe>/pxe/<id>/<version>/<platform>-<arch>``) and upgrades with
``<installerRepository>/<id>:<version>``. All of them are built by :func:`medium_reference`
from the factory's path grammar (image-factory ``internal/profile`` ``ParseFromPath``):

    disk image   <platform>-<arch>[-secureboot].<raw|qcow2|vhd|ova>[.xz|.gz|.zst|.tar.gz]
    ISO          <platform>-<arch>[-secureboot].iso
    UKI          <platform>-<arch>-secureboot-uki.efi
    PXE script   /pxe/<id>/<version>/<platform>-<arch>[-secureboot]
    installer    <repository>[-secureboot]/<id>:<version>

Board (overlay) images are ``metal-arm64.raw.xz``: the board is in the schematic, not the name.
A pool's boot media may carry a schematic of their own (``boot.schematic``); the installer
always carries the pool's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from schematic.facts.media import installer_repository_for, platform_media
from schematic.facts.talos import TalosVersion, default_installer_repository
from schematic.inputs.cluster_values import DEFAULT_IMAGE_FACTORY_URL
from schematic.plan.cluster import PoolPlan

__all__ = [
    "ENTERPRISE_SUFFIXES",
    "PXE_FACTORY_URL",
    "Medium",
    "MediumKind",
    "boot_image_url",
    "enterprise_urls",
    "installer_image",
    "ipxe_line",
    "iso_url",
    "media_summary",
    "medium_kinds",
    "medium_reference",
    "pool_installer_repository",
    "pool_media",
    "pool_urls",
    "schematic_urls",
]

MediumKind = Literal["disk", "iso", "uki", "pxe", "installer"]
# The official factory serves PXE scripts (and the images they point to) from its own host,
# reachable over plain HTTP for iPXE builds without TLS; a self-hosted factory serves /pxe/.
PXE_FACTORY_URL = "https://pxe.factory.talos.dev"
# The factory reads the format from the file name; zstd exists from Talos 1.8 (when the metal
# images moved to it from xz), so older releases get those images as .xz.
ZSTD_FROM = TalosVersion(1, 8, 0)
# Board images (sbcs.go): always a raw xz image, whatever the metal default.
_BOARD_DISK_SUFFIX = "raw.xz"


@dataclass(frozen=True)
class Medium:
    """One thing a pool's nodes boot or install from."""

    kind: MediumKind
    secureboot: bool
    url: str
    schematic_id: str


def medium_reference(
    kind: MediumKind,
    *,
    schematic_id: str,
    version: str,
    platform: str,
    architecture: str,
    secureboot: bool = False,
    board: bool = False,
    image_factory_url: str = DEFAULT_IMAGE_FACTORY_URL,
    installer_repository: str = "factory.talos.dev/installer",
) -> str:
    """The URL (or image reference, for ``installer``) of one medium, from the path grammar.

    ``platform`` is the pool's platform (``kubevirt`` boots the ``openstack`` image);
    ``board`` marks a single-board computer with an overlay.
    """
    if kind == "installer":
        repository = installer_repository_for(installer_repository, secureboot=secureboot)
        return f"{repository}/{schematic_id}:{version}"
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
        if suffix.endswith(".zst") and TalosVersion.parse(version) < ZSTD_FROM:
            suffix = suffix.removesuffix(".zst") + ".xz"
        asset = f"{stem}.{suffix}"
    return f"{image_factory_url}/image/{schematic_id}/{version}/{asset}"


def _reference(pool: PoolPlan, kind: MediumKind) -> str:
    talos = pool.talos
    boot_id = pool.boot_schematic_id or pool.schematic_id
    return medium_reference(
        kind,
        schematic_id=pool.schematic_id if kind == "installer" else boot_id,
        version=talos.version,
        platform=pool.profile.platform,
        architecture=pool.profile.architecture,
        secureboot=pool.media.secureboot_enabled,
        board=pool.media.overlay is not None,
        image_factory_url=talos.image_factory_url,
        installer_repository=pool_installer_repository(pool),
    )


def pool_installer_repository(pool: PoolPlan) -> str:
    """The repository the pool upgrades from: the user's, else the release's default for the
    platform the pool boots (``openstack-installer`` for KubeVirt workers from Talos 1.14)."""
    talos = pool.talos
    if not talos.installer_repository_default:
        return talos.installer_repository
    image_platform = platform_media(pool.profile.platform).image_platform
    return default_installer_repository(talos.version, image_platform)


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


def pool_media(pool: PoolPlan) -> list[Medium]:
    """Every medium the pool's platform and options allow, boot media first, installer last.

    A SecureBoot pool gets only SecureBoot media (and its UKI); a board gets its disk image.
    """
    secure = pool.media.secureboot_enabled
    kinds = medium_kinds(
        pool.profile.platform, secureboot=secure, board=pool.media.overlay is not None
    )
    boot_id = pool.boot_schematic_id or pool.schematic_id
    return [
        Medium(
            kind=kind,
            secureboot=secure,
            url=_reference(pool, kind),
            schematic_id=pool.schematic_id if kind == "installer" else boot_id,
        )
        for kind in kinds
    ]


def boot_image_url(pool: PoolPlan) -> str:
    """The medium the pool's nodes boot first: the disk image, else the ISO, else PXE."""
    boot = [medium for medium in pool_media(pool) if medium.kind in ("disk", "iso", "pxe")]
    return boot[0].url


def iso_url(pool: PoolPlan) -> str | None:
    """The installation ISO, for platforms that boot one; None otherwise."""
    return next((m.url for m in pool_media(pool) if m.kind == "iso"), None)


def installer_image(pool: PoolPlan) -> str:
    """The installer image reference the pool upgrades with."""
    return _reference(pool, "installer")


def ipxe_line(pxe_url: str) -> str:
    """The iPXE command that boots a factory PXE script."""
    return f"chain --autofree {pxe_url}"


# The urls.yaml key of each medium: SecureBoot ones are named so, for a reader comparing.
_KEYS: dict[tuple[MediumKind, bool], str] = {
    ("disk", False): "image",
    ("disk", True): "imageSecureBoot",
    ("iso", False): "iso",
    ("iso", True): "isoSecureBoot",
    ("uki", True): "ukiSecureBoot",
    ("pxe", False): "pxe",
    ("pxe", True): "pxeSecureBoot",
    ("installer", False): "installer",
    ("installer", True): "installerSecureBoot",
}


def media_summary(pool: PoolPlan) -> dict[str, Any]:
    """The media options a pool's index entry and JSON summary carry (set ones only)."""
    media = pool.media
    entry: dict[str, Any] = {}
    if media.secureboot_enabled:
        entry["secureboot"] = True
    if media.overlay is not None:
        entry["overlay"] = media.overlay.name
    if media.meta:
        entry["metaKeys"] = [m.key for m in media.meta]
    if media.bootloader:
        entry["bootloader"] = media.bootloader
    if media.sector_size:
        entry["sectorSize"] = media.sector_size
    if pool.boot_schematic_id:
        entry["bootSchematicID"] = pool.boot_schematic_id
    return entry


def _listed(media: list[Medium]) -> dict[str, str]:
    """Each medium under its urls.yaml key, and the iPXE line beside a PXE script."""
    urls: dict[str, str] = {}
    for medium in media:
        urls[_KEYS[(medium.kind, medium.secureboot)]] = medium.url
        if medium.kind == "pxe":
            urls["ipxe"] = ipxe_line(medium.url)
    return urls


# Enterprise factories (image-factory docs/api.md): the suffixes that turn an image path into its
# checksum or its detached Sigstore bundle.
ENTERPRISE_SUFFIXES = (("sha256", ".sha256"), ("sha512", ".sha512"), ("sigstore", ".sigstore.json"))


def enterprise_urls(pool: PoolPlan) -> dict[str, str] | None:
    """For a schematic an Enterprise factory stamped with its owner: where to get the download
    token its image URLs need (``POST <factory>/download-token``, then ``?token=<access_token>``
    on GET and HEAD under /image/ only, not on PXE or the installer registry), and the disk
    image's checksum and signature URLs. None for an unstamped schematic."""
    if not pool.canonical.startswith("owner:"):
        return None
    disk = boot_image_url(pool)
    urls = {"downloadToken": f"{pool.talos.image_factory_url.rstrip('/')}/download-token"}
    urls |= {name: disk + suffix for name, suffix in ENTERPRISE_SUFFIXES}
    return urls


def pool_urls(pool: PoolPlan) -> dict[str, Any]:
    """The `urls` document of a pool: every medium, and the iPXE line for PXE; for an
    owner-stamped schematic, the Enterprise download token endpoint, checksums and signature."""
    urls: dict[str, Any] = {"pool": pool.name, "schematicID": pool.schematic_id}
    if pool.boot_schematic_id:
        # The boot media's own schematic (generate --register registers it, verify reads it).
        urls["bootSchematicID"] = pool.boot_schematic_id
        urls["bootSchematic"] = pool.boot_canonical
    urls |= _listed(pool_media(pool))
    enterprise = enterprise_urls(pool)
    if enterprise is not None:
        urls["enterprise"] = enterprise
    return urls


def schematic_urls(
    schematic_id: str,
    version: str,
    platform: str,
    architecture: str,
    *,
    secureboot: bool = False,
    board: bool = False,
    image_factory_url: str = DEFAULT_IMAGE_FACTORY_URL,
    installer_repository: str | None = None,
) -> dict[str, str]:
    """Every medium of any schematic ID, keyed as in a pool's `urls` document (what
    `talos-schematic urls` prints). ``installer_repository`` defaults to the release's for the
    platform's image, as for a pool that names none."""
    repository = installer_repository or default_installer_repository(
        version, platform_media(platform).image_platform
    )
    kinds = medium_kinds(platform, secureboot=secureboot, board=board)
    return _listed(
        [
            Medium(
                kind=kind,
                secureboot=secureboot,
                url=medium_reference(
                    kind,
                    schematic_id=schematic_id,
                    version=version,
                    platform=platform,
                    architecture=architecture,
                    secureboot=secureboot,
                    board=board,
                    image_factory_url=image_factory_url,
                    installer_repository=repository,
                ),
                schematic_id=schematic_id,
            )
            for kind in kinds
        ]
    )
