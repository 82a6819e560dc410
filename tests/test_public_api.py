"""The schematic core's public names are pinned: a change to them is a deliberate one."""

from __future__ import annotations

from schematic import api
from schematic.core import canonical, decode, goscalar, model


def test_core_public_api() -> None:
    assert sorted(model.__all__) == [
        "BOOTLOADERS",
        "Customization",
        "DiskImage",
        "MetaValue",
        "Overlay",
        "Schematic",
        "SecureBoot",
        "SystemExtensions",
    ]
    assert sorted(decode.__all__) == [
        "BOOTLOADERS",
        "canonical_schematic",
        "canonical_tree",
        "decode_fields",
        "decode_fields_at",
        "go_value",
        "schematic_id_of",
    ]
    assert sorted(canonical.__all__) == [
        "GoMap",
        "GoTime",
        "emit_document",
        "format_go_float",
        "natural_less",
        "sha256_hex",
        "string_scalar",
    ]
    assert sorted(goscalar.__all__) == [
        "NULL_WORDS",
        "RESOLVER_FIRST_CHARACTERS",
        "YAML11_BOOLEANS",
        "go_parse_int",
        "parse_go_timestamp",
        "reads_as_string",
        "resolve_plain",
    ]
    for module in (model, decode, canonical, goscalar):
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"


def test_library_entry_point_public_api() -> None:
    assert sorted(api.__all__) == [
        "InitRequest",
        "LintRequest",
        "Request",
        "Result",
        "UpgradeRequest",
        "check",
        "generate",
        "init",
        "lint",
        "upgrade",
    ]
    for name in api.__all__:
        assert hasattr(api, name), f"api.{name}"
