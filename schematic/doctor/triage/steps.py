"""The steps that collect what triage reads: one table that `triage --commands` renders as a
script and `triage --collect` runs.

Cozystack facts used here (cozystack/cozystack, see schematic/data/SOURCES.md): a tenant
cluster named NAME is the Helm release ``kubernetes-NAME`` in the tenant's namespace; its
admin kubeconfig is the Secret ``kubernetes-NAME-admin-kubeconfig`` (``admin.conf``); its Talos
machine CA is the cert-manager Secret ``kubernetes-NAME-talos-ca`` (``tls.crt``, ``tls.key``);
a node group with ``logSerialConsole`` gets a ``guest-console-log`` container beside
virt-launcher, whose pod KubeVirt labels ``kubevirt.io/domain: <vmi name>`` (a virt-launcher
pod as ``oc get pod -o yaml`` shows it in akaliwod/ocp-virtualization
``doc/ocp-kubevirt-cat8kv-basic/OcPod.md``); a VMI lists its addresses under
``status.interfaces[].ipAddress`` (kubevirt/kubevirt ``staging/src/kubevirt.io/api/core/v1/
types.go``, ``VirtualMachineInstanceNetworkInterface``); VictoriaMetrics answers Prometheus
queries under ``/select/0/prometheus/`` of ``vmselect-shortterm`` on port 8481, in the
namespace of the tenant that runs monitoring.

Each step's ``output`` is where its answer goes: below the evidence folder in the layout of a
``talosctl support`` bundle (a node's files in a folder named after the node, which names the
node for everything under it: ``archive.node_folders``), or ``<creds>/...`` for a credential,
which never goes there.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from enum import Enum

from schematic.errors import UsageError, printable

__all__ = [
    "METRICS",
    "PLACEHOLDER",
    "STEPS",
    "CommandValueError",
    "Reach",
    "Step",
    "Target",
    "placeholders",
]


class Reach(Enum):
    """What a step needs to run: which cluster and whose credentials."""

    MANAGEMENT = "management"  # the user's kubeconfig, on the management cluster
    TENANT = "tenant"  # the tenant cluster's admin kubeconfig, read from its Secret
    TALOS = "talos"  # an os:reader talosconfig for the tenant's workers
    LOCAL = "local"  # nothing but the tools, in the credentials' folder
    HOST = "host"  # a privileged pod on the node: never unattended


# A placeholder in a step's argv or output: ``<ns>`` the tenant namespace, ``<cluster>`` the
# tenant cluster, ``<node>`` the node; ``<creds>`` the private credentials' folder and
# ``<vm>``, ``<monitoring>``, ``<start>``, ``<end>`` values found while collecting.
PLACEHOLDER = re.compile(r"<(ns|cluster|node|creds|vm|monitoring|start|end)>")
STATIC = ("ns", "cluster", "node")

# Default time limits, in seconds: a list of every pod of a large cluster takes a while.
KUBECTL_SECONDS = 60.0
TALOSCTL_SECONDS = 30.0


@dataclass(frozen=True, kw_only=True)
class Step:
    """One command of the collection."""

    argv: tuple[str, ...]
    output: str  # "" for a lookup (``sets``)
    reach: Reach
    timeout: float = KUBECTL_SECONDS
    unattended: bool = True
    why_by_hand: str = ""  # what keeps it from running unattended
    remark: str = ""  # why it is collected, when its output's name does not say
    heading: tuple[str, ...] = ()  # what the script says before it
    decode: bool = False  # the answer is base64 (a Secret's data)
    removes: tuple[str, ...] = ()  # credentials no longer needed once it ran
    sets: str = ""  # the placeholder its answer fills (a lookup)
    watched: bool = False  # the user watches it as it runs

    @property
    def needs(self) -> frozenset[str]:
        """The placeholders it uses."""
        return frozenset(PLACEHOLDER.findall(" ".join((*self.argv, self.output))))


# A console names no node: its file's name does (a node folder is known by a support bundle's
# files, which may all have failed to come).
_CONSOLE = "<node>/<node>.console.log"
METRICS = ("node_memory_MemAvailable_bytes", "node_memory_MemTotal_bytes", "node_boot_time_seconds")
_SECRET = ("kubectl", "-n", "<ns>", "get", "secret")
_TALOS_CA = "kubernetes-<cluster>-talos-ca"


def _talos(*argv: str, output: str, remark: str = "", heading: tuple[str, ...] = ()) -> Step:
    return Step(
        argv=argv,
        output=f"<node>/{output}",
        reach=Reach.TALOS,
        timeout=TALOSCTL_SECONDS,
        remark=remark,
        heading=heading,
    )


def _local(command: str, *, removes: tuple[str, ...] = (), remark: str = "") -> Step:
    """A talosctl command that reaches no cluster, run in the credentials' folder (``command``
    is split at its spaces)."""
    return Step(
        argv=tuple(command.split()),
        output="",
        reach=Reach.LOCAL,
        timeout=TALOSCTL_SECONDS,
        removes=removes,
        remark=remark,
    )


def _metric(metric: str, heading: tuple[str, ...] = ()) -> Step:
    return Step(
        argv=(
            "kubectl",
            "get",
            "--raw",
            "/api/v1/namespaces/<monitoring>/services/vmselect-shortterm:8481/proxy/select/0"
            f"/prometheus/api/v1/query_range?query={metric}&start=<start>&end=<end>&step=300",
        ),
        output=f"{metric}.json",
        reach=Reach.MANAGEMENT,
        heading=heading,
    )


STEPS: tuple[Step, ...] = (
    Step(
        argv=("kubectl", "-n", "<ns>", "get", "vmi", "-o", "wide"),
        output="vmis.txt",
        reach=Reach.MANAGEMENT,
        heading=(
            "1. The management cluster: the worker VM's serial console, the control-plane Service.",
        ),
    ),
    Step(
        argv=(
            "kubectl",
            "-n",
            "<ns>",
            "get",
            "vmi",
            "-o",
            'jsonpath={.items[?(@.metadata.name=="<node>")].metadata.name} '
            '{.items[?(@.status.interfaces[0].ipAddress=="<node>")].metadata.name}',
        ),
        output="",
        reach=Reach.MANAGEMENT,
        sets="vm",
        heading=("   The node's VM: the VirtualMachineInstance of the node's name or address.",),
    ),
    Step(
        argv=("virtctl", "-n", "<ns>", "console", "<vm>"),
        output=_CONSOLE,
        reach=Reach.MANAGEMENT,
        unattended=False,
        why_by_hand="stays attached across one reboot, about 70 minutes",
        watched=True,
        heading=("   Stay attached across one reboot (about 70 minutes) when the node loops:",),
    ),
    Step(
        argv=(
            "kubectl",
            "-n",
            "<ns>",
            "logs",
            "-l",
            "kubevirt.io/domain=<vm>",
            "-c",
            "guest-console-log",
            "--tail=-1",
        ),
        output=_CONSOLE,
        reach=Reach.MANAGEMENT,
        heading=("   or, for a node group with logSerialConsole: true,",),
    ),
    Step(
        argv=("kubectl", "-n", "<ns>", "get", "svc", "-o", "yaml"),
        output="services.yaml",
        reach=Reach.MANAGEMENT,
    ),
    Step(
        argv=("kubectl", "-n", "<ns>", "get", "events", "-o", "json"),
        output="management-events.json",
        reach=Reach.MANAGEMENT,
        remark="a refused VM GPU",
    ),
    Step(
        argv=(
            *_SECRET,
            "kubernetes-<cluster>-admin-kubeconfig",
            "-o",
            r"jsonpath={.data.admin\.conf}",
        ),
        output="<creds>/tenant.kubeconfig",
        reach=Reach.MANAGEMENT,
        decode=True,
        heading=(
            "2. The tenant cluster (its kubeconfig): nodes, pods, events, the device plugin.",
        ),
    ),
    Step(argv=("kubectl", "get", "nodes", "-o", "json"), output="nodes.json", reach=Reach.TENANT),
    Step(
        argv=("kubectl", "get", "pods", "-A", "-o", "json"), output="pods.json", reach=Reach.TENANT
    ),
    Step(
        argv=("kubectl", "get", "events", "-A", "-o", "json"),
        output="events.json",
        reach=Reach.TENANT,
        remark="events expire after an hour",
    ),
    Step(argv=("kubectl", "top", "nodes"), output="top-nodes.txt", reach=Reach.TENANT),
    Step(
        argv=("kubectl", "get", "ds", "-A", "-o", "yaml"),
        output="daemonsets.yaml",
        reach=Reach.TENANT,
    ),
    Step(
        argv=(
            "kubectl",
            "-n",
            "cozy-gpu-operator",
            "logs",
            "ds/nvidia-device-plugin-daemonset",
            "--all-containers",
        ),
        output="device-plugin.log",
        reach=Reach.TENANT,
    ),
    Step(
        argv=(*_SECRET, _TALOS_CA, "-o", r"jsonpath={.data.tls\.crt}"),
        output="<creds>/talos-ca.crt",
        reach=Reach.MANAGEMENT,
        decode=True,
        heading=(
            "3. talosctl on the tenant's workers: an os:reader certificate from the tenant's Talos",
            "   CA (the workers trust it).",
        ),
    ),
    Step(
        argv=(*_SECRET, _TALOS_CA, "-o", r"jsonpath={.data.tls\.key}"),
        output="<creds>/talos-ca.key",
        reach=Reach.MANAGEMENT,
        decode=True,
    ),
    _local("talosctl gen key --name reader"),
    _local("talosctl gen csr --key reader.key --ip 127.0.0.1 --roles os:reader"),
    _local(
        "talosctl gen crt --ca talos-ca --csr reader.csr --name reader --hours 4",
        removes=("talos-ca.key",),
        remark="the CA key is needed only to sign the reader certificate",
    ),
    _local(
        "talosctl --talosconfig <creds>/talosconfig config add <cluster> --ca <creds>/talos-ca.crt"
        " --crt <creds>/reader.crt --key <creds>/reader.key"
    ),
    _talos("dmesg", output="dmesg.log"),
    _talos("services", output="services.txt"),
    _talos("get", "pcidevices", "-o", "yaml", output="resources/pcidevices.yaml"),
    _talos("get", "extensions", "-o", "yaml", output="resources/extensions.yaml"),
    _talos(
        "get",
        "imagefactoryschematics",
        "-o",
        "yaml",
        output="resources/imagefactoryschematics.yaml",
        remark="Talos 1.14+",
    ),
    _talos("get", "modules", "-o", "yaml", output="resources/modules.yaml"),
    _talos("get", "machinestatus", "-o", "yaml", output="resources/machinestatus.yaml"),
    _talos("read", "/proc/modules", output="<node>.proc-modules.txt"),  # names no node either
    _talos("logs", "ext-nvidia-persistenced", output="service-logs/ext-nvidia-persistenced.log"),
    _talos("logs", "ext-nvidia-cdi-gen", output="service-logs/ext-nvidia-cdi-gen.log"),
    _talos(
        "logs",
        "ext-nvidia-fabricmanager",
        output="service-logs/ext-nvidia-fabricmanager.log",
        remark="HGX/DGX only",
    ),
    Step(
        argv=(
            "kubectl",
            "get",
            "svc",
            "-A",
            "--field-selector",
            "metadata.name=vmselect-shortterm",
            "-o",
            r'jsonpath={range .items[*]}{.metadata.namespace}{"\n"}{end}',
        ),
        output="",
        reach=Reach.MANAGEMENT,
        sets="monitoring",
        heading=(
            "4. Metrics over the last two days from Cozystack's VictoriaMetrics: available memory",
            "   and boot times, through the API server's service proxy (nothing left running). The",
            "   tenant's own monitoring when it has one, else the first namespace that serves it.",
        ),
    ),
    *(_metric(metric) for metric in METRICS),
    Step(
        argv=("chroot", "/host", "/usr/local/bin/nvidia-smi"),
        output="<node>/nvidia-smi.txt",
        reach=Reach.HOST,
        unattended=False,
        why_by_hand="runs in a privileged pod on the node",
        heading=(
            "5. On a GPU node, NVIDIA's own view (Talos has no shell: run the binary directly",
            "   from a privileged pod with the host's root at /host).",
        ),
    ),
    Step(
        argv=("chroot", "/host", "/usr/local/bin/nvidia-smi", "-q"),
        output="<node>/nvidia-smi-q.txt",
        reach=Reach.HOST,
        unattended=False,
        why_by_hand="runs in a privileged pod on the node",
    ),
)


# What Kubernetes accepts: a cluster (a Helm release suffix) and a namespace are RFC 1123
# labels; a node is a RFC 1123 subdomain (its name) or an IP address.
_LABEL = re.compile(r"[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?")
_SUBDOMAIN = re.compile(
    r"(?=.{1,253}$)[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*"
)


class CommandValueError(UsageError):
    """A --cluster, --namespace or --node value that cannot name what it stands for, or a
    --collect that lacks one; ``option`` is the option's name."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(message, option)


