"""Reading a cluster file: the one reader, typed by the one YAML rule.

Every cluster file is read here, key by key (:mod:`schematic.inputs.reading`): each problem is
reported as ``FILE:LINE: pool "NAME": KEY: what is wrong``, all of them at once. A pool's inline
``hardware`` is read as a profile (:func:`schematic.inputs.profiles.read_profile`) with the same
typing. The keys are listed in `docs/cluster-file.md`; the JSON Schema (`talos-schematic schema
cluster`) comes from :mod:`schematic.inputs.documents`, and a test holds it to this reader.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, get_args

from schematic.errors import ClusterFileError, closest_names, printable
from schematic.facts.media import BootSchematic, check_factory_version
from schematic.inputs.cluster_values import (
    DEFAULT_IMAGE_FACTORY_URL,
    OWNED_HINTS,
    POOL_TALOS_KEYS,
    TOOL_KEYS,
    ClusterFile,
    Flavour,
    HamiRequest,
    InstallConfig,
    KernelModuleSpec,
    NvidiaSettings,
    PoolSpec,
    TalosSettings,
    Tier,
    check_chart,
    check_custom_extensions,
    check_http_url,
    check_image_factory_ca,
    check_install_config,
    check_installer_repository,
    check_object_name,
    check_pool_name,
    check_registry_mirrors,
    check_release,
    check_replicas,
    cluster_name_problem,
    normal_endpoint,
    object_name_problem,
    pool_keys,
    shown,
    stripped_items,
    unattended_install_offered,
)
from schematic.inputs.media_options import read_boot, read_media
from schematic.inputs.profiles import read_profile
from schematic.inputs.reading import (
    At,
    Fields,
    KeyPath,
    Reading,
    choice,
    collector_paused,
    flag,
    optional,
    parse_yaml,
    read_list,
    text,
    texts,
)
from schematic.safe_yaml import InputKind, read_problem, read_text

__all__ = [
    "CLUSTER_KEYS",
    "cluster_from_mapping",
    "cluster_json_schema",
    "load_cluster",
    "parse_cluster",
]

CLUSTER_KEYS = ("cluster", "namespace", "cozystack", "addons", "talos", "nvidia", "pools")
_ADDONS_KEYS = ("hami",)
_HAMI_KEYS = ("enabled", "force")
_TALOS_KEYS = (
    "version",
    "imageFactoryURL",
    "installerRepository",
    "registryMirrors",
    "imageFactoryCA",
    "imageFactoryVersion",
    "installConfig",
    "customExtensions",
)
_COZYSTACK_KEYS = ("version",)
_NVIDIA_KEYS = ("flavour", "tier", "gdrdrv", "gds", "peermem")
_MODULE_KEYS = ("name", "parameters")
_NONE: tuple[str, ...] = ()
_NO_POOLS: tuple[PoolSpec, ...] = ()
_FLAVOURS: tuple[str, ...] = get_args(Flavour)
_TIERS: tuple[str, ...] = get_args(Tier)


def _endpoint(check: Callable[[str], str]) -> Callable[[object], str]:
    def read(value: object) -> str:
        return check(normal_endpoint(text(value)))

    return read


def _talos(value: object, at: At) -> TalosSettings | None:
    fields = Fields(at, value, _TALOS_KEYS)
    version = fields.need("version", check_release, "version: v1.13.9")
    url = fields.get("imageFactoryURL", _endpoint(check_http_url), DEFAULT_IMAGE_FACTORY_URL)
    # Unset: the release's default (TalosSettings fills it in). Empty is refused.
    repository = fields.get("installerRepository", _endpoint(check_installer_repository), "")
    mirrors = fields.get("registryMirrors", check_registry_mirrors, None)
    ca = fields.get("imageFactoryCA", check_image_factory_ca, None)
    factory = fields.get(
        "imageFactoryVersion", optional(lambda v: check_factory_version(text(v))), None
    )
    auto: InstallConfig = "auto"
    install = fields.get("installConfig", check_install_config, auto)
    if install == "unattended" and fields.ok and not unattended_install_offered(version):
        (at / "installConfig").problem(
            f"unattended: UnattendedInstallConfig arrives in Talos v1.14.0, not {version}; "
            "use machine-install (or auto)"
        )
    custom = fields.get("customExtensions", check_custom_extensions, _NONE)
    if not fields.ok:
        return None
    return TalosSettings(
        custom_extensions=custom,
        version=version,
        image_factory_url=url,
        installer_repository=repository,
        registry_mirrors=mirrors,
        image_factory_ca=ca,
        image_factory_version=factory,
        install_config=install,
    )


def _nvidia(value: object, at: At) -> NvidiaSettings | None:
    fields = Fields(at, value, _NVIDIA_KEYS)
    switch = optional(flag)
    settings = NvidiaSettings(
        flavour=fields.get("flavour", optional(choice(_FLAVOURS)), None),
        tier=fields.get("tier", optional(choice(_TIERS)), None),
        gdrdrv=fields.get("gdrdrv", switch, None),
        gds=fields.get("gds", switch, None),
        peermem=fields.get("peermem", switch, None),
    )
    return settings if fields.ok else None


def _module_name(value: object) -> str:
    if not text(value):
        raise ValueError("must not be empty")
    return str(value)


def _module(value: object, at: At) -> KernelModuleSpec | None:
    fields = Fields(at, value, _MODULE_KEYS)
    name = fields.need("name", _module_name, "name: nvidia")
    parameters = fields.get("parameters", texts, _NONE)
    return KernelModuleSpec(name=name, parameters=parameters) if fields.ok else None


def _modules(value: object, at: At) -> tuple[KernelModuleSpec, ...] | None:
    if value is None:
        at.problem("write [] to load no modules, or leave kernelModules out")
        return None
    return read_list(value, at, _module, "a list of {name, parameters}, e.g. [{name: nvidia}]")


def _pool_talos(value: object, at: At) -> None:
    """A pool's own ``talos``: only what may differ per pool."""
    fields = Fields(at, value, None)
    for key in fields.data:
        where = at / key
        if key == "schematicID":
            where.problem(f"set by talos-schematic, not by hand; {OWNED_HINTS['schematicID']}")
        elif key in ("imageFactoryURL", "installerRepository"):
            where.problem(
                "set it once in the file's top-level `talos`, so that every pool's schematic, "
                "boot image and installer come from one place"
            )
        elif key not in (*POOL_TALOS_KEYS, "version"):
            where.problem(
                "unknown key; a pool may set talos.version (its own release, to upgrade pool "
                "by pool), talos.registryMirrors and talos.imageFactoryCA"
            )
    fields.get("registryMirrors", check_registry_mirrors, None)
    fields.get("imageFactoryCA", check_image_factory_ca, None)


