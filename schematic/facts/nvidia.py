"""NVIDIA GPUs on Talos: the device table, lookups, and the flavour / tier decision.

Kernel-module flavour follows the GPU generation (pre-Turing: proprietary only; Turing to
Hopper: either, open preferred; Blackwell and Grace superchips: open only), and the tier is
the one whose driver knows every GPU. The device facts and the drivers each Talos release
pins are package data, read once.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Literal

from schematic.errors import GpuRefusal, NvidiaError, UnknownDeviceError
from schematic.facts import nvidia_rules
from schematic.facts.nvidia_rules import ReleaseRules, rules_for
from schematic.facts.talos import (
    DriverRow,
    DriverTableMatch,
    TalosVersion,
    driver_key,
    driver_row,
    driver_table,
)

__all__ = [
    "ARCHITECTURES",
    "BPF_JIT_HARDEN_SYSCTL",
    "BPF_JIT_HARDEN_UNTIL",
    "NVIDIA_MODULES",
    "NVIDIA_VENDOR",
    "PRE_TURING_LAST_BRANCH",
    "Fabric",
    "Gpu",
    "GpuRequest",
    "KernelModule",
    "NvidiaDecision",
    "NvidiaExtension",
    "NvidiaFunction",
    "ResolvedGpus",
    "all_gpus",
    "decide",
    "describe_nvidia_extension",
    "describe_pci_function",
    "fabric_of",
    "is_nvidia_display_function",
    "lookup_gpu",
    "normalise_architecture",
    "normalise_pci_id",
    "nvidia_extension",
    "nvlink5_hgx_count",
    "preferred_tier",
    "resolve_gpus",
    "usual_architecture",
]

NVIDIA_VENDOR = "10de"
Flavour = Literal["open", "proprietary"]
Tier = Literal["lts", "production"]
Family = Literal["kernel-modules", "container-toolkit", "fabric-manager", "gdrdrv"]

# Oldest first; names as the device table spells them.
ARCHITECTURES = (
    "Fermi",
    "Kepler",
    "Maxwell",
    "Pascal",
    "Volta",
    "Turing",
    "Ampere",
    "Ada Lovelace",
    "Hopper",
    "Blackwell",
    "Rubin",
)
_OLDER_THAN_FERMI = ("Tesla", "Curie", "Rankine", "Kelvin", "Celsius")
# No GSP: only the proprietary modules drive them, and driver branches after 580 dropped them.
_PRE_TURING = frozenset({"Maxwell", "Pascal", "Volta"})
PRE_TURING_LAST_BRANCH = 580
_UNSUPPORTED = frozenset({"Fermi", "Kepler", "Rubin", *_OLDER_THAN_FERMI})
# Grace self-hosted parts: the GPU of a GH200 / GB200 / GB300 superchip needs the open modules.
_GRACE_RANGES = ((0x2340, 0x237F), (0x2940, 0x297F), (0x31C0, 0x31FF), (0x31A1, 0x31A1))
# GB10 (DGX Spark): its flavour and kernel args per Talos release are in data/nvidia-rules.tsv.
_GB10_CHIP = "GB20B"
# NVLink-5 HGX baseboards: B100 / B200 (GB100, GB102) and B300 (GB110) SXM modules. The Grace
# superchips of these chips (GB200, GB300 NVL racks) have no NVSwitch on the compute tray.
_NVLINK5_CHIPS = frozenset({"GB100", "GB102", "GB110"})
_HGX_GPU_COUNT = 8
# GeForce and workstation (Quadro / RTX / T-series) parts: what older open modules refuse.
_CLIENT_GPU_NAME = re.compile(r"\b(?:GeForce|TITAN|Quadro|RTX|NVS|CMP)\b|^NVIDIA T\d{3,4}\b")
_PROPRIETARY_BASE = "nonfree-kmod-nvidia"
_GDRDRV_BASE = "nvidia-gdrdrv-device"
# Talos's NVIDIA support up to this minor line asks for the sysctl set to 1 on GPU nodes.
BPF_JIT_HARDEN_SYSCTL = "net.core.bpf_jit_harden"
BPF_JIT_HARDEN_UNTIL = (1, 12)
# The modules the NVIDIA extensions install and a GPU node loads, in their load order.
NVIDIA_MODULES = ("nvidia", "nvidia_uvm", "nvidia_drm", "nvidia_modeset")
_NVLINK_DISABLE = "NVreg_NvLinkDisable=1"
_DISPLAY_CLASSES = frozenset({"0300", "0302"})


@dataclass(frozen=True, slots=True)
class Gpu:
    """One NVIDIA GPU PCI function from the device table (or declared by a profile)."""

    id: str  # "10de:2bb5", lowercase
    name: str
    chip: str
    architecture: str
    pciids_name: str
    first_open_driver: str | None = None
    source: str = ""

    @property
    def device(self) -> int:
        return int(self.id.split(":")[1], 16)

    @property
    def label(self) -> str:
        return f"{self.id} ({self.name})"

    @property
    def kubevirt_resource_name(self) -> str:
        """The resource NVIDIA's kubevirt-gpu-device-plugin advertises for this device."""
        # The plugin falls back to the device ID when pci.ids has no name for it.
        base = self.pciids_name or self.id.split(":")[1]
        name = re.sub(r"\s+", "_", base.upper().replace("/", "_").replace(".", "_"))
        return "nvidia.com/" + re.sub(r"[^A-Z0-9_]", "", name)

    @property
    def pre_turing(self) -> bool:
        return self.architecture in _PRE_TURING

    @property
    def grace(self) -> bool:
        return any(low <= self.device <= high for low, high in _GRACE_RANGES)

    @property
    def open_only(self) -> bool:
        """Blackwell and the Grace superchips have no proprietary-module support."""
        return self.architecture == "Blackwell" or self.grace

    @property
    def gb10(self) -> bool:
        return self.chip == _GB10_CHIP

    @property
    def nvlink5_hgx(self) -> bool:
        """A Blackwell data-centre SXM module of an NVLink-5 HGX baseboard (B100/B200/B300)."""
        return self.chip in _NVLINK5_CHIPS and not self.grace

    @property
    def client(self) -> bool:
        """A GeForce or workstation GPU (not a data-centre part), by its product name."""
        return _CLIENT_GPU_NAME.search(self.name) is not None


