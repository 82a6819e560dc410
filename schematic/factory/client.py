"""Image Factory HTTP client: the only module of talos-schematic that touches the network.

Which factory: ``--factory URL``, else ``$TALOS_SCHEMATIC_FACTORY``, else the cluster file's
``talos.imageFactoryURL``, else ``https://factory.talos.dev``
(see :mod:`schematic.inputs.factory_url`).
Any self-hosted factory works, also under a path prefix (``https://host/factory``). The on-disk
cache of extension lists, the name check and the lock file built from them live in
:mod:`schematic.factory.cache`, :mod:`schematic.factory.names` and
:mod:`schematic.factory.lock`; this module only talks to the factory.

Credentials are optional and come only from the environment; they are sent as an
``Authorization`` header and never printed, logged or written to a cache:

    TALOS_SCHEMATIC_FACTORY_TOKEN   bearer token (wins when both are set)
    TALOS_SCHEMATIC_FACTORY_AUTH    ``user:password`` for HTTP basic auth

``user:password@`` in the URL is accepted as basic auth too and is stripped from the URL shown
in messages.

Every request carries ``User-Agent: talos-schematic/<version>``, has connect and read timeouts,
and is retried with exponential backoff and full jitter on connection errors, timeouts,
500/502/503/504 and 429 (honouring ``Retry-After``; a wait longer than the policy allows ends
the retries at once); other 4xx are final. At most
``max_in_flight`` requests (default 8) are open at once. Every failure is a
:class:`~schematic.errors.FactoryError` whose message names the factory URL and the pool or file.

A hostile or broken server cannot hold a run or its memory:

- an answer's body is read at most ``max_response_size`` bytes far (16 MiB; factory answers are
  kilobytes), counted after decompression, which is done here 64 KiB at a time (gzip and
  deflate, the encodings asked for), so a 100 MB answer or a gzip bomb is one error;
- a request, retries and their waits included, ends after ``max_request_time`` seconds
  (120 s): the read timeout bounds each silent gap, this bounds a server that drips a byte a
  second. A watchdog shuts the connection's socket at the deadline, whether the server is
  dripping headers or body;
- redirects are never followed, whatever the HTTP client was built with: a redirect is an error
  showing where it points, so credentials are never sent to another host (nor a POST turned
  into a GET); pass the new URL if it is the factory.
"""

from __future__ import annotations

import base64
import contextlib
import difflib
import email.utils
import hashlib
import itertools
import json
import math
import os
import random
import re
import socket
import threading
import time
import urllib.parse
import zlib
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Literal, Protocol, TypeVar

import httpx
import pydantic

from schematic import __version__
from schematic.core.stamped import owner_added
from schematic.errors import CatalogError, FactoryError, SchematicError, printable
from schematic.inputs.factory_url import (
    DEFAULT_FACTORY_URL,
    FACTORY_ENV,
    resolve_factory_url,
    split_factory_url,
    without_userinfo,
)
from schematic.redact import redacted
from schematic.safe_yaml import INPUT_LIMITS, InputKind, format_size

__all__ = [
    "AUTH_ENV",
    "DEFAULT_FACTORY_URL",
    "DEFAULT_MAX_REQUEST_TIME",
    "DEFAULT_MAX_RESPONSE_SIZE",
    "DEFAULT_RETRY",
    "FACTORY_ENV",
    "TOKEN_ENV",
    "ExtensionInfo",
    "FactoryClient",
    "OverlayInfo",
    "Registration",
    "RetryPolicy",
    "SchematicBody",
    "VerifyResult",
    "register_schematics",
    "resolve_factory_url",
    "verify_ids",
]

TOKEN_ENV = "TALOS_SCHEMATIC_FACTORY_TOKEN"
AUTH_ENV = "TALOS_SCHEMATIC_FACTORY_AUTH"

# Factory API answers are small and quick; a stalled proxy should fail a CI job in about a minute.
DEFAULT_TIMEOUT = httpx.Timeout(15.0, connect=5.0)
DEFAULT_MAX_IN_FLIGHT = 8
# Each answer's limit is its kind's (schematic.safe_yaml.BUDGETS): an extension, overlay or
# version list (tens of kilobytes) far below the general one, as each element becomes a model.
DEFAULT_MAX_RESPONSE_SIZE = INPUT_LIMITS[InputKind.FACTORY_ANSWER]
MAX_LIST_RESPONSE_SIZE = INPUT_LIMITS[InputKind.FACTORY_LIST]
# Above the worst honest case of the defaults: four attempts each stalling to the read timeout,
# with their backoff.
DEFAULT_MAX_REQUEST_TIME = 120.0

