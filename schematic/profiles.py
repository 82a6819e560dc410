"""Hardware profiles: one YAML file per machine kind, shipped in `profiles/` or the user's own.

A profile says what the node is (platform, CPU architecture and vendor, GPUs, NVSwitches) and
what it needs beyond what that implies (extra extensions and kernel args). Unknown keys are
errors, as in the schematics the profiles become.

What a profile file may say is defined by the pydantic model in :mod:`schematic.documents`,
which also gives the error messages and the JSON Schema. Profiles of the usual shape (strings,
lists of strings, whole numbers, no unknown keys) are read here without it, because defining a
pydantic model costs more start-up time than the rest of `generate`; anything else goes through
the model. The value both produce is the same :class:`HardwareProfile` (a test checks that on
generated inputs).
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

import yaml

from schematic.errors import NvidiaError, ProfileError

__all__ = [
    "VM_PLATFORMS",
    "GpuSpec",
    "HardwareProfile",
    "list_profiles",
    "load_profile",
    "profile_from_mapping",
    "profile_json_schema",
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
]
Architecture = Literal["amd64", "arm64"]
CpuVendor = Literal["intel", "amd", "arm"]
# Hypervisors that hand whole GPUs to the guest through VFIO; NVLink does not work there.
VM_PLATFORMS = frozenset({"kubevirt", "proxmox"})
_PCI_ID_RE = re.compile(r"(?:(?:0x)?([0-9a-f]{4}):)?(?:0x)?([0-9a-f]{4})", re.IGNORECASE)
_PROFILE_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")


@dataclass(frozen=True, kw_only=True)
class GpuSpec:
    """GPUs of one kind in the machine: PCI ID, how many, and the architecture if unlisted."""

    id: str
    count: int = 1
    architecture: str | None = None

    @property
    def is_nvidia(self) -> bool:
        return self.id.startswith("10de:")


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
    extensions: tuple[str, ...] = ()
    kernel_args: tuple[str, ...] = ()

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
        document["extensions"] = list(self.extensions)
        document["kernelArgs"] = list(self.kernel_args)
        return document


# --- the checks beyond types: shared by the model and the fast reader ---------------------------
# Each raises ValueError with the message a user sees (the model prefixes the key).


def normal_pci_id(value: str) -> str:
    """``10de:2BB5``, ``0x2bb5`` or ``2bb5`` as ``10de:2bb5`` (vendor 10de when omitted)."""
    match = _PCI_ID_RE.fullmatch(value.strip())
    if match is None:
        raise ValueError(f"{value!r} is not a PCI ID like 10de:2bb5")
    vendor = (match[1] or "10de").lower()
    return f"{vendor}:{match[2].lower()}"


def known_architecture(value: str) -> str:
    from schematic.nvidia import normalise_architecture

    try:
        return normalise_architecture(value)
    except NvidiaError as err:
        raise ValueError(str(err)) from None


def check_gpu(gpu: GpuSpec) -> None:
    """An NVIDIA ID must be a GPU, and one the device table lacks needs its architecture."""
    if not gpu.is_nvidia:
        return
    from schematic.nvidia import Gpu, NvidiaFunction, describe_pci_function

    found = describe_pci_function(gpu.id)
    if isinstance(found, NvidiaFunction):
        hint = "set nvswitch: true instead" if found.kind == "nvswitch" else "leave it out"
        raise ValueError(f"{gpu.id} is an NVIDIA {found.kind} function, not a GPU; {hint}")
    if not isinstance(found, Gpu) and gpu.architecture is None:
        raise ValueError(
            f"{gpu.id} is not in the NVIDIA device table; add its architecture "
            "(e.g. architecture: Blackwell)"
        )


def check_profile_name(value: str) -> str:
    if not _PROFILE_NAME.fullmatch(value):
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


# --- the fast reader ------------------------------------------------------------------------------


class UnusualShapeError(Exception):
    """The fast reader's "ask the model": an input outside the shapes it reads itself."""


def plain_text(value: object) -> str:
    if type(value) is not str:
        raise UnusualShapeError
    return value


