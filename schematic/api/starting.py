"""``init`` as a request to a result: a commented cluster file that ``generate`` accepts as it
is, planned before it is written (a wrong profile name or a pool the chart cannot serve stops
here), and written only as a new file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from schematic.api.new_pools import pool_entries
from schematic.api.requests import Result
from schematic.errors import ClusterFileError, OutputError, UsageError

if TYPE_CHECKING:
    from schematic.plan.cluster import ClusterPlan

__all__ = ["InitRequest", "init"]


@dataclass(frozen=True, kw_only=True)
class InitRequest:
    """What ``init`` is asked: ``pools`` as ``NAME=PROFILE``, ``dump`` a hardware dump whose
    machines become pools; ``file`` None: the text is only returned."""

    cluster: str = "mycluster"
    talos: str | None = None
    chart: str | None = None
    namespace: str | None = None
    pools: tuple[str, ...] = ()
    dump: Path | None = None
    file: Path | None = None


def init(request: InitRequest) -> Result[ClusterPlan]:
    """The cluster file's plan, and its text (``Result.text``) or, with ``request.file``, the
    file written (it must not exist). UsageError for an option that cannot be acted on."""
    from schematic.facts.catalog import talos_versions
    from schematic.facts.chart_targets import chart_choices
    from schematic.inputs.cluster_file import parse_cluster
    from schematic.output.render.starter import cluster_text
    from schematic.plan.cluster import plan_cluster

    file, chart, namespace = request.file, request.chart, request.namespace
    if file is not None and (file.exists() or file.is_symlink()):
        raise OutputError(f"{file}: exists; init writes only a new file")
    _check_names(namespace, chart)
    version = request.talos or talos_versions()[-1]
    entries = pool_entries(request.pools, request.dump)
    text = cluster_text(request.cluster, version, chart, entries, namespace)
    # What generate would refuse is refused here, before anything is written.
    source = "-" if file is None else str(file)
    base_dir = Path.cwd() if file is None else file.parent
    plan = plan_cluster(parse_cluster(text, source), source=source, base_dir=base_dir)
    tenants = ", ".join(pool.name for pool in plan.pools if pool.tenant_pool)
    # Both asked at once, so one run says everything missing. The release decides which keys
    # the chart reads (a guessed one fails silently); every KubernetesNodes object carries the
    # namespace, and the tenant's name is not known here.
    missing = {
        "--chart": f"--chart TARGET (the Cozystack release the values are for, one of: "
        f"{chart_choices()})",
        "--namespace": "--namespace tenant-NAME (the tenant's namespace in the management "
        "cluster, where its objects live)",
    }
    asked = [
        option
        for option, value in (("--chart", chart), ("--namespace", namespace))
        if value is None
    ]
    if tenants and asked:
        raise UsageError(
            f"pools {tenants} are Cozystack tenant pools; give "
            + " and ".join(missing[option] for option in asked),
            " / ".join(asked),
        )
    if tenants:
        _check_fits_chart(plan, chart)
    if file is not None:
        try:
            with open(file, "x", encoding="utf-8") as out:
                out.write(text)
        except OSError as err:
            raise OutputError(f"{file}: cannot write: {err.strerror or err}") from None
    # Printed where it was not written.
    return Result(plan, text=text if file is None else "", plan=plan)


def _check_names(namespace: str | None, chart: str | None) -> None:
    from schematic.facts.chart_targets import chart_target
    from schematic.inputs.cluster_values import check_object_name

    if namespace is not None:
        try:
            check_object_name(namespace)
        except ValueError as err:
            raise UsageError(str(err), "--namespace") from None
    if chart is not None:
        try:
            chart_target(chart)
        except ValueError as err:
            raise UsageError(str(err), "--chart") from None


def _check_fits_chart(plan: ClusterPlan, chart: str | None) -> None:
    """Refuse, as generate would, pools that cannot work on the chart ``--chart`` names (a GPU
    pool whose modules the chart cannot load): init writes only what generate accepts."""
    from dataclasses import replace

    from schematic.plan.charts import INSIST_HINT, fit_plan

    try:
        fit_plan(replace(plan, source=f"init --chart {chart}"), values=True)
    except ClusterFileError as err:
        # init has no --allow-ignored-keys: writing what cannot work is not offered here.
        raise ClusterFileError(str(err).removesuffix(INSIST_HINT)) from None