@dataclass(frozen=True, slots=True)
class NvidiaFunction:
    """An NVIDIA PCI function that is not a GPU (HD-Audio, USB, NVSwitch)."""

    id: str
    kind: Literal["audio", "usb", "nvswitch"]
    name: str


@dataclass(frozen=True, slots=True)
class GpuRequest:
    """A GPU a node holds: its PCI ID, how many, and its architecture if the table lacks it."""

    id: str
    count: int = 1
    architecture: str | None = None


@dataclass(frozen=True, slots=True)
class KernelModule:
    """A kernel module the machine config must load, with its parameters."""

    name: str
    parameters: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NvidiaDecision:
    """Which NVIDIA extensions a node gets, what to load, and why."""

    gpus: tuple[Gpu, ...]
    talos: str
    flavour: Flavour
    tier: Tier | None  # None on Talos < 1.8: one unsuffixed driver, no tiers
    driver: str
    container_toolkit: str
    extensions: tuple[str, ...]
    kernel_modules: tuple[KernelModule, ...]
    sysctls: dict[str, str] = field(hash=False)  # a mapping has no hash; equal ones match
    kernel_args: tuple[str, ...]
    reasons: tuple[str, ...]
    # Where the sources disagree (the rules table says so): check the answer on the hardware.
    notes: tuple[str, ...] = ()
    # What will not work on this release whatever the schematic holds (GB10 CUDA on 1.13/1.14).
    defects: tuple[str, ...] = ()

    @property
    def driver_branch(self) -> int:
        """The driver's branch (580 for 580.126.20), which decides which GPUs it drives."""
        return driver_key(self.driver)[0]

    def to_json(self) -> dict[str, Any]:
        """The `talos-schematic gpu --json` document."""
        return {
            "gpus": [
                {"id": g.id, "name": g.name, "chip": g.chip, "architecture": g.architecture}
                for g in self.gpus
            ],
            "flavour": self.flavour,
            "tier": self.tier,
            "driver": self.driver,
            "extensions": list(self.extensions),
            "kernelModules": [
                {"name": m.name, "parameters": list(m.parameters)} for m in self.kernel_modules
            ],
            "sysctls": dict(self.sysctls),
            "kernelArgs": list(self.kernel_args),
            "reasons": list(self.reasons),
            "notes": list(self.notes),
            "doesNotWork": list(self.defects),
        }


@dataclass(frozen=True, slots=True)
class NvidiaExtension:
    """What an official extension name means in NVIDIA terms."""

    name: str  # "siderolabs/..."
    family: Family
    flavour: Flavour | None = None  # kernel modules only
    tier: Tier | None = None  # None for unsuffixed names (Talos < 1.8) and gdrdrv


@dataclass(frozen=True, slots=True)
class ResolvedGpus:
    """Requested PCI functions sorted into GPUs (with counts) and ignored non-GPU functions."""

    gpus: tuple[tuple[Gpu, int], ...]
    ignored: tuple[NvidiaFunction, ...]
    notes: tuple[str, ...]

    @property
    def has_nvswitch(self) -> bool:
        return any(function.kind == "nvswitch" for function in self.ignored)


# --- the device table -------------------------------------------------------------------------


def _data_rows(filename: str) -> list[dict[str, str]]:
    text = resources.files("schematic.data").joinpath(filename).read_text("utf-8")
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"), strict=True)) for line in lines[1:]]


@functools.cache
def _device_table() -> dict[str, Gpu]:
    return {
        row["device_id"]: Gpu(
            id=row["device_id"],
            name=row["name"],
            chip=row["chip"],
            architecture=row["architecture"],
            pciids_name=row["pciids_name"],
            first_open_driver=row["first_open_driver"] or None,
            source=row["source"],
        )
        for row in _data_rows("nvidia-devices.tsv")
    }


_FUNCTION_KINDS: dict[str, Literal["audio", "usb", "nvswitch"]] = {
    "audio": "audio",
    "usb": "usb",
    "nvswitch": "nvswitch",
}


@functools.cache
def _other_functions() -> dict[str, NvidiaFunction]:
    table: dict[str, NvidiaFunction] = {}
    for row in _data_rows("nvidia-other-functions.tsv"):
        kind = _FUNCTION_KINDS.get(row["kind"])
        if kind is None:
            raise ValueError(f"nvidia-other-functions.tsv: unknown kind {row['kind']!r}")
        table[row["device_id"]] = NvidiaFunction(id=row["device_id"], kind=kind, name=row["name"])
    return table


def all_gpus() -> tuple[Gpu, ...]:
    """Every GPU in the device table, in table order."""
    return tuple(_device_table().values())


_PCI_ID_RE = re.compile(
    r"\[?(?:(?:0x)?(?P<vendor>[0-9a-f]{4})[:\s])?(?:0x)?(?P<device>[0-9a-f]{4})\]?", re.IGNORECASE
)


def normalise_pci_id(text: str) -> str | None:
    """``10de:2bb5``, ``0x2bb5``, ``2BB5`` or ``[10de:2bb5]`` as ``10de:2bb5``; None if no ID.

    Raises UnknownDeviceError for a well-formed ID of another vendor.
    """
    match = _PCI_ID_RE.fullmatch(text.strip())
    if match is None:
        return None
    vendor = (match["vendor"] or NVIDIA_VENDOR).lower()
    if vendor != NVIDIA_VENDOR:
        raise UnknownDeviceError(f"{text.strip()}: vendor {vendor} is not NVIDIA ({NVIDIA_VENDOR})")
    return f"{vendor}:{match['device'].lower()}"


def describe_pci_function(pci_id: str) -> Gpu | NvidiaFunction | None:
    """The GPU or non-GPU NVIDIA function with this ID, or None if neither table knows it."""
    normal = normalise_pci_id(pci_id)
    if normal is None:
        return None
    return _device_table().get(normal) or _other_functions().get(normal)


