"""`talos-schematic upgrade`: text, JSON and Markdown reports, exit codes, --live-catalogue."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import respx
from typer.testing import CliRunner, Result

from schematic.cli import app, register_all_commands
from schematic.facts.catalog import talos_versions
from schematic.facts.release_facts import facts_note

register_all_commands()

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "cluster.yaml"
# What every run says when no facts file is in use.
SHIPPED_FACTS = facts_note()
NEWEST_1_14 = max(
    (version for version in talos_versions() if version.startswith("v1.14.")),
    key=lambda version: int(version.rsplit(".", 1)[1]),
)
URL = "https://factory.example.test"
CLUSTER = f"""\
cluster: ml
talos:
  version: v1.12.6
  imageFactoryURL: {URL}
pools:
  - name: v100
    profile: kubevirt-v100-pcie-16gb
    nvidia: {{tier: production}}
  - name: cpu
    profile: kubevirt-cpu
    maxReplicas: 3
"""


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(app, list(args), env=env)


def table_rows(markdown: str) -> list[list[str]]:
    """The cells of the Markdown table's rows (header first), split on unescaped pipes."""
    rows = []
    for line in markdown.splitlines():
        if line.startswith("|"):
            assert line.endswith(" |"), line
            cells = re.split(r"(?<!\\)\|", line[1:-1])
            rows.append([cell.strip() for cell in cells])
    return rows


# --- the shipped example -------------------------------------------------------------------------


def test_example_to_the_newest_1_14_prints_every_pools_driver_and_extensions() -> None:
    result = run("upgrade", str(EXAMPLE), "--to", NEWEST_1_14)
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert out.startswith(f"mycluster: Talos v1.13.9 → {NEWEST_1_14}: 4 pools:")
    blocks = re.split(r"^(?=pool )", out, flags=re.MULTILINE)[1:]
    assert [block.split(":", 1)[0] for block in blocks] == [
        "pool rtx6000",
        "pool l40s",
        "pool v100",
        "pool cpu",
    ]
    for block in blocks:
        assert "\n  driver: " in block
        assert "\n  extensions: " in block or "\n  extensions:\n" in block
    rtx = blocks[0]
    assert "driver: open production 595.91.07" in rtx
    assert "KernelModuleConfig documents" in rtx
    # The installer follows the release's installer form; it carries the target release.
    assert re.search(rf"talosctl upgrade --nodes <node> --image \S+:{NEWEST_1_14}\n", rtx)
    v100 = blocks[2]
    assert "driver: proprietary lts 580.178.04" in v100


