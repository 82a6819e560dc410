"""`talos-schematic lint`: find the silent failures of Talos GPU pools in existing manifests.

    load_paths ─> build_inventory ─> pools / addons / manifests / extensions rules ─> formats
    (loader)      (inventory)        (each appends to one Collector)                 (text,
                                                                                      json, sarif)

Schematic IDs are resolved by :class:`~schematic.doctor.lint.schematics.SchematicResolver`:
schematic files among the inputs, the packaged well-known IDs, and an Image Factory only when
asked.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from schematic.doctor.lint.findings import RULES, SEVERITIES, Collector, Finding, Rule, Severity

# The rule modules are imported where they run: `triage` and `explain` import this package for
# its rule texts alone (lint.findings), and its rules' imports cost them a quarter of a second.
if TYPE_CHECKING:
    from schematic.core.model import Schematic
    from schematic.doctor.lint.inventory import Inventory
    from schematic.doctor.lint.loader import Document, LoadProblem
    from schematic.facts.chart_targets import ChartTarget
    from schematic.inputs.profile_values import HardwareProfile

__all__ = ["RULES", "Finding", "LintReport", "Rule", "lint_paths"]


class LintReport(BaseModel):
    """Every finding of one run, sorted by file and line, and how many files were read.
    ``judged``: whether the inputs held anything lint checks (a pool, a tenant app, a schematic,
    values, a rendered manifest, this tool's output, a rollout script); a run without it cannot
    vouch for anything, and ``lint`` says so (exit 4) instead of passing."""

    model_config = ConfigDict(frozen=True)

    findings: tuple[Finding, ...]
    files: int
    judged: bool
    # This tool's own cluster files among the inputs: planned by generate and check, not lint.
    cluster_files: tuple[str, ...] = ()
    # Indexes of folders `generate --out` wrote: lint reads them beside the folder's files.
    output_indexes: tuple[str, ...] = ()

    def count(self, severity: str) -> int:
        return sum(1 for f in self.findings if f.severity == severity)

    @property
    def has_errors(self) -> bool:
        return self.count("error") > 0

    def reaches(self, level: Severity) -> bool:
        """Whether a finding is as severe as ``level`` or more (``lint --fail-on``)."""
        gating = SEVERITIES[: SEVERITIES.index(level) + 1]
        return any(f.severity in gating for f in self.findings)

    def without(self, codes: Collection[str]) -> LintReport:
        """The report with the findings of ``codes`` left out (``lint --ignore``)."""
        kept = tuple(f for f in self.findings if f.code not in codes)
        return self.model_copy(update={"findings": kept})

    def summary(self) -> str:
        parts = [
            f"{self.count(s)} {s}{'s' if self.count(s) != 1 else ''}"
            for s in ("error", "warning", "note")
        ]
        files = f"{self.files} file{'s' if self.files != 1 else ''}"
        return f"{', '.join(parts)} in {files}"


def lint_paths(
    paths: Sequence[str],
    *,
    talos: str | None = None,
    fetch: Callable[[str], Schematic | None] | None = None,
    hardware: HardwareProfile | None = None,
    cozystack: str | None = None,
    chart: ChartTarget | None = None,
    config_patches: Sequence[tuple[str, str]] = (),
    factory: str = "the Image Factory",
) -> LintReport:
    """Lint every YAML file below ``paths``.

    ``talos`` overrides the Talos version the objects state; ``fetch`` resolves schematic IDs
    the inputs and the well-known table do not (e.g. an Image Factory's GET /schematics/{id});
    ``hardware`` is the machine that standalone Talos machine configs are for (they do not say);
    ``cozystack`` is the Cozystack release the Kubernetes apps run (its GPU Operator addon
    defaults; :func:`schematic.plan.gpupath.operator_release_named`), the released one if None;
    ``chart`` the kubernetes-nodes chart the values are for (keys it ignores are reported, and
    kernel-module findings follow what it loads); ``config_patches`` are (name, text) pairs of
    Talos config patches applied in this order to one node's config, checked as that one config
    (``talosctl --config-patch``), in strategic-merge or RFC 6902 form. A ``fetch`` that
    raises FactoryError (the factory, named ``factory``, unreachable or failing) is asked no
    more: the run goes on, its IDs stay unresolved (TS001), and one TS005 finding says why.
    Raises LintInputError for a path that cannot be read, ValueError for an unknown release.
    """
    from schematic.doctor.lint.addons import check_addons
    from schematic.doctor.lint.loader import load_counted
    from schematic.doctor.lint.manifests import check_manifests
    from schematic.doctor.lint.passthrough import check_passthrough
    from schematic.doctor.lint.pools import LintContext, check_clusters, check_pools
    from schematic.doctor.lint.readers import read_tool_formats
    from schematic.doctor.lint.schematics import SchematicResolver
    from schematic.plan.gpupath import operator_release, operator_release_named

    release = operator_release() if cozystack is None else operator_release_named(cozystack)
    documents, problems, files = load_counted(paths)
    scripts = [document for document in documents if document.script]
    documents = [document for document in documents if not document.script]
    if chart is None:
        chart = generated_for(documents)
    out = Collector()
    _report_load_problems(problems, out)
    inventory = read_tool_formats(documents)
    _add_config_patch_pool(config_patches, inventory, out)
    local = _check_schematic_files(inventory, talos, hardware, out)
    failures: list[str] = []
    ctx = LintContext(
        SchematicResolver(local, _guarded(fetch, failures)), talos, out, hardware, chart
    )
    check_pools(inventory, ctx)
    check_clusters(inventory, ctx)
    check_addons(inventory, out, release)
    check_passthrough(inventory, out)
    check_manifests(inventory, out)
    from schematic.doctor.lint.media import check_url_listings, is_url_listing
    from schematic.doctor.lint.omni import check_template_releases, is_omni_template
    from schematic.output.outdir import is_index_document

    check_url_listings(documents, out)
    check_template_releases(documents, out)
    if scripts:
        from schematic.doctor.lint.rollout import check_rollout_scripts, indexed_pools

        check_rollout_scripts(scripts, indexed_pools(documents), out)
    for failure in failures:
        out.add("TS005", message=f"the factory was not asked: {failure}", file=factory, line=None)
    files += len(config_patches)
    judged = bool(
        inventory.pools
        or inventory.clusters
        or inventory.schematic_files
        or inventory.schematic_problems
        or inventory.services
        or inventory.control_planes
        or inventory.operator_values
        or inventory.platform_gpu
        or scripts
        or any(is_url_listing(doc.data) or is_omni_template(doc.data) for doc in documents)
    )
    # An output folder's index names its cluster and pools too: it is not a cluster file.
    indexes = tuple(dict.fromkeys(doc.file for doc in documents if is_index_document(doc.data)))
    cluster_files = tuple(
        dict.fromkeys(
            doc.file
            for doc in documents
            if isinstance(doc.data, dict)
            and isinstance(doc.data.get("cluster"), str)
            and isinstance(doc.data.get("pools"), list)
            and doc.file not in indexes
        )
    )
    return LintReport(
        findings=tuple(out.findings),
        files=files,
        judged=judged,
        cluster_files=cluster_files,
        output_indexes=indexes,
    )


def _report_load_problems(problems: Sequence[LoadProblem], out: Collector) -> None:
    """A finding for each input that was not read, or not read whole."""
    for problem in problems:
        if problem.skipped:
            out.add("TS190", message=problem.message, file=problem.file, line=None)
        elif problem.hcl:
            out.add(
                "TS192",
                message="Terraform HCL builds a Talos schematic here; lint does not read HCL, "
                "so its extensions are not checked",
                file=problem.file,
                line=problem.line,
            )
        elif problem.unread:
            message = f"not read: {problem.message}"
            out.add("TS002", message=message, file=problem.file, line=None, fix=problem.fix)
        elif problem.template:
            out.add(
                "TS003",
                message="Helm/Go template directives ({{ ... }}): not YAML until rendered; skipped",
                file=problem.file,
                line=None,
                fix="lint what it renders: helm template RELEASE CHART -f VALUES"
                " | talos-schematic lint - (a talhelper patch: the configs talhelper genconfig"
                " writes to clusterconfig/)",
            )
        else:
            # Invalid YAML in a file that holds nothing lint reads is a note (TS191).
            code = "TS002" if problem.relevant else "TS191"
            message = f"not valid YAML: {problem.message}"
            out.add(code, message=message, file=problem.file, line=problem.line)


def _add_config_patch_pool(
    config_patches: Sequence[tuple[str, str]], inventory: Inventory, out: Collector
) -> None:
    """The config patches, applied in order to one node's config, as one pool."""
    import yaml

    from schematic.doctor.lint.inventory import config_patch_pool
    from schematic.doctor.lint.loader import parse_yaml

    patches = []
    for name, text in config_patches:
        try:
            patches.extend(parse_yaml(text, name))
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            line = mark.line + 1 if mark is not None else None
            message = f"not valid YAML: {getattr(err, 'problem', err)}"
            out.add("TS002", message=message, file=name, line=line)
    if patches:
        shown = ", ".join(dict.fromkeys(doc.file for doc in patches))
        patched = config_patch_pool(patches, f"config patches {shown}")
        if patched is not None:
            inventory.pools.append(patched)


def _check_schematic_files(
    inventory: Inventory, talos: str | None, hardware: HardwareProfile | None, out: Collector
) -> dict[str, tuple[Schematic, str]]:
    """Check the schematic files among the inputs (and their problems); the schematics they
    hold by ID, with where each is, for resolving the IDs pools name."""
    from schematic.doctor.lint.extensions import (
        check_extension_names,
        check_extension_order,
        check_extensions_together,
    )
    from schematic.doctor.lint.inventory import Pool, SchematicUse

    local: dict[str, tuple[Schematic, str]] = {}
    # A schematic a pool uses has its names checked there, against the pool's release: checked
    # here again it would be reported twice on the same line.
    pooled = {use.id for pool in inventory.pools for use in pool.schematics}
    if hardware is not None:
        # --hardware names the machine a schematic file alone is for: check it as that node's.
        for schematic, place in inventory.schematic_files:
            if schematic.id in pooled:
                continue
            pooled.add(schematic.id)
            pool = Pool(f"schematic {schematic.id}", place, gpus_known=False)
            pool.schematics.append(SchematicUse(schematic.id, place, "schematic file"))
            inventory.pools.append(pool)
    for schematic, place in inventory.schematic_files:
        local.setdefault(schematic.id, (schematic, f"{place.file}:{place.line}"))
        where = f"schematic {schematic.id}"
        check_extension_order(schematic, where, place, out)
        if schematic.id in pooled:
            continue
        if talos is not None:
            check_extension_names(schematic.extensions, talos, where, place, out)
        else:
            check_extensions_together(schematic.extensions, where, place, out)
    for error, place in inventory.schematic_problems:
        line = place.line + error.line - 1 if error.line else place.line
        field = f"{error.path}: " if error.path else ""
        from schematic.doctor.lint.media import is_meta_key_problem

        code = "TS135" if is_meta_key_problem(error.path) else "TS004"
        out.add(code, message=f"schematic: {field}{error.reason}", file=place.file, line=line)
    return local


def generated_for(documents: Sequence[Document]) -> ChartTarget | None:
    """The chart target this tool's own output index (``index.yaml``: ``generator:
    talos-schematic``, ``cozystack: TARGET``) says the values were generated for, when every
    such index among the inputs names the same one; None otherwise (``--chart`` decides)."""
    from schematic.facts.chart_targets import chart_target

    named = set()
    for document in documents:
        data = document.data
        if isinstance(data, dict) and data.get("generator") == "talos-schematic":
            named.add(data.get("cozystack"))
    if len(named) != 1:
        return None
    try:
        return chart_target(str(named.pop()))
    except ValueError:
        return None


def _guarded(
    fetch: Callable[[str], Schematic | None] | None, failures: list[str]
) -> Callable[[str], Schematic | None] | None:
    """``fetch`` that records its first FactoryError in ``failures`` and then answers None for
    every ID, so one unreachable factory costs one round of retries, not one per ID."""
    if fetch is None:
        return None
    from schematic.errors import FactoryError

    def guarded(schematic_id: str) -> Schematic | None:
        if failures:
            return None
        try:
            return fetch(schematic_id)
        except FactoryError as err:
            failures.append(str(err))
            return None

    return guarded
