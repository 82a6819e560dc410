"""Every command block of the README and the documentation pages runs, in order, as written.

Each page runs in a fresh directory holding a copy of the shipped ``examples/`` (the cluster
file every guide starts from), as a git repository, with this package's ``talos-schematic``
first on ``PATH``. A ``sh`` block runs as one ``bash -e`` script; a block of ``$ ``-prompted
lines (a transcript) runs its prompted lines and ignores the output shown between them.
An HTML comment on the line before a block, invisible on the site, changes that:

- ``<!-- run: skip: WHY -->``: not run (it needs an Image Factory, a cluster, helm, the
  repository's own ``make``, or it is a placeholder), and WHY says which; each ``$(...)`` in it
  still runs, and must print something (the file it reads was made by a step the page shows);
- ``<!-- run: exit N -->``: each command of the block exits 0 or N, and one of them N (``check``
  finding drift, ``upgrade`` finding a pool that would break);
- ``<!-- run: file: NAME -->`` before a block of any language: its text is saved as NAME (the
  page says to save it so).

The network is not reached: a command that needs it is marked and skipped.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(
    [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "docs" / "guides").glob("*.md")]
)
BIN = Path(sys.executable).parent
_FENCE = re.compile(r"^```(?P<lang>[\w-]*)\n(?P<body>.*?)^```", re.S | re.M)
_MARK = re.compile(r"<!-- run: (?P<what>skip|exit|file):? ?(?P<arg>.*?) -->")
_SHELLS = ("sh", "bash", "shell", "console")
# A command substitution without nested parentheses: what a command reads from earlier steps.
_SUBSTITUTION = re.compile(r"\$\(([^()]+)\)")


@dataclass
class Block:
    line: int
    script: str
    skip: str = ""
    exit: int = 0
    file: str = ""


def _script(body: str) -> str:
    lines = body.splitlines()
    if any(line.startswith("$ ") for line in lines):
        return "\n".join(line[2:] for line in lines if line.startswith("$ ")) + "\n"
    return body


def blocks(page: Path) -> list[Block]:
    """The page's shell blocks, with the marks on the lines before each."""
    text = page.read_text("utf-8")
    found: list[Block] = []
    for match in _FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        block = Block(line, _script(match["body"]))
        above = text[: match.start()].splitlines()
        while above and _MARK.fullmatch(above[-1].strip()):
            mark = _MARK.fullmatch(above.pop().strip())
            assert mark is not None
            if mark["what"] == "skip":
                assert mark["arg"], f"{page.name}:{line}: say why the block is not run"
                block.skip = mark["arg"]
            elif mark["what"] == "exit":
                block.exit = int(mark["arg"])
            else:
                block.file, block.script = mark["arg"], match["body"]
        if match["lang"] in _SHELLS or block.file:
            found.append(block)
    return found


