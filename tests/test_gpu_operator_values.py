"""NVIDIA's GPU Operator for GPU pools outside Cozystack: ``cluster/gpu-operator-values.yaml``
and its ``APPLY.md`` step, held to the operator's own keys, to ``lint`` and to helm's flags."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import apply_md
import pytest
import yaml
from real_tools import HELM
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands
from schematic.inputs.cluster_file import parse_cluster
from schematic.output.render.kinds import OPERATOR_VALUES_FILE
from schematic.plan.cluster import ClusterPlan, plan_cluster
from schematic.plan.gpupath import (
    operator_release,
    operator_values,
    standalone_operator,
    talos_upstream_values,
)

register_all_commands()
runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]

# The key paths of NVIDIA/gpu-operator's chart the values may use, read at tag v26.3.1 (commit
# 5a25fef4572b2b36e32ebcacd482b586e467dc2d): deployments/gpu-operator/values.yaml, and
# templates/clusterpolicy.yaml for validator.driver.env (read there, not listed in values.yaml).
CHART_KEYS = frozenset(
    {
        ("driver", "enabled"),
        ("toolkit", "enabled"),
        ("hostPaths", "driverInstallDir"),
        ("devicePlugin", "enabled"),
        ("devicePlugin", "env"),
        ("validator", "driver", "env"),
        ("cdi", "enabled"),
    }
)
# Its chart name (deployments/gpu-operator/Chart.yaml) and Helm repository (README.md).
CHART = "gpu-operator"
REPOSITORY = "https://helm.ngc.nvidia.com/nvidia"


def cluster_text(talos: str, *pools: str) -> str:
    lines = [f"  - {{name: {name}, profile: {profile}}}" for name, profile in map(str.split, pools)]
    return f"cluster: ml\ntalos: {{version: {talos}}}\npools:\n" + "\n".join(lines) + "\n"


def leaf_paths(value: Any, path: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """Each key path down to a value that is not a mapping (a list is a value: helm replaces it)."""
    if not isinstance(value, dict):
        return {path}
    return {leaf for key, item in value.items() for leaf in leaf_paths(item, (*path, key))}


def generate(tmp_path: Path, text: str) -> Path:
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "c.yaml").write_text(text)
    out = tmp_path / "d"
    result = runner.invoke(app, ["generate", str(tmp_path / "c.yaml"), "--out", str(out)])
    assert result.exit_code == 0, result.stderr
    return out


def plan_of(folder: Path) -> ClusterPlan:
    return plan_cluster(parse_cluster((folder / "c.yaml").read_text(), "c.yaml"), source="c.yaml")


def plan_commands(out: Path) -> list[str]:
    return apply_md.commands((out / "APPLY.md").read_text())


@pytest.mark.parametrize(
    ("talos", "shape"),
    [("v1.14.0", "hostPaths"), ("v1.12.6", "devicePlugin")],
    ids=["talos-own-shape", "cdi-env-lists"],
)
def test_the_values_use_only_the_operators_keys_and_turn_its_driver_off(
    tmp_path: Path, talos: str, shape: str
) -> None:
    out = generate(tmp_path, cluster_text(talos, "gpu metal-hgx-b200-8x", "cpu metal-intel"))
    values = yaml.safe_load((out / OPERATOR_VALUES_FILE).read_text())
    assert leaf_paths(values) <= CHART_KEYS
    assert values["driver"] == {"enabled": False} and values["toolkit"] == {"enabled": False}
    assert shape in values
    # The same values the tenant addon writes for an operator release that sets nothing itself.
    operator = standalone_operator(plan_of(tmp_path))
    assert operator is not None and values == operator.values
    if shape == "hostPaths":
        assert values == talos_upstream_values()
    else:
        expected = operator_values(operator_release(), upstream=False)["gpu-operator"]
        assert values["devicePlugin"]["env"] == expected["devicePlugin"]["env"]
    # Nothing of a Cozystack tenant in it.
    assert "gpu-operator:" not in (out / OPERATOR_VALUES_FILE).read_text()


def test_no_file_and_no_step_without_a_gpu_pool_outside_cozystack(tmp_path: Path) -> None:
    out = generate(tmp_path, cluster_text("v1.14.0", "cpu metal-intel"))
    assert not (out / OPERATOR_VALUES_FILE).exists()
    assert not [line for line in plan_commands(out) if line.startswith("helm")]
    tenant = (
        "cluster: ml\nnamespace: tenant-ml\ncozystack: {version: osimage}\n"
        "talos: {version: v1.14.0}\npools:\n"
        "  - {name: gpu, profile: kubevirt-rtx-pro-6000-blackwell-server}\n"
    )
    out = generate(tmp_path / "tenant", tenant)
    assert not (out / OPERATOR_VALUES_FILE).exists()
    assert (out / "cluster" / "kubernetes-addons.yaml").exists()


def test_lint_reads_the_file_and_finds_nothing_until_the_driver_is_turned_on(
    tmp_path: Path,
) -> None:
    out = generate(tmp_path, cluster_text("v1.14.0", "gpu metal-hgx-b200-8x"))
    clean = runner.invoke(app, ["lint", str(out), "--format", "json"])
    assert clean.exit_code == 0, clean.output
    assert '"TS14' not in clean.stdout
    path = out / OPERATOR_VALUES_FILE
    path.write_text(path.read_text().replace("enabled: false", "enabled: true", 1))
    broken = runner.invoke(app, ["lint", str(out)])
    assert "TS141" in broken.stdout and OPERATOR_VALUES_FILE in broken.stdout
    assert "driver.enabled: true" in broken.stdout


def test_a_values_file_of_another_tool_is_not_read_as_the_operators(tmp_path: Path) -> None:
    # A look-alike: some other chart's driver settings, enabled and with no toolkit.
    (tmp_path / "values.yaml").write_text("driver:\n  enabled: true\n  toolkit: on\n")
    result = runner.invoke(app, ["lint", str(tmp_path / "values.yaml")])
    # Nothing lint checks is in it: no finding, and "nothing checked" (exit 4), not a pass.
    assert result.exit_code == 4 and "TS141" not in result.stdout


def test_the_helm_steps_name_the_repository_chart_version_and_file(tmp_path: Path) -> None:
    out = generate(tmp_path, cluster_text("v1.14.0", "gpu metal-hgx-b200-8x"))
    commands = plan_commands(out)
    helm = [shlex.split(line) for line in commands if line.startswith("helm ")]
    assert helm[0] == ["helm", "repo", "add", "nvidia", REPOSITORY]
    install = helm[-1]
    assert install[:5] == ["helm", "upgrade", "--install", CHART, f"nvidia/{CHART}"]
    # helm's switches take no value; every other flag takes the word after it.
    switches = {"--create-namespace"}
    flags: dict[str, str] = {}
    words = iter(install[5:])
    for word in words:
        assert word.startswith("-"), install
        flags[word] = "" if word in switches else next(words)
    assert "--create-namespace" in flags
    operator = standalone_operator(plan_of(tmp_path))
    assert operator is not None
    assert flags["-n"] == "gpu-operator" and flags["--version"] == operator.operator
    assert flags["-f"] == OPERATOR_VALUES_FILE and (out / flags["-f"]).is_file()
    # The namespace is labelled privileged before helm installs into it.
    label = commands.index(
        "kubectl label namespace gpu-operator pod-security.kubernetes.io/enforce=privileged "
        "--overwrite"
    )
    assert label < commands.index(shlex.join(install))


@HELM.needed
def test_every_helm_flag_of_the_plan_is_one_helm_documents(tmp_path: Path) -> None:
    out = generate(tmp_path, cluster_text("v1.14.0", "gpu metal-hgx-b200-8x"))
    helm = [shlex.split(line) for line in plan_commands(out) if line.startswith("helm ")]
    assert helm
    env = dict(os.environ, HOME=str(tmp_path), HELM_CONFIG_HOME=str(tmp_path / "helm"))
    for words in helm:
        verbs = [word for word in words[1:3] if not word.startswith("-")]
        done = subprocess.run(
            [str(HELM.path), *verbs, "--help"],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        documented = set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", done.stdout))
        for flag in (word.split("=")[0] for word in words if word.startswith("-")):
            assert flag in documented, (words, flag)


def test_printed_on_its_own_it_is_the_files_text(tmp_path: Path) -> None:
    out = generate(tmp_path, cluster_text("v1.14.0", "gpu metal-hgx-b200-8x"))
    printed = runner.invoke(app, ["generate", str(tmp_path / "c.yaml"), "-f", "gpu-operator"])
    assert printed.exit_code == 0, printed.stderr
    assert printed.stdout == (out / OPERATOR_VALUES_FILE).read_text()
    generate(tmp_path / "cpu", cluster_text("v1.14.0", "cpu metal-intel"))
    none = runner.invoke(app, ["generate", str(tmp_path / "cpu" / "c.yaml"), "-f", "gpu-operator"])
    assert none.exit_code == 0, none.stderr
    assert yaml.safe_load(none.stdout) is None and none.stdout.startswith("# no NVIDIA GPU pool")
