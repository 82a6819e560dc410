"""Hardware profiles: one YAML file per machine kind, shipped in `profiles/` or the user's own.

Unknown keys are errors, as in the schematics the profiles become. What a profile file may say
is defined by the pydantic model in :mod:`schematic.inputs.documents`, which also gives the error
messages and the JSON Schema. Profiles of the usual shape (strings, lists of strings, whole
numbers, no unknown keys) are read here without it, because defining a pydantic model costs more
start-up time than the rest of `generate`; anything else goes through the model. The value both
produce is the same :class:`~schematic.inputs.profile_values.HardwareProfile` (a test checks
that on generated inputs).
"""

from __future__ import annotations

import difflib
import functools
import re
import stat
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, get_args

import yaml

from schematic.errors import ProfileError
from schematic.inputs.plain import (
    UnusualShapeError,
    plain_choice,
    plain_keys,
    plain_text,
    plain_texts,
)
from schematic.inputs.profile_values import (
    Architecture,
    CpuVendor,
    GpuDirect,
    GpuSpec,
    HardwareProfile,
    Platform,
    check_gpu,
    check_no_blank_items,
    check_profile,
    check_profile_name,
    known_architecture,
    normal_pci_id,
)
from schematic.media import MEDIA_KEYS, plain_options
from schematic.safe_yaml import YamlLimitError, load, read_problem, read_text

__all__ = [
    "list_profiles",
    "load_profile",
    "profile_from_mapping",
    "profile_json_schema",
]


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
        "nvidia",
        "extensions",
        "kernelArgs",
        *MEDIA_KEYS,
    }
)
_GPU_KEYS = frozenset({"id", "count", "architecture"})
_GPUDIRECT_KEYS = frozenset({"gdrdrv", "gds", "peermem"})
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


def _plain_gpudirect(data: object) -> GpuDirect:
    switches = plain_keys(data, _GPUDIRECT_KEYS)
    if any(value is not None and type(value) is not bool for value in switches.values()):
        raise UnusualShapeError
    return GpuDirect(**switches)


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
        gpudirect=_plain_gpudirect(doc["nvidia"]) if "nvidia" in doc else GpuDirect(),
        extensions=check_no_blank_items(plain_texts(doc.get("extensions", []))),
        kernel_args=check_no_blank_items(plain_texts(doc.get("kernelArgs", []))),
        media=plain_options(doc),
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
    from schematic.inputs.documents import validate_profile

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
        data = load(text, _ProfileLoader)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"{source}:{mark.line + 1}" if mark else source
        reason = " ".join(filter(None, [err.context, err.problem]))
        kind = "" if isinstance(err, YamlLimitError) else "not valid YAML: "
        raise ProfileError(f"{where}: {kind}{reason}") from None
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
        # A FIFO named like a profile would block the run until something writes to it.
        if not stat.S_ISREG(path.stat().st_mode):
            raise ProfileError(f"{path}: not a regular file (a FIFO or a device); not read")
        text = read_text(path)
    except OSError as err:
        raise ProfileError(f"{path}: {read_problem(err)}") from None
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
    from schematic.inputs.documents import profile_json_schema as schema

    return schema()
