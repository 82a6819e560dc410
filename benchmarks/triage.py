"""`triage` on a large `kubectl get pods -A -o json`: time and peak memory against `json.load`.

Targets (each a child process; medians of several runs, baseline and measured alternating):

- ``talos-schematic triage pods.json`` on a generated list of 5,000 pods (about 50 MB) within
  2x the time of ``python -c "json.load(open(FILE))"`` on the same file;
- its peak resident set size under 3x the file's size.

The pods are built from one realistic pod (the fields ``kubectl get pods -o json`` prints,
``managedFields`` included) with distinct names, nodes, and restart counts; a seeded generator
makes the file the same on every run. Prints the figures; exits 1 when a target is missed.

    .venv/bin/python benchmarks/triage.py
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PODS = 5_000
RUNS = 3
TIME_FACTOR = 2.0
MEMORY_FACTOR = 3.0
MAX_INPUT = "128MiB"


def _pod(number: int, rng: random.Random) -> dict[str, Any]:
    node = f"tenant-a-md{number % 4}-{number % 97:05d}"
    name = f"web-{number:05d}-{rng.getrandbits(24):06x}"
    restarts = rng.choice([0, 0, 0, 1, 2, 14])
    container = {
        "containerID": f"containerd://{rng.getrandbits(128):032x}{rng.getrandbits(128):032x}",
        "image": "ghcr.io/example/web:1.27.3",
        "imageID": f"ghcr.io/example/web@sha256:{rng.getrandbits(256):064x}",
        "lastState": {},
        "name": "web",
        "ready": True,
        "restartCount": restarts,
        "started": True,
        "state": {"running": {"startedAt": "2026-11-20T11:16:40Z"}},
        "volumeMounts": [
            {
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                "name": f"kube-api-access-{number % 1000:05d}",
                "readOnly": True,
                "recursiveReadOnly": "Disabled",
            }
        ],
    }
    if restarts:
        container["lastState"] = {
            "terminated": {
                "containerID": f"containerd://{rng.getrandbits(128):032x}",
                "exitCode": 255,
                "finishedAt": "2026-11-20T11:16:22Z",
                "reason": "Unknown",
                "startedAt": "2026-11-20T10:06:31Z",
            }
        }
    managed = [
        {
            "apiVersion": "v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}}},
                "f:spec": {
                    "f:containers": {
                        'k:{"name":"web"}': {
                            ".": {},
                            "f:image": {},
                            "f:imagePullPolicy": {},
                            "f:name": {},
                            "f:ports": {".": {}, 'k:{"containerPort":8080,"protocol":"TCP"}': {}},
                            "f:resources": {".": {}, "f:limits": {}, "f:requests": {}},
                            "f:terminationMessagePath": {},
                            "f:terminationMessagePolicy": {},
                        }
                    },
                    "f:dnsPolicy": {},
                    "f:enableServiceLinks": {},
                    "f:restartPolicy": {},
                    "f:schedulerName": {},
                    "f:securityContext": {},
                    "f:terminationGracePeriodSeconds": {},
                },
            },
            "manager": "kube-controller-manager",
            "operation": "Update",
            "time": "2026-11-19T19:05:40Z",
        },
    ]
    conditions = [
        {
            "lastProbeTime": None,
            "lastTransitionTime": "2026-11-20T11:16:41Z",
            "status": "True",
            "type": kind,
        }
        for kind in (
            "PodReadyToStartContainers",
            "Initialized",
            "Ready",
            "ContainersReady",
            "PodScheduled",
        )
    ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-19T19:00:00Z"},
            "creationTimestamp": "2026-11-19T19:05:40Z",
            "generateName": f"web-{number:05d}-",
            "labels": {"app": "web", "pod-template-hash": f"{rng.getrandbits(40):010x}"},
            "managedFields": managed,
            "name": name,
            "namespace": f"team-{number % 12}",
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "blockOwnerDeletion": True,
                    "controller": True,
                    "kind": "ReplicaSet",
                    "name": f"web-{number:05d}",
                    "uid": f"{rng.getrandbits(128):032x}",
                }
            ],
            "resourceVersion": str(1_000_000 + number),
            "uid": f"{rng.getrandbits(128):032x}",
        },
        "spec": {
            "containers": [
                {
                    "image": "ghcr.io/example/web:1.27.3",
                    "imagePullPolicy": "IfNotPresent",
                    "name": "web",
                    "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                    "resources": {
                        "limits": {"cpu": "500m", "memory": "512Mi"},
                        "requests": {"cpu": "100m", "memory": "128Mi"},
                    },
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "volumeMounts": container["volumeMounts"],
                }
            ],
            "dnsPolicy": "ClusterFirst",
            "enableServiceLinks": True,
            "nodeName": node,
            "preemptionPolicy": "PreemptLowerPriority",
            "priority": 0,
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "serviceAccount": "default",
            "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 30,
            "tolerations": [
                {
                    "effect": "NoExecute",
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "tolerationSeconds": 300,
                },
                {
                    "effect": "NoExecute",
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "tolerationSeconds": 300,
                },
            ],
            "volumes": [
                {
                    "name": f"kube-api-access-{number % 1000:05d}",
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {
                                "configMap": {
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                    "name": "kube-root-ca.crt",
                                }
                            },
                            {
                                "downwardAPI": {
                                    "items": [
                                        {
                                            "fieldRef": {
                                                "apiVersion": "v1",
                                                "fieldPath": "metadata.namespace",
                                            },
                                            "path": "namespace",
                                        }
                                    ]
                                }
                            },
                        ],
                    },
                }
            ],
        },
        "status": {
            "conditions": conditions,
            "containerStatuses": [container],
            "hostIP": "10.244.3.17",
            "hostIPs": [{"ip": "10.244.3.17"}],
            "phase": "Running",
            "podIP": f"10.233.{number % 250}.{number % 200}",
            "podIPs": [{"ip": f"10.233.{number % 250}.{number % 200}"}],
            "qosClass": "Burstable",
            "startTime": "2026-11-19T19:05:40Z",
        },
    }


def write_pods(path: Path) -> None:
    """Write the pod list as kubectl does (4-space indent, sorted keys)."""
    rng = random.Random(30)
    document = {
        "apiVersion": "v1",
        "items": [_pod(number, rng) for number in range(PODS)],
        "kind": "List",
        "metadata": {"resourceVersion": ""},
    }
    path.write_text(json.dumps(document, indent=4, sort_keys=True) + "\n", encoding="utf-8")


def measure(command: list[str]) -> tuple[float, float, int]:
    """Seconds, peak resident megabytes and exit status of one child process."""
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    return seconds, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def main() -> int:
    if sys.argv[1:2] == ["--write"]:
        write_pods(Path(sys.argv[2]))
        return 0
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "pods.json"
        # Written by a child: a parent that built the list keeps its memory, and a child it
        # forks starts its peak there.
        subprocess.run([sys.executable, __file__, "--write", str(path)], check=True)
        size = path.stat().st_size
        baseline = [
            sys.executable,
            "-c",
            "import json,sys; json.load(open(sys.argv[1]))",
            str(path),
        ]
        triage = [
            sys.executable,
            "-m",
            "schematic",
            "triage",
            "--max-input-size",
            MAX_INPUT,
            "-f",
            "json",
            str(path),
        ]
        runs: dict[str, list[tuple[float, float, int]]] = {"json.load": [], "triage": []}
        for _ in range(RUNS):
            runs["json.load"].append(measure(baseline))
            runs["triage"].append(measure(triage))
    size_mb = size / 1e6
    base_s = statistics.median(s for s, _, _ in runs["json.load"])
    base_mb = statistics.median(m for _, m, _ in runs["json.load"])
    took_s = statistics.median(s for s, _, _ in runs["triage"])
    took_mb = statistics.median(m for _, m, _ in runs["triage"])
    codes = {code for _, _, code in runs["triage"]}
    print(f"pods.json: {PODS} pods, {size_mb:.1f} MB")
    print(f"json.load:  {base_s:.2f} s, peak {base_mb:.0f} MB")
    print(
        f"triage:     {took_s:.2f} s ({took_s / base_s:.2f}x), peak {took_mb:.0f} MB "
        f"({took_mb / size_mb:.2f}x the file), exit {sorted(codes)}"
    )
    missed = []
    if took_s > TIME_FACTOR * base_s:
        missed.append(f"time {took_s / base_s:.2f}x > {TIME_FACTOR}x json.load")
    if took_mb > MEMORY_FACTOR * size_mb:
        missed.append(f"memory {took_mb / size_mb:.2f}x > {MEMORY_FACTOR}x the file")
    if not codes <= {0, 3}:
        missed.append(f"triage exited {sorted(codes)}")
    print("targets met" if not missed else "missed: " + "; ".join(missed))
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
