"""A rollout as a shell script: ``talosctl upgrade`` per node, or tuppr's annotations and objects.

Both scripts run top to bottom in the order :func:`schematic.plan.rollout.plan_rollout` chose,
and every image they name is the pool's installer for the target release: ``talosctl upgrade``
without ``--image`` installs the release's plain ``metal-installer`` (siderolabs/talos @
ad8823176e75b9cd07647ddde13c34f2ab77c663, ``cmd/talosctl/cmd/talos/upgrade.go``: the flag's
default is ``images.InstallerImageRepository("metal")``), which drops every extension.

The TalosUpgrade objects follow tuppr's CRD (home-operations/tuppr @
f92ef37893a0931782e73661fa9a8455fd1ac396, ``api/v1alpha1/talosupgrade_types.go``): cluster
scoped, ``spec.talos.version`` required, ``spec.nodeSelector`` a label selector, the default
``parallelism`` of 1 upgrading one node at a time. The object names no image: tuppr builds each
node's from its annotations.
"""

from __future__ import annotations

import shlex
from typing import Any

from schematic.inputs.nodes import POOL_LABEL, ClusterNode
from schematic.output.render import yamltext
from schematic.plan.gpupath import smoke_test_pod_name
from schematic.plan.rollout import TUPPR_FACTORY_URL, TUPPR_SCHEMATIC, PoolRollout, Rollout

__all__ = ["TUPPR_API_VERSION", "rollout_talosctl", "rollout_tuppr", "talos_upgrade"]

TUPPR_API_VERSION = "tuppr.home-operations.com/v1alpha1"
_READY_TIMEOUT = "15m"
_SMOKE_TIMEOUT = "10m"


def _q(word: str) -> str:
    return shlex.quote(word)


def _head(rollout: Rollout, what: str) -> list[str]:
    lines = [
        "#!/bin/sh",
        f"# Talos {rollout.talos} for cluster {rollout.cluster}: {what}",
        "# Control plane first, then the pools without a GPU, GPU pools last; one node at a",
        "# time. Each pool upgrades to its own installer: an image without the pool's",
        "# schematic drops its extensions.",
        "set -eu",
    ]
    if rollout.refused:
        lines.append(
            f"# Not rolled (the release refuses them; see talos-schematic upgrade): "
            f"{', '.join(rollout.refused)}"
        )
    return lines


def _tenant_note(pool: PoolRollout) -> list[str]:
    return [
        f"# pool {pool.pool} is a Cozystack tenant pool: apply its new values "
        f"(kubectl apply -f {pool.pool}/kubernetes-nodes.yaml on the management cluster) and",
        "# Cozystack replaces its VMs from the new boot disk; an in-place upgrade is undone the",
        "# next time a VM is recreated. Only for VMs Cozystack does not manage:",
    ]


def _smoke_test(pool: str) -> list[str]:
    pod = _q(f"pod/{smoke_test_pod_name(pool)}")
    return [
        f"# smoke test before the rest of pool {pool} (the tenant cluster's kubeconfig)",
        f"kubectl delete {pod} --ignore-not-found",
        f"kubectl apply -f {_q(f'{pool}/smoke-test.yaml')}",
        f"kubectl wait --for=jsonpath='{{.status.phase}}'=Succeeded {pod} "
        f"--timeout={_SMOKE_TIMEOUT}",
        f"kubectl logs {pod}",
    ]


def _upgrade(node: ClusterNode, image: str) -> list[str]:
    return [
        f"talosctl upgrade --nodes {_q(node.address)} --image {_q(image)}",
        f"kubectl wait --for=condition=Ready {_q(f'node/{node.name}')} --timeout={_READY_TIMEOUT}",
    ]


def _commented(lines: list[str]) -> list[str]:
    return [f"# {line}" for line in lines]


def _pool_talosctl(pool: PoolRollout) -> list[str]:
    kind = "GPU" if pool.gpu else "no GPU"
    lines = ["", f"# pool {pool.pool} ({kind}): {pool.installer}"]
    if pool.tenant_pool:
        lines += _tenant_note(pool)
    steps: list[str] = []
    if pool.nodes is None:
        steps.append(
            f"for each node of the pool (kubectl get nodes -l {POOL_LABEL}={pool.pool}), "
            "one at a time:"
        )
        steps.append(f"talosctl upgrade --nodes <address> --image {_q(pool.installer)}")
        if pool.gpu:
            steps += _smoke_test(pool.pool)[1:]
        lines += _commented(steps)
        return lines
    if not pool.nodes:
        lines.append("# no node of the list belongs to this pool")
    for index, node in enumerate(pool.nodes):
        steps += _upgrade(node, pool.installer)
        if pool.gpu and index == 0:
            steps += _smoke_test(pool.pool)
    lines += _commented(steps) if pool.tenant_pool else steps
    return lines


