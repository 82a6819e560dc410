"""Which cause explains which is one table (diagnose.CAUSES), applied in one place (weigh)."""

from __future__ import annotations

from collections.abc import Callable

from schematic.doctor.triage.causes.shown import Finding
from schematic.doctor.triage.diagnose import ANY_ERROR, ANY_FINDING, CAUSES, Cause, weigh
from schematic.doctor.triage.model import ClusterModel, Machine
from schematic.doctor.triage.signals import Evidence

MODEL = ClusterModel(machines={}, cluster={})
A, B = Machine(name="a"), Machine(name="b")
LINE = Evidence("f", 1, "x")


def _rule(
    code: str, *machines: Machine, severity: str | None = None
) -> Callable[[ClusterModel], list[Finding]]:
    return lambda _model: [Finding(code, m, [LINE], severity=severity) for m in machines]


def _kept(*causes: Cause) -> list[tuple[str, str]]:
    return [(f.code, f.machine.name if f.machine else "") for f in weigh(MODEL, causes)]


def test_a_cause_is_explained_on_the_same_machine_only() -> None:
    kept = _kept(Cause(_rule("TS123", A)), Cause(_rule("TS205", A, B), frozenset({"TS123"})))
    assert kept == [("TS123", "a"), ("TS205", "b")]


def test_only_a_cause_above_explains() -> None:
    # Must not: the explaining cause below it changes nothing.
    kept = _kept(Cause(_rule("TS205", A), frozenset({"TS123"})), Cause(_rule("TS123", A)))
    assert kept == [("TS205", "a"), ("TS123", "a")]


def test_a_cluster_finding_explains_the_nodes_it_names() -> None:
    cluster = Cause(lambda _m: [Finding("TS131", None, [LINE], nodes=["b"])])
    kept = _kept(cluster, Cause(_rule("TS101", A, B), frozenset({ANY_FINDING})))
    assert kept == [("TS131", ""), ("TS101", "a")]


def test_any_error_leaves_warnings_out() -> None:
    warning = Cause(_rule("TS205", A, severity="warning"))
    error = Cause(_rule("TS123", B))
    kept = _kept(warning, error, Cause(_rule("TS213", A, B), frozenset({ANY_ERROR})))
    assert ("TS213", "a") in kept and ("TS213", "b") not in kept


def test_every_cause_is_a_row_and_the_unknown_error_line_comes_last() -> None:
    names = [getattr(c.rule, "__name__", "") for c in CAUSES]
    assert len(names) == len(set(names))
    assert names[-1] == "unknown_failures"
    assert CAUSES[-1].explained_by == frozenset({ANY_ERROR})
