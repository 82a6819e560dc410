"""`triage --collect DIR`: the steps run unattended with the real kubectl against a loopback API
server (tests/kube_fake.py) and a stand-in talosctl that replays recorded output, then DIR
triaged as `triage DIR` would.

The recordings are those of tests/data/triage (their sources in each folder's SOURCES.md):
``ts101-talos114-dmesg`` (talosctl dmesg, services, get pcidevices and machinestatus of a node
without a GPU running the NVIDIA extensions: TS101) and ``healthy-gpu-worker-l40s`` with the
modules of ``healthy-support-bundle-l40s`` (a working L40S worker). The management cluster's
Service is ``class1-trustd-listed-apid-x509/kamaji-service.json``; the tenant's Node that of
``healthy-support-bundle-l40s/support/kubernetesResources/nodes.yaml``.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from shlex import quote
from typing import Any

import pytest
import yaml
from kube_fake import FakeServer, fake_api_server
from real_tools import KUBECTL
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands
from schematic.doctor.triage import triage_paths
from schematic.doctor.triage.collect import collect
from schematic.doctor.triage.steps import STEPS, Reach, Target

register_all_commands()

BASH = shutil.which("bash")
DATA = Path(__file__).parent / "data" / "triage"
pytestmark = [KUBECTL.needed, pytest.mark.skipif(BASH is None, reason="needs bash")]

# The tenant cluster of the recorded control-plane Service (`kubernetes-tenant-c` in tenant-c).
CLUSTER, NAMESPACE = "tenant-c", "tenant-c"
# The tenant kubeconfig's token and the Talos CA's key: credentials that must never reach DIR.
TENANT_TOKEN = "tenant-admin-token-7f3c9a1e5b2d4c6e8a0b"
CA_KEY_LINE = "MHcCAQEEIBx1c9XqO4m2v8Fh3kTz6Lw0pQn5Rj7Ys2Ea9Gd1Uc4VoAoGCCqGSM49"
# A log line that carries a bearer token (the line is the test's own: what matters is that the
# token never reaches the disk).
LOG_TOKEN = "eyJhbGciOiJSUzI1NiIsImtpZCI6InRlc3QifQ.payload.signature"


def _list(kind: str, items: list[Any], api_version: str = "v1") -> dict[str, Any]:
    return {"kind": f"{kind}List", "apiVersion": api_version, "metadata": {}, "items": items}


def _secret(name: str, data: dict[str, str]) -> dict[str, Any]:
    encoded = {key: base64.b64encode(value.encode()).decode() for key, value in data.items()}
    return {
        "kind": "Secret",
        "apiVersion": "v1",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "type": "Opaque",
        "data": encoded,
    }


# The VM of the failing node and its virt-launcher pod, with the guest-console-log container of
# a node group with logSerialConsole (kubevirt/kubevirt `staging/src/kubevirt.io/api/core/v1/
# types.go`: `status.interfaces[].ipAddress`; the pod's `kubevirt.io/domain` label as in the
# virt-launcher pod of akaliwod/ocp-virtualization `doc/ocp-kubevirt-cat8kv-basic/OcPod.md`).
# Its console is the recorded one of ts101-nvidia-image-cpu-worker.
TS101_VM = DATA / "ts101-nvidia-image-cpu-worker"
_VM = "kubernetes-tenant-c-md0-4hx2p"
_VMI = {
    "apiVersion": "kubevirt.io/v1",
    "kind": "VirtualMachineInstance",
    "metadata": {"name": _VM, "namespace": NAMESPACE},
    "status": {
        "phase": "Running",
        "interfaces": [{"name": "default", "ipAddress": "172.16.20.31"}],
    },
}
_LAUNCHER_NAME = f"virt-launcher-{_VM}-8dzl7"
_LAUNCHER: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": _LAUNCHER_NAME,
        "namespace": NAMESPACE,
        "labels": {"kubevirt.io": "virt-launcher", "kubevirt.io/domain": _VM},
    },
    "spec": {"containers": [{"name": "compute"}, {"name": "guest-console-log"}]},
    "status": {"phase": "Running"},
}


def _serve(server: FakeServer) -> None:
    """What the two clusters answer (one server plays both): the management cluster's Service
    and the tenant's Secrets, the tenant's Node; every other list empty."""
    tenant = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "tenant", "cluster": {"server": server.url}}],
        "users": [{"name": "admin", "user": {"token": TENANT_TOKEN}}],
        "contexts": [{"name": "admin", "context": {"cluster": "tenant", "user": "admin"}}],
        "current-context": "admin",
    }
    ca_key = f"-----BEGIN EC PRIVATE KEY-----\n{CA_KEY_LINE}\n-----END EC PRIVATE KEY-----\n"
    ca_crt = "-----BEGIN CERTIFICATE-----\nMIIBPzCB8qADAgECAhEA\n-----END CERTIFICATE-----\n"
    nodes = yaml.safe_load(
        (DATA / "healthy-support-bundle-l40s/support/kubernetesResources/nodes.yaml").read_text()
    )
    service = json.loads((DATA / "class1-trustd-listed-apid-x509/kamaji-service.json").read_text())
    namespaced = f"/api/v1/namespaces/{NAMESPACE}"
    server.put(_LAUNCHER)
    server.objects.update(
        {
            f"{namespaced}/secrets/kubernetes-{CLUSTER}-admin-kubeconfig": _secret(
                f"kubernetes-{CLUSTER}-admin-kubeconfig", {"admin.conf": yaml.safe_dump(tenant)}
            ),
            f"{namespaced}/secrets/kubernetes-{CLUSTER}-talos-ca": _secret(
                f"kubernetes-{CLUSTER}-talos-ca", {"tls.crt": ca_crt, "tls.key": ca_key}
            ),
            f"{namespaced}/services": _list("Service", [service]),
            f"{namespaced}/events": _list("Event", []),
            "/api/v1/nodes": _list("Node", nodes["items"]),
            "/api/v1/pods": _list("Pod", []),
            "/api/v1/events": _list("Event", []),
            "/api/v1/services": _list("Service", []),
            "/apis/apps/v1/daemonsets": _list("DaemonSet", [], "apps/v1"),
            f"/apis/kubevirt.io/v1/namespaces/{NAMESPACE}/virtualmachineinstances": _list(
                "VirtualMachineInstance", [_VMI], "kubevirt.io/v1"
            ),
            f"{namespaced}/pods/{_LAUNCHER_NAME}/log": (
                TS101_VM / "tenant-a-cpu-7c9xv.console.log"
            ).read_text(),
        }
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeServer]:
    with fake_api_server() as fake, pytest.MonkeyPatch.context() as patch:
        _serve(fake)
        # One HOME for every kubectl of the module: discovery is asked once, then cached.
        patch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
        yield fake


def _talosctl(folder: Path, answers: dict[str, str], log: Path) -> None:
    """A `talosctl` on PATH: ``gen`` and ``config add`` write their files as talosctl does
    (siderolabs/talos ``cmd/talosctl/cmd/mgmt/gen/{key,csr,crt}.go`` into the working folder,
    ``config add`` into ``--talosconfig``); a read answers with its shell command from
    ``answers``; anything else fails. Each call is logged with its working folder."""
    cases = "".join(f"  {quote(args)}) {command} ;;\n" for args, command in answers.items())
    script = (
        f"#!{BASH}\n"
        f'echo "$PWD $*" >> {quote(str(log))}\n'
        "config=\n"
        'while :; do case "$1" in --talosconfig) config=$2; shift 2 ;; -e|-n) shift 2 ;;'
        " *) break ;; esac; done\n"
        'case "$*" in\n'
        '  "gen key --name reader") : > reader.key; : > reader.pub ;;\n'
        '  "gen csr "*) : > reader.csr ;;\n'
        '  "gen crt "*) : > reader.crt ;;\n'
        '  "config add "*) printf "context: %s\\n" "$3" > "$config" ;;\n'
        f"{cases}"
        '  *) echo "no recording for: $*" >&2; exit 1 ;;\n'
        "esac\n"
    )
    folder.mkdir(exist_ok=True)
    (folder / "talosctl").write_text(script)
    (folder / "talosctl").chmod(0o755)


def _replay(path: Path) -> str:
    return f"exec cat {quote(str(path))}"


@dataclass
class Collected:
    code: int
    stdout: str
    stderr: str
    folder: Path
    calls: list[str]


def _collect(
    tmp: Path, server: FakeServer, node: str, answers: dict[str, str], *extra: str
) -> Collected:
    tools = tmp / "bin"
    tools.mkdir()
    assert KUBECTL.path is not None
    (tools / "kubectl").symlink_to(KUBECTL.path)
    log = tmp / "talosctl.log"
    _talosctl(tools, answers, log)
    folder = tmp / "evidence"
    server.kubeconfig(tmp)
    # Both paths relative to where the command runs, as a user types them.
    args = [
        *("triage", "--collect", "evidence", "--cluster", CLUSTER, "--namespace", NAMESPACE),
        *("--node", node, "--kubeconfig", "kubeconfig", *extra),
    ]
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp)
        patch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
        patch.delenv("KUBECONFIG", raising=False)
        result = CliRunner().invoke(app, args)
    calls = log.read_text().splitlines() if log.exists() else []
    return Collected(result.exit_code, result.stdout, result.stderr, folder, calls)


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


TS101 = DATA / "ts101-talos114-dmesg"


@pytest.fixture(scope="module")
def failing(server: FakeServer, tmp_path_factory: pytest.TempPathFactory) -> Collected:
    node = "172.16.20.31"
    answers = {
        "dmesg": _replay(TS101 / "dmesg.txt"),
        "services": _replay(TS101 / "services.txt"),
        "get pcidevices -o yaml": _replay(TS101 / "pcidevices.yaml"),
        "get machinestatus -o yaml": _replay(TS101 / "machinestatus.yaml"),
        "logs ext-nvidia-persistenced": (
            f"echo '{node}: 2026/11/22 03:10:11 GET /v2/ Authorization: Bearer {LOG_TOKEN}'"
        ),
        # A failure whose message holds the tenant's token as it is.
        "get extensions -o yaml": f"echo 'refused {TENANT_TOKEN}' >&2; exit 1",
    }
    return _collect(tmp_path_factory.mktemp("failing"), server, node, answers)


def test_a_collection_that_finds_a_known_failure_exits_3_and_names_it(failing: Collected) -> None:
    assert failing.code == 3, failing.stderr
    report = json.loads(
        CliRunner().invoke(app, ["triage", "-f", "json", str(failing.folder)]).stdout
    )
    assert {d["code"] for d in report["diagnoses"] if d["severity"] == "error"} == {"TS101"}
    assert "TS101" in failing.stdout and "172.16.20.31" in failing.stdout
    # The node's files in its folder, in the support bundle's layout.
    written = _files(failing.folder)
    assert "172.16.20.31/dmesg.log" in written
    assert "172.16.20.31/resources/pcidevices.yaml" in written
    # The serial console of the node's VM, from its virt-launcher pod's guest-console-log.
    console = failing.folder / "172.16.20.31/172.16.20.31.console.log"
    assert console.read_text() == (TS101_VM / "tenant-a-cpu-7c9xv.console.log").read_text()
    assert "nodes.json" in written and "services.yaml" in written, failing.stderr


def test_each_step_is_said_as_it_starts_and_the_end_says_what_failed_and_what_is_by_hand(
    failing: Collected,
) -> None:
    unattended = [s for s in STEPS if s.unattended]
    started = [line for line in failing.stderr.splitlines() if f"/{len(STEPS)}] " in line]
    assert len(started) == len(STEPS)
    assert f"collected {len(_files(failing.folder))} files" in failing.stderr
    # A step that failed names its command and its reason; the run went on past it.
    assert "failed: talosctl" in failing.stderr and "get extensions -o yaml" in failing.stderr
    assert "no recording for: logs ext-nvidia-fabricmanager" in failing.stderr
    # The console attach and nvidia-smi are listed with their exact command, never run.
    by_hand = failing.stderr.split("collect by hand", 1)[1]
    assert (
        f"virtctl -n {NAMESPACE} console {_VM} > 172.16.20.31/172.16.20.31.console.log" in by_hand
    )
    assert "chroot /host /usr/local/bin/nvidia-smi -q > 172.16.20.31/nvidia-smi-q.txt" in by_hand
    assert len(unattended) < len(STEPS)
    assert not [c for c in failing.calls if "virtctl" in c or "nvidia-smi" in c]


def test_no_secret_reaches_the_disk_or_the_report(failing: Collected) -> None:
    for path in failing.folder.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            for secret in (TENANT_TOKEN, CA_KEY_LINE, LOG_TOKEN, "PRIVATE KEY"):
                assert secret not in text, (path, secret)
    log = (failing.folder / "172.16.20.31/service-logs/ext-nvidia-persistenced.log").read_text()
    assert "Authorization: ***" in log  # the line is kept, its credential hidden
    for shown in (failing.stdout, failing.stderr):
        assert TENANT_TOKEN not in shown and LOG_TOKEN not in shown
    assert "refused ***" in failing.stderr


def test_credentials_stay_outside_dir_and_are_removed(failing: Collected) -> None:
    names = [p.name for p in failing.folder.rglob("*")]
    assert not [n for n in names if "kubeconfig" in n or "talosconfig" in n or ".key" in n]
    # talosctl ran in the private folder, with the reader's talosconfig from there.
    folders = {call.split(" ", 1)[0] for call in failing.calls}
    assert len(folders) == 1
    private = Path(folders.pop())
    assert not private.is_relative_to(failing.folder)
    assert (
        f"--talosconfig {private}/talosconfig -e 172.16.20.31 -n 172.16.20.31 dmesg"
        in "\n".join(failing.calls)
    )
    assert not private.exists()


def test_a_healthy_collection_exits_0(server: FakeServer, tmp_path: Path) -> None:
    l40s = DATA / "healthy-gpu-worker-l40s"
    modules = "healthy-support-bundle-l40s/support/10.244.9.52/resources"
    answers = {
        "services": _replay(l40s / "services.txt"),
        "get pcidevices -o yaml": _replay(l40s / "pcidevices.yaml"),
        "get modules -o yaml": _replay(
            DATA / modules / "LoadedKernelModules.runtime.talos.dev.yaml"
        ),
    }
    done = _collect(tmp_path, server, "10.244.9.52", answers)
    assert done.code == 0, done.stderr
    assert "error" not in done.stdout.lower()
    assert (done.folder / "10.244.9.52/resources/modules.yaml").is_file()
    # What the real kubectl wrote is read as evidence, as the replayed talosctl output is.
    read = {
        str(Path(r.file).relative_to(done.folder))
        for r in triage_paths([str(done.folder)]).readings
        if r.format
    }
    assert {"nodes.json", "services.yaml", "10.244.9.52/services.txt"} <= read


def _failing_tools(folder: Path, talosctl_dmesg: str = "exit 1") -> None:
    """A kubectl that fails at once and a talosctl that does ``talosctl_dmesg`` for dmesg and
    fails every other call."""
    folder.mkdir()
    (folder / "kubectl").write_text(f"#!{BASH}\necho 'connection refused' >&2\nexit 1\n")
    (folder / "talosctl").write_text(
        f'#!{BASH}\nfor last; do :; done\nif [ "$last" = dmesg ]; then {talosctl_dmesg}; fi\n'
        "echo 'connection refused' >&2\nexit 1\n"
    )
    for tool in ("kubectl", "talosctl"):
        (folder / tool).chmod(0o755)


def _run_with(tools: Path, *args: str) -> tuple[int, str, str]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
        result = CliRunner().invoke(app, ["triage", *args])
    # A usage error comes in a box whose lines may break a message: read it as one line.
    return result.exit_code, result.stdout, " ".join(re.sub("[│╭╮╰╯─]", " ", result.stderr).split())


def _collect_args(folder: Path, *extra: str) -> list[str]:
    return ["--collect", str(folder), "--cluster", CLUSTER, "--namespace", NAMESPACE, *extra]


@pytest.mark.parametrize("node", [("--node", "w1"), ()])
def test_every_step_failing_exits_4_and_leaves_no_folder(
    tmp_path: Path, node: tuple[str, ...]
) -> None:
    _failing_tools(tmp_path / "bin")
    folder = tmp_path / "evidence"
    code, out, err = _run_with(tmp_path / "bin", *_collect_args(folder, *node))
    assert code == 4, err
    assert "nothing was collected" in err and "nothing could be judged" in err
    assert "connection refused" in err
    assert out == ""
    assert not folder.exists()
    # Without a node its own files are said once, not as commands that cannot be run.
    said = "the node's own files" in err and "give --node" in err
    assert said == (not node)
    # The node's steps wait on the talosconfig the failed CA steps did not make.
    assert ("dmesg > w1/dmesg.log: no talosconfig" in err) == bool(node)


def test_a_step_that_hangs_is_cut_by_its_time_limit(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    _failing_tools(tmp_path / "bin", f"echo $$ > {quote(str(pid_file))}; exec sleep 60")
    talosconfig = tmp_path / "talosconfig"
    talosconfig.write_text("context: mine\n")
    folder = tmp_path / "evidence"
    args = _collect_args(folder, "--node", "w1", "--talosconfig", str(talosconfig))
    started = time.monotonic()
    code, _, err = _run_with(tmp_path / "bin", *args, "--timeout", "0.5")
    assert time.monotonic() - started < 15
    assert code == 4
    assert "dmesg > w1/dmesg.log: no answer within 0.5 s" in err
    # The node did not answer: the node's other steps are not left to wait as long each.
    assert err.count("no answer within") == 2  # as it happened, and in the summary
    assert "services > w1/services.txt: not run: dmesg got no answer in its time limit" in err
    # The stand-in's sleep went with it: the whole process group was ended.
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    # The user's talosconfig was used as given; no reader certificate was made.
    assert f"--talosconfig {talosconfig} -n w1 dmesg" in err
    assert "skipped (--talosconfig given): talosctl gen key --name reader" in err


def test_a_folder_that_is_not_empty_is_refused_untouched(tmp_path: Path) -> None:
    _failing_tools(tmp_path / "bin")
    folder = tmp_path / "evidence"
    folder.mkdir()
    kept = folder / "notes.txt"
    kept.write_text("mine\n")
    before = kept.stat()
    code, _, err = _run_with(tmp_path / "bin", *_collect_args(folder))
    assert code == 2
    assert "is not empty" in err and "--collect" in err
    assert [p.name for p in folder.iterdir()] == ["notes.txt"]
    assert kept.read_text() == "mine\n" and kept.stat().st_mtime_ns == before.st_mtime_ns


_GIVEN = ("--collect", "d", "--cluster", "gpu", "--namespace", "a")


@pytest.mark.parametrize(
    ("args", "option", "says"),
    [
        (("--collect", "d", "--namespace", "tenant-a"), "--cluster", "needs --cluster"),
        (("--collect", "d", "--cluster", "gpu"), "--namespace", "needs --namespace"),
        (("--collect", "d", "--cluster", "gpu", "--namespace", "Tenant_A"), "--namespace", "RFC"),
        ((*_GIVEN, "--node", "w 1"), "--node", "IP address"),
        ((*_GIVEN, "--timeout", "0"), "--timeout", "above 0"),
        ((*_GIVEN, "--timeout", "nan"), "--timeout", "above 0"),
        ((*_GIVEN, "--kubeconfig", "nope"), "--kubeconfig", "not a file"),
        ((*_GIVEN, "--talosconfig", "nope"), "--talosconfig", "not a file"),
        ((*_GIVEN, "other"), "PATH", "either"),
        (("--commands", *_GIVEN), "--collect", "either --commands"),
        (("--timeout", "5", "d"), "--timeout", "only with --collect"),
        (("--talosconfig", "t", "d"), "--talosconfig", "only with --collect"),
    ],
)
def test_bad_collect_options_are_named(
    tmp_path: Path, args: tuple[str, ...], option: str, says: str
) -> None:
    _failing_tools(tmp_path / "bin")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path)
        code, _, err = _run_with(tmp_path / "bin", *args)
    assert code == 2
    assert option in err and says in err
    assert not (tmp_path / "d").exists()


def test_every_evidence_file_is_written_by_one_step_only() -> None:
    kept = [s.output for s in STEPS if s.unattended and s.output and not s.sets]
    assert len(kept) == len(set(kept))
    # Credentials go only to the private folder; nothing else does.
    assert all(
        s.output.startswith("<creds>/") == s.decode for s in STEPS if s.reach is not Reach.HOST
    )


def test_an_interrupt_still_removes_the_credentials(tmp_path: Path) -> None:
    """Ctrl-C in the middle of the collection: the private folder goes all the same."""
    _failing_tools(tmp_path / "bin")
    made: list[Path] = []

    def interrupt(line: str) -> None:
        made.extend(tmp_path.glob("talos-schematic-creds-*"))
        if " dmesg" in line:
            raise KeyboardInterrupt

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
        patch.setattr(tempfile, "tempdir", str(tmp_path))
        with pytest.raises(KeyboardInterrupt):
            collect(
                tmp_path / "evidence",
                Target(cluster=CLUSTER, namespace=NAMESPACE, node="w1"),
                talosconfig=tmp_path / "bin" / "kubectl",
                progress=interrupt,
            )
    assert made and not [p for p in made if p.exists()]