def test_example_cpu_pool_keeps_its_schematic_but_its_machines_are_replaced() -> None:
    """Same schematic, no driver, same machine config: still a change, since the boot disk of
    the new release replaces every machine (it used to say "no change" beside that)."""
    result = run("upgrade", str(EXAMPLE), "--to", NEWEST_1_14, "--json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    cpu = next(pool for pool in document["pools"] if pool["name"] == "cpu")
    assert cpu["status"] == "changed"
    assert cpu["schematicID"]["before"] == cpu["schematicID"]["after"]
    assert cpu["extensions"] == {"added": [], "removed": [], "renamed": []}
    assert cpu["driver"] == {"before": None, "after": None, "why": []}
    assert cpu["machineConfig"] == []
    assert cpu["machinesReplaced"] == {
        "replaced": True,
        "why": [
            f"the boot-disk URL changes (Talos v1.13.9 → {NEWEST_1_14}): Cozystack replaces "
            "every machine of the pool with one booting the new disk",
            "the chart names its KubevirtMachineTemplate by a hash of its content, so the "
            "MachineDeployment rolls onto a new one: up to maxReplicas new VMs at once, one old "
            "VM removed at a time (a GPU VM waits for a free GPU, which each removal frees)",
        ],
    }
    # The example names its installer repository: nothing new in the output.
    assert cpu["output"] == []
    assert [node["action"] for node in cpu["nodes"]] == ["image"]
    text = run("upgrade", str(EXAMPLE), "--to", NEWEST_1_14).stdout
    assert "pool cpu: changes\n" in text and "no change" not in text


def test_same_release_same_file_is_no_change() -> None:
    result = run("upgrade", str(EXAMPLE), "--to", "v1.13.9")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.count(": no change\n") == 4
    assert "machines:" not in result.stdout


def test_output_is_deterministic() -> None:
    first = run("upgrade", str(EXAMPLE), "--to", NEWEST_1_14, "-f", "markdown")
    second = run("upgrade", str(EXAMPLE), "--to", NEWEST_1_14, "-f", "markdown")
    assert first.stdout == second.stdout
    assert first.stdout.endswith("\n")


# --- a pool that breaks ----------------------------------------------------------------------


@pytest.fixture
def cluster(tmp_path: Path) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(CLUSTER)
    return path


def test_volta_on_production_from_1_12_to_1_13_breaks_with_exit_3_and_the_fix(
    cluster: Path,
) -> None:
    result = run("upgrade", str(cluster), "--to", "v1.13.9")
    assert result.exit_code == 3
    assert "pool v100: BREAKS" in result.stdout
    assert "does not drive 10de:1db4" in result.stdout
    assert "pin nvidia.tier: lts on this pool" in result.stdout
    assert "stay on Talos v1.12.6" in result.stdout
    # Its schematic stays, but the new release's disk replaces its machines.
    assert "pool cpu: changes\n" in result.stdout
    assert "  machines: replaced: the boot-disk URL changes (Talos v1.12.6 → v1.13.9)" in (
        result.stdout
    )
    assert result.stderr == (
        f"talos-schematic: {SHIPPED_FACTS}\n"
        "talos-schematic: 1 pool would break on Talos v1.13.9: v100\n"
    )


def test_from_compares_a_file_already_bumped_with_the_release_it_came_from(
    cluster: Path,
) -> None:
    cluster.write_text(CLUSTER.replace("v1.12.6", "v1.13.9").replace("production", "lts"))
    result = run("upgrade", str(cluster), "--from", "v1.12.6", "--json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["talos"] == {"before": "v1.12.6", "after": "v1.13.9"}
    v100 = document["pools"][0]
    assert v100["driver"]["before"]["driver"] == "580.126.20"
    assert v100["driver"]["after"]["driver"] == "580.178.04"


def test_json_carries_the_refusal_and_the_exit_code(cluster: Path) -> None:
    result = run("upgrade", str(cluster), "--to", "v1.13.9", "--format", "json")
    assert result.exit_code == 3
    document = json.loads(result.stdout)
    assert document["breaking"] is True
    v100 = document["pools"][0]
    assert v100["status"] == "breaking"
    assert v100["schematicID"]["after"] is None
    assert v100["refused"]["fixes"][0].startswith("pin nvidia.tier: lts")


def test_markdown_is_one_table_with_a_row_per_pool(cluster: Path) -> None:
    result = run("upgrade", str(cluster), "--to", "v1.13.9", "--format", "markdown")
    assert result.exit_code == 3
    rows = table_rows(result.stdout)
    header, separator, *body = rows
    assert header[:2] == ["pool", "status"]
    assert set(separator) == {"---"}
    assert all(len(row) == len(header) for row in rows)
    assert [row[0] for row in body] == ["`v100`", "`cpu`"]
    assert body[0][1] == "**BREAKS**"
    assert body[1][1] == "changes"
    assert body[1][header.index("nodes")].startswith("machines replaced: the boot-disk URL")
    # The table is contiguous (a blank line would end it) and the fix follows it.
    lines = result.stdout.splitlines()
    first = lines.index(next(line for line in lines if line.startswith("|")))
    assert all(line.startswith("|") for line in lines[first : first + len(rows)])
    assert "#### `v100` would break" in result.stdout
    assert "- pin nvidia.tier: lts on this pool" in result.stdout


def test_markdown_cells_escape_pipes_and_keep_rows_on_one_line(cluster: Path) -> None:
    text = CLUSTER.replace("    maxReplicas: 3\n", "    kernelArgs: ['a|b']\n")
    cluster.write_text(text)
    result = run("upgrade", str(cluster), "--from", "v1.12.6", "--to", "v1.12.6", "-f", "markdown")
    assert result.exit_code == 0, result.stderr
    rows = table_rows(result.stdout)
    assert all(len(row) == len(rows[0]) for row in rows)


# --- usage and the factory ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give the release to upgrade to"),
        (("--to", "1.x"), "not a Talos version"),
        (("--to", "v1.14.0-rc.1"), "pre-release"),
        (("--to", NEWEST_1_14, "--json", "--format", "markdown"), "--json is --format json"),
    ],
)
def test_usage_errors_exit_2(args: tuple[str, ...], message: str) -> None:
    result = run("upgrade", str(EXAMPLE), *args)
    assert result.exit_code == 2
    assert message in " ".join(result.stderr.split())


def test_a_missing_cluster_file_is_one_message(tmp_path: Path) -> None:
    result = run("upgrade", str(tmp_path / "nope.yaml"), "--to", NEWEST_1_14)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"talos-schematic: {tmp_path / 'nope.yaml'}: cannot read")
    assert len(result.stderr.splitlines()) == 1


