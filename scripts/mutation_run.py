"""Running mutants: each written into its module, its tests run, the module put back.

A mutant's tests are those the map says run its line, in one pytest process with one worker,
stopping at the first failure. The file is restored from a copy kept on disk, so a run that is
killed leaves the copy, and the next run puts it back before anything else.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mutation_map import CoverageMap
from mutation_mutants import REPO, Mutant

BACKUPS = REPO / ".mutation" / "restore"

KILLED = "killed"
TIMEOUT = "timeout"
SURVIVED = "survived"
UNTESTED = "untested"  # no test runs the mutated line: a survivor nobody had to run
ERROR = "error"  # the run could not judge the mutant
INVALID = "invalid"  # not Python: cosmic-ray reads the bare `*` of a signature as an operator

# pytest's summary line for a failed test or a file it could not collect; the test is named
# without its parameters, which may hold spaces.
_FAILED_TEST = re.compile(r"^(?:FAILED|ERROR) ([^\s\[]+)", re.M)


@dataclass(frozen=True, kw_only=True)
class Outcome:
    number: int  # in the sample, or in the run
    mutant: Mutant
    verdict: str
    tests: tuple[str, ...]
    seconds: float
    diff: str
    killer: str = ""
    detail: str = ""


def restore_leftovers() -> None:
    """Put back any module a killed run left mutated."""
    if not BACKUPS.exists():
        return
    for backup in sorted(BACKUPS.rglob("*.py")):
        module = backup.relative_to(BACKUPS)
        shutil.copy2(backup, REPO / module)
        backup.unlink()
        print(f"restored {module} from an interrupted run", file=sys.stderr)


def mutated_source(mutant: Mutant) -> tuple[str, str | None]:
    """The module's text and the mutant's, or None when the operator no longer applies."""
    import cosmic_ray.plugins
    from cosmic_ray.mutating import mutate_code

    original = (REPO / mutant.module).read_text()
    operator = cosmic_ray.plugins.get_operator(mutant.operator)()
    mutated: str | None = mutate_code(original, operator, mutant.occurrence)
    return original, mutated


def is_python(text: str) -> bool:
    try:
        compile(text, "<mutant>", "exec", dont_inherit=True)
    except SyntaxError:
        return False
    return True


def is_valid(mutant: Mutant) -> bool:
    """Whether the mutant can be written: the operator applies and the result is Python."""
    _, mutated = mutated_source(mutant)
    return mutated is not None and is_python(mutated)


def run_one(
    number: int, mutant: Mutant, test_map: CoverageMap, chosen_tests: Sequence[str] = ()
) -> Outcome:
    original, mutated = mutated_source(mutant)
    if mutated is None:
        detail = "the operator no longer applies here"
        return Outcome(
            number=number,
            mutant=mutant,
            verdict=ERROR,
            tests=(),
            seconds=0.0,
            diff="",
            detail=detail,
        )
    diff = "".join(
        difflib.unified_diff(
            original.splitlines(keepends=True),
            mutated.splitlines(keepends=True),
            fromfile=mutant.module,
            tofile=mutant.module,
            n=1,
        )
    )
    if not is_python(mutated):
        return Outcome(
            number=number, mutant=mutant, verdict=INVALID, tests=(), seconds=0.0, diff=diff
        )
    module_tests = test_map.modules.get(mutant.module)
    found = module_tests.tests_for(mutant.line, original.splitlines()) if module_tests else ()
    # The quickest first: a kill, the usual verdict, comes sooner (pytest keeps this order).
    by_time = sorted(test_map.runnable(found), key=lambda test: (test_map.seconds([test]), test))
    tests = tuple(chosen_tests) or tuple(by_time)
    if not tests:
        return Outcome(
            number=number, mutant=mutant, verdict=UNTESTED, tests=(), seconds=0.0, diff=diff
        )
    # The map's timings were taken under coverage, slower than this run: three times them
    # and a minute more is far from a slow machine and near enough to end an endless loop.
    limit = 60.0 + 3 * test_map.seconds(tests)
    path = REPO / mutant.module
    backup = BACKUPS / mutant.module
    backup.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(path, backup)
    try:
        path.write_text(mutated)
        returncode, output, seconds = run_tests(tests, limit)
    finally:
        shutil.copy2(backup, path)
        backup.unlink()
    ran = Outcome(
        number=number, mutant=mutant, verdict=SURVIVED, tests=tests, seconds=seconds, diff=diff
    )
    if returncode is None:
        return dataclasses.replace(ran, verdict=TIMEOUT, detail=f"over {limit:.0f} s")
    if returncode == 0:
        return ran
    killers = failed_tests(output)
    # 2: a test file could not be collected, as when the mutant breaks an import.
    if returncode in (1, 2) and killers:
        return dataclasses.replace(ran, verdict=KILLED, killer=killers[0])
    detail = f"pytest exited {returncode}: {output[-2000:]}"
    return dataclasses.replace(ran, verdict=ERROR, detail=detail)


def failed_tests(output: str) -> list[str]:
    """The tests pytest's summary says failed (or files it could not collect), in its order."""
    return _FAILED_TEST.findall(output)


