"""The block-YAML writer: PyYAML's layout, and what it writes reads back the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from schematic.output.render.yamltext import dump, dump_all

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.text(max_size=20),
    st.sampled_from(["yes", "on", "0x10", "1:20", "2024-01-01", "", "- x", "a: b", "#c", "~"]),
)
trees = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(trees)
def test_round_trip(tree: Any) -> None:
    assert yaml.safe_load(dump(tree)) == tree


def test_layout_matches_pyyaml_block_style() -> None:
    tree = {
        "spec": {
            "cluster": "c",
            "roles": ["gpu"],
            "kernelModules": [{"name": "nvidia", "parameters": ["NVreg_NvLinkDisable=1"]}],
            "resources": {},
            "gpus": [],
            "flag": True,
            "word": "yes",
        }
    }
    expected = yaml.safe_dump(tree, sort_keys=False, default_flow_style=False)
    assert dump(tree) == expected


def test_multi_line_strings_stay_on_one_line() -> None:
    assert dump({"a": "x\ny"}) == 'a: "x\\ny"\n'


def test_documents_are_separated() -> None:
    assert dump_all([{"a": 1}, {"b": [1]}]) == "a: 1\n---\nb:\n- 1\n"


@given(st.text(alphabet="abcyYnNoOtTfFeEsSlLuUxX0123456789_-./:+", min_size=1, max_size=8))
def test_plain_names_are_quoted_as_pyyaml_would(text: str) -> None:
    # The shortcuts for names, paths and digests must give PyYAML's own answer.
    expected = yaml.dump(
        {"k": text},
        Dumper=yaml.SafeDumper,
        allow_unicode=True,
        width=2**31 - 1,
        default_flow_style=False,
    )
    assert dump({"k": text}) == expected


@pytest.mark.parametrize(
    "text",
    [
        "pool-00001/values.yaml",
        "0123456789abcdef" * 4,
        "1234567890123456789012345678901234567890123456789012345678901234",
        "0b1010",
        "0x1F",
        "1_000",
        "1.5",
        "...x",
        "./a",
        "1:20",
        "2024-01-01",
        ".inf",
        "1e5",
    ],
)
def test_paths_digests_and_numbers_are_quoted_as_pyyaml_would(text: str) -> None:
    expected = yaml.dump({"k": text}, Dumper=yaml.SafeDumper, width=2**31 - 1)
    assert dump({"k": text}) == expected


def test_the_package_writes_yaml_only_through_yamltext() -> None:
    # One human-YAML writer: a second one would quote, wrap or order differently (the lock file
    # and lint's re-read of talhelper's schematics once had their own).
    package = Path(__file__).resolve().parents[1] / "schematic"
    writers = sorted(
        path.relative_to(package).as_posix()
        for path in package.rglob("*.py")
        if any(
            call in path.read_text("utf-8")
            for call in ("yaml.dump(", "yaml.safe_dump(", "yaml.dump_all(", "yaml.safe_dump_all(")
        )
    )
    assert writers == ["output/render/yamltext.py"]
