"""Readers on the forms people paste: each case is a real public paste (its thread beside it),
node names kept or replaced by their documented shape. What must be read, and what must not."""

from __future__ import annotations

from pathlib import Path

import pytest

from schematic.doctor.triage import triage_paths
from schematic.doctor.triage.readers import read_evidence
from schematic.doctor.triage.signals import Kind


def facts(text: str) -> list[tuple[str, str, str]]:
    return [(s.kind.name, s.node, s.value) for s in read_evidence(text, "paste").signals]


# siderolabs/extensions#893: root prompts ("# klnodes" is an alias), kubectl -o wide, talosctl.
PROMPTED = """\
 # klnodes
NAME                 STATUS   ROLES           AGE   VERSION   INTERNAL-IP     EXTERNAL-IP   OS-IMAGE                 KERNEL-VERSION   CONTAINER-RUNTIME
nvidia-b200-node-1   Ready    control-plane   26h   v1.33.5   10.10.10.10   <none>        Talos (v1.12.0-beta.0)   6.17.7-talos     containerd://2.1.5


 # tl get extensions
NODE            NAMESPACE   TYPE              ID            VERSION   NAME                                 VERSION
10.10.10.10   runtime     ExtensionStatus   4             1         nvidia-container-toolkit-lts         580.95.05-v1.18.0
"""  # noqa: E501


def test_a_paste_of_two_commands_is_read_command_by_command() -> None:
    found = facts(PROMPTED)
    assert ("IDENTITY", "nvidia-b200-node-1", "nvidia-b200-node-1") in found
    assert ("EXTENSION", "10.10.10.10", "nvidia-container-toolkit-lts") in found
    (identity,) = [s for s in read_evidence(PROMPTED, "p").signals if s.kind is Kind.IDENTITY]
    assert identity.get("aliases") == "10.10.10.10"


def test_talosctl_stderr_warning_before_the_table() -> None:
    # The warning line as printed in https://github.com/siderolabs/talos/issues/9149's era
    # clients (cmd/talosctl/pkg/talos/helpers: "WARNING: %s: server version %s is older ...").
    text = (
        "WARNING: 10.5.0.3: server version 1.7.6 is older than client version 1.8.3\n"
        "NODE       NAMESPACE   TYPE              ID   VERSION   NAME        VERSION\n"
        "10.5.0.3   runtime     ExtensionStatus   2    1         schematic   "
        "613e1592b2da41ae5e265e8789429f22e121aab91cb4deb6bc3c0b6262961245\n"
    )
    (signal,) = read_evidence(text, "p").signals
    assert (signal.kind, signal.value) == (Kind.EXTENSION, "schematic")
    assert signal.get("version").startswith("613e1592")


def test_grepped_rows_without_their_header() -> None:
    # `talosctl get extensions | grep nvidia`, rows of siderolabs/extensions#893.
    text = (
        "10.10.10.10   runtime     ExtensionStatus   5             1         "
        "nvidia-open-gpu-kernel-modules-lts   580.95.05-v1.12.0-beta.0\n"
        "10.10.10.10   runtime     ExtensionStatus   6             1         "
        "nvidia-fabricmanager-lts             580.95.05\n"
    )
    assert facts(text) == [
        ("EXTENSION", "10.10.10.10", "nvidia-open-gpu-kernel-modules-lts"),
        ("EXTENSION", "10.10.10.10", "nvidia-fabricmanager-lts"),
    ]


def test_grepped_service_rows_without_their_header() -> None:
    # `talosctl services | grep nvidia`: cmd/talosctl/cmd/talos/service.go's columns.
    text = "172.20.0.5   ext-nvidia-persistenced   Waiting   ?        9m30s ago   Waiting\n"
    assert facts(text) == [("SERVICE_WAITING", "172.20.0.5", "ext-nvidia-persistenced")]


def test_bare_nvrm_lines_without_a_dmesg_prefix() -> None:
    text = (
        "NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2b85)\n"
        "NVRM: installed in this system requires use of the NVIDIA open kernel modules.\n"
    )
    (signal,) = read_evidence(text, "p").signals
    assert signal.kind is Kind.NVRM_NEEDS_OPEN
    assert signal.get("pci") == "10de:2b85"


