"""`make mutation`'s own promises: a mutant's tests follow its line, a sample mutant is found
again when its code moves (and only then), a kill names its test, annotations are not mutated.

The scripts are read where they live (scripts/); cosmic-ray and coverage, which only the
mutation runs need, are not imported by what is tested here.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
sys.path.insert(0, str(SCRIPTS))

from mutation_map import CoverageMap, ModuleTests  # noqa: E402
from mutation_mutants import Mutant, annotation_spans, area_of, relocate  # noqa: E402
from mutation_run import failed_tests  # noqa: E402

RECORDED = ("import os", "", "def pick(a, b):", "    if a < b:", "        return a", "    return b")
MODULE_TESTS = ModuleTests(
    lines=RECORDED,
    by_line={
        4: ("tests/test_pick.py::test_low", "tests/test_pick.py::test_high"),
        5: ("tests/test_pick.py::test_low",),
        6: ("tests/test_pick.py::test_high",),
    },
    import_time=frozenset({1, 3}),
)


def test_a_line_gets_the_tests_that_ran_it() -> None:
    assert MODULE_TESTS.tests_for(5, RECORDED) == ("tests/test_pick.py::test_low",)
    assert MODULE_TESTS.tests_for(6, RECORDED) == ("tests/test_pick.py::test_high",)


def test_a_moved_line_keeps_its_tests() -> None:
    moved = ("import os", "import re", "", "", *RECORDED[2:])
    assert MODULE_TESTS.tests_for(7, moved) == ("tests/test_pick.py::test_low",)


def test_a_line_run_at_import_or_written_since_gets_the_whole_module() -> None:
    whole = ("tests/test_pick.py::test_high", "tests/test_pick.py::test_low")
    assert MODULE_TESTS.tests_for(3, RECORDED) == whole
    edited = (*RECORDED[:4], "        return a + 0", RECORDED[5])
    assert MODULE_TESTS.tests_for(5, edited) == whole


def test_a_line_no_test_ran_gets_no_tests() -> None:
    assert MODULE_TESTS.tests_for(2, RECORDED) == ()


def _mutant(
    line: int, source: str, operator: str = "core/ReplaceComparisonOperator_Lt_Gt"
) -> Mutant:
    return Mutant(
        module="schematic/plan/pick.py",
        operator=operator,
        occurrence=line,
        line=line,
        column=9,
        definition="pick",
        source=source,
    )


def test_a_sample_mutant_is_found_again_where_its_code_moved() -> None:
    recorded = _mutant(10, "if a < b:")
    today = [_mutant(3, "if a < b:"), _mutant(14, "if a < b:"), _mutant(40, "if a < b:")]
    assert relocate(recorded, today) == today[1]


@pytest.mark.parametrize(
    "today",
    [
        [_mutant(10, "if a <= b:")],
        [_mutant(10, "if a < b:", operator="core/ReplaceComparisonOperator_Lt_Eq")],
        [],
    ],
    ids=["code changed", "another operator", "module gone"],
)
def test_a_sample_mutant_whose_code_changed_is_not_found(today: list[Mutant]) -> None:
    assert relocate(_mutant(10, "if a < b:"), today) is None


def test_a_kill_names_its_test_without_parameters() -> None:
    output = (
        "..F\n"
        "=========================== short test summary info ============================\n"
        "FAILED tests/test_pick.py::TestPick::test_low[a b-1] - assert 2 == 1\n"
        "ERROR tests/test_other.py - ImportError: cannot import name 'pick'\n"
        "1 failed, 2 passed, 1 error in 0.12s\n"
    )
    assert failed_tests(output) == ["tests/test_pick.py::TestPick::test_low", "tests/test_other.py"]


def test_a_passing_run_names_no_test() -> None:
    output = "...\n3 passed in 0.05s\n"
    assert failed_tests(output) == []


def test_annotations_are_found_and_code_is_not() -> None:
    text = "def pick(a: int | None, *, b: str = 'x') -> int | str:\n    c: list[int] = [a | 1]\n"
    spans = annotation_spans(text)
    inside = [(1, 13), (1, 30), (1, 45), (2, 7)]
    outside = [(1, 0), (2, 20), (2, 22)]
    assert all(any(start <= at < end for start, end in spans) for at in inside)
    assert not any(start <= at < end for start, end in spans for at in outside)


@pytest.mark.parametrize(
    ("module", "area"),
    [
        ("schematic/output/render/files.py", "render"),
        ("schematic/output/outdir.py", "output"),
        ("schematic/plan/cluster.py", "plan"),
        ("schematic/doctor/lint/pools.py", "lint"),
        ("schematic/doctor/triage/readers/logs.py", "triage"),
        ("schematic/doctor/detect.py", None),
        ("schematic/core/model.py", None),
    ],
)
def test_a_module_belongs_to_its_most_specific_area(module: str, area: str | None) -> None:
    assert area_of(module) == area


def test_a_test_renamed_since_the_map_is_not_asked_for() -> None:
    here = "tests/test_mutation_tooling.py"
    still_there = f"{here}::test_a_passing_run_names_no_test"
    gone = (f"{here}::test_renamed_away", "tests/test_no_such_file.py::test_a")
    assert CoverageMap(modules={}, durations={}).runnable((still_there, *gone)) == (still_there,)


def test_a_line_inside_a_statement_gets_the_tests_of_its_first_line() -> None:
    recorded = ("def pick(a, b):", "    return min(", "        a, b", "    )")
    module = ModuleTests(
        lines=recorded,
        by_line={2: ("tests/test_pick.py::test_min",)},
        import_time=frozenset({1}),
    )
    assert module.tests_for(3, recorded) == ("tests/test_pick.py::test_min",)
    assert module.tests_for(4, recorded) == ("tests/test_pick.py::test_min",)


def test_a_function_also_run_while_tests_were_collected_keeps_its_own_tests() -> None:
    recorded = ("LIMIT = 3", "", "def pick(a, b):", "    return min(a, b, LIMIT)")
    module = ModuleTests(
        lines=recorded,
        by_line={4: ("tests/test_pick.py::test_min",), 1: ("tests/test_cli.py::test_child",)},
        import_time=frozenset({1, 3, 4}),
    )
    assert module.tests_for(4, recorded) == ("tests/test_pick.py::test_min",)
    # The table at the top is read by every test of the module, not only by the child.
    assert module.tests_for(1, recorded) == (
        "tests/test_cli.py::test_child",
        "tests/test_pick.py::test_min",
    )


def test_a_cached_function_gets_every_test_of_its_module() -> None:
    recorded = ("import functools", "@functools.cache", "def table():", "    return {1: 2}")
    module = ModuleTests(
        lines=recorded,
        by_line={4: ("tests/test_a.py::test_first",), 3: ("tests/test_b.py::test_later",)},
        import_time=frozenset({1, 2, 3}),
    )
    assert module.tests_for(4, recorded) == (
        "tests/test_a.py::test_first",
        "tests/test_b.py::test_later",
    )
