"""``APPLY.md``'s Cozystack steps, for KubeVirt pools only: the platform ``Package`` and the
tenant's ``Kubernetes`` app on the management cluster, the pools' objects beside them, then
the tenant cluster itself.

The resource names are those Cozystack registers: ``kuberneteses`` and ``kubernetesnodeses``
of ``apps.cozystack.io`` (cozystack/cozystack ``packages/system/kubernetes-rd/cozyrds/
kubernetes.yaml`` and ``kubernetes-nodes-rd/cozyrds/kubernetes-nodes.yaml`` at 3c780acd), and
the platform ``Package`` of ``cozystack.io`` (``packages/core/platform/templates/_helpers.tpl``).
"""

from __future__ import annotations

from schematic.output.outdir import KUSTOMIZATION
from schematic.output.render.applysteps import Directory, Entry, Section, code
from schematic.output.render.kinds import ADDONS_FILE, PLATFORM_FILE, SMOKE_TEST_FILE
from schematic.plan.gpupath import management_gpus

__all__ = ["KUBERNETES_APP", "PACKAGE", "cozystack_sections"]

PACKAGE = "packages.cozystack.io cozystack.cozystack-platform"
KUBERNETES_APP = "kuberneteses.apps.cozystack.io"
# The files that carry a pool's gpus[] to the management cluster.
_POOL_OBJECT_FILES = ("kubernetes-nodes.yaml", "helmrelease.yaml", "values.yaml")


