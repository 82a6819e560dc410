"""``APPLY.md``: where each file of an output directory goes, and the command that applies it.

A Cozystack output lands in four places (the platform ``Package`` and the tenant's
``Kubernetes`` app on the management cluster, the pools' objects beside them, the tenant cluster
itself); bare-metal pools' patches go to Talos nodes through talosctl, and the talhelper, Omni
and Terraform files to those tools. The plan is made from the directory's final list of files
(those this run writes and those an earlier run left), so it describes what is there, in the
order it is applied: the factory first, then the management cluster, then the tenant.
"""

from __future__ import annotations

import shlex
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from schematic.output.outdir import APPLY, INDEX, KUSTOMIZATION, LOCK
from schematic.output.render.kinds import (
    ADDONS_FILE,
    OUTPUT_KINDS,
    PLATFORM_FILE,
    SMOKE_TEST_FILE,
    SUMMARY,
)
from schematic.output.render.urls import pool_urls
from schematic.plan.cluster import ClusterPlan, PoolPlan
from schematic.plan.gpupath import management_gpus

__all__ = ["APPLY_FILE", "apply_text"]

APPLY_FILE = APPLY
# The platform Package Cozystack v1 is configured by (cluster-scoped; its values under
# spec.components.platform.values), and the resource names kubectl knows the apps by.
_PACKAGE = "packages.cozystack.io cozystack.cozystack-platform"
_KUBERNETES_APP = "kuberneteses.apps.cozystack.io"
# The files that carry a pool's gpus[] to the management cluster.
_POOL_OBJECT_FILES = ("kubernetes-nodes.yaml", "helmrelease.yaml", "values.yaml")


@dataclass(frozen=True)
class _Entry:
    path: str
    goes_to: str  # the object (or nothing) the file is for
    commands: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Section:
    title: str
    intro: str
    entries: tuple[_Entry, ...]


def _code(commands: Iterable[str]) -> str:
    body = "".join(f"{command}\n" for command in commands)
    return f"```sh\n{body}```\n" if body else ""