def test_nvidia_smi_list_and_query() -> None:
    listed = facts("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-2f5a1c41-7a3c-2d1e-3b8e)\r\n")
    assert listed == [("GPU_LISTED", "", "NVIDIA H100 80GB HBM3")]
    (gpu,) = read_evidence("GPU 0: NVIDIA B200 (UUID: GPU-d1b93026-6d5b)\n", "p").signals
    assert gpu.get("uuid") == "GPU-d1b93026-6d5b"
    # The Fabric section as pasted in NVIDIA/gpu-operator#2511 and kubernetes-sigs/
    # dra-driver-nvidia-gpu#626.
    completed = "    Fabric\n        State                             : Completed\n"
    pending = "    Fabric\n        State                                          : In Progress\n"
    assert facts(completed) == [("FABRIC_STATE", "", "Completed")]
    assert facts(pending) == [("FABRIC_STATE", "", "In Progress"), ("FABRIC_IN_PROGRESS", "", "")]
    # A100 (NVLink 3) under a running fabric manager: https://github.com/bottlerocket-os/bottlerocket/pull/3873
    not_applicable = "    Fabric\n        State      : N/A\n        Status     : N/A\n"
    (state,) = read_evidence(not_applicable, "p").signals
    assert (state.value, state.get("status")) == ("N/A", "N/A")


def test_talosctl_logs_carry_node_and_time() -> None:
    # siderolabs/extensions#861
    text = (
        "192.168.4.14: 2025/10/30 18:20:10 nvidia-persistenced-wrapper: error starting "
        "nvidia-persistenced: fork/exec /usr/local/bin/nvidia-persistenced: no such file\n"
        "192.168.4.14: 2025/10/30 18:20:11 nvidia-fabricmanager-wrapper: command "
        "/usr/bin/nv-fabricmanager [412] exited with code 1\n"
    )
    (signal,) = read_evidence(text, "p").signals
    assert (signal.kind, signal.node) == (Kind.FABRIC_FAILED, "192.168.4.14")
    assert signal.get("time") == "2025-10-30T18:20:11Z"


def test_talosctl_service_detail_names_running_and_waiting() -> None:
    text = (
        "$ talosctl -n 10.5.0.2 service apid\n"
        "NODE     10.5.0.2\nID       apid\nSTATE    Running\nHEALTH   OK\n"
    )
    assert facts(text) == [("SERVICE_STATE", "10.5.0.2", "apid")]


def test_command_line_names_the_node_its_output_does_not() -> None:
    text = (
        "$ talosctl -n 10.5.0.9 read /proc/modules\n"
        "nvidia 13348864 0 - Live 0xffffffffc1a5b000 (PO)\n"
    )
    assert ("MODULE_LOADED", "10.5.0.9", "nvidia") in facts(text)
    # kubectl's -n is a namespace, never a node.
    text = "$ kubectl -n gpu-operator logs ds/x\nNo devices found\n"
    assert facts(text) == [("NO_DEVICES", "", "")]


def test_a_command_naming_several_nodes_gives_its_output_to_none_of_them() -> None:
    # A line of `-n a,b` output that does not name its node may be either node's: it is not
    # attributed to the first.
    text = (
        "$ talosctl -n 10.5.0.9,10.5.0.10 read /proc/modules\n"
        "nvidia 13348864 0 - Live 0xffffffffc1a5b000 (PO)\n"
    )
    found = facts(text)
    assert ("MODULE_LOADED", "", "nvidia") in found
    assert all(node == "" for _, node, _ in found), found


def test_colour_and_carriage_returns_are_not_part_of_the_evidence() -> None:
    text = (
        "\x1b[32m172.20.0.5   ext-nvidia-persistenced   Waiting   ?   1m ago   Waiting\x1b[0m\r\n"
    )
    assert facts(text) == [("SERVICE_WAITING", "172.20.0.5", "ext-nvidia-persistenced")]


