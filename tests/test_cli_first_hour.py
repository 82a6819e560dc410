"""What a new user meets in the first hour, run as they type it: a pipe to `head`, the names
they look for, the hints an unknown name gets."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner, Result

from schematic.cli import app, register_all_commands
from schematic.core.decode import _CLUSTER_FILE_KEYS
from schematic.errors import closest_names
from schematic.inputs.cluster_file import CLUSTER_KEYS

register_all_commands()

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "cluster.yaml"


# --- a closed pipe --------------------------------------------------------------------------------


def _into_a_closed_pipe(args: list[str]) -> subprocess.CompletedProcess[str]:
    # `talos-schematic profiles | head -2`, with `head` gone before the first write, so the
    # write meets the closed pipe every time (a live `head` races the writer).
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-m", "schematic", *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize("args", [["profiles"], ["explain", "--list"]])
def test_a_reader_that_left_ends_the_run_quietly(args: list[str]) -> None:
    done = _into_a_closed_pipe(args)
    assert done.returncode == 0
    assert done.stderr == ""


def test_a_reader_that_left_keeps_the_verdict() -> None:
    # `triage evidence/ | head` in CI: the failure it found is still exit 3, not a quiet 0.
    bundle = Path(__file__).parent / "data" / "triage" / "paste-fabricmanager-invalid-config-h200"
    done = _into_a_closed_pipe(["triage", str(bundle)])
    assert done.returncode == 3
    assert "pipe" not in done.stderr.lower()


def test_a_reader_that_stays_reads_everything() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "schematic", "explain", "--list"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("TS001")
    assert len(done.stdout.splitlines()) > 10


# --- profiles shows the aliases -----------------------------------------------------------------


def run(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def test_profiles_shows_each_profiles_aliases_beside_its_name(tmp_path: Path) -> None:
    (tmp_path / "lab.yaml").write_text("name: lab\nplatform: metal\ncpuVendor: amd\n")
    (tmp_path / "lab-gpu.yaml").write_text(
        "name: lab-gpu\naliases: [bench, bench-2]\nplatform: metal\ncpuVendor: amd\n"
    )
    listed = run("profiles", "--profiles", str(tmp_path))
    assert listed.exit_code == 0, listed.stderr
    rows = {row.split()[0]: row for row in listed.stdout.splitlines()}
    # The aliases the README's examples name, findable in the text a user reads.
    assert "kubevirt-l40s (l40s) " in rows["kubevirt-l40s"]
    assert "(hgx-b200-8x, hgx-b200, dgx-b200)" in rows["metal-hgx-b200-8x"]
    assert "(rtx-pro-6000-blackwell-server)" in rows["kubevirt-rtx-pro-6000-blackwell-server"]
    assert "(bench, bench-2)" in rows["lab-gpu"]
    assert "(" not in rows["lab"]  # a profile without aliases shows none
    # Every alias the JSON lists is in the text too.
    documents = json.loads(run("profiles", "--profiles", str(tmp_path), "-f", "json").stdout)
    for document in documents:
        for alias in document.get("aliases") or []:
            assert alias in rows[document["name"]]


# --- unknown names: the closest ones, and the command that lists them ----------------------------


def test_an_unknown_profile_gets_the_closest_names_not_all_of_them() -> None:
    # rtx6000 is the example cluster file's pool name, easily typed where a profile belongs.
    result = run("init", "--pool", "gpu=rtx6000", "--chart", "osimage", "--namespace", "t")
    assert result.exit_code != 0
    message = result.stderr.strip()
    assert message == (
        "talos-schematic: no hardware profile named 'rtx6000'; did you mean "
        "rtx-pro-6000-blackwell-server, kubevirt-rtx-pro-6000-blackwell-server? "
        "(`talos-schematic profiles` lists them all)"
    )
    assert "kubevirt-a10" not in message  # not the list of every profile


def test_an_unknown_profile_with_nothing_close_names_the_listing_command() -> None:
    result = run("init", "--pool", "gpu=zzz", "--chart", "osimage", "--namespace", "t")
    assert result.exit_code != 0
    assert "did you mean" not in result.stderr
    assert result.stderr.strip().endswith("'zzz'; `talos-schematic profiles` lists them")


@pytest.mark.parametrize(
    ("typed", "hint"),
    [
        ("101", "did you mean TS101?"),
        ("ts0101", "did you mean TS101, TS001, TS002?"),
        ("TS999", "`talos-schematic explain --list` lists them"),
    ],
)
def test_an_unknown_lint_code_gets_the_closest_codes(typed: str, hint: str) -> None:
    result = run("explain", typed)
    assert result.exit_code == 2
    said = " ".join(result.stderr.split())  # the wrapping undone
    assert f"unknown lint code '{typed}'" in said
    assert hint in said
    assert "TS201" not in said  # not every code


def test_a_known_lint_code_is_explained() -> None:
    result = run("explain", "TS101")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("TS101")


def test_closest_names_are_case_blind_and_find_the_parts_of_a_name() -> None:
    known = ["kubevirt-rtx-pro-6000-blackwell-server", "kubevirt-l40s", "kubevirt-l4"]
    assert closest_names("RTX6000", known) == ["kubevirt-rtx-pro-6000-blackwell-server"]
    assert closest_names("kubevirt-l40", known) == ["kubevirt-l40s", "kubevirt-l4"]
    assert closest_names("", known) == []
    assert closest_names("rtx6000", []) == []  # a factory listing nothing: no hint, no error
    assert closest_names("h100", known) == []


def test_a_mistyped_gpu_model_suggests_that_gpus_family_first() -> None:
    # H300 does not exist; the H100 and H200 profiles are what a user typing it looks for,
    # not the A30, B200 or L40 a letter-by-letter likeness puts first.
    result = run("init", "--pool", "gpu=kubevirt-h300", "--chart", "osimage", "--namespace", "t")
    assert result.exit_code != 0
    said = result.stderr.strip()
    assert "did you mean kubevirt-h100-nvl, kubevirt-h200-sxm, kubevirt-h100-pcie?" in said
    assert "a30" not in said and "b200" not in said and "l40" not in said


@pytest.mark.parametrize(
    ("typed", "known", "nearest"),
    [
        # The runs a name shares come before a letter-by-letter likeness.
        (
            "kubevirt-h300",
            ["kubevirt-a30", "kubevirt-b200", "kubevirt-h100-nvl"],
            ["kubevirt-h100-nvl", "kubevirt-a30", "kubevirt-b200"],
        ),
        ("a100", ["a10", "a100-pcie-80gb"], ["a100-pcie-80gb", "a10"]),
        (
            "kubevirt-a100-80",
            ["kubevirt-a10", "kubevirt-a100-pcie-40gb", "kubevirt-a100-pcie-80gb"],
            ["kubevirt-a100-pcie-80gb", "kubevirt-a100-pcie-40gb", "kubevirt-a10"],
        ),
        # A number is its value: ts0101 is TS101.
        ("ts0101", ["TS011", "TS101", "TS110"], ["TS101", "TS011", "TS110"]),
        # Equal runs: the closer spelling first; the order never depends on the input's.
        ("hgx-b300", ["hgx-h100", "hgx-b200", "metal-amd"], ["hgx-b200", "hgx-h100"]),
        ("l40", ["l40-b", "l40s"], ["l40s", "l40-b"]),
        # A case slip is no distance.
        ("Endpoints", ["endpoints", "overridePath"], ["endpoints"]),
        # Nothing near: nothing said, not the whole list.
        ("zzz", ["kubevirt-a30", "kubevirt-b200"], []),
    ],
)
def test_closest_names_rank_shared_runs_before_likeness(
    typed: str, known: list[str], nearest: list[str]
) -> None:
    assert closest_names(typed, known) == nearest
    assert closest_names(typed, list(reversed(known))) == nearest


def test_id_on_a_cluster_file_says_which_command_reads_it() -> None:
    result = run("id", str(EXAMPLE))
    assert result.exit_code == 1
    assert "unknown field 'cluster'" in result.stderr
    assert "this is a cluster file, not a schematic" in result.stderr
    assert "`talos-schematic generate CLUSTER -f schematic --pool NAME`" in result.stderr
    # And that command does print a pool's schematic of it.
    shown = run("generate", str(EXAMPLE), "-f", "schematic", "--pool", "rtx6000")
    assert shown.exit_code == 0, shown.stderr
    assert "customization:" in shown.stdout


def test_a_schematic_with_a_stray_key_is_not_called_a_cluster_file(tmp_path: Path) -> None:
    stray = tmp_path / "schematic.yaml"
    stray.write_text("customization: {}\nnamespace: x\n")
    result = run("id", str(stray))
    assert result.exit_code == 1
    assert "unknown field 'namespace'" in result.stderr
    assert "cluster file" not in result.stderr


def test_the_cluster_file_keys_a_schematic_reader_knows_are_cluster_file_keys() -> None:
    assert set(CLUSTER_KEYS) >= _CLUSTER_FILE_KEYS


# --- gpu says which platform it assumed -----------------------------------------------------------


def test_gpu_states_the_platform_it_assumed_in_its_first_line() -> None:
    assumed = run("gpu", "10de:26b9", "--talos", "v1.13.9")
    assert assumed.exit_code == 0, assumed.stderr
    assert assumed.stdout.splitlines()[0] == (
        "platform: KubeVirt VM, GPUs passed through (assumed; --metal for bare metal)"
    )
    metal = run("gpu", "10de:26b9", "--talos", "v1.13.9", "--metal")
    assert metal.exit_code == 0, metal.stderr
    assert metal.stdout.splitlines()[0] == "platform: bare metal (--metal)"
    assert "KubeVirt" not in metal.stdout
    # JSON and the schematic are documents for tools: no line is added to them.
    as_json = run("gpu", "10de:26b9", "--talos", "v1.13.9", "--json")
    assert as_json.exit_code == 0, as_json.stderr
    assert "platform:" not in as_json.stdout
    assert json.loads(as_json.stdout)["gpus"]


# --- the example's pointers lead somewhere -----------------------------------------------------


def test_the_example_cluster_files_see_pointers_name_a_heading_that_exists() -> None:
    pointers = re.findall(r'See "([^"]+)" in (\S+?)\.?$', EXAMPLE.read_text(), re.MULTILINE)
    assert pointers, "the example points to no section"
    for section, document in pointers:
        text = (EXAMPLE.parents[1] / document).read_text()
        headings = [line for line in text.splitlines() if line.startswith("#")]
        assert any(section in heading for heading in headings), (section, document)


# --- init: every missing answer at once, and no KubeVirt keys on bare metal ---------------------


def _said(result: Result) -> str:
    return " ".join(result.stderr.split())  # the wrapping undone


def test_init_names_every_missing_answer_in_one_run(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    refused = run("init", str(path), "--pool", "gpu=l40s")
    assert refused.exit_code == 2
    said = _said(refused)
    assert "--chart / --namespace" in said
    assert "give --chart TARGET" in said and "and --namespace tenant-NAME" in said
    assert not path.exists()
    # One given: only the other is asked for.
    chart_given = _said(run("init", "--pool", "gpu=l40s", "--chart", "osimage"))
    assert "give --namespace tenant-NAME" in chart_given and "--chart TARGET" not in chart_given
    namespace_given = _said(run("init", "--pool", "gpu=l40s", "--namespace", "tenant-ml"))
    assert "give --chart TARGET" in namespace_given
    assert "--namespace tenant-NAME" not in namespace_given


def test_init_writes_replica_bounds_only_for_kubevirt_pools(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    args = ["--pool", "gpu=l40s", "--pool", "hgx=metal-hgx-b200-8x", "--pool", "cpu=metal-amd"]
    written = run("init", str(path), "--chart", "osimage", "--namespace", "tenant-ml", *args)
    assert written.exit_code == 0, written.stderr
    pools = {pool["name"]: pool for pool in yaml.safe_load(path.read_text())["pools"]}
    assert (pools["gpu"]["minReplicas"], pools["gpu"]["maxReplicas"]) == (0, 2)
    for metal in ("hgx", "cpu"):
        assert "minReplicas" not in pools[metal] and "maxReplicas" not in pools[metal]
    # generate accepts it as written.
    generated = run("generate", str(path), "--out", str(tmp_path / "out"))
    assert generated.exit_code == 0, generated.stderr
    # Bare metal alone: nothing Cozystack is asked, and no replica key is written.
    alone = run("init", "--pool", "gpu=metal-hgx-b200-8x")
    assert alone.exit_code == 0, alone.stderr
    assert "Replicas" not in alone.stdout