def is_nvidia_display_function(
    vendor_id: str, class_id: str, subclass_id: str | None = None
) -> bool:
    """Whether a PCI function is an NVIDIA GPU: vendor 10de, class 0x0300 (VGA) or 0x0302 (3D).

    Takes ``class_id`` as a full class (``0x0302``, ``0302``) or, with ``subclass_id``, as the
    two halves talosctl reports (``0x03`` and ``0x02``).
    """
    vendor = vendor_id.strip().lower().removeprefix("0x")
    klass = class_id.strip().lower().removeprefix("0x")
    if subclass_id is not None:
        klass = klass.zfill(2) + subclass_id.strip().lower().removeprefix("0x").zfill(2)
    return vendor == NVIDIA_VENDOR and klass.zfill(4)[:4] in _DISPLAY_CLASSES


# --- lookup by name ---------------------------------------------------------------------------


def _words(text: str) -> tuple[str, ...]:
    return tuple(re.sub(r"[^0-9a-z.+]+", " ", text.casefold()).split())


def _aliases(gpu: Gpu) -> set[tuple[str, ...]]:
    names = {_words(gpu.name), _words(gpu.pciids_name)}
    bracket = re.search(r"\[(.+)\]", gpu.pciids_name)
    if bracket:
        names.add(_words(bracket[1]))
    # "NVIDIA L40S" and "Tesla T4" are also called "L40S" and "T4".
    for words in list(names):
        if len(words) > 1 and words[0] in ("nvidia", "tesla"):
            names.add(words[1:])
    return {words for words in names if words}


@functools.cache
def _name_index() -> tuple[tuple[Gpu, frozenset[tuple[str, ...]]], ...]:
    return tuple((gpu, frozenset(_aliases(gpu))) for gpu in _device_table().values())


def _contains(haystack: tuple[str, ...], needle: tuple[str, ...]) -> bool:
    size = len(needle)
    return any(haystack[i : i + size] == needle for i in range(len(haystack) - size + 1))


def _lookup_by_name(text: str) -> Gpu | None:
    query = _words(text)
    if not query:
        return None
    exact = [gpu for gpu, aliases in _name_index() if query in aliases]
    candidates = exact or [
        gpu for gpu, aliases in _name_index() if any(_contains(a, query) for a in aliases)
    ]
    if len(candidates) == 1:
        return candidates[0]
    if candidates:
        shown = ", ".join(f"{gpu.id} {gpu.name}" for gpu in candidates[:20])
        more = f" and {len(candidates) - 20} more" if len(candidates) > 20 else ""
        raise UnknownDeviceError(
            f"GPU name {text!r} is ambiguous: {shown}{more}; give one of the PCI IDs "
            "(`talosctl get pcidevices` or `lspci -nn -d 10de:` on the node shows it) or a "
            "longer name"
        )
    return None


# Jetson modules: integrated Tegra GPUs, which the desktop-driver extensions do not drive.
_JETSON = re.compile(r"\b(jetson|tegra|orin|xavier)\b", re.IGNORECASE)


# A line copied from a tool names the GPU too: `lspci -nn` ("NVIDIA Corporation GB100 [B200]
# [10de:2901] (rev a1)", the ID decides where names are shared), `lspci` without its name
# database ("NVIDIA Corporation Device 2bb5") and `nvidia-smi -L` ("GPU 0: NVIDIA H100 80GB HBM3
# (UUID: GPU-...)").
_LSPCI_ID = re.compile(r"\[(10de:[0-9a-fA-F]{4})\]")
_LSPCI_UNNAMED = re.compile(r"^(?:NVIDIA Corporation )?Device ([0-9a-fA-F]{4})$")
# Written to stay linear on hostile text: no two unbounded runs may compete for one character.
_SMI_LIST = re.compile(r"^GPU \d{1,3}: (?P<name>[^()]+) \(UUID: GPU-[0-9a-fA-F-]{1,64}\)$")
_REVISION = re.compile(r"\(rev [0-9a-fA-F]{2}\)$")


def _copied_from_a_tool(text: str) -> str:
    """The ID or name a pasted `lspci` or `nvidia-smi -L` line gives; other text as it is."""
    line = text.strip()
    if (revision := _REVISION.search(line)) is not None:
        line = line[: revision.start()].rstrip()
    if (listed := _SMI_LIST.match(line)) is not None:
        return str(listed["name"])
    ids: set[str] = {str(found).lower() for found in _LSPCI_ID.findall(line)}
    if len(ids) == 1:
        return ids.pop()
    if (unnamed := _LSPCI_UNNAMED.match(line)) is not None:
        return f"10de:{unnamed[1]}"
    return text


def lookup_gpu(id_or_name: str) -> Gpu:
    """A GPU by PCI ID (``10de:2bb5``, ``0x2bb5``, ``2BB5``), by name (``L40S``), or by a line
    copied from ``lspci -nn`` or ``nvidia-smi -L``."""
    id_or_name = _copied_from_a_tool(id_or_name)
    pci_id = normalise_pci_id(id_or_name)
    if pci_id is not None:
        found = describe_pci_function(pci_id)
        if isinstance(found, Gpu):
            return found
        if isinstance(found, NvidiaFunction):
            raise UnknownDeviceError(
                f"{pci_id} is an NVIDIA {found.kind} function ({found.name}), not a GPU"
            )
    # "A100" reads as a hex ID too; an ID no table knows may still be a name.
    by_name = _lookup_by_name(id_or_name)
    if by_name is not None:
        return by_name
    # Checked after the table, which lists a PCI Jetson (AGX Thor) among its GPUs.
    if _JETSON.search(id_or_name):
        raise NvidiaError(
            f"{id_or_name.strip()!r} is an NVIDIA Jetson (Tegra) module: its GPU is integrated in "
            "the SoC and driven by NVIDIA's L4T (JetPack) kernel, not by the open or proprietary "
            "desktop/data-centre modules the NVIDIA extensions ship, which drive discrete PCI "
            "GPUs only; no Talos extension drives it (see the metal-jetson-* profiles)",
            GpuRefusal.UNSUPPORTED_GPU,
        )
    what = f"PCI ID {pci_id}" if pci_id else f"GPU name {id_or_name!r}"
    raise UnknownDeviceError(
        f"{what} is not in the NVIDIA device table; give a known ID or name, or declare the "
        "GPU's architecture (e.g. architecture: Blackwell in a hardware profile)"
    )