def _pool_release(value: object, at: At) -> str | None:
    """A pool's own ``talos.version``: its schematic, boot image, installer and values follow
    it (and the file's ``talos.version`` the other pools), so pools upgrade one at a time."""
    if not isinstance(value, dict) or "version" not in value:
        return None
    release: str | None = Fields(at, value, None).get("version", check_release, None)
    return release


def _pool_extras(fields: Fields, at: At) -> dict[str, Any]:
    """The Cozystack values a pool passes through, each one a value the chart takes."""
    known = pool_keys()
    passthrough = {}
    for key, value in fields.data.items():
        if key in TOOL_KEYS:
            continue
        if not isinstance(key, str) or key not in known:
            close = (
                closest_names(str(key), [*TOOL_KEYS, *known], most=1)
                if at.reading.collecting
                else []
            )
            hint = f"; did you mean {close[0]}?" if close else ""
            (at / key).problem(f"not a pool setting nor a Cozystack kubernetes-nodes value{hint}")
        elif known[key] == "tool":
            (at / key).problem(f"set by talos-schematic, not by hand; {OWNED_HINTS[key]}")
        elif key == "talos":
            _pool_talos(value, at / key)
        passthrough[key] = value
    at.check(fields.data, check_replicas)
    return passthrough


def _pool(value: object, at: At, line: int | None) -> PoolSpec | None:
    fields = Fields(at, value, None, "a mapping of pool keys")
    if not isinstance(value, dict):
        return None
    name = fields.need("name", lambda v: check_pool_name(text(v)), "name: gpu")
    profile = fields.get("profile", optional(text), None)
    hardware = fields.get("hardware", optional(_mapping), None)
    if (profile is None) == (hardware is None):
        at.problem("give exactly one of `profile` and `hardware`")
    inline = None
    if hardware is not None:
        inline = read_profile(hardware, at / "hardware", name or "pool")
    pool = PoolSpec(
        name=name,
        profile=profile,
        hardware=hardware,
        hardware_profile=inline,
        extensions=fields.get("extensions", lambda v: stripped_items(texts(v)), ()),
        kernel_args=fields.get("kernelArgs", lambda v: stripped_items(texts(v)), ()),
        kernel_modules=fields.read("kernelModules", _modules, None),
        nvidia=fields.read("nvidia", _nvidia, NvidiaSettings()),
        media=read_media(fields),
        boot=fields.read("boot", read_boot, BootSchematic()),
        passthrough=_pool_extras(fields, at),
        talos_version=_pool_release(fields.data.get("talos"), at / "talos"),
        line=line,
    )
    return pool if fields.ok else None


