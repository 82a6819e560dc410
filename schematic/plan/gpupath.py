"""The Cozystack GPU path beyond the pool: what else must be right before a tenant pod sees a GPU.

A correct ``KubernetesNodes`` pool is one of four pieces. The other three, each decided here
from the cluster plan (pure functions; rendering them is :mod:`schematic.output.render.gpupath`'s):

- **the management cluster** must permit every pool GPU for KubeVirt passthrough
  (``permittedHostDevices.pciHostDevices``). Cozystack ships a default list; a GPU missing
  from it needs an entry in the platform values (``gpu.permittedHostDevices``), named by the
  same rule that names the pool's ``gpus[]``
  (:attr:`schematic.facts.nvidia.Gpu.kubevirt_resource_name`);
- **the tenant's GPU Operator addon** must take the driver and toolkit from the Talos
  extensions (operator driver and toolkit off, validator at the host's driver root, device
  plugin through CDI). The chart merges ``addons.gpuOperator.valuesOverride`` over its own
  defaults with Sprig's ``mergeOverwrite``, which replaces lists: so every list the override
  touches is written whole (:func:`merge_overwrite` reproduces the merge). What the chart
  itself sets differs per Cozystack release (:func:`operator_release`);
- **a pod** must be admitted after the node works: CDI injection is decided at admission, so
  :func:`smoke_test_pod` gives one per GPU pool to prove it.

HAMi brings its own device plugin, which has no CDI wiring for Talos yet: asking for it on
Talos GPU pools is refused by planning (:func:`schematic.plan.cluster.hami_notes`) unless forced,
and then the operator's device plugin is switched off, never run beside HAMi's.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

from schematic.facts.nvidia import GpuRequest, resolve_gpus
from schematic.facts.talos import TalosVersion
from schematic.inputs.cluster_values import HamiRequest
from schematic.messages import Message

if TYPE_CHECKING:
    from schematic.plan.cluster import ClusterPlan, PoolPlan

__all__ = [
    "DEFAULT_RELEASE",
    "HamiRequest",
    "ManagementGpu",
    "OperatorRelease",
    "PermittedDevice",
    "StandaloneOperator",
    "effective_operator_values",
    "management_gpus",
    "merge_overwrite",
    "merged_operator_values",
    "missing_passthrough_note",
    "operator_defaults",
    "operator_release",
    "operator_release_for_chart",
    "operator_release_named",
    "operator_releases",
    "operator_values",
    "passthrough_defaults",
    "pci_vendor_selector",
    "platform_values",
    "required_device_plugin_env",
    "runs_talos_upstream_shape",
    "smoke_test_pod",
    "smoke_test_pod_name",
    "smoke_test_runtime_class",
    "standalone_operator",
    "talos_device_plugin_env",
    "talos_upstream_values",
    "tenant_addons",
    "upstream_shape_fits",
]

_OPERATOR_DATA = "cozystack-gpu-operator.json"
_PASSTHROUGH_DATA = "gpu-passthrough-defaults.tsv"
# Talos 1.13 turned on containerd's own CDI support (enable_cdi); before it, the CDI
# annotations the device plugin sets are read only by the nvidia runtime, so pods need it.
_NATIVE_CDI_FROM = TalosVersion(1, 13, 0)
_NVIDIA_RUNTIME_CLASS = "nvidia"
# A plain image: nvidia-smi and the driver libraries must come from CDI injection, which is
# exactly what the smoke test proves (a CUDA image would hide a missing injection).
SMOKE_TEST_IMAGE = "docker.io/library/ubuntu:24.04"
_GPU_RESOURCE = "nvidia.com/gpu"


# --- the management cluster: KubeVirt passthrough ------------------------------------------------


@dataclass(frozen=True, slots=True)
class PermittedDevice:
    """One ``pciHostDevices`` entry: the PCI vendor:device selector and the resource name."""

    pci_vendor_selector: str  # "10DE:2BB5", as KubeVirt and Cozystack write it
    resource_name: str


@functools.cache
def passthrough_defaults() -> tuple[PermittedDevice, ...]:
    """Cozystack's default passthrough list (packaged; see SOURCES.md), in its order."""
    text = resources.files("schematic.data").joinpath(_PASSTHROUGH_DATA).read_text("utf-8")
    rows = [line.split("\t") for line in text.splitlines() if line and not line.startswith("#")]
    return tuple(PermittedDevice(selector, name) for selector, name in rows[1:])


