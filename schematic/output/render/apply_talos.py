"""``APPLY.md``'s steps for Talos nodes of the user's own (bare metal, boards, clouds): each
node gets its pool's machine-config patch and installer through ``talosctl``, and a GPU pool's
smoke test runs in the cluster they form. Never for KubeVirt pools: a chart makes their
machine config."""

from __future__ import annotations

import shlex

from schematic.output.render.applysteps import Directory, Entry, Section
from schematic.output.render.kinds import SMOKE_TEST_FILE
from schematic.output.render.urls import pool_urls

__all__ = ["talosctl_sections"]


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
    return Section(
        "Talos nodes: the smoke tests",
        f'With the kubeconfig of cluster "{cluster}", once the pool\'s nodes are Ready and the '
        "NVIDIA GPU Operator runs there with its driver and toolkit off (the driver comes from "
        "the pool's extensions): each pod runs `nvidia-smi -L` on one node's GPUs; its file "
        "says how to read the answer.",
        entries,
    )


def talosctl_sections(directory: Directory) -> list[Section | None]:
    """The steps for the pools whose nodes take their machine config through talosctl."""
    return [_nodes(directory), _smoke_tests(directory)]
