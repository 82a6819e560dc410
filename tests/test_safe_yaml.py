"""The shared YAML reader: bounded reads, text decoding, and the composer's go-yaml rules."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from schematic import safe_yaml
from schematic.safe_yaml import (
    MAX_NUMBER_DIGITS,
    InputTooLargeError,
    NotRegularFileError,
    NotTextError,
    TooManyNodesError,
    YamlLimitError,
    compose_all,
    compose_single,
    excessive_aliasing,
    format_size,
    load,
    parse_size,
    read_bytes,
    read_problem,
    read_text,
)

_FAST: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def shape(node: yaml.Node) -> Any:
    """Everything a reader may look at in a node, for comparing two composers."""
    marks = (node.start_mark.index, node.start_mark.line, node.end_mark.index)
    if isinstance(node, yaml.ScalarNode):
        return ("scalar", node.tag, node.value, node.style, marks)
    if isinstance(node, yaml.SequenceNode):
        return ("seq", node.tag, node.flow_style, marks, [shape(item) for item in node.value])
    assert isinstance(node, yaml.MappingNode)
    pairs = [(shape(k), shape(v)) for k, v in node.value]
    return ("map", node.tag, node.flow_style, marks, pairs)


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\nb: [1, 2, {c: d}]\n",
        "--- x\n--- y\n...\n",
        "",
        "---\n",
        "a: &x [1, {k: v}]\nb: *x\nc: &s scalar\nd: *s\n",
        "!!str 1\n",
        "? [a, b]\n: value\n",
        "a: !custom {x: 1}\nb: ! plain\nc: |\n  literal\n  text\nd: 'single'\n",
        "- - - nested\n  - x\n- {a: [b, {c: d}]}\n",
    ],
)
def test_composes_what_pyyaml_composes(text: str) -> None:
    ours = [shape(node) for node in compose_all(text)]
    theirs = [shape(node) for node in yaml.compose_all(text, Loader=_FAST)]
    assert ours == theirs


def test_an_alias_is_the_anchored_node_itself_never_a_copy() -> None:
    (root,) = compose_all("a: &x [1, 2]\nb: *x\n")
    (_, first), (_, second) = root.value
    assert first is second


def test_an_anchor_may_be_defined_again_and_the_later_one_wins() -> None:
    root = compose_single("a: &x 1\nb: &x 2\nc: *x\n")
    assert root is not None
    assert [value.value for _, value in root.value] == ["1", "2", "2"]


def test_unknown_and_self_containing_anchors_are_errors() -> None:
    with pytest.raises(yaml.YAMLError, match="unknown anchor 'nope' referenced"):
        list(compose_all("a: *nope\n"))
    with pytest.raises(YamlLimitError, match="anchor 'a' value contains itself") as caught:
        list(compose_all("x: 1\nloop: &a [1, *a]\n"))
    assert caught.value.problem_mark is not None
    assert caught.value.problem_mark.line + 1 == 2


def test_single_refuses_a_second_document() -> None:
    with pytest.raises(yaml.YAMLError, match="expected a single document"):
        compose_single("a: 1\n---\nb: 2\n")
    assert compose_single("") is None


# --- go-yaml's DefaultAliasCheck -----------------------------------------------------------


@pytest.mark.parametrize(
    ("aliased", "constructed", "refused"),
    [
        (100, 10_000, False),  # not more than 100 aliased nodes: never refused
        (1000, 1000, False),  # not more than 1,000 nodes: never refused
        (990, 1001, False),  # 0.989…: at most 0.99 allowed
        (991, 1001, True),  # 0.99001…
        (396_000, 400_000, False),  # exactly 0.99 at the top of the flat range
        (396_001, 400_000, True),
        # Half way from 400,000 to 4,000,000 nodes: 0.99 - 0.89 / 2 = 0.545.
        (1_198_900, 2_200_000, False),
        (1_199_100, 2_200_000, True),
        (400_000, 4_000_000, False),  # 0.10 from 4,000,000 nodes on
        (400_001, 4_000_000, True),
        (1_000_000, 10_000_000, False),
        (1_000_001, 10_000_000, True),
    ],
)
def test_alias_rule_thresholds(aliased: int, constructed: int, refused: bool) -> None:
    assert excessive_aliasing(aliased, constructed) is refused


def nested_bomb(levels: int = 9, width: int = 10) -> str:
    lines = [f"k0: &a0 [{', '.join(['x'] * width)}]"]
    lines += [f"k{n}: &a{n} [{', '.join([f'*a{n - 1}'] * width)}]" for n in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_the_nested_bomb_is_refused_where_it_starts_to_expand() -> None:
    with pytest.raises(YamlLimitError, match="document contains excessive aliasing") as caught:
        list(compose_all(nested_bomb()))
    mark = caught.value.problem_mark
    assert mark is not None
    # Counted by hand as go-yaml counts: the document, the root mapping and k0 are 14 nodes;
    # k1 adds 2 + 10 * (alias + 11): 136 nodes, 110 aliased; k2 adds 2 + 10 * (1 + 121): 1,358
    # nodes, 1,320 aliased (0.972). k3's aliases bring 1,221 aliased nodes each: after the
    # third, 4,983 of 5,026 (0.9914 > 0.99), so go-yaml stops on line 4.
    assert mark.line + 1 == 4


def test_aliases_counted_per_document() -> None:
    # Each document alone stays under the rule; counted together they would not.
    one = "a: &a [" + ", ".join(["x"] * 9) + "]\nb: [" + ", ".join(["*a"] * 60) + "]\n"
    assert len(list(compose_all("---\n".join([one] * 3)))) == 3


# --- nodes -------------------------------------------------------------------------------------


def _one_line_list(items: int) -> str:
    # The document node, the list and its items: items + 2 nodes, the item n at column 2n - 1.
    return "[" + ",".join(["1"] * items) + "]\n"


def test_a_document_of_as_many_nodes_as_its_budget_composes() -> None:
    (root,) = compose_all(_one_line_list(998), max_nodes=1000)
    assert len(root.value) == 998
    assert load(_one_line_list(998), max_nodes=1000) == [1] * 998


def test_the_node_past_the_budget_is_refused_where_it_is() -> None:
    with pytest.raises(TooManyNodesError, match="holds more than 1,000 YAML nodes") as caught:
        list(compose_all(_one_line_list(5000), max_nodes=1000))
    mark = caught.value.problem_mark
    assert mark is not None
    # Item 999 is the 1,001st node: the composing stops there, not at the end of the list.
    assert (mark.line, mark.column) == (0, 2 * 999 - 1)
    with pytest.raises(TooManyNodesError):
        load(_one_line_list(999), max_nodes=1000)


def test_an_alias_counts_its_targets_whole_tree() -> None:
    # Document, mapping, a, its list of 3, b, the alias (1 + 4): 13 nodes, written as 9.
    text = "a: &x [1, 2, 3]\nb: *x\n"
    assert load(text, max_nodes=13) == {"a": [1, 2, 3], "b": [1, 2, 3]}
    with pytest.raises(TooManyNodesError) as caught:
        load(text, max_nodes=12)
    assert caught.value.problem_mark is not None and caught.value.problem_mark.line == 1


def test_the_documents_of_a_stream_count_together() -> None:
    # Three documents of 4 nodes each (the document, its mapping, a key, a value): 12 in all.
    stream = "---\na: 1\n---\nb: 2\n---\nc: 3\n"
    assert len(list(compose_all(stream, max_nodes=12))) == 3
    with pytest.raises(TooManyNodesError) as caught:
        list(compose_all(stream, max_nodes=11))
    assert caught.value.problem_mark is not None and caught.value.problem_mark.line == 5


def test_without_a_budget_no_count_refuses() -> None:
    assert len(load(_one_line_list(5000))) == 5000


# --- nesting -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "[" * 101 + "]" * 101,
        "[" * 10_001 + "]" * 10_001,
        "".join("  " * i + "a:\n" for i in range(101)) + "  " * 101 + "x\n",
        "- " * 200 + "x\n",
    ],
    ids=["flow-101", "flow-10001", "block-101", "compact-sequences-200"],
)
def test_nesting_beyond_the_limit_is_one_clear_error(text: str) -> None:
    with pytest.raises(YamlLimitError, match="nested deeper than 100 levels") as caught:
        list(compose_all(text))
    assert caught.value.problem_mark is not None


def test_nesting_at_the_limit_composes() -> None:
    (node,) = compose_all("[" * 100 + "x" + "]" * 100)
    depth = 0
    while isinstance(node, yaml.SequenceNode):
        (node,) = node.value
        depth += 1
    assert (depth, node.value) == (100, "x")


# --- reading -----------------------------------------------------------------------------------


def test_read_stops_at_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "big"
    path.write_bytes(b"a" * 1001)
    assert read_bytes(path, limit=1001) == b"a" * 1001
    with pytest.raises(InputTooLargeError) as caught:
        read_bytes(path, limit=1000)
    assert isinstance(caught.value, OSError)
    # A file's size is known before it is read: the refusal names it.
    assert caught.value.strerror == (
        "1,001 bytes, larger than the 1000 bytes input limit (raise it with --max-input-size)"
    )


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero on this platform")
def test_a_device_is_refused_without_reading_it() -> None:
    with pytest.raises(NotRegularFileError) as caught:
        read_bytes("/dev/zero", limit=1 << 20)
    assert read_problem(caught.value) == (
        "not a regular file (a FIFO, socket or device); give a file, or - for standard input"
    )


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.yaml")
    (tmp_path / "link.yaml").symlink_to(tmp_path / "pipe.yaml")
    for name in ("pipe.yaml", "link.yaml"):
        # Opening the FIFO would block this test forever; it must be refused before that.
        with pytest.raises(NotRegularFileError):
            read_text(tmp_path / name)


@pytest.mark.skipif(not os.path.isdir("/dev/fd"), reason="no /dev/fd on this platform")
def test_a_pipe_this_process_holds_is_read_up_to_the_limit() -> None:
    """`lint <(helm template ...)` names an inherited pipe as /dev/fd/N: it is read, bounded."""
    import threading

    reading, writing = os.pipe()
    writer = threading.Thread(target=lambda: _write_and_close(writing, b"x" * 4096))
    writer.start()
    try:
        with pytest.raises(InputTooLargeError, match="1000 bytes input limit"):
            read_bytes(f"/dev/fd/{reading}", limit=1000)
    finally:
        writer.join()
        os.close(reading)
    reading, writing = os.pipe()
    writer = threading.Thread(target=lambda: _write_and_close(writing, b"a: 1\n"))
    writer.start()
    try:
        assert read_text(f"/dev/fd/{reading}") == "a: 1\n"
    finally:
        writer.join()
        os.close(reading)


def _write_and_close(descriptor: int, data: bytes) -> None:
    try:
        os.write(descriptor, data)
    except BrokenPipeError:
        pass  # the reader stopped at its limit
    finally:
        os.close(descriptor)


def test_the_limit_is_set_once_for_every_reader(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 2048)
    try:
        safe_yaml.set_max_input_size(1024)
        with pytest.raises(InputTooLargeError, match="1 KiB"):
            read_text(path)
    finally:
        safe_yaml.set_max_input_size(None)
    assert read_text(path) == "x" * 2048


def test_text_is_utf8(tmp_path: Path) -> None:
    path = tmp_path / "t"
    path.write_bytes("\ufeffa: é\n".encode())
    assert read_text(path) == "a: é\n"
    path.write_bytes(b"a: \xff\xfe\xfa\n")
    with pytest.raises(NotTextError) as caught:
        read_text(path)
    assert caught.value.strerror == "not UTF-8 text (invalid start byte at byte 3)"


@pytest.mark.parametrize(
    ("text", "size"),
    [("16MiB", 16 << 20), ("64M", 64_000_000), ("500k", 500_000), ("1048576", 1 << 20)],
)
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize(
    "text", ["", "MiB", "-1", "0", "12 parsecs", "1.2.3M", "1e309", "inf", "nan", "9" * 5000]
)
def test_bad_sizes(text: str) -> None:
    with pytest.raises(ValueError, match="size"):
        parse_size(text)


def test_sizes_are_shown_in_whole_units() -> None:
    assert [format_size(n) for n in (16 << 20, 1536, 1 << 30, 1000)] == [
        "16 MiB",
        "1536 bytes",
        "1 GiB",
        "1000 bytes",
    ]


@pytest.mark.parametrize(
    "numeral",
    [
        "9" * 5000,
        "-" + "9" * 5000,
        "0x" + "f" * 5000,
        "0o" + "7" * 5000,
        "1:" + "2:" * 2000 + "3",
        "!!int " + "9" * 5000,
        "!!float " + "9" * 5000,
    ],
)
def test_a_numeral_past_the_limit_is_refused_at_its_line(numeral: str) -> None:
    """Python converts no integer of more than 4,300 digits; the composer stops such a number."""
    with pytest.raises(YamlLimitError) as caught:
        list(compose_all(f"a: 1\nb: {numeral}\n"))
    assert caught.value.problem_mark is not None and caught.value.problem_mark.line == 1
    assert f"a number of more than {MAX_NUMBER_DIGITS:,} digits" in str(caught.value.problem)


def test_quoted_long_digits_and_numbers_within_the_limit_compose() -> None:
    digits = "9" * 5000
    (node,) = compose_all(f"a: '{digits}'\nb: {'9' * MAX_NUMBER_DIGITS}\nc: x{digits}\n")
    assert [value.value for _, value in node.value] == [
        digits,
        "9" * MAX_NUMBER_DIGITS,
        "x" + digits,
    ]
    # go-yaml's reading takes any length (a number out of int64's range is text there).
    (node,) = compose_all(f"a: {digits}\n", longest_number=None)
    assert node.value[0][1].value == digits


def test_a_document_starting_past_the_budget_is_refused_at_its_start() -> None:
    # Two documents of 4 nodes take a budget of 8: the third is refused as it starts.
    stream = "---\na: 1\n---\nb: 2\n---\nc: 3\n"
    with pytest.raises(TooManyNodesError, match="holds more than 8 YAML nodes") as caught:
        list(compose_all(stream, max_nodes=8))
    assert caught.value.problem_mark is not None and caught.value.problem_mark.line == 4