def pci_vendor_selector(gpu_id: str) -> str:
    """``10de:2bb5`` → ``10DE:2BB5`` (KubeVirt's pciVendorSelector spelling)."""
    return gpu_id.upper()


@dataclass(frozen=True, slots=True)
class ManagementGpu:
    """A GPU the tenant's KubeVirt pools pass through, and whether the defaults permit it."""

    gpu_id: str
    label: str  # "10de:2bb5 (NVIDIA RTX PRO 6000 Blackwell Server Edition)"
    resource_name: str
    pools: tuple[str, ...]
    permitted_by_default: bool
    # The default list's resource name when it permits the PCI ID under another name.
    default_resource_name: str | None = None

    @property
    def entry(self) -> PermittedDevice:
        return PermittedDevice(pci_vendor_selector(self.gpu_id), self.resource_name)


def _passthrough_pools(plan: ClusterPlan) -> list[PoolPlan]:
    # Only KubeVirt workers are VMs of the management cluster; a metal pool's GPUs never
    # pass through KubeVirt.
    return [pool for pool in plan.pools if pool.profile.platform == "kubevirt" and pool.nvidia]


def management_gpus(plan: ClusterPlan) -> tuple[ManagementGpu, ...]:
    """Every distinct GPU of the plan's KubeVirt pools, in file order, with its pools."""
    by_selector = {entry.pci_vendor_selector: entry for entry in passthrough_defaults()}
    found: dict[tuple[str, str], tuple[str, dict[str, None]]] = {}
    # Thousands of pools share a few profiles: resolve each profile's GPUs once.
    resolved: dict[int, list[tuple[str, str, str]]] = {}
    for pool in _passthrough_pools(plan):
        key = id(pool.profile)
        if key not in resolved:
            requests = tuple(
                GpuRequest(id=gpu.id, count=gpu.count, architecture=gpu.architecture)
                for gpu in pool.profile.nvidia_gpus
            )
            resolved[key] = [
                (gpu.id, gpu.kubevirt_resource_name, gpu.label)
                for gpu, _count in resolve_gpus(requests).gpus
            ]
        for gpu_id, resource, label in resolved[key]:
            found.setdefault((gpu_id, resource), (label, {}))[1][pool.name] = None
    gpus = []
    for (gpu_id, resource), (label, pools) in found.items():
        default = by_selector.get(pci_vendor_selector(gpu_id))
        permitted = default is not None and default.resource_name == resource
        gpus.append(
            ManagementGpu(
                gpu_id=gpu_id,
                label=label,
                resource_name=resource,
                pools=tuple(pools),
                permitted_by_default=permitted,
                default_resource_name=(
                    None if default is None or permitted else default.resource_name
                ),
            )
        )
    return tuple(gpus)


def platform_values(
    plan: ClusterPlan, gpus: Sequence[ManagementGpu] | None = None
) -> dict[str, Any] | None:
    """The platform values that permit the GPUs the default list lacks; None when none lacks.

    The chart adds ``gpu.permittedHostDevices.pciHostDevices`` to its defaults while
    ``gpu.replaceDefaults`` stays false, so only the missing entries are written. ``gpus`` is
    :func:`management_gpus` of the plan when the caller has it already.
    """
    gpus = management_gpus(plan) if gpus is None else gpus
    missing = [gpu for gpu in gpus if not gpu.permitted_by_default]
    if not missing:
        return None
    entries = [
        {
            "pciVendorSelector": gpu.entry.pci_vendor_selector,
            "resourceName": gpu.entry.resource_name,
            # The resource is advertised by the sandbox device plugin, not by KubeVirt.
            "externalResourceProvider": True,
        }
        for gpu in missing
    ]
    return {"gpu": {"permittedHostDevices": {"pciHostDevices": entries}}}