# 500 too: POST /schematics is content-addressed, so repeating it is always safe.
_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_ID = re.compile(r"[0-9a-f]{64}")
_TALOS_VERSION = re.compile(r"v\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?")
_SNIPPET = 300
# One changed line of a schematic body, as shown in a message.
_LINE_SNIPPET = 80
# What a bearer token may hold to be sent as a header value: visible ASCII, no spaces.
_TOKEN_CHARS = re.compile(r"[\x21-\x7e]+")
_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")
# What httpx reads from the environment when it builds a client (trust_env).
_CONNECTION_ENV = (
    *(
        name
        for base in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY")
        for name in (base, base.lower())
    ),
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
)


class SchematicBody(Protocol):
    """What the client needs of a schematic: :class:`schematic.core.model.Schematic` fits."""

    @property
    def id(self) -> str: ...

    def canonical(self) -> str: ...


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a request is repeated after a transient failure."""

    attempts: int = 4
    backoff: float = 0.5
    max_backoff: float = 8.0
    max_retry_after: float = 10.0

    def delay(self, attempt: int, jitter: float) -> float:
        """Full-jitter backoff before attempt ``attempt + 1``; ``jitter`` is in [0, 1)."""
        return jitter * min(self.max_backoff, self.backoff * 2.0 ** (attempt - 1))


DEFAULT_RETRY = RetryPolicy()


class Registration(pydantic.BaseModel):
    """A schematic the factory now holds; ``id`` is the one generated values must point to."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    id: str
    offline_id: str
    canonical: str
    subjects: tuple[str, ...]
    notice: str = ""

    @property
    def factory_changed_body(self) -> bool:
        """The factory stores another body than the one sent (e.g. it stamped ``owner``)."""
        return self.id != self.offline_id


class ExtensionInfo(pydantic.BaseModel):
    """One entry of ``GET /version/{v}/extensions/official``."""

    # Ignore fields a newer factory may add: this is a server answer, not user input.
    model_config = pydantic.ConfigDict(frozen=True, extra="ignore")

    name: str
    ref: str
    digest: str
    author: str = ""
    description: str = ""


class OverlayInfo(pydantic.BaseModel):
    """One entry of ``GET /version/{v}/overlays/official``."""

    model_config = pydantic.ConfigDict(frozen=True, extra="ignore")

    name: str
    image: str
    ref: str = ""
    digest: str = ""


class VerifyResult(pydantic.BaseModel):
    """Whether the factory holds schematic ``id`` for ``subject``, and with which body."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    subject: str
    id: str
    status: Literal["present", "missing", "different"]
    detail: str = ""


_EXTENSION_LIST = pydantic.TypeAdapter(list[ExtensionInfo])
_OVERLAY_LIST = pydantic.TypeAdapter(list[OverlayInfo])
_T = TypeVar("_T")
_V = TypeVar("_V")


def _one_line(text: str, secrets: Collection[str], limit: int = _SNIPPET) -> str:
    """A server's text on one line of at most ``limit`` characters, its secrets hidden.

    Secrets are hidden before the text is cut (cut first, a secret straddling the cut would no
    longer match and its first half would be shown), and a cut that ends in the first
    characters of a secret loses them too."""
    flat = " ".join(redacted(text, secrets).split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    for secret in filter(None, secrets):
        for length in range(min(len(secret) - 1, len(cut)), 0, -1):
            if cut.endswith(secret[:length]):
                cut = cut[:-length]
                break
    return cut + "…"


def _is_html(response: httpx.Response) -> bool:
    ctype = response.headers.get("content-type", "").lower()
    head = response.text.lstrip()[:100].lower()
    return "html" in ctype or head.startswith(("<!doctype html", "<html"))


def _attempts(count: int) -> str:
    return f"{count} attempt" + ("s" if count != 1 else "")


def _status_text(response: httpx.Response) -> str:
    phrase = response.reason_phrase
    return f"HTTP {response.status_code}" + (f" {phrase}" if phrase else "")


def _describe_transport_error(exc: httpx.TransportError) -> str:
    text = str(exc)
    low = text.lower()
    if isinstance(exc, httpx.ConnectTimeout):
        return "connection timed out"
    if isinstance(exc, httpx.ReadTimeout):
        return "no answer before the read timeout"
    if isinstance(exc, httpx.TimeoutException):
        return "timed out"
    if any(
        sign in low
        for sign in (
            "name or service not known",
            "nodename nor servname",
            "getaddrinfo",
            "name resolution",
            "no address associated",
        )
    ):
        return f"cannot resolve the host name ({text})"
    if "connection refused" in low or "connect call failed" in low:
        return "connection refused"
    if isinstance(exc, httpx.RemoteProtocolError):
        return f"the connection broke mid-answer ({text or 'server disconnected'})"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _retry_after(value: str | None) -> float | None:
    """Seconds asked for by a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def _decode(text: str) -> SchematicBody | None:
    from schematic.core.model import Schematic

    try:
        return Schematic.from_yaml(text, source="factory answer")
    except SchematicError:
        return None


