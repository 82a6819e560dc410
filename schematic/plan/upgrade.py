"""What a Talos upgrade does to each pool: two plans compared, before any node is touched.

A Talos release pins its NVIDIA drivers, so bumping ``talos.version`` can move a GPU pool to
another driver branch, rename its extensions, drop its GPU (the 595 branch no longer drives
Volta), change what its machine config loads (Talos 1.14 writes ``KernelModuleConfig``
documents) and, through all of these, its schematic ID. :func:`plan_target` plans the cluster
file at the target release pool by pool, keeping a pool that cannot be planned there as a
:class:`PoolRefusal` with the ways out; :func:`compare_plans` compares the two plans and says,
per pool, what changes and what the running nodes need. Both are pure; rendering the report
is :mod:`schematic.output.render.upgrade`'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from schematic.errors import CatalogError, ClusterFileError, GpuRefusal, TalosSchematicError
from schematic.facts.catalog import resolve_version, talos_versions
from schematic.facts.chart_targets import IMMUTABLE_TEMPLATE_ISSUE, ChartTarget, Layout
from schematic.facts.nvidia import KernelModule, describe_nvidia_extension
from schematic.facts.talos import METAL_INSTALLER_FROM, TalosVersion
from schematic.inputs.cluster_values import ClusterFile, NvidiaSettings, PoolSpec
from schematic.output.render.cozystack import image_factory_ca, tool_values
from schematic.output.render.machineconfig import (
    KERNEL_MODULE_DOCUMENTS_FROM,
    MIRROR_DOCUMENTS_FROM,
    patch_without_installer,
)
from schematic.output.render.urls import boot_image_url, installer_image, pool_installer_repository
from schematic.plan.cluster import ClusterPlan, PoolPlan, plan_cluster

__all__ = [
    "COZYSTACK_IMMUTABLE_CONFIG_ISSUE",
    "DriverState",
    "NodeAction",
    "PoolChange",
    "PoolRefusal",
    "TargetPlan",
    "UpgradeReport",
    "check_live_names",
    "compare_plans",
    "direction_notes",
    "plan_at",
    "plan_target",
    "target_release",
]

# A TalosConfigTemplate's spec cannot change: how a changed machine config reaches a pool depends
# on how its chart names the template (ChartTarget.config_change_reach).
COZYSTACK_IMMUTABLE_CONFIG_ISSUE = IMMUTABLE_TEMPLATE_ISSUE

Status = Literal["unchanged", "changed", "breaking", "added", "removed"]
_PINNABLE_TIERS: tuple[Literal["lts", "production"], ...] = ("lts", "production")
# Refusals of the card itself at the target release: another card is a way out.
_CARD_REFUSALS = frozenset({GpuRefusal.DRIVER, GpuRefusal.FLAVOUR, GpuRefusal.UNSUPPORTED_GPU})


@dataclass(frozen=True)
class PoolRefusal:
    """A pool that cannot be planned at the target release: why, and the ways out."""

    name: str
    reason: str
    fixes: tuple[str, ...]
    # Why the pool's GPUs were refused, when that is what stopped it.
    gpu_refusal: GpuRefusal | None = None


@dataclass(frozen=True)
class TargetPlan:
    """The cluster file planned at the target release, one entry per pool in file order."""

    cluster: str
    talos: str
    pools: tuple[PoolPlan | PoolRefusal, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class DriverState:
    """The NVIDIA driver a pool runs."""

    flavour: str
    tier: str | None
    driver: str
    container_toolkit: str

    def __str__(self) -> str:
        tier = f" {self.tier}" if self.tier else ""
        return f"{self.flavour}{tier} {self.driver}"


@dataclass(frozen=True)
class NodeAction:
    """What the pool's running nodes need: ``kind`` is image, recreate or patch."""

    kind: Literal["image", "recreate", "patch"]
    text: str
    command: str = ""


