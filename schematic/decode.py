"""The Image Factory's strict schematic decoder, and the canonical tree of a schematic.

``decode_fields`` accepts exactly the bodies the factory accepts and refuses the ones it
answers with HTTP 400 (DOMAIN rules: unknown keys anywhere, duplicate keys, a scalar where a
list or mapping belongs, a plain timestamp in a string field, a ``meta.key`` outside 0..255,
and so on). String fields keep the raw scalar text: ``on``, ``0x10`` and ``1e5`` stay strings,
which a YAML 1.1 loader such as PyYAML's ``safe_load`` would not do. Parsing is PyYAML's
composer (libyaml, like go-yaml's own parser); what the nodes *mean* is decided here, by
go-yaml's rules (:mod:`schematic.goscalar`).

This module holds no pydantic model, so ``talos-schematic id`` can hash files without paying
for model construction; :mod:`schematic.model` builds the ``Schematic`` model on top of it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import Any

import yaml

from schematic.canonical import (
    GoMap,
    GoTime,
    emit_document,
    one_line_scalar,
    one_line_scalar_legacy,
    sha256_hex,
)
from schematic.errors import SchematicError
from schematic.goscalar import (
    RESOLVER_FIRST_CHARACTERS,
    all_read_as_strings,
    reads_as_string,
    resolve_plain,
)
from schematic.safe_yaml import YamlLimitError, compose_first

__all__ = [
    "BOOTLOADERS",
    "canonical_schematic",
    "canonical_tree",
    "decode_fields",
    "go_value",
    "schematic_id_of",
]

BOOTLOADERS = ("dual-boot", "sd-boot", "grub")

_UNTAGGED = "?untagged"


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """libyaml's composer with tag resolution left to go-yaml's rules.

    PyYAML would resolve every untagged scalar with its YAML 1.1 regexes; here an untagged
    node (no tag, or go-yaml's non-specific ``!``) keeps a marker tag, so the decoder can tell
    written tags (``!!str 10``) from none and resolve plain text itself.
    """

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        return _UNTAGGED


def decode_fields(body: str | bytes, source: str = "-") -> dict[str, Any]:
    """Decode a request body (YAML or JSON) as strictly as the factory does.

    The result holds only the fields that were set, under their YAML names, with nested
    structs as dicts, lists as lists and ``overlay.options`` as a dict of free-form values.
    """
    text = _text(body, source)
    fields = _simple_fields(text)
    if fields is not None:
        return fields
    return _SchematicDecoder(source, text).schematic(_document(text, source))


def schematic_id_of(
    body: str | bytes, source: str = "-", *, legacy_quoting: bool = False
) -> tuple[str, str]:
    """The ``(id, canonical YAML)`` of a request body."""
    text = _text(body, source)
    fields = _documented_fields(text)
    if fields is not None:
        # Its names are written as they are: joined, with no call per name.
        canonical = _write_simple(fields, legacy_quoting, names_as_they_are=True)
        return sha256_hex(canonical), canonical
    fields = _simple_fields(text)
    if fields is None:
        fields = _SchematicDecoder(source, text).schematic(_document(text, source))
        canonical = canonical_schematic(fields, legacy_quoting=legacy_quoting)
    else:
        # What the fast reader gives is the direct writer's by construction (its keys, tuples
        # of one-line strings): canonical_schematic's writer, without the checks of its input.
        canonical = _write_simple(fields, legacy_quoting)
    return sha256_hex(canonical), canonical


def canonical_schematic(fields: Mapping[str, Any], *, legacy_quoting: bool = False) -> str:
    """The canonical YAML the factory stores and hashes for a schematic's fields.

    The one way every part of the tool builds it: the model, ``id``, the cluster planner and
    the check of factory-stamped bodies. ``fields`` are under their YAML names, as
    :func:`decode_fields` gives them; empty ones are left out as the factory leaves them out.
    """
    direct = _simple_canonical(fields, legacy_quoting)
    if direct is not None:
        return direct
    return emit_document(canonical_tree(fields), legacy_quoting=legacy_quoting)


def canonical_tree(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The tree the factory marshals: empty fields omitted, ``customization`` always there."""
    root: dict[str, Any] = {}
    if fields.get("owner"):
        root["owner"] = fields["owner"]
    overlay = fields.get("overlay") or {}
    if overlay.get("image") or overlay.get("name") or overlay.get("options"):
        written: dict[str, Any] = {
            "image": overlay.get("image", ""),
            "name": overlay.get("name", ""),
        }
        if overlay.get("options"):
            written["options"] = go_value(overlay["options"])
        root["overlay"] = written
    c = fields.get("customization") or {}
    custom: dict[str, Any] = {}
    if c.get("embeddedMachineConfiguration"):
        custom["embeddedMachineConfiguration"] = c["embeddedMachineConfiguration"]
    if c.get("extraKernelArgs"):
        custom["extraKernelArgs"] = list(c["extraKernelArgs"])
    if c.get("meta"):
        custom["meta"] = [{"key": m["key"], "value": m["value"]} for m in c["meta"]]
    extensions = (c.get("systemExtensions") or {}).get("officialExtensions")
    if extensions:
        custom["systemExtensions"] = {"officialExtensions": list(extensions)}
    if c.get("bootloader"):
        custom["bootloader"] = c["bootloader"]
    secure_in = c.get("secureboot") or {}
    secure: dict[str, Any] = {}
    if secure_in.get("enrollKeys"):
        secure["enrollKeys"] = secure_in["enrollKeys"]
    if secure_in.get("includeWellKnownCertificates"):
        secure["includeWellKnownCertificates"] = True
    if secure:
        custom["secureboot"] = secure
    sector_size = (c.get("diskImage") or {}).get("sectorSize")
    if sector_size:
        custom["diskImage"] = {"sectorSize": sector_size}
    root["customization"] = custom
    return root


def go_value(value: Any) -> Any:
    """Turn Python containers into the emitter's Go shapes (maps are written sorted)."""
    if isinstance(value, GoMap):
        return GoMap(tuple((k, go_value(v)) for k, v in value.items))
    if isinstance(value, Mapping):
        return GoMap(tuple((k, go_value(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return [go_value(v) for v in value]
    return value


# --- the common case, read without a YAML parser ---------------------------------------------
#
# Most schematic files are a few block mappings and lists of names, written in one of a few
# ways:
#
#     # a comment, on a line of its own or after a value
#     customization:
#       extraKernelArgs: [console=ttyS0, "net.ifnames=0"]     (a one-line flow list)
#       systemExtensions:
#         officialExtensions:
#           - siderolabs/qemu-guest-agent                  (plain, 'single' or "double" quoted)
#
# For text made only of such lines, with values that go-yaml reads as strings, the fields are
# read straight from the lines. Anything else (a flow mapping, a flow list over several lines,
# a ':' inside a flow item, a backslash escape, anchors, tabs, numbers, unknown or repeated
# keys...) returns None and takes the full decoder, so both paths agree on every input (a test
# checks that they do).

# The usual lines, printable ASCII only (anything else is the full decoder's to judge). A
# plain scalar has no space, no indicator first and no ':' last (that would make it a key);
# quoted scalars stay on their line, single ones with '' for a quote, double ones without
# backslash escapes.
_PLAIN = r"[A-Za-z0-9_./=+][A-Za-z0-9_./=+,:@%~-]*+(?<!:)"
_SINGLE = r"'(?:[ -&(-~]|'')*+'"
_DOUBLE = r'"[ !#-\[\]-~]*+"'
# In a flow list a ',' ends the item and a ':' could start a mapping: neither is read here.
_FLOW_PLAIN = r"[A-Za-z0-9_./=+][A-Za-z0-9_./=+@%~-]*+"
_FLOW_ITEM = rf"(?>{_FLOW_PLAIN}|{_SINGLE}|{_DOUBLE})"
_FLOW = rf"\[[ ]*+(?:{_FLOW_ITEM}(?:[ ]*+,[ ]*+{_FLOW_ITEM})*+[ ]*+)?\]"
_VALUE = rf"(?>{_PLAIN}|{_SINGLE}|{_DOUBLE}|{_FLOW}|\{{\}})"
# A line may end in a comment, after at least one space; comment lines and blank lines may
# come before a key. Elsewhere (inside a run), and for trailing spaces, the text is first
# normalised (_normalised) and read once more: the grammar then need not look for them on
# every line.
_COMMENT_END = r"(?:[ ]++#[ -~]*+)?"
_SKIPPED = r"(?:[ ]*+(?:#[ -~]*+)?\n)*+"
# One space after an item's dash: other spacings are rare and go to the full decoder.
_ITEM = rf"- (?>{_PLAIN}|{_SINGLE}|{_DOUBLE}){_COMMENT_END}"
# A plain name that needs no second look: one of _PLAIN's first characters where go-yaml's
# resolver looks no further, no comment after it. (The letters are spelled out: the string
# module would add an import to start-up.)
_PLAIN_FIRST_CHARACTERS = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./=+"
)
_STRING_FIRST = (
    f"[{re.escape(''.join(sorted(_PLAIN_FIRST_CHARACTERS - RESOLVER_FIRST_CHARACTERS)))}]"
)
_STRING_ITEM = rf"- {_STRING_FIRST}[A-Za-z0-9_./=+,:@%~-]*+(?<!:)"
# The same in a flow list: the items between its brackets.
_STRING_FLOW_ITEM = rf"{_STRING_FIRST}[A-Za-z0-9_./=+@%~-]*+"
_STRING_FLOW = rf"\[[ ]*+({_STRING_FLOW_ITEM}(?:[ ]*+,[ ]*+{_STRING_FLOW_ITEM})*+)[ ]*+\]"
# One match per key: its line, with a value or without, then the "- item" lines that follow
# it at one indent (its run; a look-ahead takes the indent, which each item line repeats).
# Matching a whole run at once is what makes the reader fast: a Python step per key, not per
# line. A run of names that need no second look, the usual run, is taken by a group of its
# own (only if it is the whole run), so that reading it is a split and nothing more. The
# grammar never needs to take back what it matched (a plain scalar holds no space, a quoted
# one ends at its quote), so every repetition is possessive: without backtracking a match
# costs a few steps per character. Any text where no key token starts is taken whole by the
# last group, so that one findall both reads the tokens and shows where they stopped.
_KEY_TOKENS = re.compile(
    rf"{_SKIPPED}([ ]*+)([A-Za-z]++):(?:[ ]++(?:{_STRING_FLOW}|({_VALUE})))?{_COMMENT_END}"
    rf"(?:(?=\n([ ]*+)- )(?:((?:\n\5{_STRING_ITEM})++)(?!\n\5- )|((?:\n\5{_ITEM})++)))?"
    r"(?:\n|\Z)|(?s:(.++))"
)
# A comment runs from its '#' to the end of the line (printable ASCII: anything else stays
# for the grammar to refuse). The pattern opens with its '#' so that a search skips to it.
_COMMENT = re.compile(r"#[ -~]*+")
_BLANK_LINE_OR_TRAILING_SPACES = re.compile(r"^[ ]*+\n|[ ]++$", re.M)
# The value of each item of a run or of a flow list: (plain, single-quoted, double-quoted).
_RUN_ITEM = re.compile(rf"^[ ]*+- (?:({_PLAIN})|'((?:[ -&(-~]|'')*+)'|\"([ !#-\[\]-~]*+)\")", re.M)
_FLOW_VALUE = re.compile(rf"({_FLOW_PLAIN})|'((?:[ -&(-~]|'')*+)'|\"([ !#-\[\]-~]*+)\"")

# Which keys the reader knows, and what each holds: a nested table, "list" of strings, or
# "str". Everything else is left to the full decoder.
_SIMPLE_SCHEMA: dict[str, Any] = {
    "owner": "str",
    "overlay": {"image": "str", "name": "str"},
    "customization": {
        "extraKernelArgs": "list",
        "systemExtensions": {"officialExtensions": "list"},
        "bootloader": "str",
    },
}

# (indent, key, the items of a flow list if all are names that need no second look, any
# other value, the indent of the run of items, the run if all its items are such names, the
# run otherwise, the text after the last token), with "" for what a token does not hold:
# findall gives "" for a group that took no part.
_KeyToken = tuple[str, str, str, str, str, str, str, str]


# --- the layout the factory's documentation shows, in one match ------------------------------
#
# The schematic most files hold, in the order and layout the factory's documentation writes it
# (two spaces an indent, or four as the factory's own canonical text has them):
#
#     overlay:                              (optional: image, then name)
#       image: siderolabs/sbc-raspberrypi
#       name: rpi_generic
#     customization:
#       extraKernelArgs: [console=ttyS0, net.ifnames=0]     (a flow list, ", " between, or a run)
#       systemExtensions:
#         officialExtensions:
#           - siderolabs/qemu-guest-agent
#
# with every name one that go-yaml reads as a string and writes as it is, bare or in quotes,
# and comments anywhere.
#
# One fullmatch checks all of it, and its groups (none inside a repetition, so sre keeps no
# marks per line) are the lists: one split each. Text in any other shape, or with other
# names, takes the key tokens below.
#
# A name written as it is: one of the grammar's plain names (_PLAIN) whose first character is
# one where go-yaml's resolver stops (_STRING_FIRST), or one that holds an '=' (kernel
# arguments: net.ifnames=0, 8250.nr_uarts=5), which no number, boolean, null or timestamp of
# go-yaml's holds, nor any YAML 1.1 word. Either way the writer's _SAFE_PLAIN takes it as it
# is, in both quoting generations (a '.' first it does not take, so that is left out). A test
# checks both rules on names drawn from these patterns. The look-ahead for the '=' stops at
# the end of the item: its line, or in a flow list its ',' or ']'.
_VERBATIM_FIRST = rf"(?:{_STRING_FIRST}|[0-9A-Za-z_+](?=[^=\n]*+=))"
_VERBATIM = rf"{_VERBATIM_FIRST}[A-Za-z0-9_./=+,:@%~-]*+(?<!:)"
_VERBATIM_FLOW = rf"(?:{_STRING_FIRST}|[0-9A-Za-z_+](?=[^=\n,\]]*+=))[A-Za-z0-9_./=+@%~-]*+"
# The indent is taken from the first indented line (two spaces or four) and repeated by
# reference. Groups: that indent, the overlay's image and name, then the kernel arguments and
# the extensions, each as a run of lines or as the inside of a flow list.
_FLOW_INSIDE = rf" \[({_VERBATIM_FLOW}(?:, {_VERBATIM_FLOW})*+)\]\n"
_DOCUMENTED_LAYOUT = re.compile(
    r"(?=[a-z]++:\n(  (?:  )?+)[a-z])"
    rf"(?:overlay:\n\1image: ({_VERBATIM})\n\1name: ({_VERBATIM})\n)?"
    r"customization:\n"
    rf"(?:\1extraKernelArgs:(?:\n((?:\1\1- {_VERBATIM}\n)++)|{_FLOW_INSIDE}))?"
    r"(?:\1systemExtensions:\n\1\1officialExtensions:"
    rf"(?:\n((?:\1\1\1- {_VERBATIM}\n)++)|{_FLOW_INSIDE}))?"
)
# A name may also be quoted, single or double: quoted it is the same string, and the writer
# still writes it bare, when what is inside holds no quote and no backslash (so nothing in it
# is an escape) and is a name the layout takes. Such a pair of quotes stands where a name
# does, after "- ", ": ", ", " or "[" and before the line's end, ',' or ']', with no space,
# comma or bracket inside (so one quoted name is never read as two, nor as a key or a list).
# When every quote of a text is in such a pair, the text without its quotes is matched
# instead. (The pattern opens with the quote, which a search skips to: a look-behind first
# would be tried at every position.)
_QUOTED_NAME = re.compile(
    r"""(['"])(?:(?<=- .)|(?<=: .)|(?<=, .)|(?<=\[.))[^'"\n ,\[\]\\]++\1(?=[\n,\]])"""
)


def _without_comments(text: str) -> str | None:
    """The text without its comments (and the spaces before them; a comment on a line of its
    own goes with its line), or None where a '#' may be something else.

    A '#' starts a comment after a space or at a line's start; one after anything else
    ("a#b") is part of a name, and the text is left to the key tokens. So is a comment with
    anything but printable ASCII in it, for the grammar to refuse. One inside quotes cuts
    the quoted name short, and the quotes left unpaired leave the text to the key tokens too.
    A loop of searches in C, a step per comment: a pattern with a space or a line's start
    first would be tried at almost every position.
    """
    kept: list[str] = []
    start = 0
    found = text.find("#")
    while found >= 0:
        if found and text[found - 1] not in " \n":
            return None
        end = text.find("\n", found)
        if end < 0:
            return None
        comment = text[found:end]
        if not (comment.isascii() and comment.isprintable()):
            return None
        before = text[start:found].rstrip(" ")
        kept.append(before)
        # On a line of its own (nothing before it since the last line break), its line break
        # goes too; after a value the value's line break stays.
        start = end + 1 if not before or before[-1] == "\n" else end
        found = text.find("#", end)
    kept.append(text[start:])
    return "".join(kept)


def _documented_fields(text: str) -> dict[str, Any] | None:
    """The fields of a text in the documented layout, its names all written as they are
    (lists, not tuples), or None for any other text."""
    if "#" in text:
        uncommented = _without_comments(text)
        if uncommented is None:
            return None
        text = uncommented
    if "'" in text or '"' in text:
        quotes = text.count("'") + text.count('"')
        if 2 * len(_QUOTED_NAME.findall(text)) != quotes:
            return None
        text = text.replace("'", "").replace('"', "")
    match = _DOCUMENTED_LAYOUT.fullmatch(text)
    if match is None:
        return None
    unit, image, name, argument_run, argument_flow, extension_run, extension_flow = match.groups()
    custom: dict[str, Any] = {}
    # A run is "<indent>- a\n<indent>- b\n": what is between its first "- " and its last
    # line break, split at each line's start.
    if argument_run:
        indent = unit * 2
        custom["extraKernelArgs"] = argument_run[len(indent) + 2 : -1].split(f"\n{indent}- ")
    elif argument_flow:
        custom["extraKernelArgs"] = argument_flow.split(", ")
    if extension_run:
        indent = unit * 3
        names = extension_run[len(indent) + 2 : -1].split(f"\n{indent}- ")
        custom["systemExtensions"] = {"officialExtensions": names}
    elif extension_flow:
        custom["systemExtensions"] = {"officialExtensions": extension_flow.split(", ")}
    if image is None:
        return {"customization": custom}
    return {"overlay": {"image": image, "name": name}, "customization": custom}


def _simple_fields(text: str) -> dict[str, Any] | None:
    tokens: list[_KeyToken] = _KEY_TOKENS.findall(text)
    if tokens and tokens[-1][7]:
        if tokens[-1][7].strip(" \n"):
            # The tokens stopped before the end: normalised, the text may read to its end.
            tokens = _KEY_TOKENS.findall(_normalised(text))
            if tokens and tokens[-1][7].strip(" \n"):
                return None
        if tokens and tokens[-1][7]:
            tokens.pop()
    if not tokens or tokens[0][0]:
        return None
    parsed, end = _simple_block(tokens, 0, 0, _SIMPLE_SCHEMA)
    return parsed if end == len(tokens) else None


def _normalised(text: str) -> str:
    """The text without its comments (and the spaces before them), blank lines and trailing
    spaces; a comment on a line of its own goes with its line.

    A '#' starts a comment at a line's start or after a space. One after a space inside a
    quoted scalar is cut too, which leaves the quote open: the grammar then refuses the line,
    as it refuses a '#' after anything else ("a#b"), which stays.
    """
    if "#" in text:
        kept: list[str] = []
        at = 0
        for comment in _COMMENT.finditer(text):
            start = comment.start()
            if start and text[start - 1] not in " \n":
                continue
            kept.append(text[at:start])
            at = comment.end()
        kept.append(text[at:])
        text = "".join(kept)
    return _BLANK_LINE_OR_TRAILING_SPACES.sub("", text)


def _simple_block(
    tokens: list[_KeyToken], start: int, indent: int, schema: dict[str, Any]
) -> tuple[dict[str, Any] | None, int]:
    """The block mapping at ``indent`` from token ``start``; (None, _) when not simple."""
    fields: dict[str, Any] = {}
    at = start
    count = len(tokens)
    while at < count:
        line_indent, key, string_flow, value, run_indent, string_run, other_run, _ = tokens[at]
        if len(line_indent) != indent:
            if len(line_indent) < indent:
                break
            return None, at
        kind = schema.get(key)
        if kind is None or key in fields:
            return None, at
        at += 1
        items: tuple[str, ...] | None
        if string_run or other_run:
            # Items may sit deeper than the key or, as YAML allows, at the key's own indent.
            if kind != "list" or value or string_flow or len(run_indent) < indent:
                return None, at
            if string_run:
                # One split at the line starts, in C, gives the names.
                names = string_run.split("\n" + run_indent + "- ")
                del names[0]
                items = tuple(names)
            else:
                items = _run_items(other_run, run_indent)
        elif string_flow:
            if kind != "list":
                return None, at
            items = tuple(map(str.strip, string_flow.split(",")))
        elif not value:
            # "key:" and then deeper keys; with nothing deeper it is null, the full decoder's.
            if not isinstance(kind, dict) or at == count or len(tokens[at][0]) <= indent:
                return None, at
            nested, at = _simple_block(tokens, at, len(tokens[at][0]), kind)
            if nested is None:
                return None, at
            fields[key] = nested
            continue
        elif value[0] == "[":
            items = _flow_items(value) if kind == "list" else None
        elif value == "{}":
            if not isinstance(kind, dict):
                return None, at
            fields[key] = {}
            continue
        else:
            scalar = _simple_scalar(value) if kind == "str" else None
            if scalar is not None and key == "bootloader":
                scalar = scalar.lower()
                scalar = "" if scalar == "none" else scalar if scalar in BOOTLOADERS else None
            if scalar is None:
                return None, at
            fields[key] = scalar
            continue
        if items is None:
            return None, at
        fields[key] = items
    return fields, at


def _simple_scalar(value: str) -> str | None:
    """A value as the string go-yaml reads, or None when it reads as something else."""
    if value[0] == "'":
        return value[1:-1].replace("''", "'")
    if value[0] == '"':
        return value[1:-1]
    return value if reads_as_string(value) else None


def _run_items(run: str, indent: str) -> tuple[str, ...] | None:
    """The strings of a run of "- item" lines (the run opens with a line break)."""
    if "'" in run or '"' in run or "#" in run:
        return _strings(_RUN_ITEM.findall(run))
    # Plain names one to a line: split at the line starts. The split is one pass in C, and
    # so is the check of the names' first characters.
    names = run.split("\n" + indent + "- ")
    del names[0]
    # ("<<", the merge key, is no plain scalar of the grammar: it cannot start one.)
    return tuple(names) if all_read_as_strings(names) else None


def _flow_items(value: str) -> tuple[str, ...] | None:
    """The strings of a one-line flow list, ``[`` and ``]`` included."""
    if "'" in value or '"' in value:
        return _strings(_FLOW_VALUE.findall(value))
    inner = value[1:-1]
    if not inner.strip(" "):
        return ()
    names = list(map(str.strip, inner.split(",")))
    return tuple(names) if all_read_as_strings(names) else None


def _strings(values: list[tuple[str, str, str]]) -> tuple[str, ...] | None:
    """The strings of (plain, single-quoted, double-quoted) matches, or None if one is not."""
    items: list[str] = []
    for plain, single, double in values:
        if plain:
            if not reads_as_string(plain):
                return None
            items.append(plain)
        else:
            # An empty quoted scalar leaves all three empty: "" either way.
            items.append(single.replace("''", "'") if single else double)
    return tuple(items)


_DIRECT_FIELDS = frozenset({"owner", "overlay", "customization"})
_DIRECT_OVERLAY = frozenset({"image", "name"})
_DIRECT_CUSTOMIZATION = frozenset({"extraKernelArgs", "systemExtensions", "bootloader"})
_LINE_BREAK = re.compile("[\r\n\x85\u2028\u2029]")


def _simple_canonical(fields: Mapping[str, Any], legacy_quoting: bool) -> str | None:
    """The canonical YAML of fields of the usual shape, written directly; None for others.

    The usual shape is a handful of one-line strings (owner, overlay image and name, kernel
    arguments, extension names, bootloader), so the layout is spelled out here rather than
    walked, with :func:`canonical_tree`'s rules for what is left out; a test checks it equals
    :func:`emit_document` of that tree. Lists are joined in one go, each item written by a
    cached function.
    """
    custom = fields.get("customization") or {}
    overlay = fields.get("overlay") or {}
    extensions = custom.get("systemExtensions") or {}
    if (
        not _DIRECT_FIELDS.issuperset(fields)
        or not _DIRECT_OVERLAY.issuperset(overlay)
        or not _DIRECT_CUSTOMIZATION.issuperset(custom)
        or len(extensions) > ("officialExtensions" in extensions)
    ):
        return None
    try:
        joined = "".join(
            (
                fields.get("owner") or "",
                overlay.get("image") or "",
                overlay.get("name") or "",
                custom.get("bootloader") or "",
                *(custom.get("extraKernelArgs") or ()),
                *(extensions.get("officialExtensions") or ()),
            )
        )
    except TypeError:
        return None  # not strings: the emitter's
    # No line break: a literal block's layout, and how a quoted scalar folds a break, depend
    # on the indent, which the direct writer does not track. ASCII has two line breaks, and
    # isascii reads a flag where a search reads every character.
    if joined.isascii():
        if "\n" in joined or "\r" in joined:
            return None
    elif _LINE_BREAK.search(joined):
        return None
    return _write_simple(fields, legacy_quoting)


def _write_simple(
    fields: Mapping[str, Any], legacy_quoting: bool, names_as_they_are: bool = False
) -> str:
    """The direct writer's text for fields it takes (:func:`_simple_canonical` checks that).

    ``names_as_they_are``: the caller knows that each list item is written as it is (as
    :func:`_documented_fields` does), so the lists are joined without a call per item.
    """
    custom = fields.get("customization") or {}
    overlay = fields.get("overlay") or {}
    owner = fields.get("owner") or ""
    image, name = overlay.get("image") or "", overlay.get("name") or ""
    args = custom.get("extraKernelArgs") or ()
    names = (custom.get("systemExtensions") or {}).get("officialExtensions") or ()
    bootloader = custom.get("bootloader") or ""
    scalar = one_line_scalar_legacy if legacy_quoting else one_line_scalar
    lines: list[str] = []
    if owner:
        lines.append(f"owner: {scalar(owner)}\n")
    if image or name:
        lines.append(f"overlay:\n    image: {scalar(image)}\n    name: {scalar(name)}\n")
    if not (args or names or bootloader):
        lines.append("customization: {}\n")
        return "".join(lines)
    lines.append("customization:\n")
    if args:
        items = "\n        - ".join(args if names_as_they_are else map(scalar, args))
        lines.append(f"    extraKernelArgs:\n        - {items}\n")
    if names:
        items = "\n            - ".join(names if names_as_they_are else map(scalar, names))
        lines.append(f"    systemExtensions:\n        officialExtensions:\n            - {items}\n")
    if bootloader:
        lines.append(f"    bootloader: {scalar(bootloader)}\n")
    return "".join(lines)


# --- parsing -------------------------------------------------------------------------------------


def _text(body: str | bytes, source: str) -> str:
    if isinstance(body, str):
        return body
    try:
        # No BOM starts with an ASCII byte: the usual file decodes at once.
        if body[:1] < b"\x80":
            return body.decode()
        if body.startswith((b"\xff\xfe", b"\xfe\xff")):
            return body.decode("utf-16")
        # "utf-8-sig" is a codec written in Python; the BOM is dropped here instead.
        return (body[3:] if body.startswith(b"\xef\xbb\xbf") else body).decode()
    except UnicodeDecodeError as err:
        raise SchematicError(f"not valid UTF-8 text ({err.reason})", source=source) from None


def _untagged(kind: Any, value: Any, implicit: Any) -> str:
    return _UNTAGGED


def _document(text: str, source: str) -> yaml.Node:
    """The first document's root node, composed with go-yaml's alias and depth rules.

    Aliases are counted, never expanded, while composing (:mod:`schematic.safe_yaml`): a
    document the factory would refuse as "excessive aliasing" is refused here before any value
    is built. An anchor may be defined again, as go-yaml allows; the later definition wins.
    """
    try:
        text = _with_quote_escapes_resolved(text)
        if "\\/" in text:
            _refuse_slash_escapes(text)
        node = compose_first(text, _untagged)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        reason = " ".join(filter(None, [err.context, err.problem]))
        if isinstance(err, YamlLimitError):
            raise SchematicError(
                reason, source=source, line=mark.line + 1 if mark else None
            ) from None
        raise SchematicError(
            f"invalid YAML: {reason}", source=source, line=mark.line + 1 if mark else None
        ) from None
    except yaml.YAMLError as err:
        raise SchematicError(f"invalid YAML: {err}", source=source) from None
    if node is None:
        raise SchematicError("empty schematic: the body holds no YAML document", source=source)
    return node


# The two places where go-yaml's scanner and libyaml's disagree on double-quoted escapes:
# go-yaml reads \' as a quote and refuses \/ (which JSON encoders such as PHP's write for "/");
# libyaml does the opposite. Both are settled here, before libyaml sees the text.


def _refuse_slash_escapes(text: str) -> None:
    for token in yaml.scan(text, Loader=_Loader):
        if isinstance(token, yaml.ScalarToken) and token.style == '"':
            raw = text[token.start_mark.index : token.end_mark.index]
            at = 0
            while (at := raw.find("\\", at)) != -1:
                if raw[at + 1 : at + 2] == "/":
                    raise yaml.scanner.ScannerError(
                        "while scanning a double-quoted scalar",
                        token.start_mark,
                        "found unknown escape character '/'",
                        token.start_mark,
                    )
                at += 2


def _double_quoted_spans(text: str) -> list[tuple[int, int]] | None:
    """``(start, end)`` of each double-quoted scalar as libyaml scans ``text``; None on error."""
    spans = []
    try:
        for token in yaml.scan(text, Loader=_Loader):
            if isinstance(token, yaml.ScalarToken) and token.style == '"':
                spans.append((token.start_mark.index, token.end_mark.index))
    except yaml.YAMLError:
        return None
    return spans


def _with_quote_escapes_resolved(text: str) -> str:
    """``text`` with each ``\\'`` inside a double-quoted scalar written as a plain quote.

    libyaml refuses the escape, so it cannot say where the double-quoted scalars are; with every
    ``\\'`` written as the same-length ``\\"`` it scans the same tokens (outside double quotes
    only a single-quoted scalar gives a quote meaning, and that case is caught below). One scan
    finds the scalars, the escapes inside them are rewritten, and a second scan confirms each
    rewrite sits inside a double-quoted scalar: linear in the text, whatever the escape count.
    """
    if "\\'" not in text:
        return text
    spans = _double_quoted_spans(text.replace("\\'", '\\"'))
    if spans is not None:
        pieces: list[str] = []
        rewritten: list[int] = []
        length = done = 0
        for start, end in spans:
            at = start + 1
            while (at := text.find("\\", at, end)) != -1:
                if text[at + 1 : at + 2] == "'":
                    pieces.append(text[done:at])
                    length += at - done
                    rewritten.append(length)
                    done = at + 1  # drop the backslash, keep the quote
                at += 2
        pieces.append(text[done:])
        result = "".join(pieces)
        if _all_inside(rewritten, _double_quoted_spans(result)):
            return result
    return _quote_escapes_one_by_one(text)


def _all_inside(positions: list[int], spans: list[tuple[int, int]] | None) -> bool:
    if spans is None:
        return False
    index = 0
    for position in positions:  # both in text order
        while index < len(spans) and spans[index][1] <= position:
            index += 1
        if index == len(spans) or not spans[index][0] < position:
            return False
    return True


# A document that defeats the one-scan rewrite (a ``\\'`` closing a single-quoted scalar) is
# rewritten one libyaml stop at a time, each stop costing a scan: bounded, as that is quadratic.
_ONE_BY_ONE_LIMIT = 64


def _quote_escapes_one_by_one(text: str) -> str:
    for _ in range(min(text.count("\\'"), _ONE_BY_ONE_LIMIT)):
        try:
            for _token in yaml.scan(text, Loader=_Loader):
                pass
            return text
        except yaml.scanner.ScannerError as err:
            mark = err.problem_mark
            if mark is None or "unknown escape character" not in str(err.problem):
                return text
            # libyaml's mark is at the backslash (PyYAML's Python scanner's at the quote).
            at = next((i for i in (mark.index, mark.index - 1) if text[i : i + 2] == "\\'"), None)
            if at is None:
                return text
            text = text[:at] + "'" + text[at + 2 :]
    return text


# --- decoding with go-yaml's rules ---------------------------------------------------------------

_KIND_NAMES = {"ScalarNode": "scalar", "SequenceNode": "list", "MappingNode": "mapping"}


class _Decoder:
    def __init__(self, source: str, text: str) -> None:
        self.source = source
        self.text = text

    def fail(self, node: yaml.Node | None, path: str, reason: str) -> SchematicError:
        line = node.start_mark.line + 1 if node is not None else None
        return SchematicError(reason, source=self.source, path=path, line=line)

    # scalars

    def resolved(self, node: yaml.ScalarNode) -> tuple[str, Any]:
        if node.style:  # quoted or block: a string whatever it says (plain is None or "")
            return "str", node.value
        if node.tag == _UNTAGGED:
            return _plain(node.value)
        return self.explicitly_tagged(node)

    def explicitly_tagged(self, node: yaml.ScalarNode) -> tuple[str, Any]:
        """A plain scalar with a tag of its own (``!!str 10``, ``!custom x``)."""
        tag = str(node.tag)
        standard = tag.removeprefix("tag:yaml.org,2002:")
        if standard == tag or standard not in ("null", "bool", "int", "float", "timestamp"):
            # go-yaml keeps the text of anything it cannot resolve by tag.
            return "str", node.value
        found = resolve_plain(node.value)
        if found[0] == standard:
            return found
        if standard == "float" and found[0] == "int":
            return "float", float(found[1])
        raise self.fail(node, "", f"cannot read {node.value!r} as !!{standard}")

    def is_null(self, node: yaml.Node) -> bool:
        return isinstance(node, yaml.ScalarNode) and self.resolved(node)[0] == "null"

    def string(self, node: yaml.Node, path: str) -> str:
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail(node, path, f"expected a string, found a {_kind(node)}")
        tag, _ = self.resolved(node)
        if tag == "null":
            return ""
        if tag == "timestamp":
            raise self.fail(
                node, path, f"{node.value!r} reads as a timestamp, not a string; quote it"
            )
        return str(node.value)

    def string_list(self, node: yaml.Node, path: str) -> tuple[str, ...]:
        items = self.sequence(node, path)
        return tuple(
            self.string(item, f"{path}[{i}]")
            for i, item in enumerate(items)
            if not self.is_null(item)
        )

    def boolean(self, node: yaml.Node, path: str) -> bool:
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail(node, path, f"expected true or false, found a {_kind(node)}")
        tag, value = self.resolved(node)
        if tag == "null":
            return False
        if tag == "bool":
            return bool(value)
        if tag == "str" and value in _YAML11_TRUE:
            return True
        if tag == "str" and value in _YAML11_FALSE:
            return False
        raise self.fail(node, path, f"expected true or false, found {node.value!r}")

    def unsigned(self, node: yaml.Node, path: str, limit: int) -> int:
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail(node, path, f"expected an integer, found a {_kind(node)}")
        tag, value = self.resolved(node)
        if tag == "null":
            return 0
        number: int | None = None
        if tag == "int":
            number = value
        elif tag == "float" and value == value and 0 <= value <= 2.0**64:
            number = int(value) if float(int(value)) == value else None
        if number is None or not 0 <= number <= limit:
            raise self.fail(
                node, path, f"expected an integer from 0 to {limit}, found {node.value!r}"
            )
        return number

    # collections

    def sequence(self, node: yaml.Node, path: str) -> list[yaml.Node]:
        if self.is_null(node):
            return []
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, path, f"expected a list, found a {_kind(node)}")
        return list(node.value)

    def pairs(self, node: yaml.MappingNode, path: str) -> list[tuple[yaml.Node, yaml.Node]]:
        """The mapping's pairs with duplicates refused and ``<<`` merges applied."""
        seen: dict[tuple[str, str], yaml.Node] = {}
        regular: list[tuple[yaml.Node, yaml.Node]] = []
        merge: yaml.Node | None = None
        for key, value in node.value:
            identity = (type(key).__name__, key.value if isinstance(key, yaml.ScalarNode) else "")
            if identity in seen:
                first = seen[identity].start_mark.line + 1
                raise self.fail(
                    key, path, f"mapping key {identity[1]!r} already defined at line {first}"
                )
            seen[identity] = key
            if isinstance(key, yaml.ScalarNode) and not key.style and key.value == "<<":
                merge = value
            else:
                regular.append((key, value))
        if merge is None:
            return regular
        present = {_pair_identity(self, k) for k, _ in regular}
        merged = list(regular)
        sources = merge.value if isinstance(merge, yaml.SequenceNode) else [merge]
        for source in sources:
            if not isinstance(source, yaml.MappingNode):
                raise self.fail(source, path, "a << merge needs a mapping or a list of mappings")
            for key, value in self.pairs(source, path):
                identity = _pair_identity(self, key)
                if identity not in present:
                    present.add(identity)
                    merged.append((key, value))
        return merged

    def struct(
        self, node: yaml.Node, path: str, fields: Mapping[str, Callable[[yaml.Node, str], Any]]
    ) -> dict[str, Any]:
        if self.is_null(node):
            return {}
        if not isinstance(node, yaml.MappingNode):
            what = path or "the schematic"
            raise self.fail(node, path, f"expected a mapping for {what}, found a {_kind(node)}")
        out: dict[str, Any] = {}
        for key, value in self.pairs(node, path):
            if self.is_null(key):
                continue  # go-yaml skips a null key in a struct without complaint
            name = self.string(key, path)
            child = f"{path}.{name}" if path else name
            handler = fields.get(name)
            if handler is None:
                known = ", ".join(fields)
                raise self.fail(key, child, f"unknown field {name!r} (known here: {known})")
            out[name] = handler(value, child)
        return out

    # free-form values (overlay.options)

    def options(self, node: yaml.Node, path: str) -> dict[str, Any]:
        if self.is_null(node):
            return {}
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, path, f"expected a mapping, found a {_kind(node)}")
        out: dict[str, Any] = {}
        for key, value in self.pairs(node, path):
            if self.is_null(key):
                continue  # a null key cannot become a Go string key: go-yaml drops the pair
            name = self.string(key, path)
            out[name] = self.any(value, f"{path}.{name}")
        return out

    def any(self, node: yaml.Node, path: str) -> Any:
        if isinstance(node, yaml.ScalarNode):
            tag, value = self.resolved(node)
            if tag == "timestamp":
                return GoTime(value)
            return value
        if isinstance(node, yaml.SequenceNode):
            return [self.any(item, f"{path}[{i}]") for i, item in enumerate(node.value)]
        assert isinstance(node, yaml.MappingNode)
        pairs = self.pairs(node, path)
        if all(self._string_keyed(key) for key, _ in pairs):
            items = tuple(
                (str(key.value), self.any(value, f"{path}.{key.value}")) for key, value in pairs
            )
            return GoMap(items)
        # A Go map keyed by typed values: `~` and `null`, or `1` and `0x1`, are one key, and the
        # later pair wins (the duplicate check above compares only the written text).
        typed: dict[tuple[str, Any], tuple[Any, Any]] = {}
        for key, value in pairs:
            if not isinstance(key, yaml.ScalarNode):
                raise self.fail(key, path, "a list or mapping cannot be a mapping key")
            go_key = self.any(key, path)
            typed[_go_key_identity(go_key)] = (go_key, self.any(value, f"{path}.{key.value}"))
        return GoMap(tuple(typed.values()))

    def _string_keyed(self, key: yaml.Node) -> bool:
        return isinstance(key, yaml.ScalarNode) and self.resolved(key)[0] in ("str", "merge")


def _go_key_identity(key: Any) -> tuple[str, Any]:
    """Equality of Go map keys: same type and value (NaN equals nothing, not even itself)."""
    if isinstance(key, float) and key != key:
        return "nan", object()
    return type(key).__name__, key


def _pair_identity(decoder: _Decoder, key: yaml.Node) -> tuple[str, Any]:
    if isinstance(key, yaml.ScalarNode):
        tag, value = decoder.resolved(key)
        return tag, value if not isinstance(value, float) or value == value else "nan"
    return type(key).__name__, id(key)


@functools.lru_cache(maxsize=65536)
def _plain(value: str) -> tuple[str, Any]:
    """go-yaml's reading of an untagged plain scalar (``<<`` is the merge key)."""
    if value == "<<":
        return "merge", "<<"
    return resolve_plain(value)


_YAML11_TRUE = frozenset(["y", "Y", "yes", "Yes", "YES", "on", "On", "ON"])
_YAML11_FALSE = frozenset(["n", "N", "no", "No", "NO", "off", "Off", "OFF"])


def _kind(node: yaml.Node) -> str:
    return _KIND_NAMES.get(type(node).__name__, "node")


class _SchematicDecoder(_Decoder):
    """The schematic's own fields, decoded into plain values under their YAML names."""

    def schematic(self, node: yaml.Node) -> dict[str, Any]:
        return self.struct(
            node,
            "",
            {"owner": self.string, "overlay": self.overlay, "customization": self.customization},
        )

    def overlay(self, node: yaml.Node, path: str) -> dict[str, Any]:
        return self.struct(
            node, path, {"image": self.string, "name": self.string, "options": self.options}
        )

    def customization(self, node: yaml.Node, path: str) -> dict[str, Any]:
        return self.struct(
            node,
            path,
            {
                "embeddedMachineConfiguration": self.string,
                "extraKernelArgs": self.string_list,
                "meta": self.meta_list,
                "systemExtensions": self.system_extensions,
                "bootloader": self.bootloader,
                "secureboot": self.secureboot,
                "diskImage": self.disk_image,
            },
        )

    def meta_list(self, node: yaml.Node, path: str) -> list[dict[str, Any]]:
        values = []
        for i, item in enumerate(self.sequence(node, path)):
            if self.is_null(item):
                continue
            fields = self.struct(item, f"{path}[{i}]", {"key": self.meta_key, "value": self.string})
            values.append({"key": fields.get("key", 0), "value": fields.get("value", "")})
        return values

    def meta_key(self, node: yaml.Node, path: str) -> int:
        return self.unsigned(node, path, 255)

    def sector_size(self, node: yaml.Node, path: str) -> int:
        return self.unsigned(node, path, 2**64 - 1)

    def system_extensions(self, node: yaml.Node, path: str) -> dict[str, Any]:
        return self.struct(node, path, {"officialExtensions": self.string_list})

    def secureboot(self, node: yaml.Node, path: str) -> dict[str, Any]:
        return self.struct(
            node, path, {"enrollKeys": self.string, "includeWellKnownCertificates": self.boolean}
        )

    def disk_image(self, node: yaml.Node, path: str) -> dict[str, Any]:
        return self.struct(node, path, {"sectorSize": self.sector_size})

    def bootloader(self, node: yaml.Node, path: str) -> str:
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail(node, path, f"expected a bootloader name, found a {_kind(node)}")
        if self.is_null(node):
            return ""
        name = str(node.value).lower()
        if name == "none":
            return ""
        if name not in BOOTLOADERS:
            choices = ", ".join(("none", *BOOTLOADERS))
            raise self.fail(node, path, f"unknown bootloader {node.value!r} (one of: {choices})")
        return name
