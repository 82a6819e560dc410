"""Boot media and installer references as a pool's ``urls`` document.

The references themselves are planned (:mod:`schematic.plan.references`: the factory's path
grammar, the installer repository, SecureBoot media); this module only lists them under the
keys ``urls.yaml`` uses, with the iPXE line beside a PXE script and, for an owner-stamped
schematic, the Enterprise factory's download-token, checksum and signature URLs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from schematic.plan.cluster import PoolPlan
from schematic.plan.references import Medium, MediumKind

__all__ = [
    "ENTERPRISE_SUFFIXES",
    "enterprise_urls",
    "ipxe_line",
    "media_summary",
    "media_urls",
    "pool_urls",
]


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


def media_urls(media: Iterable[Medium]) -> dict[str, str]:
    """Each medium under its urls.yaml key, and the iPXE line beside a PXE script (what
    ``talos-schematic urls`` prints for any schematic ID)."""
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
    disk = pool.references.boot_image
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
    urls |= media_urls(pool.references.media)
    enterprise = enterprise_urls(pool)
    if enterprise is not None:
        urls["enterprise"] = enterprise
    return urls
