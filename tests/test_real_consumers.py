"""The output through its real consumers: Cozystack's own kubernetes-nodes charts rendered by a
real helm, ``kubectl kustomize`` over every output directory, and every machine config the
charts render held against the Talos schema.

The charts (main 3c780acd, v1.6.2, PR #3571, unmodified) and the Talos schemas are read from
``../shared/reference``; helm and kubectl are the ones ``make`` installs into ``.venv/tools``
(``../shared/tools/get-helm.sh``), or on PATH. Each test is skipped, with the reason, where one
of them is absent.
"""

from __future__ import annotations

import json
import re
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from real_tools import HELM, KUBECTL
from typer.testing import CliRunner, Result

from schematic.cli import app, register_all_commands

register_all_commands()
ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CHARTS = SHARED / "reference" / "cozystack" / "charts"
TALOS_SCHEMA = SHARED / "reference" / "talos" / "config.schema.v1.13.9.json"
needs_charts = pytest.mark.skipif(
    not CHARTS.is_dir() or HELM.path is None,
    reason=f"needs Cozystack's charts at {CHARTS}" if HELM.path else HELM.found,
)
needs_kubectl = KUBECTL.needed

# The chart folder each target's data was read from.
CHART_OF = {"v1.6": "v1.6.2", "main": "main-3c780acd", "pr3571": "pr3571-63f64855"}
NVIDIA_SET = ["nvidia", "nvidia_uvm", "nvidia_drm", "nvidia_modeset"]
CLUSTER = """\
cluster: demo
namespace: tenant-demo
cozystack: {{version: {target}}}
talos: {{version: v1.13.9}}
pools:
  - name: gpu
    profile: kubevirt-l40s
    maxReplicas: 2
    instanceType: u1.2xlarge
  - name: cpu
    profile: kubevirt-cpu
    maxReplicas: 3
    instanceType: u1.large
"""


# The charts that cannot load a GPU pool's modules: generate refuses the pool there (the verdict
# these renders prove) and writes its values only when insisting.
NO_MODULES = ("v1.6", "main")


def generate(
    tmp_path: Path, target: str, *formats: str, insist: bool = True
) -> tuple[Result, Path]:
    cluster = tmp_path / f"cluster-{target}.yaml"
    cluster.write_text(CLUSTER.format(target=target))
    out = tmp_path / f"out-{target}"
    args = ["generate", str(cluster), "--out", str(out)]
    if insist and target in NO_MODULES:
        args.append("--allow-ignored-keys")
    for kind in formats:
        args += ["-f", kind]
    return CliRunner().invoke(app, args), out


def render(tmp_path: Path, chart: str, values: dict[str, Any], release: str) -> list[Any]:
    """``helm template`` of one pool. Beside the tool's values: what the platform injects
    (``_cluster``, from the cozystack-values Secret) and, as the charts' own offline tests do,
    explicit resources in place of an instanceType (resolved by ``lookup``, empty offline)."""
    injected: dict[str, Any] = {"_cluster": {}}
    if values.get("instanceType") and not values.get("resources"):
        injected |= {"instanceType": "", "resources": {"cpu": 4, "memory": "16Gi"}}
    (tmp_path / "values.yaml").write_text(yaml.safe_dump(values))
    (tmp_path / "platform.yaml").write_text(yaml.safe_dump(injected))
    command = [str(HELM.path), "template", release, str(CHARTS / chart / "kubernetes-nodes")]
    command += ["--namespace", "tenant-demo", "-f", str(tmp_path / "values.yaml")]
    command += ["-f", str(tmp_path / "platform.yaml")]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


# The reconcile Job's shell fills these in from Secrets and Services at run time.
_SHELL_VALUES = {
    "TALOS_TOKEN": "abcdef.0123456789abcdef",
    "TALOS_CA_B64": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t",
    "K8S_CA_B64": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t",
    "CLUSTER_ID": "aWQ=",
    "CLUSTER_SECRET": "c2VjcmV0",
    "BOOTSTRAP_TOKEN": "abcdef.0123456789abcdef",
    "SVC_IP": "10.96.0.10",
    "COREDNS_IP": "10.96.0.11",
    "KCP_UID": "00000000-0000-0000-0000-000000000000",
    "RELEASE": "kubernetes-demo",
    "NS": "tenant-demo",
    "GROUP_NAME": "gpu",
}


def _heredoc_templates(job: dict[str, Any]) -> list[Any]:
    """The TalosConfigTemplates the talos-reconcile Job applies from a shell heredoc."""
    found = []
    for container in job["spec"]["template"]["spec"]["containers"]:
        script = "\n".join(str(part) for part in container.get("command", []))
        for body in re.findall(r"<<EOF[^\n]*\n(.*?)\n\s*EOF\b", script, re.S):
            filled = re.sub(r"\$\{(\w+)\}", lambda m: _SHELL_VALUES[m[1]], textwrap.dedent(body))
            found += [doc for doc in yaml.safe_load_all(filled) if doc]
    return [doc for doc in found if doc.get("kind") == "TalosConfigTemplate"]


def machine_configs(rendered: list[Any]) -> list[dict[str, Any]]:
    """Every machine-config document of every TalosConfigTemplate rendered, as an object or in
    the reconcile Job."""
    templates = [doc for doc in rendered if doc.get("kind") == "TalosConfigTemplate"]
    for job in (doc for doc in rendered if doc.get("kind") == "Job"):
        templates += _heredoc_templates(job)
    configs = []
    for template in templates:
        data = template["spec"]["template"]["spec"]["data"]
        configs += [doc for doc in yaml.safe_load_all(data) if doc]
    return configs


