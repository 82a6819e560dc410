"""`upgrade -f talosctl` and `-f tuppr`: each pool's installer on each of its nodes, in order."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from real_tools import KUBECTL
from typer.testing import CliRunner, Result

from schematic.api import Request, generate
from schematic.cli import app, register_all_commands
from schematic.errors import UsageError
from schematic.inputs.nodes import read_nodes

register_all_commands()

DATA = Path(__file__).parent / "data" / "rollout"
NODES = DATA / "nodes.json"
# A SecureBoot metal pool, a KubeVirt GPU pool and a CPU pool, one release before the next.
MIXED = """\
cluster: lab
talos: {version: v1.13.9}
pools:
  - name: secure
    profile: metal-amd
    secureboot: {enabled: true}
  - name: gpu
    profile: kubevirt-l40s
  - name: cpu
    profile: kubevirt-cpu
"""
TO = "v1.14.0"

# tuppr's TalosUpgrade rules, read at home-operations/tuppr
# @f92ef37893a0931782e73661fa9a8455fd1ac396:
# config/crd/bases/tuppr.home-operations.com_talosupgrades.yaml (group, version v1alpha1,
# scope: Cluster, spec properties, spec.talos.version's pattern and `required: [version]`,
# parallelism minimum 1) and internal/webhook/talosupgrade/webhook.go (the version pattern
# again, an invalid nodeSelector refused).
TUPPR_SPEC_KEYS = {
    "drain",
    "healthChecks",
    "hooks",
    "maintenance",
    "nodeSelector",
    "parallelism",
    "policy",
    "silences",
    "talos",
    "talosctl",
}
TUPPR_VERSION = re.compile(r"^v[0-9]+\.[0-9]+\.[0-9]+(-[a-zA-Z0-9\-\.]+)?$")
# Kubernetes object names (DNS-1123 subdomain) and label keys/values (apimachinery validation).
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


def _tuppr_problems(obj: dict[str, Any]) -> list[str]:
    problems = []
    if obj.get("apiVersion") != "tuppr.home-operations.com/v1alpha1":
        problems.append("apiVersion")
    if obj.get("kind") != "TalosUpgrade":
        problems.append("kind")
    metadata = obj.get("metadata", {})
    if "namespace" in metadata:
        problems.append("namespace on a cluster-scoped object")
    name = metadata.get("name", "")
    if not (DNS_SUBDOMAIN.match(name) and len(name) <= 253):
        problems.append(f"name {name!r}")
    spec = obj.get("spec", {})
    problems += [f"unknown spec key {key}" for key in set(spec) - TUPPR_SPEC_KEYS]
    version = spec.get("talos", {}).get("version")
    if not isinstance(version, str) or not TUPPR_VERSION.match(version):
        problems.append(f"spec.talos.version {version!r}")
    if "parallelism" in spec and not (
        isinstance(spec["parallelism"], int) and spec["parallelism"] >= 1
    ):
        problems.append("parallelism")
    selector = spec.get("nodeSelector", {})
    problems += [
        f"nodeSelector key {key}" for key in set(selector) - {"matchLabels", "matchExpressions"}
    ]
    for key, value in selector.get("matchLabels", {}).items():
        prefix, _, name = key.rpartition("/")
        if not (
            LABEL_NAME.match(name)
            and len(name) <= 63
            and (not prefix or DNS_SUBDOMAIN.match(prefix))
        ):
            problems.append(f"label key {key}")
        if not (
            isinstance(value, str) and (value == "" or LABEL_NAME.match(value)) and len(value) <= 63
        ):
            problems.append(f"label value {value!r}")
    return problems


def _run(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def _installers(cluster: Path, version: str) -> dict[str, str]:
    """Each pool's installer as `generate` plans it at ``version`` (the one authority)."""
    text = cluster.read_text().replace("v1.13.9", version)
    target = cluster.with_name("target.yaml")
    target.write_text(text)
    plan = generate(Request(target, kinds=("urls",))).plan
    assert plan is not None
    return {pool.name: pool.references.installer for pool in plan.pools}


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(MIXED)
    return path


def _uncommented(text: str) -> str:
    """The script with the tenant pools' commented steps restored (one level of `# `)."""
    return "\n".join(
        line[2:]
        if line.startswith("# ") and not line.startswith("# #") and _step(line[2:])
        else line
        for line in text.splitlines()
    )


def _step(line: str) -> bool:
    return line.startswith(
        ("talosctl ", "kubectl ", "apiVersion", "kind:", "metadata:", "spec:", "  ", "EOF")
    )


