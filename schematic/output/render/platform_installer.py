"""The installer a tool derives from a node's schematic, platform and SecureBoot.

talhelper (budimanjojo/talhelper ``pkg/config/defaults.go`` at 39b69792) and topf
(postfinance/topf ``internal/topf/node.go``, ``InstallerImage``, at 2a60138c) both install
``<factory host>/<platform>-installer[-secureboot]/<ID>:<version>``, the platform being the
node's (``metal`` unless set). Where that is not the image the pool upgrades with (a custom
installer repository, a KubeVirt pool's plain installer up to Talos 1.13), the tool's file pins
the pool's own.
"""

from __future__ import annotations

from schematic.facts.media import platform_media
from schematic.facts.talos import TalosVersion, talhelper_installer
from schematic.plan.cluster import PoolPlan

__all__ = ["derived_installer", "derives_the_pools_installer", "node_platform"]

# The factory serves ``<platform>-installer`` from Talos 1.10; ``installer`` is the metal one
# (DOMAIN: the installer image row), so before 1.10 a metal-installer does not exist.
_PLATFORM_INSTALLERS_FROM = TalosVersion(1, 10, 0)


def node_platform(pool: PoolPlan) -> str:
    """The platform a node of the pool runs (its boot image's): the tool's ``mode``/``platform``."""
    return platform_media(pool.profile.platform).image_platform


def derived_installer(pool: PoolPlan) -> str:
    """The installer the tool derives for a node of the pool, without ``:<version>``."""
    registry = pool.talos.image_factory_url.split("://", 1)[-1].rstrip("/")
    return talhelper_installer(
        registry, node_platform(pool), pool.media.secureboot_enabled, pool.schematic_id
    )


def derives_the_pools_installer(pool: PoolPlan) -> bool:
    """Whether the derived installer is the pool's own (or the same image)."""
    pinned = pool.references.installer_unversioned
    if pinned == derived_installer(pool):
        return True
    registry = pool.talos.image_factory_url.split("://", 1)[-1].rstrip("/")
    secure = "-secureboot" if pool.media.secureboot_enabled else ""
    legacy = f"{registry}/installer{secure}/{pool.schematic_id}"
    served = TalosVersion.of(pool.talos.version).release >= _PLATFORM_INSTALLERS_FROM
    return node_platform(pool) == "metal" and pinned == legacy and served
