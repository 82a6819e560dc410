"""The rule texts are package data (schematic/data/lint-rules.yaml); the code only finds them."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest

import schematic
from schematic.doctor.lint import RULES, Rule
from schematic.doctor.rules import RuleDataError

_PACKAGE = Path(schematic.__file__).parent
_CODE = re.compile(r"TS[0-9]{3}")


def _codes_written_in(folder: Path) -> dict[str, list[str]]:
    """Every string constant of the folder's modules that is exactly a code, and where."""
    found: dict[str, list[str]] = {}
    for module in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(module.read_text("utf-8"))):
            text = node.value if isinstance(node, ast.Constant) else None
            if isinstance(text, str) and _CODE.fullmatch(text):
                found.setdefault(text, []).append(module.name)
    return found


def _emitting_modules() -> dict[str, list[str]]:
    found = _codes_written_in(_PACKAGE / "doctor" / "lint")
    if (_PACKAGE / "doctor" / "triage").is_dir():  # triage diagnoses under the same codes
        for code, modules in _codes_written_in(_PACKAGE / "doctor" / "triage").items():
            found.setdefault(code, []).extend(modules)
    return found


def test_every_code_the_rule_modules_emit_has_its_texts() -> None:
    emitted = _emitting_modules()
    assert "TS101" in emitted and "TS155" in emitted  # the scan sees the rule modules
    missing = {code: where for code, where in emitted.items() if code not in RULES}
    assert missing == {}


def test_every_rule_in_the_data_is_emitted_somewhere() -> None:
    emitted = _emitting_modules()
    assert [code for code in RULES if code not in emitted] == []


def test_rules_are_in_code_order_and_every_text_is_written() -> None:
    assert list(RULES) == sorted(RULES)
    for known in RULES.values():
        for field in ("title", "fix", "seen", "why", "confirm", "remedy"):
            text = getattr(known, field)
            assert text.strip() == text != "", (known.code, field)
        assert "\n" not in known.title + known.fix, known.code


def test_shared_texts_are_one_text() -> None:
    # TS101 and TS102 are the same reboot cycle; TS103 to TS106 the same silent "No devices".
    assert RULES["TS101"].confirm == RULES["TS102"].confirm
    assert "startAllServices" in RULES["TS102"].confirm
    no_devices = {RULES[code].confirm for code in ("TS103", "TS104", "TS105", "TS106")}
    assert len(no_devices) == 1
    assert "nvidia-smi -L` prints `No devices found`" in no_devices.pop()


def test_explain_prints_runtime_evidence_when_a_rule_has_it() -> None:
    with_runtime = dataclasses.replace(
        RULES["TS101"],
        runtime="`ext-nvidia-persistenced` waits for /sys/bus/pci/drivers/nvidia.",
    )
    text = with_runtime.explain()
    sections = [line for line in text.splitlines() if line and not line.startswith(" ")]
    assert sections[1:] == [
        "What you see",
        "What a broken node shows",
        "Why it happens",
        "How to confirm it",
        "How to fix it",
    ]
    assert "  `ext-nvidia-persistenced` waits for /sys/bus/pci/drivers/nvidia.\n" in text
    assert "What a broken node shows" not in RULES["TS001"].explain()
    assert "What a broken node shows" in RULES["TS101"].explain()  # triage's evidence


def test_a_rule_refuses_unknown_fields_and_malformed_codes() -> None:
    fields = dataclasses.asdict(RULES["TS001"])
    assert Rule.from_entry(fields) == RULES["TS001"]
    missing = {key: value for key, value in fields.items() if key != "why"}
    for bad, said in (
        ({**fields, "code": "TS01"}, "TS01: a code is TS and three digits"),
        ({**fields, "severity": "fatal"}, "TS001: severity is one of error, warning, note"),
        ({**fields, "x": 1}, "TS001: unknown field x"),
        (missing, "TS001: no why"),
        ({**fields, "fix": 3}, "TS001: fix must be text"),
        (["TS001"], "an entry is not a mapping"),
    ):
        with pytest.raises(RuleDataError, match=re.escape(said)):
            Rule.from_entry(bad)
