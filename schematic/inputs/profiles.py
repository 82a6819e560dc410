"""Hardware profiles: one YAML file per machine kind, shipped in `profiles/` or the user's own.

A profile file, and a pool's inline ``hardware`` in a cluster file, are read by
:func:`read_profile`, typed by the one rule of :mod:`schematic.inputs.reading`. Unknown keys are
errors, as in the schematics the profiles become. The keys are listed in `docs/cluster-file.md`;
the JSON Schema (`talos-schematic schema profile`) comes from :mod:`schematic.inputs.documents`.
"""

from __future__ import annotations

import functools
import stat
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, get_args

from schematic.errors import ProfileError, printable, unknown_name_hint
from schematic.facts.media import MEDIA_KEYS
from schematic.inputs.media_options import read_media
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
from schematic.inputs.reading import (
    At,
    Fields,
    Reading,
    choice,
    flag,
    optional,
    parse_yaml,
    read_list,
    text,
    texts,
    whole,
)
from schematic.safe_yaml import InputKind, read_problem, read_text

__all__ = [
    "PROFILE_KEYS",
    "list_profiles",
    "load_profile",
    "parse_profile",
    "profile_from_mapping",
    "profile_json_schema",
    "read_profile",
]

PROFILE_KEYS = (
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
)
_GPU_KEYS = ("id", "count", "architecture")
_GPUDIRECT_KEYS = ("gdrdrv", "gds", "peermem")
_PLATFORMS: tuple[str, ...] = get_args(Platform)
_ARCHITECTURES: tuple[str, ...] = get_args(Architecture)
_CPU_VENDORS: tuple[str, ...] = get_args(CpuVendor)


def _pci_id(value: object) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        # 2330 is a number to YAML: quoting keeps the ID as written (0x2330, not 2330 decimal).
        raise ValueError(f"write the PCI ID as quoted text, e.g. '10de:{value}'")
    return normal_pci_id(text(value))


def _count(value: object) -> int:
    if isinstance(value, bool):
        # `count: true` is a slip for a number, not one GPU.
        raise ValueError(f"give how many GPUs as a whole number, not {str(value).lower()}")
    count = whole(value)
    if count < 1:
        raise ValueError(f"must be 1 or more, not {count}")
    return count


def _gpu(value: object, at: At) -> GpuSpec | None:
    fields = Fields(at, value, _GPU_KEYS)
    gpu_id = fields.need("id", _pci_id, "id: '10de:2bb5'")
    count = fields.get("count", _count, 1)
    architecture = fields.get("architecture", optional(lambda v: known_architecture(text(v))), None)
    if not fields.ok:
        return None
    spec = GpuSpec(id=gpu_id, count=count, architecture=architecture)
    at.check(spec, check_gpu)
    return spec if fields.ok else None


def _gpus(value: object, at: At) -> tuple[GpuSpec, ...] | None:
    return read_list(value, at, _gpu, "a list of GPUs, e.g. [{id: '10de:2bb5', count: 2}]")


def _gpudirect(value: object, at: At) -> GpuDirect | None:
    if value is None:
        return None
    fields = Fields(at, value, _GPUDIRECT_KEYS)
    switch = optional(flag)
    direct = GpuDirect(
        gdrdrv=fields.get("gdrdrv", switch, None),
        gds=fields.get("gds", switch, None),
        peermem=fields.get("peermem", switch, None),
    )
    return direct if fields.ok else None


def _blank_free(value: object) -> tuple[str, ...]:
    return check_no_blank_items(texts(value))


def read_profile(value: object, at: At, default_name: str) -> HardwareProfile | None:
    """The profile ``value`` describes, or None with its problems recorded at ``at``."""
    fields = Fields(at, value, PROFILE_KEYS, "a mapping of profile keys")
    if not isinstance(value, dict):
        return None
    named = lambda v: check_profile_name(text(v))  # noqa: E731
    profile = HardwareProfile(
        name=fields.get("name", named, default_name)
        if default_name
        else fields.need("name", named, "name: my-machine"),
        aliases=fields.get("aliases", texts, ()),
        description=fields.get("description", text, ""),
        platform=fields.need("platform", choice(_PLATFORMS), "platform: kubevirt"),
        architecture=fields.get("architecture", choice(_ARCHITECTURES), "amd64"),
        cpu_vendor=fields.get("cpuVendor", optional(choice(_CPU_VENDORS)), None),
        gpus=fields.read("gpus", _gpus, ()),
        nvswitch=fields.get("nvswitch", flag, False),
        gpudirect=fields.read("nvidia", _gpudirect, GpuDirect()),
        extensions=fields.get("extensions", _blank_free, ()),
        kernel_args=fields.get("kernelArgs", _blank_free, ()),
        media=read_media(fields),
    )
    if fields.ok:
        at.check(profile, check_profile)
    return profile if fields.ok else None


