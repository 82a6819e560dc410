"""The schematic model: its fields, in the factory's emission order, and its ID.

``Schematic.from_yaml`` decodes with :func:`schematic.core.decode.decode_fields`, which accepts
exactly what the Image Factory accepts; ``canonical()`` writes what the factory stores and
hashes (:mod:`schematic.core.canonical`), and ``id`` is its SHA-256.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from schematic.core.canonical import sha256_hex
from schematic.core.decode import BOOTLOADERS, canonical_schematic, decode_fields, decode_fields_at

__all__ = [
    "BOOTLOADERS",
    "Customization",
    "DiskImage",
    "MetaValue",
    "Overlay",
    "Schematic",
    "SecureBoot",
    "SystemExtensions",
]


class _Frozen(BaseModel):
    # defer_build: validators are built on first use, so importing the model stays cheap.
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, defer_build=True)


class Overlay(_Frozen):
    image: str = ""
    name: str = ""
    # Free-form: strings, numbers, booleans, None, lists, dicts / GoMap, GoTime.
    options: Mapping[str, Any] = Field(default_factory=dict)

    model_config = ConfigDict(arbitrary_types_allowed=True)


class MetaValue(_Frozen):
    key: int = Field(ge=0, le=255)
    value: str = ""


class SystemExtensions(_Frozen):
    official_extensions: tuple[str, ...] = Field(default=(), alias="officialExtensions")


class SecureBoot(_Frozen):
    enroll_keys: str = Field(default="", alias="enrollKeys")
    include_well_known_certificates: bool = Field(
        default=False, alias="includeWellKnownCertificates"
    )


class DiskImage(_Frozen):
    sector_size: int = Field(default=0, ge=0, alias="sectorSize")


class Customization(_Frozen):
    embedded_machine_configuration: str = Field(default="", alias="embeddedMachineConfiguration")
    extra_kernel_args: tuple[str, ...] = Field(default=(), alias="extraKernelArgs")
    meta: tuple[MetaValue, ...] = ()
    system_extensions: SystemExtensions = Field(
        default_factory=SystemExtensions, alias="systemExtensions"
    )
    # "" is the factory's default ("none" is read as that too).
    bootloader: Literal["", "dual-boot", "sd-boot", "grub"] = ""
    secureboot: SecureBoot = Field(default_factory=SecureBoot)
    disk_image: DiskImage = Field(default_factory=DiskImage, alias="diskImage")


class Schematic(_Frozen):
    """A Talos Image Factory schematic; ``.id`` is what the factory answers for it."""

    owner: str = ""
    overlay: Overlay = Field(default_factory=Overlay)
    customization: Customization = Field(default_factory=Customization)

    @classmethod
    def from_extensions(
        cls, extensions: Sequence[str], kernel_args: Sequence[str] = ()
    ) -> Schematic:
        """A schematic holding just these official extensions and kernel arguments."""
        return cls(
            customization=Customization(
                extra_kernel_args=tuple(kernel_args),
                system_extensions=SystemExtensions(official_extensions=tuple(extensions)),
            )
        )

    @classmethod
    def from_yaml(cls, text: str | bytes, source: str = "-") -> Schematic:
        """Decode a request body (YAML or JSON) as strictly as the factory does."""
        return cls.model_validate(decode_fields(text, source))

    @classmethod
    def from_yaml_at(
        cls, text: str | bytes, path: Sequence[str | int], source: str = "-"
    ) -> Schematic:
        """Decode the schematic at ``path`` inside a larger document (a talhelper node's
        ``schematic:``) from the document's own text, as strictly as the factory does."""
        return cls.model_validate(decode_fields_at(text, path, source))

    @classmethod
    def from_json(cls, text: str | bytes, source: str = "-") -> Schematic:
        """Decode a JSON body; JSON is YAML to the factory, so this is :meth:`from_yaml`."""
        return cls.from_yaml(text, source)

    def canonical(self, *, legacy_quoting: bool = False) -> str:
        """The canonical YAML the factory stores and hashes.

        ``legacy_quoting`` reproduces factories before v1.5.0 (go-yaml v3, or v4 rc.3/rc.4 from
        v0.9.0), which double-quoted the YAML-1.1-only words (``yes``, ``off``, ``1:20``,
        ``<<``) instead of single-quoting them, and gave a literal block that starts with a line
        break an indentation indicator.
        """
        return canonical_schematic(self._fields(), legacy_quoting=legacy_quoting)

    @property
    def id(self) -> str:
        """The schematic ID: SHA-256 of the canonical YAML."""
        return sha256_hex(self.canonical())

    def schematic_id(self, *, legacy_quoting: bool = False) -> str:
        """The ID as a factory of the given quoting generation computes it."""
        return sha256_hex(self.canonical(legacy_quoting=legacy_quoting))

    @property
    def extensions(self) -> tuple[str, ...]:
        """The official system extensions, in schematic order."""
        return self.customization.system_extensions.official_extensions

    def _fields(self) -> dict[str, Any]:
        c = self.customization
        secure = c.secureboot
        return {
            "owner": self.owner,
            "overlay": {
                "image": self.overlay.image,
                "name": self.overlay.name,
                "options": self.overlay.options,
            },
            "customization": {
                "embeddedMachineConfiguration": c.embedded_machine_configuration,
                "extraKernelArgs": c.extra_kernel_args,
                "meta": [{"key": m.key, "value": m.value} for m in c.meta],
                "systemExtensions": {"officialExtensions": c.system_extensions.official_extensions},
                "bootloader": c.bootloader,
                "secureboot": {
                    "enrollKeys": secure.enroll_keys,
                    "includeWellKnownCertificates": secure.include_well_known_certificates,
                },
                "diskImage": {"sectorSize": c.disk_image.sector_size},
            },
        }