def run_tests(
    tests: Sequence[str], limit: float, *, first_failure: bool = True
) -> tuple[int | None, str, float]:
    """pytest on ``tests`` with one worker: exit code (None past ``limit``), output, seconds.

    It stops at the first failure unless ``first_failure`` is false, when it names them all.
    """
    environment = dict(os.environ)
    # Source changes within one second would not be seen through a cached bytecode file.
    environment["PYTHONDONTWRITEBYTECODE"] = "1"
    # The property tests replay fixed examples (tests/conftest.py), so a verdict never
    # depends on the draw.
    environment["CI"] = "1"
    command = [
        sys.executable, "-m", "pytest", *(["-x"] if first_failure else []), "-q", "-rfE",
        "-p", "no:xdist", "-p", "no:cacheprovider", *tests,
    ]  # fmt: skip
    started = time.monotonic()
    with subprocess.Popen(
        command,
        cwd=REPO,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    ) as process:
        try:
            output, _ = process.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            # The whole group: a test's own child processes would outlive pytest.
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            return None, "", time.monotonic() - started
        except BaseException:
            # Stopped (Ctrl-C, SIGTERM): no test goes on running against a mutant.
            os.killpg(process.pid, signal.SIGKILL)
            raise
    return process.returncode, output, time.monotonic() - started


def confirm_killers(outcomes: list[Outcome]) -> list[Outcome]:
    """Mark as errors the kills whose killing test also fails on the unmutated code."""
    killers = sorted({o.killer for o in outcomes if o.verdict == KILLED})
    if not killers:
        return outcomes
    returncode, output, _ = run_tests(killers, 600.0 + 60 * len(killers), first_failure=False)
    if returncode == 0:
        return outcomes
    failing = set(failed_tests(output))
    if returncode not in (1, 2) or not failing:
        raise SystemExit(f"the killing tests could not be run unmutated:\n{output[-3000:]}")
    unsound = "its killing test fails without the mutant too"
    return [
        dataclasses.replace(o, verdict=ERROR, detail=unsound)
        if o.verdict == KILLED and o.killer in failing
        else o
        for o in outcomes
    ]


def run_all(
    numbered: Sequence[tuple[int, Mutant]],
    test_map: CoverageMap,
    progress: Callable[[str], None],
    chosen_tests: Sequence[str] = (),
) -> list[Outcome]:
    """Each mutant against its tests (or ``chosen_tests``, as when a new test is checked)."""
    outcomes = []
    for index, (number, mutant) in enumerate(numbered, 1):
        outcome = run_one(number, mutant, test_map, chosen_tests)
        progress(
            f"[{index}/{len(numbered)}] {number}. {mutant.where} {mutant.operator} "
            f"({mutant.occurrence}): {outcome.verdict} ({outcome.seconds:.1f} s, "
            f"{len(outcome.tests)} tests)"
        )
        outcomes.append(outcome)
    return confirm_killers(outcomes)