def _mapping(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(
            "must be a mapping of profile keys, e.g. {platform: kubevirt, gpus: [...]}"
        )
    return value


def _pools(value: object, at: At) -> tuple[PoolSpec, ...] | None:
    if not isinstance(value, list) or not value:
        at.problem("list at least one pool")
        return None
    start = at.problems
    lines = at.reading.item_lines(at.path)
    pools = [
        _pool(item, at / index, lines[index] if index < len(lines) else None)
        for index, item in enumerate(value)
    ]
    seen: set[str] = set()
    for index, pool in enumerate(pools):
        if pool is not None and pool.name in seen:
            (at / index).problem(f"pool name {pool.name!r} is used twice")
        if pool is not None:
            seen.add(pool.name)
    return tuple(pool for pool in pools if pool is not None) if at.problems == start else None


def _hami(value: object, at: At) -> HamiRequest | None:
    addons = Fields(at, value, _ADDONS_KEYS)
    hami = Fields(at / "hami", addons.data.get("hami", {}), _HAMI_KEYS)
    request = HamiRequest(
        enabled=hami.get("enabled", flag, False), force=hami.get("force", flag, False)
    )
    return request if addons.ok else None


def _chart(value: object, at: At) -> str | None:
    fields = Fields(at, value, _COZYSTACK_KEYS)
    return fields.get("version", optional(check_chart), None)


def _read_cluster(data: object, reading: Reading) -> ClusterFile:
    at = At(reading)
    if not isinstance(data, Mapping):
        raise ClusterFileError(f"{reading.source}: a cluster file must be a YAML mapping")
    fields = Fields(at, dict(data), CLUSTER_KEYS)
    cluster = fields.need("cluster", lambda v: check_object_name(text(v)), "cluster: mycluster")
    namespace = fields.get("namespace", optional(lambda v: check_object_name(text(v))), None)
    cozystack_version = fields.read("cozystack", _chart, None)
    hami = fields.read("addons", _hami, HamiRequest())
    talos = fields.read("talos", _talos, None)
    if "talos" not in fields.data:
        (at / "talos").problem("missing; add it, e.g. talos: {version: v1.13.9}")
    nvidia = fields.read("nvidia", _nvidia, NvidiaSettings())
    if "pools" not in fields.data:
        (at / "pools").problem("missing; list at least one pool")
    pools = fields.read("pools", _pools, _NO_POOLS)
    if fields.ok and isinstance(cluster, str) and (too_long := cluster_name_problem(cluster)):
        (at / "cluster").problem(too_long)
    elif fields.ok and isinstance(cluster, str):
        for index, pool in enumerate(pools):
            problem = object_name_problem(cluster, pool.name)
            if problem:
                (at / "pools" / index).problem(problem)
    reading.finish()
    assert talos is not None  # no problem recorded: every part was read
    key_lines = {
        key: line
        for key in ("", *CLUSTER_KEYS)
        if (key == "" or key in fields.data) and (line := reading.line((key,) if key else ()))
    }
    return ClusterFile(
        cluster=cluster,
        namespace=namespace,
        talos=talos,
        nvidia=nvidia,
        pools=pools,
        cozystack_version=cozystack_version,
        hami=hami,
        key_lines=key_lines,
    )


def _pool_label(data: object) -> Any:
    """Names a problem inside a pool by the pool's name: ``pool "gpu": nvidia.tier``."""

    def label(path: KeyPath) -> tuple[str, KeyPath]:
        if len(path) < 2 or path[0] != "pools" or not isinstance(path[1], int):
            return "", path
        pools = data.get("pools") if isinstance(data, Mapping) else None
        index = path[1]
        name = None
        if isinstance(pools, list) and index < len(pools) and isinstance(pools[index], Mapping):
            name = pools[index].get("name")
        if isinstance(name, str) and name.isprintable() and '"' not in name and len(name) <= 80:
            return f'pool "{name}"', path[2:]
        if isinstance(name, str):
            # A line break or NUL in the name must not break the message.
            return f"pools[{index}] (name {shown(name)})", path[2:]
        return f"pools[{index}]", path[2:]

    return label


def parse_cluster(text: str, source: str) -> ClusterFile:
    """A cluster file from its YAML text; errors name ``source``, the line, the pool and the
    key."""
    with collector_paused():
        data, node = parse_yaml(text, source, ClusterFileError, InputKind.CLUSTER)
        return _read_cluster(data, Reading(source, ClusterFileError, node, _pool_label(data)))


def load_cluster(path: Path) -> ClusterFile:
    """Read and validate a cluster file."""
    try:
        text = read_text(path, kind=InputKind.CLUSTER)
    except OSError as err:
        where = printable(str(path), one_line=True)
        raise ClusterFileError(f"{where}: {read_problem(err)}") from None
    return parse_cluster(text, str(path))


def cluster_from_mapping(data: object, source: str) -> ClusterFile:
    """A cluster file given as data already typed; errors name ``source``, the pool and the key
    (no line: there is no text)."""
    return _read_cluster(data, Reading(source, ClusterFileError, None, _pool_label(data)))


def cluster_json_schema() -> dict[str, Any]:
    """JSON Schema of a cluster file, for editors (`talos-schematic schema cluster`)."""
    from schematic.inputs.documents import cluster_json_schema as schema

    return schema()