_POOLS_NAMED = 3


def missing_passthrough_note(
    plan: ClusterPlan, gpus: Sequence[ManagementGpu] | None = None
) -> Message | None:
    """One line naming the pool GPUs Cozystack's default passthrough list does not permit, for
    a run that does not write the platform values; None when the defaults permit them all."""
    gpus = management_gpus(plan) if gpus is None else gpus
    missing = [gpu for gpu in gpus if not gpu.permitted_by_default]
    if not missing:
        return None
    named = []
    for gpu in missing:
        pools = ", ".join(gpu.pools[:_POOLS_NAMED])
        if len(gpu.pools) > _POOLS_NAMED:
            pools += f" and {len(gpu.pools) - _POOLS_NAMED} more"
        named.append(f"{gpu.label} in pool{'s' * (len(gpu.pools) != 1)} {pools}")
    return Message(
        level="note",
        source=plan.source,
        cause="the management cluster's default passthrough list does not permit "
        f"{'; '.join(named)}: KubeVirt refuses those VMs",
        fix="permit them in the platform values (generate -f platform prints them; with --out, "
        "management/platform-gpu-values.yaml)",
    )


# --- the tenant cluster: the GPU Operator addon -------------------------------------------------


@functools.cache
def _operator_data() -> dict[str, Any]:
    text = resources.files("schematic.data").joinpath(_OPERATOR_DATA).read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


@dataclass(frozen=True)
class OperatorRelease:
    """What one Cozystack release's kubernetes chart does with the GPU Operator addon."""

    name: str
    description: str
    # The GPU Operator version the chart vendors.
    operator: str
    # The operator values the chart merges valuesOverride over (mergeOverwrite).
    chart_defaults: Mapping[str, Any]
    # Merged in between when addons.hami.enabled: the chart turns the operator's plugin off.
    hami_defaults: Mapping[str, Any]

    @property
    def default_device_plugin_env(self) -> tuple[tuple[str, str], ...]:
        """The chart's own ``devicePlugin.env``: what an override of that list replaces."""
        operator = self.chart_defaults.get("gpu-operator", {})
        return _env_pairs(operator.get("devicePlugin", {}).get("env", []))


def _env_pairs(items: Sequence[Mapping[str, str]]) -> tuple[tuple[str, str], ...]:
    return tuple((item["name"], item["value"]) for item in items)


@functools.cache
def operator_releases() -> dict[str, OperatorRelease]:
    """Every known release shape, by name (``v1.6``, ``pr3585``)."""
    return {
        name: OperatorRelease(
            name=name,
            description=entry["description"],
            operator=entry["operator"],
            chart_defaults=entry["chartDefaults"],
            hami_defaults=entry["hamiDefaults"],
        )
        for name, entry in _operator_data()["releases"].items()
    }


DEFAULT_RELEASE: str = _operator_data()["default"]


def operator_release(version: str | None = None) -> OperatorRelease:
    """The shape for a Cozystack version: a release name (``pr3585``), or a version such as
    ``v1.6.2`` (its ``vMAJOR.MINOR`` line); None gives the released default.

    Raises ValueError naming the known shapes for anything else.
    """
    releases = operator_releases()
    if version is None:
        return releases[DEFAULT_RELEASE]
    text = version.strip()
    if text in releases:
        return releases[text]
    parts = text.removeprefix("v").split(".")
    if len(parts) >= 2 and all(part.isdigit() for part in parts[:2]):
        line = f"v{int(parts[0])}.{int(parts[1])}"
        if line in releases:
            return releases[line]
    raise ValueError(
        f"{version!r}: no GPU Operator addon data for this Cozystack release; known: "
        f"{', '.join(releases)}"
    )


def operator_release_for_chart(chart: str | None) -> OperatorRelease:
    """The addon shape of the kubernetes app that goes with a chart target
    (:mod:`schematic.plan.charts` names them); None or an unlisted target: the released default."""
    name = _operator_data()["charts"].get(chart or "", DEFAULT_RELEASE)
    return operator_releases()[name]


