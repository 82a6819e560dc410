"""`lint` of a 3,000-file GitOps tree: CPU time and peak memory against PyYAML's C loader.

Targets (each a child process; medians of several runs, baseline and measured alternating):

- ``talos-schematic lint TREE`` within 0.5x the CPU time (user + system) of a child that reads
  every ``*.yaml``/``*.yml``/``*.json`` file of the tree with
  ``yaml.load_all(text, Loader=yaml.CSafeLoader)`` (both counted from interpreter start);
- its peak resident set size at most 150 MB.

CPU time rather than wall time: the machine may be shared. The tree is generated into a
temporary folder by a seeded generator (the same bytes on every run), in the mix of a GitOps
repository: mostly ordinary manifests (Deployment + Service + ConfigMap, RBAC, Ingress), Helm
chart templates with ``{{ }}``, CustomResourceDefinitions with large OpenAPI schemas, chart
values, Flux HelmReleases, Grafana dashboards (JSON), and a few Cozystack KubernetesNodes and
Kubernetes apps, Talos machine-config patches and schematic files. Their shapes follow public
files of cozystack/cozystack (packages/apps/kubernetes-nodes/values.yaml, packages/apps/
kubernetes/values.yaml, packages/system/*/charts/*/templates, packages/system/*/crds,
packages/system/gpu-operator/examples) and the Talos docs' NVIDIA patches. Prints the figures;
exits 1 when a target is missed.

    .venv/bin/python benchmarks/lint.py
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

FILES = 3_000
RUNS = 3
TIME_FACTOR = 0.5
MEMORY_MB = 150

SCHEMATIC_ID = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
BASELINE = """\
import os, sys, yaml
for root, dirs, files in os.walk(sys.argv[1]):
    for name in files:
        if name.endswith((".yaml", ".yml", ".json")):
            with open(os.path.join(root, name), encoding="utf-8") as handle:
                text = handle.read()
            try:
                for _ in yaml.load_all(text, Loader=yaml.CSafeLoader):
                    pass
            except yaml.YAMLError:
                pass
"""


def _app_manifests(n: int, rng: random.Random) -> str:
    app = f"svc-{n:04d}"
    env = "".join(
        f'            - name: VAR_{i}\n              value: "{rng.getrandbits(40):x}"\n'
        for i in range(rng.randint(2, 12))
    )
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {app}
  namespace: team-{n % 17}
  labels:
    app.kubernetes.io/name: {app}
    app.kubernetes.io/part-of: shop
spec:
  replicas: {rng.randint(1, 5)}
  selector:
    matchLabels:
      app.kubernetes.io/name: {app}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: {app}
      annotations:
        checksum/config: {rng.getrandbits(256):064x}
    spec:
      serviceAccountName: {app}
      securityContext:
        runAsNonRoot: true
        seccompProfile:
          type: RuntimeDefault
      containers:
        - name: {app}
          image: ghcr.io/example/{app}:1.{n % 30}.{rng.randint(0, 9)}
          imagePullPolicy: IfNotPresent
          ports:
            - name: http
              containerPort: 8080
              protocol: TCP
          env:
{env}          readinessProbe:
            httpGet:
              path: /healthz
              port: http
            periodSeconds: 10
          resources:
            requests:
              cpu: {rng.choice(["50m", "100m", "250m"])}
              memory: {rng.choice(["64Mi", "128Mi", "512Mi"])}
            limits:
              memory: {rng.choice(["256Mi", "1Gi"])}
---
apiVersion: v1
kind: Service
metadata:
  name: {app}
  namespace: team-{n % 17}
spec:
  type: ClusterIP
  selector:
    app.kubernetes.io/name: {app}
  ports:
    - name: http
      port: 80
      targetPort: http
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {app}-config
  namespace: team-{n % 17}
data:
  LOG_LEVEL: info
  config.yaml: |
    listen: 0.0.0.0:8080
    upstreams:
      - http://{app}-backend:9000
    timeout: {rng.randint(1, 60)}s
"""


def _rbac(n: int, rng: random.Random) -> str:
    rules = "".join(
        f"  - apiGroups: [\"{group}\"]\n    resources: [\"{res}\"]\n"
        f"    verbs: [\"get\", \"list\", \"watch\"]\n"
        for group, res in rng.sample(
            [("", "pods"), ("", "services"), ("apps", "deployments"), ("batch", "jobs"),
             ("networking.k8s.io", "ingresses"), ("", "configmaps")],
            k=3,
        )
    )  # fmt: skip
    return f"""\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: reader-{n}
rules:
{rules}---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: reader-{n}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: reader-{n}
subjects:
  - kind: ServiceAccount
    name: reader-{n}
    namespace: team-{n % 17}
"""


