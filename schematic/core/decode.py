"""The Image Factory's strict schematic decoder, and the canonical tree of a schematic.

``decode_fields`` accepts exactly the bodies the factory accepts and refuses the ones it
answers with HTTP 400 (DOMAIN rules: unknown keys anywhere, duplicate keys, a scalar where a
list or mapping belongs, a plain timestamp in a string field, a ``meta.key`` outside 0..255,
and so on). String fields keep the raw scalar text: ``on``, ``0x10`` and ``1e5`` stay strings,
which a YAML 1.1 loader such as PyYAML's ``safe_load`` would not do. Parsing is PyYAML's
composer (libyaml, like go-yaml's own parser); what the nodes *mean* is decided here, by
go-yaml's rules (:mod:`schematic.core.goscalar`).

This module holds no pydantic model, so ``talos-schematic id`` can hash files without paying
for model construction; :mod:`schematic.core.model` builds the ``Schematic`` model on top of it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import yaml

from schematic.core.canonical import GoMap, GoTime, emit_document, sha256_hex
from schematic.core.goscalar import YAML11_BOOLEANS, resolve_plain
from schematic.errors import SchematicError
from schematic.safe_yaml import YamlLimitError, compose_first

__all__ = [
    "BOOTLOADERS",
    "canonical_schematic",
    "canonical_tree",
    "decode_fields",
    "decode_fields_at",
    "go_value",
    "schematic_id_of",
]

BOOTLOADERS = ("dual-boot", "sd-boot", "grub")

_UNTAGGED = "?untagged"
# libyaml's parser alone: the loader classes also build a constructor and a resolver per
# document, which the composer, given its own resolution, never uses.
_PARSER: type[Any] = getattr(getattr(yaml, "cyaml", None), "CParser", yaml.SafeLoader)


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
    structs as dicts, lists of strings as tuples and ``overlay.options`` as a dict of
    free-form values.
    """
    text = _text(body, source)
    return _SchematicDecoder(source, text).schematic(_document(text, source))


def decode_fields_at(
    body: str | bytes, path: Sequence[str | int], source: str = "-"
) -> dict[str, Any]:
    """:func:`decode_fields` of the schematic found at ``path`` (mapping keys and list indices)
    inside a larger document — a talhelper node's ``schematic:`` — from its own nodes, by the
    same rules: nothing is re-dumped, so each scalar means what it means to the factory."""
    text = _text(body, source)
    node = _document(text, source)
    for step in path:
        found = None
        if isinstance(step, int) and isinstance(node, yaml.SequenceNode):
            found = node.value[step] if 0 <= step < len(node.value) else None
        elif isinstance(step, str) and isinstance(node, yaml.MappingNode):
            found = next(
                (value for key, value in node.value if getattr(key, "value", None) == step),
                None,
            )
        if found is None:
            where = ".".join(str(part) for part in path)
            raise SchematicError(f"no schematic at {where}", source=source)
        node = found
    return _SchematicDecoder(source, text).schematic(node)


def schematic_id_of(
    body: str | bytes, source: str = "-", *, legacy_quoting: bool = False
) -> tuple[str, str]:
    """The ``(id, canonical YAML)`` of a request body: :func:`decode_fields`, then
    :func:`canonical_schematic`, then SHA-256."""
    canonical = canonical_schematic(decode_fields(body, source), legacy_quoting=legacy_quoting)
    return sha256_hex(canonical), canonical


def canonical_schematic(fields: Mapping[str, Any], *, legacy_quoting: bool = False) -> str:
    """The canonical YAML the factory stores and hashes for a schematic's fields.

    The one way every part of the tool builds it: the model, ``id``, the cluster planner and
    the check of factory-stamped bodies. ``fields`` are under their YAML names, as
    :func:`decode_fields` gives them; empty ones are left out as the factory leaves them out.
    """
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
        # go-yaml reads a number out of the int64 range as text, whatever its length.
        node = compose_first(text, _untagged, loader=_PARSER, longest_number=None)
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