def normalise_architecture(text: str) -> str:
    """An architecture name as the device table spells it (``ada`` → ``Ada Lovelace``)."""
    key = re.sub(r"[\s_-]+", "", text.casefold())
    spellings = {re.sub(r"\s+", "", name.casefold()): name for name in ARCHITECTURES}
    spellings |= {name.casefold(): name for name in _OLDER_THAN_FERMI}
    spellings["ada"] = "Ada Lovelace"
    if key not in spellings:
        raise NvidiaError(
            f"unknown GPU architecture {text!r}; known: {', '.join(ARCHITECTURES)}",
            GpuRefusal.SETTING,
        )
    return spellings[key]


def resolve_gpus(requests: Iterable[GpuRequest]) -> ResolvedGpus:
    """Look up requested functions: GPUs (merged, in first-seen order) and ignored non-GPUs."""
    counts: dict[str, int] = {}
    gpus: dict[str, Gpu] = {}
    ignored: dict[str, NvidiaFunction] = {}
    notes: list[str] = []
    for request in requests:
        if request.count < 1:
            raise NvidiaError(
                f"GPU {request.id}: count must be at least 1, not {request.count}",
                GpuRefusal.SETTING,
            )
        pci_id = normalise_pci_id(request.id)
        found = describe_pci_function(pci_id) if pci_id else None
        if isinstance(found, NvidiaFunction):
            if found.id not in ignored:
                notes.append(f"{found.id} ({found.name}) is not a GPU function; not counted")
            ignored[found.id] = found
            continue
        if found is None and request.architecture is not None and pci_id is not None:
            architecture = normalise_architecture(request.architecture)
            found = Gpu(
                id=pci_id,
                name=f"NVIDIA GPU {pci_id}",
                chip="",
                architecture=architecture,
                pciids_name="",
                source="declared in the hardware profile",
            )
            notes.append(
                f"{pci_id} is not in the device table; "
                f"using its declared architecture {architecture}"
            )
        elif found is None:
            found = lookup_gpu(request.id)
        elif request.architecture is not None:
            declared = normalise_architecture(request.architecture)
            if declared != found.architecture:
                notes.append(
                    f"{found.label}: the device table says {found.architecture}, not the "
                    f"declared {declared}; using the table"
                )
        gpus.setdefault(found.id, found)
        counts[found.id] = counts.get(found.id, 0) + request.count
    return ResolvedGpus(
        gpus=tuple((gpu, counts[gpu_id]) for gpu_id, gpu in gpus.items()),
        ignored=tuple(ignored.values()),
        notes=tuple(notes),
    )


def nvlink5_hgx_count(gpus: Iterable[tuple[Gpu, int]]) -> int:
    """How many of these GPUs are NVLink-5 HGX modules (B100 / B200 / B300 SXM)."""
    return sum(count for gpu, count in gpus if gpu.nvlink5_hgx)


def usual_architecture(gpus: Iterable[Gpu]) -> Literal["amd64", "arm64"]:
    """The CPU architecture these GPUs come with: arm64 for GB10 and Grace superchips."""
    return "arm64" if any(gpu.gb10 or gpu.grace for gpu in gpus) else "amd64"


# --- extension names --------------------------------------------------------------------------

_FAMILY_BASES: dict[str, tuple[Family, Flavour | None]] = {
    "nvidia-open-gpu-kernel-modules": ("kernel-modules", "open"),
    _PROPRIETARY_BASE: ("kernel-modules", "proprietary"),
    "nvidia-container-toolkit": ("container-toolkit", None),
    "nvidia-fabricmanager": ("fabric-manager", None),
}
_GDRDRV = "nvidia-gdrdrv-device"


def nvidia_extension(
    family: Family, *, flavour: Flavour | None = None, tier: Tier | None = None
) -> str:
    """The official extension name for a family (``tier=None``: the unsuffixed Talos < 1.8 name)."""
    if family == "gdrdrv":
        return f"siderolabs/{_GDRDRV}"
    if family == "kernel-modules" and flavour is None:
        raise ValueError("kernel-modules needs a flavour")
    wanted = (family, flavour if family == "kernel-modules" else None)
    base = next(base for base, kind in _FAMILY_BASES.items() if kind == wanted)
    return f"siderolabs/{base}" + (f"-{tier}" if tier else "")


def describe_nvidia_extension(name: str) -> NvidiaExtension | None:
    """Family, flavour and tier of an NVIDIA extension name; None for any other extension."""
    bare = name.strip().removeprefix("siderolabs/")
    if bare == _GDRDRV:
        return NvidiaExtension(name=f"siderolabs/{bare}", family="gdrdrv")
    tier: Tier | None = None
    base = bare
    for suffix in ("lts", "production"):
        if bare.endswith(f"-{suffix}"):
            base = bare.removesuffix(f"-{suffix}")
            tier = "lts" if suffix == "lts" else "production"
    if base not in _FAMILY_BASES:
        return None
    family, flavour = _FAMILY_BASES[base]
    return NvidiaExtension(name=f"siderolabs/{bare}", family=family, flavour=flavour, tier=tier)


# --- the decision -----------------------------------------------------------------------------


@functools.cache
def _inferred_minimum(gpu: Gpu) -> str | None:
    """First driver of an open-only part no driver README lists: the earliest of its kin."""
    table = _device_table().values()
    groups = (
        [other for other in table if other.grace] if gpu.grace else [],
        [other for other in table if gpu.chip and other.chip == gpu.chip],
        [other for other in table if other.architecture == gpu.architecture],
    )
    for group in groups:
        listed = [other.first_open_driver for other in group if other.first_open_driver]
        if listed:
            return min(listed, key=driver_key)
    return None


def _minimum_driver(gpu: Gpu) -> tuple[str | None, str]:
    """The driver a GPU needs at least, and where that figure comes from."""
    if not gpu.open_only and not gpu.gb10:
        # For Turing..Hopper the README listing lags real support by years: not a minimum.
        return None, ""
    if gpu.first_open_driver:
        return gpu.first_open_driver, "first driver that lists it"
    inferred = _inferred_minimum(gpu)
    if inferred is None:
        return None, ""
    return inferred, f"no driver lists it; assumed from its {gpu.chip or gpu.architecture} kin"


