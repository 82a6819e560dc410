"""The shipped CI recipes (examples/ci/): the Renovate regex finds talos.version in cluster
files and only there, and the workflow scripts run as written against a real git history."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from schematic.inputs.cluster_file import parse_cluster

ROOT = Path(__file__).resolve().parents[1]
CI = ROOT / "examples" / "ci"
EXAMPLE = ROOT / "examples" / "cluster.yaml"
BIN = Path(sys.executable).parent


def renovate() -> dict[str, Any]:
    config: dict[str, Any] = json.loads((CI / "renovate.json").read_text("utf-8"))
    return config


def manager() -> dict[str, Any]:
    (only,) = renovate()["customManagers"]
    assert only["customType"] == "regex"
    return dict(only)


def python_pattern(renovate_regex: str) -> re.Pattern[str]:
    """A Renovate (ECMAScript / RE2) regex as Python's re: named groups ``(?<name>...)``
    become ``(?P<name>...)``; lookbehinds, which RE2 lacks, must not be there at all."""
    assert "(?<=" not in renovate_regex and "(?<!" not in renovate_regex
    return re.compile(re.sub(r"\(\?<([A-Za-z_][A-Za-z0-9_]*)>", r"(?P<\1>", renovate_regex))


def current_values(text: str) -> list[tuple[str, tuple[int, int]]]:
    """(currentValue, its span) for every match of every matchString, as Renovate collects."""
    found = []
    for pattern in map(python_pattern, manager()["matchStrings"]):
        found += [(m["currentValue"], m.span("currentValue")) for m in pattern.finditer(text)]
    return found


def renovate_bump(text: str, new: str) -> str:
    """What Renovate writes: currentValue replaced by the new value, in place."""
    (_, (start, end)), *rest = current_values(text)
    assert not rest
    return text[:start] + new + text[end:]


# --- Renovate -------------------------------------------------------------------------------


def test_the_regex_finds_the_shipped_examples_talos_version_once() -> None:
    text = EXAMPLE.read_text("utf-8")
    assert [value for value, _ in current_values(text)] == ["1.13.9"]
    bumped = renovate_bump(text, "1.14.0")
    assert parse_cluster(bumped, "cluster.yaml").talos.version == "v1.14.0"
    # Only the version changed.
    assert bumped.replace("v1.14.0", "v1.13.9") == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cluster: a\ntalos:\n  version: v1.12.6\npools: []\n", ["1.12.6"]),
        ("cluster: a\ntalos:\n  version: 'v1.12.6'\n", ["1.12.6"]),
        ('talos:\n  version: "v1.12.6"  # pinned\n', ["1.12.6"]),
        (
            "talos:\n\n  # the release\n  imageFactoryURL: https://f\n  version: v1.12.6\n",
            ["1.12.6"],
        ),
        ("talos: {version: v1.12.6}\npools: []\n", ["1.12.6"]),
        ("talos: {imageFactoryURL: 'https://f', version: v1.12.6}\n", ["1.12.6"]),
        # Pre-releases are not what the factory's releases look like after extractVersion.
        ("talos:\n  version: v1.14.0-rc.1\n", []),
    ],
)
def test_the_regex_on_cluster_file_shapes(text: str, expected: list[str]) -> None:
    assert [value for value, _ in current_values(text)] == expected


def test_the_regex_leaves_other_version_keys_alone() -> None:
    text = """\
cluster: a
pools:
  - name: gpu
    profile: kubevirt-l4
    talos:
      registryMirrors:
        docker.io: {endpoints: ["https://mirror.example"]}
    version: v1.33.2
talos:
  imageFactoryURL: https://factory.talos.dev
cozystack:
  version: v1.6.2