# Keys every chart's fixed machine-config template writes that the published Talos 1.13 schema
# does not list (deprecated keys Talos still reads: ``persist``, ``machine.network`` beside the
# network documents, ``machine.features.rbac``). They are the chart's, not the values': each is
# named here so any other error, in what the values put there, fails.
CHART_KEYS_OUTSIDE_SCHEMA = {
    ("$", "persist"),
    ("$.machine", "network"),
    ("$.machine.features", "rbac"),
}


def schema_errors(validator: Any, config: dict[str, Any]) -> list[str]:
    errors = []
    for error in validator.iter_errors(config):
        if error.validator == "additionalProperties":
            extra = set(error.instance) - set(error.schema.get("properties", {}))
            if {(error.json_path, key) for key in extra} <= CHART_KEYS_OUTSIDE_SCHEMA:
                continue
        errors.append(f"{error.json_path}: {error.message}")
    return errors


def boot_urls(rendered: list[Any]) -> list[str]:
    urls = []
    for doc in rendered:
        if doc.get("kind") == "KubevirtMachineTemplate":
            text = json.dumps(doc)
            urls += re.findall(r'"url": "([^"]+)"', text)
    return urls


def loaded_modules(config: dict[str, Any]) -> list[str]:
    listed = (config.get("machine") or {}).get("kernel", {}).get("modules") or []
    return [module["name"] for module in listed]


@needs_charts
@pytest.mark.parametrize("target", sorted(CHART_OF))
def test_each_chart_renders_the_pools_own_schematic(tmp_path: Path, target: str) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    talos = json.loads(TALOS_SCHEMA.read_text())
    # The v1alpha1 document by its own definition: the schema's oneOf over every document kind
    # would name no field in its error.
    v1alpha1 = jsonschema.Draft202012Validator(
        {"$ref": "#/$defs/v1alpha1.Config", "$defs": talos["$defs"]}
    )
    documents = jsonschema.Draft202012Validator(talos)
    chart = CHART_OF[target]
    chart_schema = json.loads(
        (CHARTS / chart / "kubernetes-nodes" / "values.schema.json").read_text()
    )
    result, out = generate(tmp_path, target, "values", "urls")
    assert result.exit_code == 0, result.stderr
    for pool in ("gpu", "cpu"):
        values = yaml.safe_load((out / pool / "values.yaml").read_text())
        urls = yaml.safe_load((out / pool / "urls.yaml").read_text())
        schematic_id = urls["schematicID"]
        # The values pass the chart's own schema (helm checks it too, while rendering).
        validator = jsonschema.Draft7Validator(chart_schema)
        assert [e.message for e in validator.iter_errors(values)] == [], (target, pool)
        work = tmp_path / f"{target}-{pool}"
        work.mkdir()
        rendered = render(work, chart, values, f"kubernetes-nodes-demo-{pool}")
        [boot] = boot_urls(rendered)
        assert boot == (
            f"https://factory.talos.dev/image/{schematic_id}/v1.13.9/openstack-amd64.raw.xz"
        )
        configs = machine_configs(rendered)
        [worker] = [c for c in configs if c.get("machine", {}).get("type") == "worker"]
        assert worker["machine"]["install"]["image"] == (
            f"factory.talos.dev/installer/{schematic_id}:v1.13.9"
        )
        for config in configs:
            validator = v1alpha1 if config.get("version") == "v1alpha1" else documents
            assert schema_errors(validator, config) == [], (target, pool)
        modules = loaded_modules(worker)
        if pool == "cpu":
            assert modules == []
        elif target == "pr3571":
            assert modules == NVIDIA_SET
        else:
            # v1.6.x and main load no module whatever the values say: the GPU pool's
            # extensions are installed and never loaded. So generate refuses the pool there,
            # naming kernelModules and the way out, and writes nothing.
            assert modules == []
            (tmp_path / "refused").mkdir()
            refused, nothing = generate(tmp_path / "refused", target, "values", insist=False)
            assert refused.exit_code == 1
            assert 'pool "gpu" (nvidia, nvidia_uvm, nvidia_drm, nvidia_modeset): kernelModules' in (
                refused.stderr
            )
            assert "--chart pr3571 or osimage" in refused.stderr
            assert not nothing.exists()


@needs_charts
@needs_kubectl
@pytest.mark.parametrize(
    ("target", "formats"),
    [
        ("v1.6", ()),
        ("main", ()),
        ("pr3571", ()),
        ("osimage", ()),
        ("pr3571", ("cozystack", "values", "helmrelease")),
        ("pr3571", ("helmrelease", "addons", "platform", "smoke-test")),
    ],
)
def test_kubectl_kustomize_builds_every_output_directory(
    tmp_path: Path, target: str, formats: tuple[str, ...]
) -> None:
    result, out = generate(tmp_path, target, *formats)
    assert result.exit_code == 0, result.stderr
    folders = sorted(p.parent for p in out.rglob("kustomization.yaml"))
    assert folders, "no kustomization.yaml written"
    for folder in folders:
        done = subprocess.run(
            [str(KUBECTL.path), "kustomize", str(folder)],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert done.returncode == 0, (folder, done.stderr)
        assert [doc for doc in yaml.safe_load_all(done.stdout) if doc]
