"""Cluster files a hostile or careless user writes: one message naming file, pool and key,
exit 1, before anything is written (the output directory an earlier run wrote stays as it was).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from schematic.cli import app, register_all_commands

register_all_commands()

GOOD = """\
cluster: c
namespace: tenant-c
cozystack:
  version: osimage
talos:
  version: v1.13.9
pools:
  - name: cpu
    profile: kubevirt-cpu
"""


def run(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def snapshot(directory: Path) -> dict[str, bytes]:
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def one_message(result: Result) -> str:
    lines = [
        line for line in result.stderr.splitlines() if not line.startswith("talos-schematic: note:")
    ]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output
    return lines[0]


@pytest.fixture
def out(tmp_path: Path) -> Path:
    (tmp_path / "good.yaml").write_text(GOOD)
    directory = tmp_path / "out"
    assert run("generate", str(tmp_path / "good.yaml"), "--out", str(directory)).exit_code == 0
    return directory


CASES = {
    "pool name of 64 characters": (
        GOOD.replace("name: cpu", "name: " + "p" * 64),
        ["pool name", "64 characters", "63"],
    ),
    # Helm refuses release names over 53 characters; Cozystack's is kubernetes-nodes-<c>-<p>.
    "release name over 53 characters": (
        GOOD.replace("cluster: c", "cluster: " + "c" * 30).replace(
            "name: cpu", "name: " + "p" * 10
        ),
        ['pool "' + "p" * 10 + '"', "58 characters", "over 53", "may have 5 characters"],
    ),
    # cozystack/cozystack#3315 caps cluster names at 32.
    "cluster name over 32 characters": (
        GOOD.replace("cluster: c", "cluster: " + "c" * 33),
        ["cluster:", "33 characters", "32 at most"],
    ),
    "newline in installerRepository": (
        GOOD.replace(
            "  version: v1.13.9", '  version: v1.13.9\n  installerRepository: "r.io/i\\nevil: x"'
        ),
        ["installerRepository", "'r.io/i\\nevil: x'", "not an image repository"],
    ),
    "space in imageFactoryURL": (
        GOOD.replace(
            "  version: v1.13.9", '  version: v1.13.9\n  imageFactoryURL: "https://f.test/ x"'
        ),
        ["imageFactoryURL", "space"],
    ),
    "negative minReplicas": (
        GOOD + "    minReplicas: -1\n",
        ['pool "cpu"', "minReplicas", "0 or more"],
    ),
    "minReplicas above maxReplicas": (
        GOOD + "    minReplicas: 5\n    maxReplicas: 2\n",
        ['pool "cpu"', "minReplicas (5) is more than maxReplicas (2)"],
    ),
    "replicas as text": (
        GOOD + "    maxReplicas: 'many'\n",
        ['pool "cpu"', "maxReplicas", "'many'"],
    ),
    "GPU count of a million": (
        GOOD.replace(
            "profile: kubevirt-cpu",
            "hardware: {platform: kubevirt, gpus: [{id: '10de:26b9', count: 1000000}]}",
        ),
        ['pool "cpu"', "count 1000000", "at most 64"],
    ),
    "GPU count of 23 digits": (
        GOOD.replace(
            "profile: kubevirt-cpu",
            "hardware: {platform: kubevirt, gpus: [{id: '10de:26b9', count: 9999999999"
            "9999999999999}]}",
        ),
        ['pool "cpu"', "count 999999… (23 digits)", "at most 64"],
    ),
    "GPU count true": (
        GOOD.replace(
            "profile: kubevirt-cpu",
            "hardware: {platform: kubevirt, gpus: [{id: '10de:26b9', count: true}]}",
        ),
        ['pool "cpu"', "count", "true"],
    ),
    "GPU counts adding up past the cap": (
        GOOD.replace(
            "profile: kubevirt-cpu",
            "hardware: {platform: kubevirt, gpus: [{id: '10de:26b9', count: 40}, "
            "{id: '10de:26b9', count: 40}]}",
        ),
        ['pool "cpu"', "in all 80", "at most 64"],
    ),
    "newline in a pool name": (
        GOOD.replace("name: cpu", 'name: "cpu\\nevil"'),
        ["'cpu\\nevil'", "not a valid pool name"],
    ),
    "NUL in a pool name": (
        GOOD.replace("name: cpu", 'name: "cpu\\0"'),
        ["'cpu\\x00'", "not a valid pool name"],
    ),
    "newline in a profile name": (
        GOOD.replace("profile: kubevirt-cpu", 'profile: "kubevirt-cpu\\nx"'),
        ['pool "cpu"', "kubevirt-cpu\\nx"],
    ),
    "newline in an extension name": (
        GOOD + '    extensions: ["siderolabs/iscsi-tools\\nx"]\n',
        ['pool "cpu"', "siderolabs/iscsi-tools\\nx"],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_cluster_files_are_one_message_and_write_nothing(
    case: str, out: Path, tmp_path: Path
) -> None:
    text, expected = CASES[case]
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(text)
    before = snapshot(out)
    for args in (["generate", str(cluster), "--out", str(out)], ["generate", str(cluster)]):
        result = run(*args)
        assert result.exit_code == 1, (case, result.output)
        message = one_message(result)
        assert str(cluster) in message
        for part in expected:
            assert part in message, (case, message)
        assert "\0" not in result.stderr
    assert snapshot(out) == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_inline_hardware_keys_that_do_not_sort_together_are_one_message(tmp_path: Path) -> None:
    # A number beside a name as keys of one mapping: comparing pools once raised a TypeError.
    cluster = tmp_path / "c.yaml"
    cluster.write_text(
        "cluster: c\ntalos: {version: v1.13.9}\npools:\n  - name: gpu\n    hardware:\n"
        "      platform: kubevirt\n      diskImage: {sectorSize: 512, 1: 1}\n"
    )
    result = run("generate", str(cluster), "--out", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert one_message(result) == (
        f'talos-schematic: {cluster}:7: pool "gpu": hardware.diskImage.1: unknown key'
    )
    assert not (tmp_path / "out").exists()


def test_a_fifo_named_like_a_profile_is_refused_not_waited_on(out: Path, tmp_path: Path) -> None:
    """Found by name in --profiles or given as a path, a FIFO would block generate forever."""
    import os
    import subprocess
    import sys

    profiles = tmp_path / "profiles"
    profiles.mkdir()
    os.mkfifo(profiles / "mine.yaml")
    by_name = GOOD.replace("profile: kubevirt-cpu", "profile: mine")
    by_path = GOOD.replace("profile: kubevirt-cpu", f"profile: {profiles / 'mine.yaml'}")
    before = snapshot(out)
    for text, extra in ((by_name, ["--profiles", str(profiles)]), (by_path, [])):
        cluster = tmp_path / "cluster.yaml"
        cluster.write_text(text)
        command = [sys.executable, "-m", "schematic", "generate", str(cluster), *extra]
        done = subprocess.run(
            [*command, "--out", str(out)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        errors = [line for line in done.stderr.splitlines() if ": note:" not in line]
        assert done.returncode == 1, done.stderr
        assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
        assert f"{profiles / 'mine.yaml'}: not a regular file" in errors[0], errors
    assert snapshot(out) == before
