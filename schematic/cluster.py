"""The cluster file, and its resolution into one plan per pool.

A cluster file names a Cozystack tenant cluster, its Talos release and its worker pools. Each
pool is a hardware profile (shipped, a path, or inline ``hardware:``) plus extras; resolving it
gives the pool's extensions (platform baseline + NVIDIA decision + extras, sorted as the
factory's web UI submits them), its schematic and ID, the kernel modules its machine config
must load, and the Cozystack keys the user passes through unchanged. Everything here is pure:
reading the file is :func:`load_cluster`'s only I/O, and profiles are read through
:mod:`schematic.profiles`.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from schematic.canonical import sha256_hex
from schematic.catalog import check_extensions, normalise_extension_name, resolve_version
from schematic.errors import ClusterFileError, TalosSchematicError
from schematic.model import Schematic
from schematic.nvidia import (
    GpuRequest,
    KernelModule,
    NvidiaDecision,
    decide,
    describe_nvidia_extension,
    resolve_gpus,
)
from schematic.profiles import HardwareProfile, load_profile, profile_from_mapping
from schematic.talos import TalosVersion

__all__ = [
    "DEFAULT_IMAGE_FACTORY_URL",
    "DEFAULT_INSTALLER_REPOSITORY",
    "ClusterFile",
    "ClusterPlan",
    "KernelModulesState",
    "PoolPlan",
    "PoolSpec",
    "cluster_from_mapping",
    "cluster_json_schema",
    "load_cluster",
    "parse_cluster",
    "plan_cluster",
    "with_factory_schematics",
]

DEFAULT_IMAGE_FACTORY_URL = "https://factory.talos.dev"
DEFAULT_INSTALLER_REPOSITORY = "factory.talos.dev/installer"
# Kubernetes object names: the KubernetesNodes object is named <cluster>-<pool>.
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_GUEST_AGENTS = {
    # Cozystack's default worker schematic carries the QEMU agent; it waits for a virtio
    # channel, which KubeVirt and Proxmox VMs have and other platforms may not.
    "kubevirt": "siderolabs/qemu-guest-agent",
    "proxmox": "siderolabs/qemu-guest-agent",
    "vmware": "siderolabs/vmtoolsd-guest-agent",
}
_MICROCODE = {"intel": "siderolabs/intel-ucode", "amd": "siderolabs/amd-ucode"}
_AMD_GPU_VENDOR = "1002:"
_AMDGPU = "siderolabs/amdgpu"
# Extensions that install a module without loading it (DOMAIN §3), with its parameters.
_EXTENSION_MODULES = {
    "siderolabs/drbd": KernelModule(name="drbd", parameters=("usermode_helper=disabled",)),
    "siderolabs/zfs": KernelModule(name="zfs"),
    "siderolabs/nvidia-gdrdrv-device": KernelModule(name="gdrdrv"),
}
_GDRDRV_EXTENSION = "siderolabs/nvidia-gdrdrv-device"

KernelModulesState = Literal["computed", "override", "opt-out", "none"]


# --- the cluster file model -------------------------------------------------------------------


class _Input(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, defer_build=True)


class TalosSettings(_Input):
    """The Talos release of every pool and where its images come from."""

    version: str = Field(description="Talos release, e.g. v1.13.9")
    image_factory_url: str = Field(
        default=DEFAULT_IMAGE_FACTORY_URL,
        alias="imageFactoryURL",
        description="Image Factory serving boot images (no trailing slash)",
    )
    installer_repository: str = Field(
        default=DEFAULT_INSTALLER_REPOSITORY,
        alias="installerRepository",
        description="OCI repository of the installer: <repository>/<schematicID>:<version>",
    )
    registry_mirrors: dict[str, Any] | None = Field(
        default=None,
        alias="registryMirrors",
        description="Talos machine.registries.mirrors for the workers (Cozystack talos key)",
    )

    @field_validator("version", mode="before")
    @classmethod
    def _release(cls, value: object) -> object:
        if not isinstance(value, str):
            raise ValueError("write the Talos version as a string, e.g. v1.13.9")
        try:
            version = TalosVersion.parse(value)
        except TalosSchematicError as err:
            raise ValueError(str(err)) from None
        if version.prerelease:
            raise ValueError(f"{value!r} is a pre-release; use a Talos release such as v1.13.9")
        return str(version)

    @field_validator("image_factory_url", "installer_repository")
    @classmethod
    def _no_trailing_slash(cls, value: str) -> str:
        value = value.strip().rstrip("/")
        if not value:
            raise ValueError("must not be empty")
        return value

    @field_validator("image_factory_url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not value.startswith(("https://", "http://")):
            raise ValueError(f"{value!r} is not an http(s) URL")
        return value


class NvidiaSettings(_Input):
    """How to choose the NVIDIA extensions; a pool's settings override the cluster's."""

    flavour: Literal["auto", "open", "proprietary"] | None = Field(
        default=None, description="kernel-module flavour (default auto: by GPU generation)"
    )
    tier: Literal["auto", "lts", "production"] | None = Field(
        default=None, description="driver tier (default auto: newest driver knowing every GPU)"
    )
    gdrdrv: bool | None = Field(
        default=None, description="add GPUDirect RDMA (nvidia-gdrdrv-device, open modules only)"
    )

    def over(self, base: NvidiaSettings) -> NvidiaSettings:
        """These settings with the unset ones taken from ``base``."""
        return NvidiaSettings(
            flavour=self.flavour if self.flavour is not None else base.flavour,
            tier=self.tier if self.tier is not None else base.tier,
            gdrdrv=self.gdrdrv if self.gdrdrv is not None else base.gdrdrv,
        )


class KernelModuleSpec(_Input):
    """A kernel module to load, as Cozystack's ``kernelModules`` items."""

    name: str = Field(min_length=1)
    parameters: tuple[str, ...] = ()