def _driver_refusal(gpu: Gpu, driver: str) -> str | None:
    """Why ``driver`` cannot drive ``gpu``, or None when it can."""
    if gpu.pre_turing and driver_key(driver)[0] > PRE_TURING_LAST_BRANCH:
        return (
            f"{driver} does not drive {gpu.label}: drivers after the {PRE_TURING_LAST_BRANCH} "
            "branch dropped Maxwell, Pascal and Volta"
        )
    minimum, origin = _minimum_driver(gpu)
    if minimum is not None and driver_key(driver) < driver_key(minimum):
        return f"{driver} does not know {gpu.label}: it needs {minimum} or newer ({origin})"
    return None


def _first_offering(base: str) -> TalosVersion | None:
    firsts = [
        TalosVersion.parse(row.first)
        for row in nvidia_rules.rules_table()
        if row.scope == "talos" and row.rule == "extension" and row.value == base
    ]
    return min(firsts) if firsts else None


def _verify(answer: nvidia_rules.RuleAnswer, notes: list[str]) -> None:
    """Record a rule's caveats: the sources disagree, or the release is past the table."""
    if answer.row.conflicting:
        note = f"verify on hardware ({answer.row.rule}): conflicting evidence: {answer.row.note}"
        if note not in notes:
            notes.append(note)
    if answer.fallback and answer.fallback not in notes:
        notes.append(answer.fallback)


def _gb10_flavours(
    gpu: Gpu, talos: TalosVersion, rules: ReleaseRules, notes: list[str]
) -> frozenset[Flavour]:
    answer = rules.gb10_flavour
    if answer is None or answer.value == "none":
        supported = [
            row
            for row in nvidia_rules.rules_table()
            if row.rule == "gb10-flavour" and row.scope == "talos" and row.value != "none"
        ]
        advice = ""
        if supported:
            first = min(supported, key=lambda row: TalosVersion.parse(row.first))
            # Advice about another release: that release's own answer.
            args = rules_for(TalosVersion.parse(first.first)).gb10_kernel_args
            advice = (
                f" works on Talos only from {first.first}, with the {first.value} modules"
                + (f" and kernel arg {args.value}" if args else "")
                + f"; upgrade Talos from {talos}"
            )
        caveat = (
            f" (conflicting evidence: {answer.row.note})"
            if answer and answer.row.conflicting
            else ""
        )
        raise NvidiaError(
            f"{gpu.id} ({gpu.name}, DGX Spark)"
            + (advice or f" has no NVIDIA support on Talos {talos}")
            + caveat,
            GpuRefusal.DRIVER,
        )
    if answer.value not in ("open", "proprietary"):
        raise ValueError(f"{nvidia_rules.RULES_FILE}: gb10-flavour {answer.value!r}")
    _verify(answer, notes)
    return frozenset({"open" if answer.value == "open" else "proprietary"})


def _flavours_for(
    gpu: Gpu, talos: TalosVersion, rules: ReleaseRules, notes: list[str]
) -> tuple[frozenset[Flavour], str]:
    """The module flavours that can drive a GPU on this Talos, and the rule behind them."""
    if gpu.architecture in _UNSUPPORTED:
        why = (
            "no published driver supports Rubin yet"
            if gpu.architecture == "Rubin"
            else "the drivers Talos ships dropped Kepler and older"
        )
        raise NvidiaError(
            f"{gpu.label} is a {gpu.architecture} GPU, which no NVIDIA extension on Talos can "
            f"drive ({why}); remove it from the node",
            GpuRefusal.UNSUPPORTED_GPU,
        )
    if gpu.gb10:
        flavours = _gb10_flavours(gpu, talos, rules, notes)
        args = rules.gb10_kernel_args
        return flavours, (
            f"{gpu.id} ({gpu.name}, DGX Spark): on Talos {talos.minor_line[0]}."
            f"{talos.minor_line[1]} it works with the {'/'.join(sorted(flavours))} modules"
            + (f" and kernel arg {args.value}" if args else "")
            + " (rules table)"
        )
    if gpu.open_only:
        chip = f" ({gpu.chip})" if gpu.chip else ""
        kind = "a Grace superchip GPU" if gpu.grace else f"{gpu.architecture}{chip}"
        return frozenset({"open"}), (
            f"{gpu.label} is {kind}: open kernel modules only (the proprietary ones load but "
            "find no device)"
        )
    if gpu.pre_turing:
        return frozenset({"proprietary"}), (
            f"{gpu.label} is {gpu.architecture}: no GSP, proprietary kernel modules only, "
            f"last driver branch {PRE_TURING_LAST_BRANCH}"
        )
    return frozenset({"open", "proprietary"}), (
        f"{gpu.label} is {gpu.architecture}: either flavour; open is NVIDIA's default since R560"
    )


def _tier_drivers(row: DriverRow) -> dict[Tier | None, str]:
    if row.naming == "unsuffixed":
        return {None: row.lts_driver}
    drivers: dict[Tier | None, str] = {"lts": row.lts_driver}
    if row.production_driver:
        drivers["production"] = row.production_driver
    return drivers


def _tier_label(tier: Tier | None, driver: str) -> str:
    return f"{tier} {driver}" if tier else f"the single driver {driver}"


def _first_talos_that_drives(gpus: Sequence[Gpu], flavour: Flavour) -> str:
    """Advice naming the oldest Talos release whose drivers know all these GPUs, if any."""
    for row in driver_table():
        offers = rules_for(row.last).offers
        if flavour == "proprietary" and not offers(_PROPRIETARY_BASE):
            continue
        for tier, driver in _tier_drivers(row).items():
            if all(_driver_refusal(gpu, driver) is None for gpu in gpus):
                return f"Talos {row.first} or newer ({_tier_label(tier, driver)})"
    return ""


