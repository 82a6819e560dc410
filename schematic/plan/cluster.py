"""A cluster file resolved into one plan per pool.

Each pool is a hardware profile (shipped, a path, or inline ``hardware:``) plus extras; resolving
it gives the pool's extensions (platform baseline + NVIDIA decision + extras, sorted as the
factory's web UI submits them), its schematic and ID, the kernel modules its machine config
must load, and the Cozystack keys the user passes through unchanged. Everything here is pure;
the files are read by :mod:`schematic.inputs`, the stage before this one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from schematic.core.canonical import sha256_hex
from schematic.core.decode import canonical_schematic
from schematic.errors import (
    ClusterFileError,
    NvidiaError,
    TalosSchematicError,
    UsageError,
    closest_names,
    printable,
)
from schematic.facts.catalog import (
    check_extensions,
    normalise_extension_name,
    overlay_image,
    overlay_releases,
)
from schematic.facts.chart_targets import ChartTarget, assumed_target, chart_target
from schematic.facts.media import ImageOptions, MetaValue, check_options, installer_repository_for
from schematic.facts.nvidia import (
    GpuRequest,
    KernelModule,
    NvidiaDecision,
    decide,
    describe_nvidia_extension,
    resolve_gpus,
)
from schematic.inputs.cluster_values import (
    ClusterFile,
    HamiRequest,
    NvidiaSettings,
    PoolSpec,
    TalosSettings,
)
from schematic.inputs.profile_values import HardwareProfile
from schematic.inputs.profiles import load_profile
from schematic.messages import Message, pools_label
from schematic.plan.references import PoolReferences, plan_references
from schematic.plan.release import Release, release_of

if TYPE_CHECKING:
    from schematic.core.model import Schematic

__all__ = [
    "ClusterPlan",
    "KernelModulesState",
    "PoolPlan",
    "baseline_extensions",
    "check_pool_names",
    "custom_extension_notes",
    "hami_notes",
    "non_nvidia_gpu_notes",
    "plan_cluster",
    "pools_by_schematic",
    "pools_label",
    "unloaded_module_notes",
    "with_factory_schematics",
]

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
    "siderolabs/nvidia-fs": KernelModule(name="nvidia_fs"),
}
_GDRDRV_EXTENSION = "siderolabs/nvidia-gdrdrv-device"

KernelModulesState = Literal["computed", "override", "opt-out", "none"]


# --- the plan ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PoolPlan:
    """Everything one pool needs, resolved; renderers read only this.

    Frozen and compared by value: two pools plan alike exactly when their plans are equal
    but for the name (what :mod:`schematic.plan.upgrade` relies on). Mappings are left out of the
    hash (they have none), so equal plans still hash alike.
    """

    name: str
    profile: HardwareProfile
    # The pool's Talos settings (the file's, at the pool's own release) and that release.
    talos: TalosSettings
    release: Release
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
    sysctls: Mapping[str, str] = field(hash=False)
    passthrough: Mapping[str, Any] = field(default_factory=dict, hash=False)
    # The offline ID, when the factory that registered the schematic stamped it and so
    # answered ``schematic_id`` instead (see :func:`with_factory_schematics`).
    offline_schematic_id: str | None = None
    # SecureBoot, overlay, META, bootloader, sector size: the profile's, then the pool's.
    media: ImageOptions = field(default_factory=ImageOptions)
    # The boot media's own schematic (``boot.schematic``), when it differs from the installer's.
    boot_canonical: str | None = None
    boot_schematic_id: str | None = None
    # The boot schematic's offline ID, when the factory that registered it stamped it.
    offline_boot_schematic_id: str | None = None

    @cached_property
    def references(self) -> PoolReferences:
        """What the pool's nodes boot and install from (every image reference carries the
        schematic ID, so the factory's stamped ID replaces it everywhere at once), and where
        the machine config pins the installer. Derived from the fields, so a plan with
        another ID or release never keeps a stale reference."""
        return plan_references(
            release=self.release,
            talos=self.talos,
            platform=self.profile.platform,
            architecture=self.profile.architecture,
            media=self.media,
            schematic_id=self.schematic_id,
            boot_schematic_id=self.boot_schematic_id,
        )

    @property
    def schematic(self) -> Schematic:
        """The schematic the cluster file asks for (built on demand: generating needs only the
        canonical text, and the model costs start-up time)."""
        from schematic.core.model import Schematic

        # The canonical text is this tool's own unless a factory stamped an owner into it.
        return Schematic.from_yaml(self.canonical).model_copy(update={"owner": ""})

    @property
    def posted_canonical(self) -> str:
        """What a tool that posts the schematic to the factory itself (talhelper, Terraform's
        provider) sends: the cluster file's schematic, never a factory-stamped text (that
        carries the factory's owner, and the factory stamps what it is sent again)."""
        return self.canonical if self.offline_schematic_id is None else self.schematic.canonical()

    @property
    def tenant_pool(self) -> bool:
        """Whether the pool is a Cozystack tenant pool: KubeVirt VMs that a KubernetesNodes
        object (and its values) describes. Bare-metal, board and other platforms' nodes join
        by their Talos machine config and boot media alone."""
        return self.profile.platform == "kubevirt"

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
    # `addons.hami` of the cluster file (see :func:`hami_notes`).
    hami: HamiRequest = field(default_factory=HamiRequest)
    # The cluster file's top-level key lines (:attr:`ClusterFile.key_lines`).
    key_lines: Mapping[str, int] = field(default_factory=dict, compare=False, hash=False)

    def at(self, key: str) -> str:
        """``FILE:LINE`` of the top-level ``key``, else of the file's mapping (where a missing
        key goes); the file alone when the plan was not read from text."""
        line = self.key_lines.get(key) or self.key_lines.get("")
        return f"{self.source}:{line}" if line else self.source

    @property
    def cozystack_target(self) -> ChartTarget:
        """The chart the values are for: the file's ``cozystack.version``, else the target
        :func:`schematic.facts.chart_targets.assumed_target` names (``--chart`` overrides it through
        :func:`schematic.plan.charts.fit_plan`)."""
        if self.cozystack_version is None:
            return assumed_target()
        return chart_target(self.cozystack_version)


