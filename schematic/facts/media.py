"""Boot media options: SecureBoot, overlays, META values, bootloader, disk sector size.

A profile or pool may ask for more than extensions and kernel arguments: a SecureBoot (UKI)
image, a single-board computer's overlay, initial META values, a bootloader, a disk image with
4K sectors, or a boot medium whose schematic adds to the installer's. These are plain frozen
values (no pydantic, so `generate` starts fast); the checks here raise ValueError with the
message a user sees, and the callers prefix the file, pool and key.

What each platform can boot comes from ``data/platform-media.tsv`` (Talos machinery's platform
metadata): its disk-image suffix, its boot methods (disk image, ISO, PXE) and whether the
factory builds SecureBoot images for it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from schematic.errors import TalosSchematicError
from schematic.facts.talos import TalosVersion

__all__ = [
    "BOOTLOADER_CHOICES",
    "ENROLL_KEYS_CHOICES",
    "ENROLL_KEYS_FROM_FACTORY",
    "OVERLAYS_FROM",
    "SECUREBOOT_FROM",
    "BootSchematic",
    "ImageOptions",
    "MetaValue",
    "OverlaySpec",
    "PlatformMedia",
    "SecureBootSpec",
    "check_bootloader",
    "check_enroll_keys",
    "check_factory_version",
    "check_meta_key",
    "check_options",
    "check_sector_size",
    "installer_repository_for",
    "platform_media",
    "secureboot_platforms",
]

# Talos reads SecureBoot (UKI, sd-boot) images from 1.5, overlays from 1.7 (the factory's
# quirks: before 1.7 a board was part of the image name, metal-rpi_generic-arm64).
SECUREBOOT_FROM = TalosVersion(1, 5, 0)
OVERLAYS_FROM = TalosVersion(1, 7, 0)
# image-factory PR #482 (secureboot.enrollKeys) was opened on 2026-06-12, after v1.3.2
# (2026-05-25), and is in the first release after it, v1.4.0 (2026-07-20); older factories
# decode with KnownFields and answer 400 to the unknown key.
ENROLL_KEYS_FROM_FACTORY = TalosVersion(1, 4, 0)
# systemd-boot's secure-boot-enroll modes (the imager's SDBootEnrollKeys).
ENROLL_KEYS_CHOICES = ("off", "manual", "if-safe", "force")
# The schematic's bootloader field; "none" (the default) is written as nothing.
BOOTLOADER_CHOICES = ("sd-boot", "grub", "dual-boot")


@dataclass(frozen=True, kw_only=True)
class SecureBootSpec:
    """``secureboot``: SecureBoot media, and the two schematic fields that go with them."""

    enabled: bool = False
    include_well_known_certificates: bool = False
    enroll_keys: str = ""


@dataclass(frozen=True, kw_only=True)
class OverlaySpec:
    """``overlay``: an official board overlay (``image`` defaults to the overlay's own)."""

    name: str
    image: str = ""
    # Left out of the hash (a mapping has none); equal overlays still hash alike.
    options: Mapping[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True, kw_only=True)
class MetaValue:
    """One initial META value: ``key`` 0..255 (a byte, as the factory stores it)."""

    key: int
    value: str


@dataclass(frozen=True, kw_only=True)
class BootSchematic:
    """``boot.schematic``: what the boot media add to the installer's schematic."""

    extensions: tuple[str, ...] = ()
    kernel_args: tuple[str, ...] = ()
    meta: tuple[MetaValue, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.extensions or self.kernel_args or self.meta)


@dataclass(frozen=True, kw_only=True)
class ImageOptions:
    """The media options of a profile or pool; ``None`` / empty means "not set here"."""

    secureboot: SecureBootSpec | None = None
    overlay: OverlaySpec | None = None
    meta: tuple[MetaValue, ...] | None = None
    bootloader: str | None = None
    sector_size: int | None = None

    def over(self, base: ImageOptions) -> ImageOptions:
        """These options with the unset ones taken from ``base`` (a pool over its profile)."""
        return ImageOptions(
            secureboot=self.secureboot if self.secureboot is not None else base.secureboot,
            overlay=self.overlay if self.overlay is not None else base.overlay,
            meta=self.meta if self.meta is not None else base.meta,
            bootloader=self.bootloader if self.bootloader is not None else base.bootloader,
            sector_size=self.sector_size if self.sector_size is not None else base.sector_size,
        )

    @property
    def secureboot_enabled(self) -> bool:
        return self.secureboot is not None and self.secureboot.enabled

    def overlay_fields(self) -> dict[str, Any]:
        """The schematic's ``overlay`` mapping (empty when there is none)."""
        if self.overlay is None:
            return {}
        return {
            "image": self.overlay.image,
            "name": self.overlay.name,
            "options": dict(self.overlay.options),
        }

    def customization_fields(self, extra_meta: tuple[MetaValue, ...] = ()) -> dict[str, Any]:
        """The schematic customization fields these options set, in the factory's terms."""
        fields: dict[str, Any] = {}
        meta = (*(self.meta or ()), *extra_meta)
        if meta:
            fields["meta"] = [{"key": m.key, "value": m.value} for m in meta]
        if self.bootloader:
            fields["bootloader"] = self.bootloader
        secure = self.secureboot
        if secure is not None:
            fields["secureboot"] = {
                "enrollKeys": secure.enroll_keys,
                "includeWellKnownCertificates": secure.include_well_known_certificates,
            }
        if self.sector_size:
            fields["diskImage"] = {"sectorSize": self.sector_size}
        return fields

    def as_document(self) -> dict[str, Any]:
        """The options as a profile or pool file says them (set keys only)."""
        document: dict[str, Any] = {}
        if self.secureboot is not None:
            secure = self.secureboot
            document["secureboot"] = {"enabled": secure.enabled}
            if secure.include_well_known_certificates:
                document["secureboot"]["includeWellKnownCertificates"] = True
            if secure.enroll_keys:
                document["secureboot"]["enrollKeys"] = secure.enroll_keys
        if self.overlay is not None:
            document["overlay"] = {"name": self.overlay.name}
            if self.overlay.image:
                document["overlay"]["image"] = self.overlay.image
            if self.overlay.options:
                document["overlay"]["options"] = dict(self.overlay.options)
        if self.meta is not None:
            document["meta"] = [{"key": m.key, "value": m.value} for m in self.meta]
        if self.bootloader is not None:
            document["bootloader"] = self.bootloader
        if self.sector_size is not None:
            document["diskImage"] = {"sectorSize": self.sector_size}
        return document


@dataclass(frozen=True)
class PlatformMedia:
    """What the factory builds for one platform."""

    platform: str
    image_platform: str  # the name in the factory's paths (kubevirt boots "openstack")
    disk_suffix: str  # "" when the platform has no disk image
    boot_methods: frozenset[str]  # of "disk-image", "iso", "pxe"
    secureboot: bool


@functools.cache
def _table() -> dict[str, PlatformMedia]:
    text = resources.files("schematic.data").joinpath("platform-media.tsv").read_text("utf-8")
    rows = [line.split("\t") for line in text.splitlines() if line and not line.startswith("#")]
    table = {}
    for platform, image_platform, suffix, methods, secure in rows[1:]:
        table[platform] = PlatformMedia(
            platform=platform,
            image_platform=image_platform,
            disk_suffix=suffix,
            boot_methods=frozenset(methods.split(",")),
            secureboot=secure == "yes",
        )
    return table


def secureboot_platforms() -> tuple[str, ...]:
    """The platforms the factory builds SecureBoot media for, in table order."""
    return tuple(name for name, media in _table().items() if media.secureboot)


def installer_repository_for(repository: str, *, secureboot: bool) -> str:
    """The installer repository of a pool: ``…/installer`` or ``…/<platform>-installer``,
    with ``-secureboot`` appended for SecureBoot pools (the factory's image names)."""
    if not secureboot or repository.endswith("-secureboot"):
        return repository
    last = repository.rsplit("/", 1)[-1]
    if last != "installer" and not last.endswith("-installer"):
        raise ValueError(
            f"secureboot.enabled: installerRepository {repository!r} names no factory "
            "installer image (installer, or <platform>-installer); a SecureBoot pool "
            "upgrades from <repository>-secureboot, so name the factory's installer "
            "repository, or its -secureboot one"
        )
    return f"{repository}-secureboot"


def platform_media(platform: str) -> PlatformMedia:
    """The media of ``platform``; an unlisted one is taken as a disk-image-only platform."""
    known = _table().get(platform)
    if known is not None:
        return known
    return PlatformMedia(platform, platform, "raw.xz", frozenset({"disk-image"}), False)


# --- the checks on values (the readers in schematic.inputs prefix file, line and key) ------------


def check_meta_key(value: object) -> int:
    """A META key the factory stores (a byte: 0..255)."""
    if type(value) is not int:
        raise ValueError(f"{value!r} is not a whole number 0..255")
    if not 0 <= value <= 255:
        raise ValueError(
            f"{value} is outside 0..255; the factory stores META keys as one byte "
            "and refuses the schematic"
        )
    return value


def check_bootloader(value: str) -> str:
    text = value.strip().lower()
    if text in ("", "none"):
        raise ValueError(
            "leave bootloader out for the default ('none' and '' are not written); "
            f"choose one of {', '.join(BOOTLOADER_CHOICES)}"
        )
    if text not in BOOTLOADER_CHOICES:
        raise ValueError(
            f"{value!r} is not one the factory accepts: {', '.join(BOOTLOADER_CHOICES)}"
        )
    return text


def check_enroll_keys(value: str) -> str:
    if value not in ENROLL_KEYS_CHOICES:
        raise ValueError(
            f"{value!r} is not a systemd-boot enrollment mode: {', '.join(ENROLL_KEYS_CHOICES)}"
        )
    return value


def check_sector_size(value: object) -> int:
    if type(value) is not int or value <= 0 or value & (value - 1):
        raise ValueError(f"{value!r} is not a power of two such as 4096")
    return value


def check_factory_version(value: str) -> str:
    """An image-factory release, ``v1.5.0`` (the factory's own version, not Talos's)."""
    try:
        return str(TalosVersion.parse(value.strip()))
    except (ValueError, TalosSchematicError):
        raise ValueError(f"{value!r} is not an image-factory version like v1.5.0") from None


def check_options(
    options: ImageOptions,
    *,
    platform: str,
    architecture: str,
    talos: str,
    factory_version: str | None,
) -> None:
    """What the options ask for must be something the factory builds for this pool.

    Raises ValueError whose message starts with the key (``secureboot.enabled: ...``).
    """
    release = TalosVersion.parse(talos).release
    media = platform_media(platform)
    secure = options.secureboot
    if secure is not None and (secure.enabled or secure.include_well_known_certificates):
        if not media.secureboot:
            where = (
                f"platform {platform} boots the {media.image_platform} image, which"
                if media.image_platform != platform
                else f"platform {platform} is one"
            )
            raise ValueError(
                f"secureboot.enabled: {where} the Image Factory builds no SecureBoot media "
                f"for; SecureBoot images exist for "
                f"{', '.join(secureboot_platforms())}. Leave secureboot out"
            )
        if release < SECUREBOOT_FROM:
            raise ValueError(
                f"secureboot.enabled: Talos {talos} has no SecureBoot images (from "
                f"{SECUREBOOT_FROM})"
            )
        if options.overlay is not None:
            raise ValueError(
                "secureboot.enabled: board overlays boot through their own firmware and "
                "u-boot; the factory builds no SecureBoot image with an overlay"
            )
    if secure is not None and secure.enroll_keys:
        if not secure.enabled:
            raise ValueError("secureboot.enrollKeys: only SecureBoot media enroll keys")
        if factory_version is not None:
            have = TalosVersion.parse(factory_version)
            if have < ENROLL_KEYS_FROM_FACTORY:
                raise ValueError(
                    f"secureboot.enrollKeys: image-factory {have} refuses this key (it "
                    f"arrived in image-factory {ENROLL_KEYS_FROM_FACTORY}); upgrade the "
                    "factory or leave enrollKeys out (sd-boot then enrolls only in VMs, "
                    "'if-safe')"
                )
    if options.overlay is not None:
        if platform != "metal" or architecture != "arm64":
            raise ValueError(
                f"overlay: board overlays are for arm64 single-board computers on platform "
                f"metal; this pool is {platform}/{architecture}"
            )
        if release < OVERLAYS_FROM:
            raise ValueError(
                f"overlay: Talos {talos} predates overlays (from {OVERLAYS_FROM}); "
                "use a newer release"
            )


# The keys a profile and a pool share (read by schematic.inputs.media_options).
MEDIA_KEYS = ("secureboot", "overlay", "meta", "bootloader", "diskImage")


def check_overlay_name(value: str) -> str:
    if not value.strip():
        raise ValueError("must name an official overlay, e.g. rpi_generic")
    return value


def check_no_blank(value: tuple[str, ...]) -> tuple[str, ...]:
    stripped = tuple(item.strip() for item in value)
    if any(not item for item in stripped):
        raise ValueError("items must not be empty")
    return stripped