def test_victoriametrics_export_lines_and_prometheus_vectors_name_the_node_twice() -> None:
    export = (
        '{"metric":{"__name__":"node_boot_time_seconds","instance":"10.244.3.17:9100",'
        '"node":"ml-cpu-7x2kq"},"values":[1764000000,1764004230],'
        '"timestamps":[1764003000000,1764007000000]}\n'
    )
    signals = read_evidence(export, "p").signals
    kinds = {s.kind: s for s in signals}
    assert kinds[Kind.IDENTITY].node == "ml-cpu-7x2kq"
    assert kinds[Kind.IDENTITY].get("aliases") == "10.244.3.17"
    assert kinds[Kind.BOOT_TIME].get("boots") == "1764000000,1764004230"
    assert kinds[Kind.BOOT_TIME].get("taken") == "1764007000"
    vector = (
        '{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":'
        '"node_boot_time_seconds","instance":"[fd00::5]:9100"},"value":[1764007000,"1764004230"]}]}}'
    )
    (boot,) = read_evidence(vector, "p").signals
    assert (boot.kind, boot.node, boot.get("boots")) == (Kind.BOOT_TIME, "fd00::5", "1764004230")


DESCRIBE = """\
Name:               worker-gpu-1
Roles:              <none>
Labels:             beta.kubernetes.io/arch=amd64
                    extensions.talos.dev/nvidia-container-toolkit-production=580.105.08-v1.18.0
                    kubernetes.io/hostname=worker-gpu-1
Annotations:        extensions.talos.dev/schematic: a4a9b6cd2e2b5bd4b0ae7d15a2b7d4c4f0d78b3c1e2f3a4b5c6d7e8f9a0b1c2d
                    node.alpha.kubernetes.io/ttl: 0
ProviderID:         kubevirt://kubernetes-tenant-f-gpu-1
Conditions:
  Type             Status  LastHeartbeatTime                 LastTransitionTime                Reason                       Message
  ----             ------  -----------------                 ------------------                ------                       -------
  Ready            True    Tue, 25 Nov 2025 14:02:11 +0000   Tue, 25 Nov 2025 13:01:40 +0000   KubeletReady                 kubelet is posting ready status
Addresses:
  InternalIP:  10.244.3.17
  Hostname:    worker-gpu-1
Allocatable:
  cpu:                8
  nvidia.com/gpu:     0
System Info:
  Boot ID:                    6c0c2d5e-4b0e-4a5e-9f55-0f6a8f1f6c1d
Events:
  Type     Reason                   Age                From             Message
  ----     ------                   ----               ----             -------
  Warning  Rebooted                 61m                kubelet          Node worker-gpu-1 has been rebooted, boot id: 6c0c2d5e-4b0e-4a5e-9f55-0f6a8f1f6c1d
"""  # noqa: E501


def test_kubectl_describe_node() -> None:
    signals = read_evidence(DESCRIBE, "p").signals
    by_kind = {s.kind: s for s in signals}
    assert by_kind[Kind.IDENTITY].get("aliases") == "10.244.3.17"
    assert by_kind[Kind.NODE].get("boot").startswith("6c0c2d5e")
    assert by_kind[Kind.NODE].get("gpus") == "0"
    assert by_kind[Kind.NODE].get("schematic").startswith("a4a9b6cd")
    assert by_kind[Kind.NODE].get("provider") == "kubevirt://kubernetes-tenant-f-gpu-1"
    assert "extensions.talos.dev/nvidia-container-toolkit-production=580.105.08-v1.18.0" in (
        by_kind[Kind.NODE].get("labels").split(",")
    )
    assert (by_kind[Kind.EVENT].node, by_kind[Kind.EVENT].value) == ("worker-gpu-1", "Rebooted")


def test_kubectl_get_events_table() -> None:
    text = (
        "LAST SEEN   TYPE      REASON                    OBJECT                    MESSAGE\n"
        "4m12s       Warning   Rebooted                  node/worker-gpu-1         "
        "Node worker-gpu-1 has been rebooted, boot id: 6c0c2d5e\n"
        "2m          Warning   FailedCreatePodSandBox    pod/cuda-vectoradd        "
        "Failed to create pod sandbox: unresolvable CDI devices nvidia.com/gpu=all\n"
    )
    found = facts(text)
    assert ("EVENT", "worker-gpu-1", "Rebooted") in found
    assert ("CDI_UNRESOLVABLE", "", "Pod/cuda-vectoradd") in found


@pytest.mark.parametrize(
    "text",
    [
        "# Notes\n\nThe node keeps rebooting, I saw `rebooting in 10 seconds` on the console.\n",
        "I ran nvidia-smi and it said No devices were found, then the node rebooted again.\n"
        "After that the extension ext-nvidia-persistenced was still waiting for the driver.\n",
    ],
)
def test_notes_that_quote_evidence_are_not_evidence(text: str) -> None:
    reading = read_evidence(text, "notes.md")
    assert (reading.format, reading.signals) == ("", ())
    assert "not tool output" in reading.problem