def _same_body(stored: str, expected: str) -> bool:
    if stored == expected:
        return True
    decoded = _decode(stored)
    return decoded is not None and decoded.canonical() == expected


def _hashes_to(text: str, schematic_id: str) -> bool:
    if hashlib.sha256(text.encode()).hexdigest() == schematic_id:
        return True
    decoded = _decode(text)
    return decoded is not None and decoded.id == schematic_id


def _changes(old: str, new: str, secrets: Collection[str], limit: int = 3) -> str:
    """The first few changed lines between two canonical bodies, for a one-line explanation.

    Bounded for any answer: whole lines are matched (ndiff's character-level matching of each
    replaced line cost seconds per schematic on 100,000 added lines), and each line shown is cut
    to a snippet (a 5 MB line would otherwise be printed whole).
    """
    old_lines, new_lines = old.splitlines(), new.splitlines()
    shown: list[str] = []
    count = 0
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines)
    for tag, old_start, old_end, new_start, new_end in matcher.get_opcodes():
        if tag == "equal":
            continue
        for verb, lines in (
            ("removed", old_lines[old_start:old_end]),
            ("added", new_lines[new_start:new_end]),
        ):
            count += len(lines)
            for line in lines[: max(0, limit - len(shown))]:
                shown.append(f"{verb} {_one_line(line, secrets, _LINE_SNIPPET)!r}")
    return ", ".join(shown) + (f" and {count - limit} more" if count > limit else "")


class _OutOfTimeError(Exception):
    """The request's deadline passed before its answer was complete."""


class _TooLargeError(Exception):
    """The answer's body is larger than the client accepts."""


class _UnaskedEncodingError(Exception):
    """The answer is in a Content-Encoding the request did not accept."""


class _Watchdog:
    """Shuts the sockets an attempt connects once the request's deadline passes.

    The HTTP library's read timeout restarts with every byte, so a server dripping its headers
    a byte a second would otherwise hold the request for hours. The library reports each new
    connection's socket through its ``trace`` extension; a duplicate of it is kept, and shutting
    that down at the deadline ends a read blocked in any thread at once.
    """

    def __init__(self, seconds: float) -> None:
        self.expired = False
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._timer = threading.Timer(max(0.0, seconds), self._expire)
        self._timer.daemon = True
        self._timer.start()

    def trace(self, event: str, info: Mapping[str, Any]) -> None:
        if event != "connection.connect_tcp.complete":
            return
        stream = info.get("return_value")
        raw = stream.get_extra_info("socket") if stream is not None else None
        if not isinstance(raw, socket.socket):
            return
        with self._lock:
            if self.expired:
                _shut(raw)
                return
            with contextlib.suppress(OSError):
                self._sockets.append(raw.dup())

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for held in self._sockets:
                _shut(held)

    def stop(self) -> None:
        self._timer.cancel()
        with self._lock:
            for held in self._sockets:
                held.close()
            self._sockets.clear()


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed by the library
        sock.shutdown(socket.SHUT_RDWR)


# Output of one decompression step: a 64 KiB gzip chunk of zeros inflates to 64 MB at once.
_INFLATE_STEP = 1 << 16


def _inflate(raw: Iterator[bytes], wbits: int) -> Iterator[bytes]:
    """Decompressed chunks of at most _INFLATE_STEP bytes (a bomb is cut at the caller's cap)."""
    inflater = zlib.decompressobj(wbits)
    try:
        for chunk in raw:
            pending = chunk
            while pending:
                yield inflater.decompress(pending, _INFLATE_STEP)
                pending = inflater.unconsumed_tail
                if inflater.eof:
                    return
        yield inflater.flush()
    except zlib.error as exc:
        raise httpx.DecodingError(str(exc)) from None


def _inflate_deflate(raw: Iterator[bytes]) -> Iterator[bytes]:
    # "deflate" is zlib-wrapped by the standard, raw from some servers; httpx accepts both.
    first = next(raw, b"")
    wbits = zlib.MAX_WBITS
    try:
        zlib.decompressobj(wbits).decompress(first, 1)
    except zlib.error:
        wbits = -zlib.MAX_WBITS
    yield from _inflate(itertools.chain([first], raw), wbits)