def test_beyond_the_tables_notes_the_last_row() -> None:
    # GPU pools have no drivers there: they break, naming the command that reads them.
    result = run("upgrade", str(EXAMPLE), "--to", "v1.99.0")
    assert result.exit_code == 3 and "talos-schematic facts refresh" in result.stdout
    newest = talos_versions()[-1]
    result = run("upgrade", str(EXAMPLE), "--to", "v1.99.0", "--assume-drivers-of", newest)
    assert result.exit_code == 0, result.stderr
    assert f"newer than the packaged tables (newest {talos_versions()[-1]})" in result.stdout
    assert ":v1.99.0\n" in result.stdout


def test_live_catalogue_checks_names_against_the_factory(
    cluster: Path, factory_env: dict[str, str]
) -> None:
    offered = [
        {"name": name, "ref": f"ghcr.io/{name}:v1", "digest": "sha256:" + "0" * 64}
        for name in ("siderolabs/qemu-guest-agent",)
    ]
    cluster.write_text(CLUSTER.replace("production", "lts"))
    with respx.mock(base_url=URL, assert_all_mocked=True) as mock:
        route = mock.get("/version/v1.13.9/extensions/official").mock(
            return_value=httpx.Response(200, json=offered)
        )
        result = run(
            "upgrade", str(cluster), "--to", "v1.13.9", "--live-catalogue", env=factory_env
        )
    assert route.call_count == 1
    assert result.exit_code == 3
    # The one live-catalogue check generate and check use, with its wording.
    assert f"{URL}: Talos v1.13.9 offers no extension siderolabs/nonfree-kmod-nvidia-lts" in (
        result.stdout
    )
    assert "pool cpu: changes" in result.stdout


