"""`triage --commands`: a script with nothing left to fill in and nothing left running, run as
the shell runs it — real bash, the real kubectl against a loopback API server, and a stand-in
only where a cluster's own answer is needed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
from real_tools import KUBECTL
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands
from schematic.doctor.triage import triage_paths

register_all_commands()

BASH = shutil.which("bash")


def _script(*options: str) -> str:
    result = CliRunner().invoke(app, ["triage", "--commands", *options])
    assert result.exit_code == 0, result.stderr
    return result.stdout


FULL = ("--cluster", "gpu", "--namespace", "tenant-a", "--node", "w1")


def test_no_placeholder_is_left_when_every_option_is_given() -> None:
    script = _script(*FULL)
    for placeholder in ("TALOS_VERSION", "MONITORING_NAMESPACE", "CLUSTER", "TENANT_NAMESPACE"):
        assert placeholder not in script, placeholder


def test_nothing_is_left_running_in_the_background() -> None:
    script = _script(*FULL)
    assert "port-forward" not in script
    commands = [line.split("#", 1)[0].rstrip() for line in script.splitlines()]
    assert not [c for c in commands if c.endswith("&") and not c.endswith("&&")]


@pytest.mark.skipif(BASH is None, reason="needs bash")
@pytest.mark.parametrize("options", [FULL, ()])
def test_bash_parses_the_script(options: tuple[str, ...]) -> None:
    assert BASH is not None
    checked = subprocess.run(
        [BASH, "-n"], input=_script(*options), capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stderr


def _block(script: str, first: str, last: str) -> str:
    """The lines from the first that starts with ``first`` to the last that starts with
    ``last``."""
    lines = script.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first))
    end = max(i for i in range(start, len(lines)) if lines[i].startswith(last))
    return "\n".join(lines[start : end + 1]) + "\n"


def _stand_in(folder: Path, body: str) -> Path:
    """A `kubectl` on PATH: ``body`` answers what a cluster would, the rest goes to the real
    kubectl (with the loopback server's address)."""
    folder.mkdir()
    tool = folder / "kubectl"
    tool.write_text(f"#!{BASH}\n{body}\n", encoding="utf-8")
    tool.chmod(0o755)
    return folder


@pytest.mark.skipif(BASH is None, reason="needs bash")
def test_the_talos_version_is_read_from_the_nodes_os_image(tmp_path: Path) -> None:
    assert BASH is not None
    # OS-IMAGE "Talos (v1.12.0-beta.0)": `kubectl get nodes -o wide` in siderolabs/extensions#893.
    tools = _stand_in(tmp_path / "bin", "printf 'Talos (v1.12.0-beta.0)'")
    line = _block(_script(*FULL), "talos_version=", "talos_version=")
    env = {**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"}
    ran = subprocess.run(
        [BASH, "-c", line + 'printf %s "$talos_version"'],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert ran.stdout == "v1.12.0-beta.0"


class _Prometheus(BaseHTTPRequestHandler):
    """The API server's service proxy to vmselect: records each path, answers a query_range
    matrix (the shape of Prometheus's HTTP API) for the metric asked."""

    paths: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.paths.append(self.path)
        metric = self.path.split("query=", 1)[1].split("&", 1)[0]
        answer = {
            "status": "success",
            "data": {
                "resultType": "matrix",
                "result": [
                    {
                        "metric": {"__name__": metric, "instance": "10.244.3.17:9100"},
                        "values": [[1764000000, "1763990000"], [1764000300, "1763990000"]],
                    }
                ],
            },
        }
        body = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        return


@pytest.fixture
def api_server() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Prometheus)
    _Prometheus.paths = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@KUBECTL.needed
@pytest.mark.skipif(BASH is None, reason="needs bash")
def test_metrics_go_through_the_service_proxy_with_the_real_kubectl(
    tmp_path: Path, api_server: str
) -> None:
    assert BASH is not None
    # The namespaces that serve vmselect-shortterm, as `-o jsonpath` lists them; every other
    # call is the real kubectl's, against the loopback server.
    tools = _stand_in(
        tmp_path / "bin",
        'if [ "$2" = svc ]; then printf "tenant-root\\ntenant-a\\n"; exit 0; fi\n'
        f'exec {KUBECTL.path} --server {api_server} "$@"',
    )
    # One step per metric, each a line of its own.
    block = _block(_script(*FULL), "monitoring=", "kubectl get --raw")
    work = tmp_path / "evidence"
    work.mkdir()
    env = {**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"}
    env.pop("KUBECONFIG", None)
    ran = subprocess.run(
        [BASH, "-e", "-c", block], cwd=work, capture_output=True, text=True, env=env, check=False
    )
    assert ran.returncode == 0, ran.stderr
    # The tenant's own monitoring namespace, the service's port, the metric, the window.
    assert len(_Prometheus.paths) == 3
    prefix = "/api/v1/namespaces/tenant-a/services/vmselect-shortterm:8481/proxy/"
    assert all(
        p.startswith(prefix + "select/0/prometheus/api/v1/query_range?") for p in _Prometheus.paths
    )
    assert any("query=node_boot_time_seconds&start=" in p for p in _Prometheus.paths)
    # What it wrote is evidence triage reads.
    report = triage_paths([str(work)])
    assert {Path(r.file).name for r in report.readings if r.format} == {
        "node_memory_MemAvailable_bytes.json",
        "node_memory_MemTotal_bytes.json",
        "node_boot_time_seconds.json",
    }


# Stand-ins for what the script cannot reach here: a cluster's kubectl answers (a Secret's data
# is base64), talosctl's key generation (it writes its files to the working directory, as
# talosctl gen key/csr/crt do), virtctl and talos-schematic.
_STAND_INS = {
    "kubectl": 'case "$*" in *jsonpath=*data*) printf "c2VjcmV0\\n" ;; *) echo "{}" ;; esac\n',
    "talosctl": (
        'case "$1 $2" in\n'
        '  "gen key") touch reader.key reader.pub ;;\n'
        '  "gen csr") touch reader.csr ;;\n'
        '  "gen crt") touch reader.crt ;;\n'
        '  *) if [ "$1" = --talosconfig ]; then echo context > "$2"; fi ;;\n'
        "esac\n"
    ),
    "virtctl": "echo console\n",
    "talos-schematic": "echo triaged\n",
}
_CREDENTIALS = ("kubeconfig", "talosconfig", ".key", ".crt", ".csr", ".pub")


@pytest.mark.skipif(BASH is None, reason="needs bash")
def test_the_script_writes_no_credential_under_evidence_and_says_what_it_wrote(
    tmp_path: Path,
) -> None:
    assert BASH is not None
    tools = tmp_path / "bin"
    tools.mkdir()
    for name, body in _STAND_INS.items():
        (tools / name).write_text("#!/bin/sh\n" + body)
        (tools / name).chmod(0o755)
    private = tmp_path / "tmp"
    private.mkdir()
    env = {**os.environ, "PATH": f"{tools}:{os.environ['PATH']}", "TMPDIR": str(private)}
    done = subprocess.run(
        [BASH, "-e"],
        input=_script(*FULL),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    written = sorted(p.name for p in (tmp_path / "evidence").iterdir())
    assert written and not [n for n in written if any(c in n for c in _CREDENTIALS)], written
    # The node's files in a folder named after it, as a `talosctl support` bundle holds them.
    assert "evidence/ holds" in done.stdout and "./w1/dmesg.log" in done.stdout
    assert list(private.iterdir()) == []  # the credentials' folder is gone with the script
