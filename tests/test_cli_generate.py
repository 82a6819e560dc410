"""`talos-schematic generate` and `check`, with golden files for the shipped example.

Regenerate the golden files with ``TALOS_SCHEMATIC_REGENERATE=1 pytest tests/test_cli_generate.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner, Result

from schematic.cli import app, register_all_commands

register_all_commands()
runner = CliRunner()

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "cluster.yaml"
GOLDEN = Path(__file__).resolve().parent / "golden" / "example"
REGENERATE = os.environ.get("TALOS_SCHEMATIC_REGENERATE") == "1"
STREAMS = {
    "cozystack.yaml": ["--format", "cozystack"],
    # The example names its chart (osimage); these two are the other charts' layouts.
    "values-schematicid.yaml": ["--values-only", "--chart", "pr3571", "--layout", "schematicid"],
    # v1.6.x cannot load the GPU pools' modules: written only when insisting.
    "values-talos.yaml": [
        "--format",
        "values",
        "--chart",
        "v1.6",
        "--layout",
        "talos",
        "--allow-ignored-keys",
    ],
    # One document per pool: a pool is picked.
    "machine-config.yaml": ["--format", "machine-config", "--pool", "rtx6000"],
    "schematic.yaml": ["--format", "schematic", "--pool", "l40s"],
    "urls.yaml": ["--format", "urls"],
    "summary.json": ["--format", "json"],
}


def run(*args: str) -> Result:
    return runner.invoke(app, list(args))


def tree(directory: Path) -> dict[str, bytes]:
    return {
        path.relative_to(directory).as_posix(): path.read_bytes()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_stdout_streams_match_golden(name: str) -> None:
    result = run("generate", str(EXAMPLE), *STREAMS[name])
    assert result.exit_code == 0, result.stderr
    golden = GOLDEN / "stdout" / name
    if REGENERATE:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(result.stdout, "utf-8")
    assert result.stdout == golden.read_text("utf-8")


def test_out_tree_matches_golden(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run("generate", str(EXAMPLE), "--out", str(out))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    assert "4 pools, 28 files written to" in result.stderr
    golden = GOLDEN / "out"
    if REGENERATE:
        shutil.rmtree(golden, ignore_errors=True)
        shutil.copytree(out, golden)
    assert tree(out) == tree(golden)


def test_output_is_identical_across_runs(tmp_path: Path) -> None:
    first = run("generate", str(EXAMPLE), "--format", "json").stdout
    assert run("generate", str(EXAMPLE), "--format", "json").stdout == first
    run("generate", str(EXAMPLE), "--out", str(tmp_path / "a"))
    run("generate", str(EXAMPLE), "--out", str(tmp_path / "b"))
    assert tree(tmp_path / "a") == tree(tmp_path / "b")


def test_summary_shape() -> None:
    summary = json.loads(run("generate", str(EXAMPLE), "--format", "json").stdout)
    assert list(summary) == ["cluster", "talos", "cozystack", "chart", "pools", "gpuPath"]
    assert (summary["cluster"], summary["talos"]) == ("mycluster", "v1.13.9")
    for pool in summary["pools"]:
        assert list(pool) == [
            "name",
            "talos",
            "plannedWith",
            "schematicID",
            "schematic",
            "extensions",
            "nvidia",
            "kernelModules",
            "installer",
            "image",
            "media",
            "values",
            "smokeTest",
        ]
        assert (pool["smokeTest"] is None) == ("gpus" not in pool["values"])
        assert set(pool["media"]) == {"disk", "installer"}
        assert pool["media"]["disk"] == pool["image"]
        assert pool["installer"].endswith(f"/{pool['schematicID']}:v1.13.9")
        assert f"/image/{pool['schematicID']}/" in pool["image"]
        assert pool["values"]["osImage"]["factory"]["schematicID"] == pool["schematicID"]
        has_gpu = "gpus" in pool["values"]
        assert has_gpu == any("nvidia" in name for name in pool["extensions"])
    gpu_path = summary["gpuPath"]
    assert list(gpu_path) == ["gpuOperatorShape", "addons", "passthrough", "platformValues"]
    assert gpu_path["addons"]["addons"]["gpuOperator"]["enabled"] is True
    assert [gpu["id"] for gpu in gpu_path["passthrough"] if not gpu["permittedByDefault"]] == [
        "10de:2bb5"
    ]
    missing = gpu_path["platformValues"]["gpu"]["permittedHostDevices"]["pciHostDevices"]
    assert [entry["pciVendorSelector"] for entry in missing] == ["10DE:2BB5"]


def test_summary_carries_the_nvidia_decision_per_pool() -> None:
    """CI can assert on the choice: flavour, tier, driver branch and version, toolkit, why."""
    summary = json.loads(run("generate", str(EXAMPLE), "--format", "json").stdout)
    decisions = {pool["name"]: pool["nvidia"] for pool in summary["pools"]}
    assert decisions["cpu"] is None
    chosen = {
        name: (d["flavour"], d["tier"], d["driverBranch"], d["driver"].split(".")[0])
        for name, d in decisions.items()
        if d is not None
    }
    # Talos v1.13.9: Blackwell takes the newer production driver, the L40S pool pins LTS, and
    # Volta needs the proprietary modules of LTS 580 (595 dropped it).
    assert chosen == {
        "rtx6000": ("open", "production", 595, "595"),
        "l40s": ("open", "lts", 580, "580"),
        "v100": ("proprietary", "lts", 580, "580"),
    }
    v100 = decisions["v100"]
    assert list(v100) == [
        "flavour",
        "tier",
        "driverBranch",
        "driver",
        "containerToolkit",
        "gpus",
        "reasons",
        "notes",
    ]
    assert v100["containerToolkit"].startswith("v1.")
    assert [gpu["architecture"] for gpu in v100["gpus"]] == ["Volta"]
    assert any("GSP" in reason for reason in v100["reasons"])


def test_out_summary_line_names_each_pools_nvidia_choice(tmp_path: Path) -> None:
    result = run("generate", str(EXAMPLE), "--out", str(tmp_path / "out"))
    assert result.exit_code == 0, result.stderr
    lines = [line.strip() for line in result.stderr.splitlines() if "NVIDIA" in line]
    assert len(lines) == 3
    assert lines[2].startswith(f'{EXAMPLE}: pool "v100": NVIDIA proprietary kernel modules')
    assert "tier lts, driver 580." in lines[2]
    assert not any('"cpu"' in line for line in lines)


def _written_by_hand(extensions: list[str], kernel_args: tuple[str, ...] = ()) -> str:
    """The factory's canonical YAML for these lists, spelled out as the published vectors are
    (4-space indent, lists in the order given), without the tool's emitter."""
    body = "customization:\n"
    if kernel_args:
        body += "    extraKernelArgs:\n" + "".join(f"        - {a}\n" for a in kernel_args)
    body += "    systemExtensions:\n        officialExtensions:\n"
    return body + "".join(f"            - {name}\n" for name in extensions)


