"""`triage` at cluster scale and at the text evidence limit of any one kind: time and memory.

Targets (each run a child process, timed by its CPU seconds: user and system; medians of several
runs, baseline and measured alternating):

- ``talos-schematic triage pods.json nodes.json`` at the default limits, on a generated
  ``kubectl get pods -A -o json`` of 5,000 pods (about 56 MB) over 200 nodes, within 1.5x the
  time of ``json.load`` of the same two files with a 20 % margin (1.2x), and its peak resident
  set size within 2.5x their size. One pool of 50 nodes (``ml-cpu``) reboots on the 70-minute
  timer (every pod on it restarted 14 times together, about every 70 minutes); on every other
  node each pod restarted once. The report must hold one diagnosis naming the pool and its 50
  nodes, and nothing about the healthy nodes;
- blank lines, one line, and kernel continuation lines, each just under the text evidence
  limit (``INPUT_LIMITS[InputKind.EVIDENCE]``, 6 MiB; 16 MiB before): each within the 5 s
  promise with a 20 % margin (4 s) and 300 MB, each ending as it must: exit 4, nothing could be
  judged (none holds evidence; the continuation lines' message is no known one).

The pods are built from one realistic pod (the fields ``kubectl get pods -o json`` prints,
``managedFields`` included) with distinct names, nodes, and restart counts; a seeded generator
makes the files the same on every run. Prints the figures; exits 1 when a target is missed.

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

from schematic.safe_yaml import INPUT_LIMITS, InputKind, format_size

PODS = 5_000
NODES = 200
BROKEN = 50  # the nodes of pool ml-cpu
RUNS = 3
TIME_FACTOR = 1.5
MEMORY_FACTOR = 2.5
# Each target is met with this much to spare: a figure within it only on a quiet day is not.
MARGIN = 0.2
KIND_SECONDS = 5.0
KIND_MB = 300.0
NOTHING_JUDGED = 4  # triage's exit when no input was read as evidence
KIND_SIZE = INPUT_LIMITS[InputKind.EVIDENCE] - 1024  # just under the kind's default limit
SIZE_SHOWN = format_size(INPUT_LIMITS[InputKind.EVIDENCE])
# Kubernetes' random-suffix alphabet, for node names as Cluster API gives them.
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def node_name(number: int) -> str:
    pool = "ml-cpu" if number < BROKEN else f"pool-{number % 3}"
    return f"{pool}-{_ALPHABET[number // 27 % 27]}{_ALPHABET[number % 27]}x7k"


def _pod(number: int, rng: random.Random) -> dict[str, Any]:
    node = node_name(number % NODES)
    name = f"web-{number:05d}-{rng.getrandbits(24):06x}"
    broken = number % NODES < BROKEN
    restarts = 14 if broken else 1
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
                # 14 restarts since 19:05:40 the day before: one every 70 minutes; the healthy
                # nodes' single restart was a drain.
                "finishedAt": "2026-11-20T11:25:40Z" if broken else "2026-11-19T22:00:00Z",
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


def _node(number: int) -> dict[str, Any]:
    name = node_name(number)
    address = f"10.244.{number // 250}.{number % 250 + 1}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"},
        },
        "spec": {"providerID": f"kubevirt://{name}"},
        "status": {
            "addresses": [
                {"address": address, "type": "InternalIP"},
                {"address": name, "type": "Hostname"},
            ],
            "conditions": [
                {
                    "lastHeartbeatTime": "2026-11-20T11:30:02Z",
                    "lastTransitionTime": "2026-11-20T11:27:31Z",
                    "message": "kubelet is posting ready status",
                    "reason": "KubeletReady",
                    "status": "True",
                    "type": "Ready",
                }
            ],
            "nodeInfo": {
                "bootID": f"{number:08x}-8a63-4d1f-9e7c-2b1d7c5e9a30",
                "kernelVersion": "6.12.40-talos",
                "osImage": "Talos (v1.13.6)",
            },
        },
    }


def write_nodes(path: Path) -> None:
    document = {
        "apiVersion": "v1",
        "items": [_node(number) for number in range(NODES)],
        "kind": "List",
        "metadata": {"resourceVersion": ""},
    }
    path.write_text(json.dumps(document, indent=4, sort_keys=True) + "\n", encoding="utf-8")


def write_kinds(folder: Path) -> dict[str, Path]:
    """Each hostile evidence kind, just under its limit."""
    files = {
        "blank lines": folder / "blank.log",
        "one line": folder / "one-line.log",
        "continuation lines": folder / "continued.log",
    }
    files["blank lines"].write_bytes(b"\n" * KIND_SIZE)
    files["one line"].write_bytes(b"x" * (KIND_SIZE - 1) + b"\n")
    head = b"[    5.559842] NVRM: The NVIDIA GPU 0000:02:00.0 (PCI ID: 10de:2c58)\n"
    more = b"               NVRM: installed in this system requires use of the NVIDIA open.\n"
    files["continuation lines"].write_bytes(head + more * ((KIND_SIZE - len(head)) // len(more)))
    return files


def measure(command: list[str]) -> tuple[float, float, int]:
    """CPU seconds (user and system), peak resident megabytes and exit status of one child.

    CPU time, not the wall clock: on a machine shared with other work the wall clock measures
    the others too. The wall clock is printed beside it.
    """
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    WALL.append(time.perf_counter() - started)
    seconds = usage.ru_utime + usage.ru_stime
    return seconds, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


WALL: list[float] = []


def _check_report(path: Path) -> list[str]:
    """What the cluster run must say: one diagnosis naming pool ml-cpu and its 50 nodes, and
    nothing about the healthy nodes."""
    triage = [sys.executable, "-m", "schematic", "triage", "-f", "json", *_inputs(path)]
    done = subprocess.run(triage, capture_output=True, text=True, check=False)
    report = json.loads(done.stdout)
    broken = sorted(node_name(n) for n in range(BROKEN))
    about = [d for d in report["diagnoses"] if d["nodes"]]
    problems = []
    if len(about) != 1 or about[0]["nodes"] != broken or about[0]["pools"] != ["ml-cpu"]:
        shown = [(d["code"], d["pools"], len(d["nodes"])) for d in report["diagnoses"]]
        problems.append(f"expected one diagnosis of pool ml-cpu's 50 nodes, got {shown}")
    else:
        print(
            f"report:     {about[0]['code']} → pool ml-cpu → {len(about[0]['nodes'])} nodes; "
            f"{len(report['diagnoses']) - 1} other diagnoses"
        )
    return problems


def _inputs(folder: Path) -> list[str]:
    return [str(folder / "pods.json"), str(folder / "nodes.json")]


def main() -> int:
    if sys.argv[1:2] == ["--write"]:
        folder = Path(sys.argv[2])
        write_pods(folder / "pods.json")
        write_nodes(folder / "nodes.json")
        return 0
    missed = []
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        # Written by a child: a parent that built the list keeps its memory, and a child it
        # forks starts its peak there.
        subprocess.run([sys.executable, __file__, "--write", str(folder)], check=True)
        size = sum(Path(f).stat().st_size for f in _inputs(folder))
        baseline = [
            sys.executable,
            "-c",
            "import json,sys; [json.load(open(f)) for f in sys.argv[1:]]",
            *_inputs(folder),
        ]
        triage = [sys.executable, "-m", "schematic", "triage", "-f", "json", *_inputs(folder)]
        runs: dict[str, list[tuple[float, float, int]]] = {"json.load": [], "triage": []}
        for _ in range(RUNS):
            runs["json.load"].append(measure(baseline))
            runs["triage"].append(measure(triage))
        missed += _check_report(folder)
        kinds = write_kinds(folder)
        kind_runs = {
            kind: measure([sys.executable, "-m", "schematic", "triage", str(file)])
            for kind, file in kinds.items()
        }
    size_mb = size / 1e6
    base_s = statistics.median(s for s, _, _ in runs["json.load"])
    base_mb = statistics.median(m for _, m, _ in runs["json.load"])
    took_s = statistics.median(s for s, _, _ in runs["triage"])
    took_mb = statistics.median(m for _, m, _ in runs["triage"])
    codes = {code for _, _, code in runs["triage"]}
    print(f"inputs:     {PODS} pods and {NODES} nodes, {size_mb:.1f} MB, default limits")
    print(f"json.load:  {base_s:.2f} s CPU, peak {base_mb:.0f} MB")
    print(
        f"triage:     {took_s:.2f} s CPU ({took_s / base_s:.2f}x), peak {took_mb:.0f} MB "
        f"({took_mb / size_mb:.2f}x the files), exit {sorted(codes)}"
    )
    if took_s > (1 - MARGIN) * TIME_FACTOR * base_s:
        missed.append(f"time {took_s / base_s:.2f}x > {TIME_FACTOR}x json.load less {MARGIN:.0%}")
    if took_mb > MEMORY_FACTOR * size_mb:
        missed.append(f"memory {took_mb / size_mb:.2f}x > {MEMORY_FACTOR}x the files")
    if not codes <= {0, 3}:
        missed.append(f"triage exited {sorted(codes)}")
    for kind, (seconds, peak, code) in kind_runs.items():
        print(f"{SIZE_SHOWN} of {kind}: {seconds:.2f} s CPU, peak {peak:.0f} MB, exit {code}")
        if seconds > (1 - MARGIN) * KIND_SECONDS or peak > KIND_MB or code != NOTHING_JUDGED:
            missed.append(f"{SIZE_SHOWN} of {kind}: {seconds:.2f} s, {peak:.0f} MB, exit {code}")
    print(f"(wall clock of every run: {min(WALL):.2f} to {max(WALL):.2f} s)")
    print("targets met" if not missed else "missed: " + "; ".join(missed))
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
