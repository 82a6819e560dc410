"""go-yaml's reading of plain scalars, and the one list of YAML 1.1's words every writer uses."""

from __future__ import annotations

import pytest
import yaml

from schematic.core.canonical import string_scalar
from schematic.core.goscalar import NULL_WORDS, YAML11_BOOLEANS, reads_as_string, resolve_plain
from schematic.output.render.yamltext import dump

# yaml.org/type/bool.html, the YAML 1.1 boolean type, spelled out here as the reference.
_SPEC_TRUE = ["y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"]
_SPEC_FALSE = ["n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"]


def test_the_yaml11_booleans_are_the_specification_s() -> None:
    assert {
        **dict.fromkeys(_SPEC_TRUE, True),
        **dict.fromkeys(_SPEC_FALSE, False),
    } == YAML11_BOOLEANS


@pytest.mark.parametrize("word", sorted(YAML11_BOOLEANS))
def test_go_yaml_reads_only_true_and_false_as_booleans(word: str) -> None:
    tag, value = resolve_plain(word)
    if word.lower() in ("true", "false"):
        assert (tag, value) == ("bool", YAML11_BOOLEANS[word])
    else:
        assert (tag, value) == ("str", word)


@pytest.mark.parametrize("word", sorted(YAML11_BOOLEANS))
def test_pyyaml_reads_each_word_but_y_and_n_as_a_boolean(word: str) -> None:
    loaded = yaml.safe_load(f"k: {word}\n")["k"]
    assert loaded == (word if word in "yYnN" else YAML11_BOOLEANS[word])


@pytest.mark.parametrize("word", sorted(NULL_WORDS))
def test_the_null_words_are_null_to_both_readers(word: str) -> None:
    assert resolve_plain(word) == ("null", None)
    assert yaml.safe_load(f"k: {word}\n") == {"k": None}


@pytest.mark.parametrize("word", sorted(YAML11_BOOLEANS))
def test_the_canonical_writer_quotes_the_yaml11_only_words(word: str) -> None:
    written = string_scalar(word, 0)
    if reads_as_string(word):
        assert written == f"'{word}'"
        assert string_scalar(word, 0, legacy_quoting=True) == f'"{word}"'
    else:
        assert written == f'"{word}"'


@pytest.mark.parametrize("word", sorted({*YAML11_BOOLEANS, *NULL_WORDS}))
def test_the_manifest_writer_keeps_every_word_a_string(word: str) -> None:
    assert yaml.safe_load(dump({"k": word})) == {"k": word}
