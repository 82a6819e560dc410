"""What a hardware profile is once read, and the checks both readers share.

A profile says what the node is (platform, CPU architecture and vendor, GPUs, NVSwitches) and
what it needs beyond what that implies (extra extensions and kernel args). The readers are
:mod:`schematic.inputs.profiles` (the usual shape) and :mod:`schematic.inputs.documents` (the
pydantic model, for everything else); both build a :class:`HardwareProfile` with the checks here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from schematic.errors import NvidiaError
from schematic.facts.media import ImageOptions

__all__ = [
    "MAX_GPUS",
    "PCI_ID",
    "PROFILE_NAME",
    "VM_PLATFORMS",
    "GpuDirect",
    "GpuSpec",
    "HardwareProfile",
    "check_gpu",
    "check_no_blank_items",
    "check_profile",
    "check_profile_name",
    "known_architecture",
    "normal_pci_id",
]

Platform = Literal[
    "metal",
    "kubevirt",
    "proxmox",
    "nocloud",
    "openstack",
    "vmware",
    "aws",
    "azure",
    "gcp",
    "hcloud",
    "digital-ocean",
    "equinixMetal",
    "exoscale",
    "oracle",
    "scaleway",
    "upcloud",
    "vultr",
    "akamai",
    "cloudstack",
    "opennebula",
    "alibabacloud",
]
Architecture = Literal["amd64", "arm64"]
CpuVendor = Literal["intel", "amd", "arm"]
# Hypervisors that hand whole GPUs to the guest through VFIO; NVLink does not work there.
VM_PLATFORMS = frozenset({"kubevirt", "proxmox"})
# Hex digits in either case, written out (no IGNORECASE): the JSON Schema uses the same text.
PCI_ID = re.compile(r"(?:(?:0[xX])?([0-9a-fA-F]{4}):)?(?:0[xX])?([0-9a-fA-F]{4})")
PROFILE_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")


@dataclass(frozen=True, kw_only=True)
class GpuSpec:
    """GPUs of one kind in the machine: PCI ID, how many, and the architecture if unlisted."""

    id: str
    count: int = 1
    architecture: str | None = None

    @property
    def is_nvidia(self) -> bool:
        from schematic.facts.nvidia import NVIDIA_VENDOR

        return self.id.startswith(f"{NVIDIA_VENDOR}:")


@dataclass(frozen=True, kw_only=True)
class GpuDirect:
    """A profile's GPUDirect defaults (``nvidia: {gdrdrv, gds, peermem}``): what the machine's
    NICs and storage are for. The cluster file's ``nvidia`` (cluster-wide, then per pool)
    overrides each one; None leaves it to them."""

    gdrdrv: bool | None = None
    gds: bool | None = None
    peermem: bool | None = None

    def as_document(self) -> dict[str, bool]:
        keys = {"gdrdrv": self.gdrdrv, "gds": self.gds, "peermem": self.peermem}
        return {key: value for key, value in keys.items() if value is not None}


@dataclass(frozen=True, kw_only=True)
class HardwareProfile:
    """One kind of machine, as a Talos node sees it."""

    name: str
    aliases: tuple[str, ...] = ()
    description: str = ""
    platform: Platform
    architecture: Architecture = "amd64"
    cpu_vendor: CpuVendor | None = None
    gpus: tuple[GpuSpec, ...] = ()
    nvswitch: bool = False
    gpudirect: GpuDirect = field(default_factory=GpuDirect)
    extensions: tuple[str, ...] = ()
    kernel_args: tuple[str, ...] = ()
    # SecureBoot, overlay, META, bootloader, disk sector size (a pool may override each).
    media: ImageOptions = field(default_factory=ImageOptions)

    @property
    def passthrough(self) -> bool:
        """The node is a VM whose GPUs are passed through (KubeVirt, Proxmox)."""
        return self.platform in VM_PLATFORMS

    @property
    def nvidia_gpus(self) -> tuple[GpuSpec, ...]:
        return tuple(gpu for gpu in self.gpus if gpu.is_nvidia)

    def as_document(self) -> dict[str, Any]:
        """The profile as a file would say it (JSON-compatible; an unset cpuVendor left out)."""
        document: dict[str, Any] = {
            "name": self.name,
            "aliases": list(self.aliases),
            "description": self.description,
            "platform": self.platform,
            "architecture": self.architecture,
        }
        if self.cpu_vendor is not None:
            document["cpuVendor"] = self.cpu_vendor
        document["gpus"] = [
            {"id": gpu.id, "count": gpu.count}
            | ({} if gpu.architecture is None else {"architecture": gpu.architecture})
            for gpu in self.gpus
        ]
        document["nvswitch"] = self.nvswitch
        if self.gpudirect.as_document():
            document["nvidia"] = self.gpudirect.as_document()
        document["extensions"] = list(self.extensions)
        document["kernelArgs"] = list(self.kernel_args)
        document.update(self.media.as_document())
        return document


# --- the checks beyond types: shared by the model and the fast reader ---------------------------
# Each raises ValueError with the message a user sees (the model prefixes the key).


def normal_pci_id(value: str) -> str:
    """``10de:2BB5``, ``0x2bb5`` or ``2bb5`` as ``10de:2bb5`` (vendor 10de when omitted)."""
    match = PCI_ID.fullmatch(value.strip())
    if match is None:
        raise ValueError(f"{value!r} is not a PCI ID like 10de:2bb5")
    from schematic.facts.nvidia import NVIDIA_VENDOR

    vendor = (match[1] or NVIDIA_VENDOR).lower()
    return f"{vendor}:{match[2].lower()}"


def known_architecture(value: str) -> str:
    from schematic.facts.nvidia import normalise_architecture

    try:
        return normalise_architecture(value)
    except NvidiaError as err:
        raise ValueError(str(err)) from None


# GPUs one machine may hold: the largest servers carry 16 (HGX 2), racks are many machines. The
# cap keeps a typo (count: 1000000) from rendering a million-entry gpus list.
MAX_GPUS = 64


def check_gpu(gpu: GpuSpec) -> None:
    """An NVIDIA ID must be a GPU, and one the device table lacks needs its architecture."""
    check_gpu_count(gpu.count)
    if not gpu.is_nvidia:
        return
    from schematic.facts.nvidia import Gpu, NvidiaFunction, describe_pci_function

    found = describe_pci_function(gpu.id)
    if isinstance(found, NvidiaFunction):
        hint = "set nvswitch: true instead" if found.kind == "nvswitch" else "leave it out"
        raise ValueError(f"{gpu.id} is an NVIDIA {found.kind} function, not a GPU; {hint}")
    if not isinstance(found, Gpu) and gpu.architecture is None:
        raise ValueError(
            f"{gpu.id} is not in the NVIDIA device table; add its architecture "
            "(e.g. architecture: Blackwell)"
        )


def check_gpu_count(count: int, what: str = "count") -> None:
    if count > MAX_GPUS:
        shown = str(count) if count < 10**12 else f"{str(count)[:6]}… ({len(str(count))} digits)"
        raise ValueError(
            f"{what} {shown}: no machine holds that many GPUs; a profile describes one machine "
            f"(at most {MAX_GPUS} GPUs), and a pool's replicas say how many machines"
        )


def check_profile_name(value: str) -> str:
    if not PROFILE_NAME.fullmatch(value):
        raise ValueError("use lowercase letters, digits, '.', '_' and '-'")
    return value


def check_no_blank_items(value: tuple[str, ...]) -> tuple[str, ...]:
    if any(not item.strip() for item in value):
        raise ValueError("items must not be empty")
    return value


def check_profile(profile: HardwareProfile) -> None:
    """What the keys say must fit together."""
    if profile.architecture == "arm64" and profile.cpu_vendor in ("intel", "amd"):
        raise ValueError(f"cpuVendor {profile.cpu_vendor} does not make arm64 CPUs")
    if profile.architecture == "amd64" and profile.cpu_vendor == "arm":
        raise ValueError("cpuVendor arm with architecture amd64; set architecture: arm64")
    if profile.nvswitch and not any(gpu.is_nvidia for gpu in profile.gpus):
        raise ValueError("nvswitch: true needs NVIDIA GPUs in gpus")
    if profile.gpudirect.as_document() and not any(gpu.is_nvidia for gpu in profile.gpus):
        raise ValueError("nvidia (gdrdrv, gds, peermem) needs NVIDIA GPUs in gpus")
    check_gpu_count(sum(gpu.count for gpu in profile.gpus), "gpus: in all")


# --- the fast reader ------------------------------------------------------------------------------