def test_machine_config_as_talosctl_prints_it_and_as_a_patch() -> None:
    # `talosctl get mc -o yaml`: the spec is the config as a YAML string
    # (siderolabs/talos pkg/machinery/resources/config/machine_config.go, MarshalYAML).
    resource = (
        "node: 10.244.9.40\nmetadata:\n    namespace: config\n"
        "    type: MachineConfigs.config.talos.dev\n    id: v1alpha1\n    version: 4\n"
        "spec: |\n    version: v1alpha1\n    machine:\n        kernel:\n            modules:\n"
        "                - name: nvidia\n                - name: nvidia_uvm\n"
        "        install:\n            image: factory.talos.dev/metal-installer/abc:v1.14.0\n"
    )
    (config,) = read_evidence(resource, "mc.yaml").signals
    assert (config.kind, config.node) == (Kind.MACHINE_CONFIG, "10.244.9.40")
    assert config.get("modules") == "nvidia,nvidia_uvm"
    patch = "machine:\n  kernel:\n    modules:\n      - name: nvidia\n"
    (patched,) = read_evidence(patch, "patch.yaml").signals
    assert (patched.get("modules"), patched.get("image")) == ("nvidia", "")


def test_the_guide_lists_every_format_with_its_command() -> None:
    guide = (Path(__file__).parents[1] / "docs" / "guides" / "when-broken.md").read_text(
        encoding="utf-8"
    )
    for command in (
        "talosctl dmesg",
        "talosctl logs <service>",
        "talosctl service <id>",
        "talosctl services \\| grep nvidia",
        "kubectl describe node",
        "kubectl get events",
        "kubectl get vmi -o wide",
        "api/v1/query_range",
        "api/v1/export",
        "nvidia-smi -L",
        "nvidia-smi -q",
        "dmesg \\| grep NVRM",
        "read /proc/modules",
        "journalctl",
    ):
        assert command in guide, command


def test_a_console_pasted_without_its_line_breaks_is_read_record_by_record() -> None:
    # As pasted into an issue form that lost the line breaks (a public Talos bootstrap thread).
    text = (
        '[ 148.251526] [talos] task startAllServices (1/1): service "etcd" to be "up" '
        '[ 163.251247] [talos] task startAllServices (1/1): service "ext-lldpd" to be "up" '
        "[ 4206.027881] [talos] boot sequence: failed "
        "[ 4206.218406] [talos] rebooting in 10 seconds\n"
    )
    found = [(s.kind.name, s.value, s.get("uptime")) for s in read_evidence(text, "p").signals]
    assert found == [
        ("SERVICE_WAITING", "etcd", "148.251526"),
        ("SERVICE_WAITING", "ext-lldpd", "163.251247"),
        ("BOOT_FAILED", "", "4206.027881"),
        ("REBOOTING", "", "4206.218406"),
    ]


def test_a_program_prefix_is_not_taken_for_a_node() -> None:
    text = (
        "nvidia-fabricmanager-wrapper: command /usr/bin/nv-fabricmanager [88] exited with code 1\n"
        "worker-7: nvidia-fabricmanager-wrapper: command /usr/bin/nv-fabricmanager [89] "
        "exited with code 1\n"
    )
    assert [s.node for s in read_evidence(text, "p").signals] == ["", "worker-7"]


@pytest.mark.parametrize(
    "text",
    [
        # /proc/modules and nvidia-smi's error are tool output, however wordy.
        "nvidia_uvm 2093056 0 - Live 0xffffffffc2a15000 (O)\n",
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
        "that the latest NVIDIA driver is installed and running.\n",
    ],
)
def test_tool_output_that_reads_like_a_sentence_is_still_evidence(text: str) -> None:
    assert read_evidence(text, "p").signals


def test_nvidia_smi_table_rows_list_the_gpus() -> None:
    # The table as printed in https://github.com/wilicc/gpu-burn/issues/114 (driver 550).
    text = """\
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
|=========================================+========================+======================|
|   0  NVIDIA H100 80GB HBM3          On  |   00000000:19:00.0 Off |                    0 |
| N/A   39C    P0            145W /  700W |   72790MiB /  81559MiB |      0%      Default |
"""
    (gpu,) = read_evidence(text, "p").signals
    assert (gpu.kind, gpu.value, gpu.get("address")) == (
        Kind.GPU_LISTED,
        "NVIDIA H100 80GB HBM3",
        "0000:19:00.0",
    )