def frozen_value(value: Any) -> Any:
    """A hashable key equal only for values that mean the same to the schematic and the plan.

    Sorting keys for JSON fails on a mapping whose keys mix types (``{1: x, model: y}`` in a
    hand-written ``hardware``), and JSON reads ``1`` and ``"1"``, or a date and its text, as one
    key, though they are different overlay options and different IDs. Each value keeps its
    type here; mapping pairs are ordered by their ``repr`` (total, whatever the key types). A
    frozen type is keyed by every field it compares, so a field added to it is in every key.
    """
    if isinstance(value, Mapping):
        pairs = ((frozen_value(k), frozen_value(v)) for k, v in value.items())
        return ("map", tuple(sorted(pairs, key=repr)))
    if isinstance(value, (list, tuple)):
        return ("list", tuple(frozen_value(item) for item in value))
    if isinstance(value, float) and value != value:
        return ("nan",)
    if is_dataclass(value) and not isinstance(value, type):
        compared = (f.name for f in fields(value) if f.compare)
        return (type(value).__name__, tuple(frozen_value(getattr(value, n)) for n in compared))
    try:
        hash(value)
    except TypeError:
        return (type(value).__name__, repr(value))
    return (type(value).__name__, value)


class _Resolver:
    """Per-run caches: thousands of pools usually share a few profiles and schematics."""

    def __init__(
        self,
        source: str,
        base_dir: Path,
        profile_dirs: Sequence[Path],
        custom_extensions: Sequence[str] = (),
    ) -> None:
        self.source = source
        # Names outside the catalogue the file declares (talos.customExtensions).
        self.custom_extensions = frozenset(custom_extensions)
        self.base_dir = base_dir
        self.profile_dirs = tuple(profile_dirs)
        self.profiles: dict[str, HardwareProfile] = {}
        self.decisions: dict[tuple[Any, ...], NvidiaDecision | None] = {}
        self.schematics: dict[tuple[Any, ...], tuple[str, str]] = {}
        self.checked: set[tuple[tuple[str, ...], str]] = set()
        self.resources: dict[tuple[GpuRequest, ...], tuple[str, ...]] = {}

    def profile(self, pool: PoolSpec) -> HardwareProfile:
        if pool.hardware_profile is not None:
            return pool.hardware_profile  # read with the cluster file
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
        self, gpus: tuple[GpuRequest, ...], profile: HardwareProfile, release: Release, nv: Any
    ) -> NvidiaDecision | None:
        flavour, tier, gdrdrv, gds, peermem = nv
        asked = {
            "arch": profile.architecture,
            "passthrough": profile.passthrough,
            "nvswitch": profile.nvswitch,
            "flavour": flavour,
            "tier": tier,
            "gdrdrv": gdrdrv,
            "gds": gds,
            "peermem": peermem,
        }
        # The key is what decide is asked: an argument added there is in it. The rules are the
        # release's tables', which the key names; the drivers are the release's own (a facts
        # file's, or assumed), named too.
        key = (gpus, release.tables, release.drivers, *asked.values())
        if key not in self.decisions:
            self.decisions[key] = decide(
                gpus,
                release.tables,
                **asked,
                drivers=release.nvidia_drivers(),
                rules=release.nvidia_rules,
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
        self,
        extensions: tuple[str, ...],
        kernel_args: tuple[str, ...],
        talos: str,
        where: str,
        media: ImageOptions | None = None,
        extra_meta: tuple[MetaValue, ...] = (),
    ) -> tuple[str, str]:
        """The canonical YAML and ID of the schematic of these extensions and kernel args, with
        the media options' fields (overlay, META, bootloader, SecureBoot, sector size)."""
        if (extensions, talos) not in self.checked:
            offered = release_of(talos).extensions | self.custom_extensions
            check_extensions(extensions, talos, where=where, offered=offered)
            self.checked.add((extensions, talos))
        options = media or ImageOptions()
        key = (extensions, kernel_args, options, frozen_value(options.overlay_fields()), extra_meta)
        if key not in self.schematics:
            custom = {
                "extraKernelArgs": kernel_args,
                "systemExtensions": {"officialExtensions": extensions},
                **options.customization_fields(extra_meta),
            }
            tree = {"overlay": options.overlay_fields(), "customization": custom}
            canonical = canonical_schematic(tree)
            self.schematics[key] = (canonical, sha256_hex(canonical))
        return self.schematics[key]