def _decoded(response: httpx.Response) -> Iterator[bytes]:
    """The body of a streamed answer, decompressed step by step.

    httpx's own decoders inflate each network chunk whole, so a gzip bomb would cost memory a
    thousand times its chunk before any cap is checked.
    """
    if response.is_stream_consumed:
        # Built whole in memory by an injected transport: nothing left to read or decode.
        return iter([response.content])
    encoding = response.headers.get("content-encoding", "").strip().lower()
    raw = response.iter_raw()
    if encoding in ("", "identity"):
        return raw
    if encoding in ("gzip", "x-gzip"):
        return _inflate(raw, zlib.MAX_WBITS | 16)
    if encoding == "deflate":
        return _inflate_deflate(raw)
    raise _UnaskedEncodingError(encoding)


def _echoed_forms(secret: str) -> set[str]:
    """The ways a server may echo a secret back: as sent, JSON-escaped (a ``"`` or ``\\`` in a
    token, a non-ASCII letter as ``\\u00e9``, a ``/`` as ``\\/``) and URL-encoded (either case
    of hex digits, ``+`` or ``%20`` for a space)."""
    forms = {secret}
    for ascii_only in (True, False):
        escaped = json.dumps(secret, ensure_ascii=ascii_only)[1:-1]
        forms |= {escaped, escaped.replace("/", "\\/")}
    for encoded in (
        urllib.parse.quote(secret, safe=""),
        urllib.parse.quote(secret),
        urllib.parse.quote_plus(secret, safe=""),
    ):
        forms |= {encoded, _PERCENT.sub(lambda found: found.group().lower(), encoded)}
    return forms


_PERCENT = re.compile(r"%[0-9A-F]{2}")


# Describe the bytes as they were sent; the body handed on is already decoded.
_DROPPED_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})