def _choose_flavour(
    gpus: Sequence[Gpu],
    talos: TalosVersion,
    rules: ReleaseRules,
    wished: str,
    reasons: list[str],
    notes: list[str],
) -> Flavour:
    offered: set[Flavour] = {"open"}
    if rules.offers(_PROPRIETARY_BASE):
        offered.add("proprietary")
    proprietary_from = _first_offering(_PROPRIETARY_BASE)
    allowed: dict[str, frozenset[Flavour]] = {}
    for gpu in gpus:
        flavours, why = _flavours_for(gpu, talos, rules, notes)
        allowed[gpu.id] = flavours
        reasons.append(why)
    if wished in ("open", "proprietary"):
        unable = [gpu for gpu in gpus if wished not in allowed[gpu.id]]
        if unable:
            needs = "; ".join(
                f"{gpu.label} needs {' or '.join(sorted(allowed[gpu.id]))}" for gpu in unable
            )
            raise NvidiaError(
                f"flavour {wished} cannot drive every GPU: {needs}; set flavour to auto",
                GpuRefusal.FLAVOUR,
            )
        if wished not in offered:
            raise NvidiaError(
                f"Talos {talos} has no proprietary NVIDIA modules (they arrive in "
                f"{proprietary_from}); use flavour open or a newer Talos",
                GpuRefusal.NOT_OFFERED,
            )
        reasons.append(f"flavour {wished}: as asked, and every GPU supports it")
        return "open" if wished == "open" else "proprietary"
    common = frozenset.intersection(*allowed.values())
    if not common:
        groups = {
            flavour: [gpu.label for gpu in gpus if allowed[gpu.id] == frozenset({flavour})]
            for flavour in ("open", "proprietary")
        }
        needs = "; ".join(
            f"{', '.join(labels)} {'needs' if len(labels) == 1 else 'need'} {flavour}"
            for flavour, labels in groups.items()
        )
        raise NvidiaError(
            f"no NVIDIA kernel-module flavour drives every GPU on this node: {needs}; "
            "put these GPUs in different nodes (pools)",
            GpuRefusal.FLAVOUR,
        )
    usable = common & offered
    if not usable:
        raise NvidiaError(
            f"Talos {talos} has no proprietary NVIDIA modules (they arrive in "
            f"{proprietary_from}) and these GPUs need them; use Talos {proprietary_from} or newer",
            GpuRefusal.NOT_OFFERED,
        )
    if "open" in usable:
        reasons.append("flavour open: every GPU supports the open kernel modules")
        return "open"
    needing = [gpu.label for gpu in gpus if "open" not in allowed[gpu.id]]
    reasons.append(f"flavour proprietary: {', '.join(needing)} cannot use the open modules")
    return "proprietary"


def _choose_tier(
    gpus: Sequence[Gpu],
    talos: TalosVersion,
    row: DriverRow,
    flavour: Flavour,
    wished: str,
    reasons: list[str],
) -> tuple[Tier | None, str]:
    drivers = _tier_drivers(row)
    if row.naming == "unsuffixed":
        if wished == "production":
            raise NvidiaError(
                f"Talos {talos} has a single NVIDIA driver ({row.lts_driver}) with unsuffixed "
                "extensions, no production tier (tiers arrive in v1.8.0); set tier to auto or lts",
                GpuRefusal.NOT_OFFERED,
            )
    elif wished in ("lts", "production") and wished not in drivers:
        raise NvidiaError(
            f"Talos {talos} has no {wished} NVIDIA driver; set tier to auto", GpuRefusal.NOT_OFFERED
        )
    refusals = {
        tier: [why for gpu in gpus if (why := _driver_refusal(gpu, driver)) is not None]
        for tier, driver in drivers.items()
    }
    usable = [tier for tier in drivers if not refusals[tier]]
    if row.naming == "unsuffixed":
        if refusals[None]:
            advice = _first_talos_that_drives(gpus, flavour)
            raise NvidiaError(
                f"Talos {talos} ships only driver {row.lts_driver}: {'; '.join(refusals[None])}"
                + (f"; use {advice}" if advice else ""),
                GpuRefusal.DRIVER,
            )
        reasons.append(
            f"no tier: Talos {talos} ships a single NVIDIA driver ({row.lts_driver}) with "
            "unsuffixed extension names (tiers arrive in v1.8.0)"
        )
        return None, row.lts_driver
    if wished in ("lts", "production"):
        tier: Tier = "lts" if wished == "lts" else "production"
        if refusals[tier]:
            others = [other for other in usable if other != tier]
            advice = (
                f"set tier to {others[0]} ({drivers[others[0]]})"
                if others
                else f"use {_first_talos_that_drives(gpus, flavour) or 'other GPUs'}"
            )
            raise NvidiaError(
                f"tier {tier} on Talos {talos} cannot drive every GPU: driver "
                f"{'; '.join(refusals[tier])}; {advice}",
                GpuRefusal.DRIVER,
            )
        reasons.append(f"tier {tier}: as asked; driver {drivers[tier]}")
        return tier, drivers[tier]
    if not usable:
        advice = _first_talos_that_drives(gpus, flavour)
        details = "; ".join(f"{tier} {why}" for tier, whys in refusals.items() for why in whys)
        raise NvidiaError(
            f"no NVIDIA driver on Talos {talos} drives every GPU: {details}"
            + (f"; use {advice}" if advice else ""),
            GpuRefusal.DRIVER,
        )
    for tier_, whys in refusals.items():
        for why in whys:
            reasons.append(f"not {tier_}: {why}")
    best = preferred_tier({tier: drivers[tier] for tier in usable if tier is not None})
    chosen: Tier = "lts" if best == "lts" else "production"
    if len(usable) == 1:
        reasons.append(
            f"tier {chosen}: the only tier whose driver ({drivers[chosen]}) knows every GPU"
        )
    else:
        other: Tier = "production" if chosen == "lts" else "lts"
        reasons.append(
            f"tier {chosen}: driver {drivers[chosen]} is "
            + ("the same as " if drivers[chosen] == drivers[other] else "newer than ")
            + f"{other} {drivers[other]}"
            + (" (production on a tie)" if drivers[chosen] == drivers[other] else "")
        )
    return chosen, drivers[chosen]