@dataclass(frozen=True)
class PoolChange:
    """One pool before and after the upgrade."""

    name: str
    status: Status
    # None on the side where the pool does not exist (added, removed) or is refused.
    schematic_before: str | None
    schematic_after: str | None
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    renamed: tuple[tuple[str, str], ...] = ()
    kernel_args_added: tuple[str, ...] = ()
    kernel_args_removed: tuple[str, ...] = ()
    driver_before: DriverState | None = None
    driver_after: DriverState | None = None
    driver_notes: tuple[str, ...] = ()
    modules_before: tuple[KernelModule, ...] = ()
    modules_after: tuple[KernelModule, ...] = ()
    machine_config: tuple[str, ...] = ()
    installer_before: str | None = None
    installer_after: str | None = None
    refusal: PoolRefusal | None = None
    actions: tuple[NodeAction, ...] = ()
    # Why Cozystack replaces the pool's machines (a KubeVirt pool whose boot disk changes);
    # empty when it does not.
    replaced: tuple[str, ...] = ()
    # What the pool's generated output gains or loses besides IDs and versions (a values key,
    # the installer repository), each with why.
    output: tuple[str, ...] = ()

    @property
    def extensions_changed(self) -> bool:
        return bool(self.added or self.removed or self.renamed)

    @property
    def modules_changed(self) -> bool:
        return self.modules_before != self.modules_after


@dataclass(frozen=True)
class UpgradeReport:
    """Every pool's change for one upgrade; ``breaking`` when any pool cannot follow."""

    cluster: str
    source: str
    talos_before: str
    talos_after: str
    pools: tuple[PoolChange, ...]
    notes: tuple[str, ...] = ()

    @property
    def breaking(self) -> bool:
        return any(pool.status == "breaking" for pool in self.pools)


# --- the target release ------------------------------------------------------------------------


def target_release(wanted: str) -> tuple[str, str, str]:
    """``(release, planned_as, note)`` for a ``--to``/``--from`` release.

    ``planned_as`` is the release whose packaged tables the plan uses: the release itself when
    the catalogue knows it or a newer patch of a known minor (the tables say which patch they
    use), and the newest known release for anything beyond the tables, with a note saying so.
    Raises CatalogError for text that is not a release.
    """
    version = TalosVersion.parse(wanted)
    if version.prerelease:
        raise CatalogError(
            f"{wanted!r} is a pre-release; upgrade plans are for releases such as v1.13.9"
        )
    known = talos_versions()
    newest = TalosVersion.parse(known[-1])
    if version.minor_line > newest.minor_line:
        note = (
            f"Talos {version} is newer than the packaged tables (newest {newest}); planned with "
            f"{newest}'s extensions and NVIDIA drivers, which may differ from {version}'s: check "
            "with --live-catalogue and the release notes"
        )
        return str(version), str(newest), note
    resolve_version(str(version))  # raises, naming the closest known releases
    if str(version) not in known:
        same_line = [v for v in known if TalosVersion.parse(v).minor_line == version.minor_line]
        if same_line and TalosVersion.parse(same_line[-1]) < version:
            note = (
                f"Talos {version} is newer than the packaged tables' last "
                f"{version.major}.{version.minor} release ({same_line[-1]}); planned with its "
                "extensions and NVIDIA drivers"
            )
            return str(version), str(version), note
    return str(version), str(version), ""


# --- planning at the target ------------------------------------------------------------------


def _at(cluster: ClusterFile, version: str) -> ClusterFile:
    return replace(cluster, talos=replace(cluster.talos, version=version))


def _retarget(plan: PoolPlan, planned_as: str, version: str) -> PoolPlan:
    """A pool planned with another release's tables, carrying the release actually asked for
    (the installer and the machine-config form follow the real version). A pool on its own
    ``talos.version`` keeps it."""
    if plan.talos.version == version or plan.talos.version != planned_as:
        return plan
    return replace(plan, talos=replace(plan.talos, version=version))


def _reason(source: str, pool: str, err: TalosSchematicError) -> str:
    prefix = f'{source}: pool "{pool}": '
    text = str(err)
    return text.removeprefix(prefix)


