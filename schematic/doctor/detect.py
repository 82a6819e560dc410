"""Hardware dumps (`lspci -nn`, `lspci -nnmm`, `talosctl get pcidevices`) → hardware profiles.

Formats are recognised from the first meaningful line: ``{`` or ``[`` starts talosctl JSON (one
object, a list, ``{"items": [...]}``, or objects one after another as talosctl prints them);
a PCI address (``01:00.0`` or, from ``lspci -D``, ``0000:01:00.0``) starts lspci output, each
line read as ``-nnmm`` when its fields are quoted, as ``-nn`` otherwise (``-n``, ``-nmm`` and
``-vmmnn`` records work too; indented ``-v``/``-k`` detail lines are skipped, except the kernel
driver);
anything else is read as talosctl YAML documents.

Several machines in one input:

* talosctl: devices are grouped by their ``node`` key.
* lspci: a line ``==> NAME <==`` (as ``tail``/``head`` print between files) or a comment
  ``# node: NAME`` (also ``# host:``) starts a machine called NAME. Without one, a PCI address
  that repeats within the current machine, or an address lower than the previous one right
  after a blank line, starts a new unnamed machine: lspci prints every machine's devices in
  ascending address order, and every dump holds ``00:00.0``. Lines prefixed ``HOST: `` (as
  ``pdsh`` and ``clush`` print them) belong to machine HOST wherever they appear. Other ``#``
  lines and echoed ``lspci`` command lines are ignored.

Machines with the same detected profile are printed once, naming every node that shares it.

What is derived, and why:

* GPUs: NVIDIA (10de) display functions only, class 0x0300 (VGA) and 0x0302 (3D); the audio,
  USB and NVSwitch functions share the vendor ID. NVSwitches: NVIDIA class 0x0680 bridges up
  to Hopper. On NVLink-5 (Blackwell HGX) baseboards the NVSwitches show no 10de function: they
  are managed through the baseboard's ConnectX-7 bridge (Mellanox 15b3:1021, two ports of two
  physical functions each), whose limited functions carry ``SMDL=SW_MNG`` in their VPD
  (``lspci -vv``). ``nvswitch`` is set, on bare metal beside 8 Blackwell HGX GPUs (B100 / B200 /
  B300), from the VPD mark, else from ConnectX-7 functions, else inferred from the 8 GPUs alone;
  the description says which.
* platform: ``kubevirt`` for any QEMU/KVM guest, told by a device only QEMU has (the Red
  Hat/QEMU virtio vendors 1af4/1b36, the QEMU VGA 1234:1111): KubeVirt VMs are QEMU/KVM guests,
  and a GPU passed through to one is what this tool is for. The host bridges QEMU emulates
  (Q35's 8086:29c0, i440FX's 8086:1237) are real chipsets too — a G31 desktop has 8086:29c0 —
  so they alone never make a machine a guest.
  ``vmware`` for VMware devices (15ad); ``metal`` otherwise.
* cpuVendor: from host bridges, root ports on bus 00 and system peripherals — 8086 intel,
  1022 amd, ARM SoC and NVIDIA Grace vendors arm. Left out for virtual machines, whose chipset
  is emulated and says nothing about the host CPU.
* architecture: arm64 for an ARM CPU or a GPU that only exists beside one (GH200, GB200, GB300,
  GB10/N1X); amd64 otherwise.
* extensions: device-driven extras only — ``siderolabs/amdgpu`` for an AMD GPU (1002),
  ``siderolabs/i915`` for an Intel GPU. CPU microcode and guest agents are left to the
  generator, which derives them from cpuVendor and platform.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from schematic.doctor.triage.readers.pcidevices import PciDeviceError, pci_record
from schematic.errors import DetectError
from schematic.facts.nvidia import NVIDIA_VENDOR
from schematic.safe_yaml import (
    MAX_NESTING,
    InputKind,
    InputTooLargeError,
    check_size,
    compose_all,
    nesting_exceeds,
)

__all__ = [
    "Machine",
    "PciDevice",
    "compare_profile",
    "detect",
    "dump_profiles",
    "parse_dump",
    "profile_for",
]

NVIDIA, AMD, INTEL = int(NVIDIA_VENDOR, 16), 0x1002, 0x8086
DISPLAY_VGA, DISPLAY_3D, NVSWITCH_CLASS = 0x0300, 0x0302, 0x0680
HOST_BRIDGE, PCI_BRIDGE = 0x0600, 0x0604

QEMU_VENDORS = frozenset({0x1AF4, 0x1B36})
QEMU_DEVICES = frozenset({(0x1234, 0x1111)})
# Emulated by QEMU and sold as real chipsets: evidence of a guest only beside a QEMU device.
QEMU_EMULATED_BRIDGES = frozenset({(INTEL, 0x29C0), (INTEL, 0x1237)})
VMWARE = 0x15AD
CPU_VENDORS = {INTEL: "intel", 0x1022: "amd"}
# Root-complex vendors of ARM servers and SoCs: Ampere, Huawei, Cavium/Marvell, Arm, Rockchip,
# NXP, Qualcomm, and NVIDIA (Grace and Tegra root ports; NVIDIA made no x86 chipsets since 2010).
ARM_BRIDGE_VENDORS = frozenset({0x1DEF, 0x19E5, 0x177D, 0x13B5, 0x1D87, 0x1957, 0x17CB, NVIDIA})
# NVIDIA GPUs that are only built beside an ARM CPU (device-ID ranges from the device table).
ARM_ONLY_GPU_RANGES = (
    (0x2340, 0x237F),  # GH200
    (0x2940, 0x297F),  # GB200
    (0x31C0, 0x31FF),  # GB300
    (0x31A1, 0x31A1),  # GB300
    (0x2E00, 0x2E3F),  # GB20B: GB10 (DGX Spark), N1X
)

_ADDRESS = r"(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]"
_DEVICE_LINE = re.compile(rf"^(?P<address>{_ADDRESS})\s+(?P<rest>\S.*)$")
_HOST_PREFIXED = re.compile(rf"^(?P<host>[A-Za-z0-9_.\-]+):\s+(?P<line>{_ADDRESS}\s+\S.*)$")
# Each pattern below keeps to one way of matching a line: a lazy run before a whitespace run
# made long hostile lines quadratic (a 200 kB one took minutes).
_MARKER = re.compile(r"^==>\s*+(?P<name>(?:.*\S)?)\s*<==$")
_NODE_COMMENT = re.compile(r"^#\s*(?:node|host|hostname)\s*[:=]\s*(?P<name>\S(?:.*\S)?)\s*$", re.I)
_COMMAND_ECHO = re.compile(r"(?:^|[\s$#>])(?:sudo\s+)?lspci(?:\s|$)")
_NN_CLASS = re.compile(r"^(?P<name>(?:.*\S)?)\s*\[(?P<code>[0-9a-fA-F]{4})\]:\s*(?P<body>.*)$")
_NN_IDS = re.compile(r"\[([0-9a-fA-F]{4}):([0-9a-fA-F]{4})\]")
_NUMERIC = re.compile(r"^(?P<code>[0-9a-fA-F]{4}):\s+(?P<v>[0-9a-fA-F]{4}):(?P<d>[0-9a-fA-F]{4})")
_MM_FIELD = re.compile(r"^(?:(?P<name>(?:.*\S)?)\s*\[)?(?P<code>[0-9a-fA-F]{4})\]?$")
_MM_FLAG = re.compile(r"^-[rp][0-9a-fA-F]+$")
_MM_TOKEN = re.compile(r'"(?P<quoted>[^"]*)"|(?P<bare>[^\s"]+)|(?P<stray>")')
_DRIVER = re.compile(r"^\s+Kernel driver in use:\s*(?P<driver>\S+)")
# `lspci -vv` VPD of the NVSwitch-management (limited) functions of a ConnectX-7 bridge.
_SW_MNG = re.compile(r"^\s+\[V[0-9A-Z]\] Vendor specific:.*\bSMDL=SW_MNG\b")
MELLANOX, CONNECTX7 = 0x15B3, 0x1021
# Chips of the NVLink-5 HGX modules (B100, B200, B300 SXM), and the GPUs an HGX board holds.
NVLINK5_HGX_CHIPS = frozenset({"GB100", "GB102", "GB110"})
HGX_GPUS = 8
_VMM_FIELD = re.compile(
    r"^(?P<key>Slot|Class|Vendor|Device|SVendor|SDevice|PhySlot|Rev|ProgIf|Driver|Module"
    r"|NUMANode|IOMMUGroup):\s+(?P<value>.*)$"
)
_TALOSCTL_TABLE = re.compile(r"^NODE\s+NAMESPACE\s+TYPE\s+ID\b")


@dataclass(frozen=True)
class PciDevice:
    """One PCI function as a dump shows it."""

    address: str  # "0000:01:00.0", lowercase, with domain
    class_code: int  # class << 8 | subclass, e.g. 0x0302
    vendor_id: int
    device_id: int
    name: str = ""  # device name as printed, e.g. "AD102GL [L40S]"
    driver: str = ""
    switch_management: bool = False  # VPD says SMDL=SW_MNG (ConnectX-7 NVSwitch bridge)

    @property
    def pci_id(self) -> str:
        return f"{self.vendor_id:04x}:{self.device_id:04x}"

    @property
    def bus(self) -> int:
        return int(self.address.split(":")[-2], 16)


@dataclass(frozen=True)
class Machine:
    """The devices of one machine; ``node`` is empty when the input does not name it."""

    node: str
    devices: tuple[PciDevice, ...]


# --- parsing -------------------------------------------------------------------------------


def parse_dump(text: str, source: str = "-") -> list[Machine]:
    """Parse lspci or talosctl output into machines, in input order."""
    text = text.removeprefix("\ufeff")
    first = _first_meaningful_line(text)
    if first is None:
        raise DetectError(
            f"{source}: empty input: expected lspci -nn, lspci -nnmm or talosctl output"
        )
    number, line = first
    if line.startswith(("{", "[")):
        machines = _parse_talosctl(_json_values(text, source), source)
    elif _DEVICE_LINE.match(line) or _HOST_PREFIXED.match(line) or line.startswith("Slot:"):
        machines = _parse_lspci(text, source)
    elif _TALOSCTL_TABLE.match(line):
        raise DetectError(
            f"{source}:{number}: talosctl table output carries no PCI IDs; "
            "run `talosctl get pcidevices -o yaml` (or -o json)"
        )
    else:
        machines = _parse_talosctl(_yaml_values(text, source), source)
    if not machines:
        raise DetectError(f"{source}: no PCI devices found")
    return machines


def _first_meaningful_line(text: str) -> tuple[int, str] | None:
    """The first line that is not blank, a comment, a machine marker or an echoed command."""
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line and not (line.startswith("#") or _MARKER.match(line) or _COMMAND_ECHO.search(line)):
            return number, line
    return None


@dataclass
class _Building:
    node: str
    line: int
    devices: list[PciDevice] = field(default_factory=list)
    addresses: set[str] = field(default_factory=set)


def _flatten_records(lines: list[str]) -> list[str]:
    """Rewrite `lspci -vmmnn` records as `-nnmm` lines in place, so line numbers stay true."""
    out = list(lines)
    index = 0
    while index < len(out):
        slot = _VMM_FIELD.match(out[index])
        if slot is None or slot["key"] != "Slot":
            index += 1
            continue
        record: dict[str, str] = {}
        end = index
        while end < len(out) and (field := _VMM_FIELD.match(out[end])) is not None:
            if field["key"] == "Slot" and end > index:
                break
            record[field["key"]] = field["value"].strip()
            out[end] = ""
            end += 1
        quoted = [
            json.dumps(record.get(key, ""), ensure_ascii=False)
            for key in ("Class", "Vendor", "Device")
        ]
        out[index] = f"{record['Slot']} {' '.join(quoted)}"
        if "Driver" in record and end > index + 1:
            out[index + 1] = f"\tKernel driver in use: {record['Driver']}"
        index = end
    return out


def _parse_lspci(text: str, source: str) -> list[Machine]:
    machines: list[_Building] = []
    by_host: dict[str, _Building] = {}
    current: _Building | None = None
    after_blank = False
    last: _Building | None = None  # the machine the previous device line went to

    def start(node: str, number: int) -> _Building:
        machine = _Building(node, number)
        machines.append(machine)
        return machine

    for number, raw in enumerate(_flatten_records(text.splitlines()), 1):
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped:
            after_blank = True
            continue
        if (marker := _MARKER.match(stripped) or _NODE_COMMENT.match(stripped)) is not None:
            current = start(marker["name"], number)
            after_blank = False
            continue
        if stripped.startswith("#") or _COMMAND_ECHO.search(stripped):
            continue
        if line[0].isspace():
            # Detail lines of `lspci -k` / `-vv`: only the bound driver and the NVSwitch
            # management mark in the VPD matter.
            driver = _DRIVER.match(line)
            if last is not None and last.devices:
                previous = last.devices[-1]
                if driver is not None:
                    last.devices[-1] = dataclasses.replace(previous, driver=driver["driver"])
                elif _SW_MNG.match(line):
                    last.devices[-1] = dataclasses.replace(previous, switch_management=True)
            continue
        prefixed = _HOST_PREFIXED.match(stripped)
        if prefixed is not None and not _DEVICE_LINE.match(stripped):
            device = _parse_lspci_line(prefixed["line"], source, number)
            host = prefixed["host"]
            target = by_host.get(host)
            if target is None or device.address in target.addresses:
                target = by_host[host] = start(host, number)
        else:
            device = _parse_lspci_line(stripped, source, number)
            target = current
            if (
                target is None
                or device.address in target.addresses
                or (after_blank and target.devices and device.address < target.devices[-1].address)
            ):
                target = current = start("", number)
        target.devices.append(device)
        target.addresses.add(device.address)
        last = target
        after_blank = False

    for machine in machines:
        if not machine.devices:
            name = f" {machine.node!r}" if machine.node else ""
            raise DetectError(f"{source}:{machine.line}: machine{name} lists no PCI devices")
    return [Machine(m.node, tuple(m.devices)) for m in machines]


def _normal_address(address: str) -> str:
    address = address.lower()
    return address if address.count(":") == 2 else f"0000:{address}"


def _parse_lspci_line(line: str, source: str, number: int) -> PciDevice:
    match = _DEVICE_LINE.match(line)
    if match is None:
        raise DetectError(f"{source}:{number}: not an lspci device line: {line!r}")
    address, rest = _normal_address(match["address"]), match["rest"]
    if rest.startswith('"'):
        return _parse_machine_readable(address, rest, source, number)
    numeric = _NUMERIC.match(rest)
    if numeric is not None:  # `lspci -n`
        return PciDevice(
            address, int(numeric["code"], 16), int(numeric["v"], 16), int(numeric["d"], 16)
        )
    classed = _NN_CLASS.match(rest)
    ids = list(_NN_IDS.finditer(classed["body"])) if classed else []
    if classed is None or not ids:
        raise DetectError(
            f"{source}:{number}: no [class] and [vendor:device] codes in {line!r}; "
            "run lspci with -nn (or -nnmm)"
        )
    # Device names hold brackets of their own ("GA102GL [A10]"): the IDs are the last pair.
    last_ids = ids[-1]
    name = classed["body"][: last_ids.start()].strip()
    return PciDevice(
        address,
        int(classed["code"], 16),
        int(last_ids[1], 16),
        int(last_ids[2], 16),
        name.removeprefix("NVIDIA Corporation ").strip(),
    )


def _parse_machine_readable(address: str, rest: str, source: str, number: int) -> PciDevice:
    fields: list[str] = []
    # lspci -mm quotes each field; shlex's tokenizer was quadratic on a long one.
    for token in _MM_TOKEN.finditer(rest):
        if token["stray"] is not None:
            raise DetectError(
                f"{source}:{number}: cannot split lspci -mm fields: No closing quotation"
            )
        fields.append(token["quoted"] if token["quoted"] is not None else token["bare"])
    # Revision and programming-interface flags (-rXX, -pXX) sit between the device and the
    # subsystem fields; only class, vendor and device matter here.
    fields = [f for f in fields if not _MM_FLAG.match(f)]
    parsed = [_MM_FIELD.match(f.strip()) for f in fields[:3]]
    if len(parsed) < 3 or any(p is None for p in parsed):
        raise DetectError(
            f"{source}:{number}: expected quoted class, vendor and device fields with codes "
            f'(lspci -nnmm), as in "3D controller [0302]" "NVIDIA Corporation [10de]": {rest!r}'
        )
    klass, vendor, device = (p for p in parsed if p is not None)
    return PciDevice(
        address,
        int(klass["code"], 16),
        int(vendor["code"], 16),
        int(device["code"], 16),
        (device["name"] or "").strip(),
    )


def _json_values(text: str, source: str) -> list[tuple[int, Any]]:
    """Every top-level JSON value with its first line; talosctl prints objects back to back."""
    _check_documents_size(text, source)
    decoder = json.JSONDecoder()
    values: list[tuple[int, Any]] = []
    position = 0
    line, counted = 1, 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position == len(text):
            return values
        # Counted on from the last value: counting from the start each time was quadratic.
        line += text.count("\n", counted, position)
        counted = position
        try:
            value, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as err:
            raise DetectError(f"{source}:{err.lineno}: invalid JSON: {err.msg}") from None
        except RecursionError:  # Python's JSON decoder recurses: deeper than the limit below
            raise DetectError(_too_deep(source, line)) from None
        if nesting_exceeds(value, MAX_NESTING):
            raise DetectError(_too_deep(source, line))
        values.append((line, value))


def _too_deep(source: str, line: int) -> str:
    return (
        f"{source}:{line}: JSON nested deeper than {MAX_NESTING} levels, "
        "the most talos-schematic reads"
    )


def _check_documents_size(text: str, source: str) -> None:
    """A YAML or JSON dump has a lower limit than lspci text: each of its bytes costs more."""
    try:
        check_size(text, InputKind.HARDWARE_DOCUMENTS)
    except InputTooLargeError as err:
        raise DetectError(f"{source}: {err.strerror}") from None


def _yaml_values(text: str, source: str) -> list[tuple[int, Any]]:
    _check_documents_size(text, source)
    # BaseLoader keeps every scalar a string, so "0x10de" or 2335 are never turned into ints.
    try:
        nodes = list(compose_all(text, _strings_only))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        # A reader error has no problem of its own: its text ends in a second line of place.
        reason = " ".join(str(getattr(err, "problem", None) or err).split())
        raise DetectError(
            f"{where}: not lspci -nn, lspci -nnmm or talosctl pcidevices output (YAML: {reason})"
        ) from None
    return [(node.start_mark.line + 1, _plain(node)) for node in nodes if node is not None]


_strings_only = yaml.resolver.BaseResolver().resolve


class _Lined(dict[str, Any]):
    """A YAML mapping that remembers the line of each key, for error messages."""

    lines: dict[str, int]


def _plain(node: yaml.Node) -> Any:
    if isinstance(node, yaml.MappingNode):
        mapping = _Lined((_plain(key), _plain(value)) for key, value in node.value)
        mapping.lines = {str(key.value): key.start_mark.line + 1 for key, _ in node.value}
        return mapping
    if isinstance(node, yaml.SequenceNode):
        return [_plain(item) for item in node.value]
    return node.value


def _talosctl_resources(values: list[tuple[int, Any]], source: str) -> Iterator[tuple[int, Any]]:
    for line, value in values:
        if isinstance(value, list):
            yield from _talosctl_resources([(line, item) for item in value], source)
        elif isinstance(value, dict) and isinstance(value.get("items"), list):
            yield from _talosctl_resources([(line, item) for item in value["items"]], source)
        elif isinstance(value, dict) and isinstance(value.get("spec"), dict):
            yield line, value
        elif value in (None, "", {}):
            continue
        else:
            raise DetectError(
                f"{source}:{line}: expected talosctl pcidevices resources (node, metadata, spec), "
                "lspci -nn or lspci -nnmm lines"
            )


def _parse_talosctl(values: list[tuple[int, Any]], source: str) -> list[Machine]:
    by_node: dict[str, list[PciDevice]] = {}
    for line, resource in _talosctl_resources(values, source):
        try:
            record = pci_record(resource)
        except PciDeviceError as err:
            where = getattr(resource.get("spec"), "lines", {}).get(err.key, line)
            raise DetectError(f"{source}:{where}: {err}") from None
        address = record.address
        device = PciDevice(
            _normal_address(address) if re.fullmatch(_ADDRESS, address) else address,
            record.class_id << 8 | record.subclass_id,
            record.vendor_id,
            record.product_id,
            record.product,
            record.driver,
        )
        by_node.setdefault(record.node, []).append(device)
    return [Machine(node, tuple(devices)) for node, devices in by_node.items()]


# --- profiles ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Findings:
    platform: str
    architecture: str
    cpu_vendor: str | None
    gpus: tuple[tuple[str, int], ...]
    nvswitches: int
    extensions: tuple[str, ...]
    notes: tuple[str, ...]  # for the description
    nvlink5: str = ""  # the evidence of NVLink-5 NVSwitches, when there is some

    @property
    def nvswitch(self) -> bool:
        return self.nvswitches > 0 or bool(self.nvlink5)

    @property
    def key(self) -> tuple[object, ...]:
        return (
            self.platform,
            self.architecture,
            self.cpu_vendor,
            self.gpus,
            self.nvswitch,
            self.extensions,
        )


def _is_display(device: PciDevice) -> bool:
    return device.class_code in (DISPLAY_VGA, DISPLAY_3D)


def _gpu_name(pci_id: str, fallback: str) -> str:
    try:
        from schematic.facts.nvidia import lookup_gpu

        return lookup_gpu(pci_id).name
    except Exception:
        # The device table only improves the description; an unknown ID is still a GPU.
        return fallback


def _nvlink5_chip(pci_id: str) -> bool:
    try:
        from schematic.facts.nvidia import lookup_gpu

        gpu = lookup_gpu(pci_id)
    except Exception:
        return False  # an unknown ID is still a GPU, but not a known HGX module
    return gpu.chip in NVLINK5_HGX_CHIPS and not gpu.grace


def _nvlink5_evidence(devices: Sequence[PciDevice], gpus: Sequence[tuple[str, int]]) -> str:
    """Why a bare-metal machine has NVLink-5 NVSwitches, or "" when nothing says so."""
    hgx = sum(count for pci_id, count in gpus if _nvlink5_chip(pci_id))
    if hgx < HGX_GPUS:
        return ""
    managing = [d for d in devices if d.vendor_id == MELLANOX and d.switch_management]
    if managing:
        slots = {d.address.rsplit(".", 1)[0] for d in managing}
        bridge = [
            d for d in devices if d.vendor_id == MELLANOX and d.address.rsplit(".", 1)[0] in slots
        ]
        return (
            f"NVSwitches behind the ConnectX-7 bridge: {len(bridge)} Mellanox functions at "
            f"{', '.join(sorted(slots))}, VPD SMDL=SW_MNG on "
            f"{', '.join(d.address for d in managing)}, beside {hgx} Blackwell HGX GPUs"
        )
    connectx7 = [d for d in devices if (d.vendor_id, d.device_id) == (MELLANOX, CONNECTX7)]
    if connectx7:
        return (
            f"NVSwitches assumed behind a ConnectX-7 bridge: {len(connectx7)} ConnectX-7 "
            f"functions (15b3:1021) beside {hgx} Blackwell HGX GPUs; the dump has no VPD to "
            "tell the bridge from network cards (lspci -vv shows SMDL=SW_MNG on it)"
        )
    return (
        f"NVSwitches inferred: {hgx} Blackwell HGX GPUs on bare metal sit on an HGX baseboard; "
        "no ConnectX-7 bridge function in the dump"
    )


def _cpu_vendor(devices: Sequence[PciDevice]) -> str | None:
    def vote(device: PciDevice) -> str | None:
        if device.class_code == HOST_BRIDGE or (
            device.class_code == PCI_BRIDGE and device.bus == 0
        ):
            if device.vendor_id in CPU_VENDORS:
                return CPU_VENDORS[device.vendor_id]
            return "arm" if device.vendor_id in ARM_BRIDGE_VENDORS else None
        if device.class_code >> 8 == 0x08 or device.class_code == 0x1101:
            return CPU_VENDORS.get(device.vendor_id)
        return None

    # A host bridge names the CPU's maker directly; other on-die functions count only
    # when no host bridge is conclusive.
    for group in (
        [d for d in devices if d.class_code == HOST_BRIDGE],
        list(devices),
    ):
        votes = Counter(v for v in map(vote, group) if v is not None)
        if votes:
            (best, count), *others = votes.most_common()
            if not others or others[0][1] < count:
                return best
    return None


def _findings(machine: Machine) -> _Findings:
    devices = machine.devices
    notes: list[str] = []

    gpu_counts = Counter(d.pci_id for d in devices if d.vendor_id == NVIDIA and _is_display(d))
    gpus = tuple(sorted(gpu_counts.items()))
    names = {d.pci_id: d.name for d in devices}
    for pci_id, count in gpus:
        notes.append(f"{count}x {_gpu_name(pci_id, names[pci_id] or 'NVIDIA GPU')} ({pci_id})")
    nvswitches = sum(1 for d in devices if d.vendor_id == NVIDIA and d.class_code == NVSWITCH_CLASS)
    if nvswitches:
        notes.append(f"{nvswitches} NVSwitch{'es' if nvswitches > 1 else ''}")

    extensions: set[str] = set()
    for device in devices:
        accelerator = device.class_code >> 8 == 0x03 or device.class_code == 0x1200
        if device.vendor_id == AMD and accelerator:
            extensions.add("siderolabs/amdgpu")
            notes.append(f"AMD GPU {device.pci_id}")
        elif device.vendor_id == INTEL and device.class_code >> 8 == 0x03:
            extensions.add("siderolabs/i915")
            notes.append(f"Intel GPU {device.pci_id}")

    qemu = any(
        d.vendor_id in QEMU_VENDORS or (d.vendor_id, d.device_id) in QEMU_DEVICES for d in devices
    )
    vmware = any(d.vendor_id == VMWARE for d in devices)
    cpu_vendor: str | None
    if qemu:
        platform, cpu_vendor = "kubevirt", None
        notes.append("QEMU/KVM guest" + (" with passthrough GPU" if gpus else ""))
    elif vmware:
        platform, cpu_vendor = "vmware", None
        notes.append("VMware guest")
    else:
        platform, cpu_vendor = "metal", _cpu_vendor(devices)
        maker = {"intel": "Intel", "amd": "AMD", "arm": "Arm"}.get(cpu_vendor or "")
        notes.append("bare metal" + (f", {maker} CPU" if maker else ""))
        if any((d.vendor_id, d.device_id) in QEMU_EMULATED_BRIDGES for d in devices):
            notes.append("a host bridge QEMU also emulates, but no QEMU device")

    arm_gpu = any(
        low <= int(pci_id[5:], 16) <= high
        for pci_id, _ in gpus
        for low, high in ARM_ONLY_GPU_RANGES
    )
    architecture = "arm64" if cpu_vendor == "arm" or arm_gpu else "amd64"
    if arm_gpu and platform == "metal" and cpu_vendor is None:
        cpu_vendor = "arm"
    nvlink5 = _nvlink5_evidence(devices, gpus) if platform == "metal" else ""
    if nvlink5:
        notes.append(nvlink5)
    return _Findings(
        platform,
        architecture,
        cpu_vendor,
        gpus,
        nvswitches,
        tuple(sorted(extensions)),
        tuple(notes),
        nvlink5,
    )


def profile_for(
    machine: Machine, *, name: str = "detected-1", description: str = ""
) -> dict[str, Any]:
    """The hardware profile (as a plain mapping, profile key order) of one machine."""
    findings = _findings(machine)
    return _profile(findings, name, description or _describe([machine.node], findings))


def _profile(findings: _Findings, name: str, description: str) -> dict[str, Any]:
    profile: dict[str, Any] = {
        "name": name,
        "description": description,
        "platform": findings.platform,
        "architecture": findings.architecture,
    }
    if findings.cpu_vendor is not None:
        profile["cpuVendor"] = findings.cpu_vendor
    profile["gpus"] = [{"id": pci_id, "count": count} for pci_id, count in findings.gpus]
    profile["nvswitch"] = findings.nvswitch
    profile["extensions"] = list(findings.extensions)
    profile["kernelArgs"] = []
    return profile


# Node names a profile's description lists before counting the rest.
_NODES_SHOWN = 20


def _describe(nodes: Sequence[str], findings: _Findings) -> str:
    if len(nodes) > 1:
        shown = ", ".join(nodes[:_NODES_SHOWN])
        if len(nodes) > _NODES_SHOWN:
            shown += f" and {len(nodes) - _NODES_SHOWN} more"
        seen = f"Detected on {len(nodes)} machines with identical hardware: {shown}"
    elif nodes and nodes[0]:
        seen = f"Detected on {nodes[0]}"
    else:
        seen = "Detected"
    return f"{seen}: {'; '.join(findings.notes)}"


def _slug(node: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", node.lower()).strip("-")
    if slug and not slug[0].isalpha():
        slug = f"node-{slug}"
    return slug


def detect(text: str, source: str = "-") -> list[dict[str, Any]]:
    """One hardware profile per distinct machine in a dump, in input order."""
    # Node labels per hardware shape, kept in input order by a dict: a dump of 40,000 identical
    # nodes must not search a list for each.
    groups: dict[tuple[object, ...], tuple[_Findings, dict[str, None]]] = {}
    # Identical machines list identical devices: what they show is worked out once.
    seen: dict[tuple[PciDevice, ...], _Findings] = {}
    for index, machine in enumerate(parse_dump(text, source), 1):
        findings = seen.get(machine.devices)
        if findings is None:
            findings = seen[machine.devices] = _findings(machine)
        label = machine.node or f"machine {index}"
        groups.setdefault(findings.key, (findings, {}))[1][label] = None

    profiles: list[dict[str, Any]] = []
    used: set[str] = set()
    for index, (findings, labels) in enumerate(groups.values(), 1):
        nodes = list(labels)
        named = len(nodes) == 1 and not nodes[0].startswith("machine ")
        name = (_slug(nodes[0]) if named else "") or f"detected-{index}"
        while name in used:
            name = f"{name}-{index}"
        used.add(name)
        anonymous = all(node.startswith("machine ") for node in nodes) and len(groups) == 1
        profiles.append(_profile(findings, name, _describe([] if anonymous else nodes, findings)))
    return profiles


# --- output and comparison -----------------------------------------------------------------


def dump_profiles(profiles: Sequence[Mapping[str, Any]], *, as_json: bool = False) -> str:
    """Profiles as a YAML stream (``---`` between documents) or a JSON list."""
    if as_json:
        return json.dumps(list(profiles), indent=2, ensure_ascii=False) + "\n"
    from schematic.output.render.yamltext import dump

    # The one writer of human-facing YAML, so a profile reads back exactly as written.
    return "---\n".join(dump(dict(profile)) for profile in profiles)


def _gpu_text(gpus: Mapping[str, int]) -> str:
    return ", ".join(f"{pci_id} x{count}" for pci_id, count in sorted(gpus.items())) or "none"


def compare_profile(detected: Mapping[str, Any], declared: Mapping[str, Any]) -> list[str]:
    """The differences between a detected profile and a declared one (camelCase keys).

    Compares platform, architecture, cpuVendor, GPUs (id and count) and nvswitch. cpuVendor is
    compared only when both sides name one: virtual machines do not show their host's CPU.
    """
    differences: list[str] = []
    for key in ("platform", "architecture", "cpuVendor"):
        want, have = declared.get(key), detected.get(key)
        if want is None or (key == "cpuVendor" and have is None):
            continue
        if str(want).lower() != str(have).lower():
            differences.append(f"{key}: profile declares {want}, node has {have}")

    def counts(gpus: Any) -> dict[str, int]:
        total: Counter[str] = Counter()
        for gpu in gpus or ():
            total[str(gpu["id"]).lower()] += int(gpu.get("count", 1))
        return dict(total)

    want_gpus, have_gpus = counts(declared.get("gpus")), counts(detected.get("gpus"))
    if want_gpus != have_gpus:
        differences.append(
            f"gpus: profile declares {_gpu_text(want_gpus)}, node has {_gpu_text(have_gpus)}"
        )
    want_switch, have_switch = bool(declared.get("nvswitch")), bool(detected.get("nvswitch"))
    if want_switch != have_switch:
        differences.append(
            f"nvswitch: profile declares {str(want_switch).lower()}, "
            f"node has {str(have_switch).lower()}"
        )
    return differences
