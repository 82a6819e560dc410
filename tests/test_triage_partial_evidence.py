"""`triage` on partial evidence: one pasted wait line, kubectl output alone (feature-discovery
labels, kubelet's Rebooted events), nodes known only by address. Each gap has a test that it
is closed and one beside it that must NOT fire.

Line formats are those of the bundles in tests/data/triage (sources in their SOURCES.md) and
of the upstream sources cited in schematic/data/SOURCES.md; names and addresses vary.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands
from schematic.doctor.triage import triage_paths
from schematic.doctor.triage.diagnose import Diagnosis

register_all_commands()

# siderolabs/extensions#888 quotes this line bare; talosctl dmesg and the console prefix it.
WAIT = 'task startAllServices (1/1): service "ext-nvidia-persistenced" to be "up"'
PCI_HEADER = (
    "NODE          NAMESPACE   TYPE        ID             VERSION   CLASS                       "
    "SUBCLASS                    VENDOR              PRODUCT\n"
)


def pci_rows(address: str) -> str:
    """`talosctl get pcidevices` of a KubeVirt VM without a GPU (the ts101 bundle's shape)."""
    return PCI_HEADER + (
        f"{address:<13} hardware    PCIDevice   0000:00:00.0   1         Bridge                 "
        "     Host bridge                 Intel Corporation   82G33/G31/P35/P31 Express DRAM "
        "Controller\n"
        f"{address:<13} hardware    PCIDevice   0000:00:02.0   1         Network controller     "
        "     Ethernet controller         Red Hat, Inc.       Virtio network device\n"
    )


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def diagnoses(path: Path) -> list[Diagnosis]:
    return list(triage_paths([str(path)]).diagnoses)


def verdict(path: Path) -> dict[str, tuple[str, tuple[str, ...]]]:
    return {d.code: (d.severity, d.nodes) for d in diagnoses(path)}


# --- 1. an NVIDIA service seen waiting, nothing to say for how long -------------------------


@pytest.mark.parametrize(
    "line",
    [
        WAIT,
        f"[talos] {WAIT}",
        f" user: warning: [2025-11-03T14:52:40.00536313Z]: [talos] {WAIT}",
        # The service runner's state line (service_runner.go), as the console prints it.
        '[talos] service[ext-nvidia-cdi-gen](Waiting): Waiting for service "ext-nvidia-'
        'persistenced" to be "up"',
        'waiting for service "ext-nvidia-persistenced" to be "up"',
    ],
)
def test_a_lone_nvidia_wait_line_is_never_a_silent_all_clear(tmp_path: Path, line: str) -> None:
    (tmp_path / "paste.txt").write_text(line + "\n")
    found = verdict(tmp_path)
    assert found.get("TS101", ("",))[0] == "warning", found
    code, out, _ = run("triage", str(tmp_path))
    # Not certain (a GPU node waits for it a few seconds every boot): a warning, exit 0,
    # and what to collect to decide.
    assert code == 0
    assert "no failure recognised" not in out
    assert "get pcidevices" in out and "collect next" in out


def test_a_wait_line_on_a_node_without_an_nvidia_device_is_ts101(tmp_path: Path) -> None:
    (tmp_path / "dmesg.txt").write_text(
        f"172.20.0.5: user: warning: [2025-11-03T14:52:40Z]: [talos] {WAIT}\n"
    )
    (tmp_path / "pcidevices.txt").write_text(pci_rows("172.20.0.5"))
    assert verdict(tmp_path)["TS101"] == ("error", ("172.20.0.5",))
    code, _, _ = run("triage", str(tmp_path))
    assert code == 3


def test_a_wait_line_on_a_node_whose_driver_answered_is_quiet(tmp_path: Path) -> None:
    # Every GPU node lists ext-nvidia-persistenced in its first seconds; nvidia-smi seeing the
    # GPU shows the driver it waited for came.
    (tmp_path / "dmesg.txt").write_text(f"[    9.120000] [talos] {WAIT}\n")
    (tmp_path / "smi.txt").write_text(
        "GPU 0: NVIDIA L40S (UUID: GPU-5e2a7c4e-61f4-4a1b-9d3e-0c6f2b8a9d11)\n"
    )
    assert diagnoses(tmp_path) == []


def test_a_wait_followed_by_the_service_running_is_quiet(tmp_path: Path) -> None:
    (tmp_path / "console.log").write_text(
        f"[    9.120000] [talos] {WAIT}\n"
        "[   11.530000] [talos] service[ext-nvidia-persistenced](Running): Started task "
        "ext-nvidia-persistenced (PID 2211) for container ext-nvidia-persistenced\n"
    )
    assert diagnoses(tmp_path) == []


def test_a_lone_wait_line_of_another_service_names_no_nvidia_cause(tmp_path: Path) -> None:
    (tmp_path / "paste.txt").write_text(
        'task startAllServices (1/1): service "ext-lldpd" to be "up"\n'
    )
    assert "TS101" not in verdict(tmp_path)


# --- 3. feature-discovery labels are hardware evidence ----------------------------------------


def node_yaml(name: str, address: str, labels: dict[str, str]) -> str:
    """`kubectl get node NAME -o yaml` (Node v1), with the labels given."""
    shown = "".join(f'    {key}: "{value}"\n' for key, value in sorted(labels.items()))
    return (
        "apiVersion: v1\nkind: Node\nmetadata:\n  labels:\n"
        f"{shown}    kubernetes.io/hostname: {name}\n  name: {name}\n"
        "status:\n  addresses:\n"
        f"  - address: {address}\n    type: InternalIP\n"
        f"  - address: {name}\n    type: Hostname\n"
        '  conditions:\n  - status: "True"\n    type: Ready\n'
    )


# The GPU Operator's NFD labels devices by vendor (pci-<vendor>.present); NFD's default, by
# class and vendor (pci-0300_1234.present: the QEMU VGA of a KubeVirt VM).
NO_GPU_LABELS = {
    "feature.node.kubernetes.io/pci-0300_1234.present": "true",
    "feature.node.kubernetes.io/kernel-version.full": "6.12.57-talos",
    "extensions.talos.dev/nvidia-container-toolkit-production": "570.195.03-v1.17.8",
}
GPU_LABELS = {
    "feature.node.kubernetes.io/pci-10de.present": "true",
    "feature.node.kubernetes.io/kernel-version.full": "6.12.57-talos",
}


def test_nfd_labels_without_vendor_10de_make_a_lone_wait_ts101(tmp_path: Path) -> None:
    (tmp_path / "node.yaml").write_text(
        node_yaml("tenant-a-cpu-7c9xv", "10.244.3.17", NO_GPU_LABELS)
    )
    (tmp_path / "dmesg.txt").write_text(
        f"10.244.3.17: user: warning: [2025-11-03T14:52:40Z]: [talos] {WAIT}\n"
    )
    found = {d.code: d for d in diagnoses(tmp_path)}
    assert found["TS101"].severity == "error"
    assert found["TS101"].nodes == ("tenant-a-cpu-7c9xv",)
    assert any("pci-0300_1234" in r for r in found["TS101"].ruled_out)


def test_nfd_label_pci_10de_rules_ts101_out(tmp_path: Path) -> None:
    (tmp_path / "node.yaml").write_text(node_yaml("tenant-a-gpu-x7k2p", "10.244.3.18", GPU_LABELS))
    (tmp_path / "dmesg.txt").write_text(
        f"10.244.3.18: user: warning: [2025-11-03T14:52:40Z]: [talos] {WAIT}\n"
    )
    found = verdict(tmp_path)
    assert "TS101" not in found
    # A GPU node whose driver nothing shows: the modules are the candidate, said as a warning.
    assert found["TS201"] == ("warning", ("tenant-a-gpu-x7k2p",))


def test_gfd_product_names_the_gpu_for_the_fabric_rule(tmp_path: Path) -> None:
    # The ts155 bundle's fabric-manager log (nothing to do, the ib_umad hint) with the GPU
    # named only by GPU Feature Discovery: B200 is NVLink 5, H100 is not.
    log = Path(__file__).parent / "data/triage/ts155-nvlink5-without-ib-umad/fabricmanager.log"
    (tmp_path / "fabricmanager.log").write_text(log.read_text(encoding="utf-8"))
    node = "10.10.10.10"
    labels = {**GPU_LABELS, "nvidia.com/gpu.product": "NVIDIA-B200", "nvidia.com/gpu.count": "8"}
    (tmp_path / "node.yaml").write_text(node_yaml("hgx-b200-0", node, labels))
    b200 = {d.code: d for d in diagnoses(tmp_path)}
    assert b200["TS155"].severity == "error"
    labels["nvidia.com/gpu.product"] = "NVIDIA-H100-80GB-HBM3"
    (tmp_path / "node.yaml").write_text(node_yaml("hgx-b200-0", node, labels))
    assert "TS155" not in verdict(tmp_path)


# --- 4. kubelet's Rebooted events carry reboot times ------------------------------------------

EVENTS_HEADER = (
    "NAMESPACE     LAST SEEN   TYPE      REASON                OBJECT                    MESSAGE\n"
)


def rebooted_rows(node: str, ages: list[str]) -> str:
    """`kubectl get events -A` rows of kubelet's Rebooted event, one per boot ID."""
    return "".join(
        f"default       {age:<11} Warning   Rebooted              node/{node:<19} Node {node} "
        f"has been rebooted, boot id: 2f32a5d0-5ee3-4174-bf9b-b77d3191b4{index:02d}\n"
        for index, age in enumerate(ages)
    )


def test_rebooted_events_70_minutes_apart_are_the_boot_timer(tmp_path: Path) -> None:
    node = "tenant-a-md0-q8x2z"
    (tmp_path / "events.txt").write_text(
        EVENTS_HEADER + rebooted_rows(node, ["7m11s", "78m", "149m"])
    )
    found = {d.code: d for d in diagnoses(tmp_path)}
    # kubelet's events show no OS: Talos's boot timer is the cause only if the node runs Talos.
    assert (found["TS202"].severity, found["TS202"].if_talos) == ("warning", True)
    assert found["TS202"].nodes == (node,)
    assert "71 minutes apart" in found["TS202"].summary


def test_rebooted_events_with_the_image_and_no_gpu_are_ts101(tmp_path: Path) -> None:
    node = "tenant-a-cpu-7c9xv"
    (tmp_path / "events.txt").write_text(EVENTS_HEADER + rebooted_rows(node, ["12m", "83m"]))
    (tmp_path / "node.yaml").write_text(node_yaml(node, "10.244.3.17", NO_GPU_LABELS))
    assert verdict(tmp_path) == {"TS101": ("error", (node,))}


def test_rebooted_event_times_from_json_are_read(tmp_path: Path) -> None:
    node = "tenant-a-md0-q8x2z"
    items = [
        {
            "apiVersion": "v1",
            "kind": "Event",
            "involvedObject": {"kind": "Node", "name": node},
            "reason": "Rebooted",
            "message": f"Node {node} has been rebooted, boot id: 954314ff-5ebb-413e-9207-{i:012d}",
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "source": {"component": "kubelet", "host": node},
            "type": "Warning",
        }
        for i, stamp in enumerate(["2026-11-25T10:00:05Z", "2026-11-25T11:10:40Z"])
    ]
    (tmp_path / "events.json").write_text(json.dumps({"kind": "List", "items": items}))
    assert verdict(tmp_path) == {"TS202": ("warning", (node,))}  # no input shows Talos


@pytest.mark.parametrize(
    "ages",
    [
        ["7m11s"],  # one reboot: an upgrade, a drain, a power cut
        ["7m11s", "5h2m"],  # two reboots hours apart
        ["7m", "22m", "41m"],  # reboots, but not on the timer
        ["7m", "2d3h"],  # an age in hours says nothing to the minute
    ],
)
def test_rebooted_events_off_the_timer_claim_no_timer(tmp_path: Path, ages: list[str]) -> None:
    node = "tenant-a-md0-q8x2z"
    (tmp_path / "events.txt").write_text(EVENTS_HEADER + rebooted_rows(node, ages))
    found = verdict(tmp_path)
    assert "TS202" not in found and "TS101" not in found


# --- 5. nodes known only by address ------------------------------------------------------------


def pod(name: str, node: str, host_ip: str, pod_ip: str) -> dict[str, object]:
    """A Pod v1 object as `kubectl get pods -A -o json` lists it."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "kube-system"},
        "spec": {"nodeName": node, "containers": [{"name": "c"}]},
        "status": {
            "hostIP": host_ip,
            "podIP": pod_ip,
            "startTime": "2026-11-25T10:00:00Z",
            "containerStatuses": [{"name": "c", "restartCount": 0}],
        },
    }


def console_of(address: str) -> str:
    """The ts101 bundle's talosctl dmesg shape: the NVIDIA services pending at the timeout."""
    prefix = f"{address}: user: warning: [2026-11-24T"
    return (
        f"{prefix}06:10:41.1Z]: [talos] {WAIT}\n"
        f'{prefix}07:20:26.1Z]: [talos] task startAllServices (1/1): service "ext-nvidia-'
        'persistenced" to be "up"\n'
        f"{prefix}07:20:41.1Z]: [talos] task startAllServices (1/1): failed: 1 error occurred:\n"
        f"{prefix}07:20:41.2Z]: [talos] boot sequence: failed\n"
    )


def test_a_pods_host_ip_gives_an_address_its_node_and_pool(tmp_path: Path) -> None:
    address = "10.244.3.17"
    (tmp_path / "dmesg.txt").write_text(console_of(address))
    (tmp_path / "pcidevices.txt").write_text(pci_rows(address))
    alone = {d.code: d for d in diagnoses(tmp_path)}
    assert alone["TS101"].nodes == (address,) and alone["TS101"].pools == ("",)
    # Without the node's name the fix has no pool: the report says what names it.
    assert any("INTERNAL-IP 10.244.3.17" in c for c in alone["TS101"].collect)
    pods = [pod("cilium-5xq2d", "tenant-a-cpu-7c9xv", address, address)]
    pods.append(pod("coredns-7c9x", "tenant-a-cpu-7c9xv", address, "10.96.4.12"))
    (tmp_path / "pods.json").write_text(json.dumps({"kind": "List", "items": pods}))
    joined = {d.code: d for d in diagnoses(tmp_path)}
    assert joined["TS101"].nodes == ("tenant-a-cpu-7c9xv",)
    assert joined["TS101"].pools == ("tenant-a-cpu",)
    assert not any("INTERNAL-IP" in c for c in joined["TS101"].collect)


def test_a_pod_ip_is_never_taken_for_its_node(tmp_path: Path) -> None:
    # A pod's own address is not its node's: a console of 10.96.4.12 stays that address.
    (tmp_path / "dmesg.txt").write_text(console_of("10.96.4.12"))
    (tmp_path / "pcidevices.txt").write_text(pci_rows("10.96.4.12"))
    pods = [pod("coredns-7c9x", "tenant-a-cpu-7c9xv", "10.244.3.17", "10.96.4.12")]
    (tmp_path / "pods.json").write_text(json.dumps({"kind": "List", "items": pods}))
    assert verdict(tmp_path)["TS101"] == ("error", ("10.96.4.12",))


# --- RmInitAdapter failed, and pastes that change the shape of the text -----------------------


def test_rm_init_adapter_failed_alone_is_ts203_with_what_to_collect(tmp_path: Path) -> None:
    (tmp_path / "dmesg.txt").write_text(
        "10.0.20.203: kern: warning: [2022-09-02T19:03:17.235131838Z]: NVRM: GPU 0000:01:00.0: "
        "RmInitAdapter failed! (0x63:0x0:1905)\n"
    )
    (diagnosis,) = diagnoses(tmp_path)
    assert (diagnosis.code, diagnosis.severity) == ("TS203", "error")
    assert any("grep NVRM" in item for item in diagnosis.collect)


def test_rm_init_adapter_failed_with_its_named_cause_is_not_ts203() -> None:
    bundle = Path(__file__).parent / "data" / "triage" / "ts103-proprietary-on-blackwell"
    found = {d.code for d in triage_paths([str(bundle)]).diagnoses}
    assert "TS103" in found and "TS203" not in found


def test_output_indented_by_a_markdown_block_is_read(tmp_path: Path) -> None:
    table = EVENTS_HEADER + rebooted_rows("tenant-a-md0-q8x2z", ["7m11s", "78m", "149m"])
    (tmp_path / "events.txt").write_text("".join(f"  {line}\n" for line in table.splitlines()))
    assert verdict(tmp_path)["TS202"] == ("warning", ("tenant-a-md0-q8x2z",))


def test_a_host_address_given_for_two_nodes_joins_neither(tmp_path: Path) -> None:
    # Inputs of two clusters (or a NAT) can give one hostIP for two nodes: it names no machine.
    address = "10.244.3.17"
    (tmp_path / "dmesg.txt").write_text(console_of(address))
    (tmp_path / "pcidevices.txt").write_text(pci_rows(address))
    pods = [
        pod("cilium-5xq2d", "tenant-a-cpu-7c9xv", address, address),
        pod("cilium-8k2lm", "tenant-b-gpu-p4n6w", address, address),
    ]
    (tmp_path / "pods.json").write_text(json.dumps({"kind": "List", "items": pods}))
    assert verdict(tmp_path)["TS101"] == ("error", (address,))


def test_show_labels_column_carries_the_hardware_labels(tmp_path: Path) -> None:
    # `kubectl get nodes -o wide --show-labels`: the LABELS column (akash-network/community#608's
    # layout) holds what `-o yaml` would.
    node = "tenant-a-cpu-7c9xv"
    labels = ",".join(f"{k}={v}" for k, v in sorted(NO_GPU_LABELS.items()))
    (tmp_path / "nodes.txt").write_text(
        "NAME                 STATUS   ROLES    AGE   VERSION   INTERNAL-IP   EXTERNAL-IP   "
        "OS-IMAGE          KERNEL-VERSION   CONTAINER-RUNTIME    LABELS\n"
        f"{node}   Ready    <none>   26h   v1.33.5   10.244.3.17   <none>        "
        f"Talos (v1.12.0)   6.17.7-talos     containerd://2.1.5   {labels}\n"
    )
    (tmp_path / "events.txt").write_text(EVENTS_HEADER + rebooted_rows(node, ["12m", "83m"]))
    assert verdict(tmp_path) == {"TS101": ("error", (node,))}


def test_a_wait_in_a_boot_that_finished_is_quiet(tmp_path: Path) -> None:
    # Talos logs "task %s (%s): done, %s" and "%s sequence: done: %s" (v1alpha1_controller.go):
    # a boot that got there had every service it waited for.
    (tmp_path / "console.log").write_text(
        f"[    9.120000] [talos] {WAIT}\n"
        "[   12.480000] [talos] task startAllServices (1/1): done, 3.36s\n"
        "[   12.490000] [talos] boot sequence: done: 12.1s\n"
    )
    assert diagnoses(tmp_path) == []
    # The same wait with the boot not (yet) done is not an all-clear.
    (tmp_path / "console.log").write_text(f"[    9.120000] [talos] {WAIT}\n")
    assert verdict(tmp_path)["TS101"][0] == "warning"


def test_the_operator_driver_container_on_talos_is_ts141(tmp_path: Path) -> None:
    bundle = Path(__file__).parent / "data" / "triage" / "paste-gpu-operator-driver-on-talos"
    assert verdict(bundle) == {"TS141": ("error", ())}
    # The same container on a distribution kernel is the operator's own business.
    log = (bundle / "driver-daemonset.log").read_text(encoding="utf-8")
    (tmp_path / "driver.log").write_text(log.replace("6.1.51-talos", "5.15.0-94-generic"))
    assert "TS141" not in verdict(tmp_path)


NO_GPU = "10.244.3.17: kern:    info: [2025-11-03T14:52:31Z]: NVRM: No NVIDIA GPU found.\n"
WAIT_AT = f"10.244.3.17: user: warning: [2025-11-03T14:52:40Z]: [talos] {WAIT}\n"


def test_a_module_that_found_no_gpu_makes_a_lone_wait_ts101(tmp_path: Path) -> None:
    (tmp_path / "dmesg.txt").write_text(NO_GPU + WAIT_AT)
    assert verdict(tmp_path) == {"TS101": ("error", ("10.244.3.17",))}


@pytest.mark.parametrize(
    "refusal",
    [
        "NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x62:0x65:1859)",
        "NVRM: The NVIDIA GPU 0000:00:10.0 (PCI ID: 10de:1b38)\\x0aNVRM: installed in this system "
        "is not supported by the\\x0aNVRM: NVIDIA 535.54.03 driver release.",
    ],
)
def test_no_gpu_found_after_a_refused_gpu_is_not_ts101(tmp_path: Path, refusal: str) -> None:
    # The driver says "no GPU" also when it refused the one there: the refusal is the cause.
    line = f"10.244.3.17: kern: warning: [2025-11-03T14:52:30Z]: {refusal}\n"
    (tmp_path / "dmesg.txt").write_text(line + NO_GPU + WAIT_AT)
    found = verdict(tmp_path)
    assert "TS101" not in found and found["TS203"][0] == "error"


def pods_wide(rows: list[tuple[str, str, str]]) -> str:
    """`kubectl get pods -A -o wide` (kubectl's columns), one row per (pod, IP, node)."""
    header = (
        "NAMESPACE     NAME               READY   STATUS    RESTARTS   AGE   IP             "
        "NODE                 NOMINATED NODE   READINESS GATES\n"
    )
    return header + "".join(
        f"kube-system   {name:<18} 1/1     Running   0          26h   {ip:<14} {node:<20} "
        "<none>           <none>\n"
        for name, ip, node in rows
    )


def test_host_network_pods_give_a_table_node_its_address(tmp_path: Path) -> None:
    address, node = "10.244.3.17", "tenant-a-cpu-7c9xv"
    (tmp_path / "dmesg.txt").write_text(console_of(address))
    (tmp_path / "pcidevices.txt").write_text(pci_rows(address))
    rows = [("cilium-5xq2d", address, node), ("kube-proxy-8k2lm", address, node)]
    rows.append(("coredns-7c9x-4hx8d", "10.96.4.12", node))
    (tmp_path / "pods.txt").write_text(pods_wide(rows))
    assert verdict(tmp_path)["TS101"] == ("error", (node,))


def test_one_pod_with_an_address_names_no_node(tmp_path: Path) -> None:
    # A single pod's IP is its own (pod network), even when a console shows that address.
    address, node = "10.244.3.17", "tenant-a-cpu-7c9xv"
    (tmp_path / "dmesg.txt").write_text(console_of(address))
    (tmp_path / "pcidevices.txt").write_text(pci_rows(address))
    (tmp_path / "pods.txt").write_text(pods_wide([("coredns-7c9x-4hx8d", address, node)]))
    assert verdict(tmp_path)["TS101"] == ("error", (address,))