def test_talosctl_names_each_pools_installer_on_each_of_its_nodes_in_order(mixed: Path) -> None:
    result = _run("upgrade", str(mixed), "--to", TO, "-f", "talosctl", "--nodes-from", str(NODES))
    assert result.exit_code == 0, result.output
    installers = _installers(mixed, TO)
    assert "-secureboot/" in installers["secure"]
    text = _uncommented(result.stdout)
    upgrades = re.findall(r"^talosctl upgrade --nodes (\S+) --image (\S+)$", text, re.M)
    # The pools' nodes by address; metal first (no GPU), then cpu, the GPU pool last.
    assert upgrades == [
        ("10.5.0.11", installers["secure"]),
        ("10.5.0.12", installers["secure"]),
        ("10.244.4.9", installers["cpu"]),
        ("10.244.3.17", installers["gpu"]),
        ("10.244.3.18", installers["gpu"]),
    ]
    # The GPU pool's first node is smoke-tested before the second; no other pool is.
    first, second = text.index("--nodes 10.244.3.17"), text.index("--nodes 10.244.3.18")
    smoke = text.index("kubectl apply -f gpu/smoke-test.yaml")
    assert first < smoke < second and text.count("smoke-test.yaml") == 1
    assert "pod/gpu-smoke-test-gpu" in text
    # The control-plane node, in no pool, keeps the schematic it runs and comes first.
    assert text.index("cp-1 runs schematic 376567988ad3") < text.index("--nodes 10.5.0.11")
    # Cozystack replaces its tenant pools' VMs: their in-place steps are commented out.
    assert "\ntalosctl upgrade --nodes 10.244." not in result.stdout
    assert "apply -f gpu/kubernetes-nodes.yaml" in result.stdout


def test_tuppr_annotations_build_each_pools_installer_as_tuppr_does(mixed: Path) -> None:
    result = _run("upgrade", str(mixed), "--to", TO, "-f", "tuppr", "--nodes-from", str(NODES))
    assert result.exit_code == 0, result.output
    installers = _installers(mixed, TO)
    text = _uncommented(result.stdout)
    annotated: dict[str, str] = {}
    for node, schematic, base in re.findall(
        r"^kubectl annotate node/(\S+) tuppr\.home-operations\.com/schematic=(\S+) "
        r"tuppr\.home-operations\.com/factory-url=(\S+) --overwrite$",
        text,
        re.M,
    ):
        # tuppr's buildTalosUpgradeImage: "<factory-url>/<schematic>:<version>".
        annotated[node] = f"{base.rstrip('/')}/{schematic}:{TO}"
    assert annotated == {
        "metal-a": installers["secure"],
        "metal-b": installers["secure"],
        "lab-cpu-5d2fk-m8n7r": installers["cpu"],
        "lab-gpu-7c9xv-4hx2p": installers["gpu"],
        "lab-gpu-7c9xv-b6wqz": installers["gpu"],
    }
    # Nodes placed by name get the pool label the TalosUpgrade selects; labelled ones do not.
    assert "kubectl label node/lab-gpu-7c9xv-4hx2p node.kubernetes.io/pool=gpu" in text
    assert "kubectl label node/metal-a" not in text
    objects = [yaml.safe_load(body) for body in re.findall(r"<<'EOF'\n(.*?)\nEOF", text, re.S)]
    assert [o["metadata"]["name"] for o in objects] == ["lab-secure", "lab-cpu", "lab-gpu"]
    for obj in objects:
        assert _tuppr_problems(obj) == [], obj
        assert obj["spec"]["talos"]["version"] == TO
    assert [o["spec"]["nodeSelector"]["matchLabels"] for o in objects] == [
        {"node.kubernetes.io/pool": pool} for pool in ("secure", "cpu", "gpu")
    ]


def test_the_tuppr_rules_catch_what_tuppr_refuses() -> None:
    good = {
        "apiVersion": "tuppr.home-operations.com/v1alpha1",
        "kind": "TalosUpgrade",
        "metadata": {"name": "lab-gpu"},
        "spec": {"talos": {"version": "v1.14.0"}, "nodeSelector": {"matchLabels": {"a/b": "c"}}},
    }
    assert _tuppr_problems(good) == []
    for broken in (
        {**good, "metadata": {"name": "lab-gpu", "namespace": "x"}},
        {**good, "spec": {"talos": {"version": "1.14.0"}}},
        {**good, "spec": {"talos": {"version": "v1.14.0"}, "image": "x"}},
        {**good, "spec": {"talos": {"version": "v1.14.0"}, "parallelism": 0}},
        {
            **good,
            "spec": {
                "talos": {"version": "v1.14.0"},
                "nodeSelector": {"matchLabels": {"a b": "c"}},
            },
        },
    ):
        assert _tuppr_problems(broken) != [], broken


