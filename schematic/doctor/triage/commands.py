"""`triage --commands`: the commands that collect what triage reads, for one cluster and node.

Cozystack facts used here (cozystack/cozystack, see schematic/data/SOURCES.md): a tenant
cluster named NAME is the Helm release ``kubernetes-NAME`` in the tenant's namespace; its
Talos machine CA is the cert-manager Secret ``kubernetes-NAME-talos-ca`` (``tls.crt``,
``tls.key``); a node group with ``logSerialConsole`` gets a ``guest-console-log`` container
beside virt-launcher; VictoriaMetrics answers Prometheus queries under
``/select/0/prometheus/`` of ``vmselect-shortterm`` on port 8481, in the namespace of the
tenant that runs monitoring. A Talos node's OS image reads ``Talos (vX.Y.Z)`` (its
``status.nodeInfo.osImage``, as ``kubectl get nodes -o wide`` shows it in
siderolabs/extensions#893).
"""

from __future__ import annotations

import ipaddress
import re
from shlex import quote

from schematic.errors import TalosSchematicError, printable

__all__ = ["CommandValueError", "collection_commands"]

# What Kubernetes accepts: a cluster (a Helm release suffix) and a namespace are RFC 1123
# labels; a node is a RFC 1123 subdomain (its name) or an IP address.
_LABEL = re.compile(r"[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?")
_SUBDOMAIN = re.compile(
    r"(?=.{1,253}$)[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*"
)


class CommandValueError(TalosSchematicError):
    """A --cluster, --namespace or --node value that cannot name what it stands for; ``option``
    is the option's name."""

    exit_code = 2

    def __init__(self, option: str, message: str) -> None:
        super().__init__(message)
        self.option = option


def _checked(option: str, value: str, *, node: bool = False) -> str:
    """``value`` when Kubernetes could hold it as a name (or, for a node, an address): the
    commands are shell text, and a value that is neither is refused rather than pasted."""
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


_WINDOW = "end=$(date +%s); start=$((end - 2*86400))"


