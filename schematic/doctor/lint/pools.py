"""Pool rules: NVIDIA extensions against the pool's GPUs, flavours, tiers, kernel modules.

A pool's GPUs are its ``gpus[].name`` resource names. They map back to devices through the
device table's KubeVirt resource names; several device IDs can share a name, and a rule
about the GPU generation fires only when it holds for every candidate device, so a name that
could be either of two generations is never refused on a guess. A pool with no
``nvidia.com/*`` GPU is a non-GPU pool.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from schematic.core.model import Schematic
from schematic.doctor.lint.extensions import (
    check_extension_names,
    check_extension_order,
    check_extensions_together,
)
from schematic.doctor.lint.findings import Collector
from schematic.doctor.lint.inventory import Cluster, Inventory, KernelModules, Pool, SchematicUse
from schematic.doctor.lint.schematics import SchematicResolver
from schematic.errors import TalosSchematicError
from schematic.facts.nvidia import (
    BPF_JIT_HARDEN_SYSCTL,
    BPF_JIT_HARDEN_UNTIL,
    NVIDIA_MODULES,
    PRE_TURING_LAST_BRANCH,
    Gpu,
    GpuRequest,
    NvidiaExtension,
    all_gpus,
    describe_nvidia_extension,
    describe_pci_function,
    fabric_of,
    nvidia_extension,
    nvlink5_hgx_count,
    resolve_gpus,
)
from schematic.facts.nvidia_rules import ReleaseRules, reviewed_through, rules_for
from schematic.facts.release_facts import drivers_of
from schematic.facts.talos import TalosVersion, driver_key

if TYPE_CHECKING:
    from schematic.facts.chart_targets import ChartTarget
    from schematic.inputs.profile_values import HardwareProfile

__all__ = ["LintContext", "check_clusters", "check_pools", "gpu_candidates"]

# machine.install.extensions has no effect from this release on (TS125).
_INSTALL_EXTENSIONS_IGNORED_FROM = (1, 10)


@dataclass
class LintContext:
    resolver: SchematicResolver
    talos: str | None = None  # --talos: overrides what the objects say
    out: Collector = field(default_factory=Collector)
    # --hardware: the machine standalone machine configs are for (they name no GPU).
    hardware: HardwareProfile | None = None
    # --chart: the kubernetes-nodes chart the values are for; None: not said.
    chart: ChartTarget | None = None


# --- GPUs from resource names -----------------------------------------------------------------


@functools.cache
def _by_resource_name() -> dict[str, tuple[Gpu, ...]]:
    table: dict[str, list[Gpu]] = {}
    for gpu in all_gpus():
        table.setdefault(gpu.kubevirt_resource_name, []).append(gpu)
    return {name: tuple(gpus) for name, gpus in table.items()}


def _tokens(resource: str) -> list[str]:
    return [t for t in resource.removeprefix("nvidia.com/").upper().split("_") if t]


@functools.cache
def gpu_candidates(resource: str) -> tuple[tuple[Gpu, ...], bool]:
    """Devices a resource name can stand for, and whether the match is exact.

    Exact: the name the device plugin builds from pci.ids. Otherwise, for names written by
    hand such as ``nvidia.com/GB202_RTX_PRO_6000``: devices whose resource name has, for each
    word of the given name, a word starting with it (at least two words), else the devices of
    the chip the first word names.
    """
    exact = _by_resource_name().get(resource)
    if exact:
        return exact, True
    query = _tokens(resource)
    if len(query) >= 2:
        fuzzy = tuple(
            gpu
            for name, gpus in _by_resource_name().items()
            for gpu in gpus
            if all(any(word.startswith(q) for word in _tokens(name)) for q in query)
        )
        if fuzzy:
            return fuzzy, False
    if query:
        chip = tuple(gpu for gpu in all_gpus() if gpu.chip and gpu.chip.upper() == query[0])
        if chip:
            return chip, False
    return (), False


def _describe(candidates: Sequence[Gpu]) -> str:
    architectures = sorted({gpu.architecture for gpu in candidates})
    if len(candidates) == 1:
        return f"{candidates[0].id} {candidates[0].name}, {candidates[0].architecture}"
    return f"{len(candidates)} candidate devices, {' or '.join(architectures)}"


# --- the checks -------------------------------------------------------------------------------


def _release(talos: str) -> TalosVersion | None:
    """The Talos release an object names; None when it is not a version."""
    try:
        return TalosVersion.parse(talos)
    except TalosSchematicError:
        return None


def _minor_line(talos: str) -> tuple[int, int] | None:
    release = _release(talos)
    return None if release is None else release.minor_line


def _tier_driver(talos: str, extension: NvidiaExtension) -> str | None:
    try:
        row = drivers_of(talos).row
    except TalosSchematicError:
        return None
    if extension.tier == "production":
        return row.production_driver
    return row.lts_driver


def _profile_gpus(hardware: HardwareProfile) -> tuple[tuple[Gpu, ...], str | None]:
    """The NVIDIA GPUs of a --hardware profile, resolved as generate resolves them; and why
    not, when the device table cannot place one."""
    requests = [
        GpuRequest(id=gpu.id, count=gpu.count, architecture=gpu.architecture)
        for gpu in hardware.nvidia_gpus
    ]
    try:
        return tuple(gpu for gpu, _ in resolve_gpus(requests).gpus), None
    except TalosSchematicError as error:
        return (), str(error)


class _PoolCheck:
    def __init__(self, pool: Pool, ctx: LintContext) -> None:
        self.pool = pool
        self.ctx = ctx
        self.out = ctx.out
        self.talos = ctx.talos or pool.talos
        self._version_noted = False
        # A pool that does not say its GPUs (a standalone machine config, talhelper patches, a
        # bare Omni or Terraform pool) has those of --hardware, so every GPU rule holds for it.
        self.hardware = ctx.hardware if not pool.gpus_known else None
        self.hardware_gpus: tuple[Gpu, ...] = ()
        self.hardware_unplaced: str | None = None
        if self.hardware is not None:
            self.hardware_gpus, self.hardware_unplaced = _profile_gpus(self.hardware)

    @property
    def gpus_known(self) -> bool:
        return self.pool.gpus_known or self.hardware is not None

    @property
    def has_nvidia_gpu(self) -> bool:
        if self.hardware is not None:
            return bool(self.hardware.nvidia_gpus)
        return bool(self.pool.nvidia_gpus)

    def gpu_names(self) -> str:
        if self.hardware is not None:
            return f"{self.hardware.name} (" + ", ".join(g.name for g in self.hardware_gpus) + ")"
        return ", ".join(g.name for g in self.pool.nvidia_gpus)

    def add(self, code: str, message: str, place: object = None) -> None:
        where = place if place is not None else self.pool.place
        file = getattr(where, "file", self.pool.place.file)
        line = getattr(where, "line", self.pool.place.line)
        self.out.add(code, message=message, file=file, line=line, obj=self.pool.name)

    def need_version(self, what: str) -> str | None:
        if self.talos is None and not self._version_noted:
            self._version_noted = True
            self.add(
                "TS003",
                f"pool {self.pool.name!r}: Talos version unknown; {what} not checked "
                "(set talos.version or pass --talos)",
            )
        return self.talos

    def run(self) -> None:
        pool = self.pool
        for file, line, key, first in pool.duplicate_keys:
            # go-yaml refuses a mapping key written twice: talosctl and the node reject the
            # config; read here as the later one wins, which is not what any node runs.
            self.out.add(
                "TS002",
                message=f"machine config: key {key} is written twice (lines {first} and {line}); "
                "Talos refuses the config",
                file=file,
                line=line,
                obj=pool.name,
                fix="merge the two into one key",
            )
        if pool.modules.state == "null":
            self.add(
                "TS120",
                f"pool {pool.name!r}: kernelModules is null; leave it unset for the NVIDIA "
                "default, or write a list ([] opts out)",
                pool.modules.place,
            )
        seen: set[str] = set()
        for use in pool.schematics:
            if use.id in seen:
                continue
            seen.add(use.id)
            resolution = self.ctx.resolver.resolve(use.id)
            if resolution.schematic is None:
                if not self.out.first(f"TS001 {use.id} {use.place.file}:{use.place.line}"):
                    continue
                why = f" ({resolution.origin})" if resolution.origin else ""
                self.add(
                    "TS001",
                    f"pool {pool.name!r}: schematic {use.id} ({use.role}) is not resolved{why}; "
                    "its extensions are not checked",
                    use.place,
                )
                continue
            self.schematic(use, resolution.schematic)
        self.boot_versus_installer()
        self.install_extensions()
        self.plain_installer()
        self.image_version()
        self.ignored_values()

    def image_version(self) -> None:
        """TS180: the image union pins another release than talos.version."""
        image, talos = self.pool.image_version, self.pool.talos_version
        if image is None or talos is None or image[0] == talos[0]:
            return
        self.add(
            "TS180",
            f"pool {self.pool.name!r}: {image[2]} {image[0]} differs from {talos[2]} "
            f"{talos[0]} ({talos[1].file}:{talos[1].line}); the release the pool runs then "
            "depends on whether its chart reads the image union",
            image[1],
        )

    def ignored_values(self) -> None:
        """TS181: keys the chart named by --chart does not read (it ignores them silently)."""
        from schematic.plan.charts import charts_with, ignored_consequence

        chart, keys = self.ctx.chart, self.pool.value_keys
        if chart is None or keys is None:
            return
        for key, place in keys.items():
            if key == "talos" or chart.accepts(key):
                continue
            self.out.add(
                "TS181",
                message=f"pool {self.pool.name!r}: {key}: {chart.title}'s kubernetes-nodes "
                "chart has no "
                f"{key} value and ignores it, so {ignored_consequence(key)}",
                file=place.file,
                line=place.line,
                obj=self.pool.name,
                fix=f"remove {key}, or target a chart with it ({charts_with(key)})",
            )

    def schematic(self, use: SchematicUse, schematic: Schematic) -> None:
        pool = self.pool
        where = f"pool {pool.name!r}: {use.role} {use.id}"
        nvidia = [d for e in schematic.extensions if (d := describe_nvidia_extension(e))]
        kmods = [e for e in nvidia if e.family == "kernel-modules"]
        if not self.has_nvidia_gpu and nvidia and self.gpus_known:
            names = ", ".join(e.name for e in nvidia)
            if self.hardware is not None:
                message = (
                    f"{where} carries {names}, but {self.hardware.name} (--hardware) has no "
                    "NVIDIA GPU"
                )
                self.add("TS101", message, use.place)
            elif use.inherited:
                message = (
                    f"pool {pool.name!r} has no NVIDIA GPU but inherits the cluster-wide "
                    f"talos.schematicID {use.id}, which carries {names}"
                )
                self.add("TS101", message, pool.place)
            else:
                message = f"{where} carries {names}, but the pool has no nvidia.com/* GPU"
                self.add("TS101", message, use.place)
        if self.has_nvidia_gpu:
            self.gpu_pool(use, where, nvidia)
        elif not self.gpus_known and nvidia:
            self.nvidia_set(use, where, nvidia)
        self.kernel_modules(use, where, bool(kmods))
        self.nvlink5_fabric_manager(use, where, nvidia)
        self.nvidia_sysctl(where, bool(kmods))
        if schematic.extensions:
            talos = self.need_version("extension names")
            if talos is not None:
                check_extension_names(
                    schematic.extensions, talos, where, use.place, self.out, pool.name
                )
            else:
                check_extensions_together(
                    schematic.extensions, where, use.place, self.out, pool.name
                )
        check_extension_order(schematic, where, use.place, self.out, pool.name)

    def gpu_pool(self, use: SchematicUse, where: str, nvidia: list[NvidiaExtension]) -> None:
        kmods = [e for e in nvidia if e.family == "kernel-modules"]
        toolkit = [e for e in nvidia if e.family == "container-toolkit"]
        gpu_names = self.gpu_names()
        if not kmods:
            self.add("TS110", f"{where} has no NVIDIA kernel modules for {gpu_names}", use.place)
        if not toolkit:
            self.add("TS111", f"{where} has no NVIDIA container toolkit for {gpu_names}", use.place)
        self.nvidia_set(use, where, nvidia)
        if self.hardware is None:
            for gpu in self.pool.nvidia_gpus:
                self.gpu(use, where, gpu.name, gpu.place, kmods)
            return
        if self.hardware_unplaced is not None:
            self.add(
                "TS114",
                f"pool {self.pool.name!r}: {self.hardware.name} (--hardware): "
                f"{self.hardware_unplaced}; GPU-generation checks skipped",
                use.place,
            )
        for found in self.hardware_gpus:
            for kmod in kmods:
                self.flavour_and_driver(use, where, self.hardware.name, (found,), kmod)

    def nvidia_set(self, use: SchematicUse, where: str, nvidia: list[NvidiaExtension]) -> None:
        """The NVIDIA extensions agree with each other, whatever the GPUs."""
        kmods = [e for e in nvidia if e.family == "kernel-modules"]
        # An untiered name beside a tiered one builds as LTS: tiered names exist from v1.8.0,
        # where the factory takes the old name for its -lts successor (catalog.factory_alias).
        tiers = {e.tier or "lts" for e in nvidia if e.family != "gdrdrv"}
        if len(tiers) > 1:
            listed = ", ".join(e.name for e in nvidia if e.family != "gdrdrv")
            self.add("TS112", f"{where} mixes NVIDIA tiers: {listed}", use.place)
        flavours = {e.flavour for e in kmods}
        if len(flavours) > 1:
            listed = ", ".join(e.name for e in kmods)
            self.add("TS113", f"{where} carries both kernel-module flavours: {listed}", use.place)

    def gpu(
        self,
        use: SchematicUse,
        where: str,
        name: str,
        place: object,
        kmods: list[NvidiaExtension],
    ) -> None:
        candidates, exact = gpu_candidates(name)
        if not candidates:
            self.add(
                "TS114",
                f"pool {self.pool.name!r}: GPU {name} matches no device in the table; "
                "GPU-generation checks skipped",
                place,
            )
            return
        if not exact:
            self.add(
                "TS114",
                f"pool {self.pool.name!r}: GPU {name} is not a name the device plugin "
                f"advertises; checked as {_describe(candidates)}",
                place,
            )
        for kmod in kmods:
            self.flavour_and_driver(use, where, name, candidates, kmod)

    def flavour_and_driver(
        self,
        use: SchematicUse,
        where: str,
        gpu_name: str,
        candidates: Sequence[Gpu],
        kmod: NvidiaExtension,
    ) -> None:
        what = f"{gpu_name} ({_describe(candidates)})"
        if kmod.flavour == "proprietary" and all(g.open_only and not g.gb10 for g in candidates):
            self.add(
                "TS103",
                f"{where}: {what} needs the open kernel modules; {kmod.name} loads and finds "
                "no device",
                use.place,
            )
        if all(g.gb10 for g in candidates) and self._gb10_cuda_broken():
            self.add(
                "TS107",
                f"{where}: {what} (GB10) cannot start CUDA on Talos {self.talos or '1.13+'}: "
                "the arm64 kernel lacks CONFIG_ARM_SMMU_V3_SVA (siderolabs/talos#14087)",
                use.place,
            )
        gb10 = self._gb10_flavour() if all(g.gb10 for g in candidates) else None
        if gb10 is not None and kmod.flavour != gb10:
            self.add(
                "TS103",
                f"{where}: {what} (GB10) works on Talos {self.talos or '1.13+'} only with the "
                f"{gb10} modules (the NVIDIA rules table), not {kmod.name}",
                use.place,
            )
        if kmod.flavour == "open" and all(g.pre_turing for g in candidates):
            self.add(
                "TS104",
                f"{where}: {what} has no GSP; the open modules {kmod.name} cannot drive it "
                f"(use {nvidia_extension('kernel-modules', flavour='proprietary', tier='lts')})",
                use.place,
            )
        talos = self.need_version("the tier's driver")
        if talos is None:
            return
        driver = _tier_driver(talos, kmod)
        if driver is None:
            return
        if (
            kmod.flavour == "proprietary"
            and all(g.pre_turing for g in candidates)
            and driver_key(driver)[0] > PRE_TURING_LAST_BRANCH
        ):
            self.add(
                "TS105",
                f"{where}: {kmod.name} is driver {driver} on Talos {talos}, which dropped "
                f"{what}; only the {PRE_TURING_LAST_BRANCH} branch (lts) drives it",
                use.place,
            )
        minimums = [g.first_open_driver for g in candidates if g.open_only or g.gb10]
        known = [m for m in minimums if m]
        if len(known) == len(candidates) and all(driver_key(driver) < driver_key(m) for m in known):
            needed = min(known, key=driver_key)
            self.add(
                "TS106",
                f"{where}: {kmod.name} is driver {driver} on Talos {talos}; {what} needs "
                f"{needed} or newer",
                use.place,
            )

    def kernel_modules(self, use: SchematicUse, where: str, has_kmods: bool) -> None:
        pool = self.pool
        for modules in (pool.modules, pool.machine_config_modules):
            if modules is None or modules.state != "list":
                continue
            listed = sorted(set(NVIDIA_MODULES) & set(modules.names))
            if listed and not has_kmods:
                self.add(
                    "TS122",
                    f"{where} has no NVIDIA kernel modules, but {modules.source} loads "
                    f"{', '.join(listed)}",
                    modules.place,
                )
        opted_out = pool.modules.state == "list" and not pool.modules.names
        if opted_out and (self.has_nvidia_gpu or has_kmods):
            self.add(
                "TS121",
                f"pool {pool.name!r}: kernelModules: [] turns off loading the NVIDIA "
                "modules; the extensions do not load them",
                pool.modules.place,
            )
        self.machine_config_loads(where, has_kmods, pool.machine_config_modules)
        self.chart_loads(where, has_kmods)

    def chart_loads(self, where: str, has_kmods: bool) -> None:
        """TS123 for values: on a chart without kernelModules (v1.6.x, main), an NVIDIA GPU
        pool's machine config loads no NVIDIA module, whatever the values say."""
        chart, pool = self.ctx.chart, self.pool
        if chart is None or chart.nvidia_modules_by_default or pool.rendered:
            return
        if not (pool.nvidia_gpus and has_kmods) or pool.machine_config_modules is not None:
            return
        if pool.modules.state == "list" and not chart.kernel_modules:
            listed = "its kernelModules list is ignored"
        elif pool.modules.state == "unset":
            listed = "it has no kernelModules"
        else:
            return
        self.out.add(
            "TS123",
            message=f"{where}: {chart.title}'s chart loads no nvidia module ({listed}); the "
            "extensions "
            "do not load it themselves, and the talos-reconcile Job rewrites the "
            "TalosConfigTemplate from a fixed template, so there is no durable way to load it "
            "on this chart",
            file=pool.place.file,
            line=pool.place.line,
            obj=pool.name,
            fix="move to a chart with kernelModules (--chart pr3571 or osimage)",
        )

    def machine_config_loads(
        self, where: str, has_kmods: bool, modules: KernelModules | None
    ) -> None:
        gpu_pool = self.has_nvidia_gpu or not self.gpus_known
        if modules is None or not gpu_pool or not has_kmods:
            return
        if "nvidia" not in modules.names:
            # The chart's word is for a pool the chart makes (its values or its rendered
            # objects); a talhelper, topf, Omni or Terraform node loads what its own config says.
            chart = (
                self.ctx.chart if self.pool.value_keys is not None or self.pool.rendered else None
            )
            fix = None
            if chart is not None and chart.nvidia_modules_by_default:
                fix = "leave kernelModules unset (the chart loads the NVIDIA set) or list them"
            elif chart is not None:
                fix = "move to a chart with kernelModules (--chart pr3571 or osimage)"
            # Certain where the node's NVIDIA GPU is stated (a rendered pool's VM template),
            # or where its whole machine config was read: no module loads, so the node either
            # drives no GPU or, with none, waits on the NVIDIA services and loops (TS101).
            # A machine config alone may be one patch of several.
            self.out.add(
                "TS123",
                message=f"{where}: the machine config loads no nvidia module; the extensions "
                "do not "
                "load it themselves",
                file=getattr(modules.place, "file", self.pool.place.file),
                line=getattr(modules.place, "line", self.pool.place.line),
                obj=self.pool.name,
                fix=fix,
                certain=self.has_nvidia_gpu or self.pool.config_complete,
            )

    def nvidia_sysctl(self, where: str, has_kmods: bool) -> None:
        """Talos 1.12 and older need a sysctl on NVIDIA nodes; checked in machine configs read
        here (a Cozystack values file does not show the chart's)."""
        pool = self.pool
        if pool.sysctls is None or not has_kmods:
            return
        talos = self.need_version("the NVIDIA sysctl")
        line = None if talos is None else _minor_line(talos)
        if line is None or line > BPF_JIT_HARDEN_UNTIL:
            return
        if pool.sysctls.get(BPF_JIT_HARDEN_SYSCTL) != "1":
            modules = pool.machine_config_modules
            self.add(
                "TS124",
                f"{where}: NVIDIA nodes on Talos {talos} need sysctl {BPF_JIT_HARDEN_SYSCTL}: 1, "
                "and the machine config does not set it",
                modules.place if modules else None,
            )

    def install_extensions(self) -> None:
        place = self.pool.install_extensions
        line = None if self.talos is None else _minor_line(self.talos)
        if place is None or (line is not None and line < _INSTALL_EXTENSIONS_IGNORED_FROM):
            return
        self.add(
            "TS125",
            f"pool {self.pool.name!r}: machine.install.extensions has no effect since Talos "
            "1.10; extensions come only from the image's schematic",
            place,
        )

    def _rules(self) -> ReleaseRules | None:
        """The NVIDIA rules table's answers for this pool's Talos (v1.13.0 when it names none);
        None when its release is not a version."""
        release = _release(self.talos or "v1.13.0")
        return None if release is None else rules_for(release)

    def _gb10_cuda_broken(self) -> bool:
        """Whether the rules table says CUDA cannot start on GB10 on this pool's Talos."""
        answer = None if (rules := self._rules()) is None else rules.gb10_cuda
        return answer is not None and answer.value == "broken"

    def _gb10_flavour(self) -> str | None:
        """The flavour the rules table gives GB10 on this pool's Talos (proprietary if unknown)."""
        answer = None if (rules := self._rules()) is None else rules.gb10_flavour
        if answer is None or answer.value not in ("open", "proprietary"):
            return None
        return answer.value

    def nvlink5_fabric_manager(
        self, use: SchematicUse, where: str, nvidia: list[NvidiaExtension]
    ) -> None:
        """TS155: the fabric manager on NVLink-5 hardware needs ib_umad (the NVIDIA rules
        table's modules for the release) loaded."""
        hardware, modules = self.ctx.hardware, self.pool.machine_config_modules
        fabric = [e.name for e in nvidia if e.family == "fabric-manager"]
        if not fabric or hardware is None or self.pool.gpus_known or modules is None:
            return
        if hardware.platform != "metal":
            return
        counts = [
            (found, gpu.count)
            for gpu in hardware.nvidia_gpus
            if isinstance(found := describe_pci_function(gpu.id), Gpu)
        ]
        if not fabric_of(counts, nvswitch=hardware.nvswitch, passthrough=False).nvlink5:
            return
        release = None if self.talos is None else _release(self.talos)
        needed = rules_for(release or reviewed_through()).nvlink5_kernel_modules
        missing = [m for m in (needed.value.split() if needed else ()) if m not in modules.names]
        if not missing:
            return
        gpu = next(found.name for found, _ in counts if found.nvlink5_hgx)
        self.add(
            "TS155",
            f"{where} carries {', '.join(fabric)} for {hardware.name} "
            f"({nvlink5_hgx_count(counts)}x {gpu}, NVLink-5), but the machine config does not "
            f"load {', '.join(missing)}: the fabric manager fails with NV_WARN_NOTHING_TO_DO "
            "and CUDA answers CUDA_ERROR_SYSTEM_NOT_READY",
            modules.place or use.place,
        )

    def plain_installer(self) -> None:
        place = self.pool.plain_installer
        if place is None or self.talos is None:
            return
        from schematic.errors import TalosSchematicError
        from schematic.facts.talos import (
            METAL_INSTALLER_FROM,
            TalosVersion,
            vanilla_installer_image,
        )

        try:
            version = TalosVersion.parse(self.talos)
        except TalosSchematicError:
            return
        if version.release >= METAL_INSTALLER_FROM:
            self.add(
                "TS156",
                f"pool {self.pool.name!r}: ghcr.io/siderolabs/installer is not published for "
                f"Talos {METAL_INSTALLER_FROM.major}.{METAL_INSTALLER_FROM.minor} and newer; "
                f"vanilla Talos {version} installs from {vanilla_installer_image(version)}",
                place,
            )

    def boot_versus_installer(self) -> None:
        boot = [u for u in self.pool.schematics if u.role == "boot disk"]
        installer = [u for u in self.pool.schematics if u.role == "installer image"]
        for disk in boot:
            self.overlay_platform(disk)
            for image in installer:
                self.secureboot_pair(disk, image)
                if disk.id != image.id:
                    self.add(
                        "TS130",
                        f"pool {self.pool.name!r} boots schematic {disk.id} "
                        f"({disk.place.file}:{disk.place.line}) but upgrades to "
                        f"{image.id} (machine.install.image)",
                        image.place,
                    )

    def secureboot_pair(self, disk: SchematicUse, image: SchematicUse) -> None:
        """TS132: a SecureBoot installer with a non-SecureBoot boot medium, or the reverse."""
        from schematic.doctor.lint.media import is_secureboot_installer, is_secureboot_medium

        if not disk.reference or not image.reference:
            return
        boot_secure = is_secureboot_medium(disk.reference)
        install_secure = is_secureboot_installer(image.reference)
        if boot_secure == install_secure:
            return
        booted, installed = (
            ("SecureBoot", "non-SecureBoot")
            if boot_secure
            else (
                "non-SecureBoot",
                "SecureBoot",
            )
        )
        self.add(
            "TS132",
            f"pool {self.pool.name!r} boots a {booted} medium ({disk.place.file}:"
            f"{disk.place.line}) but installs from a {installed} installer "
            f"({image.reference})",
            image.place,
        )

    def overlay_platform(self, disk: SchematicUse) -> None:
        """TS134: a schematic with a board overlay booted on a platform that cannot use it."""
        from schematic.doctor.lint.media import medium_platform

        platform = medium_platform(disk.reference)
        schematic = self.ctx.resolver.resolve(disk.id).schematic
        if platform is None or schematic is None or not schematic.overlay.name:
            return
        if platform == ("metal", "arm64"):
            return
        self.add(
            "TS134",
            f"pool {self.pool.name!r} boots schematic {disk.id} with overlay "
            f"{schematic.overlay.name!r} as {platform[0]}-{platform[1]}; board overlays "
            "apply to metal-arm64 images only",
            disk.place,
        )


