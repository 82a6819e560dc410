"""``APPLY.md``'s steps for Talos nodes of the user's own (bare metal, boards, clouds): each
node gets its pool's machine-config patch and installer through ``talosctl``, NVIDIA's GPU
Operator is installed with helm in the cluster they form, and a GPU pool's smoke test runs
there. Never for KubeVirt pools: a chart makes their machine config."""

from __future__ import annotations

import shlex

from schematic.output.render.applysteps import Directory, Entry, Section
from schematic.output.render.kinds import OPERATOR_VALUES_FILE, SMOKE_TEST_FILE
from schematic.output.render.urls import pool_urls
from schematic.plan.gpupath import standalone_operator

__all__ = ["talos_workload_sections", "talosctl_sections"]


def _nodes(directory: Directory) -> Section | None:
    entries: list[Entry] = []
    for pool, path in directory.node_files("machine-config-patch.yaml"):
        urls = pool_urls(pool)
        installer = urls.get("installer") or urls.get("installerSecureBoot")
        commands = [f"talosctl patch mc --nodes NODE[,NODE...] --patch @{path}"]
        if isinstance(installer, str):
            commands.append(f"talosctl upgrade --nodes NODE --image {shlex.quote(installer)}")
        entries.append(
            Entry(
                path,
                f"the machine config of each node of pool `{pool.name}` (talosctl); the "
                "upgrade boots the pool's schematic on a running node",
                tuple(commands),
            )
        )
    for _pool, path in directory.node_files("urls.yaml"):
        what = "the boot media for new nodes of the pool, and its installer"
        entries.append(Entry(path, f"{what}: download, nothing to apply"))
    if not entries:
        return None
    return Section(
        "Talos nodes (talosctl)",
        "Bare-metal and board pools are configured through talosctl (with the cluster's "
        "talosconfig); a new node boots the media in its pool's `urls.yaml`, then gets the "
        "patch with its machine config.",
        tuple(entries),
    )


# Talos enforces the "baseline" Pod Security level by default (siderolabs/talos
# pkg/machinery/config/types/k8s/admission_control.go, commit ad882317); the operator's pods
# mount host paths and run privileged, so its namespace is labelled before they are created.
PRIVILEGED = "pod-security.kubernetes.io/enforce=privileged"


def _gpu_operator(directory: Directory) -> Section | None:
    operator = standalone_operator(directory.plan)
    if operator is None or OPERATOR_VALUES_FILE not in directory.paths:
        return None
    namespace, chart = operator.namespace, operator.chart
    commands = (
        # Printed, then applied: `create` alone fails on a second run, when the namespace is
        # there; this runs again without error (kubectl's own idiom for an idempotent create).
        f"kubectl create namespace {namespace} --dry-run=client -o yaml | kubectl apply -f -",
        f"kubectl label namespace {namespace} {PRIVILEGED} --overwrite",
        f"helm repo add nvidia {operator.repository}",
        "helm repo update nvidia",
        f"helm upgrade --install {chart} nvidia/{chart} -n {namespace} --create-namespace "
        f"--version {operator.operator} -f {OPERATOR_VALUES_FILE}",
    )
    entry = Entry(
        OPERATOR_VALUES_FILE,
        f"the values of NVIDIA's GPU Operator {operator.operator}, installed with helm "
        f"in namespace `{namespace}` of the cluster `{directory.plan.cluster}`",
        commands,
    )
    return Section(
        "Talos nodes: the GPU Operator",
        f'With the kubeconfig of cluster "{directory.plan.cluster}": the operator advertises '
        "the GPUs of the pools' nodes, with its own driver and toolkit off (the pools' "
        "extensions provide them). Its namespace must allow privileged pods (Talos enforces "
        '"baseline" by default). Every step can run again, after each new `generate`.',
        (entry,),
    )


def _smoke_tests(directory: Directory) -> Section | None:
    cluster = directory.plan.cluster
    entries = tuple(
        Entry(
            path,
            f"Pod `gpu-smoke-test-{pool.name}` in the cluster `{cluster}`",
            (
                f"kubectl apply -f {path}",
                f"kubectl logs -f pod/gpu-smoke-test-{pool.name}",
            ),
        )
        for pool, path in directory.node_files(SMOKE_TEST_FILE)
    )
    if not entries:
        return None
    installed = "; the step above installs it" if _gpu_operator(directory) else ""
    return Section(
        "Talos nodes: the smoke tests",
        f'With the kubeconfig of cluster "{cluster}", once the pool\'s nodes are Ready and the '
        "NVIDIA GPU Operator runs there with its driver and toolkit off (the driver comes from "
        f"the pool's extensions{installed}): each pod runs `nvidia-smi -L` on one node's GPUs; "
        "its file says how to read the answer.",
        entries,
    )


def talosctl_sections(directory: Directory) -> list[Section | None]:
    """The steps for the pools whose nodes take their machine config through talosctl."""
    return [_nodes(directory)]


def talos_workload_sections(directory: Directory) -> list[Section | None]:
    """The steps once the nodes of those pools run, however they were configured (talosctl or
    a tool's files): the GPU Operator, then the smoke tests."""
    return [_gpu_operator(directory), _smoke_tests(directory)]
