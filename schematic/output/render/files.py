"""Every rendered output of a cluster plan, as file contents or as one printable stream.

``render_files`` gives the ``--out`` tree (relative POSIX path → bytes); ``render_stream`` gives
what ``generate`` prints without ``--out``. Both are pure: writing is :mod:`schematic.output`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import fields
from typing import Any

from schematic.output.outdir import (
    APPLY,
    GENERATOR,
    HEADER,
    INDEX,
    KUSTOMIZATION,
    LOCK,
    OutputIndex,
    Tree,
    index_text,
)
from schematic.output.render import yamltext
from schematic.output.render.applyplan import apply_text
from schematic.output.render.cozystack import (
    LayoutOrFit,
    helm_release,
    image_factory_ca,
    kubernetes_nodes,
    layout_and_keys,
    tool_values,
    user_values,
)
from schematic.output.render.gpupath import (
    SmokeTests,
    addons_text,
    operator_release_of,
    operator_values_text,
    platform_text,
)
from schematic.output.render.kinds import (
    ADDONS_FILE,
    DEFAULT_KINDS,
    KINDS,
    OPERATOR_VALUES_FILE,
    OUTPUT_KINDS,
    PLATFORM_FILE,
    SMOKE_TEST_FILE,
    SUMMARY,
    Kind,
    kind_named,
)
from schematic.output.render.machineconfig import machine_config_patch
from schematic.output.render.summary import pool_record, summary_json
from schematic.output.render.urls import pool_urls
from schematic.plan.charts import ChartFit
from schematic.plan.cluster import ClusterPlan, PoolPlan, frozen_value

__all__ = [
    "DEFAULT_KINDS",
    "GENERATOR",
    "INDEX",
    "KINDS",
    "KUSTOMIZATION",
    "LOCK",
    "POOL_FILES",
    "SUMMARY",
    "TENANT_KINDS",
    "Kind",
    "render_files",
    "render_stream",
    "render_tree",
]

# Views of the kinds' table (schematic.output.render.kinds), the one place a kind is described.
# The file each per-pool kind with a renderer is written to, under <out>/<pool>/.
POOL_FILES: dict[Kind, str] = {
    kind.name: kind.pool_file
    for kind in OUTPUT_KINDS
    if kind.pool_file is not None and kind.render is not None
}
# What kustomization.yaml lists: the pools' objects. Not the addons (a partial Kubernetes app
# to merge, never to apply over the user's) nor the smoke tests (pods run once, by hand).
MANIFEST_KINDS: tuple[Kind, ...] = tuple(kind.name for kind in OUTPUT_KINDS if kind.manifest)
# What only a Cozystack tenant pool (KubeVirt) gets: a bare-metal or board pool is no
# KubernetesNodes object, so it gets neither the object, its values, nor a HelmRelease.
TENANT_KINDS: frozenset[Kind] = frozenset(kind.name for kind in OUTPUT_KINDS if kind.tenant_only)
# What only a cluster with a Cozystack pool gets: the pool objects and values, the tenant's
# Kubernetes app addons and the management cluster's platform values.
COZYSTACK_KINDS: frozenset[Kind] = TENANT_KINDS | {
    kind.name for kind in OUTPUT_KINDS if {ADDONS_FILE, PLATFORM_FILE} & set(kind.cluster_files)
}


def _indented(text: str) -> str:
    return "".join(f"  {line}\n" for line in text.splitlines())


# What pools differing only in these render alike: the name is written by the renderers
# themselves around the shared texts, and of the pass-through values the tool's own texts read
# only what `_RenderedAlike` adds to the key.
_NOT_IN_THE_SHARED_TEXTS = frozenset({"name", "passthrough"})
_SHARED_FIELDS = tuple(f.name for f in fields(PoolPlan) if f.name not in _NOT_IN_THE_SHARED_TEXTS)


class _RenderedAlike:
    """The key under which pools share their tool values, patch and URLs texts.

    Every field of the plan is in it but the name and the pass-through values, so a field added
    to :class:`PoolPlan` (or one a renderer starts to read) cannot be left out by hand; of the
    pass-through values, the two the tool's texts read (a pool's own ``talos.registryMirrors``
    and ``talos.imageFactoryCA``).
    """

    def __init__(self) -> None:
        # Pools planned alike share their field values (the same objects): each is made
        # hashable once, by identity, holding the object so that its id stays its own.
        self.frozen: dict[int, tuple[Any, Any]] = {}

    def freeze(self, value: Any) -> Any:
        known = self.frozen.get(id(value))
        if known is None:
            known = self.frozen[id(value)] = (value, frozen_value(value))
        return known[1]

    def __call__(self, pool: PoolPlan) -> tuple[Any, ...]:
        return (
            *(self.freeze(getattr(pool, name)) for name in _SHARED_FIELDS),
            self.freeze(pool.registry_mirrors),
            image_factory_ca(pool),
        )


class _Renderer:
    """Renders one plan; pools that render alike (see :class:`_RenderedAlike`) share texts."""

    def __init__(self, plan: ClusterPlan, layout: LayoutOrFit, lock: str | None = None) -> None:
        self.plan = plan
        self.layout = layout
        self.lock = lock
        self.patches: dict[tuple[Any, ...], str] = {}
        self.tool_texts: dict[tuple[Any, ...], str] = {}
        self.documents: dict[tuple[Any, ...], str] = {}
        self.rendered_alike = _RenderedAlike()

    def texts(self, pool: PoolPlan, kinds: Iterable[Kind]) -> dict[Kind, str]:
        """Each of ``kinds`` (rows with a renderer) for ``pool``."""
        texts = _PoolTexts(self, pool)
        out: dict[Kind, str] = {}
        for name in kinds:
            render = kind_named(name).render
            assert render is not None  # only the kinds of POOL_FILES are asked for
            out[name] = render(texts)
        return out

    def cached(self, key: tuple[Any, ...], document: dict[str, Any]) -> str:
        if key not in self.documents:
            self.documents[key] = yamltext.dump(document)
        return self.documents[key]

    def user_text(self, pool: PoolPlan) -> str:
        # Pools written alike (same pass-through values) share the text; repr tells 1 from True.
        key = ("user", repr(pool.passthrough))
        if key not in self.documents:
            self.documents[key] = yamltext.dump(user_values(self.plan.cluster, pool))
        return self.documents[key]

    def tool_text(self, pool: PoolPlan, alike: tuple[Any, ...]) -> str:
        if alike not in self.tool_texts:
            values = tool_values(pool, self.layout)
            self.tool_texts[alike] = yamltext.dump(values) if values else ""
        return self.tool_texts[alike]

    def patch(self, pool: PoolPlan, alike: tuple[Any, ...]) -> str:
        if alike not in self.patches:
            self.patches[alike] = yamltext.dump_all(machine_config_patch(pool))
        return self.patches[alike]


class _PoolTexts:
    """One pool's view of the run's renderer (:class:`schematic.output.render.kinds.PoolTexts`):
    its key among pools that render alike is worked out once, its values text at most once."""

    def __init__(self, renderer: _Renderer, pool: PoolPlan) -> None:
        self.renderer = renderer
        self.pool = pool
        self.alike = renderer.rendered_alike(pool)
        self.values_text: str | None = None

    def values(self) -> str:
        if self.values_text is None:
            # The user's keys and the tool's are disjoint, so the two dumps concatenate.
            renderer = self.renderer
            self.values_text = renderer.user_text(self.pool) + renderer.tool_text(
                self.pool, self.alike
            )
        return self.values_text

    def kubernetes_nodes(self) -> str:
        head = kubernetes_nodes(self.renderer.plan, self.pool, spec={})
        del head["spec"]
        # Block YAML nests by indentation alone: the values text indented is the spec.
        return f"{yamltext.dump(head)}spec:\n{_indented(self.values())}"

    def helm_release(self) -> str:
        head = helm_release(self.renderer.plan, self.pool, self.renderer.layout)
        spec = head.pop("spec")
        return (
            f"{yamltext.dump(head)}spec:\n{_indented(yamltext.dump(spec))}"
            f"  values:\n{_indented(_indented(self.values()))}"
        )

    def machine_config(self) -> str:
        return self.renderer.patch(self.pool, self.alike)

    def lock(self) -> str | None:
        return self.renderer.lock

    def urls(self) -> str:
        urls = pool_urls(self.pool)
        name = yamltext.dump({"pool": urls.pop("pool")})
        return name + self.renderer.cached(("urls", self.alike), urls)


def _gpu_path_files(
    plan: ClusterPlan, wanted: tuple[Kind, ...], layout: LayoutOrFit
) -> dict[str, str]:
    """The GPU path's files among ``wanted``: the addons patch (also when only the manifests
    are asked for: the GPUs are advertised only with it), the platform values, the smoke tests."""
    files: dict[str, str] = {}
    release = operator_release_of(layout)
    if "addons" in wanted or "cozystack" in wanted:
        text = addons_text(plan, release, plan.hami)
        if text is not None:
            files[ADDONS_FILE] = text
    if "gpu-operator" in wanted:
        text = operator_values_text(plan)
        if text is not None:
            files[OPERATOR_VALUES_FILE] = text
    if "platform" in wanted:
        text = platform_text(plan)
        if text is not None:
            files[PLATFORM_FILE] = text
    if "smoke-test" in wanted:
        smoke_tests = SmokeTests(plan)
        for pool in plan.pools:
            text = smoke_tests.text(pool)
            if text is not None:
                files[f"{pool.name}/{SMOKE_TEST_FILE}"] = text
    return files


def _kustomization(manifests: list[str]) -> str:
    document = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": manifests,
    }
    return HEADER + yamltext.dump(document)


def render_tree(
    plan: ClusterPlan,
    kinds: Iterable[Kind] = DEFAULT_KINDS,
    layout: LayoutOrFit = "osimage",
    *,
    kustomization: bool = True,
    lock: str | None = None,
) -> Tree:
    """The ``--out`` tree: ``<pool>/<file>`` per pool and kind, the GPU path's files
    (each kind's ``cluster_files``, ``<pool>/smoke-test.yaml``), ``summary.json``, and
    ``kustomization.yaml`` listing only the pools' objects (Flux builds a kustomization of
    every YAML file otherwise, and values, patches, schematics and the index are not objects);
    with the index describing them (:mod:`schematic.output.outdir` adds each file's digest).

    ``kustomization=False`` leaves it out (the directory holds the user's own); ``lock`` is the
    lock file's text, whose digests the mirror kinds name."""
    wanted = tuple(kind for kind in KINDS if kind in set(kinds))
    # A pool's HelmRelease replaces its KubernetesNodes object: both would manage the release
    # kubernetes-nodes-<cluster>-<pool> (Cozystack makes one from the object).
    per_pool = [
        kind
        for kind in wanted
        if kind in POOL_FILES and not (kind == "cozystack" and "helmrelease" in wanted)
    ]
    renderer = _Renderer(plan, layout, lock)
    files: dict[str, bytes] = {}
    for pool in plan.pools:
        kinds_here = _pool_kinds(pool, per_pool)
        texts = renderer.texts(pool, kinds_here)
        for kind in kinds_here:
            files[f"{pool.name}/{POOL_FILES[kind]}"] = texts[kind].encode()
    for name, text in _gpu_path_files(plan, wanted, layout).items():
        files[name] = text.encode()
    if "json" in wanted:
        files[SUMMARY] = summary_json(plan, layout).encode()
    manifests = [
        f"{pool.name}/{POOL_FILES[kind]}"
        for pool in plan.pools
        for kind in MANIFEST_KINDS
        if kind in per_pool and pool.tenant_pool
    ]
    if kustomization and manifests:
        files[KUSTOMIZATION] = _kustomization(manifests).encode()
    # A chart, its layout and the Cozystack kinds are recorded only where a pool is a
    # Cozystack pool: a run of bare-metal pools writes nothing of Cozystack's.
    cozystack = any(pool.tenant_pool for pool in plan.pools)
    index = OutputIndex(
        cluster=plan.cluster,
        talos=plan.talos.version,
        image_factory_url=plan.talos.image_factory_url,
        layout=layout_and_keys(layout)[0] if cozystack else "",
        kinds=wanted if cozystack else tuple(k for k in wanted if k not in COZYSTACK_KINDS),
        pools=tuple(pool_record(pool) for pool in plan.pools),
        files={},
        # What `check` needs to regenerate the same files without being told again.
        chart=layout.target.name if isinstance(layout, ChartFit) and cozystack else None,
        allow_ignored_keys=isinstance(layout, ChartFit) and bool(layout.insisted),
    )
    return Tree(
        files, index, _covered(wanted), lambda paths, held: apply_text(plan, paths, held).encode()
    )


def _covered(kinds: tuple[Kind, ...]) -> Callable[[str], bool]:
    """Whether an earlier file at a path is of one of ``kinds`` (this run has the last word on
    it: if the run does not write it again, it goes)."""
    rows = [kind_named(name) for name in kinds]
    pool_files = {row.pool_file for row in rows if row.pool_file is not None}
    paths = {path for row in rows for path in row.cluster_files}
    if "cozystack" in kinds:
        paths.add(ADDONS_FILE)  # written with the manifests too
    if any(row.manifest for row in rows):
        paths.add(KUSTOMIZATION)
    paths.add(LOCK)  # every run says whether the lock holds: written with --live-catalogue only

    def covers(path: str) -> bool:
        folder, _, base = path.rpartition("/")
        return path in paths or ("/" not in folder and folder != "" and base in pool_files)

    return covers


def render_files(
    plan: ClusterPlan,
    kinds: Iterable[Kind] = DEFAULT_KINDS,
    layout: LayoutOrFit = "osimage",
    *,
    kustomization: bool = True,
) -> dict[str, bytes]:
    """What ``generate --out`` writes into a new directory: :func:`render_tree`'s files and
    their index."""
    from dataclasses import replace

    from schematic.output.disk import digest

    tree = render_tree(plan, kinds, layout, kustomization=kustomization)
    files = dict(tree.files)
    files[APPLY] = apply_text(plan, files).encode()
    recorded = {name: digest(content) for name, content in files.items()}
    files[INDEX] = index_text(replace(tree.index, files=recorded)).encode()
    return files


def _pool_kinds(pool: PoolPlan, kinds: Iterable[Kind]) -> list[Kind]:
    """The kinds of file a pool gets: all, or for a pool that is not a tenant pool, all but
    the KubernetesNodes object, its values and its HelmRelease."""
    return [kind for kind in kinds if pool.tenant_pool or kind not in TENANT_KINDS]


def render_stream(
    plan: ClusterPlan, kind: Kind, layout: LayoutOrFit = "osimage", lock: str | None = None
) -> str:
    """What ``generate --format KIND`` prints: one multi-document YAML stream, or JSON
    (``lock``: the lock file's text, whose digests the mirror kinds name)."""
    if kind == "json":
        return summary_json(plan, layout)
    if kind in _NOTHING:
        return _gpu_path_stream(plan, kind, layout)
    renderer = _Renderer(plan, layout, lock)
    documents = []
    pools = [pool for pool in plan.pools if _pool_kinds(pool, (kind,))]
    if not pools:
        return f"# no KubeVirt pool: nothing is a KubernetesNodes object (--format {kind})\n"
    for pool in pools:
        text = renderer.texts(pool, (kind,))[kind]
        # Values, patches and schematics do not name their pool; a comment does.
        if kind_named(kind).stream_label:
            text = f"# pool {pool.name}: schematic {pool.schematic_id}\n{text}"
        documents.append(text)
    return "---\n".join(documents)


_NOTHING = {
    "addons": "# no NVIDIA GPU pool: the GPU Operator addon is not needed\n",
    "platform": "# every pool GPU is permitted by Cozystack's default passthrough list\n",
    "smoke-test": "# no NVIDIA GPU pool: nothing to smoke-test\n",
    "gpu-operator": "# no NVIDIA GPU pool whose cluster installs the GPU Operator itself\n",
}


# Where the GPU pools are the other side of the addons/gpu-operator split, the answer says
# which file serves them instead of "no NVIDIA GPU pool".
_ELSEWHERE = {
    "addons": "# no Cozystack pool with an NVIDIA GPU: the addon is Cozystack's; the GPU pools"
    " here install the GPU Operator with helm (--format gpu-operator)\n",
    "gpu-operator": "# every NVIDIA GPU pool is a Cozystack pool: Cozystack installs the GPU"
    " Operator as an addon (--format addons)\n",
}


def _gpu_path_stream(plan: ClusterPlan, kind: Kind, layout: LayoutOrFit) -> str:
    texts = list(_gpu_path_files(plan, (kind,), layout).values())
    if texts:
        return "---\n".join(texts)
    if kind in _ELSEWHERE and any(pool.nvidia is not None for pool in plan.pools):
        return _ELSEWHERE[kind]
    return _NOTHING[kind]
