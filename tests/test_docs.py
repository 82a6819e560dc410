"""The documentation site: generated reference pages cover the package's data, the guide states
what a Cozystack operator must know, and every page is reachable from the navigation."""

from __future__ import annotations

import functools
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from schematic.doctor.lint.findings import RULES
from schematic.facts import catalog, chart_targets, talos

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_pages", ROOT / "scripts" / "docs_pages.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("docs_pages", module)
    spec.loader.exec_module(module)
    return module


pages = _load_generator()


@functools.cache
def _page(path: str) -> str:
    # The GPU matrix decides every device on every release: build each page once.
    return str(pages.build_page(path))


def _headings(text: str) -> set[str]:
    return {line.lstrip("#").strip() for line in text.splitlines() if line.startswith("## ")}


def test_every_rule_code_has_its_section() -> None:
    text = _page("reference/codes.md")
    headings = _headings(text)
    assert set(RULES) <= headings
    for rule in RULES.values():
        assert rule.title in text


def test_every_talos_release_is_in_the_gpu_matrix_and_the_extension_table() -> None:
    matrix = _page("reference/gpu-support.md")
    for row in talos.driver_table():
        assert f"Talos {row.first} to {row.last}" in _headings(matrix)
        assert row.lts_driver in matrix
    extensions = _page("reference/extensions.md")
    for release in catalog.talos_versions():
        assert f"`{release}`" in extensions
    assert "`siderolabs/nvidia-open-gpu-kernel-modules-lts`" in extensions


def test_the_gpu_matrix_shows_the_blackwell_decision() -> None:
    matrix = _page("reference/gpu-support.md")
    # On v1.12 an RTX PRO 6000 Blackwell Server runs the open modules of the LTS 580 driver.
    section = matrix.split("## Talos v1.12.0")[1].split("\n## ")[0].split("Refused")[0]
    blackwell = [line for line in section.splitlines() if "Blackwell (" in line]
    assert blackwell
    assert all("proprietary" not in line.split("|")[2] for line in blackwell)
    assert any("| open | lts | 580." in line for line in blackwell)


def test_every_chart_target_and_command_is_documented() -> None:
    targets = _page("reference/chart-targets.md")
    for target in chart_targets.chart_targets():
        assert any(h.startswith(f"{target.name}:") for h in _headings(targets))
    cli = _page("reference/cli.md")
    for command in ("id", "gpu", "generate", "check", "upgrade", "lint", "explain", "detect"):
        assert command in _headings(cli)
        assert f"Usage: talos-schematic {command} " in cli


def test_the_limits_page_shows_the_defaults() -> None:
    text = _page("reference/limits.md")
    assert "16 MiB" in text and "--max-input-size" in text


def _nav_paths(node: object) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [path for item in node for path in _nav_paths(item)]
    if isinstance(node, dict):
        return [path for value in node.values() for path in _nav_paths(value)]
    return []


def test_every_page_is_in_the_navigation() -> None:
    config = (ROOT / "mkdocs.yml").read_text()
    # The hooks line names a Python file; only the nav matters here.
    nav = yaml.safe_load(config.split("\nnav:\n", 1)[1].join(["nav:\n", ""]))["nav"]
    listed = set(_nav_paths(nav))
    written = {str(path.relative_to(DOCS)) for path in DOCS.rglob("*.md")}
    assert listed == written | set(pages.PAGES)


def test_the_readme_is_a_front_page() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    # The quick start's two commands: the main job on a shipped example, and the tests.
    assert "make example" in readme and "make test" in readme


@pytest.mark.parametrize(
    "fact",
    [
        "three states",
        "`kernelModules: null`",
        "nvidia-open-gpu-kernel-modules",
        "No devices found",
        "70 minutes",
        "`50001`",
        "node_memory_MemAvailable_bytes",
        "mergeOverwrite",
        "Recreate such pods",
        "HAMi",
    ],
)
def test_the_cozystack_guide_states(fact: str) -> None:
    text = (DOCS / "guides" / "cozystack-gpu-pools.md").read_text()
    assert fact in text


def test_guides_link_only_to_pages_that_exist() -> None:
    for page in DOCS.rglob("*.md"):
        for target in re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", page.read_text()):
            resolved = (page.parent / target).resolve().relative_to(DOCS.resolve())
            assert (DOCS / resolved).is_file() or str(resolved) in pages.PAGES, (page, target)


def test_the_library_page_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The page's code is what a library user copies: it must run as written, offline.
    text = (DOCS / "guides" / "library.md").read_text("utf-8")
    code = re.search(r"```python\n(.*?)```", text, re.S)
    assert code is not None
    (tmp_path / "examples").mkdir()
    for name in ("cluster.yaml",):
        (tmp_path / "examples" / name).write_bytes((ROOT / "examples" / name).read_bytes())
    monkeypatch.chdir(tmp_path)
    exec(compile(code.group(1), "library.md", "exec"), {})
    printed = capsys.readouterr().out
    assert "0 up to date" in printed
    assert "exit" not in printed  # no TalosSchematicError
    assert (tmp_path / "deploy" / "mycluster" / "index.yaml").is_file()