def rollout_talosctl(rollout: Rollout) -> str:
    """One ``talosctl upgrade --image`` per node, each followed by a wait for the node."""
    lines = _head(rollout, "talosctl upgrade, node by node")
    if rollout.control_plane:
        lines += ["", "# control plane, in no pool of the cluster file: keep each node's schematic"]
        for node in rollout.control_plane:
            running = node.annotation("extensions.talos.dev/schematic") or "unknown"
            lines.append(
                f"# {node.name} runs schematic {running}: talosctl upgrade --nodes "
                f"{_q(node.address)} --image <its installer repository>/{running}:{rollout.talos}"
            )
    for pool in rollout.pools:
        lines += _pool_talosctl(pool)
    lines += _unplaced(rollout)
    return "\n".join(lines) + "\n"


def _unplaced(rollout: Rollout) -> list[str]:
    if not rollout.unplaced:
        return []
    names = ", ".join(node.name for node in rollout.unplaced)
    return [
        "",
        f"# in no pool (no {POOL_LABEL} label, no pool's schematic, no pool's name): {names}",
        "# not upgraded here: nothing says which installer keeps their extensions",
    ]


def talos_upgrade(rollout: Rollout, pool: PoolRollout) -> dict[str, Any]:
    """The pool's TalosUpgrade: its nodes (by the pool label) to the target release."""
    return {
        "apiVersion": TUPPR_API_VERSION,
        "kind": "TalosUpgrade",
        "metadata": {"name": f"{rollout.cluster}-{pool.pool}"},
        "spec": {
            "talos": {"version": rollout.talos},
            "nodeSelector": {"matchLabels": {POOL_LABEL: pool.pool}},
        },
    }


def _annotations(pool: PoolRollout) -> str:
    return (
        f"{_q(f'{TUPPR_SCHEMATIC}={pool.schematic_id}')} "
        f"{_q(f'{TUPPR_FACTORY_URL}={pool.repository}')} --overwrite"
    )


def _pool_tuppr(rollout: Rollout, pool: PoolRollout) -> list[str]:
    kind = "GPU" if pool.gpu else "no GPU"
    lines = ["", f"# pool {pool.pool} ({kind}): {pool.installer}"]
    steps: list[str] = []
    if pool.nodes is None:
        selector = _q(f"{POOL_LABEL}={pool.pool}")
        steps.append(f"kubectl annotate node -l {selector} {_annotations(pool)}")
    else:
        for node in pool.nodes:
            steps.append(f"kubectl annotate {_q(f'node/{node.name}')} {_annotations(pool)}")
            if node.label(POOL_LABEL) != pool.pool:
                steps.append(
                    f"kubectl label {_q(f'node/{node.name}')} "
                    f"{_q(f'{POOL_LABEL}={pool.pool}')} --overwrite"
                )
    if pool.gpu:
        steps.append(
            f"# GPU pool: once its first node is upgraded, run {pool.pool}/smoke-test.yaml; "
            f"tuppr goes on node by node"
        )
    steps.append("kubectl apply -f - <<'EOF'")
    steps += yamltext.dump(talos_upgrade(rollout, pool)).splitlines()
    steps.append("EOF")
    if pool.tenant_pool:
        lines += _tenant_note(pool)
        steps = _commented(steps)
    return lines + steps


def rollout_tuppr(rollout: Rollout) -> str:
    """Per pool: tuppr's schematic and factory-url annotations on its nodes (the pool label
    where a node lacks it) and a TalosUpgrade selecting them, applied pool by pool."""
    lines = _head(rollout, "tuppr, pool by pool")
    if rollout.control_plane:
        names = ", ".join(node.name for node in rollout.control_plane)
        lines += [
            "",
            f"# control plane, in no pool of the cluster file ({names}): tuppr keeps the",
            "# schematic each runs when it has no annotation; give them a TalosUpgrade of",
            "# their own",
        ]
    for pool in rollout.pools:
        lines += _pool_tuppr(rollout, pool)
    lines += _unplaced(rollout)
    return "\n".join(lines) + "\n"
