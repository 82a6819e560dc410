"""`talosctl health`: each check the cluster was waited on for, and how its last attempt ended.

The reporter (siderolabs/talos ``pkg/cluster/check``, printed by ``talosctl health`` and
``talosctl cluster create``) writes ``discovered nodes: [...]``, then per check ``waiting for
<check>: ...`` and, each time it changes, ``waiting for <check>: <result>`` — ``OK``, ``SKIP``
or the error, whose per-node parts follow as ``    * <node>: <message>`` (quoted in
siderolabs/talos#2589 and siderolabs/terraform-provider-talos#153). A check whose last result
is an error failed when the command gave up: each of its node's messages is an error line
(TS213 says it, with what to collect); a check that ended OK was healthy, whatever it said
before.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import islice

from schematic.doctor.triage.readers.paste import first_line
from schematic.doctor.triage.signals import Evidence, Kind, Signal

__all__ = ["read_health", "recognise_health"]

_DISCOVERED = re.compile(r"^discovered nodes: ")
_CHECK = re.compile(r"^waiting for (?P<check>[^:\n]+): (?P<result>\S.*)$")
_PART = re.compile(r"^\s+\* (?:(?P<node>[\w.:-]+): )?(?P<message>\S.*)$")
_WAITING = "..."
_PASSED = ("OK", "SKIP")
_MAX_TEXT = 400


# `talosctl cluster create` prints its own steps ("creating worker nodes") before the checks.
_HEAD_LINES = 20


def recognise_health(text: str) -> bool:
    """Whether the reporter's lines start ``text``: ``discovered nodes`` or a check among its
    first lines, and two checks at least. Cheap on any text: the first lines are found by
    skipping to what is not blank, and the checks by their words, never by splitting every
    line (16 MiB of blank lines are sixteen million)."""
    if not any(_DISCOVERED.match(line) or _CHECK.match(line) for line in _head(text)):
        return False
    checks = (
        found
        for found in _CHECK_WORDS.finditer(text)
        if found.start() == 0 or text[found.start() - 1] == "\n"
    )
    return sum(1 for _ in islice(checks, 2)) >= 2


_CHECK_WORDS = re.compile(r"waiting for [^:\n]+: \S")


def _head(text: str) -> Iterator[str]:
    """The first :data:`_HEAD_LINES` lines of ``text`` that are not blank."""
    position = 0
    for _ in range(_HEAD_LINES):
        start, line = first_line(text, position)
        if not line:
            return
        yield line
        position = start + len(line)


def read_health(text: str, file: str) -> Iterator[Signal]:
    """One HEALTH_CHECK per check (its last result), and an UNKNOWN_FAILURE for each node's
    part of a check that ended in an error."""
    last: dict[str, tuple[int, str, str]] = {}  # check → (line, raw, result)
    parts: dict[str, list[tuple[int, str, str, str]]] = {}  # check → (line, raw, node, message)
    check = ""
    for number, raw in enumerate(text.splitlines(), 1):
        found = _CHECK.match(raw)
        if found:
            check = found["check"]
            result = found["result"].strip()
            if result != _WAITING:
                last[check] = (number, raw.strip(), result)
                parts[check] = []
            continue
        part = _PART.match(raw) if check else None
        if part and check in parts:
            parts[check].append((number, raw.strip(), part["node"] or "", part["message"]))
    for name, (number, raw, result) in last.items():
        passed = result in _PASSED
        evidence = Evidence(file, number, raw[:_MAX_TEXT])
        yield Signal(
            Kind.HEALTH_CHECK, "", evidence, name, (("result", result), ("passed", str(passed)))
        )
        if passed:
            continue
        failed = parts.get(name) or [(number, raw, "", result)]
        for line, text_, node, _message in failed:
            yield Signal(
                Kind.UNKNOWN_FAILURE, node, Evidence(file, line, text_[:_MAX_TEXT]), "talos"
            )