@KUBECTL.needed
@pytest.mark.parametrize("verb", ["annotate", "label"])
def test_kubectl_takes_the_annotate_and_label_arguments(
    mixed: Path, tmp_path: Path, verb: str
) -> None:
    result = _run("upgrade", str(mixed), "--to", TO, "-f", "tuppr", "--nodes-from", str(NODES))
    node = json.loads(NODES.read_text())["items"][3]
    one = tmp_path / "node.json"
    one.write_text(json.dumps(node))
    line = next(
        line.removeprefix("# ")
        for line in result.stdout.splitlines()
        if line.removeprefix("# ").startswith(f"kubectl {verb} node/{node['metadata']['name']} ")
    )
    args = line.split()[3:]  # after "kubectl <verb> node/<name>"
    done = subprocess.run(
        [str(KUBECTL.path), verb, "--local", "-f", str(one), *args, "-o", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    metadata = json.loads(done.stdout)["metadata"]
    for arg in args:
        if "=" in arg:
            key, _, value = arg.partition("=")
            assert metadata["annotations" if verb == "annotate" else "labels"][key] == value


@pytest.mark.parametrize("kind", ["talosctl", "tuppr"])
def test_the_scripts_are_valid_shell(mixed: Path, tmp_path: Path, kind: str) -> None:
    for extra in ((), ("--nodes-from", str(NODES))):
        result = _run("upgrade", str(mixed), "--to", TO, "-f", kind, *extra)
        assert result.exit_code == 0, result.output
        script = tmp_path / "rollout.sh"
        script.write_text(result.stdout)
        assert subprocess.run(["sh", "-n", str(script)], check=False).returncode == 0


def test_without_a_node_list_the_commands_are_per_pool(mixed: Path) -> None:
    result = _run("upgrade", str(mixed), "--to", TO, "-f", "talosctl")
    assert result.exit_code == 0
    assert "give --nodes-from" in result.stderr
    installers = _installers(mixed, TO)
    for pool, installer in installers.items():
        assert f"talosctl upgrade --nodes <address> --image {installer}" in result.stdout, pool


def test_a_worker_in_no_pool_is_named_and_exits_3(mixed: Path, tmp_path: Path) -> None:
    document = json.loads(NODES.read_text())
    stray = json.loads(json.dumps(document["items"][1]))
    stray["metadata"]["name"] = "stray-1"
    stray["metadata"]["labels"] = {"kubernetes.io/hostname": "stray-1"}
    document["items"].append(stray)
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps(document))
    result = _run("upgrade", str(mixed), "--to", TO, "-f", "talosctl", "--nodes-from", str(nodes))
    assert result.exit_code == 3
    assert "nodes in no pool, not upgraded: stray-1" in result.stderr
    assert "--nodes 10.5.0.11 " in result.stdout  # the others are still planned


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("{not json", "not JSON"),
        ('{"kind": "List"}', "no items"),
        ('{"items": [{"kind": "Pod", "metadata": {"name": "x"}}]}', "items[0] is not a Node"),
        ('{"items": [{"metadata": {}}]}', "items[0] has no metadata.name"),
        ('{"items": [{"metadata": {"name": "a", "labels": {"k": 1}}}]}', "labels is not a mapping"),
    ],
)
def test_an_unreadable_node_list_is_a_usage_error(
    mixed: Path, tmp_path: Path, text: str, said: str
) -> None:
    nodes = tmp_path / "nodes.json"
    nodes.write_text(text)
    result = _run("upgrade", str(mixed), "--to", TO, "-f", "talosctl", "--nodes-from", str(nodes))
    assert result.exit_code == 2
    with pytest.raises(UsageError) as err:
        read_nodes(nodes)
    assert said in str(err.value) and str(nodes) in str(err.value)
    assert err.value.option == "--nodes-from"
    assert "Traceback" not in result.output and result.stdout == ""


# --- lint: a hand-edited rollout that drops a pool's extensions (TS136) ---------------------


@pytest.fixture
def generated(mixed: Path, tmp_path: Path) -> Path:
    text = mixed.read_text().replace(
        "cluster: lab\n", "cluster: lab\nnamespace: tenant-lab\ncozystack: {version: osimage}\n"
    )
    mixed.write_text(text)
    out = tmp_path / "out"
    generate(Request(mixed, out=out))
    return out


def _lint(*paths: Path) -> tuple[int, list[dict[str, Any]]]:
    result = _run("lint", "--json", *map(str, paths))
    return result.exit_code, json.loads(result.stdout)["findings"]


def _rollout(mixed: Path, out: Path, kind: str) -> Path:
    result = _run("upgrade", str(mixed), "--to", TO, "-f", kind, "--nodes-from", str(NODES))
    assert result.exit_code == 0, result.output
    script = out / f"rollout-{kind}.sh"
    script.write_text(result.stdout)
    return script


@pytest.mark.parametrize("kind", ["talosctl", "tuppr"])
def test_lint_passes_the_rollout_as_written(mixed: Path, generated: Path, kind: str) -> None:
    _rollout(mixed, generated, kind)
    _, findings = _lint(generated)
    assert [f for f in findings if f["code"] in ("TS136", "TS001")] == []