# What a pool's plan does not depend on: its name and pass-through values are set on the
# shared plan afterwards, and the inline hardware read as a profile is ``hardware`` again,
# named after its pool. Fields that do not compare (where the pool sits in its file) are
# left out by their own declaration.
_NOT_IN_SHAPE = frozenset({"name", "passthrough", "hardware_profile"})
_SHAPE_FIELDS = tuple(f.name for f in fields(PoolSpec) if f.compare and f.name not in _NOT_IN_SHAPE)


def pool_shape(pool: PoolSpec) -> tuple[Any, ...]:
    """What a pool's plan depends on besides its name and pass-through values: pools of one
    shape plan alike (and fail alike), so each shape is planned once. Every field of
    :class:`PoolSpec` is in it but those of ``_NOT_IN_SHAPE``, so a new one cannot be left out."""
    return tuple(frozen_value(getattr(pool, name)) for name in _SHAPE_FIELDS)


def plan_cluster(
    cluster: ClusterFile,
    *,
    source: str = "cluster.yaml",
    base_dir: Path | None = None,
    profile_dirs: Sequence[Path] = (),
    tables: str | None = None,
) -> ClusterPlan:
    """Resolve every pool; raises ClusterFileError naming the file, the pool and the problem.

    ``base_dir`` is where relative profile paths are looked up (the cluster file's directory);
    ``profile_dirs`` are searched for profile names before the shipped profiles. ``tables``
    plans the file's release with another release's packaged tables (a release beyond them;
    see :func:`schematic.plan.release.target_release`).
    """
    source = printable(source, one_line=True)  # a file name stays on its message's line
    talos = cluster.talos
    try:
        release = release_of(talos.version, tables)
    except TalosSchematicError as err:
        raise ClusterFileError(f"{source}: talos.version: {err}") from None
    resolver = _Resolver(source, base_dir or Path.cwd(), profile_dirs, talos.custom_extensions)
    pools = []
    shapes: dict[tuple[Any, ...], PoolPlan] = {}
    for pool in cluster.pools:
        # Pools differing only in name and pass-through values resolve alike.
        shape = pool_shape(pool)
        known = shapes.get(shape)
        if known is not None:
            pools.append(replace(known, name=pool.name, passthrough=pool.passthrough))
            continue
        try:
            pool_cluster, pool_release = _pool_release(pool, cluster, release, source)
            shapes[shape] = _plan_pool(pool, pool_cluster, pool_release, resolver)
            pools.append(shapes[shape])
        except ClusterFileError:
            raise
        except TalosSchematicError as err:
            refusal = err.refusal if isinstance(err, NvidiaError) else None
            raise ClusterFileError(_in_pool(source, pool, str(err)), gpu_refusal=refusal) from None
    plan = ClusterPlan(
        cluster=cluster.cluster,
        namespace=cluster.namespace,
        talos=talos,
        source=source,
        pools=tuple(pools),
        cozystack_version=cluster.cozystack_version,
        hami=cluster.hami,
        key_lines=cluster.key_lines,
    )
    hami_notes(plan)  # refuses HAMi on Talos GPU pools unless forced
    return plan


