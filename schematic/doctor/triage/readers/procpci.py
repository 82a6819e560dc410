"""``/proc/bus/pci/devices``: the kernel's list of PCI functions, as `talosctl read` prints it and
`talosctl support` stores it (``<node>/devices``).

One line per function, written by the kernel's ``show_device`` (linux ``drivers/pci/proc.c``):
``%02x%02x`` bus and devfn, a tab, ``%04x%04x`` vendor and device, a tab, the IRQ in hex, then
seven resource starts and seven sizes (``\\t%16llx`` each), a tab and the bound driver's name
(empty when none is bound). No class code: a function is a GPU when the device table says so.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from schematic.doctor.triage.signals import Evidence, Kind, Signal

__all__ = ["read_proc_pci", "recognise_proc_pci"]

_LINE = re.compile(
    r"^(?P<bus>[0-9a-f]{2})(?P<devfn>[0-9a-f]{2})\t(?P<vendor>[0-9a-f]{4})(?P<device>[0-9a-f]{4})"
    r"\t[0-9a-f]+(?:\t[ 0-9a-f]{1,16}){14}(?:\t(?P<driver>\S*))?\s*$"
)
_MAX_TEXT = 160


def recognise_proc_pci(text: str) -> bool:
    """Whether every one of the first lines is the kernel's line for a function."""
    # Split at the first lines only: splitting all of a 16 MiB text costs seconds.
    lines = [line for line in text.split("\n", 50)[:50] if line.strip()]
    return bool(lines) and all(_LINE.match(line) for line in lines)


def read_proc_pci(text: str, file: str) -> Iterator[Signal]:
    """A PCI_DEVICE per function, as the pcidevices readers write one (vendor ``0x10de``)."""
    from schematic.facts.nvidia import NVIDIA_VENDOR, Gpu, describe_pci_function

    for number, line in enumerate(text.splitlines(), 1):
        found = _LINE.match(line)
        if found is None:
            continue
        bus, devfn = int(found["bus"], 16), int(found["devfn"], 16)
        address = f"0000:{bus:02x}:{devfn >> 3:02x}.{devfn & 7}"
        vendor, device = found["vendor"], found["device"]
        driver = found["driver"] or ""
        # The table tells a GPU from the NVSwitches and bridges NVIDIA also makes.
        gpu = vendor == NVIDIA_VENDOR and isinstance(
            describe_pci_function(f"{vendor}:{device}"), Gpu
        )
        text_ = f"{address} {vendor}:{device} driver: {driver or '(none)'}"
        yield Signal(
            Kind.PCI_DEVICE,
            "",
            Evidence(file, number, text_[:_MAX_TEXT]),
            f"0x{vendor}",
            (
                ("class", "0x03" if gpu else ""),
                ("product", f"0x{device}"),
                ("driver", driver),
                ("has_driver_field", "1"),
                ("address", address),
            ),
        )