class _Planner:
    def __init__(self, plan: ClusterPlan, paths: Collection[str]) -> None:
        self.plan = plan
        self.paths = frozenset(paths)
        self.pools = {pool.name: pool for pool in plan.pools}
        self.namespace = plan.namespace
        # File name → the pools holding it: one pass over the paths, not one per pool and file.
        self.holders: dict[str, set[str]] = {}
        for path in self.paths:
            folder, _, base = path.partition("/")
            if base and "/" not in base and folder in self.pools:
                self.holders.setdefault(base, set()).add(folder)
        self.cache: dict[str, list[tuple[PoolPlan, str]]] = {}

    def ns(self) -> str:
        # Never written without one for Cozystack objects (fit_plan refuses); the values alone
        # may still be asked for without it.
        return f" -n {self.namespace}" if self.namespace else ""

    def where(self) -> str:
        return f"namespace `{self.namespace}`" if self.namespace else "the tenant's namespace"

    def pool_files(self, base: str) -> list[tuple[PoolPlan, str]]:
        """(pool, path) of each pool holding ``<pool>/<base>``, in the cluster file's order."""
        if base not in self.cache:
            holders = self.holders.get(base, set())
            self.cache[base] = [
                (pool, f"{name}/{base}") for name, pool in self.pools.items() if name in holders
            ]
        return self.cache[base]

    def factory(self) -> _Section | None:
        files = [path for _, path in self.pool_files("schematic.yaml")]
        if not files:
            return None
        factory = self.plan.talos.image_factory_url
        entries = tuple(
            _Entry(path, f"the Image Factory ({factory}): schematic `{pool.schematic_id}`")
            for pool, path in self.pool_files("schematic.yaml")
        )
        command = "talos-schematic register " + " ".join(files)
        if factory != "https://factory.talos.dev":
            command += f" --factory {shlex.quote(factory)}"  # a URL may hold `, $
        return _Section(
            "The Image Factory",
            "The factory builds images only for a schematic posted to it once (the IDs here "
            "were computed offline; posting again is harmless). Before any pool boots:\n\n"
            + _code([command]).rstrip("\n"),
            entries,
        )

    def platform(self) -> _Section | None:
        if PLATFORM_FILE not in self.paths:
            return self.platform_missing()
        entry = _Entry(
            PLATFORM_FILE,
            "the platform `Package` `cozystack.cozystack-platform` (cluster-wide): its "
            "`spec.components.platform.values`, `gpu.permittedHostDevices.pciHostDevices`",
            (f"kubectl edit {_PACKAGE}",),
        )
        return _Section(
            "Management cluster: the platform Package",
            "With the management cluster's kubeconfig. KubeVirt refuses a pool's VMs until the "
            "platform permits their GPUs, so this comes before the pools. Merge by hand: a list "
            "is replaced, not merged, so keep any `pciHostDevices` entries you already have and "
            "add these.",
            (entry,),
        )

    def platform_missing(self) -> _Section | None:
        """Without the platform values here: the GPUs of this directory's pools that
        Cozystack's default passthrough list does not permit, and how to get the values."""
        written = {
            name
            for name in self.pools
            if any(f"{name}/{base}" in self.paths for base in _POOL_OBJECT_FILES)
        }
        missing = [
            gpu
            for gpu in management_gpus(self.plan)
            if not gpu.permitted_by_default and written.intersection(gpu.pools)
        ]
        if not missing:
            return None
        named = "; ".join(
            f"{gpu.label} (pools {', '.join(p for p in gpu.pools if p in written)})"
            for gpu in missing
        )
        return _Section(
            "Management cluster: the GPUs to permit first",
            f"Cozystack's default passthrough list does not permit {named}, and this directory "
            f"does not hold the platform values that do (`{PLATFORM_FILE}`): KubeVirt refuses "
            "the pools' VMs until the platform Package permits them. Unless yours already "
            "does, write the values here and merge them into the Package:\n\n"
            + _code(["talos-schematic generate CLUSTER_FILE --out . -f platform"]).rstrip("\n"),
            (),
        )

    def kubernetes_app(self) -> _Section | None:
        if ADDONS_FILE not in self.paths:
            return None
        app = self.plan.cluster
        entry = _Entry(
            ADDONS_FILE,
            f"the tenant's `Kubernetes` app `{app}` ({self.where()}): merged into its spec "
            "(`addons.gpuOperator`)",
            (
                f"kubectl patch {_KUBERNETES_APP} {app}{self.ns()} --type merge "
                f"--patch-file {ADDONS_FILE}",
            ),
        )
        return _Section(
            "Management cluster: the tenant's Kubernetes app",
            "With the management cluster's kubeconfig. A merge patch replaces each list it "
            "names and keeps every other key of the app; the file's lists are written whole.",
            (entry,),
        )

    def pool_objects(self) -> _Section | None:
        entries: list[_Entry] = []
        for pool, path in self.pool_files("kubernetes-nodes.yaml"):
            entries.append(
                _Entry(
                    path,
                    f"`KubernetesNodes` `{self.plan.cluster}-{pool.name}` ({self.where()})",
                    (f"kubectl apply{self.ns()} -f {path}",),
                )
            )
        for pool, path in self.pool_files("helmrelease.yaml"):
            release = f"kubernetes-nodes-{self.plan.cluster}-{pool.name}"
            entries.append(
                _Entry(
                    path,
                    f"Flux `HelmRelease` `{release}` ({self.where()}), in place of the "
                    "pool's KubernetesNodes object",
                    (f"kubectl apply{self.ns()} -f {path}",),
                )
            )
        for pool, path in self.pool_files("values.yaml"):
            name = f"{self.plan.cluster}-{pool.name}"
            carried = [
                other
                for other in (f"{pool.name}/kubernetes-nodes.yaml", f"{pool.name}/helmrelease.yaml")
                if other in self.paths
            ]
            said = (
                f"the same values are in `{carried[0]}`: nothing more to apply"
                if carried
                else f"put them under `spec` of `KubernetesNodes` `{name}` ({self.where()}); "
                "`generate -f cozystack` writes that object"
            )
            entries.append(
                _Entry(path, f"the values of `KubernetesNodes` `{name}` (its spec): {said}")
            )
        if not entries:
            return None
        intro = "With the management cluster's kubeconfig, after the sections above."
        if KUSTOMIZATION in self.paths:
            intro += (
                f" `{KUSTOMIZATION}` lists every pool's object: one command applies them all "
                "(a Flux Kustomization of this directory does the same)."
            )
            entries.insert(
                0,
                _Entry(KUSTOMIZATION, "every pool's object above", ("kubectl apply -k .",)),
            )
        return _Section("Management cluster: the pools", intro, tuple(entries))

    def tenant(self) -> _Section | None:
        entries = tuple(
            _Entry(
                path,
                f"Pod `gpu-smoke-test-{pool.name}` in the tenant cluster `{self.plan.cluster}`",
                (
                    f"kubectl --kubeconfig TENANT_KUBECONFIG apply -f {path}",
                    "kubectl --kubeconfig TENANT_KUBECONFIG logs -f "
                    f"pod/gpu-smoke-test-{pool.name}",
                ),
            )
            for pool, path in self.pool_files(SMOKE_TEST_FILE)
        )
        if not entries:
            return None
        return _Section(
            "Tenant cluster: the smoke tests",
            f'With the kubeconfig of tenant cluster "{self.plan.cluster}" (not the management '
            "cluster's), once the pool's nodes are Ready: each pod runs `nvidia-smi -L` on one "
            "GPU; its file says how to read the answer.",
            entries,
        )

    def nodes(self) -> _Section | None:
        entries: list[_Entry] = []
        for pool, path in self.pool_files("machine-config-patch.yaml"):
            if pool.tenant_pool:
                continue  # a record (below): the chart makes the machine config
            urls = pool_urls(pool)
            installer = urls.get("installer") or urls.get("installerSecureBoot")
            commands = [f"talosctl patch mc --nodes NODE[,NODE...] --patch @{path}"]
            if isinstance(installer, str):
                commands.append(f"talosctl upgrade --nodes NODE --image {shlex.quote(installer)}")
            entries.append(
                _Entry(
                    path,
                    f"the machine config of each node of pool `{pool.name}` (talosctl); the "
                    "upgrade boots the pool's schematic on a running node",
                    tuple(commands),
                )
            )
        for pool, path in self.pool_files("urls.yaml"):
            if not pool.tenant_pool:
                what = "the boot media for new nodes of the pool, and its installer"
                entries.append(_Entry(path, f"{what}: download, nothing to apply"))
        if not entries:
            return None
        return _Section(
            "Talos nodes",
            "Bare-metal and board pools are configured through talosctl (with the cluster's "
            "talosconfig); a new node boots the media in its pool's `urls.yaml`, then gets the "
            "patch with its machine config.",
            tuple(entries),
        )

    def tools(self) -> _Section | None:
        # Each kind with an apply step in the kinds' table, in the table's order.
        entries: list[_Entry] = []
        for kind in OUTPUT_KINDS:
            if kind.apply is None or kind.pool_file is None:
                continue
            for pool, path in self.pool_files(kind.pool_file):
                step = kind.apply(pool, path)
                entries.append(_Entry(path, step.goes_to, step.commands))
        if not entries:
            return None
        return _Section(
            "Other tools",
            "Files for tools that configure the cluster themselves: copy each into that tool's "
            "repository, then run its commands there.",
            tuple(entries),
        )

    def records(self) -> _Section:
        said = {
            INDEX: "what the tool wrote here: nothing to apply",
            SUMMARY: "each pool's decision, for tools: nothing to apply",
            LOCK: "the extension catalogue the run checked against: nothing to apply",
            APPLY_FILE: "this plan",
        }
        entries = [
            _Entry(path, what)
            for path, what in said.items()
            if path in self.paths or path in (INDEX, APPLY_FILE)
        ]
        for pool, path in self.pool_files("machine-config-patch.yaml"):
            if pool.tenant_pool:
                entries.append(
                    _Entry(
                        path,
                        "what the pool's machine config must hold: the kubernetes-nodes chart "
                        "makes it from the pool's values (a patch applied by hand is undone at "
                        "its next reconcile); for review and `lint`",
                    )
                )
        for pool, path in self.pool_files("urls.yaml"):
            if pool.tenant_pool:
                entries.append(
                    _Entry(path, "the disk image the pool's VMs boot, and its installer")
                )
        return _Section("Records", "Files that are read, never applied.", tuple(entries))