def with_factory_schematics(
    plan: ClusterPlan, stored: Mapping[str, tuple[str, str]]
) -> ClusterPlan:
    """The plan with the factory's ``(id, canonical body)`` for each offline ID in ``stored``
    (a pool's schematic or its boot media's).

    An Enterprise factory stamps ``owner`` into what it stores, so its ID is not the offline
    one; every output must then carry the factory's ID and body. ``schematic`` stays what the
    cluster file asked for: the extensions and kernel arguments are the same either way.
    """
    pools = tuple(_with_stored(pool, stored) for pool in plan.pools)
    return replace(plan, pools=pools)


def _with_stored(pool: PoolPlan, stored: Mapping[str, tuple[str, str]]) -> PoolPlan:
    """One pool with the factory's ID and body for its schematic and its boot schematic."""
    if pool.schematic_id in stored and stored[pool.schematic_id][0] != pool.schematic_id:
        pool = replace(
            pool,
            schematic_id=stored[pool.schematic_id][0],
            canonical=stored[pool.schematic_id][1],
            offline_schematic_id=pool.schematic_id,
        )
    boot = pool.boot_schematic_id
    if boot is not None and boot in stored and stored[boot][0] != boot:
        pool = replace(
            pool,
            boot_schematic_id=stored[boot][0],
            boot_canonical=stored[boot][1],
            offline_boot_schematic_id=boot,
        )
    return pool


def hami_notes(plan: ClusterPlan) -> list[Message]:
    """Raise ClusterFileError when ``addons.hami.enabled`` meets Talos GPU pools without
    ``force``; with ``force``, the warning saying what HAMi lacks there."""
    hami = plan.hami
    pools = [pool.name for pool in plan.pools if pool.nvidia is not None]
    if not hami.enabled or not pools:
        return []
    named = ", ".join(f'"{name}"' for name in pools[:3])
    if len(pools) > 3:
        named += f" and {len(pools) - 3} more"
    lacking = (
        "HAMi's device plugin has no CDI wiring for Talos: it hands pods the GPU device but "
        "not the driver files the Talos extensions keep on the host, so CUDA finds no driver. "
        "It would need to set CDI annotations (cdi.k8s.io/) resolved with the host's "
        "/usr/local/bin/nvidia-ctk, as the GPU Operator's device plugin does here"
    )
    if not hami.force:
        raise ClusterFileError(
            f"{plan.source}: addons.hami.enabled: refused for the Talos GPU pools {named}; "
            f"{lacking}. Leave HAMi off (the GPU Operator's device plugin serves the GPUs), "
            "or set addons.hami.force: true to write it anyway"
        )
    return [
        Message(
            level="warning",
            source=plan.source,
            pools=tuple(pools),
            cause="addons.hami.force: HAMi enabled for these Talos GPU pools, with the GPU "
            "Operator's device plugin off: CUDA in their pods finds no driver",
            fix="leave HAMi off (the GPU Operator's device plugin serves the GPUs); "
            "talos-schematic explain TS142",
            details=lacking,
        )
    ]


