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

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from schematic.errors import ClusterFileError, GpuRefusal, TalosSchematicError
from schematic.facts.chart_targets import IMMUTABLE_TEMPLATE_ISSUE, ChartTarget, Layout
from schematic.facts.nvidia import KernelModule, describe_nvidia_extension
from schematic.facts.release_facts import refuse_withdrawn
from schematic.facts.talos import METAL_INSTALLER_FROM, TalosVersion
from schematic.inputs.cluster_values import ClusterFile, NvidiaSettings, PoolSpec
from schematic.plan.cluster import ClusterPlan, PoolPlan, check_pool_names, plan_cluster, pool_shape
from schematic.plan.release import target_release

__all__ = [
    "COZYSTACK_IMMUTABLE_CONFIG_ISSUE",
    "DriverState",
    "NodeAction",
    "PoolChange",
    "PoolRefusal",
    "TargetPlan",
    "UpgradeReport",
    "ValuesOf",
    "compare_plans",
    "direction_notes",
    "plan_at",
    "plan_target",
]

# A TalosConfigTemplate's spec cannot change: how a changed machine config reaches a pool depends
# on how its chart names the template (ChartTarget.config_change_reach).
COZYSTACK_IMMUTABLE_CONFIG_ISSUE = IMMUTABLE_TEMPLATE_ISSUE

Status = Literal["unchanged", "changed", "breaking", "added", "removed"]
# The values the output writes for a pool in a layout: what the report compares key by key.
ValuesOf = Callable[[PoolPlan, Layout], Mapping[str, Any]]
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
    # A Cozystack tenant pool (KubeVirt VMs a KubernetesNodes object describes) at the target.
    tenant_pool: bool = False


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


# --- planning at the target ------------------------------------------------------------------


def _at(cluster: ClusterFile, version: str) -> ClusterFile:
    return replace(cluster, talos=replace(cluster.talos, version=version))


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
        _at(cluster, release),
        source=source,
        base_dir=base_dir,
        profile_dirs=profile_dirs,
        tables=planned_as,
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
    target = _at(cluster, release)
    options: dict[str, Any] = {
        "source": source,
        "base_dir": base_dir,
        "profile_dirs": profile_dirs,
        "tables": planned_as,
    }
    try:
        pools: tuple[PoolPlan | PoolRefusal, ...] = plan_cluster(target, **options).pools
    except ClusterFileError:
        # Some pool cannot follow: plan them one by one to tell which, and why. Pools of one
        # shape plan alike (planning's own key), so each shape is planned once.
        shapes: dict[tuple[Any, ...], PoolPlan | PoolRefusal] = {}
        planned: list[PoolPlan | PoolRefusal] = []
        for pool in cluster.pools:
            shape = pool_shape(pool)
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
        return _plan_pool(cluster, pool, options)
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
    before, after = old.release, new.release
    documents = after.kernel_module_documents
    if new.kernel_modules and before.kernel_module_documents != documents:
        changes.append(
            "kernel modules written as KernelModuleConfig documents (Talos 1.14 and later; "
            "machine.kernel.modules is deprecated there, still merged)"
            if documents
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
    if mirrors and before.mirror_documents != after.mirror_documents:
        changes.append(
            "registry mirrors written as RegistryMirrorConfig documents (Talos 1.12 and later)"
            if after.mirror_documents
            else "registry mirrors written as machine.registries.mirrors (before Talos 1.12)"
        )
    if not changes and _patch_inputs(old) != _patch_inputs(new):
        changes.append("the machine-config patch changes (compare machine-config-patch.yaml)")
    return changes


def _patch_inputs(pool: PoolPlan) -> tuple[Any, ...]:
    """What the machine-config patch is written from, besides the installer pin and the
    release's forms (a change of form is named above): modules, sysctls, registry mirrors."""
    return (pool.kernel_modules, dict(pool.sysctls), pool.registry_mirrors)


def _actions(
    old: PoolPlan, new: PoolPlan, config: Sequence[str], chart: ChartTarget
) -> list[NodeAction]:
    actions: list[NodeAction] = []
    image = new.references.installer
    # Cozystack words only for a Cozystack (KubeVirt) pool: a new boot-disk URL (schematic or
    # release) rolls it, its machines replaced, booting the new image with the new config.
    tenant = new.tenant_pool
    rolls = tenant and new.references.boot_image != old.references.boot_image
    if image != old.references.installer:
        text = (
            "new image: on Cozystack the boot-disk URL changes and the pool's machines are "
            "replaced from it; on plain Talos upgrade each node to the new installer"
            if tenant
            else "new image: upgrade each node to the new installer"
        )
        actions.append(
            NodeAction("image", text, f"talosctl upgrade --nodes <node> --image {image}")
        )
    # A node of the user's own loads its modules from its patch (below); a chart's pool from
    # the machine config the chart makes.
    if tenant and old.kernel_modules != new.kernel_modules:
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
                "machine config changes: on plain Talos apply the new patch to each node"
                if tenant
                else "machine config changes: apply the new patch to each node",
                f"talosctl patch machineconfig --nodes <node> --patch @{new.name}/"
                "machine-config-patch.yaml",
            )
        )
    return actions