"""
    assert current_values(text) == []


def test_file_patterns_pick_cluster_files() -> None:
    patterns = manager()["managerFilePatterns"]
    assert all(p.startswith("/") and p.endswith("/") for p in patterns)
    compiled = [python_pattern(p[1:-1]) for p in patterns]

    def picked(path: str) -> bool:
        return any(pattern.search(path) for pattern in compiled)

    assert picked("examples/cluster.yaml")
    assert picked("clusters/prod.yaml")
    assert picked("gitops/clusters/ml.yml")
    assert not picked("deploy/mycluster/index.yaml")
    assert not picked("deploy/mycluster/gpu/values.yaml")


def test_the_datasource_is_the_factorys_versions_and_releases_only() -> None:
    config = renovate()
    only = manager()
    name = only["datasourceTemplate"].removeprefix("custom.")
    source = config["customDatasources"][name]
    assert source["defaultRegistryUrlTemplate"] == "https://factory.talos.dev/versions"
    extract = python_pattern(only["extractVersionTemplate"])
    release = extract.fullmatch("v1.14.0")
    assert release is not None and release["version"] == "1.14.0"
    assert not extract.fullmatch("v1.14.0-alpha.2")
    assert all(rule["automerge"] is False for rule in config["packageRules"])


# --- the workflows --------------------------------------------------------------------------


def github_steps() -> dict[str, dict[str, Any]]:
    workflow = yaml.safe_load((CI / "github-actions.yml").read_text("utf-8"))
    (job,) = workflow["jobs"].values()
    return {step.get("id", step.get("name", "")): step for step in job["steps"]}


def test_github_workflow_runs_check_and_upgrade_on_cluster_file_changes() -> None:
    workflow = yaml.safe_load((CI / "github-actions.yml").read_text("utf-8"))
    # PyYAML reads the key `on` as True (YAML 1.1); GitHub reads it as "on".
    trigger = workflow.get("on", workflow.get(True))
    (job,) = workflow["jobs"].values()
    assert job["env"]["CLUSTER"] in trigger["pull_request"]["paths"]
    steps = github_steps()
    assert "talos-schematic check" in steps["check"]["run"]
    assert "--diff" in steps["check"]["run"]
    assert "--format markdown" in steps["upgrade"]["run"]
    assert workflow["permissions"]["pull-requests"] == "write"


def test_gitlab_job_runs_check_and_upgrade_on_merge_requests() -> None:
    config = yaml.safe_load((CI / "gitlab-ci.yml").read_text("utf-8"))
    job = config["talos-schematic"]
    (rule,) = job["rules"]
    assert "merge_request_event" in rule["if"]
    assert job["variables"]["CLUSTER"] in rule["changes"]
    script = "\n".join(job["script"])
    assert "talos-schematic check" in script and "--diff" in script
    assert "--format markdown" in script


def scripts() -> list[str]:
    runs = [step["run"] for step in github_steps().values() if "run" in step]
    gitlab = yaml.safe_load((CI / "gitlab-ci.yml").read_text("utf-8"))["talos-schematic"]
    return [*runs, *gitlab["script"], *gitlab["before_script"]]


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_every_script_is_valid_bash() -> None:
    for script in scripts():
        done = subprocess.run(
            ["bash", "-n"], input=script, text=True, capture_output=True, check=False
        )
        assert done.returncode == 0, (script, done.stderr)


def test_both_recipes_install_a_pinned_source_no_index_is_needed_for() -> None:
    """No package index serves talos-schematic: each recipe installs what TALOS_SCHEMATIC
    names, a tag of a git repository (pip's ``name @ git+URL@REF`` form) or a wheel file."""
    workflow = yaml.safe_load((CI / "github-actions.yml").read_text("utf-8"))
    (job,) = workflow["jobs"].values()
    gitlab = yaml.safe_load((CI / "gitlab-ci.yml").read_text("utf-8"))["talos-schematic"]
    pinned = re.compile(r"talos-schematic @ git\+\S+@v\d+\.\d+\.\d+|\S+\.whl")
    for variables, commands in (
        (job["env"], [step.get("run", "") for step in job["steps"]]),
        (gitlab["variables"], gitlab["before_script"]),
    ):
        assert pinned.fullmatch(variables["TALOS_SCHEMATIC"])
        installs = [c for c in commands if "pip install" in c]
        assert installs == ['python -m pip install "$TALOS_SCHEMATIC"']


BASE_CLUSTER = """\
cluster: mycluster
namespace: tenant-mycluster
cozystack:
  version: osimage
talos:
  version: v1.12.6
pools:
  - name: v100
    profile: kubevirt-v100-pcie-16gb
    nvidia: {tier: production}
  - name: cpu
    profile: kubevirt-cpu
"""


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.test", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def pull_request(tmp_path: Path) -> Path:
    """A GitOps checkout: main holds BASE_CLUSTER with its output; the PR bumps talos.version
    the way Renovate does (Renovate does not regenerate, and here generate could not: the
    Volta pool does not plan on v1.13.9)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    origin, repo = tmp_path / "origin.git", tmp_path / "repo"
    git(tmp_path, "init", "--quiet", "--bare", "-b", "main", str(origin))
    git(tmp_path, "clone", "--quiet", str(origin), str(repo))
    (repo / "clusters").mkdir()
    cluster = repo / "clusters" / "mycluster.yaml"
    cluster.write_text(BASE_CLUSTER)
    generate = [str(BIN / "talos-schematic"), "generate", str(cluster), "--out"]
    subprocess.run([*generate, str(repo / "deploy" / "mycluster")], check=True, capture_output=True)
    git(repo, "checkout", "--quiet", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "base")
    git(repo, "push", "--quiet", "origin", "main")
    git(repo, "checkout", "--quiet", "-b", "renovate/talos")
    cluster.write_text(renovate_bump(BASE_CLUSTER, "1.13.9"))
    git(repo, "commit", "--quiet", "-am", "bump")
    return repo


def environment(**extra: str) -> dict[str, str]:
    path = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, "PATH": path, **extra}


def test_the_github_upgrade_step_reports_the_breaking_pool(
    pull_request: Path, tmp_path: Path
) -> None:
    step = github_steps()["upgrade"]
    job_env = yaml.safe_load((CI / "github-actions.yml").read_text("utf-8"))["jobs"]["plan"]
    outputs, summary = tmp_path / "outputs", tmp_path / "summary.md"
    done = subprocess.run(
        ["bash", "-e", "-c", step["run"]],
        cwd=pull_request,
        env=environment(
            CLUSTER=job_env["env"]["CLUSTER"],
            BASE_REF="main",
            RUNNER_TEMP=str(tmp_path),
            GITHUB_OUTPUT=str(outputs),
            GITHUB_STEP_SUMMARY=str(summary),
        ),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "status=3" in outputs.read_text().splitlines()
    report = summary.read_text()
    assert report.startswith("### Talos v1.12.6 → v1.13.9 for `mycluster`")
    assert "| `v100` | **BREAKS** |" in report
    assert "pin nvidia.tier: lts on this pool" in report


def test_the_gitlab_script_checks_and_fails_on_the_breaking_pool(pull_request: Path) -> None:
    job = yaml.safe_load((CI / "gitlab-ci.yml").read_text("utf-8"))["talos-schematic"]
    done = subprocess.run(
        ["bash", "-e", "-c", "\n".join(job["script"])],
        cwd=pull_request,
        env=environment(
            **job["variables"],
            CI_MERGE_REQUEST_TARGET_BRANCH_NAME="main",
            TALOS_SCHEMATIC_NOTE_TOKEN="",
        ),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    # check cannot plan the bumped file: it says why, and the report still follows.
    assert 'pool "v100": tier production on Talos v1.13.9 cannot drive' in done.stderr
    assert "| `cpu` | changes |" in done.stdout
    assert (pull_request / "upgrade.md").read_text().count("\n| `") == 2