# A struct field's reader: the decoder, the value's node, the field's path.
_Field = Callable[[Any, yaml.Node, str], Any]


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
        if type(node) is not yaml.ScalarNode:
            raise self.fail(node, path, f"expected a string, found a {_kind(node)}")
        tag = self.resolved(node)[0]
        if tag == "null":
            return ""
        if tag == "timestamp":
            raise self.fail(
                node, path, f"{node.value!r} reads as a timestamp, not a string; quote it"
            )
        return str(node.value)

    def string_list(self, node: yaml.Node, path: str) -> tuple[str, ...]:
        strings: list[str] = []
        for index, item in enumerate(self.sequence(node, path)):
            if type(item) is yaml.ScalarNode:
                tag = self.resolved(item)[0]
                if tag == "null":
                    continue  # go-yaml drops a null item
                if tag != "timestamp":
                    strings.append(str(item.value))
                    continue
            # The item's path is built for its error only: per item it costs more than reading.
            strings.append(self.string(item, f"{path}[{index}]"))
        return tuple(strings)

    def boolean(self, node: yaml.Node, path: str) -> bool:
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail(node, path, f"expected true or false, found a {_kind(node)}")
        tag, value = self.resolved(node)
        if tag == "null":
            return False
        if tag == "bool":
            return bool(value)
        if tag == "str" and value in YAML11_BOOLEANS:
            # go-yaml still reads YAML 1.1's words into a bool field (yes, off, Y...).
            return YAML11_BOOLEANS[value]
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
        if type(node) is yaml.SequenceNode:
            items: list[yaml.Node] = node.value
            return items
        if self.is_null(node):
            return []
        raise self.fail(node, path, f"expected a list, found a {_kind(node)}")

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

    def struct(self, node: yaml.Node, path: str, fields: Mapping[str, _Field]) -> dict[str, Any]:
        """A Go struct: each known key read by its field's function, the others refused."""
        if type(node) is not yaml.MappingNode:
            if self.is_null(node):
                return {}
            what = path or "the schematic"
            raise self.fail(node, path, f"expected a mapping for {what}, found a {_kind(node)}")
        out: dict[str, Any] = {}
        for key, value in self.pairs(node, path):
            tag = self.resolved(key)[0] if type(key) is yaml.ScalarNode else ""
            if tag == "null":
                continue  # go-yaml skips a null key in a struct without complaint
            # A key read as a string, the usual key, needs no second look; string() refuses
            # the others with their reason.
            name = str(key.value) if tag == "str" else self.string(key, path)
            child = f"{path}.{name}" if path else name
            handler = fields.get(name)
            if handler is None:
                known = ", ".join(fields)
                reason = f"unknown field {name!r} (known here: {known})"
                if not path and name in _CUSTOMIZATION_FIELDS:
                    # The usual slip: a customization key written at the top (the factory
                    # refuses the schematic the same way).
                    reason += f"; {name} belongs under customization:"
                elif not path and name in _CLUSTER_FILE_KEYS:
                    reason += (
                        "; this is a cluster file, not a schematic: `talos-schematic generate "
                        "CLUSTER -f schematic --pool NAME` prints a pool's schematic"
                    )
                raise self.fail(key, child, reason)
            out[name] = handler(self, value, child)
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


def _kind(node: yaml.Node) -> str:
    return _KIND_NAMES.get(type(node).__name__, "node")


class _SchematicDecoder(_Decoder):
    """The schematic's own fields, decoded into plain values under their YAML names."""

    def schematic(self, node: yaml.Node) -> dict[str, Any]:
        return self.struct(node, "", _SCHEMATIC_FIELDS)

    def overlay(self, node: yaml.Node, path: str) -> dict[str, Any]:
        return self.struct(node, path, _OVERLAY_FIELDS)

    def customization(self, node: yaml.Node, path: str) -> dict[str, Any]:
        return self.struct(node, path, _CUSTOMIZATION_FIELDS)

    def meta_list(self, node: yaml.Node, path: str) -> list[dict[str, Any]]:
        values = []
        for i, item in enumerate(self.sequence(node, path)):
            if self.is_null(item):
                continue
            fields = self.struct(item, f"{path}[{i}]", _META_FIELDS)
            values.append({"key": fields.get("key", 0), "value": fields.get("value", "")})
        return values

    def meta_key(self, node: yaml.Node, path: str) -> int:
        return self.unsigned(node, path, 255)

    def sector_size(self, node: yaml.Node, path: str) -> int:
        return self.unsigned(node, path, 2**64 - 1)

    def system_extensions(self, node: yaml.Node, path: str) -> dict[str, Any]:
        return self.struct(node, path, _SYSTEM_EXTENSIONS_FIELDS)

    def secureboot(self, node: yaml.Node, path: str) -> dict[str, Any]:
        return self.struct(node, path, _SECUREBOOT_FIELDS)

    def disk_image(self, node: yaml.Node, path: str) -> dict[str, Any]:
        return self.struct(node, path, _DISK_IMAGE_FIELDS)

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


# Each struct's fields and the function that reads each (built once, not per document).
_SCHEMATIC_FIELDS: dict[str, _Field] = {
    "owner": _Decoder.string,
    "overlay": _SchematicDecoder.overlay,
    "customization": _SchematicDecoder.customization,
}
_OVERLAY_FIELDS: dict[str, _Field] = {
    "image": _Decoder.string,
    "name": _Decoder.string,
    "options": _Decoder.options,
}
# Keys every cluster file has (a subset of schematic.inputs.cluster_file.CLUSTER_KEYS, a layer
# above): a schematic reader given a cluster file says which command reads it.
_CLUSTER_FILE_KEYS = frozenset({"cluster", "pools"})

_CUSTOMIZATION_FIELDS: dict[str, _Field] = {
    "embeddedMachineConfiguration": _Decoder.string,
    "extraKernelArgs": _Decoder.string_list,
    "meta": _SchematicDecoder.meta_list,
    "systemExtensions": _SchematicDecoder.system_extensions,
    "bootloader": _SchematicDecoder.bootloader,
    "secureboot": _SchematicDecoder.secureboot,
    "diskImage": _SchematicDecoder.disk_image,
}
_META_FIELDS: dict[str, _Field] = {"key": _SchematicDecoder.meta_key, "value": _Decoder.string}
_SYSTEM_EXTENSIONS_FIELDS: dict[str, _Field] = {"officialExtensions": _Decoder.string_list}
_SECUREBOOT_FIELDS: dict[str, _Field] = {
    "enrollKeys": _Decoder.string,
    "includeWellKnownCertificates": _Decoder.boolean,
}
_DISK_IMAGE_FIELDS: dict[str, _Field] = {"sectorSize": _SchematicDecoder.sector_size}