def _ingress(n: int, rng: random.Random) -> str:
    return f"""\
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web-{n}
  annotations:
    cert-manager.io/cluster-issuer: letsencrypt-prod
    nginx.ingress.kubernetes.io/proxy-body-size: "{rng.randint(1, 100)}m"
spec:
  ingressClassName: nginx
  tls:
    - hosts: [web-{n}.example.org]
      secretName: web-{n}-tls
  rules:
    - host: web-{n}.example.org
      http:
        paths:
          - path: /
            pathType: Prefix
            backend:
              service:
                name: web-{n}
                port:
                  name: http
"""


def _helm_template(n: int, rng: random.Random) -> str:
    # As charts under packages/system/*/charts/*/templates write them.
    return f"""\
{{{{- if .Values.component{n}.enabled }}}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{{{ include "chart.fullname" . }}}}-c{n}
  labels:
    {{{{- include "chart.labels" . | nindent 4 }}}}
spec:
  replicas: {{{{ .Values.component{n}.replicas }}}}
  selector:
    matchLabels:
      {{{{- include "chart.selectorLabels" . | nindent 6 }}}}
  template:
    spec:
      {{{{- with .Values.imagePullSecrets }}}}
      imagePullSecrets:
        {{{{- toYaml . | nindent 8 }}}}
      {{{{- end }}}}
      containers:
        - name: c{n}
          image: "{{{{ .Values.image.repository }}}}:{{{{ .Values.image.tag }}}}"
          args:
            - --metrics-bind-address=:{8000 + rng.randint(0, 99)}
          resources:
            {{{{- toYaml .Values.component{n}.resources | nindent 12 }}}}
{{{{- end }}}}
"""


def _schema(depth: int, rng: random.Random) -> dict[str, object]:
    if depth == 0:
        return {
            "type": rng.choice(["string", "integer", "boolean"]),
            "description": "A field of the resource. " * rng.randint(1, 6),
        }
    return {
        "type": "object",
        "description": "Defines the desired state of this part of the resource.",
        "properties": {f"field{i}": _schema(depth - 1, rng) for i in range(rng.randint(2, 6))},
    }


def _crd(n: int, rng: random.Random) -> str:
    document = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets{n}.example.io"},
        "spec": {
            "group": "example.io",
            "names": {"kind": f"Widget{n}", "plural": f"widgets{n}"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": _schema(rng.randint(3, 4), rng)},
                }
            ],
        },
    }
    return json.dumps(document, indent=2) if n % 5 == 0 else _yaml(document)


def _yaml(value: object) -> str:
    import yaml

    return str(yaml.safe_dump(value, sort_keys=False))


def _values(n: int, rng: random.Random) -> str:
    return f"""\
replicaCount: {rng.randint(1, 3)}
image:
  repository: ghcr.io/example/chart-{n}
  tag: ""
  pullPolicy: IfNotPresent
serviceAccount:
  create: true
  annotations: {{}}
podSecurityContext:
  fsGroup: 2000
resources:
  limits:
    memory: 512Mi
  requests:
    cpu: 100m
nodeSelector: {{}}
tolerations: []
metrics:
  enabled: {str(rng.random() < 0.5).lower()}
  serviceMonitor:
    interval: 30s
"""


def _helm_release(n: int, rng: random.Random) -> str:
    chart = rng.choice(["ingress-nginx", "cert-manager", "cilium", "metallb", "velero"])
    return f"""\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: {chart}-{n}
  namespace: flux-system
spec:
  interval: 10m
  chart:
    spec:
      chart: {chart}
      version: 1.{n % 20}.x
      sourceRef:
        kind: HelmRepository
        name: {chart}
  install:
    remediation:
      retries: 3
  values:
    replicaCount: {rng.randint(1, 3)}
    resources:
      requests:
        cpu: 100m
        memory: 128Mi
"""


