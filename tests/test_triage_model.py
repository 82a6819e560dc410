"""`triage` on evidence shaped the way people paste it: one test per class of failure the
engine had (the names are shared with the corpus tests), and as many that must NOT fire.

The inputs are built here from the line formats of the bundles in tests/data/triage (each
format's source is in that bundle's SOURCES.md); names, addresses and counts vary.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands
from schematic.doctor.triage import triage_paths

register_all_commands()

BUNDLES = Path(__file__).parent / "data" / "triage"
COZYSTACK_DEFAULT = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
# The ts101 console (tenant-a-cpu-7c9xv.console.log) of a node whose NVIDIA services wait.
CONSOLE = (BUNDLES / "ts101-nvidia-image-cpu-worker" / "tenant-a-cpu-7c9xv.console.log").read_text(
    encoding="utf-8"
)
# Every Talos boot logs this in its first seconds, before apid has its certificates.
EARLY_APID = (
    '[    5.913501] [talos] service[apid](Waiting): Waiting for service "containerd" to be '
    '"up", api certificates\n'
)
PCI_HEADER = (
    "NODE          NAMESPACE   TYPE        ID             VERSION   CLASS                       "
    "SUBCLASS                    VENDOR              PRODUCT\n"
)


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def codes(path: Path, **options: Any) -> dict[str, tuple[str, ...]]:
    return {d.code: d.nodes for d in triage_paths([str(path)], **options).diagnoses}


def pci_rows(address: str, nvidia: bool = False) -> str:
    rows = (
        f"{address:<13} hardware    PCIDevice   0000:00:00.0   1         Bridge                 "
        "     Host bridge                 Intel Corporation   82G33/G31/P35/P31 Express DRAM "
        "Controller\n"
        f"{address:<13} hardware    PCIDevice   0000:00:02.0   1         Network controller     "
        "     Ethernet controller         Red Hat, Inc.       Virtio network device\n"
    )
    if nvidia:
        rows += (
            f"{address:<13} hardware    PCIDevice   0000:01:00.0   1         Display controller "
            "         3D controller               NVIDIA Corporation  GH100 [H200 SXM 141GB]\n"
        )
    return rows


def node(name: str, address: str, **extra: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "labels": {"kubernetes.io/hostname": name}}
    metadata.update(extra.pop("metadata", {}))
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": metadata,
        "status": {
            "addresses": [
                {"address": address, "type": "InternalIP"},
                {"address": name, "type": "Hostname"},
            ],
            "conditions": [{"status": "True", "type": "Ready", "reason": "KubeletReady"}],
            "nodeInfo": {"bootID": f"boot-{name}"},
        },
        **extra,
    }


def node_list(*nodes: dict[str, Any]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(nodes)}, indent=4)


def service(with_trustd: bool) -> str:
    ports = [{"name": "kube-apiserver", "port": 6443, "protocol": "TCP", "targetPort": 6443}]
    if with_trustd:
        ports.append(
            {"name": "talos-trustd", "port": 50001, "protocol": "TCP", "targetPort": 50001}
        )
    document = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "kubernetes-tenant-a", "namespace": "tenant-a"},
        "spec": {"ports": ports, "type": "LoadBalancer"},
    }
    return json.dumps(document, indent=4)


def pod(name: str, node_name: str, restarts: int, created: str, finished: str) -> dict[str, Any]:
    last = (
        {"terminated": {"exitCode": 255, "reason": "Unknown", "finishedAt": finished}}
        if restarts
        else {}
    )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "kube-system", "creationTimestamp": created},
        "spec": {"nodeName": node_name, "containers": [{"name": "main"}]},
        "status": {
            "startTime": created,
            "containerStatuses": [{"name": "main", "restartCount": restarts, "lastState": last}],
        },
    }


def boot_times(series: list[tuple[dict[str, str], list[int]]]) -> str:
    """A query_range answer of node_boot_time_seconds, one sample every 5 minutes."""
    result = []
    for labels, boots in series:
        values = []
        for index, boot in enumerate(boots):
            end = boots[index + 1] if index + 1 < len(boots) else boot + 3600
            values += [[t, str(boot)] for t in range(boot + 60, end, 300)]
        metric = {"__name__": "node_boot_time_seconds", "job": "node-exporter", **labels}
        result.append({"metric": metric, "values": values})
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}})


# --- class 1: the headline failure, not its look-alike ----------------------------------------


def test_class1_pending_at_timeout_not_early_boot_wait(tmp_path: Path) -> None:
    # The ordinary early apid wait, then only the NVIDIA services left when the timer gives up.
    lines = CONSOLE.splitlines(keepends=True)
    (tmp_path / "ml-cpu-7x2kq.console.log").write_text(
        "".join(lines[:4]) + EARLY_APID + "".join(lines[4:]), encoding="utf-8"
    )
    (tmp_path / "pcidevices.txt").write_text(PCI_HEADER + pci_rows("10.244.3.17"), "utf-8")
    (tmp_path / "nodes.json").write_text(node_list(node("ml-cpu-7x2kq", "10.244.3.17")), "utf-8")
    (tmp_path / "svc.json").write_text(service(with_trustd=True), encoding="utf-8")
    report = triage_paths([str(tmp_path)])
    assert {d.code: d.nodes for d in report.diagnoses} == {"TS101": ("ml-cpu-7x2kq",)}
    (diagnosis,) = report.diagnoses
    ts131 = next(r for r in diagnosis.ruled_out if r.startswith("TS131"))
    assert "svc.json" in ts131 and "lists port 50001" in ts131
    assert "apid is not among the services pending at the timeout" in ts131
    # The early apid line is not quoted as evidence.
    assert not any("api certificates" in e.text for e in diagnosis.evidence)


def test_class1_the_early_apid_wait_of_a_healthy_boot_is_nothing(tmp_path: Path) -> None:
    lines = CONSOLE.splitlines(keepends=True)
    # A boot that lists everything in its first seconds and then comes up.
    healthy = "".join(lines[:4]) + EARLY_APID + lines[6].replace("ext-nvidia", "ext-iscsi")
    (tmp_path / "console.log").write_text(healthy, encoding="utf-8")
    assert codes(tmp_path) == {}


def test_class1_a_service_with_port_50001_rules_ts131_out_and_keeps_the_x509_reason(
    tmp_path: Path,
) -> None:
    console = (BUNDLES / "ts131-trustd-port-missing" / "tenant-b-md0-q8w2n.console.log").read_text(
        encoding="utf-8"
    )
    x509 = (
        "transport: authentication handshake failed: tls: failed to verify certificate: x509: "
        'certificate signed by unknown authority (possibly because of \\"crypto/rsa: '
        'verification error\\" while trying to verify candidate authority certificate \\"talos\\")'
    )
    console = console.replace(
        "transport: Error while dialing: dial tcp 10.96.14.21:50001: i/o timeout", x509
    )
    (tmp_path / "tenant-b-md0-q8w2n.console.log").write_text(console, encoding="utf-8")
    (tmp_path / "svc.json").write_text(service(with_trustd=True), encoding="utf-8")
    report = triage_paths([str(tmp_path)])
    found = {d.code: d for d in report.diagnoses}
    assert "TS131" not in found
    diagnosis = found["TS201"]
    assert "x509: certificate signed by unknown authority" in diagnosis.summary
    assert any(
        "x509: certificate signed by unknown authority" in e.text for e in diagnosis.evidence
    )
    assert any(r.startswith("TS131") and "lists port 50001" in r for r in diagnosis.ruled_out)


# --- class 2: one node, several names ---------------------------------------------------------


def test_class2_one_node_many_names_joined(tmp_path: Path) -> None:
    """The timer in a metric keyed by instance and node labels, the image's extensions and the
    PCI devices in talosctl tables keyed by address, the name in nodes.json: one machine."""
    start = 1_795_000_000
    boots = [start + i * 4_227 for i in range(5)]
    series = [({"instance": "10.244.3.17:9100", "node": "ml-cpu-7x2kq"}, boots)]
    (tmp_path / "boot.json").write_text(boot_times(series), encoding="utf-8")
    (tmp_path / "pci.txt").write_text(PCI_HEADER + pci_rows("10.244.3.17"), encoding="utf-8")
    extensions = (BUNDLES / "ts103-proprietary-on-blackwell" / "extensions.txt").read_text(
        encoding="utf-8"
    )
    extensions = extensions.replace("10.0.40.21", "10.244.3.17").replace(
        "nonfree-kmod-nvidia-production   ", "qemu-guest-agent                 "
    )
    (tmp_path / "extensions.txt").write_text(extensions, encoding="utf-8")
    assert codes(tmp_path) == {"TS101": ("ml-cpu-7x2kq",)}


def test_class2_an_address_only_metric_meets_the_node_through_nodes_json(tmp_path: Path) -> None:
    start = 1_795_000_000
    series = [({"instance": "10.244.3.17:9100"}, [start + i * 4_227 for i in range(4)])]
    (tmp_path / "boot.json").write_text(boot_times(series), encoding="utf-8")
    (tmp_path / "nodes.json").write_text(node_list(node("ml-cpu-7x2kq", "10.244.3.17")), "utf-8")
    assert codes(tmp_path) == {"TS202": ("ml-cpu-7x2kq",)}


def test_a_log_named_after_worker_10_is_not_given_to_worker_1(tmp_path: Path) -> None:
    (tmp_path / "nodes.json").write_text(
        node_list(node("worker-1", "10.0.0.1"), node("worker-10", "10.0.0.10")), "utf-8"
    )
    (tmp_path / "pci.txt").write_text(
        PCI_HEADER + pci_rows("10.0.0.1") + pci_rows("10.0.0.10"), encoding="utf-8"
    )
    (tmp_path / "worker-10.console.log").write_text(CONSOLE, encoding="utf-8")
    assert codes(tmp_path) == {"TS101": ("worker-10",)}


# --- class 3: a timer claim needs time --------------------------------------------------------


def test_class3_timer_claim_needs_time(tmp_path: Path) -> None:
    """Pods that restarted once, all alike (a drain, an upgrade): no timer claim on any node."""
    nodes = [node(f"md0-{i:02d}", f"10.1.0.{i}") for i in range(8)]
    pods = [
        pod(f"p-{n}-{i}", f"md0-{n:02d}", 1, "2026-11-01T00:00:00Z", "2026-11-19T08:00:00Z")
        for n in range(8)
        for i in range(5)
    ]
    (tmp_path / "nodes.json").write_text(node_list(*nodes), encoding="utf-8")
    (tmp_path / "pods.json").write_text(node_list(*pods), encoding="utf-8")
    assert codes(tmp_path) == {}


def test_class3_restarts_without_any_time_make_no_timer_claim(tmp_path: Path) -> None:
    pods = [pod(f"p-{i}", "md0-00", 4, "", "") for i in range(4)]
    (tmp_path / "pods.json").write_text(node_list(*pods), encoding="utf-8")
    assert codes(tmp_path) == {}


def test_class3_a_node_that_ran_for_days_then_loops_is_flagged(tmp_path: Path) -> None:
    start = 1_795_000_000
    boots = [start, start + 6 * 86_400]  # up for six days, then an upgrade
    boots += [boots[-1] + i * 4_221 for i in range(1, 4)]
    (tmp_path / "boot.json").write_text(
        boot_times([({"instance": "10.1.0.5:9100"}, boots)]), encoding="utf-8"
    )
    (diagnosis,) = triage_paths([str(tmp_path)]).diagnoses
    assert (diagnosis.code, diagnosis.nodes) == ("TS202", ("10.1.0.5",))
    assert "The last 4 boots 4221 s apart, after 6.0 days" in diagnosis.summary


def test_class3_boots_far_apart_are_no_timer(tmp_path: Path) -> None:
    start = 1_795_000_000
    boots = [start, start + 3 * 86_400, start + 5 * 86_400 + 4_200]
    (tmp_path / "boot.json").write_text(
        boot_times([({"instance": "10.1.0.5:9100"}, boots)]), encoding="utf-8"
    )
    assert codes(tmp_path) == {}


# --- class 4: TS155 only where NVLink 5's fabric failed ---------------------------------------

WRAPPER_HINT = (
    (BUNDLES / "ts155-nvlink5-without-ib-umad" / "fabricmanager.log")
    .read_text(encoding="utf-8")
    .splitlines(keepends=True)
)


def test_class4_ts155_only_on_failed_nvlink5_fabric(tmp_path: Path) -> None:
    # A healthy HGX H100: the wrapper prints its hint, the fabric manager starts, the fabric
    # is trained (nvidia-smi -q: Completed).
    (tmp_path / "fabricmanager.log").write_text("".join(WRAPPER_HINT[:3]), encoding="utf-8")
    (tmp_path / "nvidia-smi-q.txt").write_text(
        "    Fabric\n        State                             : Completed\n"
        "        Status                            : Success\n",
        encoding="utf-8",
    )
    assert codes(tmp_path) == {}
    # The B200 bundle, whose fabric manager found nothing to do: TS155.
    assert "TS155" in codes(BUNDLES / "ts155-nvlink5-without-ib-umad")


# --- class 5 (engine side): what could not be read is said ------------------------------------


def test_class5_a_run_that_recognised_nothing_names_the_files(tmp_path: Path) -> None:
    (tmp_path / "paste.txt").write_text("$ talosctl get foo\nsomething odd\n", encoding="utf-8")
    code, out, err = run("triage", str(tmp_path))
    # Nothing read is not "healthy": a script must not take it for exit 0.
    assert code == 4
    assert "nothing could be judged: no input was read as evidence" in out
    assert "no failure recognised" not in out
    assert "nothing was recognised; could not read:" in out
    assert "paste.txt" in out
    assert "nothing could be judged" in err


def test_an_empty_folder_is_nothing_judged(tmp_path: Path) -> None:
    code, out, _ = run("triage", str(tmp_path))
    assert (code, out) == (4, "nothing could be judged: no input was read as evidence\n")
    code, out, _ = run("triage", str(tmp_path), "--format", "json")
    assert code == 4
    assert json.loads(out)["verdict"] == "not judged"


def test_notes_alone_are_nothing_judged(tmp_path: Path) -> None:
    # A README quoting a failure line is not evidence; with nothing else there is no verdict.
    (tmp_path / "README.md").write_text(
        "# Incident\n\nThe workers reboot about every hour and we think it is the driver.\n"
        "We pasted the console below once we had it from the cloud provider's portal.\n",
        encoding="utf-8",
    )
    code, out, _ = run("triage", str(tmp_path), "--format", "markdown")
    assert code == 4
    assert "Nothing could be judged: no input was read as evidence." in out


def test_judged_healthy_exits_0_and_says_so_in_json(tmp_path: Path) -> None:
    # Must not fire: one file read and healthy is exit 0, verdict healthy.
    (tmp_path / "nodes.json").write_text(node_list(node("cpu-1-b7k2c", "10.6.0.1")), "utf-8")
    code, out, _ = run("triage", str(tmp_path), "--format", "json")
    assert code == 0
    assert json.loads(out)["verdict"] == "healthy"


# --- class 6: notes are not evidence ----------------------------------------------------------


def test_class6_non_evidence_files_are_unrecognised(tmp_path: Path) -> None:
    source = BUNDLES / "ts101-nvidia-image-cpu-worker"
    for file in source.iterdir():
        if file.name != "SOURCES.md":
            (tmp_path / file.name).write_bytes(file.read_bytes())
    # A note that quotes a few console lines among its paragraphs (a heading and a line of
    # caption around a paste are the paste's: tests/test_triage_paste_cleaning.py).
    (tmp_path / "README.md").write_text(
        "# What we saw\n\nThe worker loops. From the console:\n\n```\n"
        + "".join(CONSOLE.splitlines(keepends=True)[8:14])
        + "```\n\n"
        "We first thought the control plane was at fault, since the old one lost a port.\n"
        "Then the memory graphs looked fine, so we ruled out the kernel killing things.\n"
        "The image of the CPU pool is the one we copied from the GPU pool last month.\n"
        "Somebody should check whether the extensions of that image fit a CPU worker.\n"
        "We will rebuild the pool with the plain image on Thursday and watch it again.\n"
        "Until then the workload stays on the other pool, which has been stable.\n"
        "Ask in the platform channel before touching the tenant's control plane.\n",
        encoding="utf-8",
    )
    (tmp_path / "notes.txt").write_text(
        "Node tenant-a-cpu-7c9xv keeps rebooting every hour or so since Tuesday.\n"
        "We saw the boot sequence: failed message and then rebooting in 10 seconds.\n"
        "Memory looked fine in Grafana and nobody changed the control plane.\n"
        "Maybe the NVIDIA image is wrong for the CPU pool, not sure yet.\n",
        encoding="utf-8",
    )
    report = triage_paths([str(tmp_path)])
    unread = {Path(r.file).name for r in report.unrecognised}
    assert {"README.md", "notes.txt"} <= unread
    for diagnosis in report.diagnoses:
        assert not any(Path(e.file).name in ("README.md", "notes.txt") for e in diagnosis.evidence)
    assert {d.code for d in report.diagnoses} == {"TS101"}


# --- class 7: a cluster's pods JSON by default ------------------------------------------------


def test_class7_cluster_scale_pods_json_by_default(tmp_path: Path) -> None:
    padding: dict[str, Any] = {"f:" + "x" * 40: {"f:" + "y" * 40: {}}}
    items = []
    for number in range(2_600):
        item = pod(f"web-{number:05d}", f"md0-{number % 50:02d}", 1, "2026-11-01T00:00:00Z", "")
        item["metadata"]["managedFields"] = [
            {"manager": "kubelet", "fieldsV1": {f"f:k{i}-{number}": padding for i in range(60)}}
        ]
        items.append(item)
    big = tmp_path / "pods.json"
    big.write_text(node_list(*items), encoding="utf-8")
    assert big.stat().st_size > 16 * 1024 * 1024
    code, _, err = run("triage", str(big))
    assert code == 0, err
    assert "from 1 file" in err
    # An explicit limit still holds, and says once how to raise it.
    code, _, err = run("triage", "--max-input-size", "1MiB", str(big))
    assert code == 1
    assert err.count("raise") == 1 and "--max-input-size" in err


# --- class 8: fixes a user can paste ----------------------------------------------------------


def test_class8_fixes_a_user_can_paste() -> None:
    code, out, _ = run("triage", str(BUNDLES / "ts101-nvidia-image-cpu-worker"))
    assert code == 3
    assert COZYSTACK_DEFAULT in out
    assert "…" not in out.split("talos-schematic explain", 1)[0].split("fix:", 1)[1]
    assert "KubernetesNodes `<cluster>-tenant-a-cpu`" in out
    assert "osImage.factory.schematicID" in out
    assert "talhelper: `schematic:`" in out
    assert "machine.install.image" in out
    assert "talos-schematic explain TS101" in out
    summary = out.split("\n\n", 1)[0]
    assert summary.startswith("summary:\n")
    assert "TS101" in summary and "pool tenant-a-cpu → 1 node →" in summary


# --- grouping and the cluster view ------------------------------------------------------------


def test_one_cause_in_one_pool_is_one_finding(tmp_path: Path) -> None:
    # Cluster API's suffix alphabet, as in tenant-a-cpu-7c9xv.
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    names = sorted(f"ml-cpu-{alphabet[i // 27]}{alphabet[i % 27]}x7k" for i in range(50))
    nodes = [node(name, f"10.3.0.{i}") for i, name in enumerate(names)]
    (tmp_path / "nodes.json").write_text(node_list(*nodes), encoding="utf-8")
    (tmp_path / "pci.txt").write_text(
        PCI_HEADER + "".join(pci_rows(f"10.3.0.{i}") for i in range(50)), encoding="utf-8"
    )
    for name in names:
        (tmp_path / f"{name}.console.log").write_text(CONSOLE, encoding="utf-8")
    (diagnosis,) = triage_paths([str(tmp_path)]).diagnoses
    assert (diagnosis.code, diagnosis.pools, diagnosis.nodes) == (
        "TS101",
        ("ml-cpu",),
        tuple(names),
    )
    assert diagnosis.summary.startswith("50 nodes of pool ml-cpu show it")


def test_two_causes_at_once_are_both_named(tmp_path: Path) -> None:
    (tmp_path / "nodes.json").write_text(
        node_list(node("cpu-a-5tq7z", "10.4.0.1"), node("gpu-b-4hx8d", "10.4.0.2")), "utf-8"
    )
    (tmp_path / "pci.txt").write_text(PCI_HEADER + pci_rows("10.4.0.1"), encoding="utf-8")
    (tmp_path / "cpu-a-5tq7z.console.log").write_text(CONSOLE, encoding="utf-8")
    lldpd = (BUNDLES / "ts201-lldpd-waits" / "dmesg.txt").read_text(encoding="utf-8")
    ip = lldpd.split(":", 1)[0]
    (tmp_path / "gpu-b.dmesg.txt").write_text(lldpd.replace(ip, "10.4.0.2"), encoding="utf-8")
    assert codes(tmp_path) == {"TS101": ("cpu-a-5tq7z",), "TS201": ("gpu-b-4hx8d",)}


# --- running vs committed ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def committed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("deploy") / "gpu"
    example = Path(__file__).parent.parent / "examples" / "cluster.yaml"
    code, _, err = run("generate", str(example), "--out", str(out))
    assert code == 0, err
    return out


def test_ts214_against_names_the_node_and_both_ids(tmp_path: Path, committed: Path) -> None:
    from schematic.output.outdir import read_index

    index = read_index(committed)
    assert index is not None
    cpu = index.schematic_ids()["cpu"]
    running = "8dd5a4b1e3c0f8d6e1c1d1b7f9f5e2a3c4b6d7e8f9a0b1c2d3e4f5a6b7c8d9e0"
    annotated = {"annotations": {"extensions.talos.dev/schematic": running}}
    right = {"annotations": {"extensions.talos.dev/schematic": cpu}}
    (tmp_path / "nodes.json").write_text(
        node_list(
            node("kubernetes-mycluster-cpu-6f7d8c9b5-x7k2p", "10.5.0.1", metadata=annotated),
            node("kubernetes-mycluster-cpu-6f7d8c9b5-q8w2n", "10.5.0.2", metadata=right),
        ),
        encoding="utf-8",
    )
    code, out, _ = run("triage", str(tmp_path), "--against", str(committed))
    assert code == 3
    assert "TS214" in out and "TS130" not in out
    assert "kubernetes-mycluster-cpu-6f7d8c9b5-x7k2p" in out
    assert "q8w2n" not in out
    assert running in out and cpu in out
    # Without --against there is nothing to compare with.
    assert codes(tmp_path) == {}


def _running(tmp_path: Path, nodes: dict[str, str]) -> None:
    """nodes.json with each node annotated with the schematic it runs."""
    items = [
        node(
            name,
            f"10.5.0.{number}",
            metadata={"annotations": {"extensions.talos.dev/schematic": schematic}},
        )
        for number, (name, schematic) in enumerate(sorted(nodes.items()), 1)
    ]
    (tmp_path / "nodes.json").write_text(node_list(*items), encoding="utf-8")


def _against(tmp_path: Path, committed: Path) -> list[Any]:
    return [
        d
        for d in triage_paths([str(tmp_path)], against=str(committed)).diagnoses
        if d.code == "TS214"
    ]


def test_against_matches_the_longest_pool_name(tmp_path: Path) -> None:
    # Pools gpu and gpu-big: a gpu-big node runs gpu-big's schematic, a gpu node gpu's.
    example = Path(__file__).parent.parent / "examples" / "cluster.yaml"
    text = example.read_text(encoding="utf-8")
    text = text.replace("- name: rtx6000", "- name: gpu").replace("- name: l40s", "- name: gpu-big")
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(text, encoding="utf-8")
    out = tmp_path / "deploy"
    code, _, err = run("generate", str(cluster), "--out", str(out))
    assert code == 0, err
    from schematic.output.outdir import read_index

    index = read_index(out)
    assert index is not None
    ids = index.schematic_ids()
    assert ids["gpu"] != ids["gpu-big"]
    evidence = tmp_path / "evidence"
    evidence.mkdir()
    _running(
        evidence,
        {
            "kubernetes-mycluster-gpu-big-6f7d8c9b5-x7k2p": ids["gpu-big"],
            "kubernetes-mycluster-gpu-6f7d8c9b5-q8w2n": ids["gpu"],
        },
    )
    # Must not fire: each runs its own pool's schematic.
    assert _against(evidence, out) == []
    # Swapped, each is named against its own pool.
    _running(
        evidence,
        {
            "kubernetes-mycluster-gpu-big-6f7d8c9b5-x7k2p": ids["gpu"],
            "kubernetes-mycluster-gpu-6f7d8c9b5-q8w2n": ids["gpu-big"],
        },
    )
    found = {d.pools: d for d in _against(evidence, out)}
    assert set(found) == {("kubernetes-mycluster-gpu",), ("kubernetes-mycluster-gpu-big",)}
    big = found["kubernetes-mycluster-gpu-big",]
    assert dict(big.schematics) == {"running": ids["gpu"], "committed": ids["gpu-big"]}
    # The fix names the KubernetesNodes object, not `<cluster>-kubernetes-mycluster-gpu-big`.
    assert any("KubernetesNodes `mycluster-gpu-big`" in p for p in big.places)
    assert not any("<cluster>-kubernetes" in p for p in big.places)


def test_against_takes_the_factory_stamped_id_as_the_pools(tmp_path: Path, committed: Path) -> None:
    # An Enterprise factory's ID (the body with its owner) recorded in index.yaml beside the
    # offline one: a node running either is the pool's.
    import shutil

    import yaml

    deploy = tmp_path / "deploy"
    shutil.copytree(committed, deploy)
    index_file = deploy / "index.yaml"
    index = yaml.safe_load(index_file.read_text(encoding="utf-8"))
    entry = next(p for p in index["pools"] if p["name"] == "cpu")
    offline = entry["schematicID"]
    stamped = "5e1f" + offline[4:]
    entry["offlineSchematicID"], entry["schematicID"] = offline, stamped
    index_file.write_text(yaml.safe_dump(index, sort_keys=False), encoding="utf-8")
    evidence = tmp_path / "evidence"
    evidence.mkdir()
    _running(
        evidence,
        {
            "kubernetes-mycluster-cpu-6f7d8c9b5-x7k2p": stamped,
            "kubernetes-mycluster-cpu-6f7d8c9b5-q8w2n": offline,
        },
    )
    assert _against(evidence, deploy) == []
    # Must fire: a third ID is neither.
    _running(evidence, {"kubernetes-mycluster-cpu-6f7d8c9b5-x7k2p": "0" * 64})
    (found,) = _against(evidence, deploy)
    assert dict(found.schematics)["committed"] == stamped


def test_against_a_directory_without_an_index_is_an_input_error(tmp_path: Path) -> None:
    code, _, err = run("triage", str(BUNDLES / "ts201-lldpd-waits"), "--against", str(tmp_path))
    assert code == 1
    assert "no index.yaml" in err


# --- healthy evidence stays quiet -------------------------------------------------------------


@pytest.mark.parametrize("restarts", [0, 1])
def test_a_healthy_cluster_gets_no_finding(tmp_path: Path, restarts: int) -> None:
    nodes = [node(f"gpu-{i}-b7k2c", f"10.6.0.{i}") for i in range(3)]
    pods = [
        pod(f"p{i}-{n}", f"gpu-{n}-b7k2c", restarts, "2026-11-01T00:00:00Z", "2026-11-02T00:00:00Z")
        for n in range(3)
        for i in range(4)
    ]
    (tmp_path / "nodes.json").write_text(node_list(*nodes), encoding="utf-8")
    (tmp_path / "pods.json").write_text(node_list(*pods), encoding="utf-8")
    (tmp_path / "pci.txt").write_text(
        PCI_HEADER + "".join(pci_rows(f"10.6.0.{i}", nvidia=True) for i in range(3)), "utf-8"
    )
    (tmp_path / "svc.json").write_text(service(with_trustd=True), encoding="utf-8")
    code, out, _ = run("triage", str(tmp_path))
    assert (code, out.splitlines()[0]) == (0, "no failure recognised in the inputs")


def test_a_plugin_log_alone_does_not_prove_an_override(tmp_path: Path) -> None:
    # envvar is the device plugin's own default: without the DaemonSet, TS140 is unsure.
    source = BUNDLES / "ts140-device-plugin-env-override"
    (tmp_path / "device-plugin.log").write_bytes((source / "device-plugin.log").read_bytes())
    (diagnosis,) = triage_paths([str(tmp_path)]).diagnoses
    assert (diagnosis.code, diagnosis.severity) == ("TS140", "warning")
    assert any("DaemonSet" in item for item in diagnosis.collect)
    with_daemonset = triage_paths([str(source)]).diagnoses
    assert [(d.code, d.severity) for d in with_daemonset] == [("TS140", "error")]


def test_control_characters_in_evidence_never_reach_the_terminal(tmp_path: Path) -> None:
    lines = CONSOLE.splitlines(keepends=True)
    # A bell and a backspace inside the quoted pending line, and a title-setting escape.
    lines[9] = lines[9].replace("[talos]", "[talos]\x07\x08\x1b]0;owned\x07")
    (tmp_path / "console.log").write_text("".join(lines), encoding="utf-8")
    for fmt in ("text", "markdown"):
        _, out, _ = run("triage", "-f", fmt, str(tmp_path))
        assert not any(ord(c) < 32 and c != "\n" for c in out), fmt


def test_nvidia_services_held_on_a_gpu_with_its_module_is_unsure_not_silent(
    tmp_path: Path,
) -> None:
    (tmp_path / "gpu-a-4hx8d.console.log").write_text(CONSOLE, encoding="utf-8")
    (tmp_path / "nodes.json").write_text(node_list(node("gpu-a-4hx8d", "10.7.0.1")), "utf-8")
    (tmp_path / "pci.txt").write_text(PCI_HEADER + pci_rows("10.7.0.1", True), encoding="utf-8")
    (tmp_path / "modules.txt").write_text(
        "nvidia 11796480 2 nvidia_uvm,nvidia_modeset, Live 0xffffffffc0f6c000 (O)\n",
        encoding="utf-8",
    )
    (diagnosis,) = triage_paths([str(tmp_path)]).diagnoses
    assert (diagnosis.code, diagnosis.severity, diagnosis.nodes) == (
        "TS201",
        "warning",
        ("gpu-a-4hx8d",),
    )
    assert any("logs ext-nvidia" in item for item in diagnosis.collect)


# apid waits for its certificates in every boot's first seconds; still waiting ten minutes into
# the boot (600 s of uptime, the kernel's timestamp) it is held: both sides of the edge.
@pytest.mark.parametrize(
    ("uptime", "held"),
    [("  599.999999", False), ("  600.000000", True), ("  600.000001", True)],
)
def test_apid_waiting_ten_minutes_into_the_boot_is_held_and_not_before(
    tmp_path: Path, uptime: str, held: bool
) -> None:
    (tmp_path / "console.log").write_text(
        EARLY_APID.replace("    5.913501", uptime), encoding="utf-8"
    )
    found = codes(tmp_path)
    assert ("TS131" in found) is held
    if not held:
        assert found == {}


def test_against_an_index_whose_extensions_are_no_list_is_an_input_error(
    tmp_path: Path, committed: Path
) -> None:
    import shutil

    edited = tmp_path / "gpu"
    shutil.copytree(committed, edited)
    index = edited / "index.yaml"
    lines = index.read_text(encoding="utf-8").splitlines()
    at = lines.index("  extensions:")  # the first pool's list, replaced by a number
    end = next(i for i in range(at + 1, len(lines)) if not lines[i].startswith("  - "))
    lines[at:end] = ["  extensions: 5"]
    index.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, _, err = run("triage", str(BUNDLES / "ts201-lldpd-waits"), "--against", str(edited))
    assert code == 1
    assert "pools[0].extensions: must be a list of names, not 5" in err.replace("\n", " ")
