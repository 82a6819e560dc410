"""Mutational fuzz over every input kind: whatever the bytes, a message and an exit code.

Seeds are the shipped examples, profiles and test data; each case applies a few seeded byte, line
or YAML-token mutations and runs the command in-process. A case fails on an exception that
escapes the command (a traceback for the user), an exit code outside 0-3, or "Traceback" in the
output. The cases are fixed by their seeds, so a failure replays exactly: the test id names the
kind and the seed, and the assertion shows the mutated input.
"""

from __future__ import annotations

import importlib
import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import respx
from typer.testing import CliRunner

from schematic.cli import app

for _module in (
    "id_command",
    "generate_command",
    "check_command",
    "lint_command",
    "detect_command",
    "factory_commands",
):
    importlib.import_module(f"schematic.cli.{_module}")

ROOT = Path(__file__).parent.parent
URL = "https://factory.example.test"
# Cases per input kind: together a few seconds on one core.
CASES = 12

# Tokens that have broken readers before: explicit tags with values they cannot hold, numbers
# past Python's conversion limit, anchors and merges, flow and quote openers, control bytes.
YAML_TOKENS = [
    "!!int abc",
    "!!float x",
    "!!bool maybe",
    "!!timestamp x",
    "!!binary ???",
    "!!null x",
    "!!str",
    "!!map",
    "!!seq",
    "!!set {a}",
    "!!omap [a]",
    "!unknown x",
    "9" * 5000,
    "0x" + "f" * 5000,
    "-" + "9" * 5000,
    "1e999",
    ".nan",
    "&a x",
    "*a",
    "*missing",
    "<<: *a",
    "<<: [1]",
    "[",
    "{",
    "]",
    "'",
    '"',
    "? ",
    ": ",
    "- ",
    "---",
    "...",
    "%YAML 1.1",
    "%TAG ! tag:x,2000:",
    "\t",
    "\x00",
    "\x1b[2J",
    "\ufeff",
    "~",
    "null",
    "yes",
    "2024-01-01",
    "1:20:30",
    "[" * 200,
    "{a: " * 50,
    "-1",
    "0",
    "''",
    "{}",
    "[]",
]


def seed_text(relative: str) -> str:
    return (ROOT / relative).read_text()


def mutate(text: str, rng: random.Random) -> str:
    """One to three seeded mutations of ``text``: bytes, lines or YAML tokens."""
    for _ in range(rng.randint(1, 3)):
        lines = text.split("\n")
        choice = rng.randrange(7)
        where = rng.randrange(len(lines))
        if choice == 0 and text:  # a byte replaced
            at = rng.randrange(len(text))
            text = text[:at] + chr(rng.randrange(0, 256)) + text[at + 1 :]
        elif choice == 1:  # a line dropped
            del lines[where]
            text = "\n".join(lines)
        elif choice == 2:  # a line repeated
            lines.insert(where, lines[where])
            text = "\n".join(lines)
        elif choice == 3:  # two lines swapped
            other = rng.randrange(len(lines))
            lines[where], lines[other] = lines[other], lines[where]
            text = "\n".join(lines)
        elif choice == 4:  # a value replaced by a token
            line = lines[where]
            cut = line.find(": ")
            token = rng.choice(YAML_TOKENS)
            lines[where] = line[: cut + 2] + token if cut >= 0 else line + " " + token
            text = "\n".join(lines)
        elif choice == 5:  # a token inserted as an item or a key
            indent = " " * rng.choice((0, 2, 4, 6))
            lines.insert(where, indent + rng.choice(("- ", "key: ", "")) + rng.choice(YAML_TOKENS))
            text = "\n".join(lines)
        else:  # an indentation shifted
            lines[where] = " " * rng.randrange(0, 5) + lines[where].lstrip(" ")
            text = "\n".join(lines)
    return text


def run(args: list[str], cwd: Path, shown: str) -> None:
    import os

    previous = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(
            app,
            args,
            env={
                "TALOS_SCHEMATIC_FACTORY": URL,
                "TALOS_SCHEMATIC_FACTORY_TOKEN": "",
                "TALOS_SCHEMATIC_FACTORY_AUTH": "",
                "XDG_CACHE_HOME": str(cwd / ".cache"),
            },
        )
    finally:
        os.chdir(previous)
    context = f"{args} on input:\n{shown[:2000]!r}"
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"escaped as {result.exception!r}: {context}") from result.exception
    # 4: lint's and triage's "nothing could be judged".
    assert result.exit_code in (0, 1, 2, 3, 4), f"exit {result.exit_code}: {context}"
    assert "Traceback" not in result.output, context


def cluster_case(workdir: Path, text: str) -> list[str]:
    (workdir / "cluster.yaml").write_text(text, errors="surrogateescape")
    return ["generate", "cluster.yaml"]