def plan_at(
    cluster: ClusterFile,
    version: str,
    *,
    source: str = "cluster.yaml",
    base_dir: Path | None = None,
    profile_dirs: Sequence[Path] = (),
) -> tuple[ClusterPlan, str]:
    """The whole cluster planned at ``version`` (a failing pool raises, as in planning), and
    the note of :func:`target_release`."""
    release, planned_as, note = target_release(version)
    plan = plan_cluster(
        _at(cluster, planned_as), source=source, base_dir=base_dir, profile_dirs=profile_dirs
    )
    if planned_as != release:
        talos = replace(plan.talos, version=release)
        plan = replace(
            plan,
            talos=talos,
            pools=tuple(_retarget(pool, planned_as, release) for pool in plan.pools),
        )
    return plan, note


def plan_target(
    cluster: ClusterFile,
    to: str,
    *,
    source: str = "cluster.yaml",
    base_dir: Path | None = None,
    profile_dirs: Sequence[Path] = (),
    stay_on: str | None = None,
) -> TargetPlan:
    """Plan every pool at release ``to``; a pool that cannot be planned there is refused with
    its fixes (pin another NVIDIA tier or flavour, stay on ``stay_on``, replace the card).

    Errors that are not the pool's (an unreadable profile) are raised as in planning.
    """
    release, planned_as, note = target_release(to)
    target = _at(cluster, planned_as)
    options: dict[str, Any] = {
        "source": source,
        "base_dir": base_dir,
        "profile_dirs": profile_dirs,
    }
    try:
        whole = plan_cluster(target, **options)
        pools: tuple[PoolPlan | PoolRefusal, ...] = tuple(
            _retarget(pool, planned_as, release) for pool in whole.pools
        )
    except ClusterFileError:
        # Some pool cannot follow: plan them one by one to tell which, and why. Pools alike
        # but for their name and pass-through values plan alike, so each shape is planned once.
        shapes: dict[tuple[Any, ...], PoolPlan | PoolRefusal] = {}
        planned: list[PoolPlan | PoolRefusal] = []
        for pool in cluster.pools:
            shape = _shape(pool)
            if shape not in shapes:
                shapes[shape] = _plan_one(target, pool, release, options, stay_on=stay_on)
            known = shapes[shape]
            if isinstance(known, PoolRefusal):
                planned.append(replace(known, name=pool.name))
            else:
                planned.append(replace(known, name=pool.name, passthrough=pool.passthrough))
        pools = tuple(planned)
    return TargetPlan(
        cluster=cluster.cluster,
        talos=release,
        pools=pools,
        notes=(note,) if note else (),
    )


def _shape(pool: PoolSpec) -> tuple[Any, ...]:
    """What a pool's plan depends on besides its name and pass-through values."""
    return (
        pool.profile,
        repr(pool.hardware),
        pool.extensions,
        pool.kernel_args,
        pool.kernel_modules,
        pool.nvidia,
        pool.talos_version,
    )


def _plan_pool(cluster: ClusterFile, pool: PoolSpec, options: Mapping[str, Any]) -> PoolPlan:
    return plan_cluster(replace(cluster, pools=(pool,)), **options).pools[0]


def _plan_one(
    cluster: ClusterFile,
    pool: PoolSpec,
    release: str,
    options: Mapping[str, Any],
    *,
    stay_on: str | None,
) -> PoolPlan | PoolRefusal:
    try:
        return _retarget(_plan_pool(cluster, pool, options), cluster.talos.version, release)
    except ClusterFileError as err:
        reason = _reason(options["source"], pool.name, err)
        refusal = err.gpu_refusal
    fixes = [*_setting_fixes(cluster, pool, release, options)]
    if stay_on is not None:
        fixes.append(f"stay on Talos {stay_on} for now")
    if refusal in _CARD_REFUSALS:
        fixes.append(
            "replace the card with one the target release's NVIDIA drivers drive "
            "(`talos-schematic gpu ID --talos " + release + "` tells)"
        )
    return PoolRefusal(name=pool.name, reason=reason, fixes=tuple(fixes), gpu_refusal=refusal)


