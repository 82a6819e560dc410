"""What a paste carries besides the output itself: terminal colour, carriage returns, the
shell prompt and command that produced it, the warnings talosctl and kubectl print on stderr.

``clean`` removes them line by line, so every reader sees the tool's output as the tool wrote
it and every line keeps its number. ``sections`` splits a paste of several commands at their
prompts, so each output is read by the reader its content calls for; the command line names
the node (``talosctl -n 10.0.0.5 ...``) when the output does not.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass

from schematic.doctor.triage.readers.messages import message_kinds

__all__ = [
    "Section",
    "clean",
    "fenced_paste",
    "first_line",
    "first_visible",
    "is_prose",
    "sections",
    "unquote",
]

# CSI (colour, cursor) and OSC (titles, links) sequences, and the bare escapes around them.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
# Tools whose command line is worth reading; a prompt before anything else is left alone so
# that "# HELP ..." (Prometheus) or "# Title" (Markdown) are never taken for a command.
_TOOLS = (
    "talosctl|tl|t|kubectl|k|kubecolor|oc|virtctl|nvidia-smi|dmesg|journalctl|cat|grep|egrep"
    "|tail|head|less|jq|yq|curl|wget|vmctl|lspci|lsmod|helm|watch|sudo|ssh|crictl|ctr|ibstat"
)
# Whole lines only: `[ \t]`, never `\s`, so that no pattern runs on past a line break (a
# pattern that does makes a file of blank lines quadratic).
_PROMPT_BODY = (
    r"[ \t]*(?:\[[^\]\n]*\][ \t]*)?"  # "[22:22:18] " time stamps some prompts carry
    r"(?:(?:(?:\([\w.-]+\)[ \t]*)?[\w.-]+@[\w.-]+(?::[^\s$#%]*)?[ \t]*[$#%]|PS [A-Za-z]:\\[^>\n]*>"
    # "u18-1:~$ ": a host and its working directory, no user
    r"|[\w.-]+:[^\s$#%]*[$#%]"
    # oh-my-zsh's default theme: "➜  k8s-prod git:(main) ✗ talosctl ..."
    r"|➜[ \t]+[^\s]+(?:[ \t]+git:\([^)\n]*\))?(?:[ \t]+✗)?"
    r"|[$#%\u276f➜»>])[ \t]+"
    # "$talosctl ...": a dollar sign run into the command, as pasted in issues
    rf"|\$(?=(?:sudo[ \t]+)?(?:{_TOOLS})(?:[ \t]|$))"
    # a command line pasted without its prompt
    r"|(?=(?:sudo[ \t]+)?(?:talosctl|kubectl|virtctl|nvidia-smi)[ \t]))"
    rf"(?P<command>(?:{_TOOLS})(?:[ \t][^\n]*)?"
    # a shell alias ("# klnodes", "$ kgn -o wide"): one lower-case word, options at most
    r"|[a-z][\w-]{1,15}(?:[ \t]+-{1,2}[\w-]+(?:[ =][^\s]+)?)*[ \t]*)$"
)
_PROMPT = re.compile("^" + _PROMPT_BODY, re.MULTILINE)
# Lines that are not the tool's output: the prompt, talosctl's stderr warning ("WARNING:
# 10.0.0.5: server version 1.7.6 is older than client version 1.8.3"), kubectl's "Warning: ...",
# and the code fences of a paste copied from a Markdown page. The colon tells kubectl's warning
# from an event row of `kubectl describe` or `get events` ("Warning  FailedCreatePodSandBox ..."),
# which is evidence.
_NOT_OUTPUT = re.compile(
    r"^(?:(?:(?:WARNING|Warning):|W\d{4} [\d:.]+[ \t]+\d+ warnings\.go:?) [^\n]*"
    r"|[ \t]*(?:```|~~~)[\w-]*[ \t]*"
    # a GitHub comment's collapsed block around a paste
    r"|[ \t]*</?(?:details|code|pre)>[ \t]*|[ \t]*<summary>[^\n]*|[ \t]*</summary>[ \t]*"
    # virtctl console's banner on stderr (kubevirt pkg/virtctl/console/console.go)
    r"|Successfully connected to \S+ console\. The escape sequence is [^\n]*"
    rf"|{_PROMPT_BODY})$",
    re.MULTILINE,
)
# What one of those lines holds, for a quick look before the patterns run.
_NOT_OUTPUT_MARKS = (
    "WARNING",
    "Warning",
    "``",
    "~~~",
    "<details",
    "</details",
    "<summary",
    "<code>",
    "</code>",
    "<pre>",
    "</pre>",
    "Successfully",
)
_NODE_FLAG = re.compile(r"(?:^|\s)(?:-n|--nodes?)(?:\s+|=)(?P<nodes>[^\s-][^\s]*)")
_MARKS = (
    "$ ",
    "# ",
    "% ",
    "\u276f ",
    "> ",
    "➜ ",
    "» ",
    "talosctl",
    "kubectl",
    "virtctl",
    "nvidia-smi",
    "$t",
    "$k",
    "$v",
    "$d",
    "$s",
    "$n",
)


def clean(text: str) -> str:
    """``text`` without colour, carriage returns, prompts and tool warnings, line for line."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _dedent(text)
    if not any(mark in text for mark in _NOT_OUTPUT_MARKS) and not _maybe_prompt(text):
        return text
    return _NOT_OUTPUT.sub("", text)


