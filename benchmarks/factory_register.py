"""Register 50 distinct schematics with a local factory that answers after 200 ms.

Sequential POSTs would take about 10 s; with the client's bounded concurrency (8 in flight) it
must stay under 3 s. Prints the elapsed seconds and the requests the server saw; exits 1 when
the budget is missed. The server listens on 127.0.0.1 only and shuts itself down.

    .venv/bin/python benchmarks/factory_register.py
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from schematic.core.model import Schematic
from schematic.factory.client import FactoryClient, register_schematics

SCHEMATICS = 50
LATENCY = 0.2
BUDGET = 3.0
# However the client behaves, the server does not outlive this.
SERVER_LIFETIME = 30.0


class SlowFactory(BaseHTTPRequestHandler):
    """POST /schematics: wait, then answer the ID of the body's canonical form."""

    requests_seen = 0
    lock = threading.Lock()

    def do_POST(self) -> None:
        with SlowFactory.lock:
            SlowFactory.requests_seen += 1
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        time.sleep(LATENCY)
        if self.path != "/schematics":
            self._answer(404, b"not found", "text/plain")
            return
        schematic = Schematic.from_yaml(body)
        payload = {"id": schematic.id, "schematic": schematic.canonical()}
        self._answer(201, json.dumps(payload).encode(), "application/json")

    def _answer(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def main() -> int:
    # The client honours proxy variables; a proxy must not stand between it and loopback.
    for name in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ):
        os.environ.pop(name, None)
    server = ThreadingHTTPServer(("127.0.0.1", 0), SlowFactory)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    watchdog = threading.Timer(SERVER_LIFETIME, server.shutdown)
    watchdog.daemon = True
    watchdog.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    items = [
        (
            f"pool bench-{n}",
            Schematic.from_yaml(f"customization:\n  extraKernelArgs:\n    - bench.n={n}\n"),
        )
        for n in range(SCHEMATICS)
    ]
    try:
        with FactoryClient(url, environ={}) as client:
            started = time.perf_counter()
            registrations = register_schematics(client, items)
            elapsed = time.perf_counter() - started
    finally:
        watchdog.cancel()
        server.shutdown()
        server.server_close()
    distinct = len({r.id for r in registrations.values()})
    print(
        f"factory_register: {distinct} distinct schematics, {SlowFactory.requests_seen} requests, "
        f"{LATENCY * 1000:.0f} ms latency each: {elapsed:.2f} s (budget {BUDGET:.0f} s, "
        f"sequential ~{SCHEMATICS * LATENCY:.0f} s)"
    )
    ok = elapsed < BUDGET and distinct == SCHEMATICS and SlowFactory.requests_seen == SCHEMATICS
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
