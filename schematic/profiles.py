"""Hardware profiles: one YAML file per machine kind, shipped in `profiles/` or the user's own.

A profile says what the node is (platform, CPU architecture and vendor, GPUs, NVSwitches) and
what it needs beyond what that implies (extra extensions and kernel args). Unknown keys are
errors, as in the schematics the profiles become.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

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
# Hypervisors that hand whole GPUs to the guest through VFIO; NVLink does not work there.
VM_PLATFORMS = frozenset({"kubevirt", "proxmox"})
_PCI_ID_RE = re.compile(r"(?:(?:0x)?([0-9a-f]{4}):)?(?:0x)?([0-9a-f]{4})", re.IGNORECASE)


class GpuSpec(BaseModel):
    """GPUs of one kind in the machine: PCI ID, how many, and the architecture if unlisted."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    id: str = Field(description="PCI vendor:device ID, e.g. 10de:2bb5 (vendor 10de if omitted)")
    count: int = Field(default=1, ge=1, description="how many of these GPUs the machine holds")
    architecture: str | None = Field(
        default=None,
        description="GPU architecture (e.g. Blackwell), needed only for IDs the device table lacks",
    )

    @field_validator("id", mode="before")
    @classmethod
    def _id_is_text(cls, value: object) -> object:
        if isinstance(value, int) and not isinstance(value, bool):
            raise ValueError("write the PCI ID as a quoted string, e.g. '10de:2330'")
        return value

    @field_validator("id")
    @classmethod
    def _normal_id(cls, value: str) -> str:
        match = _PCI_ID_RE.fullmatch(value.strip())
        if match is None:
            raise ValueError(f"{value!r} is not a PCI ID like 10de:2bb5")
        vendor = (match[1] or "10de").lower()
        return f"{vendor}:{match[2].lower()}"

    @field_validator("architecture")
    @classmethod
    def _known_architecture(cls, value: str | None) -> str | None:
        if value is None:
            return None
        from schematic.nvidia import normalise_architecture

        try:
            return normalise_architecture(value)
        except NvidiaError as err:
            raise ValueError(str(err)) from None

    @model_validator(mode="after")
    def _known_gpu(self) -> GpuSpec:
        if not self.is_nvidia:
            return self
        from schematic.nvidia import Gpu, NvidiaFunction, describe_pci_function

        found = describe_pci_function(self.id)
        if isinstance(found, NvidiaFunction):
            hint = "set nvswitch: true instead" if found.kind == "nvswitch" else "leave it out"
            raise ValueError(f"{self.id} is an NVIDIA {found.kind} function, not a GPU; {hint}")
        if not isinstance(found, Gpu) and self.architecture is None:
            raise ValueError(
                f"{self.id} is not in the NVIDIA device table; add its architecture "
                "(e.g. architecture: Blackwell)"
            )
        return self

    @property
    def is_nvidia(self) -> bool:
        return self.id.startswith("10de:")


class HardwareProfile(BaseModel):
    """One kind of machine, as a Talos node sees it."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, defer_build=True)

    name: str = Field(description="profile name; shipped profiles are named after their file")
    aliases: tuple[str, ...] = Field(
        default=(), description="other names the profile answers to (e.g. without 'kubevirt-')"
    )
    description: str = ""
    platform: Platform = Field(description="Talos platform the node boots as (kubevirt: a VM)")
    architecture: Literal["amd64", "arm64"] = "amd64"
    cpu_vendor: Literal["intel", "amd", "arm"] | None = Field(default=None, alias="cpuVendor")
    gpus: tuple[GpuSpec, ...] = ()
    nvswitch: bool = Field(
        default=False, description="bare metal with NVSwitches (HGX / DGX): needs fabric manager"
    )
    extensions: tuple[str, ...] = Field(
        default=(), description="official extensions to add, e.g. siderolabs/drbd"
    )
    kernel_args: tuple[str, ...] = Field(default=(), alias="kernelArgs")

    @field_validator("name")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", value):
            raise ValueError("use lowercase letters, digits, '.', '_' and '-'")
        return value

    @field_validator("extensions", "kernel_args")
    @classmethod
    def _no_blank_items(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if any(not item.strip() for item in value):
            raise ValueError("items must not be empty")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> HardwareProfile:
        if self.architecture == "arm64" and self.cpu_vendor in ("intel", "amd"):
            raise ValueError(f"cpuVendor {self.cpu_vendor} does not make arm64 CPUs")
        if self.architecture == "amd64" and self.cpu_vendor == "arm":
            raise ValueError("cpuVendor arm with architecture amd64; set architecture: arm64")
        if self.nvswitch and not any(gpu.is_nvidia for gpu in self.gpus):
            raise ValueError("nvswitch: true needs NVIDIA GPUs in gpus")
        return self

    @property
    def passthrough(self) -> bool:
        """The node is a VM whose GPUs are passed through (KubeVirt, Proxmox)."""
        return self.platform in VM_PLATFORMS

    @property
    def nvidia_gpus(self) -> tuple[GpuSpec, ...]:
        return tuple(gpu for gpu in self.gpus if gpu.is_nvidia)


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


def _location(loc: Sequence[int | str]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or "(top level)"


def _describe(err: ValidationError) -> str:
    problems = []
    for issue in err.errors():
        where = _location(issue["loc"])
        message = "unknown key" if issue["type"] == "extra_forbidden" else issue["msg"]
        message = message.removeprefix("Value error, ")
        problems.append(f"{where}: {message}")
    return "; ".join(problems)


def profile_from_mapping(data: Mapping[str, Any], source: str) -> HardwareProfile:
    """Validate a profile given as a mapping (e.g. a `hardware:` block); errors name ``source``."""
    if not isinstance(data, Mapping):
        raise ProfileError(f"{source}: a hardware profile must be a mapping")
    try:
        return HardwareProfile.model_validate(dict(data))
    except ValidationError as err:
        raise ProfileError(f"{source}: {_describe(err)}") from None


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
    schema = HardwareProfile.model_json_schema(by_alias=True)
    # In a file the name defaults to the file's stem.
    schema["required"] = [key for key in schema.get("required", []) if key != "name"]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "talos-schematic hardware profile",
        **{key: value for key, value in schema.items() if key != "title"},
    }
