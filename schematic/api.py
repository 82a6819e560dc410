"""The library entry point: ``generate``, ``check`` and ``upgrade``, each a request to a result:
``generate(Request(Path("cluster.yaml"), out=Path("deploy/gpu")))``. Errors a user can fix raise
:class:`schematic.errors.TalosSchematicError` (``exit_code``: the command's exit); what a run has
to tell is ``Result.messages``. The factory is asked only when the request says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from schematic.errors import UsageError
from schematic.factory.consult import Consulted, consult_factory
from schematic.output import emit

if TYPE_CHECKING:
    from schematic.output.disk import Drift
    from schematic.output.outdir import Written
    from schematic.output.render.files import Kind
    from schematic.plan.charts import ChartFit
    from schematic.plan.cluster import ClusterPlan
    from schematic.plan.upgrade import UpgradeReport

__all__ = ["Request", "Result", "UpgradeRequest", "check", "generate", "upgrade"]


@dataclass(frozen=True)
class Request:
    """What ``generate`` or ``check`` is asked; ``out`` None: ``generate`` renders one kind."""

    cluster_file: Path
    out: Path | None = None
    kinds: tuple[str, ...] = ()  # () writes the default kinds, or renders cozystack
    pools: tuple[str, ...] = ()  # () is every pool
    chart: str | None = None
    layout: str | None = None
    allow_ignored_keys: bool = False
    profiles: tuple[Path, ...] = ()
    register: bool = False
    live_catalogue: bool = False
    factory: str | None = None
    force: bool = False
    progress: Callable[[int, int], None] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class UpgradeRequest:
    """What ``upgrade`` is asked: CLUSTER at ``to`` against ``since`` (or the ``base`` file)."""

    cluster_file: Path
    to: str | None = None
    since: str | None = None
    base: Path | None = None
    pools: tuple[str, ...] = ()
    profiles: tuple[Path, ...] = ()
    live_catalogue: bool = False
    factory: str | None = None


Detail = TypeVar("Detail", "Written | None", "Drift", "UpgradeReport")


@dataclass(frozen=True)
class Result(Generic[Detail]):
    """``status`` 0: done; 3: ``check`` found drift or ``upgrade`` a pool that would break.
    ``detail``: generate's Written (None when printing), check's Drift, upgrade's
    UpgradeReport; ``plan`` and ``fit``: generate's and check's; ``request``: check's, as run."""

    detail: Detail
    status: int = 0
    text: str = ""
    files: Mapping[str, bytes] = field(default_factory=dict)
    messages: tuple[str, ...] = ()
    lock: str | None = None
    plan: ClusterPlan | None = None
    fit: ChartFit | None = None
    request: Request | None = None


def _start(request: Request, kind: Kind | None = None) -> tuple[Consulted, ChartFit, list[str]]:
    """The plan held against its chart (for one ``kind``), the factory asked; what to tell."""
    plan = emit.load_plan(request.cluster_file, request.profiles)
    shown = emit.select_pools(plan, request.pools)  # an unknown pool is a UsageError
    if kind is not None:
        emit.one_document_check(shown, kind)
    kinds = (kind,) if kind is not None else emit.kinds_of(request.kinds)
    fit = emit.fit_chart(plan, request.chart, request.layout, request.allow_ignored_keys, kinds)
    asked = consult_factory(
        plan, request.factory, request.register, request.live_catalogue, request.progress
    )
    return asked, fit, [*([f"note: {fit.assumption}"] if fit.assumption else []), *asked.notes]


def generate(request: Request) -> Result[Written | None]:
    """Plan the cluster file and write its files into ``request.out`` (only the pools and
    kinds asked for), or render one kind as ``Result.text``."""
    out, kinds = request.out, emit.kinds_of(request.kinds)
    kind = emit.streamed_kind(request.kinds, out)
    with emit.paused_collector():
        asked, fit, said = _start(request, kind)
        plan = asked.plan if out else emit.select_pools(asked.plan, request.pools)  # as printed
        if out is None:
            from schematic.output.render.files import render_stream

            assert kind is not None  # streamed_kind names one where there is no --out
            text = render_stream(plan, kind, fit, asked.lock)
            said += emit.run_notes(plan, fit, kind == "platform")
            return Result(None, 0, text, {}, tuple(said), asked.lock, plan, fit)
        settings = (asked.lock, request.pools, request.profiles, request.force)
        written = emit.write_plan(out, plan, fit, kinds, *settings)
    # The directory carries the platform values when this run or an earlier one wrote them.
    carried = "platform" in kinds or emit.holds_platform_values(out)
    said += emit.run_notes(plan, fit, carried, written[1].removed_pools, written[2])
    return Result(written[1], 0, "", written[0].files, tuple(said), asked.lock, plan, fit)


def check(request: Request) -> Result[Drift]:
    """Compare ``request.out`` with what ``generate`` would write there now: status 3 and the
    drift when they differ. The settings DIR's index records are the defaults."""
    from schematic.output.outdir import compare_directory

    out = request.out
    if out is None:
        raise UsageError("check compares a directory: give it", "--out")
    recorded, settings, said = emit.recorded_settings(out, request)
    request = replace(request, register=False, **settings)
    with emit.paused_collector():
        asked, fit, more = _start(request)
        kinds, profiles = emit.kinds_of(request.kinds), request.profiles if recorded else ()
        tree = emit.expected_tree(
            out, asked.plan, fit, kinds, recorded, asked.lock, request.pools, profiles
        )
        drift, expected = compare_directory(out, tree, pools=list(request.pools) or None)
    status, messages = 3 if drift else 0, tuple(said + more)
    return Result(drift, status, "", expected, messages, asked.lock, asked.plan, fit, request)


def upgrade(request: UpgradeRequest) -> Result[UpgradeReport]:
    """What the release bump (or the change from ``base``) does to each pool: an UpgradeReport,
    status 3 when a pool would break."""
    from schematic.factory.consult import live_catalogue_of
    from schematic.output.render.cozystack import tool_values
    from schematic.plan.upgrade import plan_upgrade

    live = live_catalogue_of(request.factory) if request.live_catalogue else None
    asked = (request.to, request.since, request.base, request.pools, request.profiles)
    report, said = plan_upgrade(request.cluster_file, tool_values, *asked, live)
    return Result(report, 3 if report.breaking else 0, messages=tuple(said))