class FactoryClient:
    """A thread-safe client for one Image Factory; use as a context manager to close it."""

    def __init__(
        self,
        base_url: str = DEFAULT_FACTORY_URL,
        *,
        client: httpx.Client | None = None,
        environ: Mapping[str, str] | None = None,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        retry: RetryPolicy | None = None,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        max_response_size: int | None = None,
        max_request_time: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        self.url, userinfo = split_factory_url(base_url)
        self.max_in_flight = max_in_flight
        # Read at construction, not import, so a test can lower the module's defaults.
        self.max_response_size = max_response_size or DEFAULT_MAX_RESPONSE_SIZE
        self.max_request_time = max_request_time or DEFAULT_MAX_REQUEST_TIME
        self._clock = clock
        self.retry = retry or DEFAULT_RETRY
        self._sleep = sleep
        self._jitter = jitter
        self._slots = threading.BoundedSemaphore(max_in_flight)
        env = os.environ if environ is None else environ
        # The encodings decoded here with bounded output (see _decoded); none other is asked for.
        self._headers = {
            "User-Agent": f"talos-schematic/{__version__}",
            "Accept-Encoding": "gzip, deflate",
        }
        self._secrets: set[str] = set()
        self._authorize(env.get(TOKEN_ENV, ""), env.get(AUTH_ENV, ""), userinfo)
        self._owns_http = client is None
        try:
            self._http = client or httpx.Client(
                timeout=timeout,
                # No connection is kept for reuse: the watchdog learns of a socket when it is
                # connected, so each attempt gets a new one it can shut.
                limits=httpx.Limits(max_connections=max_in_flight, max_keepalive_connections=0),
                follow_redirects=False,
            )
        except (ImportError, ValueError, OSError, httpx.InvalidURL) as exc:
            # The proxy and CA settings httpx takes from the environment are read here.
            raise self._environment_error(exc) from None

    def _environment_error(self, exc: Exception) -> FactoryError:
        settings = [
            f"${name}={without_userinfo(os.environ[name])}"
            for name in _CONNECTION_ENV
            if os.environ.get(name)
        ]
        where = f" ({', '.join(settings)})" if settings else ""
        if isinstance(exc, ImportError) and "socks" in str(exc).lower():
            reason = "a SOCKS proxy needs the socksio package: pip install 'httpx[socks]'"
        elif isinstance(exc, OSError):
            reason = f"the CA certificates cannot be read ({exc.strerror or exc})"
        elif any("***@" in setting for setting in settings):
            # httpx's text may quote any piece of a password it misread as a host or port.
            reason = f"{type(exc).__name__} (its text is not shown: a setting holds user:password@)"
        else:
            reason = f"{type(exc).__name__}: {without_userinfo(str(exc))}"
        return FactoryError(
            self._redact(
                f"{self.url}: cannot set up a connection with the proxy or CA settings of the "
                f"environment{where}: {reason}"
            )
        )

    def _authorize(self, token: str, auth: str, userinfo: tuple[str, str] | None) -> None:
        # Checked before any request: an illegal header value makes the HTTP library fail with
        # the value in its message, and a CRLF-saved secret file is the usual cause.
        if token:
            if not _TOKEN_CHARS.fullmatch(token):
                raise FactoryError(
                    f"${TOKEN_ENV} holds a character an HTTP header cannot carry (a line break "
                    "or carriage return — a secret file saved with CRLF? —, a space, a control "
                    "character or a non-ASCII letter); its value is not shown. Give the token "
                    "alone, e.g. TALOS_SCHEMATIC_FACTORY_TOKEN=\"$(tr -d '\\r\\n' < FILE)\""
                )
            self._headers["Authorization"] = f"Bearer {token}"
            self._secrets |= _echoed_forms(token)
            return
        source = "the factory URL's user:password@"
        if auth:
            user, _, password = auth.partition(":")
            userinfo = (user, password)
            source = f"${AUTH_ENV}"
        if userinfo is not None:
            pair = f"{userinfo[0]}:{userinfo[1]}"
            if _CONTROL_CHARS.search(pair):
                raise FactoryError(
                    f"{source} holds a line break, carriage return or other control character "
                    "(a secret file saved with CRLF?); its value is not shown. Give "
                    "user:password alone"
                )
            encoded = base64.b64encode(pair.encode()).decode("ascii")
            self._headers["Authorization"] = f"Basic {encoded}"
            self._secrets |= {encoded, *_echoed_forms(pair), *_echoed_forms(userinfo[1])}

    def _redact(self, text: str) -> str:
        return redacted(text, self._secrets)

    def _cleaned(self, value: _V) -> _V:
        """A server's strings as they may be printed or cached: secrets it echoed hidden, control
        characters (a terminal escape sequence, a NUL) written as escapes."""
        if isinstance(value, str):
            return printable(self._redact(value))  # type: ignore[return-value]
        if isinstance(value, list):
            return [self._cleaned(item) for item in value]  # type: ignore[return-value]
        if isinstance(value, dict):
            return {key: self._cleaned(item) for key, item in value.items()}  # type: ignore[return-value]
        return value

    def _error(self, subject: str, what: str) -> FactoryError:
        where = f"{self.url}: {subject}: " if subject else f"{self.url}: "
        return FactoryError(self._redact(where + what))

    def close(self) -> None:
        """Close the connection pool (only when this client created it)."""
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> FactoryClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _request(
        self,
        method: str,
        path: str,
        subject: str,
        *,
        ok: Collection[int],
        content: bytes | None = None,
        content_type: str | None = None,
        limit: int | None = None,
    ) -> httpx.Response:
        """Send with retries; return an answer whose status is in ``ok`` or raise FactoryError.
        ``limit`` bounds this endpoint's answer below ``max_response_size``."""
        what = f"{method} {path}"
        cap = min(self.max_response_size, limit or self.max_response_size)
        headers = dict(self._headers)
        if content_type:
            headers["Content-Type"] = content_type
        deadline = self._clock() + self.max_request_time
        attempts = max(1, self.retry.attempts)
        for attempt in range(1, attempts + 1):
            retry_after: float | None = None
            try:
                with self._slots:
                    response = self._send(method, path, content, headers, deadline, cap)
            except _OutOfTimeError:
                raise self._error(
                    subject,
                    f"{what}: no complete answer within the {self.max_request_time:g} s allowed "
                    f"per request (a stalled or drip-feeding server?; {_attempts(attempt)})",
                ) from None
            except _TooLargeError:
                raise self._error(
                    subject,
                    f"{what}: the answer is larger than the {format_size(cap)} "
                    f"{'a factory answer' if cap == self.max_response_size else 'a list'} "
                    "may be; not read further",
                ) from None
            except _UnaskedEncodingError as exc:
                raise self._error(
                    subject,
                    f"{what}: the answer is in Content-Encoding "
                    f"{_one_line(str(exc), self._secrets, 40)!r}, "
                    "which was not asked for (gzip or deflate)",
                ) from None
            except httpx.DecodingError as exc:
                # Not transient: the same bytes would come back.
                raise self._error(
                    subject,
                    f"{what}: the answer's body could not be decoded (its Content-Encoding "
                    f"does not match its bytes: {_one_line(str(exc), self._secrets)})",
                ) from None
            except httpx.TransportError as exc:
                reason = _describe_transport_error(exc)
                if attempt == attempts:
                    raise self._error(
                        subject, f"{what}: {reason} (after {_attempts(attempts)})"
                    ) from None
            else:
                if response.status_code in ok:
                    return response
                if response.status_code not in _RETRY_STATUSES or attempt == attempts:
                    raise self._status_error(response, what, subject, attempt)
                retry_after = _retry_after(response.headers.get("retry-after"))
                if retry_after is not None and retry_after > self.retry.max_retry_after:
                    # Retrying sooner than asked would only be refused again.
                    raise self._status_error(response, what, subject, attempt, retry_after)
            if retry_after is not None:
                delay = retry_after
            else:
                delay = self.retry.delay(attempt, self._jitter())
            if self._clock() + delay >= deadline:
                raise self._error(
                    subject,
                    f"{what}: no answer within the {self.max_request_time:g} s allowed per "
                    f"request (gave up retrying after {_attempts(attempt)})",
                )
            self._sleep(delay)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _send(
        self,
        method: str,
        path: str,
        content: bytes | None,
        headers: Mapping[str, str],
        deadline: float,
        cap: int,
    ) -> httpx.Response:
        """One attempt with its body read whole; raises past ``deadline`` or the size ``cap``.

        The answer is returned with its body in memory and the connection closed.
        """
        remaining = deadline - self._clock()
        if remaining <= 0:
            raise _OutOfTimeError
        watchdog = _Watchdog(remaining)
        request = self._http.build_request(
            method,
            self.url + path,
            content=content,
            headers=headers,
            extensions={"trace": watchdog.trace},
        )
        try:
            try:
                response = self._http.send(request, stream=True, follow_redirects=False)
            except httpx.TransportError:
                if watchdog.expired:
                    raise _OutOfTimeError from None
                raise
            try:
                declared = response.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > cap:
                    raise _TooLargeError
                chunks: list[bytes] = []
                size = 0
                for chunk in _decoded(response):
                    size += len(chunk)
                    if size > cap:
                        raise _TooLargeError
                    chunks.append(chunk)
                    if self._clock() > deadline:
                        raise _OutOfTimeError
            except httpx.TransportError:
                if watchdog.expired:
                    raise _OutOfTimeError from None
                raise
            finally:
                response.close()
        finally:
            watchdog.stop()
        reason = response.extensions.get("reason_phrase")
        return httpx.Response(
            response.status_code,
            headers=[
                (name, value)
                for name, value in response.headers.multi_items()
                if name.lower() not in _DROPPED_HEADERS
            ],
            content=b"".join(chunks),
            request=request,
            extensions={"reason_phrase": reason} if reason is not None else {},
        )

    def _status_error(
        self,
        response: httpx.Response,
        what: str,
        subject: str,
        attempts: int,
        retry_after: float | None = None,
    ) -> FactoryError:
        status = _status_text(response)
        if 300 <= response.status_code < 400:
            target = response.headers.get("location", "")
            moved = f" to {urllib.parse.urljoin(self.url + '/', target)}" if target else ""
            return self._error(
                subject, f"{what}: {status}: the factory redirects{moved}; pass that URL instead"
            )
        if _is_html(response):
            detail = "an HTML page, not the factory's answer (a proxy or login page in front?)"
        else:
            body = _one_line(response.text, self._secrets)
            detail = body or "(empty body)"
        tail = f" (after {_attempts(attempts)})" if response.status_code in _RETRY_STATUSES else ""
        if retry_after is not None:
            tail = (
                # :g, not :.0f, so 10.5 s is not shown as the 10 s it is longer than.
                f" (asked to retry after {retry_after:g} s, longer than the "
                f"{self.retry.max_retry_after:g} s allowed; gave up after {_attempts(attempts)})"
            )
        if response.status_code in (401, 403):
            tail = f" (set {TOKEN_ENV} or {AUTH_ENV})"
        return self._error(subject, f"{what}: {status}{tail}: {detail}")

    def _json(self, response: httpx.Response, what: str, subject: str) -> object:
        status = _status_text(response)
        if _is_html(response):
            raise self._html_error(response, what, subject)
        try:
            return json.loads(response.text)
        except RecursionError:
            raise self._error(
                subject, f"{what}: {status} with JSON nested too deeply to be the factory's answer"
            ) from None
        except ValueError as exc:
            raise self._error(
                subject,
                f"{what}: {status} with malformed or truncated JSON ({exc}): "
                f"{_one_line(response.text, self._secrets) or '(empty body)'}",
            ) from None

    def _html_error(self, response: httpx.Response, what: str, subject: str) -> FactoryError:
        return self._error(
            subject,
            f"{what}: {_status_text(response)} with an HTML page instead of the factory's "
            "answer (a proxy or login page in front of the factory?)",
        )

    def register(self, schematic: SchematicBody, subject: str = "") -> Registration:
        """POST one schematic and check the factory's answer against its offline ID."""
        what = "POST /schematics"
        sent = schematic.canonical()
        offline_id = schematic.id
        response = self._request(
            "POST",
            "/schematics",
            subject,
            ok={200, 201},
            content=sent.encode(),
            content_type="application/yaml",
        )
        payload = self._json(response, what, subject)
        status = _status_text(response)
        factory_id = payload.get("id") if isinstance(payload, dict) else None
        if not isinstance(factory_id, str) or not _ID.fullmatch(factory_id):
            raise self._error(
                subject,
                f"{what}: {status} without a schematic ID: "
                f"{_one_line(response.text, self._secrets)}",
            )
        stored = payload.get("schematic") if isinstance(payload, dict) else None
        if stored is not None and not isinstance(stored, str):
            raise self._error(subject, f"{what}: {status}: 'schematic' is not a YAML string")
        subjects = (subject,) if subject else ()
        if factory_id == offline_id:
            return Registration(
                id=factory_id, offline_id=offline_id, canonical=sent, subjects=subjects
            )
        if not stored:
            raise self._error(
                subject,
                f"{what}: the factory answered ID {factory_id} for a body whose ID is "
                f"{offline_id}, and returned no body to explain why; nothing is written "
                "(does this factory canonicalise schematics differently?)",
            )
        if _same_body(stored, sent):
            raise self._error(
                subject,
                f"{what}: the factory stores the body that was sent but answered ID "
                f"{factory_id} instead of {offline_id}; nothing is written",
            )
        if not _hashes_to(stored, factory_id):
            raise self._error(
                subject,
                f"{what}: the factory answered ID {factory_id} with a body that does not "
                "hash to it; nothing is written",
            )
        if owner_added(stored, sent) is None:
            # Only an added owner (an Enterprise factory's stamp) keeps it the same schematic.
            raise self._error(
                subject,
                f"{what}: the factory stores a body that differs from the one sent by more "
                f"than an added owner ({_changes(sent, stored, self._secrets)}) "
                f"under ID {factory_id}; "
                "nothing is written",
            )
        notice = self._redact(
            f"{self.url}: {subject or 'schematic'}: the factory stores a different body "
            f"({_changes(sent, stored, self._secrets)}), "
            f"so its ID {factory_id} is used instead of the "
            f"offline {offline_id}"
        )
        return Registration(
            id=factory_id,
            offline_id=offline_id,
            canonical=stored,
            subjects=subjects,
            notice=notice,
        )

    def fetch_schematic(self, schematic_id: str, subject: str = "") -> str | None:
        """The body the factory stores under ``schematic_id``, or None when it has none."""
        if not _ID.fullmatch(schematic_id):
            raise self._error(subject, f"{schematic_id!r} is not a schematic ID")
        what = f"GET /schematics/{schematic_id}"
        response = self._request("GET", f"/schematics/{schematic_id}", subject, ok={200, 404})
        if _is_html(response):
            raise self._html_error(response, what, subject)
        if response.status_code == 404:
            return None
        return response.text

    def versions(self) -> list[str]:
        """Talos versions the factory can build, as it lists them."""
        return self._version_list("/versions")

    def withdrawn_versions(self) -> list[str]:
        """Talos versions the factory withdrew (``GET /versions?broken=true``, image-factory
        v1.3.3+; an older factory ignores the query and answers its whole list)."""
        return self._version_list("/versions?broken=true")

    def _version_list(self, path: str) -> list[str]:
        what = f"GET {path}"
        response = self._request("GET", path, "", ok={200}, limit=MAX_LIST_RESPONSE_SIZE)
        payload = self._json(response, what, "")
        if not isinstance(payload, list) or not all(isinstance(v, str) for v in payload):
            raise self._error(
                "",
                f"{what}: expected a JSON list of versions: "
                f"{_one_line(response.text, self._secrets)}",
            )
        return [self._cleaned(version) for version in payload]

    def official_extensions(self, version: str) -> list[ExtensionInfo]:
        """The official extensions (name, ref, digest, …) the factory offers for ``version``."""
        return self._catalogue(version, "extensions", _EXTENSION_LIST)

    def official_overlays(self, version: str) -> list[OverlayInfo]:
        """The official board overlays (name, image, ref, digest) for ``version``."""
        return self._catalogue(version, "overlays", _OVERLAY_LIST)

    def _catalogue(
        self, version: str, kind: Literal["extensions", "overlays"], shape: pydantic.TypeAdapter[_T]
    ) -> _T:
        """``GET /version/<v>/<kind>/official``, checked against the list's expected shape."""
        talos = version if version.startswith("v") else f"v{version}"
        if not _TALOS_VERSION.fullmatch(talos):
            raise CatalogError(f"{version!r} is not a Talos version (vX.Y.Z)")
        path = f"/version/{talos}/{kind}/official"
        what = f"GET {path}"
        response = self._request(
            "GET", path, f"Talos {talos}", ok={200, 404}, limit=MAX_LIST_RESPONSE_SIZE
        )
        if response.status_code == 404 and not _is_html(response):
            raise CatalogError(
                self._redact(
                    f"{self.url}: Talos {talos}: the factory does not know this version "
                    f"({_status_text(response)}: "
                    f"{_one_line(response.text, self._secrets) or '(empty body)'})"
                )
            )
        payload = self._json(response, what, f"Talos {talos}")
        try:
            return shape.validate_python(self._cleaned(payload))
        except pydantic.ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            noun = "extension" if kind == "extensions" else "overlay"
            raise self._error(
                f"Talos {talos}",
                f"{what}: unexpected {noun} list ({where}: {first['msg']})",
            ) from None


def _join_subjects(subjects: Sequence[str]) -> str:
    return ", ".join(subjects)


def register_schematics(
    client: FactoryClient,
    items: Sequence[tuple[str, SchematicBody]],
    *,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Registration]:
    """Register every distinct schematic once; map each subject (pool or file) to its result.

    Either every POST succeeds or a FactoryError naming the factory and the subjects is raised.
    ``progress(done, total)`` is called from the calling thread after each distinct schematic.
    """
    groups: dict[str, tuple[SchematicBody, list[str]]] = {}
    for subject, schematic in items:
        groups.setdefault(schematic.id, (schematic, []))[1].append(subject)
    order = {offline_id: index for index, offline_id in enumerate(groups)}
    done: dict[str, Registration] = {}
    failures: dict[str, FactoryError] = {}
    if groups:
        workers = min(client.max_in_flight, len(groups))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="factory") as pool:
            futures: dict[Future[Registration], str] = {
                pool.submit(client.register, schematic, _join_subjects(subjects)): offline_id
                for offline_id, (schematic, subjects) in groups.items()
            }
            for future in as_completed(futures):
                if future.cancelled():
                    continue  # skipped after a failure; reported below as not registered
                offline_id = futures[future]
                try:
                    done[offline_id] = future.result()
                except FactoryError as err:
                    failures[offline_id] = err
                    # All or nothing: once one fails, do not send what has not started.
                    for pending in futures:
                        pending.cancel()
                    continue
                if progress is not None:
                    progress(len(done), len(groups))
    if failures or len(done) != len(groups):
        ordered = [str(failures[k]) for k in sorted(failures, key=order.__getitem__)]
        skipped = [
            subject
            for offline_id, (_, subjects) in groups.items()
            if offline_id not in done and offline_id not in failures
            for subject in subjects
        ]
        shown = ordered[:5]
        if len(ordered) > 5:
            shown.append(f"… and {len(ordered) - 5} more failed")
        if skipped:
            shown.append(f"not registered after that failure: {_join_subjects(skipped)}")
        raise FactoryError("\n".join(shown))
    shared = {
        offline_id: done[offline_id].model_copy(update={"subjects": tuple(subjects)})
        for offline_id, (_, subjects) in groups.items()
    }
    # In input order, so callers writing per-subject output stay deterministic.
    return {subject: shared[schematic.id] for subject, schematic in items}


