"""Reading the boot media keys a profile and a pool share, and a pool's ``boot``.

``secureboot``, ``overlay``, ``meta``, ``bootloader`` and ``diskImage`` (see
:mod:`schematic.facts.media` for what they mean and the checks on their values).
"""

from __future__ import annotations

from typing import Any

from schematic.facts import media as md
from schematic.inputs.reading import (
    At,
    Fields,
    described,
    flag,
    optional,
    read_list,
    text,
    texts,
    whole,
)

__all__ = ["read_boot", "read_media"]

_SECUREBOOT_KEYS = ("enabled", "includeWellKnownCertificates", "enrollKeys")
_OVERLAY_KEYS = ("name", "image", "options")
_META_KEYS = ("key", "value")
_DISK_IMAGE_KEYS = ("sectorSize",)
_BOOT_KEYS = ("schematic",)
_BOOT_SCHEMATIC_KEYS = ("extensions", "kernelArgs", "meta")


def _enroll_keys(value: object) -> str:
    chosen = text(value)
    return md.check_enroll_keys(chosen) if chosen else chosen


def _secureboot(value: object, at: At) -> md.SecureBootSpec | None:
    if value is None:
        return None
    fields = Fields(at, value, _SECUREBOOT_KEYS)
    spec = md.SecureBootSpec(
        enabled=fields.get("enabled", flag, False),
        include_well_known_certificates=fields.get("includeWellKnownCertificates", flag, False),
        enroll_keys=fields.get("enrollKeys", _enroll_keys, ""),
    )
    return spec if fields.ok else None


def _options(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"must be a mapping of overlay options, not {described(value)}")
    if any(type(key) is not str for key in value):
        raise ValueError("option names must be text")
    return value


def _overlay(value: object, at: At) -> md.OverlaySpec | None:
    if value is None:
        return None
    fields = Fields(at, value, _OVERLAY_KEYS)
    name = fields.need("name", lambda name: md.check_overlay_name(text(name)), "name: rpi_generic")
    image = fields.get("image", text, "")
    options: dict[str, Any] = fields.get("options", _options, {})
    return md.OverlaySpec(name=name, image=image, options=options) if fields.ok else None


def _meta_key(value: object) -> int:
    return md.check_meta_key(whole(value))


def _meta_value(value: object, at: At) -> md.MetaValue | None:
    fields = Fields(at, value, _META_KEYS)
    key = fields.need("key", _meta_key, "key: 10")
    entry = fields.get("value", text, "")
    return md.MetaValue(key=key, value=entry) if fields.ok else None


def _meta(value: object, at: At) -> tuple[md.MetaValue, ...] | None:
    if value is None:
        return None
    return read_list(value, at, _meta_value, "a list of {key: 0..255, value: text}")


def _sector_size(value: object, at: At) -> int | None:
    if value is None:
        return None
    fields = Fields(at, value, _DISK_IMAGE_KEYS)
    size = fields.need("sectorSize", lambda size: md.check_sector_size(whole(size)), "4096")
    return size if fields.ok else None


def read_media(fields: Fields) -> md.ImageOptions:
    """The media keys of a profile or pool (problems recorded on ``fields``)."""
    return md.ImageOptions(
        secureboot=fields.read("secureboot", _secureboot, None),
        overlay=fields.read("overlay", _overlay, None),
        meta=fields.read("meta", _meta, None),
        bootloader=fields.get("bootloader", optional(lambda v: md.check_bootloader(text(v))), None),
        sector_size=fields.read("diskImage", _sector_size, None),
    )


def _blank_free(value: object) -> tuple[str, ...]:
    return md.check_no_blank(texts(value))


def read_boot(value: object, at: At) -> md.BootSchematic | None:
    """A pool's ``boot: {schematic: {extensions, kernelArgs, meta}}``."""
    if value is None:
        return None
    boot = Fields(at, value, _BOOT_KEYS)
    if not isinstance(value, dict):
        return None
    if "schematic" not in value:
        (at / "schematic").problem("missing; add it, e.g. schematic: {kernelArgs: [...]}")
        return None
    schematic = Fields(at / "schematic", boot.data.get("schematic"), _BOOT_SCHEMATIC_KEYS)
    result = md.BootSchematic(
        extensions=schematic.get("extensions", _blank_free, ()),
        kernel_args=schematic.get("kernelArgs", _blank_free, ()),
        meta=schematic.read("meta", _meta, ()),
    )
    return result if boot.ok else None
