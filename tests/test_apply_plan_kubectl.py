"""APPLY.md's kubectl commands, run as printed by the real kubectl (``.venv/tools``, installed
by ``make``), and the objects they produce compared with the ones intended.

A merge patch is applied by kubectl itself (``patch --local``); the commands that need a
cluster run against a loopback stand-in for the API server (``tests/kube_fake.py``) that
answers discovery for Cozystack's resources and records what kubectl sends. The stand-in has no
OpenAPI schemas, so ``apply`` and ``edit`` run with ``--validate=false`` added (a real API server
validates on its side); every other word of each command is the plan's.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from apply_md import commands
from kube_fake import FakeServer, fake_api_server
from real_tools import KUBECTL
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands

register_all_commands()
runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "cluster.yaml"
pytestmark = KUBECTL.needed
APP_PATH = "/apis/apps.cozystack.io/v1alpha1/namespaces/tenant-ml/kuberneteses/mycluster"
PACKAGE_PATH = "/apis/cozystack.io/v1alpha1/packages/cozystack.cozystack-platform"
# The tenant's Kubernetes app as a user has it: keys of Cozystack v1.6.2's kubernetes chart
# (../shared/reference/cozystack/kubernetes.values.schema.v1.6.2.json), an addon already on.
APP: dict[str, Any] = {
    "apiVersion": "apps.cozystack.io/v1alpha1",
    "kind": "Kubernetes",
    "metadata": {"name": "mycluster", "namespace": "tenant-ml"},
    "spec": {
        "version": "v1.33",
        "storageClass": "replicated",
        "addons": {"certManager": {"enabled": True}, "gpuOperator": {"enabled": False}},
    },
}
PACKAGE: dict[str, Any] = {
    "apiVersion": "cozystack.io/v1alpha1",
    "kind": "Package",
    "metadata": {"name": "cozystack.cozystack-platform"},
    "spec": {"variant": "isp-full", "components": {"platform": {"values": {}}}},
}
# What a user does at `kubectl edit` of the Package: put the file's values under
# spec.components.platform.values (the Package here lists no pciHostDevices of its own).
EDITOR = """\
import sys, yaml
path = sys.argv[1]
package = yaml.safe_load(open(path))
values = yaml.safe_load(open("management/platform-gpu-values.yaml"))
package["spec"]["components"]["platform"]["values"].update(values)
open(path, "w").write(yaml.safe_dump(package))
"""


def kubectl(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(KUBECTL.path), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, (args, done.stderr)
    return done.stdout


def generated(tmp_path: Path, *formats: str) -> Path:
    out = tmp_path / "out"
    args = [arg for kind in formats for arg in ("-f", kind)]
    result = runner.invoke(app, ["generate", str(EXAMPLE), "--out", str(out), *args])
    assert result.exit_code == 0, result.stderr
    return out


def plan_commands(out: Path) -> list[str]:
    return commands((out / "APPLY.md").read_text())


def test_the_addons_patch_lands_under_spec_and_nowhere_else(tmp_path: Path) -> None:
    out = generated(tmp_path)
    (tmp_path / "app.yaml").write_text(yaml.safe_dump(APP))
    patch = out / "cluster" / "kubernetes-addons.yaml"
    text = kubectl(
        "patch", "-f", str(tmp_path / "app.yaml"), "--local", "--type", "merge",
        "--patch-file", str(patch), "-o", "yaml", cwd=out,
    )  # fmt: skip
    patched = yaml.safe_load(text)
    intended = yaml.safe_load(patch.read_text())["spec"]["addons"]["gpuOperator"]
    assert patched["spec"]["addons"]["gpuOperator"] == intended
    assert intended["enabled"] is True and intended["valuesOverride"]["gpu-operator"]
    # Nothing new at the root; the app's other keys and addons are kept.
    assert set(patched) == set(APP)
    assert patched["metadata"] == APP["metadata"]
    assert patched["spec"]["addons"]["certManager"] == {"enabled": True}
    assert patched["spec"]["version"] == "v1.33"


def _run_as_printed(command: str, out: Path, server: FakeServer, tmp_path: Path) -> None:
    kubeconfig = server.kubeconfig(tmp_path)
    editor = tmp_path / "editor.py"
    editor.write_text(EDITOR)
    env = dict(os.environ, KUBECONFIG=str(kubeconfig), HOME=str(tmp_path))
    env["EDITOR"] = f"{shlex.quote(sys.executable)} {shlex.quote(str(editor))}"
    words = shlex.split(command.replace("TENANT_KUBECONFIG", str(kubeconfig)))
    assert words[0] == "kubectl"
    verb = next(word for word in words[1:] if not word.startswith("-") and "/" not in word)
    if verb in ("apply", "edit"):
        words.insert(words.index(verb) + 1, "--validate=false")
    kubectl(*words[1:], cwd=out, env=env)


def _name(document: dict[str, Any]) -> str:
    return str(document["metadata"]["name"])


def _without_applied(body: dict[str, Any]) -> dict[str, Any]:
    metadata = dict(body["metadata"])
    annotations = dict(metadata.pop("annotations", {}))
    annotations.pop("kubectl.kubernetes.io/last-applied-configuration", None)
    if annotations:
        metadata["annotations"] = annotations
    return {**body, "metadata": metadata}


@pytest.mark.parametrize(
    "formats", [(), ("helmrelease", "values", "addons", "platform", "smoke-test")]
)
def test_every_kubectl_command_of_the_plan_runs_as_printed(
    tmp_path: Path, formats: tuple[str, ...]
) -> None:
    out = generated(tmp_path, *formats)
    commands = [line for line in plan_commands(out) if line.startswith("kubectl ")]
    # `logs -f` follows a running pod: the pod it names is the one the apply before it made.
    followed = [line for line in commands if " logs -f " in line]
    assert len(followed) == sum(" apply -f " in c and "smoke-test" in c for c in commands)
    with fake_api_server() as server:
        server.objects[APP_PATH] = APP
        server.objects[PACKAGE_PATH] = PACKAGE
        for command in commands:
            if command not in followed:
                _run_as_printed(command, out, server, tmp_path)
    by_path: dict[str, list[Any]] = {}
    for write in server.writes:
        by_path.setdefault(write.path, []).append(write)
    # The tenant's app: one merge patch carrying exactly the file, under spec.
    (app_write,) = by_path.pop(APP_PATH)
    assert app_write.content_type == "application/merge-patch+json"
    assert app_write.body == yaml.safe_load(
        (out / "cluster" / "kubernetes-addons.yaml").read_text()
    )
    # The platform Package: the values under spec.components.platform.values.
    (package_write,) = by_path.pop(PACKAGE_PATH)
    values = yaml.safe_load((out / "management" / "platform-gpu-values.yaml").read_text())
    assert package_write.body == {"spec": {"components": {"platform": {"values": values}}}}
    # Every pool object and smoke-test pod created where its file says, exactly as written.
    expected: dict[str, list[dict[str, Any]]] = {}
    objects = sorted(out.glob("*/kubernetes-nodes.yaml")) + sorted(out.glob("*/helmrelease.yaml"))
    for path in objects:
        document = yaml.safe_load(path.read_text())
        plural = {"KubernetesNodes": "kubernetesnodeses", "HelmRelease": "helmreleases"}
        group = document["apiVersion"]
        namespace = document["metadata"]["namespace"]
        where = f"/apis/{group}/namespaces/{namespace}/{plural[document['kind']]}"
        expected.setdefault(where, []).append(document)
    for path in sorted(out.glob("*/smoke-test.yaml")):
        pod = yaml.safe_load(path.read_text())
        # The pod names no namespace: kubectl puts it in the kubeconfig's (default).
        pod["metadata"] = {**pod["metadata"], "namespace": "default"}
        expected.setdefault("/api/v1/namespaces/default/pods", []).append(pod)
    created = {
        where: [_without_applied(write.body) for write in writes if write.method == "POST"]
        for where, writes in by_path.items()
    }
    # `apply -k .` and each file's own `apply` create the same objects: each at least once.
    assert {
        where: sorted({_name(d): d for d in docs}.values(), key=_name)
        for where, docs in created.items()
    } == {where: sorted(docs, key=_name) for where, docs in expected.items()}


def test_a_metal_clusters_kubectl_steps_create_its_smoke_test(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    made = runner.invoke(app, ["init", "c.yaml", "--pool", "gpu=metal-hgx-b200-8x"])
    assert made.exit_code == 0, made.stderr
    assert runner.invoke(app, ["generate", "c.yaml", "--out", "d"]).exit_code == 0
    out = tmp_path / "d"
    commands = [line for line in plan_commands(out) if line.startswith("kubectl ")]
    assert commands == [
        "kubectl create namespace gpu-operator --dry-run=client -o yaml | kubectl apply -f -",
        "kubectl label namespace gpu-operator pod-security.kubernetes.io/enforce=privileged "
        "--overwrite",
        "kubectl apply -f gpu/smoke-test.yaml",
        "kubectl logs -f pod/gpu-smoke-test-gpu",
    ]
    namespace_path = "/api/v1/namespaces/gpu-operator"
    with fake_api_server() as server:
        # The namespace step is a pipeline: run by bash, as a reader's shell would, twice (a
        # plan is run again after each generate; `create` alone fails the second time).
        env = dict(os.environ, KUBECONFIG=str(server.kubeconfig(tmp_path)), HOME=str(tmp_path))
        env["PATH"] = f"{Path(str(KUBECTL.path)).parent}{os.pathsep}{env['PATH']}"
        script = commands[0].replace("kubectl apply", "kubectl apply --validate=false")
        first = subprocess.run(["bash", "-ec", script], cwd=out, env=env, capture_output=True)
        assert first.returncode == 0, first.stderr
        (created,) = server.writes
        assert (created.method, created.path) == ("POST", "/api/v1/namespaces")
        assert (created.body["kind"], created.body["metadata"]["name"]) == (
            "Namespace",
            "gpu-operator",
        )
        server.objects[namespace_path] = created.body
        server.writes.clear()
        again = subprocess.run(["bash", "-ec", script], cwd=out, env=env, capture_output=True)
        assert again.returncode == 0, again.stderr
        # The second run finds the namespace and creates nothing (a real API server refuses a
        # second create with 409 AlreadyExists, which is how `kubectl create` alone fails).
        assert [w.method for w in server.writes if w.method == "POST"] == []
        server.writes.clear()
        _run_as_printed(commands[1], out, server, tmp_path)
        _run_as_printed(commands[2], out, server, tmp_path)
    labelled, write = server.writes
    # Pod Security's privileged level on the GPU Operator's namespace (Talos enforces
    # "baseline" by default, which refuses the operator's host-path pods).
    assert (labelled.method, labelled.path) == ("PATCH", namespace_path)
    labels = labelled.body["metadata"]["labels"]
    assert labels == {"pod-security.kubernetes.io/enforce": "privileged"}
    pod = yaml.safe_load((out / "gpu" / "smoke-test.yaml").read_text())
    pod["metadata"] = {**pod["metadata"], "namespace": "default"}
    assert (write.method, write.path) == ("POST", "/api/v1/namespaces/default/pods")
    assert _without_applied(write.body) == pod
    # Nothing of Cozystack's was sent anywhere.
    assert not [w for w in server.writes if "cozystack" in w.path]