def preferred_tier(drivers: Mapping[Tier, str]) -> Tier:
    """Of the tiers whose drivers drive every GPU, the one to use: the newest driver, and
    production when both tiers carry the same driver."""
    return max(drivers, key=lambda tier: (driver_key(drivers[tier]), tier == "production"))


def _check_settings(flavour: str, tier: str, arch: str) -> None:
    if flavour not in ("auto", "open", "proprietary"):
        raise NvidiaError(
            f"flavour must be auto, open or proprietary, not {flavour!r}", GpuRefusal.SETTING
        )
    if tier not in ("auto", "lts", "production"):
        raise NvidiaError(f"tier must be auto, lts or production, not {tier!r}", GpuRefusal.SETTING)
    if arch not in ("amd64", "arm64"):
        raise NvidiaError(f"architecture must be amd64 or arm64, not {arch!r}", GpuRefusal.SETTING)


def _driver_extensions(flavour: Flavour, tier: Tier | None, row: DriverRow) -> tuple[set[str], str]:
    """The kernel modules and the container toolkit of one tier, and the reason."""
    extensions = {
        nvidia_extension("kernel-modules", flavour=flavour, tier=tier),
        nvidia_extension("container-toolkit", tier=tier),
    }
    return extensions, (
        f"container toolkit {row.container_toolkit}"
        + (" of the same tier as the kernel modules" if tier else "")
    )


@dataclass(frozen=True)
class Fabric:
    """Whether a node runs the NVIDIA fabric manager, and whether its NVSwitches are NVLink-5."""

    manager: bool
    nvlink5: bool
    hgx_count: int  # NVLink-5 HGX GPUs (B100 / B200 / B300 SXM)
    inferred: bool  # NVSwitches not said, but implied by a full HGX board on bare metal


def fabric_of(gpus: Iterable[tuple[Gpu, int]], *, nvswitch: bool, passthrough: bool) -> Fabric:
    """The fabric manager runs on bare metal with NVSwitches, said (``nvswitch``) or implied by
    eight NVLink-5 HGX GPUs; a VM with passed-through GPUs leaves the switches to its host."""
    hgx_count = nvlink5_hgx_count(gpus)
    inferred = not nvswitch and not passthrough and hgx_count >= _HGX_GPU_COUNT
    manager = (nvswitch or inferred) and not passthrough
    return Fabric(manager, manager and hgx_count > 0, hgx_count, inferred)


def _fabric(
    resolved: ResolvedGpus, tier: Tier | None, passthrough: bool, nvswitch: bool, reasons: list[str]
) -> Fabric:
    """Whether the node runs the fabric manager, with the reasons the decision gives."""
    fabric = fabric_of(resolved.gpus, nvswitch=nvswitch, passthrough=passthrough)
    if fabric.inferred:
        reasons.append(
            f"NVSwitches assumed: {fabric.hgx_count} Blackwell SXM GPUs on bare metal sit on an "
            "HGX baseboard (set nvswitch to say so, or give fewer GPUs)"
        )
    if fabric.manager:
        reasons.append(
            "fabric manager"
            + (f" ({tier}, the modules' tier)" if tier else "")
            + ": bare metal with NVSwitches"
        )
    elif nvswitch:
        reasons.append("no fabric manager: the NVSwitches are managed by the host, not by a VM")
    return fabric


def _driver_modules(
    gpus: Sequence[Gpu],
    flavour: Flavour,
    driver: str,
    passthrough: bool,
    reasons: list[str],
    notes: list[str],
) -> list[KernelModule]:
    """The four NVIDIA modules in load order, with the parameters ``nvidia`` needs here."""
    parameters: list[str] = []
    if passthrough:
        parameters.append(_NVLINK_DISABLE)
        reasons.append(
            f"nvidia loads with {_NVLINK_DISABLE}: the GPUs are passed through to a VM, "
            "whose NVLink is not usable"
        )
    client = [gpu.label for gpu in gpus if gpu.client]
    unsupported = nvidia_rules.driver_rule("open-unsupported-gpus", driver)
    if flavour == "open" and client and unsupported is not None and unsupported.value:
        parameters.append(unsupported.value)
        kind = "is a GeForce or workstation GPU" if len(client) == 1 else "are such GPUs"
        reasons.append(
            f"nvidia loads with {unsupported.value}: {', '.join(client)} {kind}, and the open "
            f"modules of driver {driver} need it ({unsupported.row.note}); flavour proprietary "
            "is the other way"
        )
        _verify(unsupported, notes)
    return [
        KernelModule(name=name, parameters=tuple(parameters) if name == "nvidia" else ())
        for name in NVIDIA_MODULES
    ]


@dataclass(frozen=True)
class _Feature:
    """What one optional feature adds to the node."""

    extensions: tuple[str, ...] = ()
    modules: tuple[str, ...] = ()
    reason: str = ""


def _gdrdrv(flavour: Flavour, talos: TalosVersion, rules: ReleaseRules) -> _Feature:
    if flavour != "open":
        raise NvidiaError(
            "GPUDirect RDMA (nvidia-gdrdrv-device) needs the open kernel modules",
            GpuRefusal.NEEDS_OPEN,
        )
    if not rules.offers(_GDRDRV_BASE):
        raise NvidiaError(
            f"nvidia-gdrdrv-device arrives in Talos {_first_offering(_GDRDRV_BASE)}, not {talos}",
            GpuRefusal.NOT_OFFERED,
        )
    return _Feature(extensions=(nvidia_extension("gdrdrv"),), modules=("gdrdrv",))


def _gds(talos: TalosVersion, rules: ReleaseRules, notes: list[str]) -> _Feature:
    """GPUDirect Storage: the module every NVIDIA kernel-module package carries from 1.14."""
    module = rules.gds_module
    if module is None:
        first = next(
            (row.first for row in nvidia_rules.rules_table() if row.rule == "gds-module"), None
        )
        raise NvidiaError(
            f"GPUDirect Storage: Talos {talos} has no nvidia-fs module"
            + (
                f" (it arrives in {first}, in the NVIDIA kernel-module extensions)" if first else ""
            ),
            GpuRefusal.NOT_OFFERED,
        )
    _verify(module, notes)
    return _Feature(
        modules=(module.value,),
        reason=f"GPUDirect Storage (as asked): module {module.value}; {module.row.note}",
    )


