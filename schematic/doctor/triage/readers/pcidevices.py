"""One `talosctl get pcidevices -o yaml|json` resource, decoded once for every reader of it:
``detect`` (hardware profiles) and triage's document reader.

The spec's fields are those of siderolabs/talos ``pkg/machinery/resources/hardware/pcidevice.go``
(PCIDeviceSpec): ``class``, ``subclass``, ``vendor``, ``product`` (names), ``class_id``,
``subclass_id``, ``vendor_id``, ``product_id`` (hex codes as strings, "0x10de"), and ``driver``
(the bound driver, printed only when one is bound, Talos ≥ 1.10).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["PciDeviceError", "PciRecord", "is_pcidevice", "pci_record"]

_CODES = ("class_id", "subclass_id", "vendor_id", "product_id")
_HEX = re.compile(r"[0-9a-f]{1,4}")


class PciDeviceError(ValueError):
    """A pcidevices resource whose ``key`` is missing or not a hex code."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


@dataclass(frozen=True, slots=True)
class PciRecord:
    """What one pcidevices resource says about one PCI function."""

    node: str  # talosctl's node field ("" when absent)
    address: str  # metadata.id, as printed ("0000:01:00.0")
    class_id: int
    subclass_id: int
    vendor_id: int
    product_id: int
    class_name: str = ""
    vendor: str = ""
    product: str = ""
    driver: str = ""
    has_driver_field: bool = False  # Talos before 1.10 prints no driver at all

    @property
    def vendor_hex(self) -> str:
        return f"0x{self.vendor_id:04x}"


def is_pcidevice(resource: Mapping[str, Any]) -> bool:
    """Whether ``resource`` is a talosctl PCIDevices resource (by its type, or, without
    metadata, by a spec with the four codes)."""
    metadata = resource.get("metadata")
    spec = resource.get("spec")
    if not isinstance(spec, Mapping):
        return False
    if isinstance(metadata, Mapping) and metadata.get("type"):
        return str(metadata["type"]).split(".", 1)[0] == "PCIDevices"
    return all(key in spec for key in _CODES)


def _hex(value: Any, key: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip().lower().removeprefix("0x")
        if _HEX.fullmatch(text):
            return int(text, 16)
    raise PciDeviceError(key, f'spec.{key} must be a hex code like "0x10de", got {value!r}')


def pci_record(resource: Mapping[str, Any]) -> PciRecord:
    """Decode one pcidevices resource; raises PciDeviceError naming the bad key."""
    spec = resource.get("spec")
    if not isinstance(spec, Mapping):
        raise PciDeviceError("spec", "a pcidevices resource without a spec")
    metadata = resource.get("metadata")
    address = str(metadata.get("id") or "") if isinstance(metadata, Mapping) else ""
    for key in _CODES:
        if key not in spec:
            raise PciDeviceError(key, f"a pcidevices resource without spec.{key}")
    codes = {key: _hex(spec[key], key) for key in _CODES}

    def text(key: str) -> str:
        value = spec.get(key)
        return "" if value is None else str(value)

    return PciRecord(
        node=str(resource.get("node") or ""),
        address=address,
        class_id=codes["class_id"],
        subclass_id=codes["subclass_id"],
        vendor_id=codes["vendor_id"],
        product_id=codes["product_id"],
        class_name=text("class"),
        vendor=text("vendor"),
        product=text("product"),
        driver=text("driver"),
        has_driver_field="driver" in spec,
    )