_QUOTED = re.compile(r"^[ \t]*>[ \t]?", re.MULTILINE)
_UNQUOTED_LINE = re.compile(r"^(?![ \t]*>)[ \t]*\S", re.MULTILINE)


def unquote(text: str) -> str:
    """``text`` without the ``> `` quote markers of a reply that quotes a paste, when every
    non-blank line carries one (a quote inside a quote too); line for line."""
    for _ in range(3):
        if ">" not in text or not text.strip() or _UNQUOTED_LINE.search(text):
            return text
        text = _QUOTED.sub("", text)
    return text


_FIRST_INDENT = re.compile(r"^([ \t]+)\S", re.MULTILINE)


def first_visible(text: str, start: int = 0) -> int:
    """The offset of the first character from ``start`` on that is not white space;
    ``len(text)`` when there is none. ``str.lstrip`` runs through sixteen million blank lines
    in milliseconds, a pattern tried at each of their offsets in a tenth of a second."""
    return len(text) - len(text[start:].lstrip() if start else text.lstrip())


def first_line(text: str, start: int = 0) -> tuple[int, str]:
    """The offset and the text of the first line from ``start`` on that is not blank
    (``len(text)`` and "" when there is none)."""
    visible = first_visible(text, start)
    if visible == len(text):
        return visible, ""
    begin = text.rfind("\n", 0, visible) + 1
    end = text.find("\n", visible)
    return begin, text[begin : len(text) if end < 0 else end]


def _dedent(text: str) -> str:
    """``text`` without the indent every non-blank line shares: output pasted inside a
    Markdown list, a ``<details>`` block or a quoted reply keeps the tool's own columns."""
    start, line = first_line(text)
    if not line:
        return text
    indent = _FIRST_INDENT.match(text, start)
    if indent is None:
        return text
    prefix = re.escape(indent[1])
    # Any non-blank line without the indent keeps the text as it is.
    if re.search(rf"^(?!{prefix})[ \t]*\S", text, re.MULTILINE):
        return text
    return re.sub(rf"^{prefix}", "", text, flags=re.MULTILINE)


def _maybe_prompt(text: str) -> bool:
    return any(mark in text for mark in _MARKS)


@dataclass(frozen=True)
class Section:
    """The output of one command in a paste: its text (earlier lines blanked, so line numbers
    stay those of the file), the command, and the one node the command line names."""

    text: str
    command: str
    node: str


def sections(text: str) -> Iterator[Section]:
    """The outputs of the commands in a paste, or the whole text when it holds one or none.

    ``text`` is the raw file; each section is already clean.
    """
    raw = text.replace("\r\n", "\n")
    if "\x1b" in raw:
        raw = _ANSI.sub("", raw)
    starts: list[tuple[int, str]] = []
    if _maybe_prompt(raw):
        line, offset = 0, 0
        for found in _PROMPT.finditer(raw):
            line += raw.count("\n", offset, found.start())
            offset = found.start()
            starts.append((line, found["command"]))
            if len(starts) > 64:
                break
    # Outputs before the first prompt and after each one; beyond a few dozen commands the
    # paste is read whole (a bounded cost: each section copies the file's line breaks).
    if not starts or len(starts) > 64:
        yield Section(clean(text), "", "")
        return
    lines = raw.split("\n")
    bounds = [*starts, (len(lines), "")]
    if starts[0][0] > 0:
        yield Section(clean("\n".join(lines[: starts[0][0]])), "", "")
    for (start, command), (end, _) in itertools.pairwise(bounds):
        body = "\n" * (start + 1) + "\n".join(lines[start + 1 : end])
        yield Section(clean(body), command, _node_of(command))


def _node_of(command: str) -> str:
    """The node a talosctl command line names with -n/--nodes, when it names exactly one."""
    words = command.split()
    if words[:1] == ["sudo"]:
        words = words[1:]
    if words[:1] == ["virtctl"] and "console" in words:
        # `virtctl console [-n NS] <vm>`: a tenant node is the VM of its name.
        after = words[words.index("console") + 1 :]
        vms = [
            w for i, w in enumerate(after) if not w.startswith("-") and not _option_value(after, i)
        ]
        return vms[0] if len(vms) == 1 else ""
    # kubectl's -n is a namespace; only talosctl's names nodes.
    found = _NODE_FLAG.search(command) if words[:1] in (["talosctl"], ["tl"], ["t"]) else None
    if found is None:
        return ""
    nodes = [n for n in found["nodes"].strip("'\"").split(",") if n]
    return nodes[0] if len(nodes) == 1 else ""