def test_offline_upgrade_does_not_import_httpx(cluster: Path) -> None:
    program = (
        "import sys\n"
        "from schematic.cli import main\n"
        f"sys.argv = ['talos-schematic', 'upgrade', {str(cluster)!r}, '--to', 'v1.12.6']\n"
        "try:\n    main()\nexcept SystemExit as done:\n    assert not done.code, done.code\n"
        "print('httpx' in sys.modules, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == f"talos-schematic: {SHIPPED_FACTS}\nFalse\n"


def test_base_with_a_new_pool_the_target_cannot_plan_is_breaking(tmp_path: Path) -> None:
    # A pull request that adds a Volta pool pinned to the production tier on Talos 1.13,
    # whose production driver (595) dropped Volta: the pool is new, and it cannot be planned.
    base = tmp_path / "base.yaml"
    base.write_text(CLUSTER.replace("v1.12.6", "v1.13.9").replace("tier: production", "tier: lts"))
    head = tmp_path / "head.yaml"
    head.write_text(
        base.read_text()
        + "  - name: v100-new\n"
        + "    profile: kubevirt-v100-pcie-16gb\n"
        + "    nvidia: {tier: production}\n"
    )
    result = run("upgrade", str(head), "--base", str(base), "--json")
    assert result.exit_code == 3, result.stderr
    assert "1 pool would break on Talos v1.13.9: v100-new" in result.stderr
    pools = {pool["name"]: pool for pool in json.loads(result.stdout)["pools"]}
    assert pools["v100-new"]["status"] == "breaking"
    assert pools["v100-new"]["schematicID"] == {"before": None, "after": None}
    assert "does not drive 10de:1db4" in pools["v100-new"]["refused"]["reason"]
    assert {pools["v100"]["status"], pools["cpu"]["status"]} == {"unchanged"}


def test_base_compares_two_revisions_of_the_file_pool_by_pool(
    cluster: Path, tmp_path: Path
) -> None:
    head = tmp_path / "head.yaml"
    head.write_text(
        CLUSTER.replace("v1.12.6", "v1.13.9")
        .replace("{tier: production}", "{tier: lts}\n    kernelModules: [{name: nvidia}]")
        .replace("name: cpu\n    profile: kubevirt-cpu", "name: l4\n    profile: kubevirt-l4")
    )
    result = run("upgrade", str(head), "--base", str(cluster), "--json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["talos"] == {"before": "v1.12.6", "after": "v1.13.9"}
    statuses = {pool["name"]: pool["status"] for pool in document["pools"]}
    assert statuses == {"v100": "changed", "cpu": "removed", "l4": "added"}
    v100 = document["pools"][0]
    assert [module["name"] for module in v100["kernelModules"]["after"]] == ["nvidia"]
    assert "recreate" in [node["action"] for node in v100["nodes"]]
    l4 = document["pools"][2]
    assert l4["schematicID"]["before"] is None
    assert "siderolabs/nvidia-open-gpu-kernel-modules-production" in l4["extensions"]["added"]


def test_base_names_the_kernel_args_a_pool_gains_and_loses(tmp_path: Path) -> None:
    base = tmp_path / "base.yaml"
    base.write_text(CLUSTER.replace("maxReplicas: 3", "kernelArgs: [console=ttyS0, quiet]"))
    head = tmp_path / "head.yaml"
    head.write_text(CLUSTER.replace("maxReplicas: 3", "kernelArgs: [console=ttyS0, nomodeset]"))
    result = run("upgrade", str(head), "--base", str(base), "--json")
    assert result.exit_code == 0, result.stderr
    cpu = next(pool for pool in json.loads(result.stdout)["pools"] if pool["name"] == "cpu")
    assert cpu["kernelArgs"] == {"added": ["nomodeset"], "removed": ["quiet"]}
    text = run("upgrade", str(head), "--base", str(base), "--pool", "cpu")
    assert "+ kernel arg nomodeset" in text.stdout and "- kernel arg quiet" in text.stdout
    assert "kernel arg console=ttyS0" not in text.stdout


# --- what a change replaces, and the keys it adds -------------------------------------------

DEFAULT_INSTALLER = """\
cluster: c
cozystack: {version: osimage}
talos: {version: v1.13.9}
pools:
  - name: gpu
    profile: rtx-pro-6000-blackwell-server
  - name: cpu
    profile: kubevirt-cpu
"""


def test_the_1_14_installer_switch_and_the_new_talos_block_are_explained(
    tmp_path: Path,
) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(DEFAULT_INSTALLER)
    result = run("upgrade", str(cluster), "--to", NEWEST_1_14, "-f", "json")
    assert result.exit_code == 0, result.stderr
    for pool in json.loads(result.stdout)["pools"]:
        installer, values = pool["output"]
        assert installer.startswith(
            "installer repository factory.talos.dev/installer → "
            "factory.talos.dev/openstack-installer: from Talos 1.14"
        )
        assert values.startswith(
            "values gain talos (version, schematicID, imageFactoryURL, installerRepository, "
            "registryMirrors): the installer repository is no longer the chart's default"
        )
        assert pool["installer"]["after"].startswith("factory.talos.dev/openstack-installer/")
        assert pool["machinesReplaced"]["replaced"] is True
    # What the report explains is what generate writes at the target release.
    cluster.write_text(DEFAULT_INSTALLER.replace("v1.13.9", NEWEST_1_14))
    values = run("generate", str(cluster), "--values-only").stdout
    assert values.count("installerRepository: factory.talos.dev/openstack-installer\n") == 2


def test_a_new_pool_shows_its_machine_config_not_unchanged(tmp_path: Path) -> None:
    base = tmp_path / "base.yaml"
    base.write_text(
        DEFAULT_INSTALLER.split("  - name: gpu")[0] + "  - name: cpu\n    profile: kubevirt-cpu\n"
    )
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(DEFAULT_INSTALLER)
    result = run("upgrade", str(cluster), "--base", str(base))
    assert result.exit_code == 0, result.stderr
    block = result.stdout.split("pool gpu: new pool\n")[1].split("\npool ")[0]
    assert "  machine config:\n    new: kernel modules nvidia, nvidia_uvm, nvidia_drm, " in block
    assert "machine config: unchanged" not in block
    assert "  machines: new: created booting the new image" in block
    assert "pool cpu: no change\n" in result.stdout


def test_a_downgrade_is_planned_with_a_note(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(DEFAULT_INSTALLER)
    result = run("upgrade", str(cluster), "--to", "v1.12.6", "-f", "json")
    assert result.exit_code == 0, result.stderr
    notes = json.loads(result.stdout)["notes"]
    (note,) = [note for note in notes if "downgrade" in note]
    assert note.startswith("Talos v1.13.9 → v1.12.6 is a downgrade to an older minor release")
    text = run("upgrade", str(cluster), "--to", "v1.13.9").stdout
    assert "downgrade" not in text


def test_a_to_that_contradicts_the_files_under_base_is_said(tmp_path: Path) -> None:
    base = tmp_path / "base.yaml"
    base.write_text(DEFAULT_INSTALLER)
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(DEFAULT_INSTALLER.replace("v1.13.9", NEWEST_1_14))
    agreeing = run("upgrade", str(cluster), "--base", str(base), "--to", NEWEST_1_14)
    assert agreeing.exit_code == 0
    assert "contradicts" not in agreeing.stdout
    result = run("upgrade", str(cluster), "--base", str(base), "--to", "v1.13.9")
    assert result.exit_code == 0, result.stderr
    assert (
        f"note: --to v1.13.9 contradicts {cluster}'s talos.version {NEWEST_1_14}: planned at "
        f"v1.13.9, but generate writes {NEWEST_1_14} from this file" in result.stdout
    )
    wrong_from = run("upgrade", str(cluster), "--base", str(base), "--from", "v1.12.6")
    assert f"note: --from v1.12.6 contradicts {base}'s talos.version v1.13.9" in (wrong_from.stdout)
