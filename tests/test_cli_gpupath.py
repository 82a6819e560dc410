"""`generate` / `check` / `lint` on the GPU path's files: addons, platform values, smoke tests."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner, Result

from schematic.cli import app, register_all_commands

register_all_commands()
runner = CliRunner()

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "cluster.yaml"
GPU_FILES = [
    "cluster/kubernetes-addons.yaml",
    "management/platform-gpu-values.yaml",
    "rtx6000/smoke-test.yaml",
    "l40s/smoke-test.yaml",
    "v100/smoke-test.yaml",
]


def run(*args: str) -> Result:
    return runner.invoke(app, list(args))


def generated(tmp_path: Path, *args: str) -> Path:
    out = tmp_path / "out"
    result = run("generate", str(EXAMPLE), "--out", str(out), *args)
    assert result.exit_code == 0, result.stderr
    return out


def test_out_holds_the_gpu_path_and_index_lists_it(tmp_path: Path) -> None:
    out = generated(tmp_path)
    for name in GPU_FILES:
        assert (out / name).is_file(), name
    assert not (out / "cpu" / "smoke-test.yaml").exists()
    index = yaml.safe_load((out / "index.yaml").read_text())
    assert set(GPU_FILES) <= set(index["files"])
    addons = yaml.safe_load((out / "cluster" / "kubernetes-addons.yaml").read_text())
    # The example's GPU pools run Talos 1.13.9 on Cozystack's GPU Operator v26.3.1: Talos's own
    # operator shape, with no env list to restate.
    assert addons["spec"]["addons"]["gpuOperator"]["valuesOverride"]["gpu-operator"] == {
        "driver": {"enabled": False},
        "toolkit": {"enabled": False},
        "hostPaths": {"driverInstallDir": "/usr/local"},
    }
    platform = yaml.safe_load((out / "management" / "platform-gpu-values.yaml").read_text())
    entries = platform["gpu"]["permittedHostDevices"]["pciHostDevices"]
    assert [entry["pciVendorSelector"] for entry in entries] == ["10DE:2BB5"]
    pod = yaml.safe_load((out / "l40s" / "smoke-test.yaml").read_text())
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 2}


def test_lint_on_the_generated_output_finds_nothing(tmp_path: Path) -> None:
    out = generated(tmp_path)
    result = run("lint", str(out))
    assert result.exit_code == 0, result.stdout
    assert result.stdout == ""
    assert "0 errors, 0 warnings, 0 notes" in result.stderr


def _with_one_env_var(addons: dict[str, Any]) -> dict[str, Any]:
    """The operator back at its default driver path (the CDI shape), with one variable."""
    operator = addons["spec"]["addons"]["gpuOperator"]["valuesOverride"]["gpu-operator"]
    del operator["hostPaths"]
    operator["devicePlugin"] = {"env": [{"name": "MY_EXTRA", "value": "1"}]}
    return addons


def test_lint_on_an_override_that_adds_one_variable_reports_ts140(tmp_path: Path) -> None:
    out = generated(tmp_path)
    path = out / "cluster" / "kubernetes-addons.yaml"
    path.write_text(yaml.safe_dump(_with_one_env_var(yaml.safe_load(path.read_text()))))
    result = run("lint", str(out), "--format", "json")
    assert result.exit_code == 3
    codes = [finding["code"] for finding in yaml.safe_load(result.stdout)["findings"]]
    assert codes == ["TS140"]


def test_check_covers_the_gpu_path_files(tmp_path: Path) -> None:
    out = generated(tmp_path)
    assert run("check", str(EXAMPLE), "--out", str(out)).exit_code == 0
    (out / "management" / "platform-gpu-values.yaml").unlink()
    (out / "v100" / "smoke-test.yaml").write_text("changed\n")
    result = run("check", str(EXAMPLE), "--out", str(out))
    assert result.exit_code == 3
    assert "missing: management/platform-gpu-values.yaml" in result.stderr
    assert "changed: v100/smoke-test.yaml" in result.stderr


def test_manifests_only_write_the_same_merge_patch(tmp_path: Path) -> None:
    out = generated(tmp_path, "--format", "cozystack")
    document = yaml.safe_load((out / "cluster" / "kubernetes-addons.yaml").read_text())
    assert list(document) == ["spec"]
    assert document["spec"]["addons"]["gpuOperator"]["enabled"] is True
    assert not (out / "management").exists()
    assert run("check", str(EXAMPLE), "--out", str(out)).exit_code == 0


def test_stdout_carries_each_kind() -> None:
    addons = run("generate", str(EXAMPLE), "-f", "addons")
    assert addons.exit_code == 0, addons.stderr
    assert yaml.safe_load(addons.stdout)["spec"]["addons"]["gpuOperator"]["enabled"] is True
    platform = run("generate", str(EXAMPLE), "-f", "platform")
    assert "pciHostDevices" in yaml.safe_load(platform.stdout)["gpu"]["permittedHostDevices"]
    pods = list(yaml.safe_load_all(run("generate", str(EXAMPLE), "-f", "smoke-test").stdout))
    assert [pod["metadata"]["name"] for pod in pods] == [
        "gpu-smoke-test-rtx6000",
        "gpu-smoke-test-l40s",
        "gpu-smoke-test-v100",
    ]


PASSTHROUGH_NOTE = "the management cluster's default passthrough list does not permit"


def test_a_run_without_the_platform_values_says_which_gpus_they_would_permit(
    tmp_path: Path,
) -> None:
    printed = run("generate", str(EXAMPLE))
    assert printed.exit_code == 0, printed.stderr
    lines = printed.stderr.splitlines()
    notes = [at for at, line in enumerate(lines) if PASSTHROUGH_NOTE in line]
    assert len(notes) == 1
    note, fix = lines[notes[0]], lines[notes[0] + 1]
    assert "10de:2bb5" in note and "pool rtx6000" in note
    # The permitted ones are not named.
    assert "10de:26b9" not in note and "10de:1db4" not in note
    assert fix.startswith("  fix: permit them in the platform values (generate -f platform")
    manifests_only = run("generate", str(EXAMPLE), "--out", str(tmp_path / "a"), "-f", "cozystack")
    assert PASSTHROUGH_NOTE in manifests_only.stderr
    # Where the platform values are the output, they say it themselves.
    assert PASSTHROUGH_NOTE not in run("generate", str(EXAMPLE), "-f", "platform").stderr
    assert (
        PASSTHROUGH_NOTE not in run("generate", str(EXAMPLE), "--out", str(tmp_path / "b")).stderr
    )
    # A directory that holds them from an earlier run carries them: -f cozystack there is fine.
    again = run("generate", str(EXAMPLE), "--out", str(tmp_path / "b"), "-f", "cozystack")
    assert again.exit_code == 0, again.stderr
    assert PASSTHROUGH_NOTE not in again.stderr


def test_the_passthrough_note_names_a_few_pools_and_counts_the_rest(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    pools = "".join(
        f"  - {{name: g{index}, profile: rtx-pro-6000-blackwell-server}}\n" for index in range(5)
    )
    cluster.write_text(
        "cluster: c\nnamespace: tenant-c\ncozystack: {version: osimage}\n"
        f"talos: {{version: v1.13.9}}\npools:\n{pools}"
    )
    result = run("generate", str(cluster), "-f", "values")
    assert result.exit_code == 0, result.stderr
    assert "in pools g0, g1, g2 and 2 more:" in result.stderr


def test_nothing_missing_means_no_platform_file(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        textwrap.dedent(
            """\
            cluster: c
            namespace: tenant-c
            cozystack: {version: osimage}
            talos: {version: v1.13.9}
            pools:
              - {name: gpu, profile: kubevirt-l40s}
            """
        )
    )
    out = tmp_path / "out"
    assert run("generate", str(cluster), "--out", str(out)).exit_code == 0
    assert not (out / "management").exists()
    assert (out / "cluster" / "kubernetes-addons.yaml").is_file()
    assert PASSTHROUGH_NOTE not in run("generate", str(cluster)).stderr
    stdout = run("generate", str(cluster), "-f", "platform").stdout
    assert stdout.startswith("#") and yaml.safe_load(stdout) is None


def test_a_cpu_only_cluster_gets_no_gpu_files(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        "cluster: c\nnamespace: tenant-c\ncozystack: {version: osimage}\n"
        "talos: {version: v1.13.9}\npools:\n  - {name: cpu, profile: kubevirt-cpu}\n"
    )
    out = tmp_path / "out"
    assert run("generate", str(cluster), "--out", str(out)).exit_code == 0
    assert not (out / "cluster").exists() and not (out / "management").exists()
    files = yaml.safe_load((out / "index.yaml").read_text())["files"]
    assert not any(name.startswith(("cluster/", "management/")) for name in files)


def test_gpu_files_are_the_tools_own_and_go_when_no_longer_needed(tmp_path: Path) -> None:
    from schematic.output.outdir import read_index

    out = generated(tmp_path)
    index = read_index(out)
    assert index is not None and set(GPU_FILES) <= set(index.files)
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        "cluster: mycluster\nnamespace: tenant-ml\ncozystack: {version: osimage}\n"
        "talos: {version: v1.13.9}\npools:\n"
        "  - {name: l40s, profile: kubevirt-l40s}\n"
    )
    result = run("generate", str(cluster), "--out", str(out))
    assert result.exit_code == 0, result.stderr
    assert not (out / "management" / "platform-gpu-values.yaml").exists()
    assert not (out / "rtx6000" / "smoke-test.yaml").exists()
    assert (out / "l40s" / "smoke-test.yaml").is_file()


def _hami_cluster(tmp_path: Path, hami: str) -> Path:
    cluster = tmp_path / "hami.yaml"
    text = EXAMPLE.read_text().replace("nvidia:\n", f"addons:\n  hami: {hami}\nnvidia:\n", 1)
    cluster.write_text(text)
    return cluster


def test_generate_refuses_hami_on_talos_gpu_pools(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run("generate", str(_hami_cluster(tmp_path, "{enabled: true}")), "--out", str(out))
    assert result.exit_code == 1
    assert "addons.hami.enabled: refused for the Talos GPU pools" in result.stderr
    assert "Traceback" not in result.stderr and not out.exists()


def test_forced_hami_is_written_with_a_warning(tmp_path: Path) -> None:
    cluster = _hami_cluster(tmp_path, "{enabled: true, force: true}")
    result = run("generate", str(cluster), "-f", "addons")
    assert result.exit_code == 0, result.stderr
    assert "warning:" in result.stderr and "addons.hami.force" in result.stderr
    addons = yaml.safe_load(result.stdout)["spec"]["addons"]
    assert addons["hami"] == {"enabled": True}
    # The chart refuses HAMi without the GPU Operator addon: only its device plugin goes off.
    assert addons["gpuOperator"]["enabled"] is True
    assert addons["gpuOperator"]["valuesOverride"]["gpu-operator"]["devicePlugin"]["enabled"] is (
        False
    )


def test_lint_cozystack_option(tmp_path: Path) -> None:
    out = generated(tmp_path)
    assert run("lint", str(out), "--cozystack", "pr3585").exit_code == 0
    bad = run("lint", str(out), "--cozystack", "v0.1")
    assert bad.exit_code == 2 and "--cozystack" in bad.stderr
