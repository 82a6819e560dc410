"""`talos-schematic lint` and `explain`: findings on stdout, summary on stderr, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import respx
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands
from schematic.core.model import Schematic
from schematic.doctor.lint.findings import RULES
from schematic.facts.release_facts import facts_note

register_all_commands()

NVIDIA = Schematic.from_extensions(
    ["siderolabs/nvidia-container-toolkit-lts", "siderolabs/nvidia-open-gpu-kernel-modules-lts"]
)
POOL = """\
apiVersion: apps.cozystack.io/v1alpha1
kind: KubernetesNodes
metadata:
  name: prod-cpu
spec:
  cluster: prod
  talos:
    version: v1.13.6
    schematicID: {id}
"""

# Which facts lint decided by, said in its summary line.
SHIPPED_FACTS = facts_note()


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def test_errors_exit_3(tmp_path: Path) -> None:
    (tmp_path / "n.yaml").write_text(POOL.format(id=NVIDIA.id))
    code, out, err = run("lint", str(tmp_path))
    assert code == 3
    assert f"{tmp_path}/n.yaml:9: error TS101" in out
    assert (
        err
        == "talos-schematic lint: 1 error, 0 warnings, 0 notes in 1 file; " + SHIPPED_FACTS + "\n"
    )


def test_clean_input_exits_0(tmp_path: Path) -> None:
    (tmp_path / "n.yaml").write_text(
        POOL.format(id="ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515")
    )
    code, out, err = run("lint", str(tmp_path / "n.yaml"))
    assert (code, out) == (0, "")
    assert "0 errors" in err


def test_warnings_alone_exit_0(tmp_path: Path) -> None:
    (tmp_path / "n.yaml").write_text(POOL.format(id="ab" * 32))
    code, out, _ = run("lint", str(tmp_path), "--format", "json")
    assert code == 0
    assert [f["code"] for f in json.loads(out)["findings"]] == ["TS001"]


def test_sarif_format(tmp_path: Path) -> None:
    (tmp_path / "n.yaml").write_text(POOL.format(id=NVIDIA.id))
    code, out, _ = run("lint", "--format", "sarif", str(tmp_path))
    assert code == 3
    assert json.loads(out)["runs"][0]["results"][0]["ruleId"] == "TS101"


def test_unknown_format_is_a_usage_error(tmp_path: Path) -> None:
    code, _, _ = run("lint", "--format", "xml", str(tmp_path))
    assert code == 2


def test_missing_path_exits_1(tmp_path: Path) -> None:
    code, out, err = run("lint", str(tmp_path / "nope"))
    assert (code, out) == (1, "")
    assert "no such file or directory" in err


def test_talos_option_enables_version_rules(tmp_path: Path) -> None:
    (tmp_path / "n.yaml").write_text(
        POOL.format(id=NVIDIA.id).replace("    version: v1.13.6\n", "")
    )
    _, out, _ = run("lint", "--format", "json", str(tmp_path))
    assert "TS003" in {f["code"] for f in json.loads(out)["findings"]}
    _, out, _ = run("lint", "--format", "json", "--talos", "v1.7.6", str(tmp_path))
    assert "TS150" in {f["code"] for f in json.loads(out)["findings"]}


def test_factory_resolves_unknown_ids(tmp_path: Path) -> None:
    custom = Schematic.from_extensions(["siderolabs/nvidia-container-toolkit-production"])
    (tmp_path / "n.yaml").write_text(POOL.format(id=custom.id))
    with respx.mock(assert_all_mocked=True, assert_all_called=True) as router:
        router.get(f"https://factory.example/schematics/{custom.id}").mock(
            return_value=httpx.Response(
                200, text=custom.canonical(), headers={"content-type": "application/yaml"}
            )
        )
        code, out, err = run("lint", "--factory", "https://factory.example", str(tmp_path))
    assert (code, err) == (
        3,
        "talos-schematic lint: 1 error, 0 warnings, 0 notes in 1 file; " + SHIPPED_FACTS + "\n",
    )
    assert "TS101" in out


@pytest.mark.usefixtures("instant_retries")
def test_an_unreachable_factory_is_a_finding_beside_the_others(tmp_path: Path) -> None:
    unknown = Schematic.from_extensions(["siderolabs/iscsi-tools"])
    (tmp_path / "a.yaml").write_text(POOL.format(id=unknown.id))
    (tmp_path / "b.yaml").write_text(POOL.format(id=NVIDIA.id).replace("prod-cpu", "prod-b"))
    (tmp_path / "c.yaml").write_text(POOL.format(id="cd" * 32).replace("prod-cpu", "prod-c"))
    with respx.mock(assert_all_mocked=True) as router:
        route = router.get(url__startswith="https://factory.example/schematics/").mock(
            side_effect=httpx.ConnectError("connection refused")
        )
        code, out, err = run(
            "lint", "--factory", "https://factory.example", "-f", "json", str(tmp_path)
        )
    assert code == 3
    found = json.loads(out)["findings"]
    codes = sorted((f["code"], f["file"].rpartition("/")[2]) for f in found)
    # The offline finding (TS101), each unresolved ID (TS001), and why (TS005, once).
    assert codes == [
        ("TS001", "a.yaml"),
        ("TS001", "c.yaml"),
        ("TS005", "factory.example"),
        ("TS101", "b.yaml"),
    ]
    (unreachable,) = [f for f in found if f["code"] == "TS005"]
    assert unreachable["severity"] == "error"
    assert unreachable["message"].startswith("the factory was not asked: ")
    # Asked once (with its retries), not once per unresolved ID.
    assert len({str(call.request.url) for call in route.calls}) == 1
    assert "1 error" not in err and "2 errors, 2 warnings" in err


@pytest.mark.usefixtures("instant_retries")
def test_a_factory_answer_that_is_not_a_schematic_is_ts005(tmp_path: Path) -> None:
    unknown = Schematic.from_extensions(["siderolabs/iscsi-tools"])
    (tmp_path / "a.yaml").write_text(POOL.format(id=unknown.id))
    with respx.mock(assert_all_mocked=True) as router:
        router.get(f"https://factory.example/schematics/{unknown.id}").mock(
            return_value=httpx.Response(200, text="customization: []\n")
        )
        code, out, _ = run(
            "lint", "--factory", "https://factory.example", "-f", "json", str(tmp_path)
        )
    assert code == 3
    assert sorted(f["code"] for f in json.loads(out)["findings"]) == ["TS001", "TS005"]


def test_explain_prints_the_long_text() -> None:
    code, out, _ = run("explain", "ts101")
    assert code == 0
    assert out.startswith("TS101 (error): NVIDIA extensions on a pool without an NVIDIA GPU")
    for part in ("What you see", "Why it happens", "How to confirm it", "How to fix it"):
        assert part in out
    assert "virtctl console" in out and "min_over_time(node_memory_MemAvailable_bytes[30h])" in out


def test_explain_list() -> None:
    code, out, _ = run("explain", "--list")
    assert code == 0
    assert len(out.splitlines()) == len(RULES)
    assert out.splitlines()[0].startswith("TS001  warning")


def test_explain_unknown_code_is_a_usage_error_naming_the_listing() -> None:
    code, out, err = run("explain", "TS999")
    assert (code, out) == (2, "")
    assert "unknown lint code 'TS999'" in err
    assert "`talos-schematic explain --list`" in " ".join(err.split())


def test_every_rule_explains_how_to_confirm() -> None:
    for known in RULES.values():
        assert known.seen and known.why and known.confirm and known.remedy and known.fix
    assert "chroot /host /usr/local/bin/nvidia-smi -L" in RULES["TS103"].explain()
    # TS131's confirmation is trustd's, not the NVIDIA reboot loop's.
    assert "port 50001" in RULES["TS131"].confirm
    assert "startAllServices" not in RULES["TS131"].confirm


EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "cluster.yaml"


def test_own_generated_output_is_clean(tmp_path: Path) -> None:
    if not EXAMPLE.exists():
        return
    # One chart per layout that loads the GPU pools' modules: the example names osimage.
    for chart in ("osimage", "pr3571"):
        out = tmp_path / chart
        code, _, _ = run("generate", str(EXAMPLE), "--chart", chart, "--out", str(out))
        assert code == 0
        code, found, _ = run("lint", str(out))
        assert (code, found) == (0, "")


GPU_VALUES_V16 = """\
cluster: prod
gpus:
  - name: nvidia.com/GB202GL_RTX_PRO_6000_BLACKWELL_SERVER_EDITION