def _replacement(old: PoolPlan, new: PoolPlan) -> tuple[str, ...]:
    """Why Cozystack replaces a KubeVirt pool's machines: its boot-disk URL changes (the
    schematic, the release, or both), and a VM boots only the disk it was created from."""
    if new.profile.platform != "kubevirt" or old.references.boot_image == new.references.boot_image:
        return ()
    why = []
    if old.schematic_id != new.schematic_id:
        why.append(f"schematic {old.schematic_id} → {new.schematic_id}")
    if old.talos.version != new.talos.version:
        why.append(f"Talos {old.talos.version} → {new.talos.version}")
    # Every kubernetes-nodes chart read (v1.6.2, main 3c780acd, PR #3571: nodegroup.yaml) names
    # the KubevirtMachineTemplate holding the disk URL by a hash of its content and rolls the
    # MachineDeployment with maxSurge: maxReplicas, maxUnavailable: 1.
    return (
        f"the boot-disk URL changes ({', '.join(why) or 'another image'}): Cozystack "
        "replaces every machine of the pool with one booting the new disk",
        "the chart names its KubevirtMachineTemplate by a hash of its content, so the "
        "MachineDeployment rolls onto a new one: up to maxReplicas new VMs at once, one old "
        "VM removed at a time (a GPU VM waits for a free GPU, which each removal frees)",
    )