def plain_texts(value: object) -> tuple[str, ...]:
    if type(value) is not list or any(type(item) is not str for item in value):
        raise UnusualShapeError
    return tuple(value)


def plain_choice(value: object, choices: tuple[str, ...]) -> Any:
    if type(value) is not str or value not in choices:
        raise UnusualShapeError
    return value


def plain_keys(data: object, allowed: frozenset[str]) -> dict[str, Any]:
    if type(data) is not dict or not allowed.issuperset(data):
        raise UnusualShapeError
    return data


_PROFILE_KEYS = frozenset(
    {
        "name",
        "aliases",
        "description",
        "platform",
        "architecture",
        "cpuVendor",
        "gpus",
        "nvswitch",
        "extensions",
        "kernelArgs",
    }
)
_GPU_KEYS = frozenset({"id", "count", "architecture"})
_COUNT_TEXT = re.compile(r"[1-9][0-9]{0,5}")
_PLATFORMS: tuple[str, ...] = get_args(Platform)
_ARCHITECTURES: tuple[str, ...] = get_args(Architecture)
_CPU_VENDORS: tuple[str, ...] = get_args(CpuVendor)


def _plain_gpu(data: object) -> GpuSpec:
    gpu = plain_keys(data, _GPU_KEYS)
    count = gpu.get("count", 1)
    if type(count) is str and _COUNT_TEXT.fullmatch(count):
        count = int(count)  # profile files type only null and booleans: `count: 2` is text
    if type(count) is not int or count < 1:
        raise UnusualShapeError
    architecture = gpu.get("architecture")
    if "id" not in gpu:
        raise UnusualShapeError
    spec = GpuSpec(
        id=normal_pci_id(plain_text(gpu["id"])),
        count=count,
        architecture=None if architecture is None else known_architecture(plain_text(architecture)),
    )
    check_gpu(spec)
    return spec


def _plain_profile(data: object) -> HardwareProfile:
    """The profile, if ``data`` has the usual shape and is valid.

    Otherwise raises UnusualShapeError or ValueError, and the model is asked.
    """
    doc = plain_keys(data, _PROFILE_KEYS)
    if "name" not in doc or "platform" not in doc:
        raise UnusualShapeError
    vendor = doc.get("cpuVendor")
    nvswitch = doc.get("nvswitch", False)
    gpus = doc.get("gpus", [])
    if type(nvswitch) is not bool or type(gpus) is not list:
        raise UnusualShapeError
    profile = HardwareProfile(
        name=check_profile_name(plain_text(doc["name"])),
        aliases=plain_texts(doc.get("aliases", [])),
        description=plain_text(doc.get("description", "")),
        platform=plain_choice(doc["platform"], _PLATFORMS),
        architecture=plain_choice(doc.get("architecture", "amd64"), _ARCHITECTURES),
        cpu_vendor=None if vendor is None else plain_choice(vendor, _CPU_VENDORS),
        gpus=tuple(_plain_gpu(gpu) for gpu in gpus),
        nvswitch=nvswitch,
        extensions=check_no_blank_items(plain_texts(doc.get("extensions", []))),
        kernel_args=check_no_blank_items(plain_texts(doc.get("kernelArgs", []))),
    )
    check_profile(profile)
    return profile


def profile_from_mapping(data: Mapping[str, Any], source: str) -> HardwareProfile:
    """Validate a profile given as a mapping (e.g. a `hardware:` block); errors name ``source``."""
    if not isinstance(data, Mapping):
        raise ProfileError(f"{source}: a hardware profile must be a mapping")
    try:
        return _plain_profile(data)
    except (UnusualShapeError, ValueError):
        pass
    # The model either accepts what the fast reader would not, or says what is wrong.
    from schematic.documents import validate_profile

    return validate_profile(dict(data), source)


# --- loading ----------------------------------------------------------------------------------


class _ProfileLoader(yaml.SafeLoader):
    """YAML where only null and true/false are typed: `id: 2330` and `on` stay text."""