def _setting_fixes(
    cluster: ClusterFile, pool: PoolSpec, release: str, options: Mapping[str, Any]
) -> Iterable[str]:
    """Each NVIDIA setting that would let the pool plan at the target, as a fix."""
    effective = pool.nvidia.over(cluster.nvidia)
    tried: list[tuple[str, NvidiaSettings]] = [
        ("tier", replace(pool.nvidia, tier=tier))
        for tier in _PINNABLE_TIERS
        if (effective.tier or "auto") != tier
    ]
    if (effective.flavour or "auto") != "auto":
        tried.append(("flavour", replace(pool.nvidia, flavour="auto")))
    for key, settings in tried:
        try:
            plan = _plan_pool(cluster, replace(pool, nvidia=settings), options)
        except ClusterFileError:
            continue
        if plan.nvidia is None:
            continue
        value = settings.tier if key == "tier" else settings.flavour
        yield (
            f"pin nvidia.{key}: {value} on this pool (Talos {release} then runs "
            f"{DriverState(plan.nvidia.flavour, plan.nvidia.tier, plan.nvidia.driver, '')})"
        )


def check_live_names(target: TargetPlan, offered: Iterable[str], *, factory: str) -> TargetPlan:
    """The target plan with every pool whose extensions ``factory`` does not offer for the
    target release refused (the factory builds no image for such a schematic)."""
    names = frozenset(offered)
    pools: list[PoolPlan | PoolRefusal] = []
    for pool in target.pools:
        missing = (
            sorted(name for name in pool.extensions if name not in names)
            if isinstance(pool, PoolPlan)
            else []
        )
        if isinstance(pool, PoolPlan) and missing:
            pools.append(
                PoolRefusal(
                    name=pool.name,
                    reason=(
                        f"{factory} offers no {', '.join(missing)} for Talos {target.talos}: "
                        "it would build no image for this schematic"
                    ),
                    fixes=(
                        "remove the extension from the pool or its profile, or use the name "
                        "the factory lists for that release (talos-schematic extensions "
                        f"--talos {target.talos} --live)",
                    ),
                )
            )
        else:
            pools.append(pool)
    return replace(target, pools=tuple(pools))


# --- the comparison ----------------------------------------------------------------------------


def _driver(pool: PoolPlan) -> DriverState | None:
    decision = pool.nvidia
    if decision is None:
        return None
    return DriverState(decision.flavour, decision.tier, decision.driver, decision.container_toolkit)


def _renames(
    removed: list[str], added: list[str]
) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    """Removed and added NVIDIA extensions of one family pair up as a rename (a tier or flavour
    change, or the ``-lts``/``-production`` suffixes of Talos 1.8)."""
    renamed: list[tuple[str, str]] = []
    for old in list(removed):
        old_kind = describe_nvidia_extension(old)
        if old_kind is None:
            continue
        for new in added:
            new_kind = describe_nvidia_extension(new)
            if new_kind is not None and new_kind.family == old_kind.family:
                renamed.append((old, new))
                removed.remove(old)
                added.remove(new)
                break
    return removed, added, renamed


def _module_text(modules: Sequence[KernelModule]) -> str:
    if not modules:
        return "none"
    return ", ".join(
        f"{module.name} ({' '.join(module.parameters)})" if module.parameters else module.name
        for module in modules
    )