talos:
  version: v1.13.6
  schematicID: {id}
"""


def test_a_gpu_pool_that_cannot_load_its_modules_fails_the_gate_by_default(tmp_path: Path) -> None:
    # v1.6.x's chart has no kernelModules and rewrites the machine config from a fixed
    # template: certain, so an error and exit 3 with no --fail-on.
    (tmp_path / "values.yaml").write_text(GPU_VALUES_V16.format(id=NVIDIA.id))
    (tmp_path / "schematic.yaml").write_text(NVIDIA.canonical())
    code, out, _ = run("lint", str(tmp_path), "--chart", "v1.6")
    assert code == 3
    assert "error TS123" in out
    # The same values for a chart that loads the NVIDIA set when kernelModules is unset pass.
    code, out, _ = run("lint", str(tmp_path), "--chart", "pr3571")
    assert (code, out) == (0, "")


def test_lint_reads_the_chart_from_the_tools_own_output_index(tmp_path: Path) -> None:
    (tmp_path / "values.yaml").write_text(GPU_VALUES_V16.format(id=NVIDIA.id))
    (tmp_path / "schematic.yaml").write_text(NVIDIA.canonical())
    (tmp_path / "index.yaml").write_text("generator: talos-schematic\ncozystack: v1.6\n")
    code, out, _ = run("lint", str(tmp_path))
    assert code == 3
    assert "error TS123" in out and "Cozystack v1.6.x" in out
    # Another tool's index is not read as ours.
    (tmp_path / "index.yaml").write_text("generator: other\ncozystack: v1.6\n")
    assert run("lint", str(tmp_path))[:2] == (0, "")


def test_a_dangling_link_and_a_fifo_in_a_directory_are_skipped_not_fatal(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    (tmp_path / "n.yaml").write_text(POOL.format(id=NVIDIA.id))
    (tmp_path / "gone.yaml").symlink_to(tmp_path / "deleted.yaml")
    os.mkfifo(tmp_path / "pipe.yaml")
    before = sorted(p.name for p in tmp_path.iterdir())
    # A subprocess with a timeout: a FIFO read would otherwise hang the test run.
    done = subprocess.run(
        [sys.executable, "-m", "schematic", "lint", str(tmp_path), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 3, done.stderr  # the TS101 in n.yaml is still found
    findings = {(f["file"], f["code"]): f["message"] for f in json.loads(done.stdout)["findings"]}
    assert findings[(str(tmp_path / "gone.yaml"), "TS190")] == (
        f"a symbolic link to {tmp_path / 'deleted.yaml'}, which does not exist; skipped"
    )
    assert "FIFO" in findings[(str(tmp_path / "pipe.yaml"), "TS190")]
    assert (str(tmp_path / "n.yaml"), "TS101") in findings
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert RULES["TS190"].severity == "warning"


def test_fail_on_warning_exits_3_on_a_warning(tmp_path: Path) -> None:
    (tmp_path / "n.yaml").write_text(POOL.format(id="ab" * 32))
    assert run("lint", str(tmp_path))[0] == 0
    code, out, err = run("lint", str(tmp_path), "--fail-on", "warning")
    assert code == 3
    assert "warning TS001" in out
    assert (
        err
        == "talos-schematic lint: 0 errors, 1 warning, 0 notes in 1 file; " + SHIPPED_FACTS + "\n"
    )


def test_fail_on_note_counts_notes_and_error_ignores_them(tmp_path: Path) -> None:
    (tmp_path / "n.yaml").write_text(
        POOL.format(id=NVIDIA.id).replace("    version: v1.13.6\n", "")
    )
    _, out, _ = run("lint", "--format", "json", str(tmp_path), "--ignore", "TS101")
    severities = {f["severity"] for f in json.loads(out)["findings"]}
    assert severities == {"note"}
    assert run("lint", str(tmp_path), "--ignore", "TS101")[0] == 0
    assert run("lint", str(tmp_path), "--ignore", "TS101", "--fail-on", "warning")[0] == 0
    assert run("lint", str(tmp_path), "--ignore", "TS101", "--fail-on", "note")[0] == 3


def test_ignore_silences_a_code_in_output_summary_and_exit(tmp_path: Path) -> None:
    (tmp_path / "n.yaml").write_text(POOL.format(id=NVIDIA.id))
    code, out, err = run("lint", str(tmp_path), "--ignore", "ts101")
    assert (code, out) == (0, "")
    assert (
        err
        == "talos-schematic lint: 0 errors, 0 warnings, 0 notes in 1 file; " + SHIPPED_FACTS + "\n"
    )
    # Repeated or comma-separated, the codes add up.
    (tmp_path / "w.yaml").write_text(POOL.format(id="ab" * 32))
    assert run("lint", str(tmp_path), "--fail-on", "warning", "--ignore", "TS101")[0] == 3
    both = ("--ignore", "TS101", "--ignore", "TS001")
    assert run("lint", str(tmp_path), "--fail-on", "warning", *both)[0] == 0
    assert run("lint", str(tmp_path), "--fail-on", "warning", "--ignore", "TS101,TS001")[0] == 0


def test_ignore_of_an_unknown_code_is_a_usage_error(tmp_path: Path) -> None:
    code, out, err = run("lint", str(tmp_path), "--ignore", "TS9999")
    assert (code, out) == (2, "")
    assert "unknown lint code TS9999" in err


def test_hardware_refuses_proprietary_modules_on_blackwell(tmp_path: Path) -> None:
    """A machine config whose installer carries the proprietary modules, for a B200 node."""
    proprietary = Schematic.from_extensions(
        [
            "siderolabs/nonfree-kmod-nvidia-production",
            "siderolabs/nvidia-container-toolkit-production",
        ]
    )
    open_modules = Schematic.from_extensions(
        [
            "siderolabs/nvidia-container-toolkit-production",
            "siderolabs/nvidia-open-gpu-kernel-modules-production",
        ]
    )
    modules = "".join(
        f"\n      - name: {m}"
        for m in ("nvidia", "nvidia_uvm", "nvidia_drm", "nvidia_modeset", "ib_umad")
    )
    for name, schematic in (("bad", proprietary), ("good", open_modules)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "schematic.yaml").write_text(schematic.canonical())
        (tmp_path / name / "worker.yaml").write_text(
            "version: v1alpha1\nmachine:\n  type: worker\n  install:\n    disk: /dev/sda\n"
            f"    image: factory.talos.dev/metal-installer/{schematic.id}:v1.13.9\n"
            f"  kernel:\n    modules:{modules}\n"
        )
    code, out, _ = run("lint", str(tmp_path / "bad"), "--hardware", "metal-hgx-b200-8x")
    assert code == 3 and "TS103" in out
    code, out, _ = run("lint", str(tmp_path / "good"), "--hardware", "metal-hgx-b200-8x")
    assert code == 0 and "TS1" not in out


CONFIG_MAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: b}\n"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("empty", None),  # a folder with no file
        ("settings.yaml", CONFIG_MAP),  # YAML of nothing lint reads
        ("notes.txt", "hello\n"),  # not YAML at all
    ],
)
def test_inputs_holding_nothing_lint_checks_exit_4_not_0(
    tmp_path: Path, name: str, text: str | None
) -> None:
    # A CI job pointed at the wrong folder must not pass: nothing checked is its own verdict.
    path = tmp_path / name
    if text is None:
        path.mkdir()
    else:
        path.write_text(text)
    code, out, err = run("lint", str(path))
    assert (code, out) == (4, "")
    assert "nothing checked" in err
    code, out, _ = run("lint", str(path), "--format", "json")
    assert code == 4
    assert json.loads(out)["summary"]["judged"] is False


def test_a_file_lint_checks_beside_others_is_judged(tmp_path: Path) -> None:
    # Must not fire: one pool among unrelated files is enough to vouch for.
    (tmp_path / "settings.yaml").write_text(CONFIG_MAP)
    (tmp_path / "n.yaml").write_text(
        POOL.format(id="ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515")
    )
    code, out, err = run("lint", str(tmp_path), "--format", "json")
    assert code == 0, err
    assert json.loads(out)["summary"]["judged"] is True
    assert "nothing checked" not in err


@pytest.mark.parametrize("talos", ["v1.13.9", "v1.14.0"])
def test_the_machine_config_patch_generate_writes_is_read_on_each_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, talos: str
) -> None:
    # Talos 1.14's patch is an UnattendedInstallConfig and KernelModuleConfigs, without a
    # `machine:` mapping: it is a node's config all the same, its installer checked.
    monkeypatch.chdir(tmp_path)
    Path("c.yaml").write_text(
        f"cluster: lab\ntalos: {{version: {talos}}}\npools:\n"
        "  - name: gpu\n    profile: metal-hgx-h100-8x\n"
    )
    assert run("generate", "c.yaml", "--out", "d")[0] == 0
    patch, schematic = "d/gpu/machine-config-patch.yaml", "d/gpu/schematic.yaml"
    assert run("lint", patch, schematic)[0] == 0
    code, out, _ = run("lint", patch, schematic, "--hardware", "kubevirt-cpu")
    assert code == 3
    assert f"{patch}:" in out and "error TS101" in out


def test_a_cluster_file_alone_is_nothing_checked_with_the_command_that_reads_it() -> None:
    example = str(Path(__file__).resolve().parents[1] / "examples" / "cluster.yaml")
    code, out, err = run("lint", example)
    assert (code, out) == (4, "")
    assert f"{example} is a cluster file: `talos-schematic check`" in err


def test_an_output_index_alone_is_nothing_checked_and_names_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The index names a cluster and its pools, as a cluster file does: it is neither a cluster
    # file nor a pass. Linted with its folder, it says nothing of itself.
    monkeypatch.chdir(tmp_path)
    example = Path(__file__).resolve().parents[1] / "examples" / "cluster.yaml"
    assert run("generate", str(example), "--out", "d")[0] == 0
    code, out, err = run("lint", "d/index.yaml")
    assert (code, out) == (4, "")
    assert "d/index.yaml is the index of a folder `generate --out` wrote: lint the folder" in err
    assert "cluster file" not in err
    code, _, err = run("lint", "d")
    assert code != 4
    assert "index of a folder" not in err and "cluster file" not in err