def _peermem(flavour: Flavour) -> _Feature:
    if flavour != "open":
        raise NvidiaError(
            "nvidia_peermem (GPUDirect RDMA for RDMA NICs) ships with the open kernel "
            "modules; use flavour open",
            GpuRefusal.NEEDS_OPEN,
        )
    return _Feature(
        modules=("nvidia_peermem",),
        reason="nvidia_peermem: RDMA NICs read and write GPU memory (as asked; ships with the "
        "open modules)",
    )


def _nvlink5(rules: ReleaseRules, notes: list[str]) -> _Feature:
    answer = rules.nvlink5_kernel_modules
    if answer is None:
        return _Feature()
    _verify(answer, notes)
    return _Feature(
        modules=tuple(answer.value.split()),
        reason=f"{answer.value}: NVLink-5 (Blackwell HGX); {answer.row.note}",
    )


def _sysctls(talos: TalosVersion, reasons: list[str]) -> dict[str, str]:
    if talos.minor_line > BPF_JIT_HARDEN_UNTIL:
        return {}
    reasons.append(f"sysctl {BPF_JIT_HARDEN_SYSCTL}=1: needed on Talos 1.12 and older")
    return {BPF_JIT_HARDEN_SYSCTL: "1"}


def _kernel_args(
    gpus: Sequence[Gpu], rules: ReleaseRules, reasons: list[str], notes: list[str]
) -> tuple[str, ...]:
    gb10_args = rules.gb10_kernel_args
    if gb10_args is None or not any(gpu.gb10 for gpu in gpus):
        return ()
    reasons.append(f"kernel arg {gb10_args.value}: GB10 on Talos: {gb10_args.row.note}")
    _verify(gb10_args, notes)
    return tuple(gb10_args.value.split())


def _defects(
    gpus: Sequence[Gpu], talos: TalosVersion, rules: ReleaseRules, notes: list[str]
) -> tuple[str, ...]:
    """What will not work on this release whatever the schematic holds."""
    gb10_cuda = rules.gb10_cuda
    if gb10_cuda is None or gb10_cuda.value != "broken" or not any(g.gb10 for g in gpus):
        return ()
    _verify(gb10_cuda, notes)
    return (f"CUDA cannot start on GB10 (DGX Spark) on Talos {talos}: {gb10_cuda.row.note}",)


def decide(
    gpus: Sequence[GpuRequest],
    talos: str | TalosVersion,
    *,
    arch: str = "amd64",
    passthrough: bool = True,
    nvswitch: bool = False,
    flavour: str = "auto",
    tier: str = "auto",
    gdrdrv: bool = False,
    gds: bool = False,
    peermem: bool = False,
    drivers: DriverTableMatch | None = None,
    rules: ReleaseRules | None = None,
) -> NvidiaDecision | None:
    """The NVIDIA extensions, modules and settings for a node; None when it has no NVIDIA GPU.

    ``passthrough``: the node is a VM (KubeVirt) with the GPUs passed through; ``nvswitch``:
    bare metal with NVSwitches (fabric manager; on NVLink-5 also ``ib_umad``, and eight
    Blackwell HGX GPUs on bare metal imply it); ``gdrdrv``: add GPUDirect RDMA (open only);
    ``gds``: GPUDirect Storage (module ``nvidia_fs``, from Talos 1.14); ``peermem``: load
    ``nvidia_peermem`` (RDMA NICs reading GPU memory; open only). ``drivers`` and ``rules`` are
    the release's driver-table row and rules-table answers when the caller resolved them
    already (planning's ``Release``).
    Raises NvidiaError, whose ``refusal`` says why, for a combination no driver on that Talos
    can drive.
    """
    _check_settings(flavour, tier, arch)
    version = TalosVersion.of(talos)
    resolved = resolve_gpus(gpus)
    if not resolved.gpus:
        return None
    found = tuple(gpu for gpu, _ in resolved.gpus)
    match = drivers or driver_row(version)
    answers = rules or rules_for(version)
    reasons = [*resolved.notes, *([match.note] if match.note else [])]
    notes: list[str] = []
    if arch != "arm64" and any(gpu.gb10 for gpu in found):
        raise NvidiaError(
            "GB10 (DGX Spark) is part of an arm64 system; set the architecture to arm64",
            GpuRefusal.SETTING,
        )
    chosen_flavour = _choose_flavour(found, version, answers, flavour, reasons, notes)
    chosen_tier, driver = _choose_tier(found, version, match.row, chosen_flavour, tier, reasons)
    extensions, toolkit_reason = _driver_extensions(chosen_flavour, chosen_tier, match.row)
    reasons.append(toolkit_reason)
    fabric = _fabric(resolved, chosen_tier, passthrough, nvswitch, reasons)
    if fabric.manager:
        extensions.add(nvidia_extension("fabric-manager", tier=chosen_tier))
    modules = _driver_modules(found, chosen_flavour, driver, passthrough, reasons, notes)
    features = [
        _gdrdrv(chosen_flavour, version, answers) if gdrdrv else None,
        _gds(version, answers, notes) if gds else None,
        _peermem(chosen_flavour) if peermem else None,
        _nvlink5(answers, notes) if fabric.nvlink5 else None,
    ]
    for feature in features:
        if feature is None:
            continue
        extensions.update(feature.extensions)
        modules += [KernelModule(name=name) for name in feature.modules]
        if feature.reason:
            reasons.append(feature.reason)
    sysctls = _sysctls(version, reasons)
    kernel_args = _kernel_args(found, answers, reasons, notes)
    defects = _defects(found, version, answers, notes)
    return NvidiaDecision(
        gpus=found,
        talos=str(version),
        flavour=chosen_flavour,
        tier=chosen_tier,
        driver=driver,
        container_toolkit=match.row.container_toolkit,
        extensions=tuple(sorted(extensions)),
        kernel_modules=tuple(modules),
        sysctls=sysctls,
        kernel_args=kernel_args,
        reasons=tuple(reasons),
        notes=tuple(notes),
        defects=defects,
    )