def profile_case(workdir: Path, text: str) -> list[str]:
    (workdir / "mine.yaml").write_text(text, errors="surrogateescape")
    (workdir / "cluster.yaml").write_text(
        "cluster: fuzz\ntalos:\n  version: v1.13.9\npools:\n  - name: gpu\n"
        "    profile: ./mine.yaml\n"
    )
    return ["generate", "cluster.yaml"]


def single_file(command: list[str]) -> Callable[[Path, str], list[str]]:
    def case(workdir: Path, text: str) -> list[str]:
        (workdir / "input.yaml").write_text(text, errors="surrogateescape")
        return [*command, "input.yaml"]

    return case


# Each kind: the command that reads it, and the shipped files its mutants start from.
KINDS: dict[str, tuple[Callable[[Path, str], list[str]], list[str]]] = {
    "schematic-id": (single_file(["id"]), ["examples/schematic.yaml"]),
    "cluster-generate": (cluster_case, ["examples/cluster.yaml", "examples/boot-media.yaml"]),
    "profile": (
        profile_case,
        [
            "profiles/kubevirt-l40s.yaml",
            "profiles/metal-hgx-b200-8x.yaml",
            "profiles/metal-rpi5.yaml",
        ],
    ),
    "lint": (
        single_file(["lint"]),
        ["tests/data/lint/rendered-gpu-cluster.yaml", "examples/cluster.yaml"],
    ),
    "detect": (single_file(["detect"]), ["tests/data/lspci-nnvv.hgx-b200.txt"]),
    "upgrade": (single_file(["upgrade", "--to", "v1.13.9"]), ["examples/cluster.yaml"]),
}


def _cases() -> Iterator[tuple[str, int]]:
    for kind in KINDS:
        for seed in range(CASES):
            yield kind, seed


@pytest.mark.parametrize(("kind", "seed"), list(_cases()), ids=lambda value: str(value))
def test_a_mutated_input_ends_in_a_message_not_a_traceback(
    kind: str, seed: int, tmp_path: Path
) -> None:
    build, seeds = KINDS[kind]
    rng = random.Random(f"{kind}-{seed}")
    text = mutate(seed_text(seeds[seed % len(seeds)]), rng)
    with respx.mock(assert_all_mocked=True, assert_all_called=False):
        # No case may reach the network; an unmocked request is an error the command reports.
        run(build(tmp_path, text), tmp_path, text)


# --- factory answers ---------------------------------------------------------------------------

EXTENSION = {
    "name": "siderolabs/nvidia-open-gpu-kernel-modules-lts",
    "ref": "ghcr.io/siderolabs/nvidia-open-gpu-kernel-modules-lts:570.172.08-v1.13.9",
    "digest": "sha256:" + "1" * 64,
    "author": "Sidero Labs",
    "description": "NVIDIA open GPU kernel modules",
}
SCHEMATIC_ID = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
ANSWERS: dict[str, tuple[str, str, list[str]]] = {
    "versions": ("/versions", json.dumps(["v1.13.8", "v1.13.9"]), ["versions"]),
    "extensions": (
        "/version/v1.13.9/extensions/official",
        json.dumps([EXTENSION]),
        ["extensions", "--live", "--talos", "v1.13.9"],
    ),
    "register": (
        "/schematics",
        json.dumps({"id": SCHEMATIC_ID}),
        ["register", "schematic.yaml"],
    ),
}


def _answer_cases() -> Iterator[tuple[str, int]]:
    for kind in ANSWERS:
        for seed in range(CASES):
            yield kind, seed


@pytest.mark.parametrize(("kind", "seed"), list(_answer_cases()), ids=lambda value: str(value))
def test_a_mutated_factory_answer_ends_in_a_message_not_a_traceback(
    kind: str, seed: int, tmp_path: Path, instant_retries: None
) -> None:
    path, body, args = ANSWERS[kind]
    rng = random.Random(f"answer-{kind}-{seed}")
    answer = mutate(body, rng)
    status = rng.choice((200, 200, 200, 201, 404, 429, 500, 503, 301, 401))
    headers = {"content-type": rng.choice(("application/json", "text/html", "text/plain"))}
    if status in (429, 503):
        headers["retry-after"] = rng.choice(
            ("0", "-1", "nan", "1e999", "Mon, 01 Jan 2001 00:00:00 GMT")
        )
    if status == 301:
        headers["location"] = rng.choice(("/elsewhere", "", "http://[::1", "//other.test/x"))
    (tmp_path / "schematic.yaml").write_text(seed_text("examples/schematic.yaml"))
    response = httpx.Response(
        status, content=answer.encode("utf-8", "surrogateescape"), headers=headers
    )
    with respx.mock(base_url=URL, assert_all_mocked=True, assert_all_called=False) as mock:
        mock.route(path=path).mock(return_value=response)
        run(args, tmp_path, f"HTTP {status} {headers}: {answer}")
