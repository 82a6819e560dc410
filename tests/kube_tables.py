"""The API server's side of ``kubectl get``: the ``meta.k8s.io/v1`` Table it answers for pods
and services, so the stand-in server in kube_fake.py lets the real kubectl print its tables.

kubectl asks for a Table (``Accept: application/json;as=Table;v=v1;g=meta.k8s.io``) and only
lays it out: it drops the priority-1 columns unless ``-o wide``, adds NAMESPACE from each row's
object with ``-A``, upper-cases the headers and aligns the cells. The cells are the server's,
written here as kubernetes/kubernetes v1.35 writes them in
``pkg/printers/internalversion/printers.go`` (``AddHandlers``' column definitions, ``printPod``,
``printService``, ``getServiceExternalIP``, ``makePortString``) and
``staging/src/k8s.io/apimachinery/pkg/util/duration/duration.go`` (``HumanDuration``, the ages).
The server always renders the wide columns (``pkg/printers/storage``: ``Wide: true``).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

# (name, priority): priority 1 columns are shown only with -o wide.
_POD_COLUMNS = (
    ("Name", 0),
    ("Ready", 0),
    ("Status", 0),
    ("Restarts", 0),
    ("Age", 0),
    ("IP", 1),
    ("Node", 1),
    ("Nominated Node", 1),
    ("Readiness Gates", 1),
)
_SERVICE_COLUMNS = (
    ("Name", 0),
    ("Type", 0),
    ("Cluster-IP", 0),
    ("External-IP", 0),
    ("Port(s)", 0),
    ("Age", 0),
    ("Selector", 1),
)


def human_duration(elapsed: timedelta) -> str:
    """apimachinery's ``HumanDuration``: how kubectl's AGE and "(5m ago)" read."""
    seconds = int(elapsed.total_seconds())
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 60 * 2:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        return f"{minutes}m" if seconds % 60 == 0 else f"{minutes}m{seconds % 60}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" if hours % 24 == 0 else f"{hours // 24}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = hours // 24 % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def _time(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


def _since(value: str | None, now: datetime) -> str:
    """``translateTimestampSince``."""
    moment = _time(value)
    return "<unknown>" if moment is None else human_duration(now - moment)


def _restartable(container: dict[str, Any] | None) -> bool:
    """An init container with ``restartPolicy: Always`` (a sidecar)."""
    return bool(container) and (container or {}).get("restartPolicy") == "Always"


def _condition_true(status: dict[str, Any], kind: str) -> bool:
    return any(
        c.get("type") == kind and c.get("status") == "True" for c in status.get("conditions", [])
    )


def _terminated_reason(terminated: dict[str, Any], prefix: str) -> str:
    if terminated.get("reason"):
        return f"{prefix}{terminated['reason']}"
    if terminated.get("signal"):
        return f"{prefix}Signal:{terminated['signal']}"
    return f"{prefix}ExitCode:{terminated.get('exitCode', 0)}"


def _later(current: datetime | None, status: dict[str, Any]) -> datetime | None:
    finished = _time(((status.get("lastState") or {}).get("terminated") or {}).get("finishedAt"))
    if finished is None:
        return current
    return finished if current is None or current < finished else current


def _pod_cells(pod: dict[str, Any], now: datetime) -> list[Any]:
    spec, status = pod.get("spec", {}), pod.get("status", {})
    init_specs = {c["name"]: c for c in spec.get("initContainers", [])}
    total = len(spec.get("containers", [])) + sum(map(_restartable, init_specs.values()))
    ready = restarts = sidecar_restarts = 0
    last: datetime | None = None
    last_sidecar: datetime | None = None
    reason = status.get("reason") or status.get("phase", "")
    if any(
        c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated"
        for c in status.get("conditions", [])
    ):
        reason = "SchedulingGated"
    initializing = False
    init_statuses = status.get("initContainerStatuses", [])
    for index, container in enumerate(init_statuses):
        state = container.get("state", {})
        restarts += container.get("restartCount", 0)
        last = _later(last, container)
        sidecar = _restartable(init_specs.get(container["name"]))
        if sidecar:
            sidecar_restarts += container.get("restartCount", 0)
            last_sidecar = _later(last_sidecar, container)
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if terminated and terminated.get("exitCode", 0) == 0:
            continue
        if sidecar and container.get("started"):
            ready += bool(container.get("ready"))
            continue
        if terminated:
            reason = _terminated_reason(terminated, "Init:")
        elif waiting and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = "Init:" + waiting["reason"]
        else:
            reason = f"Init:{index}/{len(spec.get('initContainers', []))}"
        initializing = True
        break
    if not initializing or _condition_true(status, "Initialized"):
        restarts, last = sidecar_restarts, last_sidecar
        running = False
        for container in reversed(status.get("containerStatuses", [])):
            state = container.get("state", {})
            restarts += container.get("restartCount", 0)
            last = _later(last, container)
            waiting, terminated = state.get("waiting") or {}, state.get("terminated")
            if waiting.get("reason"):
                reason = waiting["reason"]
            elif terminated:
                reason = _terminated_reason(terminated, "")
            elif container.get("ready") and "running" in state:
                running = True
                ready += 1
        if reason == "Completed" and running:
            reason = "Running" if _condition_true(status, "Ready") else "NotReady"
    if pod["metadata"].get("deletionTimestamp"):
        if status.get("reason") == "NodeLost":
            reason = "Unknown"
        elif status.get("phase") not in ("Succeeded", "Failed"):
            reason = "Terminating"
    restart_cell = str(restarts)
    if restarts and last is not None:
        restart_cell = f"{restarts} ({human_duration(now - last)} ago)"
    gates = spec.get("readinessGates", [])
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions", [])}
    passed = sum(conditions.get(g.get("conditionType")) == "True" for g in gates)
    pod_ips = status.get("podIPs") or []
    return [
        pod["metadata"]["name"],
        f"{ready}/{total}",
        reason,
        restart_cell,
        _since(pod["metadata"].get("creationTimestamp"), now),
        (pod_ips[0].get("ip") if pod_ips else "") or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        f"{passed}/{len(gates)}" if gates else "<none>",
    ]


def _external_ip(service: dict[str, Any]) -> str:
    spec = service.get("spec", {})
    external = spec.get("externalIPs", [])
    kind = spec.get("type", "ClusterIP")
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) if external else "<none>"
    if kind == "LoadBalancer":
        ingress = (service.get("status", {}).get("loadBalancer") or {}).get("ingress", [])
        found = sorted({i.get("ip") or i.get("hostname") for i in ingress} - {None, ""})
        balanced = ",".join(found)
        if external:
            return ",".join([*(balanced.split(",") if balanced else []), *external])
        return balanced or "<pending>"
    if kind == "ExternalName":
        return str(spec.get("externalName", ""))
    return "<unknown>"


def _service_cells(service: dict[str, Any], now: datetime) -> list[Any]:
    spec = service.get("spec", {})
    ports = ",".join(
        f"{p['port']}:{p['nodePort']}/{p.get('protocol', 'TCP')}"
        if p.get("nodePort")
        else f"{p['port']}/{p.get('protocol', 'TCP')}"
        for p in spec.get("ports", [])
    )
    selector = spec.get("selector") or {}
    return [
        service["metadata"]["name"],
        spec.get("type", "ClusterIP"),
        (spec.get("clusterIPs") or ["<none>"])[0],
        _external_ip(service),
        ports or "<none>",
        _since(service["metadata"].get("creationTimestamp"), now),
        ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>",
    ]


_PRINTERS = {"pods": (_POD_COLUMNS, _pod_cells), "services": (_SERVICE_COLUMNS, _service_cells)}
TABLE_RESOURCES = frozenset(_PRINTERS)


def table(resource: str, items: list[dict[str, Any]], now: datetime) -> dict[str, Any]:
    """The Table the API server answers for a list of ``resource`` ("pods", "services")."""
    columns, cells = _PRINTERS[resource]
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": "1"},
        "columnDefinitions": [
            {
                "name": name,
                "type": "string",
                "format": "name" if name == "Name" else "",
                "description": "",
                "priority": priority,
            }
            for name, priority in columns
        ],
        "rows": [
            {
                "cells": cells(item, now),
                # The object as the server attaches it by default (includeObject=Metadata):
                # kubectl takes -A's NAMESPACE column from it.
                "object": {
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": item["metadata"],
                },
            }
            for item in items
        ],
    }