def operator_release_named(name: str) -> OperatorRelease:
    """The addon shape for what a user names: a shape (``pr3585``), a release line or version
    (``v1.6``, ``v1.6.2``), or a chart target (``main``, ``osimage``, ...). ValueError naming
    the choices otherwise."""
    try:
        return operator_release(name)
    except ValueError:
        pass
    from schematic.facts.chart_targets import check_chart_name

    try:
        return operator_release_for_chart(check_chart_name(name))
    except ValueError:
        charts = ", ".join(_operator_data()["charts"])
        raise ValueError(
            f"{name!r}: not a Cozystack release this tool knows; one of "
            f"{', '.join(operator_releases())} (GPU Operator addon shapes) or {charts} "
            "(chart targets)"
        ) from None


def talos_device_plugin_env() -> tuple[tuple[str, str], ...]:
    """The device plugin variables CDI on Talos needs (also TS140's list)."""
    return _env_pairs(_operator_data()["talos"]["devicePluginEnv"])


def _validator_driver_env() -> tuple[tuple[str, str], ...]:
    return _env_pairs(_operator_data()["talos"]["validatorDriverEnv"])


def _operator_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.removeprefix("v").split("."))


def operator_defaults(operator: str) -> Mapping[str, Any]:
    """What GPU Operator ``operator`` runs with when nothing sets them: its driver, toolkit and
    host driver path (the chart's ``values.yaml``); the newest known version's for a newer one."""
    known: dict[str, Mapping[str, Any]] = _operator_data()["operators"]
    older = [v for v in known if _operator_key(v) <= _operator_key(operator)]
    return known[max(older or known, key=_operator_key)]


def talos_upstream_values() -> dict[str, Any]:
    """Talos's own GPU Operator shape: the operator's driver and toolkit off, the driver found
    under ``/usr/local`` (where the extensions put it); no env lists."""
    values: dict[str, Any] = copy.deepcopy(_operator_data()["talosUpstream"]["values"])
    return values


def runs_talos_upstream_shape(values: Mapping[str, Any], operator: str) -> bool:
    """Whether operator ``values`` (what it will run with, its defaults merged in) are Talos's
    own shape on an operator version that detects the driver without env lists."""
    upstream = _operator_data()["talosUpstream"]
    if _operator_key(operator) < _operator_key(upstream["operatorFrom"]):
        return False
    return all(
        isinstance(values.get(part), Mapping) and values[part].get(key) == wanted
        for part, settings in upstream["values"].items()
        for key, wanted in settings.items()
    )


def upstream_shape_fits(
    release: OperatorRelease, talos_versions: Sequence[str | TalosVersion]
) -> bool:
    """Whether generate can write Talos's own shape: the chart's operator detects the driver
    (v26.3.1 on), the chart sets no env lists of its own, and every GPU pool's Talos has
    /usr/bin/nvidia-ctk (1.13 on)."""
    upstream = _operator_data()["talosUpstream"]
    if _operator_key(release.operator) < _operator_key(upstream["operatorFrom"]):
        return False
    # A chart that sets its own env lists (PR #3585's CDI shape) keeps them.
    operator = release.chart_defaults.get("gpu-operator", {})
    if release.default_device_plugin_env or operator.get("validator"):
        return False
    talos_from = TalosVersion.parse(upstream["talosFrom"])
    return bool(talos_versions) and all(
        TalosVersion.of(version) >= talos_from for version in talos_versions
    )


def effective_operator_values(
    release: OperatorRelease, override: Mapping[str, Any], *, hami: bool = False
) -> dict[str, Any]:
    """The values the operator runs with: its defaults, then what the chart hands it (its own
    defaults, HAMi's, the override under ``gpu-operator:``)."""
    merged = merged_operator_values(release, override, hami=hami).get("gpu-operator", {})
    return merge_overwrite(operator_defaults(release.operator), merged)


