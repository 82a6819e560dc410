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
from typing import TYPE_CHECKING, Any, Literal, get_args

import yaml

from schematic.canonical import emit_document, sha256_hex
from schematic.catalog import check_extensions, normalise_extension_name, resolve_version
from schematic.decode import canonical_tree
from schematic.errors import ClusterFileError, TalosSchematicError
from schematic.nvidia import (
    GpuRequest,
    KernelModule,
    NvidiaDecision,
    decide,
    describe_nvidia_extension,
    resolve_gpus,
)
from schematic.profiles import (
    HardwareProfile,
    UnusualShapeError,
    load_profile,
    plain_choice,
    plain_keys,
    plain_text,
    plain_texts,
    profile_from_mapping,
)
from schematic.talos import TalosVersion

if TYPE_CHECKING:
    from schematic.charts import ChartTarget
    from schematic.model import Schematic

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
    "unloaded_module_notes",
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


# --- the cluster file ---------------------------------------------------------------------------
# What a cluster file may say is defined by the pydantic models in :mod:`schematic.documents`,
# which also give the error messages and the JSON Schema. Files of the usual shape are read by
# :func:`_plain_cluster` without them: defining pydantic models costs more start-up time than the
# rest of `generate`. Both produce the same values (a test checks it on generated inputs).

Flavour = Literal["auto", "open", "proprietary"]
Tier = Literal["auto", "lts", "production"]


@dataclass(frozen=True, kw_only=True)
class TalosSettings:
    """The Talos release of every pool and where its images come from."""

    version: str
    image_factory_url: str = DEFAULT_IMAGE_FACTORY_URL
    installer_repository: str = DEFAULT_INSTALLER_REPOSITORY
    # Left out of the hash (a mapping has none); equal settings still hash alike.
    registry_mirrors: dict[str, Any] | None = field(default=None, hash=False)
    # PEM CA bundle CDI trusts the factory with (Cozystack talos.imageFactoryCA, PR #3797).
    image_factory_ca: str | None = None


@dataclass(frozen=True, kw_only=True)
class NvidiaSettings:
    """How to choose the NVIDIA extensions; a pool's settings override the cluster's."""

    flavour: Flavour | None = None
    tier: Tier | None = None
    gdrdrv: bool | None = None

    def over(self, base: NvidiaSettings) -> NvidiaSettings:
        """These settings with the unset ones taken from ``base``."""
        return NvidiaSettings(
            flavour=self.flavour if self.flavour is not None else base.flavour,
            tier=self.tier if self.tier is not None else base.tier,
            gdrdrv=self.gdrdrv if self.gdrdrv is not None else base.gdrdrv,
        )


@dataclass(frozen=True, kw_only=True)
class KernelModuleSpec:
    """A kernel module to load, as Cozystack's ``kernelModules`` items."""

    name: str
    parameters: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class PoolSpec:
    """One worker pool: its hardware and extras, plus Cozystack values passed through."""

    name: str
    profile: str | None = None
    hardware: dict[str, Any] | None = field(default=None, hash=False)
    extensions: tuple[str, ...] = ()
    kernel_args: tuple[str, ...] = ()
    # None: computed; a list replaces it; () loads nothing (the user opted out).
    kernel_modules: tuple[KernelModuleSpec, ...] | None = None
    nvidia: NvidiaSettings = NvidiaSettings()
    # The Cozystack values the user set, in file order.
    passthrough: dict[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True, kw_only=True)
class ClusterFile:
    """A Cozystack tenant cluster's worker pools."""

    cluster: str
    namespace: str | None = None
    talos: TalosSettings
    nvidia: NvidiaSettings = NvidiaSettings()
    pools: tuple[PoolSpec, ...]
    # The chart target (`cozystack.version`), canonical; None: not given.
    cozystack_version: str | None = None


@functools.cache
def pool_keys() -> dict[str, str]:
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
TOOL_KEYS = ("name", "profile", "hardware", "extensions", "kernelArgs", "kernelModules", "nvidia")
_POOL_TALOS_KEYS = ("registryMirrors", "imageFactoryCA")


# --- the checks beyond types: shared by the models and the fast reader --------------------------
# Each raises ValueError with the message a user sees (the models prefix the key).


def check_release(value: object) -> str:
    """A Talos release (not a pre-release), written with its ``v``."""
    if not isinstance(value, str):
        raise ValueError("write the Talos version as a string, e.g. v1.13.9")
    try:
        version = TalosVersion.parse(value)
    except TalosSchematicError as err:
        raise ValueError(str(err)) from None
    if version.prerelease:
        raise ValueError(f"{value!r} is a pre-release; use a Talos release such as v1.13.9")
    return str(version)


