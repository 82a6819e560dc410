"""Mistakes in cluster files and profiles, through the command line: one message per problem as
``FILE:LINE: [pool "NAME": ]KEY: what is wrong`` in the tool's own words, exit 1, no traceback,
nothing written; explicit YAML tags and over-long numbers included.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from schematic.cli import app, register_all_commands

register_all_commands()

CLUSTER = """\
cluster: demo
talos:
  version: v1.13.9
pools:
  - name: gpu
    profile: kubevirt-l40s
    minReplicas: 0
  - name: custom
    hardware:
      platform: kubevirt
      gpus:
        - id: '10de:26b9'
          count: 2
"""
PROFILE = """\
platform: kubevirt
gpus:
  - id: '10de:26b9'
    count: 2
"""
# What a validation library would have said; none of it is the tool's wording.
FOREIGN_WORDS = re.compile(
    r"Field required|Input should|instance of|Value error|validation error|pydantic|Traceback"
)


def run(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def messages(result: Result) -> list[str]:
    assert result.exit_code == 1, result.output
    assert not FOREIGN_WORDS.search(result.output), result.output
    return [
        line.removeprefix("talos-schematic: ")
        for line in result.stderr.splitlines()
        if not line.startswith("talos-schematic: note:")
    ]


def generate(tmp_path: Path, text: str) -> list[str]:
    cluster = tmp_path / "c.yaml"
    cluster.write_text(text)
    result = run("generate", str(cluster), "--out", str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()
    return [line.replace(str(cluster), "c.yaml") for line in messages(result)]


def generate_with_profile(tmp_path: Path, text: str) -> list[str]:
    """The problems of a profile a pool names, each without the pool's prefix."""
    profile = tmp_path / "mine.yaml"
    profile.write_text(text)
    cluster = CLUSTER.replace("profile: kubevirt-l40s", "profile: ./mine.yaml")
    (tmp_path / "c.yaml").write_text(cluster)
    result = run("generate", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "out"))
    prefix = f'{tmp_path / "c.yaml"}:5: pool "gpu": '
    found = messages(result)
    assert all(line.startswith(prefix) for line in found), found
    return [line.removeprefix(prefix).replace(str(profile), "mine.yaml") for line in found]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (  # unknown key
            "    minReplicas: 0\n",
            "    minReplica: 0\n",
            'c.yaml:7: pool "gpu": minReplica: not a pool setting nor a Cozystack '
            "kubernetes-nodes value; did you mean minReplicas?",
        ),
        (  # wrong type
            "    minReplicas: 0\n",
            "    minReplicas: some\n",
            'c.yaml:5: pool "gpu": minReplicas: give a whole number of nodes, 0 or more, '
            "not 'some'",
        ),
        (  # missing key
            "  version: v1.13.9\n",
            "  imageFactoryURL: https://factory.talos.dev\n",
            "c.yaml:2: talos.version: missing; add it, e.g. version: v1.13.9",
        ),
        (  # bad GPU id, inline
            "        - id: '10de:26b9'\n",
            "        - id: 26b9x\n",
            "c.yaml:12: pool \"custom\": hardware.gpus[0].id: '26b9x' is not a PCI ID like "
            "10de:2bb5",
        ),
        (  # nested pool key
            "          count: 2\n",
            "          count: 2\n          archtecture: Ada\n",
            'c.yaml:14: pool "custom": hardware.gpus[0].archtecture: unknown key; did you mean '
            "architecture?",
        ),
        (  # a number where text belongs
            "cluster: demo\n",
            "cluster: 12\n",
            "c.yaml:1: cluster: must be text, not the number 12",
        ),
        (  # the empty installer repository
            "  version: v1.13.9\n",
            "  version: v1.13.9\n  installerRepository: ''\n",
            "c.yaml:4: talos.installerRepository: must not be empty",
        ),
    ],
    ids=[
        "unknown-key",
        "wrong-type",
        "missing-key",
        "bad-gpu-id",
        "nested-pool-key",
        "number-for-text",
        "empty-repository",
    ],
)
def test_a_cluster_file_mistake_is_named_by_file_line_pool_and_key(
    tmp_path: Path, old: str, new: str, expected: str
) -> None:
    assert old in CLUSTER
    assert generate(tmp_path, CLUSTER.replace(old, new, 1)) == [expected]