def custom_extension_notes(plan: ClusterPlan) -> list[Message]:
    """A note per group of pools naming extensions the file declares outside the catalogue:
    nothing offline can tell whether the factory serves them, so they are unverified."""
    users: dict[tuple[str, ...], list[str]] = {}
    for pool in plan.pools:
        custom = tuple(name for name in pool.extensions if name in pool.talos.custom_extensions)
        if custom:
            users.setdefault(custom, []).append(pool.name)
    return [
        Message(
            level="note",
            source=plan.source,
            pools=tuple(pools),
            cause=f"unverified: {', '.join(custom)} (talos.customExtensions) is not in the "
            "official catalogue",
            fix="--live-catalogue checks the factory's list",
            details="the factory must serve it (Image Factory v1.4.0+ extra extensions)",
        )
        for custom, pools in users.items()
    ]


def unloaded_module_notes(plan: ClusterPlan) -> list[Message]:
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
                Message(
                    level="note",
                    source=plan.source,
                    pools=(pool.name,),
                    cause=f"kernelModules {setting} does not load {', '.join(missing)}",
                    fix="list them in kernelModules, or load them on the node another way "
                    "(talos-schematic explain TS121)",
                    details="the NVIDIA extensions install them but do not load them, so the "
                    "GPUs stay unused",
                )
            )
    return notes


def check_pool_names(source: str, known: Sequence[str], wanted: Sequence[str]) -> None:
    """A UsageError (``--pool``) naming each pool ``source`` does not have, and its pools."""
    unknown = [name for name in dict.fromkeys(wanted) if name not in known]
    if unknown:
        raise UsageError(
            f"{source} has no pool {', '.join(map(repr, unknown))}; its pools: {', '.join(known)}",
            "--pool",
        )


def pools_by_schematic(plan: ClusterPlan) -> dict[str, list[PoolPlan]]:
    """Pools grouped by schematic ID, in file order."""
    groups: dict[str, list[PoolPlan]] = {}
    for pool in plan.pools:
        groups.setdefault(pool.schematic_id, []).append(pool)
    return groups


def boot_media_schematics(plan: ClusterPlan) -> list[tuple[str, str, str]]:
    """(label, ID, canonical body) of each distinct boot-media schematic (``boot.schematic``),
    labelled like :func:`pools_label` with " boot media", in file order."""
    names: dict[str, list[str]] = {}
    bodies: dict[str, str] = {}
    for pool in plan.pools:
        if pool.boot_schematic_id is not None and pool.boot_canonical is not None:
            names.setdefault(pool.boot_schematic_id, []).append(pool.name)
            bodies[pool.boot_schematic_id] = pool.boot_canonical
    return [
        (f"{pools_label(plan.source, pools)} boot media", schematic_id, bodies[schematic_id])
        for schematic_id, pools in names.items()
    ]


def _pool_release(
    pool: PoolSpec, cluster: ClusterFile, release: Release, source: str
) -> tuple[ClusterFile, Release]:
    """The cluster as the pool sees it, and its release: at the pool's own ``talos.version``,
    when it has one (a pool upgraded ahead of, or held behind, the others)."""
    if pool.talos_version is None or pool.talos_version == cluster.talos.version:
        return cluster, release
    try:
        own = release_of(pool.talos_version)
    except TalosSchematicError as err:
        raise ClusterFileError(f"{_pool_where(source, pool)}: talos.version: {err}") from None
    return replace(cluster, talos=replace(cluster.talos, version=pool.talos_version)), own


def _pool_where(source: str, pool: PoolSpec) -> str:
    """``cluster.yaml:12: pool "gpu"``: the file, the line where the pool starts, its name."""
    line = "" if pool.line is None else f":{pool.line}"
    return f'{source}{line}: pool "{pool.name}"'


