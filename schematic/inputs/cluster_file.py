"""Reading a cluster file: YAML typed the YAML 1.2 way, then the fast reader or the models.

What a cluster file may say is defined by the pydantic models in :mod:`schematic.inputs.documents`,
which also give the error messages and the JSON Schema. Files of the usual shape are read by
:func:`_plain_cluster` without them: defining pydantic models costs more start-up time than the
rest of `generate`. Both produce the same values (a test checks it on generated inputs).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_args

import yaml

from schematic.errors import ClusterFileError
from schematic.inputs.cluster_values import (
    DEFAULT_IMAGE_FACTORY_URL,
    TOOL_KEYS,
    ClusterFile,
    Flavour,
    HamiRequest,
    KernelModuleSpec,
    NvidiaSettings,
    PoolSpec,
    TalosSettings,
    Tier,
    check_chart,
    check_http_url,
    check_image_factory_ca,
    check_installer_repository,
    check_object_name,
    check_object_names,
    check_one_hardware_source,
    check_pool_keys,
    check_pool_name,
    check_registry_mirrors,
    check_release,
    check_unique_pools,
    normal_endpoint,
    stripped_items,
)
from schematic.inputs.plain import (
    UnusualShapeError,
    plain_choice,
    plain_keys,
    plain_text,
    plain_texts,
)
from schematic.media import BootSchematic, check_factory_version, plain_boot, plain_options
from schematic.safe_yaml import YamlLimitError, compose_single, read_problem, read_text

__all__ = ["cluster_from_mapping", "cluster_json_schema", "load_cluster", "parse_cluster"]

_CLUSTER_KEYS = frozenset(
    {"cluster", "namespace", "cozystack", "addons", "talos", "nvidia", "pools"}
)
_ADDONS_KEYS = frozenset({"hami"})
_HAMI_KEYS = frozenset({"enabled", "force"})
_TALOS_KEYS = frozenset(
    {
        "version",
        "imageFactoryURL",
        "installerRepository",
        "registryMirrors",
        "imageFactoryCA",
        "imageFactoryVersion",
    }
)
_COZYSTACK_KEYS = frozenset({"version"})
_NVIDIA_KEYS = frozenset({"flavour", "tier", "gdrdrv", "gds", "peermem"})
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
    flavour, tier = nvidia.get("flavour"), nvidia.get("tier")
    switches = {key: nvidia.get(key) for key in ("gdrdrv", "gds", "peermem")}
    if any(value is not None and type(value) is not bool for value in switches.values()):
        raise UnusualShapeError
    return NvidiaSettings(
        flavour=None if flavour is None else plain_choice(flavour, _FLAVOURS),
        tier=None if tier is None else plain_choice(tier, _TIERS),
        **switches,
    )


def _plain_talos(data: object) -> TalosSettings:
    talos = plain_keys(data, _TALOS_KEYS)
    if "version" not in talos:
        raise UnusualShapeError
    url = plain_text(talos.get("imageFactoryURL", DEFAULT_IMAGE_FACTORY_URL))
    # Unset: the release's default (TalosSettings fills it in).
    repository = plain_text(talos.get("installerRepository", ""))
    factory_version = talos.get("imageFactoryVersion")
    return TalosSettings(
        version=check_release(plain_text(talos["version"])),
        image_factory_url=check_http_url(normal_endpoint(url)),
        installer_repository=(
            check_installer_repository(normal_endpoint(repository)) if repository else ""
        ),
        registry_mirrors=check_registry_mirrors(_text_keyed(talos.get("registryMirrors"))),
        image_factory_ca=check_image_factory_ca(talos.get("imageFactoryCA")),
        image_factory_version=None
        if factory_version is None
        else check_factory_version(plain_text(factory_version)),
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
        media=plain_options(data),
        boot=plain_boot(data["boot"]) if "boot" in data else BootSchematic(),
        passthrough={key: value for key, value in data.items() if key not in TOOL_KEYS},
    )
    check_one_hardware_source(pool)
    return pool


def _plain_hami(data: object) -> HamiRequest:
    hami = plain_keys(plain_keys(data, _ADDONS_KEYS).get("hami", {}), _HAMI_KEYS)
    enabled, force = hami.get("enabled", False), hami.get("force", False)
    if type(enabled) is not bool or type(force) is not bool:
        raise UnusualShapeError
    return HamiRequest(enabled=enabled, force=force)


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
        hami=_plain_hami(doc.get("addons", {})),
    )
    check_unique_pools(cluster.pools)
    check_object_names(cluster.cluster, cluster.pools)
    return cluster


# --- reading ----------------------------------------------------------------------------------


_TAG = "tag:yaml.org,2002:"
_PLAIN = "?plain"  # the tag :func:`_untyped` gives every untagged plain scalar
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


def _untyped(kind: type[yaml.Node], value: str, implicit: tuple[bool, bool]) -> str:
    """Plain scalars are left untyped for :func:`_scalar` to read."""
    if kind is yaml.ScalarNode:
        return _PLAIN if implicit[0] else _TAG + "str"
    return _TAG + ("seq" if kind is yaml.SequenceNode else "map")


def parse_cluster(text: str, source: str) -> ClusterFile:
    """A cluster file from its YAML text; errors name ``source``, the pool and the key."""
    try:
        # Aliases counted, never expanded, and nesting bounded before a value is built.
        node = compose_single(text, _untyped)
        data = _value(node) if node is not None else None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"{source}:{mark.line + 1}" if mark else source
        reason = " ".join(filter(None, [err.context, err.problem]))
        kind = "" if isinstance(err, YamlLimitError) else "not valid YAML: "
        raise ClusterFileError(f"{where}: {kind}{reason}") from None
    except yaml.YAMLError as err:
        raise ClusterFileError(f"{source}: not valid YAML: {err}") from None
    except _YamlError as err:
        raise ClusterFileError(f"{source}:{err.line}: {err}") from None
    return cluster_from_mapping(data, source)


def load_cluster(path: Path) -> ClusterFile:
    """Read and validate a cluster file."""
    try:
        text = read_text(path)
    except OSError as err:
        raise ClusterFileError(f"{path}: {read_problem(err)}") from None
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
    from schematic.inputs.documents import validate_cluster

    return validate_cluster(dict(data), source)


def cluster_json_schema() -> dict[str, Any]:
    """JSON Schema of a cluster file, for editors (`talos-schematic schema cluster`)."""
    from schematic.inputs.documents import cluster_json_schema as schema

    return schema()