def _read(data: object, reading: Reading, default_name: str) -> HardwareProfile:
    profile = read_profile(data, At(reading), default_name)
    reading.finish()
    assert profile is not None  # no problem recorded: a profile was built
    return profile


def parse_profile(text: str, source: str, default_name: str) -> HardwareProfile:
    """A profile from its YAML text; errors name ``source``, the line and the key."""
    data, node = parse_yaml(text, source, ProfileError)
    if not isinstance(data, dict):
        raise ProfileError(f"{source}: a hardware profile must be a YAML mapping")
    return _read(data, Reading(source, ProfileError, node), default_name)


def profile_from_mapping(data: Mapping[str, Any], source: str) -> HardwareProfile:
    """A profile given as data already typed (e.g. from `detect`); errors name ``source``."""
    # No file name to default the profile's name to: it must be given.
    return _read(
        dict(data) if isinstance(data, Mapping) else data, Reading(source, ProfileError), ""
    )


# --- loading ----------------------------------------------------------------------------------


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
        text = read_text(path, kind=InputKind.PROFILE)
    except OSError as err:
        where = printable(str(path), one_line=True)
        raise ProfileError(f"{where}: {read_problem(err)}") from None
    return parse_profile(text, str(path), path.stem)


def load_profile(name_or_path: str, extra_dirs: Sequence[Path] = ()) -> HardwareProfile:
    """A profile by file path, or by name from ``extra_dirs`` (first) and the shipped set."""
    looks_like_path = "/" in name_or_path or name_or_path.endswith((".yaml", ".yml"))
    if looks_like_path or Path(name_or_path).is_file():
        return _read_path(Path(name_or_path))
    user = _user_files(extra_dirs)
    if name_or_path in user:
        return _read_path(user[name_or_path])
    # The user's directories come first, their aliases too; each read by the one reader.
    user_aliases = _aliases(_read_path(path) for path in user.values())
    if name_or_path in user_aliases:
        return user_aliases[name_or_path]
    shipped = _shipped()
    if name_or_path in shipped:
        return _shipped_profile(name_or_path)
    shipped_aliases = _shipped_aliases()
    if name_or_path in shipped_aliases:
        return shipped_aliases[name_or_path]
    # The closest few, not all 31: a list that long hides the one that was meant.
    hint = unknown_name_hint(
        name_or_path, {*user, *user_aliases, *shipped, *shipped_aliases}, "talos-schematic profiles"
    )
    raise ProfileError(f"no hardware profile named {name_or_path!r}{hint}")


def _aliases(profiles: Iterable[HardwareProfile]) -> dict[str, HardwareProfile]:
    """Alias → profile; the first profile to give an alias keeps it."""
    aliases: dict[str, HardwareProfile] = {}
    for profile in profiles:
        for alias in profile.aliases:
            aliases.setdefault(alias, profile)
    return aliases


def _shipped_profile(stem: str) -> HardwareProfile:
    entry = _shipped()[stem]
    return parse_profile(entry.read_text("utf-8"), f"profiles/{entry.name}", stem)


@functools.cache
def _shipped_aliases() -> dict[str, HardwareProfile]:
    """Alias → profile for the shipped profiles, parsed once per run."""
    return _aliases(_shipped_profile(stem) for stem in _shipped())


def list_profiles(extra_dirs: Sequence[Path] = ()) -> list[HardwareProfile]:
    """Every profile: the user's directories shadow shipped profiles of the same name."""
    user = _user_files(extra_dirs)
    profiles = {name: _read_path(path) for name, path in user.items()}
    for name in _shipped():
        if name not in profiles:
            profiles[name] = _shipped_profile(name)
    return [profiles[name] for name in sorted(profiles)]


def profile_json_schema() -> dict[str, Any]:
    """JSON Schema of a hardware profile file, for editors (`talos-schematic schema profile`)."""
    from schematic.inputs.documents import profile_json_schema as schema

    return schema()