def verify_ids(
    client: FactoryClient,
    items: Sequence[tuple[str, str, SchematicBody | None]],
) -> list[VerifyResult]:
    """Check that the factory holds each ``(subject, id, expected)``; one GET per distinct ID.

    With ``expected`` given, the stored body must be that schematic's canonical form.
    """
    ids = list(dict.fromkeys(schematic_id for _, schematic_id, _ in items))
    subjects = {
        schematic_id: _join_subjects([s for s, i, _ in items if i == schematic_id])
        for schematic_id in ids
    }
    stored: dict[str, str | None] = {}
    if ids:
        with ThreadPoolExecutor(
            max_workers=min(client.max_in_flight, len(ids)), thread_name_prefix="factory"
        ) as pool:
            futures = {
                schematic_id: pool.submit(
                    client.fetch_schematic, schematic_id, subjects[schematic_id]
                )
                for schematic_id in ids
            }
            for schematic_id, future in futures.items():
                stored[schematic_id] = future.result()
    results = []
    for subject, schematic_id, expected in items:
        body = stored[schematic_id]
        wanted = expected.canonical() if expected is not None else None
        if body is None:
            results.append(VerifyResult(subject=subject, id=schematic_id, status="missing"))
        elif wanted is None or _same_body(body, wanted):
            results.append(VerifyResult(subject=subject, id=schematic_id, status="present"))
        else:
            results.append(
                VerifyResult(
                    subject=subject,
                    id=schematic_id,
                    status="different",
                    detail="the factory stores another body "
                    f"({_changes(wanted, body, client._secrets)})",
                )
            )
    return results