def _config_changes(old: PoolPlan, new: PoolPlan) -> list[str]:
    """What changes in the pool's machine-config patch, besides the installer image."""
    changes: list[str] = []
    if old.kernel_modules != new.kernel_modules:
        changes.append(
            f"kernel modules: {_module_text(old.kernel_modules)} → "
            f"{_module_text(new.kernel_modules)}"
        )
    before, after = TalosVersion.parse(old.talos.version), TalosVersion.parse(new.talos.version)
    form = KERNEL_MODULE_DOCUMENTS_FROM
    if new.kernel_modules and (before >= form) != (after >= form):
        changes.append(
            "kernel modules written as KernelModuleConfig documents (Talos 1.14 and later; "
            "machine.kernel.modules is deprecated there, still merged)"
            if after >= form
            else "kernel modules written as machine.kernel.modules (before Talos 1.14)"
        )
    for key in sorted({*old.sysctls, *new.sysctls}):
        was, now = old.sysctls.get(key), new.sysctls.get(key)
        if was == now:
            continue
        if now is None:
            changes.append(f"sysctl {key}={was} removed (not needed on Talos {new.talos.version})")
        elif was is None:
            changes.append(f"sysctl {key}={now} added")
        else:
            changes.append(f"sysctl {key}: {was} → {now}")
    mirrors = new.registry_mirrors
    if mirrors and (before >= MIRROR_DOCUMENTS_FROM) != (after >= MIRROR_DOCUMENTS_FROM):
        changes.append(
            "registry mirrors written as RegistryMirrorConfig documents (Talos 1.12 and later)"
            if after >= MIRROR_DOCUMENTS_FROM
            else "registry mirrors written as machine.registries.mirrors (before Talos 1.12)"
        )
    if not changes and _patch_without_image(old) != _patch_without_image(new):
        changes.append("the machine-config patch changes (compare machine-config-patch.yaml)")
    return changes


def _patch_without_image(pool: PoolPlan) -> list[dict[str, Any]]:
    return patch_without_installer(pool)


def _actions(
    old: PoolPlan, new: PoolPlan, config: Sequence[str], chart: ChartTarget
) -> list[NodeAction]:
    actions: list[NodeAction] = []
    image = installer_image(new)
    # On Cozystack a new boot-disk URL (schematic or release) rolls the pool: its machines are
    # replaced, booting the new image with the new machine config.
    rolls = boot_image_url(new) != boot_image_url(old)
    if image != installer_image(old):
        actions.append(
            NodeAction(
                "image",
                "new image: on Cozystack the boot-disk URL changes and the pool's machines are "
                "replaced from it; on plain Talos upgrade each node to the new installer",
                f"talosctl upgrade --nodes <node> --image {image}",
            )
        )
    if old.kernel_modules != new.kernel_modules:
        if rolls:
            text = (
                "kernelModules change: the roll the new image starts recreates them all with "
                "the new set"
            )
        elif chart.machine_config_changes == "rolls":
            text = f"kernelModules change with the same image: {chart.config_change_reach()}"
        else:
            text = (
                f"kernelModules change with the same image: {chart.config_change_reach()} "
                "(delete them one at a time, or scale the pool to zero and back)"
            )
        actions.append(NodeAction("recreate", text))
    if config:
        actions.append(
            NodeAction(
                "patch",
                "machine config changes: on plain Talos apply the new patch to each node",
                f"talosctl patch machineconfig --nodes <node> --patch @{new.name}/"
                "machine-config-patch.yaml",
            )
        )
    return actions


def _replacement(old: PoolPlan, new: PoolPlan) -> tuple[str, ...]:
    """Why Cozystack replaces a KubeVirt pool's machines: its boot-disk URL changes (the
    schematic, the release, or both), and a VM boots only the disk it was created from."""
    if new.profile.platform != "kubevirt" or boot_image_url(old) == boot_image_url(new):
        return ()
    why = []
    if old.schematic_id != new.schematic_id:
        why.append(f"schematic {old.schematic_id[:12]} → {new.schematic_id[:12]}")
    if old.talos.version != new.talos.version:
        why.append(f"Talos {old.talos.version} → {new.talos.version}")
    return (
        f"the boot-disk URL changes ({', '.join(why) or 'another image'}): Cozystack "
        "replaces every machine of the pool with one booting the new disk",
    )


