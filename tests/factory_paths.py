"""The Image Factory's reading of asset names, restated for tests.

image-factory ``internal/profile`` parses the last path element of ``/image/<id>/<v>/<path>``
into an imager profile (``ParseFromPath``); ``/pxe/<id>/<v>/<path>`` is read as
``cmdline-<path>``; the registry frontend reads an installer image name
(``getRequestedImage``). This module states those rules over again, from their description,
so tests can check every name this tool builds. It raises ValueError where the factory answers
"invalid ...".
"""

from __future__ import annotations

from dataclasses import dataclass

ARCHES = ("amd64", "arm64")
# Output compression first (the factory cuts one), then the disk format.
OUT_FORMATS = (".tar.gz", ".gz", ".xz", ".zst")
DISK_FORMATS = (".raw", ".qcow2", ".vhd", ".ova")


@dataclass(frozen=True)
class Parsed:
    kind: str  # kernel, cmdline, initramfs, iso, uki, installer, image
    platform: str
    arch: str
    secureboot: bool = False
    board: str = ""
    out_format: str = ""
    disk_format: str = ""


def _version_key(version: str) -> tuple[int, int, int]:
    major, minor, patch = version.lstrip("v").split("-")[0].split(".")
    return int(major), int(minor), int(patch)


def _arch(text: str) -> str:
    if text not in ARCHES:
        raise ValueError(f"invalid architecture: {text!r}")
    return text


def _platform_arch(text: str, version: str) -> tuple[str, str, bool, str]:
    secureboot = text.endswith("-secureboot")
    if secureboot:
        text = text[: -len("-secureboot")]
    if "-" not in text:
        raise ValueError(f"invalid platform-arch: {text!r}")
    platform, rest = text.split("-", 1)
    if platform == "digital" and rest.startswith("ocean-"):
        platform, rest = "digital-ocean", rest[len("ocean-") :]
    board = ""
    # Before overlays (Talos 1.7) an arm64 metal image could name a board.
    if platform == "metal" and rest.endswith("-arm64") and _version_key(version) < (1, 7, 0):
        board, rest = rest.split("-", 1)
    return platform, _arch(rest), secureboot, board


def parse_profile_path(path: str, version: str) -> Parsed:
    """What the factory makes of ``/image/<id>/<version>/<path>``."""
    if path.startswith("kernel-"):
        return Parsed("kernel", "metal", _arch(path[len("kernel-") :]))
    if path.startswith("cmdline-"):
        platform, arch, secure, board = _platform_arch(path[len("cmdline-") :], version)
        return Parsed("cmdline", platform, arch, secure, board)
    if path.startswith("initramfs-") and path.endswith(".xz"):
        return Parsed("initramfs", "metal", _arch(path[len("initramfs-") : -len(".xz")]))
    if path.endswith(".iso"):
        platform, arch, secure, board = _platform_arch(path[: -len(".iso")], version)
        return Parsed("iso", platform, arch, secure, board)
    if path.endswith("-uki.efi"):
        platform, arch, secure, board = _platform_arch(path[: -len("-uki.efi")], version)
        return Parsed("uki", platform, arch, secure, board)
    if path.startswith("installer-") and path.endswith(".tar"):
        rest = path[len("installer-") : -len(".tar")]
        secure = rest.endswith("-secureboot")
        rest = rest.removesuffix("-secureboot")
        return Parsed("installer", "metal", _arch(rest), secure)
    out_format = next((f for f in OUT_FORMATS if path.endswith(f)), "")
    path = path[: len(path) - len(out_format)]
    disk_format = next((f for f in DISK_FORMATS if path.endswith(f)), "")
    if not disk_format:
        raise ValueError(f"invalid profile path: {path!r}")
    path = path[: -len(disk_format)]
    platform, arch, secure, board = _platform_arch(path, version)
    return Parsed("image", platform, arch, secure, board, out_format, disk_format)


def parse_pxe_path(path: str, version: str) -> Parsed:
    """What the factory makes of ``/pxe/<id>/<version>/<path>``."""
    parsed = parse_profile_path("cmdline-" + path, version)
    if parsed.kind != "cmdline":
        raise ValueError(f"invalid PXE path: {path!r}")
    return parsed


def parse_installer_name(name: str) -> tuple[str, bool]:
    """``(platform, secureboot)`` of an installer image name; platform "" for the plain one."""
    if name == "installer":
        return "", False
    if name == "installer-secureboot":
        return "", True
    if name.endswith("-installer-secureboot"):
        return name[: -len("-installer-secureboot")], True
    if name.endswith("-installer"):
        return name[: -len("-installer")], False
    raise ValueError(f"invalid image: {name}")


def parse_factory_url(url: str, base: str) -> tuple[str, str, str, Parsed]:
    """``(route, id, version, parsed)`` of an /image/ or /pxe/ URL under ``base``."""
    if not url.startswith(base + "/"):
        raise ValueError(f"{url} is not under {base}")
    route, schematic_id, version, path = url[len(base) + 1 :].split("/")
    if route == "image":
        return route, schematic_id, version, parse_profile_path(path, version)
    if route == "pxe":
        return route, schematic_id, version, parse_pxe_path(path, version)
    raise ValueError(f"unknown factory route {route!r}")