def _workdir(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    work = tmp_path / "work"
    shutil.copytree(ROOT / "examples", work / "examples")
    env = {
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "GIT_AUTHOR_NAME": "guide",
        "GIT_AUTHOR_EMAIL": "guide@example.invalid",
        "GIT_COMMITTER_NAME": "guide",
        "GIT_COMMITTER_EMAIL": "guide@example.invalid",
        # Nothing here may reach a factory: an unroutable one fails at once if asked.
        "TALOS_SCHEMATIC_FACTORY": "http://127.0.0.1:9",
    }
    subprocess.run(["git", "init", "-q", str(work)], check=True, env=env)
    return work, env


def failures(page: Path, work: Path, env: dict[str, str]) -> list[str]:
    """Run the page's blocks in order in ``work``; what failed (the run stops at the first)."""
    for block in blocks(page):
        if block.skip:
            # What a skipped command reads must still be there when the reader gets to it:
            # each $(...) in it runs here, and must print something.
            for inner in _SUBSTITUTION.findall(block.script):
                done = subprocess.run(
                    ["bash", "-ec", inner], cwd=work, env=env, capture_output=True, text=True,
                    timeout=120, check=False,
                )  # fmt: skip
                if done.returncode != 0 or not done.stdout.strip():
                    return [f"{page.name}:{block.line}: $({inner}) gave nothing\n{done.stderr}"]
            continue
        if block.file:
            (work / block.file).write_text(block.script, "utf-8")
            continue
        script = block.script
        if block.exit:
            # Each command may exit N where the page says so; any other failure stops the block.
            script = (
                f"seen=0\ntrap 'rc=$?; [ $rc -eq {block.exit} ] && seen=1 || exit $rc' ERR\n"
                f"{script}\n"
                f"[ $seen -eq 1 ] || {{ echo 'no command exited {block.exit}'; exit 99; }}\n"
            )
        result = subprocess.run(
            ["bash", "-c" if block.exit else "-ec", script],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if result.returncode != 0:
            return [
                f"{page.name}:{block.line}: exit {result.returncode}, expected {block.exit}\n"
                f"{script}\n--- stdout\n{result.stdout[-3000:]}\n"
                f"--- stderr\n{result.stderr[-3000:]}"
            ]
    return []


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_command_block_runs_in_order(page: Path, tmp_path: Path) -> None:
    work, env = _workdir(tmp_path)
    assert failures(page, work, env) == []


def test_a_failing_block_is_found_and_a_marked_one_is_not(tmp_path: Path) -> None:
    work, env = _workdir(tmp_path)
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- run: file: note.txt -->\n```text\nhello\n```\n\n"
        "```sh\ngrep -q hello note.txt\n```\n\n"
        "<!-- run: skip: reaches a cluster -->\n```sh\nfalse\n```\n\n"
        "<!-- run: exit 3 -->\n```sh\ntrue\n(exit 3)\ntrue\n```\n",
        "utf-8",
    )
    assert failures(page, work, env) == []
    page.write_text(page.read_text("utf-8") + "\n```sh\ntalos-schematic lint no-such-file\n```\n")
    (found,) = failures(page, work, env)
    assert found.startswith("page.md:22: exit 1")
    page.write_text("<!-- run: exit 3 -->\n```sh\n(exit 1)\n(exit 3)\n```\n", "utf-8")
    (found,) = failures(page, work, env)
    assert "exit 1, expected 3" in found


def test_every_skipped_block_says_why() -> None:
    reasons = [(page.name, b.line, b.skip) for page in PAGES for b in blocks(page) if b.skip]
    assert reasons, "no block is skipped: the marks are not read"
    for name, line, why in reasons:
        assert len(why) > 8, f"{name}:{line}: {why!r}"


def test_a_skipped_command_reading_a_file_no_step_writes_fails(tmp_path: Path) -> None:
    download = (
        "<!-- run: skip: downloads -->\n"
        "```sh\ncurl -LO \"$(sed -n 's/^iso: //p' d/urls.yaml)\"\n```\n"
    )
    page = tmp_path / "page.md"
    page.write_text(download)
    work, env = _workdir(tmp_path)
    (problem,) = failures(page, work, env)
    assert "d/urls.yaml" in problem
    # Shown first, the step that writes the file makes the same block pass.
    page.write_text(
        "```sh\nmkdir d && echo 'iso: https://example.invalid/a.iso' > d/urls.yaml\n```\n"
        + download
    )
    assert failures(page, *_workdir(tmp_path / "again")) == []


def test_every_run_mark_is_one_the_runner_knows() -> None:
    # A mark the runner does not know would be ignored in silence (a set-up step no reader
    # sees was one): each is skip, exit or file.
    for page in PAGES:
        for number, line in enumerate(page.read_text("utf-8").splitlines(), 1):
            if line.strip().startswith("<!-- run:"):
                assert _MARK.fullmatch(line.strip()), f"{page.name}:{number}: {line}"


def test_the_readme_triage_line_names_the_cluster_its_init_wrote(tmp_path: Path) -> None:
    text = (ROOT / "README.md").read_text("utf-8")
    init = re.search(r"^talos-schematic init (\S+) .*$", text, re.M)
    triage = re.search(r"^talos-schematic triage --commands .*$", text, re.M)
    collect = re.search(r"^talos-schematic triage --collect .*$", text, re.M)
    assert init is not None and triage is not None and collect is not None
    work, env = _workdir(tmp_path)
    subprocess.run(["bash", "-ec", init[0]], cwd=work, env=env, check=True, capture_output=True)
    written = (work / init[1]).read_text()
    cluster = re.search(r"^cluster: (\S+)", written, re.M)
    namespace = re.search(r"^namespace: (\S+)", written, re.M)
    assert cluster is not None and namespace is not None
    assert f"--cluster {cluster[1]} --namespace {namespace[1]}" in triage[0]
    assert f"--cluster {cluster[1]} --namespace {namespace[1]}" in collect[0]