def test_a_json_list_cut_short_keeps_what_came_before_the_cut() -> None:
    text = (
        '{"apiVersion": "v1", "kind": "List", "items": [\n'
        '{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-1"},'
        ' "status": {"addresses": [{"address": "10.0.0.7", "type": "InternalIP"}]}},\n'
        '{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-2"}, "sta'
    )
    reading = read_evidence(text, "nodes.json")
    assert reading.format == "json"
    assert {s.node for s in reading.signals} == {"worker-1"}
    assert "read up to there" in reading.problem


def test_the_phase_error_alone_is_a_failed_boot() -> None:
    # As quoted in https://github.com/siderolabs/talos/issues/14373.
    text = (
        "[ 4227.114402] [talos] error running phase 9 in boot sequence: task 1/1: failed, "
        "1 error occurred: * context deadline exceeded\n"
    )
    assert facts(text) == [("BOOT_FAILED", "", "")]


def test_talosctl_nodeaddresses_give_every_address_of_the_machine() -> None:
    rows = [
        ["NODE", "NAMESPACE", "TYPE", "ID", "VERSION", "ADDRESSES"],
        ["54.93.248.122", "network", "NodeAddress", "default", "1", '["172.31.5.7/20"]'],
        ["54.93.248.122", "network", "NodeAddress", "current", "2", '["172.31.5.7/20"]'],
    ]
    text = "".join("   ".join(cell.ljust(13) for cell in row).rstrip() + "\n" for row in rows)
    aliases = {s.get("aliases") for s in read_evidence(text, "p").signals}
    assert aliases == {"172.31.5.7"}


def test_the_device_plugins_messages_are_its_own() -> None:
    # k8s-device-plugin's log as pasted in https://github.com/NVIDIA/k8s-device-plugin/issues/1080
    text = (
        "E1129 11:18:42.708338       1 factory.go:112] Incompatible strategy detected auto\n"
        "I1129 11:18:42.708370       1 main.go:381] No devices found. Waiting indefinitely.\n"
    )
    assert [s.kind for s in read_evidence(text, "p").signals] == [
        Kind.PLUGIN_NO_NVML,
        Kind.PLUGIN_NO_DEVICES,
    ]
    # nvidia-smi's own wording, both forms, stays NO_DEVICES.
    for line in ("No devices were found\n", "No devices found\n"):
        assert [s.kind for s in read_evidence(line, "p").signals] == [Kind.NO_DEVICES]


def test_a_machine_config_with_its_documentation_comments_is_not_prose() -> None:
    # `talosctl gen config` writes comments at the margin before each section.
    text = (
        "version: v1alpha1 # Indicates the schema used to decode the contents.\n"
        "debug: false # Enable verbose logging to the console.\n"
        "persist: true\n"
        "# Provides machine specific configuration options.\n"
        "machine:\n"
        "    type: worker # Defines the role of the machine within the cluster.\n"
        "    kernel:\n"
        "        modules:\n"
        "            - name: nvidia\n"
    )
    reading = read_evidence(text, "worker.yaml")
    assert [(s.kind, s.get("modules")) for s in reading.signals] == [
        (Kind.MACHINE_CONFIG, "nvidia")
    ]


def test_the_fabric_managers_success_is_evidence_too() -> None:
    text = (
        "10.30.0.11: nv-fabricmanager: Successfully configured all the available GPUs and "
        "NVSwitches to route NVLink traffic.\n"
    )
    assert facts(text) == [("FABRIC_CONFIGURED", "10.30.0.11", "")]


# A Markdown write-up quotes a Talos log line with no stamp or node before it; the file then
# starts with "[" like a JSON list (the line is from a public write-up of a ZFS extension
# whose service never starts).
_BARE_TALOS_LINE = '[talos] task startAllServices (1/1): service "ext-zfs-service" to be "up"\n'


