"""`lint` on Terraform JSON: what a template directive hides is not read, and a finding in a
schematic or patch points at the line of the JSON string that holds it.

The documents follow the siderolabs/talos provider's resources as `generate -f terraform`
writes them (schematic/output/render/terraform.py; the provider's schema is cited in
schematic/data/SOURCES.md). A JSON string holds no line break, so everything in one sits on the
string's line; Terraform reads `${`/`%{` as the start of an expression or directive and
`$${`/`%%{` as the literal text (Terraform's string templates).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schematic.doctor.lint import lint_paths

RESOURCE = "talos_image_factory_schematic"
INSTALLER = "factory.talos.dev/installer/" + "a" * 64 + ":v1.13.9"


def write(tmp_path: Path, document: object) -> tuple[Path, list[str]]:
    path = tmp_path / "main.tf.json"
    text = json.dumps(document, indent=2)
    path.write_text(text, "utf-8")
    return path, text.splitlines()


def line_of(lines: list[str], needle: str) -> int:
    (found,) = [n for n, line in enumerate(lines, 1) if needle in line]
    return found


def findings(path: Path) -> list[tuple[str, int | None]]:
    return [(f.code, f.line) for f in lint_paths([str(path)]).findings]


@pytest.mark.parametrize(
    ("schematic", "read"),
    [
        # A directive: what it builds is not known until Terraform renders it.
        ("customization:\n  extraKernelArgs: ['z=%{if}']\n  bogus: 1\n", False),
        ("customization:\n%{ if var.gpu }  bogus: 1\n%{ endif }", False),
        ("customization:\n  extraKernelArgs: ['z=${var.z}']\n  bogus: 1\n", False),
        # Escaped, the same text is literal: read, and its unknown key found.
        ("customization:\n  extraKernelArgs: ['z=%%{if}']\n  bogus: 1\n", True),
        ("customization:\n  extraKernelArgs: ['z=$${var.z}']\n  bogus: 1\n", True),
    ],
)
def test_a_template_directive_or_expression_is_not_read_and_an_escaped_one_is(
    tmp_path: Path, schematic: str, read: bool
) -> None:
    path, lines = write(tmp_path, {"resource": {RESOURCE: {"pool": {"schematic": schematic}}}})
    found = findings(path)
    if read:
        assert found == [("TS004", line_of(lines, '"schematic"'))]
    else:
        assert found == []


def test_a_finding_in_a_patch_points_at_the_patch_s_line(tmp_path: Path) -> None:
    patch = f"machine:\n  install:\n    image: {INSTALLER}\n"
    document = {
        "resource": {
            "talos_machine_configuration_apply": {
                "worker": {
                    "node": "10.0.0.5",
                    "config_patches": ["machine: {}\n", patch, "%{ if x }machine: {}%{ endif }"],
                }
            }
        }
    }
    path, lines = write(tmp_path, document)
    # The installer is on the patch's third line, which is the file's line of the string.
    assert findings(path) == [("TS001", line_of(lines, INSTALLER))]


def test_a_duplicate_key_in_a_patch_points_at_the_patch_s_line(tmp_path: Path) -> None:
    patch = "machine:\n  kernel: {}\nmachine:\n  sysctls: {}\n"
    document = {
        "resource": {
            "talos_machine_configuration_apply": {
                "worker": {"node": "10.0.0.5", "config_patches": [patch]}
            }
        }
    }
    path, lines = write(tmp_path, document)
    assert findings(path) == [("TS002", line_of(lines, "sysctls"))]
