"""The reader's first try: the layout the factory's documentation shows, in one match.

Whatever it takes must be what the full decoder reads, and what it writes (its names joined
as they are, with no call per name) must be what the emitter writes, in both quoting
generations.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from schematic.canonical import emit_document, one_line_scalar, one_line_scalar_legacy
from schematic.decode import (
    _VERBATIM,
    _VERBATIM_FLOW,
    _document,
    _documented_fields,
    _SchematicDecoder,
    canonical_tree,
    schematic_id_of,
)
from schematic.errors import SchematicError
from schematic.goscalar import reads_as_string


def _full(text: str) -> Any:
    try:
        return _SchematicDecoder("-", text).schematic(_document(text, "-"))
    except SchematicError as err:
        return type(err)


def _as_decoded(fields: dict[str, Any]) -> dict[str, Any]:
    """The lane's fields with its lists as the full decoder gives them (tuples)."""
    return {
        key: _as_decoded(value)
        if isinstance(value, dict)
        else tuple(value)
        if isinstance(value, list)
        else value
        for key, value in fields.items()
    }


@settings(max_examples=500, deadline=None)
@given(st.from_regex(_VERBATIM, fullmatch=True) | st.from_regex(_VERBATIM_FLOW, fullmatch=True))
def test_a_name_the_layout_takes_reads_as_a_string_and_is_written_as_it_is(name: str) -> None:
    # Held by the '=' rule and the first-character rule in the patterns' comment.
    assert re.fullmatch(_VERBATIM, name) or re.fullmatch(_VERBATIM_FLOW, name)
    assert reads_as_string(name)
    assert one_line_scalar(name) == name
    assert one_line_scalar_legacy(name) == name


@pytest.mark.parametrize(
    "name",
    ["no", "n", "on", "y", "true", "null", "~", "1", "0x10", "1e5", "+1", ".5", "2001-12-14",
     "1:20", "190:20:30", "nvidia", "off-peak", ".x=1", "x:", "-a=1", "a b", "a #b"],
)  # fmt: skip
def test_a_name_with_a_second_look_or_a_quote_is_not_taken(name: str) -> None:
    # Resolver words, YAML 1.1 words and sexagesimals, names that merely start like one, a '.'
    # first: the key tokens' per-name checks decide these.
    assert not re.fullmatch(_VERBATIM, name)
    assert not re.fullmatch(_VERBATIM_FLOW, name)


_DOCUMENTED = (
    "customization:\n"
    "  extraKernelArgs:\n    - net.ifnames=0\n    - console=ttyS0\n"
    "  systemExtensions:\n    officialExtensions:\n"
    "      - siderolabs/gvisor\n      - siderolabs/amd-ucode\n"
)


@pytest.mark.parametrize(
    "text",
    [
        _DOCUMENTED,
        _DOCUMENTED.replace("  ", "    "),
        "customization:\n  extraKernelArgs: [net.ifnames=0, console=ttyS0]\n"
        "  systemExtensions:\n    officialExtensions: [siderolabs/gvisor, siderolabs/amd-ucode]\n",
        "overlay:\n  image: siderolabs/sbc-raspberrypi:v0.1.0\n  name: rpi_generic\n" + _DOCUMENTED,
        "customization:\n  systemExtensions:\n    officialExtensions:\n      - siderolabs/gvisor\n",
        "customization:\n  extraKernelArgs: [8250.nr_uarts=5]\n",
        # Quoted names: the same strings, written bare.
        _DOCUMENTED.replace("console=ttyS0", "'console=ttyS0'"),
        _DOCUMENTED.replace("siderolabs/gvisor", '"siderolabs/gvisor"'),
        "customization:\n  extraKernelArgs: ['a=1', \"b=2\", c=3]\n",
        "overlay:\n  image: 'siderolabs/sbc-raspberrypi'\n  name: \"rpi_generic\"\n" + _DOCUMENTED,
        # Comments: on lines of their own, after a key, a name or a flow list.
        "# a comment\n" + _DOCUMENTED,
        _DOCUMENTED.replace("console=ttyS0\n", "console=ttyS0  # serial, see #12\n"),
        _DOCUMENTED.replace("  systemExtensions:\n", "  systemExtensions: # x\n      # y\n"),
        "customization: # c\n  extraKernelArgs: ['a=1', b=2] # c\n# end\n",
    ],
)
def test_the_documented_layout_is_taken(text: str) -> None:
    fields = _documented_fields(text)
    assert fields is not None
    assert _as_decoded(fields) == _full(text)