_ProfileLoader.yaml_implicit_resolvers = {}
_ProfileLoader.add_implicit_resolver(
    "tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""]
)
_ProfileLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def _parse(text: str, source: str, default_name: str) -> HardwareProfile:
    try:
        data = yaml.load(text, Loader=_ProfileLoader)
    except yaml.YAMLError as err:
        raise ProfileError(f"{source}: not valid YAML: {err}") from None
    if not isinstance(data, dict):
        raise ProfileError(f"{source}: a hardware profile must be a YAML mapping")
    data.setdefault("name", default_name)
    return profile_from_mapping(data, source)


def _shipped_root() -> Path:
    # The shipped profiles live at the top of the source tree (profiles/); installed, they are
    # the package data of `schematic.shipped_profiles`.
    import importlib.resources

    root = Path(str(importlib.resources.files("schematic.shipped_profiles")))
    if not root.is_dir():
        raise ProfileError(f"the shipped hardware profiles are missing (looked in {root})")
    return root


def _shipped() -> dict[str, Path]:
    return {
        entry.stem: entry
        for entry in sorted(_shipped_root().iterdir())
        if entry.suffix in (".yaml", ".yml")
    }


def _user_files(extra_dirs: Iterable[Path]) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for directory in extra_dirs:
        if not directory.is_dir():
            raise ProfileError(f"{directory}: not a directory of hardware profiles")
        for path in sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")]):
            # The first directory given wins, so a user can shadow a shipped profile.
            found.setdefault(path.stem, path)
    return found


def _read_path(path: Path) -> HardwareProfile:
    try:
        text = path.read_text("utf-8")
    except OSError as err:
        raise ProfileError(f"{path}: cannot read: {err.strerror}") from None
    return _parse(text, str(path), path.stem)


def load_profile(name_or_path: str, extra_dirs: Sequence[Path] = ()) -> HardwareProfile:
    """A profile by file path, or by name from ``extra_dirs`` (first) and the shipped set."""
    looks_like_path = "/" in name_or_path or name_or_path.endswith((".yaml", ".yml"))
    if looks_like_path or Path(name_or_path).is_file():
        return _read_path(Path(name_or_path))
    user = _user_files(extra_dirs)
    if name_or_path in user:
        return _read_path(user[name_or_path])
    shipped = _shipped()
    stem = name_or_path if name_or_path in shipped else _shipped_aliases().get(name_or_path)
    if stem is not None:
        entry = shipped[stem]
        return _parse(entry.read_text("utf-8"), f"profiles/{entry.name}", stem)
    known = sorted({*user, *shipped, *_shipped_aliases()})
    close = difflib.get_close_matches(name_or_path, known, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    listed = ", ".join(sorted({*user, *shipped}))
    raise ProfileError(f"no hardware profile named {name_or_path!r}; known: {listed}{hint}")


@functools.cache
def _shipped_aliases() -> dict[str, str]:
    """Alias → file stem for the shipped profiles.

    Read from each file's one-line ``aliases: [...]`` rather than by loading every profile: a
    lookup by alias should not cost a parse and validation of the whole set (a test checks the
    two agree).
    """
    aliases: dict[str, str] = {}
    for stem, entry in _shipped().items():
        match = _ALIASES_LINE.search(entry.read_text("utf-8"))
        if match:
            for alias in match[1].split(","):
                if alias.strip():
                    aliases.setdefault(alias.strip(), stem)
    return aliases


_ALIASES_LINE = re.compile(r"^aliases: \[([^\]]*)\]$", re.MULTILINE)


def list_profiles(extra_dirs: Sequence[Path] = ()) -> list[HardwareProfile]:
    """Every profile: the user's directories shadow shipped profiles of the same name."""
    user = _user_files(extra_dirs)
    profiles = {name: _read_path(path) for name, path in user.items()}
    for name, entry in _shipped().items():
        if name not in profiles:
            profiles[name] = _parse(entry.read_text("utf-8"), f"profiles/{entry.name}", name)
    return [profiles[name] for name in sorted(profiles)]


def profile_json_schema() -> dict[str, Any]:
    """JSON Schema of a hardware profile file, for editors."""
    from schematic.documents import profile_json_schema as schema

    return schema()