def required_device_plugin_env(
    release: OperatorRelease, values: Mapping[str, Any] | None = None
) -> tuple[tuple[str, str], ...]:
    """What a ``devicePlugin.env`` override must hold on this release: the chart's default
    list (an override replaces it), then the Talos CDI variables it does not already set —
    unless the operator runs ``values`` in Talos's own shape, which needs no variables."""
    env = dict(release.default_device_plugin_env)
    if values is not None and runs_talos_upstream_shape(values, release.operator):
        return tuple(env.items())
    for name, value in talos_device_plugin_env():
        env.setdefault(name, value)
    return tuple(env.items())


def merge_overwrite(dst: Mapping[str, Any], *sources: Mapping[str, Any]) -> dict[str, Any]:
    """Sprig's ``mergeOverwrite``, on copies: mappings merge key by key, recursively; a list or
    a scalar from a later source replaces what was there (a list is never merged)."""
    merged = copy.deepcopy(dict(dst))
    for source in sources:
        _merge_into(merged, source)
    return merged


def _merge_into(dst: dict[str, Any], src: Mapping[str, Any]) -> None:
    for key, value in src.items():
        if isinstance(value, Mapping) and isinstance(dst.get(key), dict):
            _merge_into(dst[key], value)
        else:
            dst[key] = copy.deepcopy(dict(value) if isinstance(value, Mapping) else value)


def operator_values(
    release: OperatorRelease, *, hami: bool = False, upstream: bool = False
) -> dict[str, Any]:
    """``addons.gpuOperator.valuesOverride`` for Talos workers with the OS-provided driver.

    ``upstream``: Talos's own shape (:func:`talos_upstream_values`), with no list to restate.
    Otherwise every list is written whole, the chart's own entries first, so that the merge
    replacing lists loses nothing. With HAMi the operator's device plugin is off (HAMi's
    serves).
    """
    if upstream:
        operator = talos_upstream_values()
        if hami:
            operator["devicePlugin"] = {"enabled": False}
        return {"gpu-operator": operator}
    defaults = release.chart_defaults.get("gpu-operator", {})
    validator_env = dict(_env_pairs(defaults.get("validator", {}).get("driver", {}).get("env", [])))
    for name, value in _validator_driver_env():
        validator_env.setdefault(name, value)
    plugin_env = required_device_plugin_env(release)
    return {
        "gpu-operator": {
            # The Talos extensions provide the driver and the container toolkit.
            "driver": {"enabled": False},
            "toolkit": {"enabled": False},
            "validator": {"driver": {"env": _env_list(validator_env.items())}},
            "devicePlugin": {"enabled": not hami, "env": _env_list(plugin_env)},
        }
    }


def _env_list(pairs: Any) -> list[dict[str, str]]:
    return [{"name": name, "value": value} for name, value in pairs]


def merged_operator_values(
    release: OperatorRelease, override: Mapping[str, Any], *, hami: bool = False
) -> dict[str, Any]:
    """The operator values the chart hands to Helm: its defaults, HAMi's, then the override."""
    return merge_overwrite(release.chart_defaults, release.hami_defaults if hami else {}, override)


def _tenant_gpu_pools(plan: ClusterPlan) -> list[PoolPlan]:
    # The addon belongs to the Cozystack Kubernetes app, which only KubeVirt pools join.
    return [pool for pool in plan.pools if pool.nvidia is not None and pool.tenant_pool]


def tenant_addons(
    plan: ClusterPlan, release: OperatorRelease, hami: HamiRequest | None = None
) -> dict[str, Any] | None:
    """The ``Kubernetes`` app's ``addons`` values for the plan's KubeVirt GPU pools; None
    without any (a cluster of bare-metal pools has no Cozystack app).

    Planning refuses HAMi on Talos GPU pools unless forced
    (:func:`schematic.plan.cluster.hami_notes`): here it is written when asked.
    """
    pools = _tenant_gpu_pools(plan)
    if not pools:
        return None
    with_hami = hami is not None and hami.enabled
    upstream = upstream_shape_fits(release, [pool.release.version for pool in pools])
    addons: dict[str, Any] = {
        "gpuOperator": {
            "enabled": True,
            "valuesOverride": operator_values(release, hami=with_hami, upstream=upstream),
        }
    }
    if with_hami:
        addons["hami"] = {"enabled": True}
    return {"addons": addons}