def test_every_problem_of_a_file_is_listed_in_line_order(tmp_path: Path) -> None:
    text = CLUSTER.replace("cluster: demo", "cluster: Demo").replace("count: 2", "count: two")
    assert generate(tmp_path, text) == [
        "c.yaml:1: cluster: 'Demo' is not a valid name: use lowercase letters, digits, '-'",
        'c.yaml:13: pool "custom": hardware.gpus[0].count: must be a whole number, not the '
        "text 'two'",
    ]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("gpus:\n", "gpu:\n", "mine.yaml:2: gpu: unknown key; did you mean gpus?"),
        ("    count: 2\n", "    count: 0\n", "mine.yaml:4: gpus[0].count: must be 1 or more"),
        ("  - id: '10de:26b9'\n", "  - id: 2330\n", "mine.yaml:3: gpus[0].id: write the PCI ID"),
        ("  - id: '10de:26b9'\n", "  - architecture: Ada\n", "mine.yaml:3: gpus[0].id: missing"),
    ],
    ids=["unknown-key", "bad-count", "number-id", "missing-id"],
)
def test_a_profile_mistake_is_named_by_file_line_and_key(
    tmp_path: Path, old: str, new: str, expected: str
) -> None:
    found = generate_with_profile(tmp_path, PROFILE.replace(old, new, 1))
    assert len(found) == 1 and found[0].startswith(expected), found


TAGGED = {
    "!!int abc": "cannot read 'abc' as !!int",
    "!!float x": "cannot read 'x' as !!float",
    "!!bool maybe": "cannot read 'maybe' as !!bool",
    "!!timestamp x": "cannot read 'x' as !!timestamp",
    "!!binary aGk=": "cannot read 'aGk=' as !!binary",
    "9" * 5000: "a number of more than 1,000 digits",
    "!!int " + "9" * 5000: "a number of more than 1,000 digits",
}


@pytest.mark.parametrize("value", list(TAGGED), ids=lambda value: value[:14])
def test_a_tag_or_an_overlong_number_in_a_cluster_file_is_one_message(
    tmp_path: Path, value: str
) -> None:
    found = generate(tmp_path, CLUSTER.replace("minReplicas: 0", f"minReplicas: {value}"))
    assert len(found) == 1 and found[0].startswith("c.yaml:7: "), found
    assert TAGGED[value] in found[0]


@pytest.mark.parametrize("value", list(TAGGED), ids=lambda value: value[:14])
def test_a_tag_or_an_overlong_number_in_a_profile_is_one_message(
    tmp_path: Path, value: str
) -> None:
    found = generate_with_profile(tmp_path, PROFILE.replace("count: 2", f"count: {value}"))
    assert len(found) == 1 and found[0].startswith("mine.yaml:4: "), found
    assert TAGGED[value] in found[0]


def test_a_tagged_profile_given_to_detect_is_one_message(tmp_path: Path) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text("platform: metal\nnvswitch: !!bool maybe\n")
    dump = tmp_path / "dump.txt"
    dump.write_text("18:00.0 3D controller [0302]: NVIDIA L40S [10de:26b9]\n")
    result = run("detect", "--against", str(profile), str(dump))
    assert messages(result) == [f"{profile}:2: cannot read 'maybe' as !!bool"]


def test_an_overlong_talos_version_is_one_message(tmp_path: Path) -> None:
    found = generate(tmp_path, CLUSTER.replace("v1.13.9", "v1." + "9" * 5000 + ".0"))
    assert len(found) == 1 and found[0].startswith("c.yaml:3: talos.version: "), found
