"""Extensions outside the official catalogue, declared in the cluster file
(`talos.customExtensions`): planned and marked unverified offline, decided by the factory's own
list with --live-catalogue (Image Factory v1.4.0+ extra extensions, image-factory PR #491)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from release_factory import FactoryState, extension, release_extensions, release_factory
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands
from schematic.core.model import Schematic

register_all_commands()

CLUSTER = """\
cluster: c
namespace: tenant-c
talos:
  version: v1.13.9
{declared}pools:
  - name: tools
    profile: kubevirt-cpu
    extensions: [acme/gpu-tools]
"""
DECLARED = "  customExtensions: [acme/gpu-tools]\n"


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    base = {"TALOS_SCHEMATIC_FACTORY_TOKEN": "", "TALOS_SCHEMATIC_FACTORY_AUTH": ""}
    result = CliRunner().invoke(app, list(args), env={**base, **(env or {})})
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def cluster(tmp_path: Path, declared: str = DECLARED) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(CLUSTER.format(declared=declared))
    return path


def test_a_declared_custom_extension_is_planned_and_marked_unverified(tmp_path: Path) -> None:
    code, stdout, err = run("generate", str(cluster(tmp_path)), "--chart", "osimage", "-f", "json")
    assert code == 0, err
    pool = json.loads(stdout)["pools"][0]
    assert pool["extensions"] == ["acme/gpu-tools", "siderolabs/qemu-guest-agent"]
    # The ID is computed offline as the factory computes it, the custom name included.
    expected = Schematic.from_extensions(["acme/gpu-tools", "siderolabs/qemu-guest-agent"])
    assert pool["schematicID"] == expected.id
    assert 'pool "tools": unverified: acme/gpu-tools (talos.customExtensions)' in err


def test_an_undeclared_name_outside_the_catalogue_is_still_refused(tmp_path: Path) -> None:
    code, _, err = run("generate", str(cluster(tmp_path, declared="")), "--chart", "osimage")
    assert code == 1
    assert "extension 'acme/gpu-tools' is not offered by Talos v1.13.9" in err
    assert "unverified" not in err


def test_declaring_a_name_no_pool_uses_says_nothing(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(
        "cluster: c\ntalos:\n  version: v1.13.9\n  customExtensions: [acme/other]\n"
        "pools:\n  - {name: cpu, profile: kubevirt-cpu}\n"
    )
    code, _, err = run("generate", str(path), "--chart", "osimage", "-f", "json")
    assert code == 0 and "unverified" not in err


@pytest.mark.parametrize(
    ("declared", "said"),
    [
        ("[siderolabs/qemu-guest-agent]", "is an official name, checked against"),
        ("[gpu-tools]", "is not an extension name such as acme/gpu-tools"),
        ("[Acme/Tools]", "is not an extension name such as acme/gpu-tools"),
        ("acme/gpu-tools", "write a list of extension names"),
    ],
)
def test_a_declaration_that_is_not_a_custom_name_is_an_error_naming_the_key(
    tmp_path: Path, declared: str, said: str
) -> None:
    path = cluster(tmp_path, declared=f"  customExtensions: {declared}\n")
    code, _, err = run("generate", str(path), "--chart", "osimage")
    assert code == 1 and "customExtensions" in err and said in err


@pytest.mark.parametrize("served", [True, False])
def test_with_live_catalogue_the_factorys_list_decides(tmp_path: Path, served: bool) -> None:
    listing = release_extensions("v1.13.9", "580.178.04", "595.91.07", "v1.19.1")
    if served:
        # An extra extension as image-factory lists one: its repository is its name.
        extra = extension("gpu-tools", "1.0.0")
        extra = {**extra, "name": "acme/gpu-tools", "ref": "registry.example/acme/gpu-tools:1.0.0"}
        listing.append(extra)
    state = FactoryState(releases={"v1.13.9": listing})
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    with release_factory(state) as url:
        env["TALOS_SCHEMATIC_FACTORY"] = url
        args = ("generate", str(cluster(tmp_path)), "--chart", "osimage", "--live-catalogue")
        code, _, err = run(*args, "--out", str(tmp_path / "out"), env=env)
    if served:
        assert code == 0, err
        lock = (tmp_path / "out" / "extensions.lock.yaml").read_text()
        assert "registry.example/acme/gpu-tools:1.0.0" in lock
    else:
        assert code == 1 and "acme/gpu-tools" in err
        assert not os.path.exists(tmp_path / "out")


def test_lint_takes_an_extra_extension_the_factory_lists_in_the_facts_file(
    tmp_path: Path,
) -> None:
    listing = release_extensions("v1.13.9", "580.178.04", "595.91.07", "v1.19.1")
    extra = {**extension("gpu-tools", "1.0.0"), "name": "acme/gpu-tools"}
    state = FactoryState(releases={"v1.13.9": [*listing, extra]})
    facts = tmp_path / "talos-facts.yaml"
    with release_factory(state) as url:
        code, _, err = run("facts", "refresh", "--factory", url, "--out", str(facts))
    assert code == 0, err
    schematic = tmp_path / "tools.schematic.yaml"
    schematic.write_text(Schematic.from_extensions(["acme/gpu-tools"]).canonical())
    lint = ("lint", str(schematic), "--talos", "v1.13.9", "-f", "json")
    code, stdout, _ = run(*lint)
    assert code == 3 and "TS150" in stdout and "acme/gpu-tools" in stdout
    code, stdout, err = run(*lint, "--facts", str(facts))
    assert code == 0, stdout + err
    assert "TS150" not in stdout and f"facts: {facts} (" in err