def normal_endpoint(value: str) -> str:
    value = value.strip().rstrip("/")
    if not value:
        raise ValueError("must not be empty")
    return value


def check_http_url(value: str) -> str:
    if not value.startswith(("https://", "http://")):
        raise ValueError(f"{value!r} is not an http(s) URL")
    return value


def check_pool_name(value: str) -> str:
    if not _DNS_LABEL.fullmatch(value):
        raise ValueError(
            f"{value!r} is not a valid pool name: use lowercase letters, digits and '-'"
        )
    return value


def check_object_name(value: str) -> str:
    if not _DNS_LABEL.fullmatch(value):
        raise ValueError(f"{value!r} is not a valid name: use lowercase letters, digits, '-'")
    return value


def stripped_items(value: tuple[str, ...]) -> tuple[str, ...]:
    if any(not item.strip() for item in value):
        raise ValueError("items must not be empty")
    return tuple(item.strip() for item in value)


_MIRROR_KEYS = ("endpoints", "overridePath", "skipFallback")


def check_image_factory_ca(value: object) -> str | None:
    """A PEM bundle of CA certificates, and no private key (the chart publishes it in a
    ConfigMap anyone in the namespace can read, and refuses a key at render time)."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError("give the CA certificates as PEM text, or leave the key out")
    if "PRIVATE KEY" in value:
        raise ValueError("holds private key material; give only the CA certificate(s)")
    begin = value.find("-----BEGIN CERTIFICATE-----")
    if begin < 0 or value.find("-----END CERTIFICATE-----", begin) < 0:
        raise ValueError("needs a complete PEM certificate block (BEGIN/END CERTIFICATE)")
    return value


def check_chart(value: object) -> str:
    """A chart target name (cozystack.version), canonical."""
    from schematic.charts import check_chart_name

    return check_chart_name(value)


def check_registry_mirrors(value: object) -> dict[str, Any] | None:
    """Talos registry mirrors as Cozystack's ``talos.registryMirrors`` takes them: registry host
    → ``{endpoints: [URL, ...], overridePath: bool, skipFallback: bool}``.

    Checked here because the machine-config patch rewrites them for Talos 1.12 and later
    (``RegistryMirrorConfig`` documents), which only works for the shape Talos defines.
    """
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValueError("give a mapping of registry host to {endpoints: [mirror URL, ...]}")
    for host, mirror in value.items():
        if not isinstance(host, str) or not host.strip():
            raise ValueError(f"{host!r} is not a registry host name, e.g. docker.io")
        if not isinstance(mirror, Mapping):
            raise ValueError(f"{host}: give {{endpoints: [mirror URL, ...]}}")
        for key, setting in mirror.items():
            if key not in _MIRROR_KEYS:
                close = closest(str(key), _MIRROR_KEYS)
                hint = f"; did you mean {close[0]}?" if close else ""
                raise ValueError(f"{host}.{key}: unknown key{hint}")
            if key != "endpoints" and not isinstance(setting, bool):
                raise ValueError(f"{host}.{key}: write true or false")
        endpoints = mirror.get("endpoints")
        if (
            not isinstance(endpoints, list)
            or not endpoints
            or not all(
                isinstance(url, str) and url.startswith(("https://", "http://"))
                for url in endpoints
            )
        ):
            raise ValueError(f"{host}.endpoints: give a list of http(s) mirror URLs")
    return dict(value)


def check_pool_keys(data: Mapping[Any, Any]) -> None:
    """Every key is the tool's or a Cozystack value the user may set."""
    keys = pool_keys()
    for key, value in data.items():
        if key in TOOL_KEYS:
            continue
        if not isinstance(key, str) or key not in keys:
            close = closest(str(key), [*TOOL_KEYS, *keys])
            hint = f"; did you mean {close[0]}?" if close else ""
            raise ValueError(
                f"{key}: not a pool setting nor a Cozystack kubernetes-nodes value{hint}"
            )
        if keys[key] == "tool":
            raise ValueError(f"{key}: set by talos-schematic, not by hand; {_OWNED_HINTS[key]}")
        if key == "talos":
            _check_pool_talos(value)


def check_one_hardware_source(pool: PoolSpec) -> None:
    if (pool.profile is None) == (pool.hardware is None):
        raise ValueError("give exactly one of `profile` and `hardware`")


def check_unique_pools(pools: Sequence[PoolSpec]) -> None:
    seen: set[str] = set()
    for pool in pools:
        if pool.name in seen:
            raise ValueError(f"pool name {pool.name!r} is used twice")
        seen.add(pool.name)


