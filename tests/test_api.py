"""The library entry point (schematic.api): generate, check and upgrade as request → result."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from schematic.api import Request, UpgradeRequest, check, generate, upgrade
from schematic.errors import ClusterFileError, UsageError
from schematic.output.render.upgrade import upgrade_json, upgrade_markdown

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "cluster.yaml"

SECUREBOOT_BESIDE_PLAIN = """\
cluster: c
talos: {version: v1.12.6}
pools:
  - name: plain
    profile: metal-intel
  - name: secure
    profile: metal-intel
    secureboot: {enabled: true}
"""


def test_generate_writes_the_tree_it_returns(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = generate(Request(EXAMPLE, out=out))
    assert result.status == 0 and result.text == ""
    assert result.files and all(
        (out / name).read_bytes() == body for name, body in result.files.items()
    )
    assert result.plan is not None and [pool.name for pool in result.plan.pools] == [
        "rtx6000",
        "l40s",
        "v100",
        "cpu",
    ]


def test_generate_without_out_renders_one_kind_and_writes_nothing(tmp_path: Path) -> None:
    result = generate(Request(EXAMPLE, kinds=("values",), pools=("cpu",)))
    assert result.text.startswith("# pool cpu: schematic ") and result.files == {}
    assert "\ncluster: mycluster\n" in result.text
    assert all(not str(line).startswith("removed") for line in result.messages)


def test_a_request_that_contradicts_itself_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as err:
        generate(Request(EXAMPLE, out=tmp_path / "out", pools=("nope",)))
    assert (err.value.option, err.value.exit_code) == ("--pool", 2)
    assert "has no pool 'nope'; its pools: rtx6000, l40s, v100, cpu" in str(err.value)
    with pytest.raises(UsageError) as err:
        generate(Request(EXAMPLE, kinds=("values", "urls")))
    assert err.value.option == "--format"
    assert not (tmp_path / "out").exists()


def test_check_is_3_after_an_edit_and_names_the_file(tmp_path: Path) -> None:
    out = tmp_path / "out"
    generate(Request(EXAMPLE, out=out))
    assert check(Request(EXAMPLE, out=out)).status == 0
    values = out / "cpu" / "values.yaml"
    values.write_text(values.read_text() + "extra: 1\n")
    drifted = check(Request(EXAMPLE, out=out))
    assert drifted.status == 3
    assert tuple(drifted.detail.changed) == ("cpu/values.yaml",)


def test_a_cluster_file_error_is_raised_not_printed(tmp_path: Path) -> None:
    broken = tmp_path / "c.yaml"
    broken.write_text(
        "cluster: c\ntalos: {version: v1.13.9}\npools:\n  - {name: p, profile: nope}\n"
    )
    with pytest.raises(ClusterFileError) as err:
        generate(Request(broken, out=tmp_path / "out"))
    assert err.value.exit_code == 1 and "nope" in str(err.value)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("breaking", [False, True])
def test_upgrade_reports_the_secureboot_installer_in_json_and_markdown(
    tmp_path: Path, breaking: bool
) -> None:
    # The SecureBoot pool shares the plain pool's schematic: only its plan says which
    # installer it upgrades from; a breaking pool in the file must not change that.
    text = SECUREBOOT_BESIDE_PLAIN
    if breaking:
        text += "  - name: v100\n    profile: kubevirt-v100-pcie-16gb\n"
        text += "    nvidia: {tier: production}\n"
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(text)
    result = upgrade(UpgradeRequest(cluster, to="v1.13.9"))
    assert result.status == (3 if breaking else 0)
    pools = {pool["name"]: pool for pool in json.loads(upgrade_json(result.detail))["pools"]}
    secure, plain = pools["secure"]["installer"], pools["plain"]["installer"]
    assert pools["secure"]["schematicID"] == pools["plain"]["schematicID"]
    assert "/installer-secureboot/" in secure["before"]
    assert "/installer-secureboot/" in secure["after"]
    assert "/installer/" in plain["after"]
    markdown = upgrade_markdown(result.detail)
    row = next(line for line in markdown.splitlines() if line.startswith("| `secure`"))
    assert f"`talosctl upgrade --nodes <node> --image {secure['after']}`" in row


def test_a_one_document_kind_of_two_pools_needs_a_pool(tmp_path: Path) -> None:
    # machine-config is one patch: two pools' documents in one stream would patch one node
    # with the other pool's settings.
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(SECUREBOOT_BESIDE_PLAIN)
    with pytest.raises(UsageError) as err:
        generate(Request(cluster, kinds=("machine-config",)))
    assert err.value.option == "--format" and "has 2 pools (plain, secure)" in str(err.value)
    one = generate(Request(cluster, kinds=("machine-config",), pools=("secure",)))
    assert "installer-secureboot/" in one.text


def test_a_run_reads_the_index_once_to_plan_and_once_under_the_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The directory's index is read before rendering (which files are the tool's) and once
    # under the directory's lock (what it holds now): never again by a later step.
    from schematic.output import disk

    cluster = EXAMPLE
    out = tmp_path / "out"
    generate(Request(cluster, out=out))
    reads: list[str] = []
    real = disk.read_file

    def counted(root: Path, name: str, **options: Any) -> bytes | None:
        reads.append(name)
        return real(root, name, **options)

    monkeypatch.setattr(disk, "read_file", counted)
    generate(Request(cluster, out=out, kinds=("platform", "urls")))
    assert reads.count("index.yaml") == 2
    reads.clear()
    assert check(Request(cluster, out=out)).status == 0
    assert reads.count("index.yaml") == 2


def test_lint_is_a_request_to_a_result(tmp_path: Path) -> None:
    from schematic.api import LintRequest, lint

    out = tmp_path / "out"
    generate(Request(EXAMPLE, out=out))
    clean = lint(LintRequest(paths=(str(out),)))
    assert clean.status == 0 and clean.detail.findings == ()
    # A KubeVirt GPU pool's values without their kernel modules: an error, status 3 ...
    values = out / "l40s" / "values.yaml"
    values.write_text(values.read_text().split("kernelModules:")[0])
    broken = lint(LintRequest(paths=(str(values),)))
    codes = {finding.code for finding in broken.detail.findings}
    assert broken.status == 3 and codes
    # ... unless its codes are left out; an unknown code is the request's error.
    assert lint(LintRequest(paths=(str(values),), ignore=tuple(codes))).status == 0
    with pytest.raises(UsageError, match="unknown lint code TS999"):
        lint(LintRequest(paths=(str(values),), ignore=("TS999",)))
    with pytest.raises(UsageError, match="PATH or --config-patch"):
        lint(LintRequest())


def test_init_is_a_request_to_a_result(tmp_path: Path) -> None:
    from schematic.api import InitRequest, init
    from schematic.errors import OutputError

    asked = InitRequest(pools=("gpu=kubevirt-l40s",), chart="osimage", namespace="tenant-ml")
    printed = init(asked)
    assert printed.plan is not None and [p.name for p in printed.plan.pools] == ["gpu"]
    written = tmp_path / "cluster.yaml"
    assert init(replace(asked, file=written)).text == ""
    assert written.read_text() == printed.text
    # What generate accepts as it is: the written file plans to the same schematic.
    result = generate(Request(written, out=tmp_path / "out"))
    assert result.plan is not None
    assert result.plan.pools[0].schematic_id == printed.plan.pools[0].schematic_id
    # A tenant pool without a chart is the request's error; an existing file is never replaced.
    with pytest.raises(UsageError, match="--chart TARGET"):
        init(replace(asked, chart=None))
    with pytest.raises(OutputError, match="exists"):
        init(replace(asked, file=written, cluster="other"))
    assert "cluster: mycluster" in written.read_text()