# The example's pools, their extensions as the NVIDIA rules choose them (sorted, as the
# factory's UI sends them), and the IDs: sha256 of those bytes, the published vectors' method.
EXAMPLE_IDS = {
    "rtx6000": (
        _written_by_hand(
            [
                "siderolabs/nvidia-container-toolkit-production",
                "siderolabs/nvidia-open-gpu-kernel-modules-production",
                "siderolabs/qemu-guest-agent",
            ]
        ),
        "a31d81eceab05afdc2c59b0002701173e117a5fb81bdc1f64062d27655145848",
    ),
    "l40s": (
        _written_by_hand(
            [
                "siderolabs/iscsi-tools",
                "siderolabs/nvidia-container-toolkit-lts",
                "siderolabs/nvidia-open-gpu-kernel-modules-lts",
                "siderolabs/qemu-guest-agent",
            ],
            ("console=ttyS0",),
        ),
        "a9044e0057fb1ed17bb79bfda98fadacd359a978fe009baf8c7262595b916d88",
    ),
    "v100": (
        _written_by_hand(
            [
                "siderolabs/nonfree-kmod-nvidia-lts",
                "siderolabs/nvidia-container-toolkit-lts",
                "siderolabs/qemu-guest-agent",
            ]
        ),
        "914b38adefad3d77212f565745ed52013bf3a424e7da2730e9e7dad8ee297342",
    ),
    # Cozystack's default worker schematic, whose ID the domain notes give too.
    "cpu": (
        _written_by_hand(["siderolabs/qemu-guest-agent"]),
        "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515",
    ),
}


def test_example_ids_are_the_hash_of_bodies_written_by_hand() -> None:
    summary = json.loads(run("generate", str(EXAMPLE), "--format", "json").stdout)
    got = {pool["name"]: (pool["schematic"], pool["schematicID"]) for pool in summary["pools"]}
    assert got == EXAMPLE_IDS
    for body, schematic_id in EXAMPLE_IDS.values():
        assert hashlib.sha256(body.encode()).hexdigest() == schematic_id


def test_manifests_are_kubernetes_nodes_per_pool() -> None:
    documents = list(yaml.safe_load_all(run("generate", str(EXAMPLE)).stdout))
    assert [d["metadata"]["name"] for d in documents] == [
        "mycluster-rtx6000",
        "mycluster-l40s",
        "mycluster-v100",
        "mycluster-cpu",
    ]
    assert all(
        d["kind"] == "KubernetesNodes" and d["spec"]["cluster"] == "mycluster" for d in documents
    )