def _value_keys(values: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """Each top-level value key and the keys below it (``talos`` → version, schematicID, …)."""
    return {
        key: tuple(value) if isinstance(value, Mapping) else () for key, value in values.items()
    }


def _output_changes(
    old: PoolPlan, new: PoolPlan, layout: Layout, values_of: ValuesOf
) -> tuple[str, ...]:
    """The installer repository and the values keys that change between the two plans."""
    changes: list[str] = []
    repository_before = old.references.installer_repository
    repository_after = new.references.installer_repository
    if repository_before != repository_after:
        line = f"installer repository {repository_before} → {repository_after}"
        if (
            new.release.platform_installers
            and not old.release.platform_installers
            and old.talos.installer_repository_default
        ):
            line += (
                f": from Talos {METAL_INSTALLER_FROM.major}.{METAL_INSTALLER_FROM.minor} a node "
                "upgrades from the factory's installer for the platform it booted (Talos "
                "itself defaults to metal-installer), which keeps that platform's kernel "
                "arguments"
            )
        changes.append(line)
    if not new.tenant_pool:
        return tuple(changes)  # values are a Cozystack pool's: no chart reads this one's
    before = _value_keys(values_of(old, layout))
    after = _value_keys(values_of(new, layout))
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


def _compare_pool(
    old: PoolPlan, new: PoolPlan | PoolRefusal, chart: ChartTarget, values_of: ValuesOf
) -> PoolChange:
    driver_before = _driver(old)
    if isinstance(new, PoolRefusal):
        return PoolChange(
            name=old.name,
            status="breaking",
            schematic_before=old.schematic_id,
            schematic_after=None,
            driver_before=driver_before,
            modules_before=old.kernel_modules,
            installer_before=old.references.installer,
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
    output = _output_changes(old, new, chart.layout, values_of)
    same = (
        old.schematic_id == new.schematic_id
        and driver_before == driver_after
        and not config
        and old.kernel_args == new.kernel_args
        and old.references.installer == new.references.installer
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
        installer_before=old.references.installer,
        installer_after=new.references.installer,
        actions=tuple(_actions(old, new, config, chart)),
        replaced=replaced,
        output=output,
        tenant_pool=new.tenant_pool,
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
        installer_after=new.references.installer,
        tenant_pool=new.tenant_pool,
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
        installer_before=old.references.installer,
    )


def _alike(pool: PoolPlan | PoolRefusal) -> PoolPlan | PoolRefusal:
    """The pool's plan (or refusal) without its name: equal for pools that plan alike."""
    return replace(pool, name="")


def compare_plans(
    old: ClusterPlan,
    new: TargetPlan,
    chart: ChartTarget | None = None,
    *,
    values_of: ValuesOf,
) -> UpgradeReport:
    """Compare a cluster's plan with its plan at another release (or another revision of the
    file), pool by pool: matched by name, in the old plan's order, then the pools only the
    target has. A pool the target plan refuses is breaking. ``chart`` (default: the file's
    chart target) says how a machine-config change reaches the workers; ``values_of`` gives the
    values the output writes for a pool (``schematic.output.render.cozystack.tool_values``), whose
    gained and lost keys the report names."""
    chart = chart or old.cozystack_target
    by_name = {pool.name: pool for pool in new.pools}
    changes = []
    # Thousands of pools share a few plans: compare each pair of plans (by value, all but
    # the name) once.
    compared: dict[tuple[PoolPlan | PoolRefusal, PoolPlan | PoolRefusal], PoolChange] = {}
    for pool in old.pools:
        target = by_name.pop(pool.name, None)
        if target is None:
            changes.append(_removed_pool(pool))
            continue
        key = (_alike(pool), _alike(target))
        known = compared.get(key)
        if known is None:
            compared[key] = known = _compare_pool(pool, target, chart, values_of)
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
        notes=(
            *new.notes,
            *direction_notes(old.talos.version, new.talos),
            *_roll_order(changes),
        ),
    )


def _roll_order(changes: Sequence[PoolChange]) -> list[str]:
    """The order to change Cozystack pools in, when more than one is replaced: values applied
    together roll every pool at once."""
    replaced = [pool for pool in changes if pool.replaced]
    if len(replaced) < 2:
        return []
    plain = [pool.name for pool in replaced if pool.driver_after is None]
    gpu = [pool.name for pool in replaced if pool.driver_after is not None]
    order = ", ".join([*plain, *gpu])
    return [
        f"on Cozystack, apply the pools' new values one pool at a time ({order}): the pools "
        "without a GPU first, then each GPU pool once its smoke test passes on the first new VM "
        "(upgrade -f talosctl writes the order)"
    ]


def _contradictions(
    cluster_file: Path, base: Path | None, to: str | None, since: str | None, now: str, was: str
) -> list[str]:
    """With ``base``, each file states its own release: a ``to`` or ``since`` that says
    otherwise plans an upgrade that neither file describes."""
    if base is None:
        return []
    notes = []
    if to is not None and to != now:
        notes.append(
            f"--to {to} contradicts {cluster_file}'s talos.version {now}: planned at {to}, but "
            f"generate writes {now} from this file; drop --to, or set talos.version"
        )
    if since is not None and since != was:
        notes.append(
            f"--from {since} contradicts {base}'s talos.version {was}: planned from {since}; "
            "drop --from, or pass the --base the nodes run"
        )
    return notes


def plan_upgrade(
    cluster_file: Path,
    values_of: ValuesOf,
    to: str | None = None,
    since: str | None = None,
    base: Path | None = None,
    pools: Sequence[str] = (),
    profiles: Sequence[Path] = (),
    live: Callable[[TargetPlan, str], TargetPlan] | None = None,
) -> tuple[UpgradeReport, list[str]]:
    """The report of upgrading CLUSTER's pools to ``to`` (default: its talos.version) from
    ``since`` (default: the nodes' release, from ``base`` or CLUSTER), and the notes to tell.
    ``pools`` (default: all) are the pools reported.
    ``base`` is the file as deployed (its relative profile paths resolve against CLUSTER's
    directory); ``live(target, imageFactoryURL)`` is the target held against a factory's live
    catalogue (:func:`schematic.factory.consult.live_catalogue_of`)."""
    from schematic.errors import UsageError
    from schematic.inputs.cluster_file import load_cluster

    if to is None and since is None and base is None:
        raise UsageError("give the release to upgrade to (or --from, or --base)", "--to")
    for option, value in (("--to", to), ("--from", since)):
        try:
            if value is not None:
                target_release(value)
        except TalosSchematicError as err:
            raise UsageError(str(err), option) from None
    if to is not None:
        refuse_withdrawn(to, "--to")  # what nodes run now (--from) may be withdrawn
    cluster = load_cluster(cluster_file)
    deployed = cluster if base is None else load_cluster(base)
    options: dict[str, Any] = {"base_dir": cluster_file.parent, "profile_dirs": tuple(profiles)}
    old, old_note = plan_at(
        deployed,
        since or deployed.talos.version,
        source=str(cluster_file if base is None else base),
        **options,
    )
    target = plan_target(
        cluster,
        to or cluster.talos.version,
        source=str(cluster_file),
        stay_on=old.talos.version,
        **options,
    )
    if live is not None:
        target = live(target, cluster.talos.image_factory_url)
    report = compare_plans(old, target, values_of=values_of)
    said = _contradictions(
        cluster_file, base, to, since, cluster.talos.version, deployed.talos.version
    )
    if said:
        report = replace(report, notes=(*said, *report.notes))
    if pools:
        check_pool_names(str(cluster_file), [pool.name for pool in report.pools], pools)
        report = replace(report, pools=tuple(pool for pool in report.pools if pool.name in pools))
    return report, [old_note] if old_note else []
