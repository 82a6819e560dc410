"""A loopback HTTP server that answers like a hostile or broken Image Factory.

The first path element picks the behaviour, so a factory URL ``http://127.0.0.1:PORT/<mode>``
makes every request of a client get that answer:

- ``drip-headers``: the status line, then a header a byte at a time, without end;
- ``drip-body``: headers announcing 1,000 bytes, then the body a byte at a time;
- ``huge``: a 100 MB body with its ``Content-Length``;
- ``huge-unannounced``: a body without ``Content-Length`` that does not end until the client
  hangs up (the connection's close would end it);
- ``gzip-bomb``: 100 MB of zeros gzipped to about 100 kB, with ``Content-Encoding: gzip``;
- ``redirect``: ``307`` to the same path on ``redirect_target`` (another host name);
- ``echo``: a well-behaved factory, answering a POST with the ID of the body it received (the
  baseline for timings); ``echo-gzip``, ``echo-deflate`` (zlib-wrapped), ``echo-rawdeflate``
  (sent as ``deflate``) and ``echo-br`` (labelled Brotli, sent plain) encode that answer.

Every request is recorded (method, path, Authorization header). Writing stops when the client
hangs up or after ``MAX_SERVE_SECONDS``, so no server thread outlives a test for long. Listens
on 127.0.0.1 only.
"""

from __future__ import annotations

import functools
import json
import ssl
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HUGE = 100 * 1000 * 1000
DRIP_INTERVAL = 0.05
MAX_SERVE_SECONDS = 30.0
_MIB = b"\0" * (1 << 20)


@functools.cache
def _gzip_of_zeros(size: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: gzip framing
    parts = [packer.compress(_MIB) for _ in range(size // len(_MIB))]
    parts.append(packer.flush())
    return b"".join(parts)


def _deflate(data: bytes, wbits: int) -> bytes:
    packer = zlib.compressobj(6, zlib.DEFLATED, wbits)
    return packer.compress(data) + packer.flush()


_ENCODERS: dict[str, Callable[[bytes], bytes]] = {
    "": lambda data: data,
    "gzip": lambda data: _deflate(data, 31),
    "deflate": lambda data: _deflate(data, zlib.MAX_WBITS),
    "rawdeflate": lambda data: _deflate(data, -zlib.MAX_WBITS),
    "br": lambda data: data,
}


@dataclass
class Seen:
    """Requests a server received: ``(method, path, authorization)``."""

    requests: list[tuple[str, str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Hostile(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: Seen
    redirect_target: str

    def log_message(self, format: str, *args: object) -> None:
        pass  # quiet: the tests read what the client says

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0") or "0")
        self._answer(self.rfile.read(length))

    def _answer(self, body: bytes = b"") -> None:
        with self.seen.lock:
            self.seen.requests.append(
                (self.command, self.path, self.headers.get("Authorization", ""))
            )
        mode = self.path.strip("/").split("/", 1)[0]
        started = time.monotonic()

        def in_time() -> bool:
            return time.monotonic() - started < MAX_SERVE_SECONDS

        try:
            if mode == "drip-headers":
                self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Drip: ")
                while in_time():
                    self.wfile.write(b"a")
                    self.wfile.flush()
                    time.sleep(DRIP_INTERVAL)
            elif mode == "drip-body":
                self._headers(200, {"Content-Type": "application/json", "Content-Length": "1000"})
                while in_time():
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(DRIP_INTERVAL)
            elif mode in ("huge", "huge-unannounced"):
                headers = {"Content-Type": "application/json"}
                if mode == "huge":
                    headers["Content-Length"] = str(HUGE)
                else:
                    headers["Connection"] = "close"
                self._headers(200, headers)
                sent = 0
                while sent < HUGE and in_time():
                    self.wfile.write(_MIB)
                    sent += len(_MIB)
            elif mode == "gzip-bomb":
                self._headers(
                    200,
                    {
                        "Content-Type": "application/json",
                        "Content-Encoding": "gzip",
                        "Content-Length": str(len(_gzip_of_zeros(HUGE))),
                    },
                )
                self.wfile.write(_gzip_of_zeros(HUGE))
            elif mode.startswith("echo"):
                from schematic.core.model import Schematic

                schematic = Schematic.from_yaml(body)
                answer = json.dumps({"id": schematic.id, "schematic": schematic.canonical()})
                encoding = mode.partition("-")[2]
                encoded = _ENCODERS[encoding](answer.encode())
                headers = {"Content-Type": "application/json", "Content-Length": str(len(encoded))}
                if encoding:
                    headers["Content-Encoding"] = encoding.replace("raw", "")
                self._headers(201, headers)
                self.wfile.write(encoded)
            elif mode == "redirect":
                self._headers(
                    307, {"Location": self.redirect_target + self.path, "Content-Length": "0"}
                )
            else:
                self._headers(404, {"Content-Length": "0"})
        except OSError:
            pass  # the client hung up, as it should (over TLS: an EOF error)
        self.close_connection = True

    def _headers(self, status: int, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()


@dataclass
class Server:
    url: str
    seen: Seen


@contextmanager
def hostile_factory(
    redirect_target: str = "http://localhost:9", tls: ssl.SSLContext | None = None
) -> Iterator[Server]:
    """Serve on 127.0.0.1 for the duration of the block (over TLS with ``tls``)."""
    seen = Seen()
    handler = type(
        "Handler",
        (_Hostile,),
        {"seen": seen, "redirect_target": redirect_target},
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    # A short poll: shutdown() waits for the loop to look, 0.5 s by default.
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        scheme = "https" if tls is not None else "http"
        yield Server(f"{scheme}://127.0.0.1:{server.server_address[1]}", seen)
    finally:
        server.shutdown()
        server.server_close()
