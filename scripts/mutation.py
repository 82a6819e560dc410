"""Mutation testing: `make mutation`, `make mutation-sample` and `make mutation-map`.

    python scripts/mutation.py map                      which tests run each line (coverage)
    python scripts/mutation.py run [--base REF] [MODULE ...] [--max N] [--seed S]
    python scripts/mutation.py sample                   the committed sample, mutation_sample.json
    python scripts/mutation.py draw --seed S --per-area K   draw a new sample

``run`` mutates the lines changed since ``--base`` (default ``main``) in the modules changed
since then, or every line of the named modules; ``--max`` draws that many of them with
``--seed``. Each mutant runs the tests that execute its line, with one worker. Survivors and
the counts are written to ``.mutation/report.md``; the exit status is 1 when a mutant could not
be judged or the score is under ``--fail-under``.
"""

from __future__ import annotations

import argparse
import fcntl
import itertools
import json
import random
import signal
import sys
from collections.abc import Sequence

import mutation_map
from mutation_mutants import (
    AREAS,
    REPO,
    Mutant,
    area_modules,
    area_of,
    changed_lines,
    changed_modules,
    enumerate_mutants,
    head_commit,
    relocate,
)
from mutation_run import (
    ERROR,
    INVALID,
    KILLED,
    SURVIVED,
    TIMEOUT,
    UNTESTED,
    Outcome,
    is_valid,
    run_all,
)

SAMPLE = REPO / "scripts" / "mutation_sample.json"
REPORT = REPO / ".mutation" / "report.md"
LOCK = REPO / ".mutation" / "lock"


def main(arguments: Sequence[str] | None = None) -> int:
    options = _parser().parse_args(arguments)
    # Stopped by a signal, the run still puts the mutated module back (its `finally`).
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(128 + number))
    LOCK.parent.mkdir(exist_ok=True)
    with LOCK.open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print("another mutation run is using this checkout", file=sys.stderr)
            return 1
        from mutation_run import restore_leftovers

        restore_leftovers()
        if options.command == "map":
            mutation_map.build(mutation_map.test_files())
            return 0
        if options.command == "draw":
            return _draw(options.seed, options.per_area)
        notes: list[str] = []
        if options.command == "sample":
            numbered, notes = _sample(options.only or ())
            title = f"the sample in {SAMPLE.relative_to(REPO)}"
            if options.only:
                title += f", mutants {' '.join(map(str, options.only))}"
        else:
            mutants, title = _chosen(options)
            numbered = list(enumerate(mutants, 1))
        return _run(numbered, title, options.fail_under, notes, tuple(options.tests))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="scripts/mutation.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("map", help="record which tests run each line")
    run = commands.add_parser("run", help="mutate changed lines or named modules")
    run.add_argument("modules", nargs="*", help="modules to mutate whole (schematic/...py)")
    run.add_argument("--base", default="main", help="changes since this ref (default: main)")
    run.add_argument("--max", type=int, default=0, help="draw at most this many mutants")
    run.add_argument("--seed", type=int, default=46, help="the draw's seed")
    sample = commands.add_parser("sample", help="run the committed sample")
    sample.add_argument("--only", type=int, nargs="+", help="these mutants (numbered as listed)")
    for command in (run, sample):
        command.add_argument("--fail-under", type=float, default=0.0, help="score, percent")
        command.add_argument(
            "--tests", nargs="+", default=[], help="run these tests, not the map's (a new test)"
        )
    draw = commands.add_parser("draw", help="draw a new sample and write it")
    draw.add_argument("--seed", type=int, required=True)
    draw.add_argument("--per-area", type=int, required=True)
    return parser


def _chosen(options: argparse.Namespace) -> tuple[list[Mutant], str]:
    if options.modules:
        for module in options.modules:
            if not (REPO / module).is_file():
                raise SystemExit(f"{module}: no such module")
        mutants, title = enumerate_mutants(options.modules), ", ".join(options.modules)
    else:
        modules = changed_modules(options.base)
        if not modules:
            raise SystemExit(f"no module of schematic/ changed since {options.base}")
        lines = {module: changed_lines(options.base, module) for module in modules}
        mutants = [m for m in enumerate_mutants(modules) if m.line in lines[m.module]]
        title = f"the lines changed since {options.base}"
    if options.max and len(mutants) > options.max:
        drawn = random.Random(options.seed).sample(mutants, options.max)
        mutants = sorted(drawn, key=lambda m: (m.module, m.line, m.operator))
        title += f" ({options.max} drawn with seed {options.seed})"
    return mutants, title


def _draw(seed: int, per_area: int) -> int:
    everything = enumerate_mutants(area_modules())
    chosen: list[Mutant] = []
    for area in sorted(AREAS):
        population = [mutant for mutant in everything if area_of(mutant.module) == area]
        random.Random(f"{seed}:{area}").shuffle(population)
        # The first that are Python: cosmic-ray also offers a few that are not.
        chosen += list(itertools.islice(filter(is_valid, population), per_area))
    document = {
        "what": "a seeded draw of cosmic-ray's mutants per pipeline area, made before any test "
        "was read; `make mutation-sample` runs exactly these, found again by their code",
        "seed": seed,
        "per_area": per_area,
        "drawn_at": head_commit(),
        "mutants": [_recorded(mutant) for mutant in chosen],
    }
    SAMPLE.write_text(json.dumps(document, indent=1) + "\n")
    print(f"{len(chosen)} mutants written to {SAMPLE.relative_to(REPO)}", file=sys.stderr)
    return 0


