"""The strict decoder: what the factory accepts, what it answers with HTTP 400, and why."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schematic.core.decode import canonical_schematic, decode_fields, schematic_id_of
from schematic.core.model import Customization, Schematic, SystemExtensions
from schematic.errors import SchematicError

EMPTY_ID = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("", "holds no YAML document"),
        ("# only a comment\n", "holds no YAML document"),
        ("customization: {}\ncustomization: {}\n", "already defined at line 1"),
        ("customization:\n  extraKernelArgs: a\n", "expected a list, found a scalar"),
        ("customization: []\n", "expected a mapping"),
        ("[]\n", "expected a mapping for the schematic"),
        ("plain text\n", "expected a mapping for the schematic"),
        ("customization:\n  extraKernelArgs:\n    - 2001-12-14\n", "reads as a timestamp"),
        ("customization:\n  meta: [{key: -1, value: a}]\n", "from 0 to 255"),
        ("customization:\n  meta: [{key: 256, value: a}]\n", "from 0 to 255"),
        ("customization:\n  meta: [{key: 10.7, value: a}]\n", "from 0 to 255"),
        ("customization:\n  meta: [{key: '10', value: a}]\n", "from 0 to 255"),
        ("customization:\n  meta: [{key: true, value: a}]\n", "from 0 to 255"),
        ("customization:\n  secureboot: {includeWellKnownCertificates: 1}\n", "true or false"),
        ("customization:\n  secureboot: {includeWellKnownCertificates: maybe}\n", "true or false"),
        ("customization:\n  bootloader: auto\n", "unknown bootloader 'auto'"),
        ("customization:\n  bootloader: ''\n", "unknown bootloader ''"),
        ("customization:\n  diskImage: {sectorSize: -1}\n", "expected an integer"),
        ("customization:\n  diskImage: {sectorSize: '512'}\n", "expected an integer"),
        ('customization:\n  extraKernelArgs: ["\\uD800"]\n', "invalid YAML"),
        ('{"customization": {"extraKernelArgs": ["\\ud83d\\ude00"]}}', "invalid YAML"),
        ("customization:\n  foo: 1\n", "unknown field 'foo'"),
        ("customization:\n  systemExtensions:\n    official: []\n", "unknown field 'official'"),
        ("overlay: {name: a, image: b, extra: 1}\n", "unknown field 'extra'"),
        ("customization: {meta: [{key: 1, value: a, other: b}]}\n", "unknown field 'other'"),
        ("customization: {extraKernelArgs: [[a]]}\n", "expected a string, found a list"),
        ("overlay: {options: {a: 1, a: 2}}\n", "already defined"),
        ("customization: [\n", "invalid YAML"),
    ],
)
def test_refused_like_the_factory(body: str, reason: str) -> None:
    with pytest.raises(SchematicError, match=None) as caught:
        Schematic.from_yaml(body, source="pool.yaml")
    assert reason in str(caught.value)
    assert str(caught.value).startswith("pool.yaml")


@pytest.mark.parametrize(
    "body",
    [
        "customization: {}\n---\nnot: [valid\n",  # only the first document counts
        "~\n",
        "---\n",
        "{}",
        "customization:\n  extraKernelArgs: [null, ~]\n",  # null items are dropped
        "customization:\n  extraKernelArgs: []\n  systemExtensions: {}\n",
        "customization:\n  meta: []\n  secureboot: {includeWellKnownCertificates: no}\n",
        "customization:\n  bootloader: none\n",
        "customization:\n  bootloader: ~\n",
        "overlay: {options: {}}\n",
    ],
)
def test_accepted_as_the_empty_schematic(body: str) -> None:
    assert Schematic.from_yaml(body).id == EMPTY_ID


def test_error_names_file_field_and_line() -> None:
    body = "customization:\n  meta:\n    - key: 300\n      value: x\n"
    with pytest.raises(SchematicError) as caught:
        Schematic.from_yaml(body, source="cluster/gpu.schematic.yaml")
    err = caught.value
    assert (err.source, err.path, err.line) == (
        "cluster/gpu.schematic.yaml",
        "customization.meta[0].key",
        3,
    )
    assert str(err) == (
        "cluster/gpu.schematic.yaml:3: customization.meta[0].key: "
        "expected an integer from 0 to 255, found '300'"
    )


def test_string_fields_keep_the_raw_scalar_text() -> None:
    body = "customization:\n  extraKernelArgs: [on, 0x10, 1_000, 1e5, yes, ~x, 017]\n"
    fields = decode_fields(body)
    assert list(fields["customization"]["extraKernelArgs"]) == [
        "on",
        "0x10",
        "1_000",
        "1e5",
        "yes",
        "~x",
        "017",
    ]


@pytest.mark.parametrize(
    ("written", "key"),
    [("10", 10), ("0xa", 10), ("0o12", 10), ("012", 10), ("0b1010", 10), ("10.0", 10), ("1e1", 10),
     ("1_0", 10), ("+10", 10), ("08", 8), ("255", 255), ("0", 0), ("~", 0)],
)  # fmt: skip
def test_meta_key_spellings(written: str, key: int) -> None:
    body = f"customization:\n  meta:\n    - key: {written}\n      value: v\n"
    assert Schematic.from_yaml(body).customization.meta[0].key == key


def test_a_meta_item_without_key_is_key_0_as_the_factory_reads_it() -> None:
    # image-factory's MetaValue has `Key uint8 yaml:"key"` (no omitempty): an item without key
    # decodes as key 0 and is stored, and hashed, with "key: 0". Another default is another ID.
    keyless = "customization:\n  meta:\n    - value: x\n"
    zero = "customization:\n  meta:\n    - key: 0\n      value: x\n"
    schematic_id, canonical = schematic_id_of(keyless)
    assert (schematic_id, canonical) == schematic_id_of(zero)
    assert canonical == "customization:\n    meta:\n        - key: 0\n          value: x\n"
    assert Schematic.from_yaml(keyless).id == schematic_id


@pytest.mark.parametrize(
    ("written", "value"),
    [("true", True), ("True", True), ("TRUE", True), ("yes", True), ("On", True), ("Y", True),
     ("'yes'", True), ("false", False), ("no", False), ("OFF", False), ("n", False), ("~", False)],
)  # fmt: skip
def test_bool_spellings(written: str, value: bool) -> None:
    body = f"customization:\n  secureboot:\n    includeWellKnownCertificates: {written}\n"
    assert (
        Schematic.from_yaml(body).customization.secureboot.include_well_known_certificates is value
    )


def test_bootloader_names_are_case_insensitive() -> None:
    schematic = Schematic.from_yaml("customization:\n  bootloader: SD-Boot\n")
    assert schematic.customization.bootloader == "sd-boot"
    assert schematic.canonical() == "customization:\n    bootloader: sd-boot\n"


def test_json_bodies_and_yaml_bodies_agree() -> None:
    as_json = (
        '{"customization": {"systemExtensions": '
        '{"officialExtensions": ["siderolabs/qemu-guest-agent"]}}}'
    )
    as_yaml = (
        "customization:\n  systemExtensions:\n    officialExtensions:\n"
        "      - siderolabs/qemu-guest-agent\n"
    )
    cozystack_default = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
    assert Schematic.from_json(as_json).id == Schematic.from_yaml(as_yaml).id == cozystack_default


def test_merge_keys_and_anchors() -> None:
    body = "base: &args {extraKernelArgs: [a]}\n"
    with pytest.raises(SchematicError, match="unknown field 'base'"):
        Schematic.from_yaml(body)
    merged = (
        "customization:\n  <<: {extraKernelArgs: [a], bootloader: grub}\n  bootloader: sd-boot\n"
    )
    schematic = Schematic.from_yaml(merged)
    assert schematic.customization.extra_kernel_args == ("a",)
    assert schematic.customization.bootloader == "sd-boot"


def test_tagged_scalars() -> None:
    assert Schematic.from_yaml(
        "customization:\n  extraKernelArgs: [!!str 10]\n"
    ).customization.extra_kernel_args == ("10",)
    with pytest.raises(SchematicError, match="cannot read 'abc' as !!int"):
        Schematic.from_yaml("customization:\n  meta: [{key: !!int abc, value: v}]\n")


def test_bytes_in_utf8_and_utf16() -> None:
    body = "customization:\n  extraKernelArgs: [caf\u00e9]\n"
    expected = Schematic.from_yaml(body).id
    assert schematic_id_of(body.encode("utf-8"))[0] == expected
    assert schematic_id_of(body.encode("utf-16"))[0] == expected
    with pytest.raises(SchematicError, match="not valid UTF-8"):
        schematic_id_of(b"customization: {extraKernelArgs: [\xff]}")


# --- properties over the ways people write schematics -----------------------------------------

_KEYS = ["customization", "overlay", "owner", "extraKernelArgs", "systemExtensions",
         "officialExtensions", "bootloader", "name", "image", "meta", "other"]  # fmt: skip
_VALUES = ["siderolabs/qemu-guest-agent", "net.ifnames=0", "a:b", "yes", "null", "~", "1",
           "0x10", "2024-01-01", "grub", "SD-BOOT", "auto", "[]", "{}", "-", "x:", "a,b",
           "%x", "é", "'q'", "a #c", "<<",
           # every first character of a word the resolver does not read as a string
           "false", "False", "TRUE", "Null", "NULL", "Off", "on", ".5", "+1", "-1", "_x", "=",
           # quoted scalars, comments and one-line flow lists, and their near misses
           '"q"', "'it''s'", "''", '""', "'yes'", '"1"', "'sd-boot'", '"SD-BOOT"', "'none'",
           '"a\\"b"', '"a#b" #c', "'x'#c", "'x' y", "'open", "a  ", "a # c # d", "#c", "x#c",
           "[a, b]", "[a,b]", " [ a , b ] ", "['x', \"y\"]", "[]", "[ ]", "[] #c", "{} #c",
           "[a:b]", "[a, ]", "[a, [b]]", "[a b]", "[null]", "[1]", "['1']", "[yes]", "[a] #c",
           "[a]#c", "[a", "[a #c]", "[é]", "['a' 'b']", "[\"a,b\", c]", "[-]", "[~]"]  # fmt: skip


@st.composite
def _simple_looking(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(1, 8))):
        indent = " " * draw(st.sampled_from([0, 0, 2, 4, 6, 8]))
        if draw(st.booleans()):
            lines.append(f"{indent}- {draw(st.sampled_from(_VALUES))}")
        elif draw(st.booleans()):
            lines.append(f"{indent}{draw(st.sampled_from(_KEYS))}:")
        else:
            lines.append(
                f"{indent}{draw(st.sampled_from(_KEYS))}: {draw(st.sampled_from(_VALUES))}"
            )
    return "\n".join(lines) + "\n"


@st.composite
def _schematic_shaped(draw: st.DrawFn) -> str:
    """A schematic's usual layout, each list block or flow, values and comments drawn."""
    usual = ["siderolabs/qemu-guest-agent", "console=ttyS0", "'q r'", '"it\'s"', "'a''b'", "grub"]
    value = st.one_of(st.sampled_from(usual), st.sampled_from(_VALUES))
    comment = st.sampled_from(["", "", "  # why", " #", "#x"])

    def a_list(indent: int) -> str:
        items = draw(st.lists(value, max_size=3))
        if draw(st.booleans()):
            return f" [{', '.join(items)}]{draw(comment)}\n"
        pad = " " * draw(st.sampled_from([indent, indent + 2]))
        return "\n" + "".join(f"{pad}- {item}{draw(comment)}\n" for item in items)

    text = draw(st.sampled_from(["", "# a schematic\n"])) + f"customization:{draw(comment)}\n"
    text += "  extraKernelArgs:" + a_list(2)
    text += "  systemExtensions:\n    officialExtensions:" + a_list(4)
    if draw(st.booleans()):
        text += f"  bootloader: {draw(value)}{draw(comment)}\n"
    return text


