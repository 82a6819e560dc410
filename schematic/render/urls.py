"""Boot-image URLs and installer references: every one carries the pool's schematic ID.

The worker boots ``<factory>/image/<id>/<version>/<asset>`` and upgrades with
``<installerRepository>/<id>:<version>``; both are built here, from the same plan, so they
cannot name different schematics.
"""

from __future__ import annotations

from typing import Any

from schematic.cluster import PoolPlan
from schematic.talos import TalosVersion

__all__ = ["boot_image_url", "installer_image", "iso_url", "pool_urls"]

# The disk image each platform boots. KubeVirt workers stream the OpenStack raw image
# (Cozystack's KubevirtMachineTemplate); others use their platform's image kind.
_DISK_ASSETS = {
    "kubevirt": "openstack-{arch}.raw.xz",
    "metal": "metal-{arch}.raw.zst",
    "proxmox": "nocloud-{arch}.raw.xz",
    "aws": "aws-{arch}.raw.xz",
    "azure": "azure-{arch}.vhd.xz",
    "gcp": "gcp-{arch}.raw.tar.gz",
    "digital-ocean": "digital-ocean-{arch}.raw.gz",
    "oracle": "oracle-{arch}.qcow2.xz",
    "vmware": "vmware-{arch}.ova",
}
# The factory reads the format from the file name; zstd exists from Talos 1.8 (when the metal
# images moved to it from xz), so older releases get the metal image as .raw.xz.
ZSTD_FROM = TalosVersion(1, 8, 0)
# Platforms installed from an ISO as well as from a disk image.
_ISO_PLATFORMS = frozenset({"metal", "proxmox"})


def _image_base(pool: PoolPlan) -> str:
    talos = pool.talos
    return f"{talos.image_factory_url}/image/{pool.schematic_id}/{talos.version}"


def boot_image_url(pool: PoolPlan) -> str:
    """The disk image the pool's nodes boot."""
    platform = pool.profile.platform
    asset = _DISK_ASSETS.get(platform, f"{platform}-{{arch}}.raw.xz")
    if asset.endswith(".zst") and TalosVersion.parse(pool.talos.version) < ZSTD_FROM:
        asset = asset.removesuffix(".zst") + ".xz"
    return f"{_image_base(pool)}/{asset.format(arch=pool.profile.architecture)}"


def iso_url(pool: PoolPlan) -> str | None:
    """The installation ISO, for platforms that boot one; None otherwise."""
    if pool.profile.platform not in _ISO_PLATFORMS:
        return None
    return f"{_image_base(pool)}/metal-{pool.profile.architecture}.iso"


def installer_image(pool: PoolPlan) -> str:
    """The installer image reference the pool upgrades with."""
    talos = pool.talos
    return f"{talos.installer_repository}/{pool.schematic_id}:{talos.version}"


def pool_urls(pool: PoolPlan) -> dict[str, Any]:
    """The `urls` document of a pool."""
    urls: dict[str, Any] = {
        "pool": pool.name,
        "schematicID": pool.schematic_id,
        "image": boot_image_url(pool),
    }
    iso = iso_url(pool)
    if iso is not None:
        urls["iso"] = iso
    urls["installer"] = installer_image(pool)
    return urls