def test_a_file_starting_with_a_bare_talos_line_is_a_log_not_broken_json(tmp_path: Path) -> None:
    evidence = tmp_path / "machined.log"
    evidence.write_text(_BARE_TALOS_LINE * 2, encoding="utf-8")
    report = triage_paths([str(evidence)])
    assert [r.format for r in report.readings] == ["log"]
    assert report.unrecognised == ()
    waiting = [s.value for r in report.readings for s in r.signals]
    assert waiting == ["ext-zfs-service", "ext-zfs-service"]


def test_a_json_list_broken_after_its_first_line_is_still_reported(tmp_path: Path) -> None:
    evidence = tmp_path / "pods.json"
    evidence.write_text('[\n  {"kind": "Pod",\n  oops\n]\n', encoding="utf-8")
    report = triage_paths([str(evidence)])
    assert [r.file for r in report.unrecognised] == [str(evidence)]
    assert "line 3" in report.unrecognised[0].problem


# --- kubectl describe pod ----------------------------------------------------------------------

TRIAGE = Path(__file__).parent / "data" / "triage"


def test_kubectl_describe_pod_names_its_node_and_containers() -> None:
    # NVIDIA/gpu-operator#413: the device plugin's pod, Pending in its init container.
    paste = TRIAGE / "paste-describe-pod-init-waiting" / "describe-pod.txt"
    reading = read_evidence(paste.read_text("utf-8"), "pod.txt")
    assert reading.format == "describe"
    (pod,) = [s for s in reading.signals if s.kind is Kind.POD]
    node = "dgxadmin-dgx-station-a100-920-23487-2530-000"
    assert (pod.node, pod.value) == (node, "gpu-operator/nvidia-device-plugin-daemonset-tltdv")
    assert (pod.get("waiting"), pod.get("runtime_class"), pod.get("restarts")) == (
        "PodInitializing",
        "nvidia",
        "0",
    )
    (identity,) = [s for s in reading.signals if s.kind is Kind.IDENTITY]
    assert (identity.node, identity.get("aliases")) == (node, "10.36.40.65")


# The head of NVIDIA/gpu-operator#413's paste; the container's Last State block as
# NVIDIA/gpu-operator#898 shows it (a message's second line at the left margin), carrying the
# hook's error as NVIDIA/nvidia-docker#1629 quotes it; Events rows as #730 shows them.
DESCRIBED_POD = """\
Name:                 nvidia-device-plugin-daemonset-tltdv
Namespace:            gpu-operator
Priority:             2000001000
Runtime Class Name:   nvidia
Node:                 worker-gpu-1/10.36.40.65
Status:               Running
Containers:
  nvidia-device-plugin:
    Image:          nvcr.io/nvidia/k8s-device-plugin:v0.17.1
    State:          Waiting
      Reason:       CrashLoopBackOff
    Last State:     Terminated
      Reason:       StartError
      Message:      failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: error running hook #0: error running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'
nvidia-container-cli: initialization error: nvml error: driver not loaded: unknown
      Exit Code:    128
    Ready:          False
    Restart Count:  4
    Limits:
      nvidia.com/gpu:  1
Events:
  Type     Reason                  Age                   From               Message
  ----     ------                  ----                  ----               -------
  Warning  FailedCreatePodSandBox  12s (x10 over 2m11s)  kubelet            Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for "nvidia" is configured
"""  # noqa: E501


def test_a_described_pods_messages_and_events_are_its_nodes() -> None:
    signals = read_evidence(DESCRIBED_POD, "pod.txt").signals
    (pod,) = [s for s in signals if s.kind is Kind.POD]
    assert (pod.get("waiting"), pod.get("exit"), pod.get("reason")) == (
        "CrashLoopBackOff",
        "128",
        "StartError",
    )
    assert (pod.get("restarts"), pod.get("gpu")) == ("4", "1")
    (no_driver,) = [s for s in signals if s.kind is Kind.NO_DRIVER]
    assert (no_driver.node, no_driver.evidence.line) == ("worker-gpu-1", 15)
    (handler,) = [s for s in signals if s.kind is Kind.RUNTIME_HANDLER_MISSING]
    assert handler.node == "worker-gpu-1"
    (event,) = [s for s in signals if s.kind is Kind.EVENT]
    assert (event.value, event.get("object")) == (
        "FailedCreatePodSandBox",
        "Pod/gpu-operator/nvidia-device-plugin-daemonset-tltdv",
    )