@functools.cache
def _pool_keys() -> dict[str, str]:
    """Top-level kubernetes-nodes value keys and who owns them ("user" or "tool")."""
    text = resources.files("schematic.data").joinpath("kubernetes-nodes-keys.tsv").read_text()
    rows = [line.split("\t") for line in text.splitlines() if line and not line.startswith("#")]
    return {key: owner for key, _charts, owner in rows[1:]}


_OWNED_HINTS = {
    "cluster": "the pool's cluster is the file's top-level `cluster`",
    "gpus": "gpus[] is derived from the pool's hardware (profile or `hardware.gpus`)",
    "kernelModules": "set the pool's `kernelModules` only as a list of {name, parameters}",
    "schematicID": "the schematic ID is computed from the pool's extensions",
    "osImage": "osImage is written by `--layout osimage` from the computed schematic",
}
# Pool keys the tool reads itself; everything else must be a Cozystack value key.
_TOOL_KEYS = ("name", "profile", "hardware", "extensions", "kernelArgs", "kernelModules", "nvidia")
_POOL_TALOS_KEYS = ("registryMirrors",)


class PoolSpec(_Input):
    """One worker pool: its hardware and extras, plus Cozystack values passed through."""

    model_config = ConfigDict(extra="allow")

    name: str = Field(description="pool name; the KubernetesNodes object is <cluster>-<name>")
    profile: str | None = Field(
        default=None, description="a shipped hardware profile name, a --profiles name, or a path"
    )
    hardware: dict[str, Any] | None = Field(
        default=None, description="an inline hardware profile instead of `profile`"
    )
    extensions: tuple[str, ...] = Field(
        default=(), description="official extensions to add, checked against the Talos release"
    )
    kernel_args: tuple[str, ...] = Field(default=(), alias="kernelArgs")
    kernel_modules: tuple[KernelModuleSpec, ...] | None = Field(
        default=None,
        alias="kernelModules",
        description="absent: computed; a list: replaces it; []: load nothing (opt out)",
    )
    nvidia: NvidiaSettings = Field(default_factory=NvidiaSettings)

    @field_validator("name")
    @classmethod
    def _dns_label(cls, value: str) -> str:
        if not _DNS_LABEL.fullmatch(value):
            raise ValueError(
                f"{value!r} is not a valid pool name: use lowercase letters, digits and '-'"
            )
        return value

    @field_validator("extensions", "kernel_args")
    @classmethod
    def _no_blank(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if any(not item.strip() for item in value):
            raise ValueError("items must not be empty")
        return tuple(item.strip() for item in value)

    @field_validator("kernel_modules", mode="before")
    @classmethod
    def _never_null(cls, value: object) -> object:
        if value is None:
            raise ValueError("write [] to load no modules, or leave kernelModules out")
        return value

    @model_validator(mode="before")
    @classmethod
    def _known_pass_through(cls, data: object) -> object:
        if not isinstance(data, Mapping):
            return data
        keys = _pool_keys()
        for key, value in data.items():
            if key in _TOOL_KEYS:
                continue
            if not isinstance(key, str) or key not in keys:
                close = _closest(str(key), [*_TOOL_KEYS, *keys])
                hint = f"; did you mean {close[0]}?" if close else ""
                raise ValueError(
                    f"{key}: not a pool setting nor a Cozystack kubernetes-nodes value{hint}"
                )
            if keys[key] == "tool":
                raise ValueError(f"{key}: set by talos-schematic, not by hand; {_OWNED_HINTS[key]}")
            if key == "talos":
                _check_pool_talos(value)
        return data

    @model_validator(mode="after")
    def _one_hardware_source(self) -> PoolSpec:
        if (self.profile is None) == (self.hardware is None):
            raise ValueError("give exactly one of `profile` and `hardware`")
        return self

    @property
    def passthrough(self) -> dict[str, Any]:
        """The Cozystack values the user set, in file order."""
        return dict(self.model_extra or {})


def _closest(word: str, choices: Sequence[str]) -> list[str]:
    import difflib  # only for error messages

    return difflib.get_close_matches(word, choices, n=1)


def _check_pool_talos(value: object) -> None:
    if not isinstance(value, Mapping):
        raise ValueError("talos: must be a mapping")
    for key in value:
        if key == "schematicID":
            raise ValueError(
                "talos.schematicID: set by talos-schematic, not by hand; the schematic ID is "
                "computed from the pool's extensions"
            )
        if key in ("version", "imageFactoryURL", "installerRepository"):
            raise ValueError(
                f"talos.{key}: set it once in the file's top-level `talos`, so that the "
                "schematic, boot image and installer agree"
            )
        if key not in _POOL_TALOS_KEYS:
            raise ValueError(f"talos.{key}: unknown key; a pool may set talos.registryMirrors")


class ClusterFile(_Input):
    """A Cozystack tenant cluster's worker pools."""

    cluster: str = Field(description="name of the Cozystack Kubernetes application")
    namespace: str | None = Field(
        default=None, description="tenant namespace written into each KubernetesNodes object"
    )
    talos: TalosSettings
    nvidia: NvidiaSettings = Field(default_factory=NvidiaSettings)
    pools: tuple[PoolSpec, ...] = Field(min_length=1)

    @field_validator("cluster", "namespace")
    @classmethod
    def _dns_label(cls, value: str | None) -> str | None:
        if value is not None and not _DNS_LABEL.fullmatch(value):
            raise ValueError(f"{value!r} is not a valid name: use lowercase letters, digits, '-'")
        return value

    @model_validator(mode="after")
    def _unique_pools(self) -> ClusterFile:
        seen: set[str] = set()
        for pool in self.pools:
            if pool.name in seen:
                raise ValueError(f"pool name {pool.name!r} is used twice")
            seen.add(pool.name)
        return self


# --- reading ----------------------------------------------------------------------------------


_Loader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TAG = "tag:yaml.org,2002:"
_PLAIN = "?plain"  # the tag :class:`_Composer` gives every untagged plain scalar
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_BOOLS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


class _YamlError(Exception):
    def __init__(self, node: yaml.Node, reason: str) -> None:
        super().__init__(reason)
        self.line = node.start_mark.line + 1


def _value(node: yaml.Node) -> Any:
    """A composed node as Python data, typed the YAML 1.2 way.

    Only ``true``/``false`` are booleans and only decimal numbers are numbers (``on``, ``0x10``,
    ``2024-01-01`` stay text, unlike YAML 1.1); a key given twice is an error.
    """
    if isinstance(node, yaml.ScalarNode):
        return _scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return [_value(item) for item in node.value]
    if isinstance(node, yaml.MappingNode):
        mapping: dict[Any, Any] = {}
        merged: list[yaml.Node] = []
        for key_node, value_node in node.value:
            if key_node.tag == _PLAIN and key_node.value == "<<":
                merged.append(value_node)
                continue
            key = _value(key_node)
            if isinstance(key, (dict, list)):
                raise _YamlError(key_node, "a mapping key must be a scalar")
            if key in mapping:
                raise _YamlError(key_node, f"key {key!r} appears twice in one mapping")
            mapping[key] = _value(value_node)
        for source in merged:  # << merges: keys already present win
            sources = source.value if isinstance(source, yaml.SequenceNode) else [source]
            for item in sources:
                extra = _value(item)
                if not isinstance(extra, dict):
                    raise _YamlError(item, "a << merge needs a mapping or a list of mappings")
                for key, value in extra.items():
                    mapping.setdefault(key, value)
        return mapping
    raise _YamlError(node, "unsupported YAML node")


def _scalar(node: yaml.ScalarNode) -> Any:
    text: str = node.value
    tag: str = node.tag
    if tag == _PLAIN:
        if text in _NULLS:
            return None
        if text in _BOOLS:
            return _BOOLS[text]
        if _INT.fullmatch(text):
            return int(text)
        if _FLOAT.fullmatch(text):
            return float(text)
        return text  # YAML 1.1's yes/no, 0x10, 1:20 and dates stay text
    if tag == _TAG + "str":
        return text
    if tag == _TAG + "null" and text in _NULLS:
        return None
    if tag == _TAG + "bool" and text in _BOOLS:
        return _BOOLS[text]
    if tag == _TAG + "int" and _INT.fullmatch(text):
        return int(text)
    if tag == _TAG + "float" and (_FLOAT.fullmatch(text) or _INT.fullmatch(text)):
        return float(text)
    raise _YamlError(node, f"cannot read {text!r} as {tag}")


class _Composer(_Loader):  # type: ignore[misc]
    """Composes nodes only; plain scalars are left untyped for :func:`_scalar` to read."""

    def resolve(self, kind: type[yaml.Node], value: str, implicit: tuple[bool, bool]) -> str:
        if kind is yaml.ScalarNode:
            return _PLAIN if implicit[0] else _TAG + "str"
        return _TAG + ("seq" if kind is yaml.SequenceNode else "map")


def parse_cluster(text: str, source: str) -> ClusterFile:
    """A cluster file from its YAML text; errors name ``source``, the pool and the key."""
    try:
        node = yaml.compose(text, Loader=_Composer)
        data = _value(node) if node is not None else None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"{source}:{mark.line + 1}" if mark else source
        reason = " ".join(filter(None, [err.context, err.problem]))
        raise ClusterFileError(f"{where}: not valid YAML: {reason}") from None
    except yaml.YAMLError as err:
        raise ClusterFileError(f"{source}: not valid YAML: {err}") from None
    except _YamlError as err:
        raise ClusterFileError(f"{source}:{err.line}: {err}") from None
    return cluster_from_mapping(data, source)


def load_cluster(path: Path) -> ClusterFile:
    """Read and validate a cluster file."""
    try:
        text = path.read_text("utf-8")
    except OSError as err:
        raise ClusterFileError(f"{path}: cannot read: {err.strerror}") from None
    except UnicodeDecodeError as err:
        raise ClusterFileError(f"{path}: not UTF-8 text ({err.reason})") from None
    return parse_cluster(text, str(path))


def cluster_from_mapping(data: object, source: str) -> ClusterFile:
    """Validate a decoded cluster file."""
    if not isinstance(data, Mapping):
        raise ClusterFileError(f"{source}: a cluster file must be a YAML mapping")
    try:
        return ClusterFile.model_validate(dict(data))
    except ValidationError as err:
        raise ClusterFileError(_describe(err, data, source)) from None


def _model_keys(model: type[BaseModel]) -> list[str]:
    return [info.alias or name for name, info in model.model_fields.items()]


_KEYS_AT = {
    (): _model_keys(ClusterFile),
    ("talos",): _model_keys(TalosSettings),
    ("nvidia",): _model_keys(NvidiaSettings),
}


def _describe(err: ValidationError, data: Mapping[str, Any], source: str) -> str:
    problems: list[str] = []
    issues = err.errors()
    for issue in issues:
        loc = list(issue["loc"])
        if issue["type"] == "too_short" and loc == ["pools"] and len(issues) > 1:
            continue  # pydantic adds this when a pool fails; the pool's own error says more
        prefix = source
        if len(loc) >= 2 and loc[0] == "pools" and isinstance(loc[1], int):
            prefix += f": {_pool_label(data, loc[1])}"
            loc = loc[2:]
        message = issue["msg"].removeprefix("Value error, ")
        if issue["type"] == "extra_forbidden":
            parent = tuple(str(part) for part in loc[:-1])
            parent = ("nvidia",) if parent and parent[-1] == "nvidia" else parent
            close = _closest(str(loc[-1]), _KEYS_AT.get(parent, []))
            message = "unknown key" + (f"; did you mean {close[0]}?" if close else "")
        where = _location(loc)
        problems.append(f"{prefix}: {where}: {message}" if where else f"{prefix}: {message}")
    return "\n".join(dict.fromkeys(problems))


def _pool_label(data: Mapping[str, Any], index: int) -> str:
    pools = data.get("pools")
    if isinstance(pools, list) and index < len(pools) and isinstance(pools[index], Mapping):
        name = pools[index].get("name")
        if isinstance(name, str):
            return f'pool "{name}"'
    return f"pools[{index}]"


def _location(loc: Sequence[int | str]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def cluster_json_schema() -> dict[str, Any]:
    """JSON Schema of a cluster file, for editors (`talos-schematic schema cluster`)."""
    schema = ClusterFile.model_json_schema(by_alias=True)
    pool = schema["$defs"]["PoolSpec"]
    # Pass-through keys are Cozystack's; their shapes are the chart's business.
    for key, owner in _pool_keys().items():
        if owner == "user" and key not in pool["properties"]:
            pool["properties"][key] = {"description": f"Cozystack kubernetes-nodes value {key}"}
    pool["additionalProperties"] = False
    pool["oneOf"] = [{"required": ["profile"]}, {"required": ["hardware"]}]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "talos-schematic cluster file",
        **{key: value for key, value in schema.items() if key != "title"},
    }


# --- the plan ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PoolPlan:
    """Everything one pool needs, resolved; renderers read only this."""

    name: str
    profile: HardwareProfile
    talos: TalosSettings
    schematic: Schematic
    # The canonical YAML the factory stores and ``schematic_id`` hashes: the schematic's own,
    # unless the factory that registered it stamped it (see :func:`with_factory_schematics`).
    canonical: str
    schematic_id: str
    nvidia: NvidiaDecision | None
    # One KubeVirt resource name per GPU device (a count of 2 gives two entries).
    gpu_resources: tuple[str, ...]
    kernel_modules: tuple[KernelModule, ...]
    kernel_modules_state: KernelModulesState
    sysctls: Mapping[str, str]
    passthrough: Mapping[str, Any] = field(default_factory=dict)

    @property
    def extensions(self) -> tuple[str, ...]:
        return self.schematic.extensions

    @property
    def kernel_args(self) -> tuple[str, ...]:
        return self.schematic.customization.extra_kernel_args

    @property
    def registry_mirrors(self) -> dict[str, Any] | None:
        pool_talos = self.passthrough.get("talos")
        if isinstance(pool_talos, Mapping) and "registryMirrors" in pool_talos:
            mirrors: dict[str, Any] = pool_talos["registryMirrors"]
            return mirrors
        return self.talos.registry_mirrors


@dataclass(frozen=True)
class ClusterPlan:
    """A cluster file resolved: one plan per pool, in file order."""

    cluster: str
    namespace: str | None
    talos: TalosSettings
    source: str
    pools: tuple[PoolPlan, ...]


class _Resolver:
    """Per-run caches: thousands of pools usually share a few profiles and schematics."""

    def __init__(self, source: str, base_dir: Path, profile_dirs: Sequence[Path]) -> None:
        self.source = source
        self.base_dir = base_dir
        self.profile_dirs = tuple(profile_dirs)
        self.profiles: dict[str, HardwareProfile] = {}
        self.decisions: dict[tuple[Any, ...], NvidiaDecision | None] = {}
        self.schematics: dict[
            tuple[tuple[str, ...], tuple[str, ...]], tuple[Schematic, str, str]
        ] = {}
        self.checked: set[tuple[str, ...]] = set()
        self.resources: dict[tuple[GpuRequest, ...], tuple[str, ...]] = {}

    def profile(self, pool: PoolSpec) -> HardwareProfile:
        if pool.hardware is not None:
            data = {"name": pool.name, **pool.hardware}
            return profile_from_mapping(data, f'{self.source}: pool "{pool.name}": hardware')
        assert pool.profile is not None
        name = pool.profile
        if name not in self.profiles:
            self.profiles[name] = load_profile(self._profile_path(name), self.profile_dirs)
        return self.profiles[name]

    def _profile_path(self, name: str) -> str:
        # A relative path is relative to the cluster file, wherever the command runs.
        if ("/" in name or name.endswith((".yaml", ".yml"))) and not Path(name).is_absolute():
            return str(self.base_dir / name)
        return name

    def decision(
        self, gpus: tuple[GpuRequest, ...], profile: HardwareProfile, talos: str, nv: Any
    ) -> NvidiaDecision | None:
        key = (gpus, talos, profile.architecture, profile.passthrough, profile.nvswitch, nv)
        if key not in self.decisions:
            flavour, tier, gdrdrv = nv
            self.decisions[key] = decide(
                gpus,
                talos,
                arch=profile.architecture,
                passthrough=profile.passthrough,
                nvswitch=profile.nvswitch,
                flavour=flavour,
                tier=tier,
                gdrdrv=gdrdrv,
            )
        return self.decisions[key]

    def gpu_resources(self, gpus: tuple[GpuRequest, ...]) -> tuple[str, ...]:
        if gpus not in self.resources:
            resolved = resolve_gpus(gpus)
            self.resources[gpus] = tuple(
                gpu.kubevirt_resource_name for gpu, count in resolved.gpus for _ in range(count)
            )
        return self.resources[gpus]

    def schematic(
        self, extensions: tuple[str, ...], kernel_args: tuple[str, ...], talos: str, where: str
    ) -> tuple[Schematic, str, str]:
        if extensions not in self.checked:
            check_extensions(extensions, talos, where=where)
            self.checked.add(extensions)
        key = (extensions, kernel_args)
        if key not in self.schematics:
            schematic = Schematic.from_extensions(extensions, kernel_args)
            canonical = schematic.canonical()
            self.schematics[key] = (schematic, canonical, sha256_hex(canonical))
        return self.schematics[key]


def plan_cluster(
    cluster: ClusterFile,
    *,
    source: str = "cluster.yaml",
    base_dir: Path | None = None,
    profile_dirs: Sequence[Path] = (),
) -> ClusterPlan:
    """Resolve every pool; raises ClusterFileError naming the file, the pool and the problem.

    ``base_dir`` is where relative profile paths are looked up (the cluster file's directory);
    ``profile_dirs`` are searched for profile names before the shipped profiles.
    """
    talos = cluster.talos
    try:
        resolve_version(talos.version)
    except TalosSchematicError as err:
        raise ClusterFileError(f"{source}: talos.version: {err}") from None
    resolver = _Resolver(source, base_dir or Path.cwd(), profile_dirs)
    pools = []
    shapes: dict[tuple[Any, ...], PoolPlan] = {}
    for pool in cluster.pools:
        # Pools differing only in name and pass-through values resolve alike.
        shape = (
            pool.profile,
            json.dumps(pool.hardware, sort_keys=True, default=str),
            pool.extensions,
            pool.kernel_args,
            pool.kernel_modules,
            pool.nvidia,
        )
        known = shapes.get(shape)
        if known is not None:
            pools.append(replace(known, name=pool.name, passthrough=pool.passthrough))
            continue
        try:
            shapes[shape] = _plan_pool(pool, cluster, resolver)
            pools.append(shapes[shape])
        except ClusterFileError:
            raise
        except TalosSchematicError as err:
            raise ClusterFileError(_in_pool(source, pool.name, str(err))) from None
    return ClusterPlan(
        cluster=cluster.cluster,
        namespace=cluster.namespace,
        talos=talos,
        source=source,
        pools=tuple(pools),
    )


def with_factory_schematics(
    plan: ClusterPlan, stored: Mapping[str, tuple[str, str]]
) -> ClusterPlan:
    """The plan with the factory's ``(id, canonical body)`` for each offline ID in ``stored``.

    An Enterprise factory stamps ``owner`` into what it stores, so its ID is not the offline
    one; every output must then carry the factory's ID and body. ``schematic`` stays what the
    cluster file asked for: the extensions and kernel arguments are the same either way.
    """
    pools = tuple(
        replace(
            pool, schematic_id=stored[pool.schematic_id][0], canonical=stored[pool.schematic_id][1]
        )
        if pool.schematic_id in stored
        else pool
        for pool in plan.pools
    )
    return replace(plan, pools=pools)


def _in_pool(source: str, pool: str, message: str) -> str:
    prefix = f'{source}: pool "{pool}": '
    return message if message.startswith(prefix) else prefix + message


def _plan_pool(pool: PoolSpec, cluster: ClusterFile, resolver: _Resolver) -> PoolPlan:
    source = resolver.source
    where = f'{source}: pool "{pool.name}"'
    talos = cluster.talos.version
    profile = resolver.profile(pool)

    extras = [normalise_extension_name(name) for name in (*profile.extensions, *pool.extensions)]
    nvidia_extras = {name: describe_nvidia_extension(name) for name in extras}
    nvidia_extras = {name: kind for name, kind in nvidia_extras.items() if kind is not None}
    settings = pool.nvidia.over(cluster.nvidia)
    gdrdrv = bool(settings.gdrdrv) or _GDRDRV_EXTENSION in nvidia_extras
    gpus = tuple(
        GpuRequest(id=gpu.id, count=gpu.count, architecture=gpu.architecture)
        for gpu in profile.nvidia_gpus
    )
    decision: NvidiaDecision | None = None
    if gpus:
        nv = (settings.flavour or "auto", settings.tier or "auto", gdrdrv)
        decision = resolver.decision(gpus, profile, talos, nv)
    if decision is None and nvidia_extras:
        # An NVIDIA schematic on a node without an NVIDIA GPU reboots it about every 70 min.
        raise ClusterFileError(
            f"{where}: extensions: {', '.join(sorted(nvidia_extras))} need an NVIDIA GPU, and "
            "this pool has none; without one Talos fails to start the NVIDIA services and "
            "reboots the node about every 70 minutes. Remove them, or give the pool its GPUs"
        )
    if decision is not None:
        stray = sorted(name for name in nvidia_extras if name not in decision.extensions)
        if stray:
            raise ClusterFileError(
                f"{where}: extensions: {', '.join(stray)} conflict with the NVIDIA choice "
                f"({', '.join(decision.extensions)}); leave the NVIDIA extensions out and set "
                "nvidia.flavour / nvidia.tier instead"
            )

    baseline = [_GUEST_AGENTS.get(profile.platform, "")]
    if profile.platform == "metal" and profile.cpu_vendor:
        baseline.append(_MICROCODE.get(profile.cpu_vendor, ""))
    if any(gpu.id.startswith(_AMD_GPU_VENDOR) for gpu in profile.gpus):
        baseline.append(_AMDGPU)
    chosen = decision.extensions if decision else ()
    # Sorted in plain byte order, as the factory's web UI submits them: same list, same ID.
    extensions = tuple(sorted({name for name in (*baseline, *chosen, *extras) if name}))
    kernel_args = tuple(
        dict.fromkeys(
            (*profile.kernel_args, *pool.kernel_args, *(decision.kernel_args if decision else ()))
        )
    )
    schematic, canonical, schematic_id = resolver.schematic(
        extensions, kernel_args, talos, f"{where}: extensions"
    )

    state: KernelModulesState
    if pool.kernel_modules is not None:
        modules = tuple(
            KernelModule(name=module.name, parameters=module.parameters)
            for module in pool.kernel_modules
        )
        state = "override" if modules else "opt-out"
    else:
        modules = _needed_modules(decision, extensions)
        state = "computed" if modules else "none"
    return PoolPlan(
        name=pool.name,
        profile=profile,
        talos=cluster.talos,
        schematic=schematic,
        canonical=canonical,
        schematic_id=schematic_id,
        nvidia=decision,
        gpu_resources=resolver.gpu_resources(gpus) if gpus else (),
        kernel_modules=modules,
        kernel_modules_state=state,
        sysctls=dict(decision.sysctls) if decision else {},
        passthrough=pool.passthrough,
    )


def _needed_modules(
    decision: NvidiaDecision | None, extensions: tuple[str, ...]
) -> tuple[KernelModule, ...]:
    """The NVIDIA modules in load order, then those of other extensions that need loading."""
    modules = {module.name: module for module in (decision.kernel_modules if decision else ())}
    for name in extensions:
        module = _EXTENSION_MODULES.get(name)
        if module is not None:
            modules.setdefault(module.name, module)
    return tuple(modules.values())