def collection_commands(
    *, cluster: str | None = None, namespace: str | None = None, node: str | None = None
) -> str:
    """Shell commands, with comments, that collect every input triage reads.

    Raises CommandValueError for a value that cannot be a Kubernetes name (or, for ``node``, an
    address); every value is also shell-quoted where it is pasted."""
    name = quote(_checked("--cluster", cluster)) if cluster is not None else "CLUSTER"
    ns = quote(_checked("--namespace", namespace)) if namespace is not None else "TENANT_NAMESPACE"
    target = quote(_checked("--node", node, node=True)) if node is not None else "NODE"
    release = f"kubernetes-{name}"
    lines = [
        f"# Evidence for talos-schematic triage: tenant cluster {name!r} in namespace {ns!r},",
        f"# node {target!r}. Save every output into one directory, then run:",
        "#   talos-schematic triage DIR",
        "#   Credentials (the tenant's kubeconfig, the Talos keys) stay in a private folder",
        "#   outside evidence/, removed when the script ends: evidence/ is what you attach.",
        "creds=$(mktemp -d) && trap 'rm -rf \"$creds\"' EXIT",
        "mkdir -p evidence && cd evidence",
        "",
        "# 1. The management cluster: the worker VM's serial console, the control-plane Service.",
        f"kubectl -n {ns} get vmi -o wide > vmis.txt",
        "#    Stay attached across one reboot (about 70 minutes) when the node loops:",
        f"virtctl -n {ns} console VM_NAME_OF_{target} | tee {target}.console.log",
        "#    or, for a node group with logSerialConsole: true,",
        f"kubectl -n {ns} logs VIRT_LAUNCHER_POD_OF_{target} -c guest-console-log "
        f"> {target}.console.log",
        f"kubectl -n {ns} get svc -o yaml > services.yaml",
        f"kubectl -n {ns} get events -o json > management-events.json   # a refused VM GPU",
        "",
        "# 2. The tenant cluster (its kubeconfig): nodes, pods, events, the device plugin.",
        f"kubectl -n {ns} get secret {release}-admin-kubeconfig "
        "-o jsonpath='{.data.admin\\.conf}' | base64 -d > \"$creds/tenant.kubeconfig\"",
        'export KUBECONFIG="$creds/tenant.kubeconfig"',
        "kubectl get nodes -o json > nodes.json",
        '#    The Talos release the nodes run (their OS image reads "Talos (v1.12.0)"), for the',
        "#    talosctl image below.",
        "talos_version=$(kubectl get nodes -o jsonpath='{.items[0].status.nodeInfo.osImage}' "
        "| sed -n 's/^Talos (\\(v[^)]*\\))$/\\1/p')",
        "kubectl get pods -A -o json > pods.json",
        "kubectl get events -A -o json > events.json   # events expire after an hour",
        "kubectl top nodes > top-nodes.txt",
        "kubectl get ds -A -o yaml > daemonsets.yaml",
        "kubectl -n cozy-gpu-operator logs ds/nvidia-device-plugin-daemonset --all-containers "
        "> device-plugin.log",
        "unset KUBECONFIG",
        "",
        "# 3. talosctl on the tenant's workers: an os:reader certificate from the tenant's Talos",
        "#    CA, used from a pod in the tenant namespace (the workers' addresses are reachable",
        "#    only from the tenant's network).",
        f"kubectl -n {ns} get secret {release}-talos-ca -o jsonpath='{{.data.tls\\.crt}}' "
        '| base64 -d > "$creds/talos-ca.crt"',
        f"kubectl -n {ns} get secret {release}-talos-ca -o jsonpath='{{.data.tls\\.key}}' "
        '| base64 -d > "$creds/talos-ca.key"',
        '(cd "$creds" && talosctl gen key --name reader'
        " && talosctl gen csr --key reader.key --ip 127.0.0.1 --roles os:reader"
        " && talosctl gen crt --ca talos-ca --csr reader.csr --name reader --hours 4"
        " && rm talos-ca.key)   # the CA key is needed only to sign the reader certificate",
        f'talosctl --talosconfig "$creds/talosconfig" config add {name} '
        '--ca "$creds/talos-ca.crt" --crt "$creds/reader.crt" --key "$creds/reader.key"',
        f"kubectl -n {ns} run talosctl --restart=Never "
        '--image="ghcr.io/siderolabs/talosctl:$talos_version" --command -- sleep 7200',
        f'kubectl -n {ns} cp "$creds/talosconfig" talosctl:/tmp/talosconfig',
        "T="
        + quote(
            f"kubectl -n {ns} exec talosctl -- talosctl --talosconfig /tmp/talosconfig "
            f"-e {target} -n {target}"
        ),
        f"$T dmesg > {target}.dmesg.txt",
        f"$T services > {target}.services.txt",
        f"$T get pcidevices -o yaml > {target}.pcidevices.yaml",
        f"$T get extensions -o yaml > {target}.extensions.yaml",
        f"$T get imagefactoryschematics -o yaml > {target}.schematic.yaml   # Talos 1.14+",
        f"$T get modules -o yaml > {target}.modules.yaml",
        f"$T get machinestatus -o yaml > {target}.machinestatus.yaml",
        f"$T read /proc/modules > {target}.proc-modules.txt",
        f"$T logs ext-nvidia-persistenced > {target}.persistenced.log",
        f"$T logs ext-nvidia-cdi-gen > {target}.cdi-gen.log",
        f"$T logs ext-nvidia-fabricmanager > {target}.fabricmanager.log   # HGX/DGX only",
        f"kubectl -n {ns} delete pod talosctl",
        "",
        "# 4. Metrics over the last two days from Cozystack's VictoriaMetrics: available memory",
        "#    and boot times, through the API server's service proxy (nothing left running). The",
        "#    tenant's own monitoring when it has one, else the first namespace that serves it.",
        "monitoring=$(kubectl get svc -A --field-selector metadata.name=vmselect-shortterm "
        "-o jsonpath='{range .items[*]}{.metadata.namespace}{\"\\n\"}{end}')",
        f"monitoring=$(printf '%s\\n' \"$monitoring\" | grep -x -m1 -e {ns} "
        "|| printf '%s\\n' \"$monitoring\" | head -n 1)",
        _WINDOW,
        "for metric in node_memory_MemAvailable_bytes node_memory_MemTotal_bytes "
        "node_boot_time_seconds; do",
        '  kubectl get --raw "/api/v1/namespaces/$monitoring/services/vmselect-shortterm:8481'
        "/proxy/select/0/prometheus/api/v1/query_range"
        '?query=$metric&start=$start&end=$end&step=300" > "$metric.json"',
        "done",
        "",
        "# 5. On a GPU node, NVIDIA's own view (Talos has no shell: run the binary directly",
        "#    from a privileged pod with the host's root at /host).",
        "#    chroot /host /usr/local/bin/nvidia-smi > nvidia-smi.txt",
        "#    chroot /host /usr/local/bin/nvidia-smi -q > nvidia-smi-q.txt",
        "",
        "echo 'evidence/ holds (no credentials; they are removed with their folder):'",
        "ls -1",
        "talos-schematic triage .",
    ]
    return "".join(line + "\n" for line in lines)