def closest(word: str, choices: Sequence[str]) -> list[str]:
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
            raise ValueError(
                f"talos.{key}: unknown key; a pool may set talos.registryMirrors and "
                "talos.imageFactoryCA"
            )
    try:
        check_registry_mirrors(value.get("registryMirrors"))
    except ValueError as err:
        raise ValueError(f"talos.registryMirrors: {err}") from None
    try:
        check_image_factory_ca(value.get("imageFactoryCA"))
    except ValueError as err:
        raise ValueError(f"talos.imageFactoryCA: {err}") from None


# --- the fast reader ------------------------------------------------------------------------------

_CLUSTER_KEYS = frozenset({"cluster", "namespace", "cozystack", "talos", "nvidia", "pools"})
_TALOS_KEYS = frozenset(
    {"version", "imageFactoryURL", "installerRepository", "registryMirrors", "imageFactoryCA"}
)
_COZYSTACK_KEYS = frozenset({"version"})
_NVIDIA_KEYS = frozenset({"flavour", "tier", "gdrdrv"})
_MODULE_KEYS = frozenset({"name", "parameters"})
_FLAVOURS: tuple[str, ...] = get_args(Flavour)
_TIERS: tuple[str, ...] = get_args(Tier)


def _text_keyed(value: object) -> dict[str, Any] | None:
    if value is None:
        return None
    if type(value) is not dict or any(type(key) is not str for key in value):
        raise UnusualShapeError
    return value


def _plain_nvidia(data: object) -> NvidiaSettings:
    nvidia = plain_keys(data, _NVIDIA_KEYS)
    flavour, tier, gdrdrv = nvidia.get("flavour"), nvidia.get("tier"), nvidia.get("gdrdrv")
    if gdrdrv is not None and type(gdrdrv) is not bool:
        raise UnusualShapeError
    return NvidiaSettings(
        flavour=None if flavour is None else plain_choice(flavour, _FLAVOURS),
        tier=None if tier is None else plain_choice(tier, _TIERS),
        gdrdrv=gdrdrv,
    )


def _plain_talos(data: object) -> TalosSettings:
    talos = plain_keys(data, _TALOS_KEYS)
    if "version" not in talos:
        raise UnusualShapeError
    url = plain_text(talos.get("imageFactoryURL", DEFAULT_IMAGE_FACTORY_URL))
    repository = plain_text(talos.get("installerRepository", DEFAULT_INSTALLER_REPOSITORY))
    return TalosSettings(
        version=check_release(plain_text(talos["version"])),
        image_factory_url=check_http_url(normal_endpoint(url)),
        installer_repository=normal_endpoint(repository),
        registry_mirrors=check_registry_mirrors(_text_keyed(talos.get("registryMirrors"))),
        image_factory_ca=check_image_factory_ca(talos.get("imageFactoryCA")),
    )


def _plain_module(data: object) -> KernelModuleSpec:
    module = plain_keys(data, _MODULE_KEYS)
    if "name" not in module or not plain_text(module["name"]):
        raise UnusualShapeError
    return KernelModuleSpec(
        name=module["name"], parameters=plain_texts(module.get("parameters", []))
    )


def _plain_pool(data: object) -> PoolSpec:
    if type(data) is not dict or "name" not in data:
        raise UnusualShapeError
    check_pool_keys(data)
    profile = data.get("profile")
    modules = data.get("kernelModules", ())
    if type(modules) not in (list, tuple):
        raise UnusualShapeError
    pool = PoolSpec(
        name=check_pool_name(plain_text(data["name"])),
        profile=None if profile is None else plain_text(profile),
        hardware=_text_keyed(data.get("hardware")),
        extensions=stripped_items(plain_texts(data.get("extensions", []))),
        kernel_args=stripped_items(plain_texts(data.get("kernelArgs", []))),
        kernel_modules=(
            tuple(_plain_module(module) for module in modules) if "kernelModules" in data else None
        ),
        nvidia=_plain_nvidia(data.get("nvidia", {})),
        passthrough={key: value for key, value in data.items() if key not in TOOL_KEYS},
    )
    check_one_hardware_source(pool)
    return pool


def _plain_cluster(data: object) -> ClusterFile:
    """The cluster file, if ``data`` has the usual shape and is valid.

    Otherwise raises UnusualShapeError or ValueError, and the models are asked.
    """
    doc = plain_keys(data, _CLUSTER_KEYS)
    pools = doc.get("pools")
    if "cluster" not in doc or "talos" not in doc or type(pools) is not list or not pools:
        raise UnusualShapeError
    namespace = doc.get("namespace")
    chart = plain_keys(doc.get("cozystack", {}), _COZYSTACK_KEYS).get("version")
    cluster = ClusterFile(
        cluster=check_object_name(plain_text(doc["cluster"])),
        namespace=None if namespace is None else check_object_name(plain_text(namespace)),
        talos=_plain_talos(doc["talos"]),
        nvidia=_plain_nvidia(doc.get("nvidia", {})),
        pools=tuple(_plain_pool(pool) for pool in pools),
        cozystack_version=None if chart is None else check_chart(plain_text(chart)),
    )
    check_unique_pools(cluster.pools)
    return cluster


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
        return _plain_cluster(data)
    except (UnusualShapeError, ValueError):
        pass
    # The models either accept what the fast reader would not, or say what is wrong.
    from schematic.documents import validate_cluster

    return validate_cluster(dict(data), source)


