"""The one redactor: credentials hidden before any text is quoted.

Two sources of secrets meet it: those the tool knows (the factory's token and password, handed
in as ``secrets``) and those a text merely holds — a pasted pod log or kubeconfig quoted as
triage evidence, a server's answer echoing a URL. The second kind is found by its form:

- an ``Authorization`` header, and a ``Bearer``/``Basic`` credential anywhere;
- the ``user:password@`` (or ``token@``) part of a URL;
- a query, matrix or form parameter, or an environment or config assignment, whose name says
  it holds a secret (``token``, ``password``, ``secret``, ``api_key``, ``signature``, ...);
- a kubeconfig's or talosconfig's key and token fields.

What is hidden becomes ``***``; the rest of the text stays as it was, so a line still reads.
"""

from __future__ import annotations

import re
from collections.abc import Collection

__all__ = ["MASK", "redacted"]

MASK = "***"

# Names of parameters and fields that hold a secret (case-insensitive), in URLs (?x=, &x=, ;x=),
# environment assignments (X=...), JSON and YAML fields ("x": ..., x: ...).
_SECRET_NAME = (
    r"(?:[a-z0-9_-]*(?:token|password|passwd|secret|api[_-]?key|apikey|private[_-]?key|access[_-]?key)[a-z0-9_-]*"
    r"|pwd|signature|x-amz-signature|x-goog-signature|client-key-data)"
)
# A value: up to the next delimiter of a URL, a shell word, a JSON string or a YAML scalar.
_VALUE = r"[^\s&;#,\"'<>\\]+"
# What a token or key looks like (base64, hex, a JWT): long, one word. "token: expired" in a
# log's prose is no credential; "token: eyJhbGciOi..." is.
_CREDENTIAL = r"[A-Za-z0-9+/=._~-]{16,}"
_PATTERNS = (
    # "Authorization: Bearer x", "authorization=Basic x": the whole credential.
    (
        re.compile(r"(?i)(\bauthorization[\"']?\s*[:=]\s*[\"']?)(?:(?:bearer|basic)\s+)?" + _VALUE),
        r"\1" + MASK,
    ),
    (re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=-]{8,}"), r"\1\2" + MASK),
    # scheme://user:password@host, scheme://token@host.
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/@?#\"'<>]+@"), r"\1" + MASK + "@"),
    # ?token=x, ;token=x, &password=x, TOKEN=x, "password": "x".
    (
        re.compile(rf"(?i)(?<![a-z0-9_-])({_SECRET_NAME}(?:=|\":\s*\"?|'\s*:\s*'?)){_VALUE}"),
        r"\1" + MASK,
    ),
    # token: x, client-key-data: x, key: x (YAML: a kubeconfig, a talosconfig).
    (
        re.compile(rf"(?i)(?<![a-z0-9_-])((?:{_SECRET_NAME}|key):\s+[\"']?){_CREDENTIAL}"),
        r"\1" + MASK,
    ),
)


# A word every pattern above needs (the names' common parts: "key" of api_key, private-key and
# client-key-data, "passw" of password and passwd): a text without one is returned as it is,
# without running the patterns. Most lines quoted hold none, and the patterns cost
# microseconds a line: a cluster's 5,000 pods are 5,000 lines.
_TRIGGER_WORDS = r"authorization|bearer|basic|://|token|passw|secret|key|pwd|signature"
# ASCII text is searched lower-cased, case-sensitively: a tenth of the case-insensitive search's
# cost. Other text keeps that search: under it U+017F (long s) is an "s" and U+212A (Kelvin)
# a "k", as they are for the patterns.
_TRIGGER_LOWER = re.compile(_TRIGGER_WORDS)
_TRIGGER = re.compile("(?i)" + _TRIGGER_WORDS)


def _may_hold_credential(text: str) -> bool:
    if text.isascii():
        return _TRIGGER_LOWER.search(text.lower()) is not None
    return _TRIGGER.search(text) is not None


def redacted(text: str, secrets: Collection[str] = ()) -> str:
    """``text`` with every credential hidden: each of ``secrets`` (a secret of 4 characters or
    more wherever it appears; a shorter one where it stands alone, as replacing every "ab"
    would garble the text), then every credential the text shows by its form."""
    for secret in sorted(filter(None, secrets), key=len, reverse=True):
        if len(secret) >= 4:
            text = text.replace(secret, MASK)
        else:
            text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(secret)}(?![A-Za-z0-9])", MASK, text)
    if not _may_hold_credential(text):
        return text
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text