_CANONICAL_SHAPES = st.builds(
    lambda exts, args, boot: Schematic(
        customization=Customization(
            extra_kernel_args=tuple(args),
            system_extensions=SystemExtensions(official_extensions=tuple(exts)),
            bootloader=boot,
        )
    ).canonical(),
    st.lists(st.sampled_from(_VALUES), max_size=3),
    st.lists(st.sampled_from(_VALUES), max_size=3),
    st.sampled_from(["", "grub", "sd-boot"]),
)


def _outcome(text: str) -> object:
    """What ``id`` answers for a text: its ID and canonical YAML, or the kind of refusal."""
    try:
        return schematic_id_of(text)
    except SchematicError as err:
        return type(err)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.one_of(_simple_looking(), _schematic_shaped(), _CANONICAL_SHAPES))
def test_id_and_the_model_agree_and_the_canonical_text_reads_back_to_itself(text: str) -> None:
    outcome = _outcome(text)
    try:
        schematic = Schematic.from_yaml(text)
    except SchematicError:
        assert outcome is SchematicError  # refused by the model, refused by id
        return
    assert outcome == (schematic.id, schematic.canonical())
    canonical = schematic.canonical()
    fields = decode_fields(canonical)
    assert canonical_schematic(fields) == canonical
    assert schematic_id_of(canonical)[0] == schematic.id


