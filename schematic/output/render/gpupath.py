"""The GPU path's files: the tenant addons, the management-cluster platform values and the
smoke-test pods, as YAML text with the comment that says where each goes.

The decisions are :mod:`schematic.plan.gpupath`'s; this module only words and lays them out.
"""

from __future__ import annotations

import textwrap
from dataclasses import replace
from typing import Any

from schematic.output.render import yamltext
from schematic.output.render.cozystack import LayoutOrFit
from schematic.plan.charts import ChartFit
from schematic.plan.cluster import ClusterPlan, PoolPlan
from schematic.plan.gpupath import (
    HamiRequest,
    OperatorRelease,
    management_gpus,
    operator_release_for_chart,
    platform_values,
    smoke_test_pod,
    standalone_operator,
    tenant_addons,
)

__all__ = [
    "SmokeTests",
    "addons_text",
    "operator_release_of",
    "operator_values_text",
    "platform_text",
    "smoke_test_text",
]


def operator_release_of(layout: LayoutOrFit) -> OperatorRelease:
    """The GPU Operator addon shape that goes with the chart target (the default without)."""
    return operator_release_for_chart(layout.target.name if isinstance(layout, ChartFit) else None)


def _comment(lines: list[str]) -> str:
    return "".join(f"# {line}".rstrip() + "\n" for line in lines)


def _wrapped(text: str) -> list[str]:
    return textwrap.wrap(text, width=92, break_on_hyphens=False, break_long_words=False)


def addons_text(
    plan: ClusterPlan, release: OperatorRelease, hami: HamiRequest | None = None
) -> str | None:
    """``cluster/kubernetes-addons.yaml``: a merge patch for the tenant's ``Kubernetes`` app,
    its addons under ``spec`` (where the app reads them; a bare ``addons:`` would land at the
    object's root, beside ``spec``, and be ignored)."""
    addons = tenant_addons(plan, release, hami)
    if addons is None:
        return None
    target = f'the Kubernetes app "{plan.cluster}"'
    if plan.namespace:
        target += f" (namespace {plan.namespace})"
    operator = addons["addons"]["gpuOperator"]["valuesOverride"]["gpu-operator"]
    if "devicePlugin" in operator and "env" in operator["devicePlugin"]:
        shape = (
            "Cozystack merges valuesOverride over its own defaults with mergeOverwrite, which "
            "replaces lists: every list here is complete. Add to a list only by keeping all of "
            "its entries, or the device plugin loses its CDI settings."
        )
    else:
        shape = (
            f"Talos's own operator shape (GPU Operator {release.operator} and Talos 1.13 or "
            "later): the operator's driver and toolkit off, the driver found under /usr/local, "
            "no env lists to restate."
        )
    text = (
        f"GPU Operator addon for {target}, for Talos GPU workers whose driver comes from the "
        f"system extensions. {shape} Chart shape {release.name}: {release.description}. "
        f"A merge patch for the spec of {target} (kubectl patch --type merge --patch-file); "
        "in a Git repository, merge spec.addons into the app's own file."
    )
    return _comment(_wrapped(text)) + yamltext.dump({"spec": addons})


def operator_values_text(plan: ClusterPlan) -> str | None:
    """``cluster/gpu-operator-values.yaml``: the values of NVIDIA's gpu-operator release for
    the GPU pools outside Cozystack; None without any."""
    operator = standalone_operator(plan)
    if operator is None:
        return None
    shape = (
        "the driver found under /usr/local (GPU Operator "
        f"{operator.operator} and Talos 1.13 or later detect it there)"
        if "hostPaths" in operator.values
        else "the device plugin handing out GPUs through CDI, with the driver at the host's root"
    )
    text = (
        f"Values of NVIDIA's GPU Operator {operator.operator} for the GPU nodes of cluster "
        f"\"{plan.cluster}\": the operator's driver and toolkit off (the pools' system "
        f"extensions provide both), {shape}. Install it with helm into namespace "
        f"{operator.namespace} (helm upgrade --install {operator.chart} nvidia/{operator.chart} "
        f"--version {operator.operator} -f this file), once the namespace allows privileged "
        'pods: Talos enforces the "baseline" Pod Security level by default.'
    )
    return _comment(_wrapped(text)) + yamltext.dump(dict(operator.values))