def test_a_driver_that_does_not_answer_is_a_warning_until_the_modules_are_shown(
    tmp_path: Path,
) -> None:
    smi = TRIAGE / "paste-smi-cannot-reach-driver-alone" / "nvidia-smi.txt"
    (tmp_path / "nvidia-smi.txt").write_text(smi.read_text("utf-8"), "utf-8")
    (alone,) = triage_paths([str(tmp_path)]).diagnoses
    assert (alone.code, alone.severity) == ("TS123", "warning")
    assert any("get modules" in line for line in alone.collect)
    # With an nvidia module shown loaded, the modules are not the cause: no TS123.
    modules = TRIAGE / "ts103-proprietary-on-blackwell" / "proc-modules.txt"
    (tmp_path / "proc-modules.txt").write_text(modules.read_text("utf-8"), "utf-8")
    assert "TS123" not in [d.code for d in triage_paths([str(tmp_path)]).diagnoses]


def test_an_events_section_pasted_alone_is_its_pods_on_the_scheduled_node() -> None:
    # NVIDIA/gpu-operator#730: the command, an elision, then the Events section.
    text = (TRIAGE / "paste-no-runtime-nvidia-sandbox" / "describe-pod.txt").read_text()
    signals = read_evidence(text, "p").signals
    (pod,) = [s for s in signals if s.kind is Kind.POD]
    assert (pod.node, pod.value) == (
        "i-071a4e5a302e4025b",
        "gpu-operator/nvidia-device-plugin-daemonset-w72xb",
    )
    assert {s.node for s in signals if s.kind is Kind.RUNTIME_HANDLER_MISSING} == {
        "i-071a4e5a302e4025b"
    }


def test_headerless_event_rows_take_their_pods_node_from_its_scheduled_row() -> None:
    text = (TRIAGE / "paste-events-scheduled-names-the-node" / "events.txt").read_text()
    reading = read_evidence(text, "p")
    assert reading.format == "table"
    missing = [s for s in reading.signals if s.kind is Kind.RUNTIME_HANDLER_MISSING]
    assert len(missing) == 4
    assert {s.node for s in missing} == {"ipp1-2890"}
    # A row of a pod no Scheduled row names keeps no node.
    other = text.replace("pod/nvidia-mig-manager-nzmhb", "pod/elsewhere-abcde")
    nodes = {
        s.value: s.node
        for s in read_evidence(other, "p").signals
        if s.kind is Kind.RUNTIME_HANDLER_MISSING
    }
    assert nodes["Pod/elsewhere-abcde"] == ""


def test_capacity_and_allocatable_pasted_alone_are_a_nodes_gpu_counts() -> None:
    # NVIDIA/gpu-operator#1065: the two sections only, the allocatable line marked by hand.
    text = (TRIAGE / "ts212-allocatable-below-capacity" / "describe-node.txt").read_text()
    reading = read_evidence(text, "p")
    assert reading.format == "describe"
    (node,) = reading.signals
    assert (node.kind, node.node, node.get("capacity"), node.get("gpus")) == (
        Kind.NODE,
        "",
        "8",
        "7",
    )
    assert node.evidence.line == 15


def test_a_node_objects_gpu_capacity_is_read_beside_its_allocatable() -> None:
    # core/v1 NodeStatus as `kubectl get node -o json` prints it: capacity and allocatable.
    text = (
        '{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-gpu-1"}, '
        '"status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "7"}}}'
    )
    (node,) = [s for s in read_evidence(text, "node.json").signals if s.kind is Kind.NODE]
    assert (node.get("capacity"), node.get("gpus")) == ("8", "7")


def test_a_described_daemonset_is_evidence_at_its_desired_count_line() -> None:
    # The fixture's source is in its folder's SOURCES.md (kubectl describe daemonset).
    path = (
        Path(__file__).parent / "data/triage/paste-device-plugin-describe-ds-zero/describe-ds.txt"
    )
    text = path.read_text()
    (daemonset,) = [
        s for s in read_evidence(text, "describe-ds.txt").signals if s.kind == Kind.DAEMONSET
    ]
    desired = text.splitlines().index("Desired Number of Nodes Scheduled: 0") + 1
    assert (daemonset.evidence.line, daemonset.evidence.text) == (
        desired,
        "Desired Number of Nodes Scheduled: 0",
    )
