"""The word test that decides which files lint composes: every shape lint reads passes it.

A file the test turns away is never composed, so an object it missed would be skipped
silently; each shape recognised by schematic.doctor.lint.inventory, .talhelper, .omni and
.terraform is held to it here, written in block style, as JSON and in one-line flow style, and
every valid spelling of a KubernetesNodes is read and found wrong as the loader reads it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from schematic.doctor.lint import lint_paths
from schematic.doctor.lint.loader import load_paths, may_hold_lint_object

ID = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"

SHAPES = {
    "KubernetesNodes": """\
apiVersion: apps.cozystack.io/v1alpha1
kind: KubernetesNodes
metadata: {name: t-gpu}
spec: {cluster: t, instanceType: u1.large}
""",
    "nodes values gpus": "gpus:\n  - name: nvidia.com/AD102GL_L40S\n",
    "nodes values talos": "talos:\n  version: v1.13.6\n",
    "nodes values osImage": f"osImage:\n  factory:\n    schematicID: {ID}\n",
    "nodes values schematicID": f"schematicID: {ID}\n",
    "nodes values kernelModules": "kernelModules: null\n",
    "HelmRelease": """\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: gpu-operator}
spec:
  values:
    gpu-operator: {toolkit: {enabled: true}}
""",
    "Kubernetes app": """\
apiVersion: apps.cozystack.io/v1alpha1
kind: Kubernetes
metadata: {name: t}
spec:
  version: v1.33
""",
    "app values nodeGroups": "nodeGroups:\n  md0: {minReplicas: 1}\n",
    "app values addons": "addons:\n  hami: {enabled: true}\n",
    "KubevirtMachineTemplate": """\
apiVersion: infrastructure.cluster.x-k8s.io/v1alpha1
kind: KubevirtMachineTemplate
metadata: {name: t-md0-1a2b3c}
spec: {}
""",
    "TalosConfigTemplate": """\
apiVersion: bootstrap.cluster.x-k8s.io/v1alpha3
kind: TalosConfigTemplate
metadata: {name: t-md0}
spec: {template: {spec: {generateType: worker}}}
""",
    "MachineDeployment": """\
apiVersion: cluster.x-k8s.io/v1beta1
kind: MachineDeployment
metadata: {name: t-md0}
spec: {}
""",
    "reconcile Job": """\
apiVersion: batch/v1
kind: Job
metadata: {name: t-talos-reconcile}
spec:
  template:
    spec:
      containers:
        - name: apply
          command:
            - sh
            - -c
            - |
              kubectl apply -f - <<EOF
              kind: TalosConfigTemplate
              EOF
""",
    "Service with Kamaji labels": """\
apiVersion: v1
kind: Service
metadata:
  name: t
  labels: {kamaji.clastix.io/name: t}
spec:
  ports: [{port: 6443}]
""",
    "Service with the Cluster API role": """\
apiVersion: v1
kind: Service
metadata:
  name: t
  labels: {cluster.x-k8s.io/role: control-plane}
spec:
  ports: [{port: 6443}]
""",
    "KamajiControlPlane": """\
apiVersion: controlplane.cluster.x-k8s.io/v1alpha1
kind: KamajiControlPlane
metadata: {name: t}
spec: {}
""",
    "Package of the platform": """\
apiVersion: cozystack.io/v1alpha1
kind: Package
metadata: {name: cozystack-platform}
spec:
  components:
    platform:
      values:
        gpu: {replaceDefaults: true}
""",
    "Package of the GPU Operator": """\
apiVersion: cozystack.io/v1alpha1
kind: Package
metadata: {name: gpu-operator}
spec:
  components:
    gpu-operator:
      values: {toolkit: {enabled: true}}
""",
    "platform values": "gpu:\n  permittedHostDevices:\n    pciHostDevices: []\n",
    "schematic customization": "customization:\n  systemExtensions: {}\n",
    "schematic overlay": "overlay:\n  name: rpi_generic\n  image: siderolabs/sbc-raspberrypi\n",
    "schematic owner": "owner: someone\n",
    "machine config": "version: v1alpha1\nmachine:\n  kernel:\n    modules: [{name: nvidia}]\n",
    "RFC 6902 patch": "- op: add\n  path: /machine/install/extensions\n  value: []\n",
    "KernelModuleConfig": "apiVersion: v1alpha1\nkind: KernelModuleConfig\nname: nvidia\n",
    "talhelper config": "clusterName: c\ntalosVersion: v1.13.6\nnodes:\n  - hostname: n\n",
    "urls.yaml": f"pool: gpu\nschematicID: {ID}\n",
    "talhelper keys": "schematic:\n  customization: {}\nmachineSpec: {arch: arm64}\n",
    "Omni Cluster": "kind: Cluster\nname: c\ntalos: {version: v1.13.9}\n",
    "Omni ControlPlane": "kind: ControlPlane\nmachineClass: {name: cp, size: 1}\n",
    "Omni Workers": "kind: Workers\nname: gpu\nsystemExtensions: [siderolabs/zfs]\n",
    "Omni Machine": "kind: Machine\nname: m\nsystemExtensions: [siderolabs/zfs]\n",
    "Terraform JSON": """\
