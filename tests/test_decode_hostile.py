"""The strict decoder against hostile bodies: go-yaml's alias rule, nesting, quote escapes."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from schematic.core.decode import decode_fields, schematic_id_of
from schematic.errors import SchematicError


def options_document(pad: int, aliases: int = 10) -> str:
    """Three nested anchors (10, 100 and 910 nodes) aliased ``aliases`` times after ``pad``."""
    return (
        "overlay:\n  name: n\n  image: i\n  options:\n"
        f"    pad: [{', '.join(['p'] * pad)}]\n"
        f"    a: &a [{', '.join(['x'] * 9)}]\n"
        f"    b: &b [{', '.join(['*a'] * 9)}]\n"
        f"    c: &c [{', '.join(['*b'] * 9)}]\n"
        f"    d: [{', '.join(['*c'] * aliases)}]\n"
    )


def expanded(pad: int, aliases: int = 10) -> str:
    """The same document with every alias written out."""
    a = "[" + ", ".join(["x"] * 9) + "]"
    b = "[" + ", ".join([a] * 9) + "]"
    c = "[" + ", ".join([b] * 9) + "]"
    return (
        "overlay:\n  name: n\n  image: i\n  options:\n"
        f"    pad: [{', '.join(['p'] * pad)}]\n"
        f"    a: {a}\n    b: {b}\n    c: {c}\n"
        f"    d: [{', '.join([c] * aliases)}]\n"
    )


# Counted as go-yaml's constructor counts (every node once per path to it; "aliased" = built
# inside an alias): the document, mappings, keys and pad give 47 + pad + aliases nodes outside
# any alias; b's, c's and d's aliases bring 90 + 900 + 910 * aliases nodes. With 10 aliases the
# aliased share is 10,090 / (10,090 + 57 + pad): at most 0.99 from pad = 45 on.
JUST_UNDER = 45


def test_a_body_just_under_the_alias_rule_decodes_and_hashes_as_written_out() -> None:
    assert schematic_id_of(options_document(JUST_UNDER)) == schematic_id_of(expanded(JUST_UNDER))


def test_one_node_fewer_is_refused_with_the_factorys_words() -> None:
    with pytest.raises(SchematicError) as caught:
        schematic_id_of(options_document(JUST_UNDER - 1), "hostile.yaml")
    assert str(caught.value) == "hostile.yaml:9: document contains excessive aliasing"


def test_the_same_body_without_aliases_is_fine_at_any_share() -> None:
    assert decode_fields(expanded(JUST_UNDER - 1))["overlay"]["options"]["pad"] == ["p"] * 44


BOMB = "".join(
    [
        "k0: &a0 [x, x, x, x, x, x, x, x, x, x]\n",
        *(f"k{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 10)}]\n" for n in range(1, 9)),
    ]
)


def indented(text: str, by: int) -> str:
    return "".join(" " * by + line + "\n" for line in text.splitlines())


@pytest.mark.parametrize(
    ("body", "line"),
    [
        # overlay.options: a free-form map, where the bomb would otherwise be built.
        ("overlay:\n  name: n\n  image: i\n  options:\n" + indented(BOMB, 4), 8),
        # A string field: go-yaml composes first, so the bomb is refused before the type.
        ("owner: &o\n" + indented(BOMB, 2), 5),
        # A list of strings.
        ("customization:\n  extraKernelArgs:\n    - " + BOMB.replace("\n", "\n      ", 8), 6),
        # A list of structs.
        ("customization:\n  meta:\n    - key: 1\n      value:\n" + indented(BOMB, 8), 8),
        # The extension list, flow style on one line.
        (
            "customization:\n  systemExtensions:\n    officialExtensions: [{"
            + ", ".join(BOMB.strip().splitlines())
            + "}]\n",
            3,
        ),
        # A JSON body.
        ('{"owner": ' + "{" + ", ".join(BOMB.strip().splitlines()) + "}}", 1),
    ],
    ids=["overlay-options", "string", "string-list", "struct-list", "flow-list", "json"],
)
def test_the_bomb_is_refused_in_every_kind_of_field(body: str, line: int) -> None:
    with pytest.raises(SchematicError) as caught:
        decode_fields(body, "bomb.yaml")
    assert str(caught.value) == f"bomb.yaml:{line}: document contains excessive aliasing"


def test_nesting_deeper_than_the_limit_is_one_error_not_a_recursion_error() -> None:
    body = "overlay:\n  name: n\n  image: i\n  options:\n    k: " + "[" * 10_001 + "]" * 10_001
    with pytest.raises(SchematicError, match=r"^deep\.yaml:5: nested deeper than 100 levels"):
        decode_fields(body, "deep.yaml")


def test_options_nested_to_the_limit_still_hash() -> None:
    # The root mapping, overlay and options are three levels; 97 lists fill the rest.
    body = "overlay:\n  name: n\n  image: i\n  options:\n    k: " + "[" * 97 + "x" + "]" * 97
    _, canonical = schematic_id_of(body)
    assert canonical.count("- ") == 97


ESCAPED_QUOTE = "\\'"  # backslash, quote: go-yaml reads it as a quote in double quotes


def test_quote_escapes_cost_scans_independent_of_their_number(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scans: list[int] = []
    real_scan = yaml.scan

    def counting_scan(*args: Any, **kwargs: Any) -> Any:
        scans.append(1)
        return real_scan(*args, **kwargs)

    monkeypatch.setattr(yaml, "scan", counting_scan)
    for count in (1, 10, 5000):
        scans.clear()
        items = "".join(f'    - "a{n}{ESCAPED_QUOTE}b"\n' for n in range(count))
        fields = decode_fields("customization:\n  extraKernelArgs:\n" + items)
        args = fields["customization"]["extraKernelArgs"]
        assert (len(args), args[0], args[-1]) == (count, "a0'b", f"a{count - 1}'b")
        assert len(scans) == 2, count  # find the scalars, confirm the rewrite


def test_a_quote_escape_beside_a_single_quoted_backslash_is_still_read() -> None:
    # In a single-quoted scalar a backslash is literal and the quote after it closes the
    # scalar: the one-scan rewrite would misread that, and the decoder falls back.
    body = "customization:\n  extraKernelArgs:\n    - 'a\\'\n    - \"b\\'c\"\n"
    assert decode_fields(body)["customization"]["extraKernelArgs"] == ("a\\", "b'c")