def cluster_json_schema() -> dict[str, Any]:
    """JSON Schema of a cluster file, for editors (`talos-schematic schema cluster`)."""
    from schematic.documents import cluster_json_schema as schema

    return schema()


# --- the plan ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PoolPlan:
    """Everything one pool needs, resolved; renderers read only this."""

    name: str
    profile: HardwareProfile
    talos: TalosSettings
    # The schematic's official extensions (sorted) and extra kernel arguments.
    extensions: tuple[str, ...]
    kernel_args: tuple[str, ...]
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
    # The offline ID, when the factory that registered the schematic stamped it and so
    # answered ``schematic_id`` instead (see :func:`with_factory_schematics`).
    offline_schematic_id: str | None = None

    @property
    def schematic(self) -> Schematic:
        """The schematic the cluster file asks for (built on demand: generating needs only the
        canonical text, and the model costs start-up time)."""
        from schematic.model import Schematic

        return Schematic.from_extensions(self.extensions, self.kernel_args)

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
    # The chart target the cluster file names (`cozystack.version`), canonical; None: none.
    cozystack_version: str | None = None

    @property
    def cozystack_target(self) -> ChartTarget:
        """The chart the values are for: the file's ``cozystack.version``, else the target
        :func:`schematic.charts.assumed_target` names (``--chart`` overrides it through
        :func:`schematic.charts.fit_plan`)."""
        from schematic.charts import assumed_target, chart_target

        if self.cozystack_version is None:
            return assumed_target()
        return chart_target(self.cozystack_version)


class _Resolver:
    """Per-run caches: thousands of pools usually share a few profiles and schematics."""

    def __init__(self, source: str, base_dir: Path, profile_dirs: Sequence[Path]) -> None:
        self.source = source
        self.base_dir = base_dir
        self.profile_dirs = tuple(profile_dirs)
        self.profiles: dict[str, HardwareProfile] = {}
        self.decisions: dict[tuple[Any, ...], NvidiaDecision | None] = {}
        self.schematics: dict[tuple[tuple[str, ...], tuple[str, ...]], tuple[str, str]] = {}
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
    ) -> tuple[str, str]:
        """The canonical YAML and ID of the schematic of these extensions and kernel args."""
        if extensions not in self.checked:
            check_extensions(extensions, talos, where=where)
            self.checked.add(extensions)
        key = (extensions, kernel_args)
        if key not in self.schematics:
            custom = {
                "extraKernelArgs": kernel_args,
                "systemExtensions": {"officialExtensions": extensions},
            }
            canonical = emit_document(canonical_tree({"customization": custom}))
            self.schematics[key] = (canonical, sha256_hex(canonical))
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
        cozystack_version=cluster.cozystack_version,
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
            pool,
            schematic_id=stored[pool.schematic_id][0],
            canonical=stored[pool.schematic_id][1],
            offline_schematic_id=pool.schematic_id,
        )
        if pool.schematic_id in stored and stored[pool.schematic_id][0] != pool.schematic_id
        else pool
        for pool in plan.pools
    )
    return replace(plan, pools=pools)


def unloaded_module_notes(plan: ClusterPlan) -> list[str]:
    """A note per NVIDIA pool whose own kernelModules leave NVIDIA modules unloaded.

    The user asked for it, so it is not an error; but the extensions install the modules
    without loading them, and nothing else says the GPUs will then stay unused.
    """
    notes = []
    for pool in plan.pools:
        if pool.nvidia is None or pool.kernel_modules_state not in ("override", "opt-out"):
            continue
        loaded = {module.name for module in pool.kernel_modules}
        missing = [m.name for m in pool.nvidia.kernel_modules if m.name not in loaded]
        if missing:
            setting = "[]" if pool.kernel_modules_state == "opt-out" else "as listed"
            notes.append(
                f'{plan.source}: pool "{pool.name}": kernelModules {setting} does not load '
                f"{', '.join(missing)}; the NVIDIA extensions install them but do not load "
                "them, so the GPUs stay unused unless the node loads them another way "
                "(talos-schematic explain TS121)"
            )
    return notes


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
    canonical, schematic_id = resolver.schematic(
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
        extensions=extensions,
        kernel_args=kernel_args,
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