@pytest.mark.parametrize(
    "text",
    [
        _DOCUMENTED.replace("console=ttyS0\n", "console=ttyS0  \n"),  # a trailing space
        _DOCUMENTED.replace("  systemExtensions", "\n  systemExtensions"),  # a blank line
        _DOCUMENTED.replace("  ", "   "),  # three spaces an indent
        _DOCUMENTED.replace("    - ", "  - "),  # items at the key's indent
        _DOCUMENTED.replace("\n", "\r\n"),
        _DOCUMENTED[:-1],  # no line break at the end
        _DOCUMENTED.replace("console=ttyS0", "no"),
        # A quoted name the writer quotes, quotes that do not pair, an escape, a quote inside.
        _DOCUMENTED.replace("console=ttyS0", "'no'"),
        _DOCUMENTED.replace("console=ttyS0", "'console=ttyS0\""),
        _DOCUMENTED.replace("console=ttyS0", "console=ttyS0'"),
        _DOCUMENTED.replace("console=ttyS0", '"console=tty\\x53"'),
        _DOCUMENTED.replace("console=ttyS0", "'it''s=1'"),
        "customization:\n  extraKernelArgs: ['a=1, b=2']\n",
        "customization:\n  extraKernelArgs: ['[a=1]']\n",
        "customization:\n  extraKernelArgs: 'a=1'\n",
        "customization:\n  extraKernelArgs: ['a=1' , b=2]\n",
        # Quotes that would leave a key, or a name quoted within, once dropped.
        "customization:\n  'extraKernelArgs:'\n    - a=1\n",
        "'customization':\n  extraKernelArgs: [a=1]\n",
        'customization:\n  "extraKernelArgs": [a=1]\n',
        _DOCUMENTED.replace("console=ttyS0", "console='ttyS0'"),
        _DOCUMENTED.replace("console=ttyS0", "''"),
        # A '#' that is part of a name or inside quotes; a comment the grammar refuses or
        # that runs to the end of the text.
        _DOCUMENTED.replace("console=ttyS0", "console=ttyS0#x"),
        _DOCUMENTED.replace("console=ttyS0", "'console=tty #S0'"),
        _DOCUMENTED.replace("console=ttyS0", "console=ttyS0\t# x"),
        "# café\n" + _DOCUMENTED,
        "# \x7f\n" + _DOCUMENTED,
        _DOCUMENTED + "# end",
        "customization:\n  extraKernelArgs: [a=1,b=2]\n",
        # The '=' of a later item makes no earlier one a name written as it is.
        "customization:\n  extraKernelArgs: [no, a=1]\n",
        "customization:\n  extraKernelArgs: [n]\n  bootloader: a=1\n",
        "customization:\n  extraKernelArgs: []\n",
        # The keys in another order than the writer's.
        "customization:\n  systemExtensions:\n    officialExtensions: [siderolabs/x]\n"
        "  extraKernelArgs: [a=1]\n",
        "customization:\n  extraKernelArgs: [a=1]\noverlay:\n  image: i/x\n  name: x\n",
        "customization:\n  extraKernelArgs: [a=1]\n  bootloader: grub\n",
        "customization:\n",
        "customization: {}\n",
        "owner: me\ncustomization:\n  extraKernelArgs: [a=1]\n",
    ],
)
def test_any_other_text_is_left_to_the_key_tokens_and_gets_the_same_id(text: str) -> None:
    assert _documented_fields(text) is None
    fields = _full(text)
    if isinstance(fields, dict):
        assert schematic_id_of(text)[1] == emit_document(canonical_tree(fields))


# Names the layout takes, names it must leave (each with a first character the resolver looks
# past, with or without an '='), and names with a quote or a space.
_SAMPLED_NAMES = ["siderolabs/drbd", "console=ttyS0", "net.ifnames=0", "8250.nr_uarts=5", "a:b",
                  "no", "n", "on", "Off", "y", "true", "null", "1", "1e5", "0x1F", "+1",
                  "2001-12-14", "1:20", "nvidia", "n=1", "no=", "1=2", ".x=1", "=", "_", "x:",
                  "it's", "a b", "a\\x=1", "a'b=1", 'a"b=1', "a, b=1"]  # fmt: skip