def _option_value(words: list[str], index: int) -> bool:
    """Whether ``words[index]`` is the value of the option before it (``-n tenant-a``)."""
    return index > 0 and words[index - 1] in ("-n", "--namespace", "--kubeconfig", "--context")


# --- notes, READMEs: prose, not evidence ----------------------------------------------------

_MARKDOWN = re.compile(r"^(?:#{1,6} \S|```|~~~|\|[ \t]*-{3,}|[ \t]*[-*] \[[ x]\] )", re.MULTILINE)
_FENCED = re.compile(r"^[ \t]*(?:```|~~~)", re.MULTILINE)
_YAML_KEYS = re.compile(
    r"^(?:apiVersion|kind|node|metadata|spec|machine|cluster|version|debug|persist):(?: |$)",
    re.MULTILINE,
)
# Lines a tool writes: a stamp, a bracket, a "prog:" or "prog[pid]:" prefix, a key and a value,
# JSON, klog, a table row (cells apart by two spaces or more).
_TOOL_LINE = re.compile(
    # (A leading run of whitespace is taken whole, `\s*+`: left to share with a class that
    # holds a space, a long run made the match quadratic.)
    r"^(?:\s*+[\[{(<|+]|\s*+\d[\w.:/\-+\[\]]{5,}|[IWEF]\d{4} |\s*+[\w./@-]+(?:\[\d+\])?: "
    r"|[A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d|\s*+[\w .()/-]+\s:\s|\S+(?: \S+)*\s{2,}\S|\s{2,}\S"
    # logrus's text format without a terminal ("INFO[0005] ..."), as NVIDIA's validator logs
    r"|(?:TRAC|DEBU|INFO|WARN|ERRO|FATA|PANI)\[\d{4}\] "
    # talosctl health's reporter ("waiting for etcd to be healthy: OK")
    r"|waiting for [^:\n]+: |discovered nodes: )"
    # a time stamp or a Talos or kernel tag anywhere: written by a machine, whatever precedes it
    r"|[^\n]*?(?:\d{4}-\d\d-\d\dT\d\d:\d\d|\[talos\]|\bNVRM: )"
)
# A word of prose: letters, perhaps an apostrophe, perhaps closing punctuation.
_WORD = re.compile(r"^[A-Za-z][a-z']*[,.;:!?)]?$")


def _prose_line(line: str) -> bool:
    tokens = line.split()
    words = sum(1 for token in tokens if _WORD.match(token.lstrip("(\"'`")))
    return words >= 5 and words * 5 >= len(tokens) * 3


def is_prose(text: str) -> bool:
    """Whether ``text`` is written for people (Markdown, notes) rather than by a tool."""
    head = clean(text[:65536])
    prose = tool = rows = 0
    for line in head.splitlines()[:400]:
        if not line.strip():
            continue
        # A message a tool is known to print (a kernel's NVRM sentence pasted without its
        # prefix reads like English) is the tool's, not the writer's; a writer quoting one
        # marks it (`...`).
        if _TOOL_LINE.match(line) or ("`" not in line and message_kinds(line)):
            tool += 1
            rows += line.lstrip().startswith("|")
        elif _prose_line(line):
            prose += 1
    if not _FENCED.search(head) and _YAML_KEYS.search(head):
        # A YAML document (a machine config's own "# Provides ..." comments look like headings).
        return False
    if _MARKDOWN.search(head):
        # A heading or a fence around pasted output is not enough: a Markdown note says so.
        # A heading and a line of prose around a longer paste are the paste's caption (a
        # Markdown table's rows are the note's own, not a tool's).
        return prose >= 1 and prose * 3 > tool - rows
    return prose >= 2 and prose > tool


# A fence line, and how far a paste's caption may run outside its fences.
_FENCE_LINE = re.compile(r"^[ \t]*(?:```|~~~)[^\n]*$", re.MULTILINE)
_CAPTION_LINES = 8


def fenced_paste(text: str) -> str | None:
    """The fenced blocks of a paste with a short caption around them (a heading, a line of
    prose from an issue), everything outside the fences blanked, line for line; None when
    the text has no fence, its caption is long (a note that quotes output) or what the
    fences hold is prose."""
    if "``" not in text and "~~~" not in text:
        return None
    lines = text.split("\n")
    fences = [i for i, line in enumerate(lines) if _FENCE_LINE.match(line)]
    if len(fences) < 2:
        return None
    inside: set[int] = set()
    for start, end in zip(fences[::2], fences[1::2], strict=False):
        inside.update(range(start + 1, end))
    outside = [i for i, line in enumerate(lines) if i not in inside and line.strip()]
    if len(outside) - len(fences) > _CAPTION_LINES or not inside:
        return None
    held = [lines[i] for i in sorted(inside) if lines[i].strip()]
    if not held or 2 * sum(map(_prose_line, held)) >= len(held):
        return None  # a fence around prose (a plan, a quote of a person)
    kept = "\n".join(line if i in inside else "" for i, line in enumerate(lines))
    return None if is_prose(kept) else kept