def _edit(script: Path, pattern: str, replacement: str) -> int:
    """Replace the first match of ``pattern``; the line it was on."""
    text = script.read_text()
    found = re.search(pattern, text, re.M)
    assert found is not None, pattern
    script.write_text(text[: found.start()] + replacement + text[found.end() :])
    return text.count("\n", 0, found.start()) + 1


@pytest.mark.parametrize(
    ("pattern", "replacement", "said"),
    [
        # The plain installer: no schematic in the image.
        (r"--image \S+secureboot\S+", "--image ghcr.io/siderolabs/installer:v1.14.0", "drops"),
        # No --image at all: talosctl's default, the release's metal-installer.
        (r" --image \S+secureboot\S+", "", "no --image"),
        # The empty schematic.
        (
            r"(?<=--nodes 10\.5\.0\.11 --image factory\.talos\.dev/metal-installer-secureboot/)"
            r"[0-9a-f]{64}",
            "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba",
            "drops",
        ),
    ],
)
def test_lint_flags_a_talosctl_upgrade_that_drops_the_extensions(
    mixed: Path, generated: Path, pattern: str, replacement: str, said: str
) -> None:
    script = _rollout(mixed, generated, "talosctl")
    line = _edit(script, pattern, replacement)
    code, findings = _lint(generated)
    found = [f for f in findings if f["code"] == "TS136"]
    assert code == 3
    assert [(f["file"], f["line"]) for f in found] == [(str(script), line)]
    assert "pool 'secure'" in found[0]["message"] and said in found[0]["message"]
    assert "siderolabs/amd-ucode" in found[0]["message"] or said == "no --image"


def test_lint_flags_another_pools_schematic_in_a_tuppr_annotation(
    mixed: Path, generated: Path
) -> None:
    index = yaml.safe_load((generated / "index.yaml").read_text())
    ids = {pool["name"]: pool["schematicID"] for pool in index["pools"]}
    script = _rollout(mixed, generated, "tuppr")
    line = _edit(
        script,
        r"(?<=node/metal-a tuppr\.home-operations\.com/schematic=)[0-9a-f]{64}",
        ids["cpu"],
    )
    code, findings = _lint(generated)
    found = [f for f in findings if f["code"] == "TS136"]
    assert code == 3 and [f["line"] for f in found] == [line]
    assert "installs pool 'cpu'" in found[0]["message"]


def test_a_commented_or_foreign_line_is_not_flagged(mixed: Path, generated: Path) -> None:
    script = _rollout(mixed, generated, "talosctl")
    text = script.read_text()
    # A commented-out plain upgrade, and one in no pool's section, are not the pool's.
    text += "# talosctl upgrade --nodes 10.5.0.11 --image ghcr.io/siderolabs/installer:v1.14.0\n"
    script.write_text("talosctl upgrade --nodes 10.9.9.9\n" + text)
    _, findings = _lint(generated)
    assert [f for f in findings if f["code"] == "TS136"] == []


def test_a_rollout_without_the_index_says_it_was_not_checked(mixed: Path, tmp_path: Path) -> None:
    alone = tmp_path / "alone"
    alone.mkdir()
    script = _rollout(mixed, alone, "talosctl")
    code, findings = _lint(script)
    assert [(f["code"], f["file"]) for f in findings] == [("TS001", str(script))]
    assert code == 0  # a warning: the run could not judge, and says so


def test_the_report_says_the_order_to_change_cozystack_pools_in(mixed: Path) -> None:
    document = json.loads(_run("upgrade", str(mixed), "--to", TO, "--json").stdout)
    (order,) = [note for note in document["notes"] if note.startswith("on Cozystack")]
    # The two tenant pools: the one without a GPU first; the metal pool is not Cozystack's.
    assert "one pool at a time (cpu, gpu)" in order
    gpu = next(pool for pool in document["pools"] if pool["name"] == "gpu")
    assert any("hash of its content" in why for why in gpu["machinesReplaced"]["why"])


def test_one_replaced_pool_needs_no_order(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        "cluster: one\ntalos: {version: v1.13.9}\n"
        "pools:\n  - name: cpu\n    profile: kubevirt-cpu\n"
    )
    document = json.loads(_run("upgrade", str(cluster), "--to", TO, "--json").stdout)
    assert not [note for note in document["notes"] if note.startswith("on Cozystack")]
    assert document["pools"][0]["machinesReplaced"]["replaced"] is True


def test_a_node_list_without_a_rollout_format_is_a_usage_error(mixed: Path) -> None:
    result = _run("upgrade", str(mixed), "--to", TO, "--nodes-from", str(NODES))
    assert result.exit_code == 2 and result.stdout == ""
