"""APPLY.md: every output directory says where each of its files goes and how it is applied."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from apply_md import commands
from typer.testing import CliRunner, Result

from schematic.cli import app, register_all_commands

register_all_commands()
runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "cluster.yaml"
BOOT_MEDIA = ROOT / "examples" / "boot-media.yaml"


def run(*args: str) -> Result:
    return runner.invoke(app, list(args))


def files_of(out: Path) -> set[str]:
    return {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}


def described(plan: str) -> list[str]:
    """The paths APPLY.md gives an entry to, in its order."""
    return re.findall(r"^- `([^`]+)`: ", plan, flags=re.MULTILINE)


@pytest.mark.parametrize(
    ("cluster", "formats"),
    [
        (EXAMPLE, ()),
        (EXAMPLE, ("helmrelease", "values", "smoke-test", "addons", "platform", "json")),
        (EXAMPLE, ("cozystack", "talhelper", "schematic")),
        (BOOT_MEDIA, ("machine-config", "urls", "talhelper", "omni", "terraform", "schematic")),
    ],
    ids=["default", "flux", "manifests-talhelper", "bare-metal"],
)
def test_every_file_written_has_one_entry_in_the_apply_plan(
    tmp_path: Path, cluster: Path, formats: tuple[str, ...]
) -> None:
    out = tmp_path / "out"
    args = [arg for kind in formats for arg in ("-f", kind)]
    result = run("generate", str(cluster), "--out", str(out), *args)
    assert result.exit_code == 0, result.stderr
    plan = (out / "APPLY.md").read_text()
    entries = described(plan)
    assert sorted(entries) == sorted(files_of(out)), "one entry per file, no other"
    assert len(entries) == len(set(entries))
    # Written and owned like every other file: in the index, with its digest; check agrees.
    index = yaml.safe_load((out / "index.yaml").read_text())
    assert "APPLY.md" in index["files"]
    assert run("check", str(cluster), "--out", str(out)).exit_code == 0


def test_the_plan_names_cluster_object_and_command_for_each_cozystack_file(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    assert run("generate", str(EXAMPLE), "--out", str(out)).exit_code == 0
    plan = (out / "APPLY.md").read_text()
    lines = commands(plan)
    # In the order they are applied: factory, platform, the tenant's app, the pools, the tenant.
    expected = [
        "talos-schematic register rtx6000/schematic.yaml l40s/schematic.yaml "
        "v100/schematic.yaml cpu/schematic.yaml",
        "kubectl edit packages.cozystack.io cozystack.cozystack-platform",
        "kubectl patch kuberneteses.apps.cozystack.io mycluster -n tenant-ml --type merge "
        "--patch-file cluster/kubernetes-addons.yaml",
        "kubectl apply -k .",
        "kubectl apply -n tenant-ml -f rtx6000/kubernetes-nodes.yaml",
    ]
    positions = [lines.index(line) for line in expected]
    assert positions == sorted(positions)
    assert "kubectl --kubeconfig TENANT_KUBECONFIG apply -f l40s/smoke-test.yaml" in lines
    assert lines.index("kubectl apply -k .") < lines.index(
        "kubectl --kubeconfig TENANT_KUBECONFIG apply -f l40s/smoke-test.yaml"
    )
    # The objects the commands act on are the ones in the files.
    nodes = yaml.safe_load((out / "v100" / "kubernetes-nodes.yaml").read_text())
    name, namespace = nodes["metadata"]["name"], nodes["metadata"]["namespace"]
    assert (
        f"- `v100/kubernetes-nodes.yaml`: `KubernetesNodes` `{name}` (namespace `{namespace}`)"
        in plan
    )
    # A tenant pool's patch is made by the chart: never a talosctl command for it.
    assert not [line for line in lines if line.startswith("talosctl")]
    assert "Cozystack management cluster: the platform Package" in plan
    assert "Cozystack tenant cluster: the smoke tests" in plan


def test_a_helmrelease_is_applied_in_place_of_the_object(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run("generate", str(EXAMPLE), "--out", str(out), "-f", "helmrelease", "-f", "values")
    assert result.exit_code == 0, result.stderr
    plan = (out / "APPLY.md").read_text()
    assert "kubectl apply -n tenant-ml -f rtx6000/helmrelease.yaml" in commands(plan)
    assert "Flux `HelmRelease` `kubernetes-nodes-mycluster-rtx6000`" in plan
    assert "the same values are in `rtx6000/helmrelease.yaml`" in plan
    assert "kubernetes-nodes.yaml" not in plan


def test_bare_metal_pools_are_applied_with_talosctl_and_other_tools(tmp_path: Path) -> None:
    out = tmp_path / "out"
    kinds = ("machine-config", "urls", "talhelper", "omni", "terraform")
    result = run(
        "generate", str(BOOT_MEDIA), "--out", str(out), *[a for k in kinds for a in ("-f", k)]
    )
    assert result.exit_code == 0, result.stderr
    plan = (out / "APPLY.md").read_text()
    lines = commands(plan)
    assert (
        "talosctl patch mc --nodes NODE[,NODE...] --patch @rpi/machine-config-patch.yaml" in lines
    )
    installer = yaml.safe_load((out / "rpi" / "urls.yaml").read_text())["installer"]
    assert f"talosctl upgrade --nodes NODE --image {installer}" in lines
    secure = yaml.safe_load((out / "secure" / "urls.yaml").read_text())["installerSecureBoot"]
    assert f"talosctl upgrade --nodes NODE --image {secure}" in lines
    assert "talhelper genconfig" in lines
    assert "omnictl cluster template sync --file CLUSTER_TEMPLATE.yaml" in lines
    assert "terraform apply" in lines
    # What must not appear: no pool here is a Cozystack object.
    assert "kubectl" not in plan
    assert "Management cluster" not in plan


def test_the_plan_describes_the_whole_directory_after_a_partial_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run("generate", str(EXAMPLE), "--out", str(out)).exit_code == 0
    full = (out / "APPLY.md").read_text()
    # -f urls rewrites only the URLs; the other files stay, and so do their entries.
    assert run("generate", str(EXAMPLE), "--out", str(out), "-f", "urls").exit_code == 0
    assert (out / "APPLY.md").read_text() == full
    # Adding a kind adds its entries beside the others.
    assert run("generate", str(EXAMPLE), "--out", str(out), "-f", "talhelper").exit_code == 0
    plan = (out / "APPLY.md").read_text()
    assert sorted(described(plan)) == sorted(files_of(out))
    assert "rtx6000/talhelper.yaml" in described(plan)
    assert run("check", str(EXAMPLE), "--out", str(out)).exit_code == 0


def test_an_edited_plan_is_drift_and_is_kept_like_any_file(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run("generate", str(EXAMPLE), "--out", str(out)).exit_code == 0
    (out / "APPLY.md").write_text("mine\n")
    drift = run("check", str(EXAMPLE), "--out", str(out))
    assert drift.exit_code == 3
    assert "changed: APPLY.md" in drift.stderr
    # Not replaced without --force: the run stops and changes nothing.
    refused = run("generate", str(EXAMPLE), "--out", str(out))
    assert refused.exit_code == 1
    assert (out / "APPLY.md").read_text() == "mine\n"
    assert run("generate", str(EXAMPLE), "--out", str(out), "--force").exit_code == 0
    assert (out / "APPLY.md").read_text().startswith("<!-- Generated by talos-schematic")


def test_a_removed_pool_leaves_the_plan(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    text = EXAMPLE.read_text()
    cluster.write_text(text)
    out = tmp_path / "out"
    assert run("generate", str(cluster), "--out", str(out)).exit_code == 0
    assert "v100/kubernetes-nodes.yaml" in described((out / "APPLY.md").read_text())
    start = text.index("  # Volta has no GSP")
    end = text.index("  # No GPU:")
    cluster.write_text(text[:start] + text[end:])
    assert run("generate", str(cluster), "--out", str(out)).exit_code == 0
    plan = (out / "APPLY.md").read_text()
    assert not [path for path in described(plan) if path.startswith("v100/")]
    assert sorted(described(plan)) == sorted(files_of(out))


def test_gpus_the_defaults_do_not_permit_are_named_when_their_values_are_not_here(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    assert run("generate", str(EXAMPLE), "--out", str(out), "-f", "cozystack").exit_code == 0
    plan = (out / "APPLY.md").read_text()
    # 10de:2bb5 is not in Cozystack's default list; L40S and V100 are.
    assert "Cozystack management cluster: the GPUs to permit first" in plan
    assert "10de:2bb5 (NVIDIA RTX PRO 6000 Blackwell Server Edition) (pools rtx6000)" in plan
    assert "10de:26b9" not in plan
    assert "talos-schematic generate CLUSTER_FILE --out . -f platform" in commands(plan)
    # Once the values are in the directory, the plan says where they go instead.
    assert run("generate", str(EXAMPLE), "--out", str(out), "-f", "platform").exit_code == 0
    plan = (out / "APPLY.md").read_text()
    assert "GPUs to permit first" not in plan
    assert "kubectl edit packages.cozystack.io cozystack.cozystack-platform" in commands(plan)


def test_a_factory_url_is_quoted_for_the_shell_in_the_commands(tmp_path: Path) -> None:
    # The URL is the cluster file's text: in a command it is one shell word, never run.
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        "cluster: c\ntalos:\n  version: v1.13.9\n"
        '  imageFactoryURL: "https://factory.example/a`id`$(id)"\n'
        "pools:\n  - {name: m, profile: metal-amd}\n"
    )
    out = tmp_path / "out"
    result = run("generate", str(cluster), "--out", str(out))
    assert result.exit_code == 0, result.stderr
    lines = commands((out / "APPLY.md").read_text())
    register = "talos-schematic register m/schematic.yaml --factory "
    assert f"{register}'https://factory.example/a`id`$(id)'" in lines
    assert not [line for line in lines if "`id`" in line and "'" not in line]


def test_the_getting_started_walk_is_the_plan_generate_writes(tmp_path: Path) -> None:
    # The guide's apply commands, for its own cluster file, are those of the APPLY.md that
    # generate writes for it: the walk cannot drift from the tool.
    guide = (ROOT / "docs" / "getting-started.md").read_text()
    cluster_text = re.search(r"<!-- run: file: cluster.yaml -->\n```yaml\n(.*?)```", guide, re.S)
    walk = re.search(
        r"<!-- run: skip: applies to a live Image Factory[^\n]*\n```sh\n(.*?)```", guide, re.S
    )
    assert cluster_text is not None and walk is not None
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(cluster_text[1])
    out = tmp_path / "deploy" / "mycluster"
    assert run("generate", str(cluster), "--out", str(out)).exit_code == 0
    planned = commands((out / "APPLY.md").read_text())
    shown = [
        line
        for line in walk[1].replace("\\\n", "").splitlines()
        if line.strip() and not line.startswith(("#", "cd "))
    ]
    assert shown
    for line in shown:
        assert " ".join(line.split()) in planned, line


def test_a_pool_run_rewrites_the_plan_and_names_the_pools_it_held_back(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    text = EXAMPLE.read_text()
    cluster.write_text(text)
    out = tmp_path / "out"
    assert run("generate", str(cluster), "--out", str(out)).exit_code == 0
    # l40s gains an extension: a new schematic, written by a --pool run.
    text = text.replace(
        "[siderolabs/iscsi-tools]", "[siderolabs/iscsi-tools, siderolabs/util-linux-tools]"
    )
    cluster.write_text(text)
    assert run("generate", str(cluster), "--out", str(out), "--pool", "l40s").exit_code == 0
    index = yaml.safe_load((out / "index.yaml").read_text())
    new_id = next(p["schematicID"] for p in index["pools"] if p["name"] == "l40s")
    plan = (out / "APPLY.md").read_text()
    assert new_id in plan and "Not regenerated" not in plan
    assert run("check", str(cluster), "--out", str(out)).exit_code == 0
    # cpu changes too, but only l40s is written again: the plan says cpu's files lag.
    cluster.write_text(
        text.replace(
            "    profile: kubevirt-cpu\n",
            "    profile: kubevirt-cpu\n    extensions: [siderolabs/iscsi-tools]\n",
        )
    )
    assert run("generate", str(cluster), "--out", str(out), "--pool", "l40s").exit_code == 0
    plan = (out / "APPLY.md").read_text()
    assert "**Not regenerated by the last run** (`generate --pool`): `cpu`. Their files" in plan
    assert run("check", str(cluster), "--out", str(out), "--pool", "l40s").exit_code == 0
    assert run("generate", str(cluster), "--out", str(out)).exit_code == 0
    assert "Not regenerated" not in (out / "APPLY.md").read_text()


# What only a Cozystack (KubeVirt) pool's output may say.
COZYSTACK_WORDS = re.compile(
    r"cozystack|kubevirt|kubernetesnodes|tenant|management cluster|kubernetes-addons|"
    r"osimage|chart|platform package",
    re.IGNORECASE,
)


def metal_cluster_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``c.yaml`` in ``tmp_path`` (the working directory): a GPU and a CPU bare-metal pool."""
    monkeypatch.chdir(tmp_path)
    made = run("init", "c.yaml", "--pool", "gpu=metal-hgx-b200-8x", "--pool", "cpu=metal-intel")
    assert made.exit_code == 0, made.stderr


