"""A local Image Factory on 127.0.0.1 that answers the release API as the real one does.

Shapes read at siderolabs/image-factory ``internal/frontend/http/meta.go`` (commit 26b95cac):
``GET /versions`` is a JSON list of ``"vX.Y.Z"`` without the broken releases;
``GET /versions?broken=true`` the broken ones (an ``old=True`` factory, before v1.3.3, ignores
the query and answers the whole list); ``GET /version/<v>/extensions/official`` a JSON list of
``{name, ref, digest, author, description}`` with ``name`` the image's repository; 404 with a
text body for a release it does not know.

Extension references follow the tags of the real listing in siderolabs/talos
``internal/integration/cli/image.go`` at a940e45a (the v1.11.2 bundle): kernel modules
``<driver>-<Talos release>``, the container toolkit ``<driver>-<toolkit version>``, other
extensions their own version. The driver numbers given for releases after v1.14.0 are test
values (no source readable here has them); the digests are the SHA-256 of the reference.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REGISTRY = "ghcr.io/siderolabs"


def extension(name: str, tag: str) -> dict[str, str]:
    ref = f"{REGISTRY}/{name}:{tag}"
    return {
        "name": f"siderolabs/{name}",
        "ref": ref,
        "digest": "sha256:" + hashlib.sha256(ref.encode()).hexdigest(),
        "author": "Sidero Labs",
        "description": f"{name} extension",
    }


def release_extensions(
    talos: str, lts: str, production: str, toolkit: str, extra: Sequence[dict[str, str]] = ()
) -> list[dict[str, str]]:
    """A tiered release's listing: the NVIDIA families of both tiers and a guest agent."""
    listing = [extension("qemu-guest-agent", "10.0.2")]
    for tier, driver in (("lts", lts), ("production", production)):
        listing += [
            extension(f"nvidia-open-gpu-kernel-modules-{tier}", f"{driver}-{talos}"),
            extension(f"nonfree-kmod-nvidia-{tier}", f"{driver}-{talos}"),
            extension(f"nvidia-container-toolkit-{tier}", f"{driver}-{toolkit}"),
            extension(f"nvidia-fabricmanager-{tier}", driver),
        ]
    return [*listing, *extra]


@dataclass
class FactoryState:
    """What the factory serves; tests change it between runs."""

    releases: dict[str, list[dict[str, str]]]
    broken: list[str] = field(default_factory=list)
    old: bool = False
    requests: list[str] = field(default_factory=list)


def _handler(state: FactoryState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            state.requests.append(self.path)
            served = [v for v in state.releases if v not in state.broken]
            if self.path == "/versions":
                self._json(served)
            elif self.path == "/versions?broken=true":
                self._json(list(state.releases) if state.old else state.broken)
            elif self.path.startswith("/version/") and self.path.endswith("/extensions/official"):
                version = self.path.split("/")[2]
                if version in state.releases:
                    self._json(state.releases[version])
                else:
                    self._text(404, "version not found")
            else:
                self._text(404, "404 page not found")

        def _json(self, value: object) -> None:
            body = (json.dumps(value) + "\n").encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _text(self, status: int, text: str) -> None:
            body = text.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


@contextmanager
def release_factory(state: FactoryState) -> Iterator[str]:
    """Serve ``state`` on a free loopback port; yields the base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def standard_releases() -> Mapping[str, list[dict[str, str]]]:
    """v1.14.0 as the shipped table has it, v1.14.1 withdrawn by the tests that say so,
    v1.14.2 and v1.15.0 with drivers the shipped table lacks."""
    return {
        "v1.14.0": release_extensions("v1.14.0", "580.178.04", "595.91.07", "v1.19.1"),
        "v1.14.1": release_extensions("v1.14.1", "580.178.04", "595.91.07", "v1.19.1"),
        "v1.14.2": release_extensions("v1.14.2", "580.190.03", "595.99.01", "v1.19.2"),
        "v1.15.0": release_extensions("v1.15.0", "580.190.03", "600.41.02", "v1.20.0"),
    }