def _in_pool(source: str, pool: PoolSpec, message: str) -> str:
    prefix = f"{_pool_where(source, pool)}: "
    # A profile's error lists one problem a line: each names the pool.
    lines = message.splitlines() or [""]
    return "\n".join(line if line.startswith(prefix) else prefix + line for line in lines)


def _plan_pool(
    pool: PoolSpec, cluster: ClusterFile, release: Release, resolver: _Resolver
) -> PoolPlan:
    source = resolver.source
    where = _pool_where(source, pool)
    # The release whose tables plan the pool (its own, unless it is beyond the tables).
    talos = str(release.tables)
    profile = resolver.profile(pool)

    extras = [normalise_extension_name(name) for name in (*profile.extensions, *pool.extensions)]
    nvidia_extras = {name: describe_nvidia_extension(name) for name in extras}
    nvidia_extras = {name: kind for name, kind in nvidia_extras.items() if kind is not None}
    # The pool's settings, then the cluster's, then the profile's GPUDirect defaults.
    machine = profile.gpudirect
    settings = pool.nvidia.over(cluster.nvidia).over(
        NvidiaSettings(gdrdrv=machine.gdrdrv, gds=machine.gds, peermem=machine.peermem)
    )
    gdrdrv = bool(settings.gdrdrv) or _GDRDRV_EXTENSION in nvidia_extras
    gpus = tuple(
        GpuRequest(id=gpu.id, count=gpu.count, architecture=gpu.architecture)
        for gpu in profile.nvidia_gpus
    )
    decision: NvidiaDecision | None = None
    if gpus:
        nv = (
            settings.flavour or "auto",
            settings.tier or "auto",
            gdrdrv,
            bool(settings.gds),
            bool(settings.peermem),
        )
        decision = resolver.decision(gpus, profile, release, nv)
    media = _pool_media(pool, profile, cluster, release, where)
    jetson = "jetson" in profile.name or (
        media.overlay is not None and media.overlay.name.startswith("jetson")
    )
    if jetson and nvidia_extras:
        raise ClusterFileError(
            f"{where}: extensions: {', '.join(sorted(nvidia_extras))} are the desktop and "
            "data-centre NVIDIA drivers, for discrete PCI GPUs; a Jetson's GPU is integrated "
            "in the Tegra SoC and driven by NVIDIA's L4T (JetPack) kernel, which no official "
            "Talos extension ships. Remove them; the Jetson pool runs CPU workloads"
        )
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

    _refuse_unpassed_gpus(profile, where)
    baseline = list(baseline_extensions(profile.platform, profile.cpu_vendor))
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
        extensions, kernel_args, talos, f"{where}: extensions", media
    )
    boot_canonical = boot_id = None
    if pool.boot:
        boot_canonical, boot_id = _boot_schematic(
            pool, profile, extensions, kernel_args, media, talos, where, resolver
        )
        if boot_id == schematic_id:
            boot_canonical = boot_id = None

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
        release=release,
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
        media=media,
        boot_canonical=boot_canonical,
        boot_schematic_id=boot_id,
    )


def baseline_extensions(platform: str, cpu_vendor: str | None = None) -> tuple[str, ...]:
    """What every pool of a platform carries before its GPUs and extras: the guest agent of its
    hypervisor, and on bare metal the CPU vendor's microcode."""
    names = [_GUEST_AGENTS.get(platform, "")]
    if platform == "metal" and cpu_vendor:
        names.append(_MICROCODE.get(cpu_vendor, ""))
    return tuple(name for name in names if name)


def _refuse_unpassed_gpus(profile: HardwareProfile, where: str) -> None:
    """A KubeVirt VM gets a GPU only through the ``gpus`` values this tool writes, and it can
    name a KubeVirt resource only for an NVIDIA GPU: any other GPU would be left out of the VM
    while its driver went into the image, so it is refused rather than dropped."""
    others = [gpu.id for gpu in profile.gpus if not gpu.is_nvidia]
    if others and profile.platform == "kubevirt":
        raise ClusterFileError(
            f"{where}: gpus: {', '.join(others)} {'is' if len(others) == 1 else 'are'} not "
            "NVIDIA; a KubeVirt pool gets its GPUs through Cozystack's gpus values, whose "
            "resource names this tool derives only for NVIDIA GPUs (NVIDIA's device plugin "
            "naming), so the VM would boot without it. Remove it from the pool's GPUs; on bare "
            "metal (platform: metal) an AMD GPU is kept, with siderolabs/amdgpu"
        )