def check_pools(inventory: Inventory, ctx: LintContext) -> None:
    chart = ctx.chart
    for pool in inventory.pools:
        if pool.node_group and chart is not None and not chart.app_node_groups:
            # The release's Kubernetes app does not read spec.nodeGroups: the group is no
            # pool at all, so what it says is not checked as one.
            ctx.out.add(
                "TS182",
                message=f"pool {pool.name!r}: {chart.title}'s Kubernetes app has no "
                "spec.nodeGroups "
                "(cozystack/cozystack#3315 removed them), so this node group creates no "
                "workers; its GPUs, schematic and kernel modules apply to nothing",
                file=pool.place.file,
                line=pool.place.line,
                obj=pool.name,
            )
            continue
        _PoolCheck(pool, ctx).run()


def _nvidia_extensions(schematic: Schematic) -> list[str]:
    return [e for e in schematic.extensions if describe_nvidia_extension(e)]


def _check_cluster(cluster: Cluster, ctx: LintContext) -> None:
    use = cluster.schematic
    if use.role == "chart default":
        return
    resolution = ctx.resolver.resolve(use.id)
    if resolution.schematic is None:
        if not ctx.out.first(f"TS001 {use.id} {use.place.file}:{use.place.line}"):
            return
        ctx.out.add(
            "TS001",
            message=f"cluster {cluster.name!r}: cluster-wide talos.schematicID {use.id} is not "
            "resolved; "
            "its extensions are not checked",
            file=use.place.file,
            line=use.place.line,
            obj=cluster.name,
        )
        return
    nvidia = _nvidia_extensions(resolution.schematic)
    chart = ctx.chart
    read = [p for p in cluster.pools if not (p.node_group and chart and not chart.app_node_groups)]
    plain = [pool.name for pool in read if not pool.nvidia_gpus]
    if nvidia and plain:
        ctx.out.add(
            "TS102",
            message=f"cluster {cluster.name!r}: cluster-wide talos.schematicID "
            f"{use.id} carries "
            f"{', '.join(nvidia)}, and the cluster has pools without an NVIDIA GPU: "
            f"{', '.join(plain)}",
            file=use.place.file,
            line=use.place.line,
            obj=cluster.name,
        )


def check_clusters(inventory: Inventory, ctx: LintContext) -> None:
    for cluster in inventory.clusters:
        _check_cluster(cluster, ctx)