def platform_text(plan: ClusterPlan) -> str | None:
    """``management/platform-gpu-values.yaml``, only when a pool GPU is not permitted."""
    gpus = management_gpus(plan)
    values = platform_values(plan, gpus)
    if values is None:
        return None
    lines = _wrapped(
        f'Management cluster: the GPUs of tenant cluster "{plan.cluster}" that Cozystack\'s '
        "default passthrough list does not permit. Put these values under "
        "spec.components.platform.values of the cozystack-platform Package (with "
        "cozystack.gpu-operator in bundles.enabledPackages and bundles.iaas.gpuOperatorVariant: "
        "default). They are added to the default list while gpu.replaceDefaults stays false; "
        "if you already list pciHostDevices there, keep yours and add these (a list is "
        "replaced, not merged)."
    )
    for gpu in gpus:
        if gpu.permitted_by_default:
            continue
        pools = ", ".join(gpu.pools)
        lines.append(f"  {gpu.label}: pools {pools}")
        if gpu.default_resource_name:
            lines.append(
                f"    (the default list names it {gpu.default_resource_name}; "
                "check `kubectl describe node` on a GPU host for the name advertised)"
            )
    return _comment(lines) + yamltext.dump(values)


class SmokeTests:
    """``<pool>/smoke-test.yaml`` for many pools: pools alike but for their name share one
    rendering (the name is put in afterwards where YAML writes it as it is)."""

    _MARKER = "poolnamemarker"

    def __init__(self, plan: ClusterPlan) -> None:
        self.plan = plan
        self.texts: dict[tuple[Any, ...], str | None] = {}

    def text(self, pool: PoolPlan) -> str | None:
        if pool.nvidia is None:
            return None
        if yamltext.dump(pool.name) != f"{pool.name}\n" or self._MARKER in pool.name:
            return smoke_test_text(self.plan, pool)
        key = (pool.gpu_resources, pool.talos.version, pool.tenant_pool)
        if key not in self.texts:
            self.texts[key] = smoke_test_text(self.plan, replace(pool, name=self._MARKER))
        text = self.texts[key]
        return None if text is None else text.replace(self._MARKER, pool.name)


def smoke_test_text(plan: ClusterPlan, pool: PoolPlan) -> str | None:
    """``<pool>/smoke-test.yaml``: the Pod and how to read what it prints."""
    pod = smoke_test_pod(plan, pool)
    if pod is None:
        return None
    name = pod["metadata"]["name"]
    count = len(pool.gpu_resources)
    # A KubeVirt pool's nodes are in a Cozystack tenant cluster, reached with its own
    # kubeconfig; a bare-metal pool's are in the cluster itself.
    cluster, kubeconfig = (
        ("tenant cluster", "its kubeconfig, not the management cluster's")
        if pool.tenant_pool
        else ("cluster", "its kubeconfig")
    )
    lines = [
        f'Smoke test for pool "{pool.name}" of {cluster} "{plan.cluster}": '
        f"nvidia-smi -L on {count} GPU{'s' * (count != 1)} of one node.",
        f"Apply it to the {cluster} ({kubeconfig}):",
        f"  kubectl apply -f smoke-test.yaml && kubectl logs -f pod/{name}",
        "It lands on any node with that many free GPUs; to test one node of this pool, add",
        "spec.nodeName (the pool's node names carry its name: "
        f"kubectl get nodes | grep {pool.name}).",
        "Reading the answer:",
        '  "GPU 0: <name> (UUID: GPU-...)", one line per GPU: driver, device plugin and CDI work.',
        '  Pending with "Insufficient nvidia.com/gpu": no node advertises the GPUs; look at',
        "    the gpu-operator pods, and whether the NVIDIA modules are loaded",
        "    (talosctl read /proc/modules).",
        '  "nvidia-smi": executable file not found: the pod got the device but not the driver',
        "    files, so CDI injection is not wired (talos-schematic explain TS140).",
        '  "No devices found": the driver loads but drives no GPU (talos-schematic explain TS103).',
        "CDI is decided when a pod is admitted: a pod created before the node worked keeps what",
        "it got then. Delete and recreate it (and any GPU workload from that time):",
        f"  kubectl delete pod {name} && kubectl apply -f smoke-test.yaml",
    ]
    if "runtimeClassName" in pod["spec"]:
        lines.append(
            f"Talos {pool.talos.version} has no native CDI in containerd: the pod runs with the "
            f"{pod['spec']['runtimeClassName']} runtime class, and so must GPU workloads."
        )
    return _comment(lines) + yamltext.dump(pod)