# --- GPU pools outside Cozystack: NVIDIA's own gpu-operator release ---------------------------


@dataclass(frozen=True)
class StandaloneOperator:
    """Where NVIDIA's own ``gpu-operator`` release comes from, and the values Talos needs."""

    repository: str  # the Helm repository, added as ``nvidia``
    chart: str
    operator: str  # the release installed: the one the Talos shape was checked against
    namespace: str
    values: Mapping[str, Any]


def _node_gpu_pools(plan: ClusterPlan) -> list[PoolPlan]:
    # Bare-metal, board and cloud pools: their cluster runs the operator itself.
    return [pool for pool in plan.pools if pool.nvidia is not None and not pool.tenant_pool]


def standalone_operator(plan: ClusterPlan) -> StandaloneOperator | None:
    """The GPU Operator release for the plan's GPU pools outside Cozystack; None without any.

    The values are :func:`operator_values`'s, for a release that sets nothing of its own: Talos's
    own shape where every such pool's Talos allows it, else the CDI env lists.
    """
    pools = _node_gpu_pools(plan)
    if not pools:
        return None
    source = _operator_data()["standalone"]
    release = OperatorRelease(
        name=source["chart"],
        description=f"{source['chart']} {source['operator']}",
        operator=source["operator"],
        chart_defaults={},
        hami_defaults={},
    )
    upstream = upstream_shape_fits(release, [pool.release.version for pool in pools])
    return StandaloneOperator(
        repository=source["repository"],
        chart=source["chart"],
        operator=source["operator"],
        namespace=source["namespace"],
        values=operator_values(release, upstream=upstream)["gpu-operator"],
    )


# --- the smoke test -----------------------------------------------------------------------------


def smoke_test_runtime_class(talos: str | TalosVersion) -> str | None:
    """The runtime class a GPU pod needs on this Talos release, or None (native CDI)."""
    if TalosVersion.of(talos) >= _NATIVE_CDI_FROM:
        return None
    return _NVIDIA_RUNTIME_CLASS


def smoke_test_pod_name(pool: str) -> str:
    """The smoke-test Pod's name in a pool: what the pod is made and waited for by."""
    return f"gpu-smoke-test-{pool}"


def smoke_test_pod(plan: ClusterPlan, pool: PoolPlan) -> dict[str, Any] | None:
    """A Pod for the tenant cluster that runs ``nvidia-smi -L`` on every GPU of one node of
    the pool; None for a pool without NVIDIA GPUs."""
    if pool.nvidia is None or not pool.gpu_resources:
        return None
    spec: dict[str, Any] = {"restartPolicy": "Never"}
    runtime_class = smoke_test_runtime_class(pool.release.version)
    if runtime_class is not None:
        spec["runtimeClassName"] = runtime_class
    spec["tolerations"] = [{"key": _GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}]
    spec["containers"] = [
        {
            "name": "nvidia-smi",
            "image": SMOKE_TEST_IMAGE,
            "command": ["nvidia-smi", "-L"],
            # Inside the tenant the operator's device plugin advertises nvidia.com/gpu; the
            # pool's gpus[] (the VM's passthrough resources) say how many one node holds.
            "resources": {"limits": {_GPU_RESOURCE: len(pool.gpu_resources)}},
        }
    ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": smoke_test_pod_name(pool.name),
            "labels": {
                "app.kubernetes.io/name": "gpu-smoke-test",
                "app.kubernetes.io/managed-by": "talos-schematic",
            },
            "annotations": {
                "talos-schematic/cluster": plan.cluster,
                "talos-schematic/pool": pool.name,
                "talos-schematic/gpus": ",".join(pool.gpu_resources),
            },
        },
        "spec": spec,
    }
