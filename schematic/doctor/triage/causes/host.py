"""Whether the inputs show a machine runs Talos: the causes whose failure only Talos has (its
boot timer, its extensions, the GPU Operator's parts that Talos's extensions replace) are
weighed against it (``Cause.talos_only`` in diagnose.py).

Talos is shown by the machine's Node (``osImage: Talos (v1.11.5)``, a ``-talos`` kernel, the
labels and annotation Talos puts on it), by a
line only Talos writes (its boot sequence, its services, its extensions, its module loader), or
by any such input of the cluster when the machine's own say nothing of its OS. A Node whose
``osImage`` names another system shows it does not.
"""

from __future__ import annotations

from dataclasses import replace

from schematic.doctor.triage.causes.shown import Finding
from schematic.doctor.triage.causes.unknown import UNEXPLAINED_FAILURE
from schematic.doctor.triage.model import ClusterModel, Machine
from schematic.doctor.triage.signals import Evidence, Kind, Signal
from schematic.doctor.triage.texts import rule_text

__all__ = ["TALOS_KINDS", "only_on_talos", "talos_shown"]

# What only Talos prints or holds: its boot sequence and services, its resources (talosctl),
# its module loader's "error loading module", talosctl health's checks, a Talos kernel's name.
TALOS_KINDS = (
    Kind.SERVICE_WAITING,
    Kind.BOOT_FAILED,
    Kind.BOOT_DONE,
    Kind.REBOOTING,
    Kind.UPGRADE_REVERTED,
    Kind.CSR_SIGN_FAILED,
    Kind.APID_WAITING_CERTIFICATES,
    Kind.SERVICE_STATE,
    Kind.EXTENSION,
    Kind.MACHINE_STAGE,
    Kind.MACHINE_CONFIG,
    Kind.MODULE_LOAD_FAILED,
    Kind.HEALTH_CHECK,
    Kind.OPERATOR_DRIVER_ON_TALOS,
)


def _is_talos(os: Signal) -> bool:
    return os.value.startswith("Talos") or os.get("kernel").endswith("-talos")


def _talos_node(node: Signal) -> bool:
    """A Node that Talos labelled or annotated: its extensions' labels
    (``extensions.talos.dev/<name>``), the schematic annotation, or Node Feature Discovery's
    kernel label naming a Talos kernel."""
    labels = node.get("labels")
    return (
        bool(node.get("schematic"))
        or "extensions.talos.dev/" in labels
        or any(
            label.startswith("feature.node.kubernetes.io/kernel-version.full=")
            and label.endswith("-talos")
            for label in labels.split(",")
        )
    )


def _own(machine: Machine) -> Evidence | None:
    """The first line of the machine's own inputs that only Talos writes."""
    for kind in TALOS_KINDS:
        if machine.of(kind):
            return machine.of(kind)[0].evidence
    talos = [s for s in machine.of(Kind.HOST_OS) if _is_talos(s)]
    talos += [s for s in machine.of(Kind.NODE) if _talos_node(s)]
    return talos[0].evidence if talos else None


def other_os(model: ClusterModel, machine: Machine) -> Signal | None:
    """The Node that shows ``machine`` runs another system than Talos (``Ubuntu 22.04.4
    LTS``): its own, or, for a machine no Node names (a log without its node), the cluster's
    when no input shows Talos anywhere."""
    own = next((s for s in machine.of(Kind.HOST_OS) if not _is_talos(s)), None)
    if own is not None or machine.of(Kind.HOST_OS) or machine.is_kubernetes_node:
        return own
    if any(_own(m) is not None for m in model.sorted_machines()):
        return None
    return next((s for s in model.everywhere(Kind.HOST_OS) if not _is_talos(s)), None)


def talos_shown(model: ClusterModel, machine: Machine) -> Evidence | None:
    """What shows that ``machine`` runs Talos: its own inputs first, else the cluster's (the
    inputs of one triage are one cluster's, and a Talos cluster runs Talos on every node);
    None when nothing does, or its Node names another system."""
    if other_os(model, machine) is not None:
        return None
    return _own(machine) or next(
        (found for other in model.sorted_machines() if (found := _own(other)) is not None), None
    )


def only_on_talos(model: ClusterModel, findings: list[Finding]) -> list[Finding]:
    """``findings`` of a cause only Talos has, held to what the inputs show of each host: as
    they are on Talos; where nothing shows the OS, a warning said to hold only on Talos (still
    a failure shown: the verdict counts it); on a host shown to run another system, the lines
    said as a failure no known cause explains."""
    kept = []
    for finding in findings:
        machine = finding.machine
        if machine is None or talos_shown(model, machine) is not None:
            kept.append(finding)
            continue
        node = machine.name or "the node"
        title = rule_text(finding.code).title
        other = other_os(model, machine)
        if other is not None:
            kept.append(
                Finding(
                    UNEXPLAINED_FAILURE,
                    machine,
                    [*finding.evidence, other.evidence],
                    [(finding.code, f"{node} runs {other.value}, not Talos")],
                    [
                        f"{node} runs {other.value}: {finding.code} ({title}) is a failure of "
                        "Talos nodes and does not apply, and no known failure of this host "
                        "explains the lines quoted"
                    ],
                    # What the Talos cause would have collected is Talos's to ask.
                    [
                        "the log the quoted lines are from, from its start (`kubectl logs`, "
                        "`kubectl describe pod`, `journalctl -k`): the lines before them say "
                        "what failed"
                    ],
                )
            )
            continue
        kept.append(
            replace(
                finding,
                severity="warning",
                if_talos=True,
                summary=[
                    *finding.summary,
                    f"nothing among the inputs shows that {node} runs Talos: {finding.code} "
                    f"({title}) is a failure of Talos nodes, the cause here only if {node} runs "
                    "Talos",
                ],
                collect=[
                    f"kubectl get node {machine.name or '<node>'} -o wide: OS-IMAGE "
                    "`Talos (v…)` (or any talosctl output from the node) shows it runs Talos",
                    *finding.collect,
                ],
            )
        )
    return kept
