"""Which Image Factory to talk to, and its URL as messages and files may show it.

``--factory URL``, else ``$TALOS_SCHEMATIC_FACTORY``, else the cluster file's
``talos.imageFactoryURL``, else ``https://factory.talos.dev``. No network here, so offline code
may import it.

This is the one parser of factory URLs, and it decides what of one may be shown or written:

- A ``user:password@`` part is whatever stands between ``//`` and the *last* ``@`` of the URL,
  whatever characters it holds: a password with ``/``, ``?``, ``#`` or ``@`` is still a password,
  though a strict URL parser would take part of it for the host or path. Given to ``--factory``
  or ``$TALOS_SCHEMATIC_FACTORY`` it is taken as basic credentials
  (:func:`split_factory_url`) and never shown (:func:`without_userinfo`).
- A URL that is written to a file (``talos.imageFactoryURL``) must hold none, nor a query or a
  fragment, where a token would travel (:func:`refuse_userinfo`): files land in Git.
- A URL printed from ``--factory`` (``urls``) is the base alone (:func:`split_factory_url`): no
  ``user:password@``, and a query or fragment is refused.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Mapping

from schematic.errors import FactoryError
from schematic.redact import redacted

__all__ = [
    "DEFAULT_FACTORY_URL",
    "FACTORY_ENV",
    "PATH_CREDENTIAL_REFUSED",
    "QUERY_REFUSED",
    "USERINFO_REFUSED",
    "refuse_userinfo",
    "resolve_factory_url",
    "split_factory_url",
    "without_userinfo",
]

DEFAULT_FACTORY_URL = "https://factory.talos.dev"
FACTORY_ENV = "TALOS_SCHEMATIC_FACTORY"

USERINFO_REFUSED = (
    "must not carry user:password@ — the URL is written into every pool's values and image "
    "URLs; give the credentials in $TALOS_SCHEMATIC_FACTORY_AUTH (user:password) or "
    "$TALOS_SCHEMATIC_FACTORY_TOKEN instead"
)
QUERY_REFUSED = (
    "must not carry a query (?...) or fragment (#...) — it may hold a token, and the URL is "
    "written into every pool's values and image URLs; give a token in "
    "$TALOS_SCHEMATIC_FACTORY_TOKEN instead"
)

_CONTROL = re.compile(r"[\x00-\x20\x7f-\x9f]")
# Path segments after which a token would stand (https://host/token/<token>/...).
_SECRET_SEGMENTS = frozenset({"token", "tokens", "secret", "password", "key", "apikey", "auth"})
PATH_CREDENTIAL_REFUSED = (
    "the factory URL must not carry a credential in its path (a ;name=value or name=value "
    "parameter, or a token segment); give the token in $TALOS_SCHEMATIC_FACTORY_TOKEN instead"
)


def resolve_factory_url(
    flag: str | None = None,
    cluster_url: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> str:
    """The factory base URL: ``--factory``, else ``$TALOS_SCHEMATIC_FACTORY``, else the cluster
    file's ``talos.imageFactoryURL``, else the public factory."""
    env = os.environ if environ is None else environ
    for candidate in (flag, env.get(FACTORY_ENV), cluster_url):
        if candidate:
            return candidate
    return DEFAULT_FACTORY_URL


def _split(url: str) -> tuple[str, str, str | None]:
    """``(scheme://, rest, userinfo)``: the userinfo runs from ``//`` (or the start, when the
    scheme is missing) to the last ``@``."""
    scheme, separator, rest = url.partition("//")
    if not separator:
        scheme, rest = "", url
    else:
        scheme += separator
    userinfo, at, host_and_path = rest.rpartition("@")
    if not at:
        return scheme, rest, None
    return scheme, host_and_path, userinfo


def without_userinfo(url: str) -> str:
    """``url`` with any ``user:password@`` part replaced by ``***@``: safe to print."""
    scheme, rest, userinfo = _split(url.strip())
    return scheme + rest if userinfo is None else f"{scheme}***@{rest}"


def refuse_userinfo(url: str) -> None:
    """ValueError (:data:`USERINFO_REFUSED` or :data:`QUERY_REFUSED`, which never echo it) when
    ``url`` carries a ``user:password@`` part, a query or a fragment: for a URL that is written
    to a file."""
    _, rest, userinfo = _split(url.strip())
    if userinfo is not None:
        raise ValueError(USERINFO_REFUSED)
    if "?" in rest or "#" in rest:
        raise ValueError(QUERY_REFUSED)
    _, _, path = rest.partition("/")
    if _path_credentials("/" + path) is not None:
        raise ValueError(PATH_CREDENTIAL_REFUSED)


def _path_credentials(path: str) -> str | None:
    """``path`` with each segment that holds or follows a credential shown as ``***``; None
    when it holds none. A credential is a ``;name=value`` or ``name=value`` parameter (the
    factory's paths hold neither), what reads as one (:func:`schematic.redact.redacted`), or
    the segment after one named ``token``, ``secret``, ``password``, ``key`` or ``auth``."""
    segments = path.split("/")
    shown = list(segments)
    for index, segment in enumerate(segments):
        named = index > 0 and segments[index - 1].lower() in _SECRET_SEGMENTS
        if named or ";" in segment or "=" in segment or redacted(segment) != segment:
            shown[index] = "***"
    return "/".join(shown) if shown != segments else None


def split_factory_url(url: str) -> tuple[str, tuple[str, str] | None]:
    """The base URL without userinfo or trailing slash, and the userinfo as basic credentials."""
    scheme, rest, userinfo = _split(url.strip())
    shown = without_userinfo(url)
    if _CONTROL.search(url.strip()):
        escaped = shown.encode("unicode_escape").decode("ascii")
        raise FactoryError(
            f"{escaped}: not an Image Factory URL (it holds a space, line break or control "
            "character)"
        )
    bare = scheme + rest
    try:
        parts = urllib.parse.urlsplit(bare)
        hostname = parts.hostname
    except ValueError as err:  # `http://[::1`: an unclosed IPv6 bracket
        raise FactoryError(f"{shown}: not a valid URL ({err})") from None
    if parts.scheme not in ("http", "https") or not hostname:
        hint = f" (did you mean https://{shown}?)" if not scheme and shown else ""
        raise FactoryError(f"{shown or '(empty)'}: not an http(s) Image Factory URL{hint}")
    base = urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")).rstrip("/")
    if parts.query or parts.fragment:
        raise FactoryError(f"{redacted(base)}: the factory URL must not carry a query or fragment")
    masked = _path_credentials(parts.path)
    if masked is not None:
        origin = urllib.parse.urlunsplit((parts.scheme, parts.netloc, "", "", ""))
        raise FactoryError(f"{origin}{masked}: {PATH_CREDENTIAL_REFUSED}")
    try:
        parts.port  # noqa: B018 - validates the port
    except ValueError:
        raise FactoryError(f"{base}: the factory URL has an invalid port") from None
    if userinfo is None:
        return base, None
    user, _, password = userinfo.partition(":")
    return base, (urllib.parse.unquote(user), urllib.parse.unquote(password))
