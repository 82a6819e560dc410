"""Boot media in what lint reads: SecureBoot pairs, board overlays, boot schematics, META keys.

A boot medium's name says what it is (``…-secureboot.iso``, ``metal-arm64.raw.xz``) and so
does an installer's (``installer-secureboot``, ``metal-installer``); this tool's ``urls.yaml``
also says when a pool's boot media carry a schematic of their own (``bootSchematicID``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from schematic.doctor.lint.findings import Collector
from schematic.doctor.lint.loader import Document

__all__ = [
    "check_url_listings",
    "is_meta_key_problem",
    "is_secureboot_installer",
    "is_secureboot_medium",
    "is_url_listing",
    "medium_platform",
]

# /image/<id>/<version>/<platform>-<arch>[-secureboot]... and /pxe/<id>/<version>/<same>
_MEDIUM = re.compile(
    r"/(?:image|pxe)/[0-9a-f]{64}/[^/]+/(?P<platform>digital-ocean|[A-Za-z]+)-"
    r"(?P<arch>amd64|arm64)(?P<secure>-secureboot)?(?:[-.]|$)"
)
_INSTALLER_NAME = re.compile(r"(?:^|/)(?P<name>[A-Za-z-]*installer(?:-secureboot)?)/[0-9a-f]{64}:")


def is_secureboot_medium(url: str) -> bool:
    match = _MEDIUM.search(url)
    return bool(match and match["secure"])


def medium_platform(url: str) -> tuple[str, str] | None:
    """``(platform, arch)`` of a factory boot-medium URL; None for anything else."""
    match = _MEDIUM.search(url)
    return None if match is None else (match["platform"], match["arch"])


def is_secureboot_installer(image: str) -> bool:
    match = _INSTALLER_NAME.search(image)
    return bool(match and match["name"].endswith("-secureboot"))


def is_meta_key_problem(path: str) -> bool:
    """A schematic decoding error at ``customization.meta[N].key``."""
    return bool(re.fullmatch(r"customization\.meta\[\d+\]\.key", path))


def is_url_listing(data: object) -> bool:
    """Whether a document is this tool's ``urls.yaml`` (a pool and its schematic ID)."""
    return (
        isinstance(data, dict)
        and isinstance(data.get("pool"), str)
        and isinstance(data.get("schematicID"), str)
    )


def check_url_listings(documents: Iterable[Document], out: Collector) -> None:
    """This tool's urls.yaml: TS133 (boot schematic differs), TS132 (SecureBoot mixed)."""
    for doc in documents:
        data = doc.data
        if not is_url_listing(data):
            continue
        pool = data["pool"]
        boot_id = data.get("bootSchematicID")
        if isinstance(boot_id, str) and boot_id != data["schematicID"]:
            out.add(
                "TS133",
                message=f"pool {pool!r}: boot media carry schematic {boot_id}, the "
                "installer "
                f"{data['schematicID']}: nodes booted from the disk image run the "
                "boot schematic until their first upgrade",
                file=doc.file,
                line=doc.line(("bootSchematicID",)),
                obj=pool,
            )
        media = {
            key: value
            for key, value in data.items()
            if isinstance(value, str) and ("/image/" in value or "/pxe/" in value)
        }
        installers = [
            (key, value)
            for key, value in data.items()
            if isinstance(value, str) and key.startswith("installer")
        ]
        for key, installer in installers:
            install_secure = is_secureboot_installer(installer)
            for medium_key, url in media.items():
                if is_secureboot_medium(url) != install_secure:
                    out.add(
                        "TS132",
                        message=f"pool {pool!r}: {medium_key} is "
                        f"{'' if is_secureboot_medium(url) else 'not '}a SecureBoot medium "
                        f"but {key} is {'' if install_secure else 'not '}a SecureBoot installer",
                        file=doc.file,
                        line=doc.line((key,)),
                        obj=pool,
                    )
                    break