resource:
  talos_machine_configuration_apply:
    worker: {config_patches: ["machine: {}"]}
""",
}


def _forms(text: str) -> dict[str, str]:
    value = yaml.safe_load(text)
    return {
        "block": text,
        "json": json.dumps(value, indent=2),
        "compact json": json.dumps(value, separators=(",", ":")),
        "flow": yaml.safe_dump(value, default_flow_style=True, width=10_000),
        "after other documents": f"kind: ConfigMap\ndata: {{}}\n---\n# a comment\n{text}",
    }


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_shape_lint_reads_passes_the_look(shape: str) -> None:
    for form, text in _forms(SHAPES[shape]).items():
        assert may_hold_lint_object(text), f"{shape} ({form})"


NOT_READ = {
    "Deployment": """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers: [{name: web, image: nginx, resources: {limits: {memory: 1Gi}}}]
""",
    "plain Service": "apiVersion: v1\nkind: Service\nmetadata: {name: web}\n",
    "CustomResourceDefinition": """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
spec:
  names: {kind: Machine}
  versions:
    - schema:
        openAPIV3Schema:
          properties:
            widget: {type: string, description: the name of the widget}
""",
    "Kubernetes kind of another group": "apiVersion: example.io/v1\nkind: Kubernetes\n",
}


@pytest.mark.parametrize("shape", sorted(NOT_READ))
def test_files_with_nothing_lint_reads_are_turned_away(shape: str) -> None:
    assert not may_hold_lint_object(NOT_READ[shape])


def test_a_turned_away_file_is_still_checked_for_syntax(tmp_path: Path) -> None:
    (tmp_path / "web.yaml").write_text(NOT_READ["Deployment"])
    (tmp_path / "broken.yaml").write_text("kind: Deployment\nspec: [1, 2\n")
    report = lint_paths([str(tmp_path)])
    assert [(f.code, f.file, f.severity) for f in report.findings] == [
        ("TS191", str(tmp_path / "broken.yaml"), "note")
    ]
    assert report.files == 2


def test_only_the_documents_lint_reads_are_kept_from_a_file(tmp_path: Path) -> None:
    (tmp_path / "tenant.yaml").write_text(
        f"{NOT_READ['Deployment']}---\n{SHAPES['KubernetesNodes']}---\n{NOT_READ['plain Service']}"
    )
    documents, problems = load_paths([str(tmp_path)])
    assert [(d.index, d.get(("kind",)), d.line(("spec",))) for d in documents] == [
        (1, "KubernetesNodes", 13)
    ]
    assert problems == []


# A KubernetesNodes CPU pool booting an NVIDIA schematic (TS101), spelt in each way YAML allows
# that a look at the text's shape rather than its words could miss.
_CPU_POOL_KEYS = """\
apiVersion: apps.cozystack.io/v1alpha1
metadata: {name: t-cpu}
spec:
  cluster: t
  gpus: []
  talos: {version: v1.13.6, schematicID: SCHEMATIC}
"""
SPELLINGS = {
    "indented by two spaces": "  kind: KubernetesNodes\n"
    + "".join(f"  {line}\n" for line in _CPU_POOL_KEYS.splitlines()),
    "indented by two spaces after ---": "kind: ConfigMap\n---\n  kind: KubernetesNodes\n"
    + "".join(f"  {line}\n" for line in _CPU_POOL_KEYS.splitlines()),
    "a comment between kind: and its value": "kind: # the pool\n  KubernetesNodes\n"
    + _CPU_POOL_KEYS,
    "a !!str tag": "kind: !!str KubernetesNodes\n" + _CPU_POOL_KEYS,
    "an anchor": "kind: &k KubernetesNodes\n" + _CPU_POOL_KEYS,
    "an explicit key": "? kind\n: KubernetesNodes\n" + _CPU_POOL_KEYS,
    "CR-only line ends": ("kind: KubernetesNodes\n" + _CPU_POOL_KEYS).replace("\n", "\r"),
}


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_every_spelling_of_a_kubernetes_nodes_is_read(tmp_path: Path, spelling: str) -> None:
    from schematic.core.model import Schematic

    nvidia = Schematic.from_extensions(
        ["siderolabs/nvidia-container-toolkit-lts", "siderolabs/nvidia-open-gpu-kernel-modules-lts"]
    )
    (tmp_path / "schematic.yaml").write_text(nvidia.canonical())
    text = SPELLINGS[spelling].replace("SCHEMATIC", nvidia.id)
    assert yaml.safe_load_all(text)  # valid YAML, as the loader reads it
    (tmp_path / "pool.yaml").write_bytes(text.encode())
    report = lint_paths([str(tmp_path)])
    hits = [(f.code, f.file, f.object) for f in report.findings if f.severity == "error"]
    assert hits == [("TS101", str(tmp_path / "pool.yaml"), "t-cpu")], spelling