def _recorded(mutant: Mutant) -> dict[str, object]:
    fields = ("module", "operator", "occurrence", "line", "column", "definition", "source")
    return {"area": area_of(mutant.module), **{name: getattr(mutant, name) for name in fields}}


def _sample(only: Sequence[int]) -> tuple[list[tuple[int, Mutant]], list[str]]:
    """The committed mutants (numbered as in the file, or those of ``only``) found in today's
    code, and a note for each that is gone."""
    recorded = json.loads(SAMPLE.read_text())["mutants"]
    for number in only:
        if not 1 <= number <= len(recorded):
            raise SystemExit(f"the sample has mutants 1 to {len(recorded)}, not {number}")
    chosen = [(n, entry) for n, entry in enumerate(recorded, 1) if not only or n in only]
    modules = sorted({e["module"] for _, e in chosen if (REPO / e["module"]).exists()})
    current = enumerate_mutants(modules)
    found: list[tuple[int, Mutant]] = []
    gone: list[str] = []
    for number, entry in chosen:
        wanted = Mutant(**{k: v for k, v in entry.items() if k != "area"})
        mutant = relocate(wanted, current)
        if mutant is None:
            # Code rewritten since the draw: the mutant has no counterpart to run.
            gone.append(f"{number}. {wanted.where} {wanted.operator} on `{wanted.source}`: gone")
        else:
            found.append((number, mutant))
    return found, gone


def _run(
    numbered: list[tuple[int, Mutant]],
    title: str,
    fail_under: float,
    notes: list[str],
    tests: tuple[str, ...],
) -> int:
    if not numbered:
        print(f"no mutants in {title}", file=sys.stderr)
        return 0
    test_map = mutation_map.load()
    stale = mutation_map.changed_since_map()
    if stale:
        notes.append(
            f"{len(stale)} test files changed since the map was made ({', '.join(stale[:5])}"
            f"{', ...' if len(stale) > 5 else ''}): the tests they add are not run until "
            "`make mutation-map`"
        )
    print(f"{len(numbered)} mutants: {title}", file=sys.stderr)
    outcomes = run_all(
        numbered, test_map, lambda line: print(line, file=sys.stderr, flush=True), tests
    )
    verdicts = (KILLED, TIMEOUT, SURVIVED, UNTESTED, ERROR, INVALID)
    counts = {verdict: sum(o.verdict == verdict for o in outcomes) for verdict in verdicts}
    judged = len(outcomes) - counts[ERROR] - counts[INVALID]
    score = 100.0 * (counts[KILLED] + counts[TIMEOUT]) / judged if judged else 0.0
    REPORT.write_text(_report(outcomes, title, counts, score, notes))
    for note in notes:
        print(note, file=sys.stderr)
    summary = ", ".join(f"{count} {verdict}" for verdict, count in counts.items())
    print(f"score {score:.1f} % ({summary}); survivors in {REPORT.relative_to(REPO)}")
    if counts[ERROR]:
        print(f"{counts[ERROR]} mutants could not be judged: see the report", file=sys.stderr)
        return 1
    if score < fail_under:
        print(f"score {score:.1f} % is under {fail_under:g} %", file=sys.stderr)
        return 1
    return 0


def _report(
    outcomes: list[Outcome], title: str, counts: dict[str, int], score: float, notes: list[str]
) -> str:
    lines = [
        f"# Mutation report: {title}",
        "",
        f"Score: {score:.1f} % of judged mutants killed.",
        "",
    ]
    lines += [f"- {verdict}: {count}" for verdict, count in counts.items()]
    if notes:
        lines += ["", "## Notes", "", *(f"- {note}" for note in notes)]
    for heading, verdicts in (("Survivors", (SURVIVED, UNTESTED)), ("Not judged", (ERROR,))):
        shown = [(o.number, o) for o in outcomes if o.verdict in verdicts]
        if shown:
            lines += ["", f"## {heading}", ""]
        for number, outcome in shown:
            mutant = outcome.mutant
            lines += [
                f"### {number}. {mutant.where} {mutant.operator} ({mutant.occurrence}) in "
                f"`{mutant.definition or '<module>'}`: {outcome.verdict}",
                "",
                f"{len(outcome.tests)} tests ran. {outcome.detail}".rstrip(),
                "",
                "```diff",
                outcome.diff.rstrip(),
                "```",
            ]
    lines += [
        "",
        "## Every mutant",
        "",
        "| # | mutant | operator (occurrence) | verdict | killed by |",
        "| --- | --- | --- | --- | --- |",
    ]
    for o in outcomes:
        why = o.killer or (o.detail.splitlines()[0] if o.detail else "")
        operator = f"{o.mutant.operator} ({o.mutant.occurrence})"
        cells = (str(o.number), o.mutant.where, operator, o.verdict, why)
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
