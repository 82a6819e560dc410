"""Every rendered output of a cluster plan, as file contents or as one printable stream.

``render_files`` gives the ``--out`` tree (relative POSIX path → bytes); ``render_stream`` gives
what ``generate`` prints without ``--out``. Both are pure: writing is :mod:`schematic.output`'s.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Literal

from schematic.charts import ChartFit
from schematic.cluster import ClusterPlan, PoolPlan
from schematic.render import yamltext
from schematic.render.cozystack import (
    LayoutOrFit,
    image_factory_ca,
    kubernetes_nodes,
    layout_and_keys,
    tool_values,
    user_values,
)
from schematic.render.machineconfig import machine_config_patch
from schematic.render.summary import summary_json
from schematic.render.urls import pool_urls

__all__ = ["INDEX", "KINDS", "POOL_FILES", "SUMMARY", "Kind", "render_files", "render_stream"]

Kind = Literal["cozystack", "values", "machine-config", "schematic", "urls", "json"]
KINDS: tuple[Kind, ...] = ("cozystack", "values", "machine-config", "schematic", "urls", "json")
# The file each per-pool kind is written to, under <out>/<pool>/.
POOL_FILES: dict[Kind, str] = {
    "cozystack": "kubernetes-nodes.yaml",
    "values": "values.yaml",
    "machine-config": "machine-config-patch.yaml",
    "schematic": "schematic.yaml",
    "urls": "urls.yaml",
}
SUMMARY = "summary.json"
INDEX = "index.yaml"


def _indented(text: str) -> str:
    return "".join(f"  {line}\n" for line in text.splitlines())


class _Renderer:
    """Renders one plan; pools sharing a schematic share their machine-config patch text."""

    def __init__(self, plan: ClusterPlan, layout: LayoutOrFit) -> None:
        self.plan = plan
        self.layout = layout
        self.patches: dict[tuple[Any, ...], str] = {}
        self.tool_texts: dict[tuple[Any, ...], str] = {}
        self.documents: dict[tuple[Any, ...], str] = {}

    def texts(self, pool: PoolPlan, kinds: Iterable[Kind]) -> dict[Kind, str]:
        wanted = set(kinds)
        out: dict[Kind, str] = {}
        values = ""
        if wanted & {"cozystack", "values"}:
            # The user's keys and the tool's are disjoint, so the two dumps concatenate.
            values = self.user_text(pool) + self.tool_text(pool)
        if "cozystack" in wanted:
            head = kubernetes_nodes(self.plan, pool, spec={})
            del head["spec"]
            # Block YAML nests by indentation alone: the values text indented is the spec.
            out["cozystack"] = f"{yamltext.dump(head)}spec:\n{_indented(values)}"
        if "values" in wanted:
            out["values"] = values
        if "machine-config" in wanted:
            out["machine-config"] = self.patch(pool)
        if "schematic" in wanted:
            out["schematic"] = pool.canonical
        if "urls" in wanted:
            urls = pool_urls(pool)
            name = yamltext.dump({"pool": urls.pop("pool")})
            out["urls"] = name + self.cached(("urls", pool.schematic_id, pool.profile), urls)
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

    def tool_text(self, pool: PoolPlan) -> str:
        key = (
            pool.schematic_id,
            pool.talos,
            pool.gpu_resources,
            pool.kernel_modules,
            pool.kernel_modules_state,
            json.dumps(pool.registry_mirrors, sort_keys=True),
            image_factory_ca(pool),
        )
        if key not in self.tool_texts:
            values = tool_values(pool, self.layout)
            self.tool_texts[key] = yamltext.dump(values) if values else ""
        return self.tool_texts[key]

    def patch(self, pool: PoolPlan) -> str:
        # The patch depends only on these, which thousands of pools share.
        key = (
            pool.schematic_id,
            pool.talos,
            pool.kernel_modules,
            tuple(pool.sysctls.items()),
            json.dumps(pool.registry_mirrors, sort_keys=True),
        )
        if key not in self.patches:
            self.patches[key] = yamltext.dump_all(machine_config_patch(pool))
        return self.patches[key]


def _index(plan: ClusterPlan, kinds: tuple[Kind, ...], layout: LayoutOrFit) -> str:
    per_pool = [kind for kind in kinds if kind in POOL_FILES]
    index: dict[str, Any] = {
        "cluster": plan.cluster,
        "talos": plan.talos.version,
        "imageFactoryURL": plan.talos.image_factory_url,
    }
    if isinstance(layout, ChartFit):
        # What `check` needs to regenerate the same files without being told again.
        index["cozystack"] = layout.target.name
        if layout.insisted:
            index["allowIgnoredKeys"] = True
    index |= {
        "layout": layout_and_keys(layout)[0],
        # The same files in every pool's directory.
        "files": [POOL_FILES[kind] for kind in per_pool],
        "pools": [_index_entry(pool) for pool in plan.pools],
    }
    if len(kinds) == 1:
        index["format"] = kinds[0]  # written with --format: `check` reads it back
    if "json" in kinds:
        index["summary"] = SUMMARY
    header = "# Generated by talos-schematic generate; regenerate instead of editing.\n"
    return header + yamltext.dump(index)


def _index_entry(pool: PoolPlan) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": pool.name, "schematicID": pool.schematic_id}
    if pool.offline_schematic_id is not None:
        # A factory stamped the schematic: `check` matches the pool by its offline ID.
        entry["offlineSchematicID"] = pool.offline_schematic_id
    entry["extensions"] = list(pool.extensions)
    return entry


def render_files(
    plan: ClusterPlan, kinds: Iterable[Kind] = KINDS[:-1], layout: LayoutOrFit = "osimage"
) -> dict[str, bytes]:
    """The ``--out`` tree: ``<pool>/<file>`` per pool and kind, ``summary.json``, ``index.yaml``."""
    wanted = tuple(kind for kind in KINDS if kind in set(kinds))
    per_pool = [kind for kind in wanted if kind in POOL_FILES]
    renderer = _Renderer(plan, layout)
    files: dict[str, bytes] = {}
    for pool in plan.pools:
        texts = renderer.texts(pool, per_pool)
        for kind in per_pool:
            files[f"{pool.name}/{POOL_FILES[kind]}"] = texts[kind].encode()
    if "json" in wanted:
        files[SUMMARY] = summary_json(plan, layout).encode()
    files[INDEX] = _index(plan, wanted, layout).encode()
    return files


def render_stream(plan: ClusterPlan, kind: Kind, layout: LayoutOrFit = "osimage") -> str:
    """What ``generate --format KIND`` prints: one multi-document YAML stream, or JSON."""
    if kind == "json":
        return summary_json(plan, layout)
    renderer = _Renderer(plan, layout)
    documents = []
    for pool in plan.pools:
        text = renderer.texts(pool, (kind,))[kind]
        # Values, patches and schematics do not name their pool; a comment does.
        if kind in ("values", "machine-config", "schematic"):
            text = f"# pool {pool.name}: schematic {pool.schematic_id}\n{text}"
        documents.append(text)
    return "---\n".join(documents)