def test_a_metal_only_cluster_gets_no_cozystack_file_step_or_word(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    metal_cluster_file(tmp_path, monkeypatch)
    said = run("generate", "c.yaml", "--out", "d")
    assert said.exit_code == 0, said.stderr
    out = tmp_path / "d"
    written = files_of(out)
    assert "gpu/machine-config-patch.yaml" in written and "gpu/smoke-test.yaml" in written
    # Of the cluster-wide files, only the GPU Operator's values (installed with helm).
    assert [path for path in written if path.startswith(("cluster/", "management/"))] == [
        "cluster/gpu-operator-values.yaml"
    ]
    assert "kustomization.yaml" not in written
    for path in written:
        text = (out / path).read_text()
        assert not COZYSTACK_WORDS.findall(text), path
    assert not COZYSTACK_WORDS.findall(said.stdout + said.stderr)
    # The plan's steps are talosctl's, and the smoke test's kubectl uses the cluster's own
    # kubeconfig; `check` agrees with the directory it recorded.
    lines = commands((out / "APPLY.md").read_text())
    patch = "talosctl patch mc --nodes NODE[,NODE...] --patch @gpu/machine-config-patch.yaml"
    assert patch in lines
    assert "kubectl apply -f gpu/smoke-test.yaml" in lines
    assert [line for line in lines if line.startswith("kubectl")] == [
        "kubectl create namespace gpu-operator --dry-run=client -o yaml | kubectl apply -f -",
        "kubectl label namespace gpu-operator pod-security.kubernetes.io/enforce=privileged "
        "--overwrite",
        "kubectl apply -f gpu/smoke-test.yaml",
        "kubectl logs -f pod/gpu-smoke-test-gpu",
    ]
    assert run("check", "c.yaml", "--out", "d").exit_code == 0
    # The other outputs of the same file say nothing of Cozystack either.
    for kind in ("talhelper", "omni", "terraform", "json", "machine-config", "smoke-test"):
        printed = run("generate", "c.yaml", "-f", kind, "--pool", "gpu")
        assert printed.exit_code == 0, (kind, printed.stderr)
        assert not COZYSTACK_WORDS.findall(printed.stdout + printed.stderr), kind


def test_an_upgrade_of_metal_pools_says_nothing_of_cozystack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    metal_cluster_file(tmp_path, monkeypatch)
    Path("c.yaml").write_text(Path("c.yaml").read_text().replace("v1.14.0", "v1.13.9"))
    report = run("upgrade", "c.yaml", "--to", "v1.14.0")
    assert report.exit_code in (0, 3), report.stderr
    assert "talosctl upgrade --nodes <node> --image" in report.stdout
    assert not COZYSTACK_WORDS.findall(report.stdout + report.stderr)
    assert "values gain" not in report.stdout


def test_the_operator_and_smoke_tests_come_after_every_tool_that_configures_nodes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    metal_cluster_file(tmp_path, monkeypatch)
    # A metal pool may be configured by topf or Omni instead of talosctl: the GPU Operator and
    # the smoke tests need its nodes up, so they follow every place's own steps.
    kinds = ["-f", "topf", "-f", "omni", "-f", "gpu-operator", "-f", "smoke-test"]
    assert run("generate", "c.yaml", "--out", "d", *kinds).exit_code == 0
    headings = [
        line.split(". ", 1)[1]
        for line in (tmp_path / "d" / "APPLY.md").read_text().splitlines()
        if line.startswith("## ")
    ]
    assert headings.index("Other tools") < headings.index("Talos nodes: the GPU Operator")
    assert headings.index("Talos nodes: the GPU Operator") < headings.index(
        "Talos nodes: the smoke tests"
    )
    assert headings[-1] == "Records"