def non_nvidia_gpu_notes(plan: ClusterPlan) -> list[Message]:
    """One note per pool holding a GPU the NVIDIA rules do not cover (outside KubeVirt, where
    such a GPU is refused): what the tool did for it, and what it leaves to the user."""
    notes = []
    for pool in plan.pools:
        others = [gpu.id for gpu in pool.profile.gpus if not gpu.is_nvidia]
        if not others:
            continue
        amd = [gpu for gpu in others if gpu.startswith(_AMD_GPU_VENDOR)]
        rest = [gpu for gpu in others if not gpu.startswith(_AMD_GPU_VENDOR)]
        said = []
        if amd:
            said.append(
                f"AMD GPU {', '.join(amd)}: {_AMDGPU} is in the schematic (its driver and "
                "firmware); no NVIDIA decision, kernel module list or GPU Operator applies"
            )
        if rest:
            said.append(
                f"GPU {', '.join(rest)} is neither NVIDIA nor AMD: no extension was added for "
                "it; put its vendor's extension (Intel: siderolabs/i915 or siderolabs/xe) in "
                "the pool's extensions"
            )
        notes.append(
            Message(level="note", source=plan.source, pools=(pool.name,), cause="; ".join(said))
        )
    return notes


def _pool_media(
    pool: PoolSpec, profile: HardwareProfile, cluster: ClusterFile, release: Release, where: str
) -> ImageOptions:
    """The pool's media options over its profile's, checked, with the overlay image filled."""
    media = pool.media.over(profile.media)
    talos = cluster.talos
    try:
        check_options(
            media,
            platform=profile.platform,
            architecture=profile.architecture,
            talos=str(release.tables),
            factory_version=talos.image_factory_version,
        )
        if media.secureboot_enabled:
            installer_repository_for(talos.installer_repository, secureboot=True)
    except ValueError as err:
        raise ClusterFileError(f"{where}: {err}") from None
    overlay = media.overlay
    if overlay is None:
        return media
    offered = release.overlays
    if overlay.name not in offered:
        hints = closest_names(overlay.name, offered)
        elsewhere = overlay_releases(overlay.name)
        detail = (
            f"offered by Talos {elsewhere[0]} … {elsewhere[-1]}"
            if elsewhere
            else "not an official overlay of any known release"
        )
        if hints:
            detail += "; did you mean " + ", ".join(hints) + "?"
        raise ClusterFileError(
            f"{where}: overlay.name: {overlay.name!r} is not an official overlay of Talos "
            f"{release.tables}: {detail}"
        )
    if not overlay.image:
        overlay = replace(overlay, image=overlay_image(overlay.name))
    return replace(media, overlay=overlay)


def _boot_schematic(
    pool: PoolSpec,
    profile: HardwareProfile,
    extensions: tuple[str, ...],
    kernel_args: tuple[str, ...],
    media: ImageOptions,
    talos: str,
    where: str,
    resolver: _Resolver,
) -> tuple[str, str]:
    """The boot media's schematic: the installer's plus what ``boot.schematic`` adds."""
    if profile.platform == "kubevirt":
        raise ClusterFileError(
            f"{where}: boot.schematic: a KubeVirt pool boots and upgrades from one schematic "
            "(Cozystack writes the same schematicID into the disk image and the installer); "
            "put the additions in the pool's extensions and kernelArgs instead"
        )
    added = tuple(normalise_extension_name(name) for name in pool.boot.extensions)
    boot_extensions = tuple(sorted({*extensions, *added}))
    boot_args = tuple(dict.fromkeys((*kernel_args, *pool.boot.kernel_args)))
    return resolver.schematic(
        boot_extensions,
        boot_args,
        talos,
        f"{where}: boot.schematic.extensions",
        media,
        pool.boot.meta,
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