# Names as users write them (an argument with a value, an extension's path), drawn as often as
# the awkward ones above, so that texts of several names still reach the lane.
_USUAL_NAMES = st.from_regex(r"[a-z][a-z0-9_.]{0,5}(=[a-z0-9]{1,4}|/[a-z-]{1,6})", fullmatch=True)
_NAMES = st.one_of(
    st.sampled_from(_SAMPLED_NAMES),
    st.text(alphabet="anyN01.+-:=_/,", min_size=1, max_size=6),
    _USUAL_NAMES,
    _USUAL_NAMES,
)


@st.composite
def _maybe_quoted(draw: st.DrawFn) -> str:
    quote = draw(st.sampled_from(["", "", "'", '"']))
    return quote + draw(_NAMES) + quote


# Comments: after a space or two, a tab, or nothing (then the '#' is part of the name); on a
# line of their own at any indent; holding a '#', a quote or a letter outside ASCII.
_COMMENT_TEXTS = st.sampled_from(["# note", "#", "# see #12", "# it's", "# a: [b]", "# café"])
_BEFORE_COMMENT = st.sampled_from([" ", "  ", "\t", ""])


@st.composite
def _commented(draw: st.DrawFn, lines: list[str]) -> str:
    text = ""
    for line in lines:
        if draw(st.integers(0, 3)) == 0:
            text += draw(st.sampled_from(["", "  ", "      "])) + draw(_COMMENT_TEXTS) + "\n"
        if draw(st.integers(0, 3)) == 0:
            line += draw(_BEFORE_COMMENT) + draw(_COMMENT_TEXTS)
        text += line + "\n"
    return text


@st.composite
def _documented_texts(draw: st.DrawFn) -> str:
    unit = draw(st.sampled_from(["  ", "    "]))
    lines: list[str] = []
    if draw(st.booleans()):
        lines += ["overlay:", f"{unit}image: {draw(_maybe_quoted())}"]
        lines.append(f"{unit}name: {draw(_maybe_quoted())}")
    lines.append("customization:")
    for key, depth in (("extraKernelArgs", 2), ("systemExtensions", 3)):
        names = draw(st.lists(_maybe_quoted(), max_size=4))
        if not names:
            continue
        heads = [unit + key + ":"]
        if key == "systemExtensions":
            heads.append(f"{unit * 2}officialExtensions:")
        if draw(st.booleans()):
            heads[-1] += f" [{', '.join(names)}]"
            lines += heads
        else:
            lines += heads + [f"{unit * depth}- {name}" for name in names]
    if draw(st.booleans()):
        return draw(_commented(lines))
    return "".join(line + "\n" for line in lines)


@settings(max_examples=500, deadline=None)
@given(_documented_texts(), st.booleans())
def test_what_the_layout_takes_is_read_and_written_as_the_full_path_does(
    text: str, legacy: bool
) -> None:
    fields = _documented_fields(text)
    if fields is None:
        return
    decoded = _full(text)
    assert _as_decoded(fields) == decoded
    expected = emit_document(canonical_tree(decoded), legacy_quoting=legacy)
    assert schematic_id_of(text, legacy_quoting=legacy)[1] == expected


@pytest.mark.parametrize(
    "shape",
    [
        lambda text: "[" in text and "overlay:" in text,  # flow lists and an overlay
        lambda text: "\n        - " in text and "=" in text,  # a run at four spaces, an '='
        lambda text: re.search(r"\n +- n\S*=", text),  # resolver-first name with '='
        lambda text: "'" in text and '"' in text,  # names in both kinds of quotes
        lambda text: "['" in text or '["' in text,  # quoted names in a flow list
        # A comment after a name or a flow list (a line with no '#' before the comment's).
        lambda text: re.search(r"(?m)^[^#\n]*[^:# ] +#", text),
        lambda text: re.search(r"\n +#", text) and "'" in text,  # an indented comment line
    ],
)
def test_the_generated_texts_reach_the_layout(shape: Any) -> None:
    # The test above is worth something only if the lane takes texts of each shape it draws.
    found = find(
        _documented_texts(),
        lambda text: shape(text) and _documented_fields(text) is not None,
        settings=settings(database=None, max_examples=5000, deadline=None),
    )
    assert _documented_fields(found) is not None