class _Cozystack:
    def __init__(self, directory: Directory) -> None:
        self.dir = directory
        self.plan = directory.plan
        self.namespace = directory.plan.namespace

    def ns(self) -> str:
        # Never written without one for Cozystack objects (fit_plan refuses); the values alone
        # may still be asked for without it.
        return f" -n {self.namespace}" if self.namespace else ""

    def where(self) -> str:
        return f"namespace `{self.namespace}`" if self.namespace else "the tenant's namespace"

    def platform(self) -> Section | None:
        if PLATFORM_FILE not in self.dir.paths:
            return self.platform_missing()
        entry = Entry(
            PLATFORM_FILE,
            "the platform `Package` `cozystack.cozystack-platform` (cluster-wide): its "
            "`spec.components.platform.values`, `gpu.permittedHostDevices.pciHostDevices`",
            (f"kubectl edit {PACKAGE}",),
        )
        return Section(
            "Cozystack management cluster: the platform Package",
            "With the management cluster's kubeconfig. KubeVirt refuses a pool's VMs until the "
            "platform permits their GPUs, so this comes before the pools. Merge by hand: a list "
            "is replaced, not merged, so keep any `pciHostDevices` entries you already have and "
            "add these.",
            (entry,),
        )

    def platform_missing(self) -> Section | None:
        """Without the platform values here: the GPUs of this directory's pools that
        Cozystack's default passthrough list does not permit, and how to get the values."""
        written = {
            name
            for name in self.dir.pools
            if any(f"{name}/{base}" in self.dir.paths for base in _POOL_OBJECT_FILES)
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
        return Section(
            "Cozystack management cluster: the GPUs to permit first",
            f"Cozystack's default passthrough list does not permit {named}, and this directory "
            f"does not hold the platform values that do (`{PLATFORM_FILE}`): KubeVirt refuses "
            "the pools' VMs until the platform Package permits them. Unless yours already "
            "does, write the values here and merge them into the Package:\n\n"
            + code(["talos-schematic generate CLUSTER_FILE --out . -f platform"]).rstrip("\n"),
            (),
        )

    def kubernetes_app(self) -> Section | None:
        if ADDONS_FILE not in self.dir.paths:
            return None
        app = self.plan.cluster
        entry = Entry(
            ADDONS_FILE,
            f"the tenant's `Kubernetes` app `{app}` ({self.where()}): a merge patch setting "
            "`spec.addons.gpuOperator`",
            (
                f"kubectl patch {KUBERNETES_APP} {app}{self.ns()} --type merge "
                f"--patch-file {ADDONS_FILE}",
            ),
        )
        return Section(
            "Cozystack management cluster: the tenant's Kubernetes app",
            "With the management cluster's kubeconfig. A merge patch replaces each list it "
            "names and keeps every other key of the app; the file's lists are written whole.",
            (entry,),
        )

    def pool_objects(self) -> Section | None:
        entries: list[Entry] = []
        for pool, path in self.dir.tenant_files("kubernetes-nodes.yaml"):
            entries.append(
                Entry(
                    path,
                    f"`KubernetesNodes` `{self.plan.cluster}-{pool.name}` ({self.where()})",
                    (f"kubectl apply{self.ns()} -f {path}",),
                )
            )
        for pool, path in self.dir.tenant_files("helmrelease.yaml"):
            release = f"kubernetes-nodes-{self.plan.cluster}-{pool.name}"
            entries.append(
                Entry(
                    path,
                    f"Flux `HelmRelease` `{release}` ({self.where()}), in place of the "
                    "pool's KubernetesNodes object",
                    (f"kubectl apply{self.ns()} -f {path}",),
                )
            )
        for pool, path in self.dir.tenant_files("values.yaml"):
            name = f"{self.plan.cluster}-{pool.name}"
            carried = [
                other
                for other in (f"{pool.name}/kubernetes-nodes.yaml", f"{pool.name}/helmrelease.yaml")
                if other in self.dir.paths
            ]
            said = (
                f"the same values are in `{carried[0]}`: nothing more to apply"
                if carried
                else f"put them under `spec` of `KubernetesNodes` `{name}` ({self.where()}); "
                "`generate -f cozystack` writes that object"
            )
            entries.append(
                Entry(path, f"the values of `KubernetesNodes` `{name}` (its spec): {said}")
            )
        if not entries:
            return None
        intro = "With the management cluster's kubeconfig, after the sections above."
        if KUSTOMIZATION in self.dir.paths:
            intro += (
                f" `{KUSTOMIZATION}` lists every pool's object: one command applies them all "
                "(a Flux Kustomization of this directory does the same)."
            )
            entries.insert(
                0, Entry(KUSTOMIZATION, "every pool's object above", ("kubectl apply -k .",))
            )
        return Section("Cozystack management cluster: the pools", intro, tuple(entries))

    def smoke_tests(self) -> Section | None:
        entries = tuple(
            Entry(
                path,
                f"Pod `gpu-smoke-test-{pool.name}` in the tenant cluster `{self.plan.cluster}`",
                (
                    f"kubectl --kubeconfig TENANT_KUBECONFIG apply -f {path}",
                    "kubectl --kubeconfig TENANT_KUBECONFIG logs -f "
                    f"pod/gpu-smoke-test-{pool.name}",
                ),
            )
            for pool, path in self.dir.tenant_files(SMOKE_TEST_FILE)
        )
        if not entries:
            return None
        return Section(
            "Cozystack tenant cluster: the smoke tests",
            f'With the kubeconfig of tenant cluster "{self.plan.cluster}" (not the management '
            "cluster's), once the pool's nodes are Ready: each pod runs `nvidia-smi -L` on one "
            "GPU; its file says how to read the answer.",
            entries,
        )

    def records(self) -> list[Entry]:
        entries = [
            Entry(
                path,
                "what the pool's machine config must hold: the kubernetes-nodes chart makes it "
                "from the pool's values (a patch applied by hand is undone at its next "
                "reconcile); for review and `lint`",
            )
            for _, path in self.dir.tenant_files("machine-config-patch.yaml")
        ]
        entries += [
            Entry(path, "the disk image the pool's VMs boot, and its installer")
            for _, path in self.dir.tenant_files("urls.yaml")
        ]
        return entries


def cozystack_sections(directory: Directory) -> tuple[list[Section | None], list[Entry]]:
    """The Cozystack steps in the order they are applied, and the Cozystack pools' records."""
    cozystack = _Cozystack(directory)
    steps = [
        cozystack.platform(),
        cozystack.kubernetes_app(),
        cozystack.pool_objects(),
        cozystack.smoke_tests(),
    ]
    return steps, cozystack.records()