@pytest.mark.parametrize(
    ("body", "line"),
    [
        # A closing quote then a ',' outside a flow list: libyaml and go-yaml stop there.
        ('customization:\n  extraKernelArgs:\n    - "console=ttyS0",\n', 3),
        ("customization:\n  extraKernelArgs:\n    - 'a=1',b=2\n", 3),
        ("overlay:\n  image: 'a',\n  name: b\n", 2),
        # A list less indented than its key belongs to no key: the factory refuses it.
        (
            "customization:\n  systemExtensions:\n    officialExtensions:\n"
            "  - siderolabs/qemu-guest-agent\n",
            4,
        ),
        ("customization:\n  extraKernelArgs:\n- console=ttyS0\n", 3),
    ],
)
def test_bodies_the_factory_refuses_get_no_id(body: str, line: int) -> None:
    with pytest.raises(SchematicError) as caught:
        schematic_id_of(body, "s.yaml")
    assert caught.value.line == line
    assert str(caught.value).startswith(f"s.yaml:{line}: invalid YAML")
    with pytest.raises(SchematicError):
        Schematic.from_yaml(body)


def test_a_list_level_with_its_key_is_the_key_s() -> None:
    # YAML lets a block list sit level with its key (the compact form): the same schematic.
    level = "customization:\n  extraKernelArgs:\n  - console=ttyS0\n"
    deeper = "customization:\n  extraKernelArgs:\n    - console=ttyS0\n"
    assert schematic_id_of(level) == schematic_id_of(deeper)