def _dashboard(n: int, rng: random.Random) -> str:
    panels = [
        {
            "id": i,
            "type": "timeseries",
            "title": f"Panel {i}",
            "targets": [{"expr": f'sum(rate(http_requests_total{{job="svc-{n}"}}[5m]))'}],
            "gridPos": {"h": 8, "w": 12, "x": 12 * (i % 2), "y": 8 * (i // 2)},
        }
        for i in range(rng.randint(4, 20))
    ]
    return json.dumps({"title": f"Service {n}", "uid": f"{n:08x}", "panels": panels}, indent=2)


def _kubernetes_nodes(n: int, rng: random.Random) -> str:
    # packages/apps/kubernetes-nodes: a GPU pool of a tenant cluster.
    return f"""\
apiVersion: apps.cozystack.io/v1alpha1
kind: KubernetesNodes
metadata:
  name: tenant{n}-gpu
spec:
  cluster: tenant{n}
  instanceType: u1.2xlarge
  minReplicas: 0
  maxReplicas: {rng.randint(2, 8)}
  gpus:
    - name: nvidia.com/AD102GL_L40S
  talos:
    version: v1.13.6
    schematicID: {SCHEMATIC_ID}
"""


def _kubernetes_app(n: int, rng: random.Random) -> str:
    # packages/apps/kubernetes values: node groups and add-ons.
    return f"""\
apiVersion: apps.cozystack.io/v1alpha1
kind: Kubernetes
metadata:
  name: tenant{n}
spec:
  version: v1.33
  nodeGroups:
    md0:
      minReplicas: 0
      maxReplicas: {rng.randint(2, 10)}
      instanceType: u1.medium
      roles: [ingress-nginx]
  addons:
    certManager:
      enabled: true
    ingressNginx:
      enabled: true
"""


def _machine_patch(n: int, rng: random.Random) -> str:
    # The Talos docs' NVIDIA patches (kernel modules and the sysctl the toolkit needs).
    return """\
machine:
  kernel:
    modules:
      - name: nvidia
      - name: nvidia_uvm
      - name: nvidia_drm
      - name: nvidia_modeset
  sysctls:
    net.core.bpf_jit_harden: 1
"""


def _schematic(n: int, rng: random.Random) -> str:
    return f"""\
customization:
  extraKernelArgs:
    - console=ttyS{n % 2}
  systemExtensions:
    officialExtensions:
      - siderolabs/nvidia-container-toolkit-lts
      - siderolabs/nvidia-open-gpu-kernel-modules-lts
"""


# (how many, folder, file suffix, writer)
MIX: tuple[tuple[int, str, str, Callable[[int, random.Random], str]], ...] = (
    (1150, "apps", ".yaml", _app_manifests),
    (300, "rbac", ".yaml", _rbac),
    (250, "ingress", ".yaml", _ingress),
    (550, "charts/templates", ".yaml", _helm_template),
    (120, "crds", ".yaml", _crd),
    (200, "charts/values", ".yaml", _values),
    (250, "flux", ".yaml", _helm_release),
    (100, "dashboards", ".json", _dashboard),
    (20, "tenants/nodes", ".yaml", _kubernetes_nodes),
    (20, "tenants/apps", ".yaml", _kubernetes_app),
    (25, "talos", ".yaml", _machine_patch),
    (15, "schematics", ".yaml", _schematic),
)


def write_tree(root: Path) -> int:
    rng = random.Random(31)
    written = 0
    for count, folder, suffix, writer in MIX:
        (root / folder).mkdir(parents=True, exist_ok=True)
        for n in range(count):
            (root / folder / f"f{n:04d}{suffix}").write_text(writer(n, rng), encoding="utf-8")
            written += 1
    return written


def measure(command: list[str]) -> tuple[float, float, int]:
    """CPU seconds (user + system), peak resident megabytes and exit status of one child."""
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    return (
        usage.ru_utime + usage.ru_stime,
        usage.ru_maxrss / 1024,
        os.waitstatus_to_exitcode(status),
    )


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "tree"
        files = write_tree(root)
        size_mb = sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 1e6
        baseline = [sys.executable, "-c", BASELINE, str(root)]
        lint = [sys.executable, "-m", "schematic", "lint", str(root)]
        runs: dict[str, list[tuple[float, float, int]]] = {"loader": [], "lint": []}
        for _ in range(RUNS):
            runs["loader"].append(measure(baseline))
            runs["lint"].append(measure(lint))
    base_s = statistics.median(s for s, _, _ in runs["loader"])
    base_mb = statistics.median(m for _, m, _ in runs["loader"])
    took_s = statistics.median(s for s, _, _ in runs["lint"])
    took_mb = statistics.median(m for _, m, _ in runs["lint"])
    codes = {code for _, _, code in runs["lint"]}
    print(f"tree: {files} files, {size_mb:.1f} MB")
    print(f"C loader: {base_s:.2f} s CPU, peak {base_mb:.0f} MB")
    print(
        f"lint:     {took_s:.2f} s CPU ({took_s / base_s:.2f}x), peak {took_mb:.0f} MB, "
        f"exit {sorted(codes)}"
    )
    missed = []
    if took_s > TIME_FACTOR * base_s:
        missed.append(f"time {took_s / base_s:.2f}x > {TIME_FACTOR}x the C loader")
    if took_mb > MEMORY_MB:
        missed.append(f"memory {took_mb:.0f} MB > {MEMORY_MB} MB")
    if not codes <= {0, 3}:
        missed.append(f"lint exited {sorted(codes)}")
    print("targets met" if not missed else "missed: " + "; ".join(missed))
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