def test_format_limits_the_kinds_written(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run("generate", str(EXAMPLE), "--out", str(out), "--format", "json").exit_code == 0
    assert sorted(tree(out)) == ["APPLY.md", "index.yaml", "summary.json"]


def test_check_passes_then_reports_drift(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run("generate", str(EXAMPLE), "--out", str(out))
    result = run("check", str(EXAMPLE), "--out", str(out))
    assert result.exit_code == 0, result.stderr
    (out / "cpu" / "values.yaml").write_text("edited\n")
    (out / "v100" / "urls.yaml").unlink()
    # A file the tool did not write is the user's, not drift.
    (out / "stray.yaml").write_text("x\n")
    result = run("check", str(EXAMPLE), "--out", str(out))
    assert result.exit_code == 3
    assert "  changed: cpu/values.yaml\n  missing: v100/urls.yaml\n" in result.stderr
    assert "stray" not in result.stderr
    assert result.stdout == ""
    # The hint names the edited file and a command without --force (which would also replace
    # files the tool never wrote); followed as printed, it brings the directory up to date.
    *said, command = result.stderr.splitlines()
    assert f"remove (or restore from version control) {out}/cpu/values.yaml, then" in said[-1]
    assert command.startswith("regenerate with: talos-schematic generate ")
    words = shlex.split(command.removeprefix("regenerate with: talos-schematic "))
    assert "--force" not in words
    (out / "cpu" / "values.yaml").unlink()
    assert run(*words).exit_code == 0
    assert run("check", str(EXAMPLE), "--out", str(out)).exit_code == 0


def test_check_with_another_layout_sees_drift(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run("generate", str(EXAMPLE), "--out", str(out))
    result = run("check", str(EXAMPLE), "--out", str(out), "--layout", "talos")
    assert result.exit_code == 3
    assert "changed: cpu/values.yaml" in result.stderr


def test_errors_exit_1_with_file_and_pool(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        "cluster: c\ntalos: {version: v1.13.9}\npools:\n"
        "  - {name: gpu, profile: kubevirt-rtx-pro-6000-blackwell-server, "
        "nvidia: {flavour: proprietary}}\n"
    )
    out = tmp_path / "out"
    result = run("generate", str(cluster), "--out", str(out))
    assert result.exit_code == 1
    expected = f'talos-schematic: {cluster}:4: pool "gpu": flavour proprietary'
    assert result.stderr.startswith(expected)
    assert not out.exists()


def test_a_failed_run_leaves_the_previous_output(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run("generate", str(EXAMPLE), "--out", str(out))
    before = tree(out)
    broken = tmp_path / "cluster.yaml"
    broken.write_text(EXAMPLE.read_text().replace("profile: kubevirt-cpu", "profile: nope"))
    assert run("generate", str(broken), "--out", str(out)).exit_code == 1
    assert tree(out) == before


def test_missing_cluster_file() -> None:
    result = run("generate", "does-not-exist.yaml")
    assert result.exit_code == 1
    assert "does-not-exist.yaml: cannot read" in result.stderr


def test_values_only_conflicts_with_another_format() -> None:
    result = run("generate", str(EXAMPLE), "--values-only", "--format", "json")
    assert result.exit_code == 2


def test_issue_example_cluster_file(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        """\
cluster: mycluster
talos:
  version: v1.13.9
  imageFactoryURL: https://factory.talos.dev
  installerRepository: factory.talos.dev/installer
nvidia: {flavour: auto, tier: auto}
pools:
  - name: gpu
    profile: rtx-pro-6000-blackwell-server
    minReplicas: 0
    maxReplicas: 4
    instanceType: u1.2xlarge
  - name: cpu
    profile: kubevirt-cpu
  - name: custom
    hardware: {platform: kubevirt, gpus: [{id: "10de:26b9", count: 2}]}
    extensions: [siderolabs/iscsi-tools]
    kernelArgs: [console=ttyS0]
    kernelModules: []
    nvidia: {tier: lts}
"""
    )
    result = run("generate", str(cluster), "--format", "json")
    assert result.exit_code == 0, result.stderr
    pools = {pool["name"]: pool for pool in json.loads(result.stdout)["pools"]}
    assert pools["cpu"]["extensions"] == ["siderolabs/qemu-guest-agent"]
    assert pools["custom"]["values"]["kernelModules"] == []
    assert pools["custom"]["values"]["gpus"] == [{"name": "nvidia.com/AD102GL_L40S"}] * 2
    assert "siderolabs/nvidia-open-gpu-kernel-modules-lts" in pools["custom"]["extensions"]


def test_cluster_schema_accepts_the_example() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    result = run("schema", "cluster")
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    document = yaml.safe_load(EXAMPLE.read_text())
    jsonschema.validate(document, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**document, "pools": [{"name": "x", "minReplica": 1}]}, schema)


def test_nvidia_pool_without_its_modules_gets_a_note(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        "cluster: demo\ncozystack: {version: osimage}\ntalos: {version: v1.13.9}\npools:\n"
        "  - {name: gpu, profile: kubevirt-l40s, kernelModules: []}\n"
        "  - {name: part, profile: kubevirt-l40s, kernelModules: [{name: nvidia}]}\n"
        "  - {name: cpu, profile: kubevirt-cpu, kernelModules: []}\n"
    )
    result = run("generate", str(cluster), "--format", "values")
    assert result.exit_code == 0, result.stderr
    lines = result.stderr.splitlines()
    notes = [line for line in lines if "does not load" in line]
    assert len(notes) == 2
    assert notes[0] == (
        f'talos-schematic: note: {cluster}: pool "gpu": kernelModules [] does not load '
        "nvidia, nvidia_uvm, nvidia_drm, nvidia_modeset"
    )
    assert lines[lines.index(notes[0]) + 1] == (
        "  fix: list them in kernelModules, or load them on the node another way "
        "(talos-schematic explain TS121)"
    )
    assert (
        'pool "part": kernelModules as listed does not load nvidia_uvm, nvidia_drm, ' in (notes[1])
    )
    assert "note:" not in result.stdout


def test_cluster_file_opt_ins_reach_the_machine_config(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        "cluster: c\ntalos: {version: v1.13.9}\nnvidia: {peermem: true}\npools:\n"
        "  - {name: b200, profile: metal-hgx-b200-8x}\n"
        "  - {name: h100, profile: metal-hgx-h100-8x, nvidia: {peermem: false}}\n"
    )
    patches = []
    for pool in ("b200", "h100"):
        result = run("generate", str(cluster), "--format", "machine-config", "--pool", pool)
        assert result.exit_code == 0, result.stderr
        patches += [d for d in yaml.safe_load_all(result.stdout) if d]
    modules = [[m["name"] for m in d["machine"]["kernel"]["modules"]] for d in patches]
    assert [m for m in modules if "nvidia_peermem" in m] == [
        ["nvidia", "nvidia_uvm", "nvidia_drm", "nvidia_modeset", "nvidia_peermem", "ib_umad"]
    ]
    assert ["nvidia", "nvidia_uvm", "nvidia_drm", "nvidia_modeset"] in modules


def test_cluster_file_gds_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        "cluster: c\ntalos: {version: v1.13.9}\npools:\n"
        "  - {name: b200, profile: metal-hgx-b200-8x, nvidia: {gds: true}}\n"
    )
    out = tmp_path / "out"
    result = run("generate", str(cluster), "--out", str(out))
    assert result.exit_code == 1
    assert result.stderr.startswith(f'talos-schematic: {cluster}:4: pool "b200": GPUDirect Storage')
    assert "Traceback" not in result.stderr
    assert not out.exists()


def test_index_records_each_pools_nvidia_decision(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run("generate", str(EXAMPLE), "--out", str(out)).exit_code == 0
    index = yaml.safe_load((out / "index.yaml").read_text())
    decisions = {pool["name"]: pool["nvidia"] for pool in index["pools"]}
    assert decisions["cpu"] is None
    assert (decisions["v100"]["flavour"], decisions["v100"]["tier"]) == ("proprietary", "lts")
    assert decisions["rtx6000"]["driverBranch"] == 595
    assert decisions["rtx6000"]["reasons"]
    # The index stays the tool's own: check reads it back and finds nothing to change.
    assert run("check", str(EXAMPLE), "--out", str(out)).exit_code == 0


@pytest.mark.parametrize("kind", ["values", "cozystack"])
def test_a_pools_own_talos_settings_are_written_in_the_one_talos_key(
    tmp_path: Path, kind: str
) -> None:
    # The pool's talos mapping joins the tool's talos values: a second `talos:` key would be a
    # duplicate key, which YAML parsers reject or resolve by keeping either one.
    cluster = tmp_path / "c.yaml"
    cluster.write_text(
        "cluster: c\nnamespace: tenant-c\ncozystack: {version: osimage}\n"
        "talos: {version: v1.13.9}\n"
        "pools:\n"
        "  - name: a\n    profile: kubevirt-cpu\n"
        "    talos: {registryMirrors: {docker.io: {endpoints: ['https://m.example']}}}\n"
    )
    result = run("generate", str(cluster), "-f", kind)
    assert result.exit_code == 0, result.stderr
    assert sum(line.strip() == "talos:" for line in result.stdout.splitlines()) == 1
    document = yaml.safe_load(result.stdout)
    talos = (document["spec"] if kind == "cozystack" else document)["talos"]
    assert talos["registryMirrors"] == {"docker.io": {"endpoints": ["https://m.example"]}}
    assert (
        talos["schematicID"] == document.get("spec", document)["osImage"]["factory"]["schematicID"]
    )