@pytest.mark.parametrize(
    ("body", "same_as", "canonical"),
    [
        ("owner: 'it''s'\n", 'owner: "it\'s"\n', "owner: it's\ncustomization: {}\n"),
        ("owner: '''q'''\n", "owner: \"'q'\"\n", "owner: '''q'''\ncustomization: {}\n"),
        (
            "overlay:\n  image: 'siderolabs/o''k'\n  name: '''rpi'''\n",
            'overlay:\n  image: "siderolabs/o\'k"\n  name: "\'rpi\'"\n',
            "overlay:\n    image: siderolabs/o'k\n    name: '''rpi'''\ncustomization: {}\n",
        ),
        (
            "customization:\n  extraKernelArgs: ['a''b']\n",
            'customization:\n  extraKernelArgs: ["a\'b"]\n',
            "customization:\n    extraKernelArgs:\n        - a'b\n",
        ),
    ],
)
def test_a_doubled_quote_in_single_quotes_is_one_quote(
    body: str, same_as: str, canonical: str
) -> None:
    # 'it''s' is the string it's: its ID is that of "it's", not of "it''s".
    assert schematic_id_of(body) == schematic_id_of(same_as)
    assert schematic_id_of(body)[1] == canonical


@pytest.mark.parametrize(
    "body",
    [
        "customization:\n  extraKernelArgs:\n    - a=1\n  systemExtensions:\n"
        "    officialExtensions:\n      - siderolabs/x\n",
        "customization:\n  extraKernelArgs: [a=1]\n  systemExtensions:\n"
        "    officialExtensions: [siderolabs/x]\n",
        "customization:\n  extraKernelArgs:\n    - 'a=1'\n  systemExtensions:\n"
        '    officialExtensions:\n      - "siderolabs/x"\n',
        # Comments after values and on lines of their own, a blank line, trailing spaces.
        "# nodes\ncustomization:  # c\n  extraKernelArgs:\n    - a=1  # why\n\n"
        "  systemExtensions:\n    # official\n    officialExtensions:   \n"
        "      # first\n      - siderolabs/x\n",
        '{"customization": {"extraKernelArgs": ["a=1"],'
        ' "systemExtensions": {"officialExtensions": ["siderolabs/x"]}}}',
    ],
)
def test_each_usual_way_of_writing_a_schematic_reads_alike(body: str) -> None:
    assert decode_fields(body) == {
        "customization": {
            "extraKernelArgs": ("a=1",),
            "systemExtensions": {"officialExtensions": ("siderolabs/x",)},
        }
    }
    assert schematic_id_of(body)[1] == (
        "customization:\n    extraKernelArgs:\n        - a=1\n"
        "    systemExtensions:\n        officialExtensions:\n            - siderolabs/x\n"
    )


