"""Talos config patches as talosctl applies them: RFC 6902 lists read like strategic-merge
patches, and `lint --config-patch` checks patches applied together as one node's config.

The patch shapes follow the Talos docs' NVIDIA guide (`gpu-worker-patch.yaml` in
siderolabs/talos website/content/v1.4 and v1.5 `nvidia-gpu.md`, a JSON6902 list adding
`/machine/install/extensions`, `/machine/kernel` and `/machine/sysctls`), with its version
shortcodes filled in, and the strategic-merge form of the same guide from 1.6 on.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from typer.testing import CliRunner

from schematic.cli import app, register_all_commands
from schematic.core.model import Schematic
from schematic.doctor.lint import lint_paths
from schematic.doctor.lint.findings import Finding

NVIDIA = Schematic.from_extensions(
    ["siderolabs/nvidia-container-toolkit-lts", "siderolabs/nvidia-open-gpu-kernel-modules-lts"]
)
INSTALLER = f"""\
machine:
  install:
    image: factory.talos.dev/installer/{NVIDIA.id}:v1.12.6
"""
MODULES = """\
machine:
  kernel:
    modules:
      - name: nvidia
      - name: nvidia_uvm
      - name: nvidia_drm
      - name: nvidia_modeset
  sysctls:
    net.core.bpf_jit_harden: 1
"""
DOCS_JSON6902 = """\
- op: add
  path: /machine/install/extensions
  value:
    - image: ghcr.io/siderolabs/nvidia-open-gpu-kernel-modules:535.54.03-v1.5.0
    - image: ghcr.io/siderolabs/nvidia-container-toolkit:535.54.03-v1.13.1
- op: add
  path: /machine/kernel
  value:
    modules:
      - name: nvidia
      - name: nvidia_uvm
      - name: nvidia_drm
      - name: nvidia_modeset
- op: add
  path: /machine/sysctls
  value:
    net.core.bpf_jit_harden: 1
"""

register_all_commands()


def write(tmp_path: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))


def codes(findings: tuple[Finding, ...]) -> set[str]:
    return {finding.code for finding in findings}


def test_patches_checked_one_by_one_miss_what_the_other_sets(tmp_path: Path) -> None:
    write(tmp_path, {"gpu.schematic.yaml": NVIDIA.canonical()})
    write(tmp_path, {"nvidia-installer.yaml": INSTALLER, "nvidia-modules.yaml": MODULES})
    report = lint_paths([str(tmp_path)])
    assert {"TS123", "TS124"} <= codes(report.findings)


def test_patches_applied_together_are_one_config(tmp_path: Path) -> None:
    write(tmp_path, {"gpu.schematic.yaml": NVIDIA.canonical()})
    report = lint_paths(
        [str(tmp_path)],
        config_patches=[("nvidia-installer.yaml", INSTALLER), ("nvidia-modules.yaml", MODULES)],
    )
    assert not codes(report.findings) & {"TS123", "TS124"}


def test_the_first_patch_alone_still_misses_the_modules(tmp_path: Path) -> None:
    write(tmp_path, {"gpu.schematic.yaml": NVIDIA.canonical()})
    report = lint_paths([str(tmp_path)], config_patches=[("nvidia-installer.yaml", INSTALLER)])
    found = {f.code: f for f in report.findings}
    assert {"TS123", "TS124"} <= set(found)
    assert found["TS123"].file == "nvidia-installer.yaml"


def test_a_json6902_patch_installing_extensions_on_1_13_is_ts125(tmp_path: Path) -> None:
    write(tmp_path, {"gpu-worker-patch.yaml": DOCS_JSON6902})
    report = lint_paths([str(tmp_path)], talos="v1.13.0")
    [ts125] = [f for f in report.findings if f.code == "TS125"]
    # The line of the operation that writes machine.install.extensions.
    assert (ts125.file.endswith("gpu-worker-patch.yaml"), ts125.line) == (True, 3)


def test_a_json6902_patch_loads_modules_like_a_strategic_merge_one(tmp_path: Path) -> None:
    write(tmp_path, {"gpu.schematic.yaml": NVIDIA.canonical()})
    appended = """\
    - op: add
      path: /machine/kernel/modules/-
      value: {name: nvidia}
    """
    report = lint_paths(
        [str(tmp_path)],
        config_patches=[
            ("installer.yaml", INSTALLER),
            ("modules.yaml", textwrap.dedent(appended)),
            ("sysctl.yaml", "machine:\n  sysctls:\n    net.core.bpf_jit_harden: '1'\n"),
        ],
    )
    assert not codes(report.findings) & {"TS123", "TS124"}


def test_cli_config_patch_takes_files_and_inline_yaml(tmp_path: Path) -> None:
    write(tmp_path, {"gpu.schematic.yaml": NVIDIA.canonical()})
    write(tmp_path, {"installer.yaml": INSTALLER})
    result = CliRunner().invoke(
        app,
        [
            "lint",
            str(tmp_path / "gpu.schematic.yaml"),
            "--config-patch",
            f"@{tmp_path / 'installer.yaml'}",
            "--config-patch",
            MODULES,
        ],
    )
    assert result.exit_code == 0, result.output
    assert "TS123" not in result.stdout and "TS124" not in result.stdout


def test_cli_config_patch_that_cannot_be_read_is_one_message(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["lint", "--config-patch", f"@{tmp_path / 'missing.yaml'}"])
    assert result.exit_code == 1
    assert "missing.yaml" in result.stderr and "Traceback" not in result.output


def test_cli_lint_needs_a_path_or_a_patch() -> None:
    result = CliRunner().invoke(app, ["lint"])
    assert result.exit_code == 2