def _section_text(number: int, section: _Section) -> str:
    parts = [f"## {number}. {section.title}\n\n{section.intro}\n\n"]
    for entry in section.entries:
        parts.append(f"- `{entry.path}`: {entry.goes_to}\n")
        if entry.commands:
            block = "".join(f"  {line}\n" for line in _code(entry.commands).splitlines())
            parts.append(f"\n{block}\n")
    return "".join(parts).rstrip("\n") + "\n"


def apply_text(plan: ClusterPlan, paths: Collection[str], held_back: Collection[str] = ()) -> str:
    """``APPLY.md`` for a directory holding ``paths`` (relative; the index and this file need
    not be among them), from ``plan`` (every pool, whichever this run wrote). ``held_back``:
    pools whose files a ``--pool`` run left older than ``plan``."""
    planner = _Planner(plan, paths)
    sections = [
        planner.factory(),
        planner.platform(),
        planner.kubernetes_app(),
        planner.pool_objects(),
        planner.tenant(),
        planner.nodes(),
        planner.tools(),
        planner.records(),
    ]
    head = (
        "<!-- Generated by talos-schematic generate; regenerate instead of editing. -->\n"
        f'# Applying tenant cluster "{plan.cluster}"\n\n'
        "Where each file of this directory goes, and the command that applies it, in order. "
        "Run the commands from this directory.\n"
    )
    if held_back:
        names = ", ".join(f"`{name}`" for name in sorted(held_back))
        head += (
            f"\n**Not regenerated by the last run** (`generate --pool`): {names}. Their files "
            "here are not what the cluster file now says (another schematic, or a pool no longer "
            "in it), while the IDs and images below are the cluster file's: run `generate` "
            "without `--pool` before applying them.\n"
        )
    shown = [section for section in sections if section is not None]
    return head + "".join(f"\n{_section_text(n, s)}" for n, s in enumerate(shown, 1))