def test_an_anchor_may_be_defined_again() -> None:
    # YAML and go-yaml let a later anchor of the same name win; libyaml's composer refuses it.
    body = "overlay:\n  name: &a first\n  image: &a second\n  options: {x: *a}\n"
    schematic = Schematic.from_yaml(body)
    assert (schematic.overlay.name, schematic.overlay.image) == ("first", "second")
    assert dict(schematic.overlay.options) == {"x": "second"}


def test_typed_keys_of_a_nested_map_collapse_like_a_go_map() -> None:
    # `~` and `null` are both nil, `1` and `0x1` both the integer 1: one key each, last wins.
    body = "overlay:\n  name: n\n  image: i\n  options:\n    m: {~: a, null: b, 1: c, 0x1: d}\n"
    assert Schematic.from_yaml(body).canonical() == (
        "overlay:\n    image: i\n    name: 'n'\n    options:\n        m:\n"
        "            1: d\n            null: b\n"
        "customization: {}\n"
    )


def test_double_quoted_escapes_as_go_yaml_reads_them() -> None:
    # go-yaml reads \' as a quote and refuses \/ (PHP's json_encode writes it for "/").
    body = 'customization:\n  extraKernelArgs: ["it\\\'s", "c\\\\/"]\n'
    args = Schematic.from_yaml(body).customization.extra_kernel_args
    assert args == ("it's", "c\\/")
    with pytest.raises(SchematicError, match="unknown escape character '/'"):
        Schematic.from_yaml('{"customization": {"extraKernelArgs": ["a\\/b"]}}')


def test_only_the_one_builder_calls_the_emitter_on_a_schematic() -> None:
    # Every part of the tool builds a canonical schematic with decode.canonical_schematic:
    # a second way to call the emitter (or to assemble the tree) is a second way to be wrong.
    package = Path(__file__).resolve().parents[1] / "schematic"
    callers = sorted(
        path.relative_to(package).as_posix()
        for path in package.rglob("*.py")
        if "emit_document(" in path.read_text("utf-8")
        or "canonical_tree(" in path.read_text("utf-8")
    )
    assert callers == ["core/canonical.py", "core/decode.py"]