def _value_keys(values: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """Each top-level value key and the keys below it (``talos`` → version, schematicID, …)."""
    return {
        key: tuple(value) if isinstance(value, Mapping) else () for key, value in values.items()
    }


def _output_changes(old: PoolPlan, new: PoolPlan, layout: Layout) -> tuple[str, ...]:
    """The installer repository and the values keys that change between the two plans."""
    changes: list[str] = []
    repository_before = pool_installer_repository(old)
    repository_after = pool_installer_repository(new)
    if repository_before != repository_after:
        line = f"installer repository {repository_before} → {repository_after}"
        if (
            TalosVersion.parse(new.talos.version) >= METAL_INSTALLER_FROM
            and TalosVersion.parse(old.talos.version) < METAL_INSTALLER_FROM
            and old.talos.installer_repository_default
        ):
            line += (
                f": from Talos {METAL_INSTALLER_FROM.major}.{METAL_INSTALLER_FROM.minor} a node "
                "upgrades from the factory's installer for the platform it booted (Talos "
                "itself defaults to metal-installer), which keeps that platform's kernel "
                "arguments"
            )
        changes.append(line)
    before = _value_keys(tool_values(old, layout))
    after = _value_keys(tool_values(new, layout))
    for key, inner in after.items():
        if key not in before:
            keys = f" ({', '.join(inner)})" if inner else ""
            line = f"values gain {key}{keys}"
            if key == "talos" and layout == "osimage" and repository_before != repository_after:
                line += (
                    ": the installer repository is no longer the chart's default, so the "
                    "talos block is written, whole, as the chart requires"
                )
            changes.append(line)
        else:
            changes += [f"values gain {key}.{sub}" for sub in inner if sub not in before[key]]
            changes += [f"values lose {key}.{sub}" for sub in before[key] if sub not in inner]
    changes += [f"values lose {key}" for key in before if key not in after]
    return tuple(changes)


def direction_notes(before: str, after: str) -> list[str]:
    """A note when the plan goes to an older release than the nodes run."""
    was, now = TalosVersion.parse(before), TalosVersion.parse(after)
    if now >= was:
        return []
    scope = "minor release" if now.minor_line < was.minor_line else "patch release"
    return [
        f"Talos {before} → {after} is a downgrade to an older {scope}: Talos documents "
        "upgrades, and a node's state written by the newer release is not promised to read "
        "back; on Cozystack the pools' machines are replaced by ones booting the older image. "
        "Make sure this is meant (check --from / --to / --base)"
    ]


def _compare_pool(old: PoolPlan, new: PoolPlan | PoolRefusal, chart: ChartTarget) -> PoolChange:
    driver_before = _driver(old)
    if isinstance(new, PoolRefusal):
        return PoolChange(
            name=old.name,
            status="breaking",
            schematic_before=old.schematic_id,
            schematic_after=None,
            driver_before=driver_before,
            modules_before=old.kernel_modules,
            installer_before=installer_image(old),
            refusal=new,
        )
    before, after = set(old.extensions), set(new.extensions)
    removed, added, renamed = _renames(sorted(before - after), sorted(after - before))
    driver_after = _driver(new)
    notes: list[str] = []
    if new.nvidia is not None and driver_before != driver_after:
        # The decision's own reasons say why the driver moved ("not production: 595 …").
        notes = [
            reason
            for reason in new.nvidia.reasons
            if reason.startswith(("not ", "tier ", "flavour ")) and reason not in _reasons(old)
        ]
    config = _config_changes(old, new)
    replaced = _replacement(old, new)
    output = _output_changes(old, new, chart.layout)
    same = (
        old.schematic_id == new.schematic_id
        and driver_before == driver_after
        and not config
        and old.kernel_args == new.kernel_args
        and installer_image(old) == installer_image(new)
        and not replaced
        and not output
    )
    return PoolChange(
        name=old.name,
        status="unchanged" if same else "changed",
        schematic_before=old.schematic_id,
        schematic_after=new.schematic_id,
        added=tuple(added),
        removed=tuple(removed),
        renamed=tuple(renamed),
        kernel_args_added=tuple(arg for arg in new.kernel_args if arg not in old.kernel_args),
        kernel_args_removed=tuple(arg for arg in old.kernel_args if arg not in new.kernel_args),
        driver_before=driver_before,
        driver_after=driver_after,
        driver_notes=tuple(notes),
        modules_before=old.kernel_modules,
        modules_after=new.kernel_modules,
        machine_config=tuple(config),
        installer_before=installer_image(old),
        installer_after=installer_image(new),
        actions=tuple(_actions(old, new, config, chart)),
        replaced=replaced,
        output=output,
    )


def _reasons(pool: PoolPlan) -> tuple[str, ...]:
    return pool.nvidia.reasons if pool.nvidia is not None else ()


def _added_pool(new: PoolPlan | PoolRefusal) -> PoolChange:
    """A pool only the target has: its machines will boot the new image from the start."""
    if isinstance(new, PoolRefusal):
        return PoolChange(
            name=new.name,
            status="breaking",
            schematic_before=None,
            schematic_after=None,
            refusal=new,
        )
    return PoolChange(
        name=new.name,
        status="added",
        schematic_before=None,
        schematic_after=new.schematic_id,
        added=new.extensions,
        kernel_args_added=new.kernel_args,
        driver_after=_driver(new),
        modules_after=new.kernel_modules,
        installer_after=installer_image(new),
    )


def _removed_pool(old: PoolPlan) -> PoolChange:
    return PoolChange(
        name=old.name,
        status="removed",
        schematic_before=old.schematic_id,
        schematic_after=None,
        removed=old.extensions,
        kernel_args_removed=old.kernel_args,
        driver_before=_driver(old),
        modules_before=old.kernel_modules,
        installer_before=installer_image(old),
    )


def _comparison_key(pool: PoolPlan | PoolRefusal) -> tuple[Any, ...]:
    """What a comparison reads of a pool besides its name. Pools planned alike share their
    profile and NVIDIA decision objects (planning caches them), so identity stands for them
    while the plans are alive."""
    if isinstance(pool, PoolRefusal):
        return ("refused", pool.reason, pool.fixes)
    return (
        pool.schematic_id,
        pool.extensions,
        pool.kernel_args,
        id(pool.nvidia),
        id(pool.profile),
        pool.kernel_modules,
        tuple(pool.sysctls.items()),
        pool.talos,
        repr(pool.registry_mirrors),
        image_factory_ca(pool),
    )


def compare_plans(
    old: ClusterPlan, new: TargetPlan, chart: ChartTarget | None = None
) -> UpgradeReport:
    """Compare a cluster's plan with its plan at another release (or another revision of the
    file), pool by pool: matched by name, in the old plan's order, then the pools only the
    target has. A pool the target plan refuses is breaking. ``chart`` (default: the file's
    chart target) says how a machine-config change reaches the workers."""
    chart = chart or old.cozystack_target
    by_name = {pool.name: pool for pool in new.pools}
    changes = []
    # Thousands of pools share a few shapes: compare each pair of shapes once.
    compared: dict[tuple[Any, ...], PoolChange] = {}
    for pool in old.pools:
        target = by_name.pop(pool.name, None)
        if target is None:
            changes.append(_removed_pool(pool))
            continue
        key = (_comparison_key(pool), _comparison_key(target))
        known = compared.get(key)
        if known is None:
            compared[key] = known = _compare_pool(pool, target, chart)
        elif isinstance(target, PoolPlan):
            # The patch command names the pool's directory.
            actions = tuple(_actions(pool, target, known.machine_config, chart))
            known = replace(known, name=pool.name, actions=actions)
        else:
            known = replace(known, name=pool.name, refusal=target)
        changes.append(known)
    changes += [_added_pool(pool) for pool in by_name.values()]
    return UpgradeReport(
        cluster=old.cluster,
        source=old.source,
        talos_before=old.talos.version,
        talos_after=new.talos,
        pools=tuple(changes),
        notes=(*new.notes, *direction_notes(old.talos.version, new.talos)),
    )
