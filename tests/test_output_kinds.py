"""The output kinds' table and the lint formats' table: every place that knows a kind reads
its row, and every file a kind writes for another tool is read back by the lint format its row
names (and by no other)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands
from schematic.doctor.lint.readers import LINT_FORMATS, format_named
from schematic.inputs.cluster_file import parse_cluster
from schematic.output.render.files import render_files
from schematic.output.render.kinds import DEFAULT_KINDS, KINDS, OUTPUT_KINDS, kind_named
from schematic.output.render.terraform import terraform_name
from schematic.plan.cluster import ClusterPlan, plan_cluster

register_all_commands()

# A Cozystack tenant GPU pool, a bare-metal pool whose name holds a `-` (a name another
# file refers to must be spelled by the one naming function), and a bare-metal GPU pool (its
# cluster runs NVIDIA's GPU Operator itself).
CLUSTER = """\
cluster: demo
namespace: tenant-demo
cozystack: {version: osimage}
talos: {version: v1.13.9}
pools:
  - {name: gpu, profile: kubevirt-rtx-pro-6000-blackwell-server}
  - {name: metal-a, profile: metal-intel}
  - {name: metal-gpu, profile: metal-hgx-b200-8x}
"""


@pytest.fixture(scope="module")
def plan() -> ClusterPlan:
    return plan_cluster(parse_cluster(CLUSTER, "c.yaml"), source="c.yaml")


@pytest.fixture(scope="module")
def files(plan: ClusterPlan) -> dict[str, bytes]:
    return render_files(plan, KINDS)


def test_names_are_unique_and_every_default_kind_is_a_kind() -> None:
    assert len(set(KINDS)) == len(OUTPUT_KINDS)
    assert set(DEFAULT_KINDS) <= set(KINDS)
    pool_files = [kind.pool_file for kind in OUTPUT_KINDS if kind.pool_file]
    assert len(set(pool_files)) == len(pool_files)


def test_each_lint_format_an_output_kind_names_is_a_row_of_the_lint_table() -> None:
    named = {kind.lint_format for kind in OUTPUT_KINDS if kind.lint_format is not None}
    assert named <= {row.name for row in LINT_FORMATS}
    # An apply step is for a tool's file: each such kind is read back by lint.
    for kind in OUTPUT_KINDS:
        if kind.apply is not None:
            assert kind.lint_format is not None, kind.name


@pytest.mark.parametrize("kind", [k for k in OUTPUT_KINDS if k.lint_format], ids=lambda k: k.name)
def test_a_written_file_is_recognised_by_its_lint_format_only(
    kind: object, files: dict[str, bytes]
) -> None:
    from schematic.output.render.kinds import OutputKind

    assert isinstance(kind, OutputKind) and kind.lint_format is not None
    written = [body for name, body in files.items() if name.endswith(f"/{kind.pool_file}")]
    assert len(written) == 3  # every pool: a tool's file is not tenant-only
    for body in written:
        documents = list(yaml.safe_load_all(body))
        if kind.pool_file is not None and kind.pool_file.endswith(".tpl"):
            # A patch template is read through the layout its format reads (topf.yaml's
            # folders: tests/test_topf.py); alone it is a patch, no tool's file.
            assert not any(row.recognise(doc) for row in LINT_FORMATS for doc in documents)
            continue
        own = format_named(kind.lint_format)
        assert any(own.recognise(doc) for doc in documents)
        for other in LINT_FORMATS:
            if other.name != kind.lint_format:
                assert not any(other.recognise(doc) for doc in documents), other.name


def test_tenant_only_kinds_are_written_for_the_tenant_pool_alone(files: dict[str, bytes]) -> None:
    for kind in OUTPUT_KINDS:
        if kind.pool_file is None or kind.render is None or kind.name == "cozystack":
            continue  # cozystack gives way to helmrelease when both are asked for
        assert f"gpu/{kind.pool_file}" in files, kind.name
        assert (f"metal-a/{kind.pool_file}" in files) is not kind.tenant_only, kind.name


def test_kustomization_lists_the_manifest_kinds_files(plan: ClusterPlan) -> None:
    manifests = [kind for kind in OUTPUT_KINDS if kind.manifest]
    assert manifests
    for kind in manifests:
        files = render_files(plan, (kind.name,))
        listed = yaml.safe_load(files["kustomization.yaml"])["resources"]
        assert listed == [f"gpu/{kind.pool_file}"]
    # Must not fire: no manifest kind, no kustomization.
    assert "kustomization.yaml" not in render_files(plan, ("values", "urls"))


def test_apply_md_gives_each_tool_kinds_step_with_the_renderers_names(
    files: dict[str, bytes],
) -> None:
    apply = files["APPLY.md"].decode()
    for kind in OUTPUT_KINDS:
        if kind.apply is None:
            continue
        assert f"`metal-a/{kind.pool_file}`" in apply, kind.name
    # The Terraform local APPLY.md names is the one the file declares.
    local = terraform_name("metal-a")
    declared = json.loads(files[f"metal-a/{kind_named('terraform').pool_file}"])["locals"]
    assert local in declared
    assert f".{local}`" in apply
    assert "talos_pool_metal-a" not in apply


def test_every_kind_is_a_format_choice_and_writes_its_files(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(CLUSTER)
    for kind in OUTPUT_KINDS:
        out = tmp_path / kind.name
        result = CliRunner().invoke(
            app, ["generate", str(cluster), "--out", str(out), "-f", kind.name]
        )
        assert result.exit_code == 0, (kind.name, result.output)
        written = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}
        expected = {*kind.cluster_files}
        if kind.pool_file is not None:
            expected.add(f"gpu/{kind.pool_file}")
        assert expected <= written, kind.name


def test_an_unknown_format_is_refused_with_the_tables_names(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(CLUSTER)
    result = CliRunner().invoke(app, ["generate", str(cluster), "-f", "topology"])
    assert result.exit_code == 2
    assert not list(tmp_path.glob("*/"))
