"""The library entry point: ``generate``, ``check``, ``upgrade``, ``lint`` and ``init``, each a
request to a result:
``generate(Request(Path("cluster.yaml"), out=Path("deploy/gpu")))``. Errors a user can fix raise
:class:`schematic.errors.TalosSchematicError` (``exit_code``: the command's exit); what a run has
to tell is ``Result.messages``. The factory is asked only when the request says so.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from schematic.api import kinds_asked, planning, runs
from schematic.api.linting import LintRequest, lint
from schematic.api.requests import Request, Result, UpgradeRequest
from schematic.api.starting import InitRequest, init
from schematic.errors import UsageError
from schematic.factory.consult import Consulted, consult_factory
from schematic.messages import Message
from schematic.output import emit
from schematic.output.render.kinds import PLATFORM_FILE

if TYPE_CHECKING:
    from schematic.output.disk import Drift
    from schematic.output.outdir import Written
    from schematic.output.render.kinds import Kind
    from schematic.plan.charts import ChartFit
    from schematic.plan.upgrade import UpgradeReport

__all__ = [
    "InitRequest",
    "LintRequest",
    "Request",
    "Result",
    "UpgradeRequest",
    "check",
    "generate",
    "init",
    "lint",
    "upgrade",
]


def _start(request: Request, kind: Kind | None = None) -> tuple[Consulted, ChartFit, list[Message]]:
    """The plan held against its chart (for one ``kind``), the factory asked; what to tell."""
    plan = planning.load_plan(request.cluster_file, request.profiles)
    shown = planning.select_pools(plan, request.pools)  # an unknown pool is a UsageError
    if kind is not None:
        kinds_asked.one_document_check(shown, kind)
    kinds = (kind,) if kind is not None else kinds_asked.kinds_of(request.kinds)
    kinds_asked.one_release_check(shown, kinds)
    kinds_asked.same_patch_per_schematic_check(shown, kinds)
    fit = planning.fit_chart(plan, request.chart, request.layout, request.allow_ignored_keys, kinds)
    asked = consult_factory(
        plan, request.factory, request.register, request.live_catalogue, request.progress
    )
    assumed = [fit.assumption] if fit.assumption else []
    return asked, fit, [Message(level="note", cause=line) for line in (*assumed, *asked.notes)]


def generate(request: Request) -> Result[Written | None]:
    """Plan the cluster file and write its files into ``request.out`` (only the pools and
    kinds asked for), or render one kind as ``Result.text``."""
    out, kinds = request.out, kinds_asked.kinds_of(request.kinds)
    kind = kinds_asked.streamed_kind(request.kinds, out)
    with runs.paused_collector():
        asked, fit, said = _start(request, kind)
        plan = asked.plan if out else planning.select_pools(asked.plan, request.pools)  # as printed
        if out is None:
            from schematic.output.render.files import render_stream

            assert kind is not None  # streamed_kind names one where there is no --out
            text = render_stream(plan, kind, fit, asked.lock)
            said += runs.run_notes(plan, fit, kind == "platform")
            return Result(None, 0, text, {}, tuple(said), asked.lock, plan, fit)
        settings = (asked.lock, request.pools, request.profiles, request.force)
        written = emit.write_plan(out, plan, fit, kinds, *settings)
    # The directory carries the platform values when this run or an earlier one wrote them.
    index = written[1].index
    carried = index is not None and PLATFORM_FILE in index.files
    said += runs.run_notes(plan, fit, carried, written[1].removed_pools, written[2])
    return Result(written[1], 0, "", written[0].files, tuple(said), asked.lock, plan, fit)


def check(request: Request) -> Result[Drift]:
    """Compare ``request.out`` with what ``generate`` would write there now: status 3 and the
    drift when they differ. The settings DIR's index records are the defaults."""
    from schematic.output.outdir import compare_directory

    out = request.out
    if out is None:
        raise UsageError("check compares a directory: give it", "--out")
    recorded, settings, said = runs.recorded_settings(out, request)
    request = replace(request, register=False, **settings)
    with runs.paused_collector():
        asked, fit, more = _start(request)
        kinds, profiles = kinds_asked.kinds_of(request.kinds), request.profiles if recorded else ()
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
    told = tuple(Message(level="note", cause=line) for line in said)
    return Result(report, 3 if report.breaking else 0, messages=told)