def _checked(option: str, value: str, *, node: bool = False) -> str:
    """``value`` when Kubernetes could hold it as a name (or, for a node, an address): the
    values become command arguments and folder names, and one that is neither is refused."""
    if node:
        try:
            ipaddress.ip_address(value)
            return value
        except ValueError:
            pass
    if (_SUBDOMAIN if node else _LABEL).fullmatch(value):
        return value
    what = (
        "a node name (RFC 1123) or an IP address" if node else "a Kubernetes name (RFC 1123 label)"
    )
    raise CommandValueError(option, f"{printable(value, one_line=True)!s} is not {what}")


@dataclass(frozen=True)
class Target:
    """The tenant cluster, its namespace and the node to look at, each checked; None where
    not given."""

    cluster: str | None = None
    namespace: str | None = None
    node: str | None = None

    @classmethod
    def checked(cls, *, cluster: str | None, namespace: str | None, node: str | None) -> Target:
        """Raises CommandValueError for a value that cannot be a Kubernetes name (or, for
        ``node``, an address)."""
        return cls(
            cluster=None if cluster is None else _checked("--cluster", cluster),
            namespace=None if namespace is None else _checked("--namespace", namespace),
            node=None if node is None else _checked("--node", node, node=True),
        )

    def values(self) -> dict[str, str]:
        """The static placeholders this target fills."""
        given = {"cluster": self.cluster, "ns": self.namespace, "node": self.node}
        return {name: value for name, value in given.items() if value is not None}


def placeholders(text: str, values: dict[str, str]) -> str:
    """``text`` with each placeholder that ``values`` holds filled in; the others left."""
    return PLACEHOLDER.sub(lambda found: values.get(found[1], found[0]), text)
