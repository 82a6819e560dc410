"""An error no known cause explains (TS213): an NVIDIA or Talos error line that no message of
the catalogue matches is said, quoting the line, with what to collect — never dropped."""

from __future__ import annotations

from schematic.doctor.triage.causes.shown import Finding
from schematic.doctor.triage.model import ClusterModel
from schematic.doctor.triage.signals import Kind

__all__ = ["UNEXPLAINED_FAILURE", "unknown_failures"]

# An error line no cause explains is a failure still: the verdict counts it as one.
UNEXPLAINED_FAILURE = "TS213"

# How many of a machine's unknown error lines a finding quotes.
_QUOTED_LINES = 3

# What to collect next, per source of the line ({node} is the machine).
_COLLECT = {
    "nvidia-driver": (
        "talosctl -n {node} dmesg | grep NVRM: every driver message around the quoted line",
        "talosctl -n {node} get pcidevices and get extensions: the GPU and the driver version",
    ),
    "container-toolkit": (
        "kubectl describe pod of the pod that failed: the whole runtime error",
        "talosctl -n {node} get extensions (nvidia-container-toolkit beside the driver) and "
        "talosctl -n {node} read /proc/modules",
    ),
    "fabric-manager": (
        "talosctl -n {node} logs ext-nvidia-fabricmanager: the whole log from its start",
        "talosctl -n {node} get extensions: the fabric manager's version beside the driver's",
        "nvidia-smi -q | grep -A 2 Fabric on the node (from a pod that holds a GPU)",
    ),
    "gpu-operator": (
        "kubectl -n <namespace> logs <pod> --all-containers --previous: why its container exits",
        "kubectl -n <namespace> describe pod <pod>: the failing container and its last state",
    ),
    "talos": (
        "talosctl -n {node} dmesg: the lines before the failed task",
        "talosctl -n {node} get machinestatus",
    ),
}


def unknown_failures(model: ClusterModel) -> list[Finding]:
    """TS213 for each machine whose logs hold an error line no known message matches (a known
    error on the machine explains it: see the causes' precedence in diagnose.py)."""
    found = []
    for machine in model.sorted_machines():
        lines = machine.of(Kind.UNKNOWN_FAILURE)
        if not lines:
            continue
        lines = list({s.evidence.text: s for s in lines}.values())
        sources = sorted({s.value for s in lines})
        node = machine.name or "<node>"
        summary = [
            f"{len(lines)} error line{'s' if len(lines) > 1 else ''} from "
            f"{', '.join(sources)} that no known failure matches (quoted below)"
        ]
        collect = [item.format(node=node) for source in sources for item in _COLLECT[source]]
        found.append(
            Finding(
                UNEXPLAINED_FAILURE,
                machine,
                [s.evidence for s in lines[:_QUOTED_LINES]],
                [("", "no failure triage knows matches the line")],
                summary,
                collect,
            )
        )
    return found
