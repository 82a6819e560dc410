"""Every command block of the README and the documentation pages runs, in order, as written.

Each page runs in a fresh directory holding a copy of the shipped ``examples/`` (the cluster
file every guide starts from), as a git repository, with this package's ``talos-schematic``
first on ``PATH``. A ``sh`` block runs as one ``bash -e`` script; a block of ``$ ``-prompted
lines (a transcript) runs its prompted lines and ignores the output shown between them.
An HTML comment on the line before a block, invisible on the site, changes that:

- ``<!-- run: skip: WHY -->``: not run (it needs an Image Factory, a cluster, helm, the
  repository's own ``make``, or it is a placeholder), and WHY says which;
- ``<!-- run: exit N -->``: each command of the block exits 0 or N, and one of them N (``check``
  finding drift, ``upgrade`` finding a pool that would break);
- ``<!-- run: before: COMMAND -->``: COMMAND runs first, for what the page takes as given
  (your own cluster file, a machine config from elsewhere); it is part of the page's text;
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
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(
    [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "docs" / "guides").glob("*.md")]
)
BIN = Path(sys.executable).parent
_FENCE = re.compile(r"^```(?P<lang>[\w-]*)\n(?P<body>.*?)^```", re.S | re.M)
_MARK = re.compile(r"<!-- run: (?P<what>skip|exit|before|file):? ?(?P<arg>.*?) -->")
_SHELLS = ("sh", "bash", "shell", "console")


@dataclass
class Block:
    line: int
    script: str
    skip: str = ""
    exit: int = 0
    before: list[str] = field(default_factory=list)
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
            elif mark["what"] == "file":
                block.file, block.script = mark["arg"], match["body"]
            else:
                block.before.insert(0, mark["arg"])
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
            continue
        if block.file:
            (work / block.file).write_text(block.script, "utf-8")
            continue
        script = "".join(f"{command}\n" for command in block.before) + block.script
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
