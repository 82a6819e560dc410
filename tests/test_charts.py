"""Chart targets: the keys each Cozystack chart reads, and generate / check held against them."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from schematic.cli import app, register_all_commands
from schematic.errors import ClusterFileError
from schematic.facts.chart_targets import release_note
from schematic.inputs.cluster_file import parse_cluster
from schematic.output.render.cozystack import pool_values
from schematic.plan.charts import (
    LAYOUT_KEYS,
    assumed_target,
    chart_target,
    chart_targets,
    charts_with,
    check_chart_name,
    fit_plan,
)
from schematic.plan.cluster import ClusterPlan, plan_cluster

register_all_commands()
runner = CliRunner()
_HERE = Path(__file__).resolve()
# ../shared beside the repository; a worktree sits one level deeper.
SHARED = next(
    (p / "shared" for p in (_HERE.parents[2], _HERE.parents[3]) if (p / "shared").is_dir()),
    _HERE.parents[2] / "shared",
)
COZYSTACK = SHARED / "reference" / "cozystack"
PR3571_SCHEMA = "kubernetes-nodes.values.schema.pr3571.json"
needs_schemas = pytest.mark.skipif(
    not COZYSTACK.is_dir(), reason=f"Cozystack chart schemas not available at {COZYSTACK}"
)

CLUSTER = """\
cluster: demo
namespace: tenant-ml
talos: {version: v1.13.9}
pools:
  - name: gpu
    profile: kubevirt-rtx-pro-6000-blackwell-server
    minReplicas: 0
    maxReplicas: 4
    instanceType: u1.2xlarge
    roles: [gpu]
  - name: cpu
    profile: kubevirt-cpu
    kubelet: {evictionHardMemory: 5%}
  - name: storage
    profile: kubevirt-cpu
    extensions: [siderolabs/drbd]
"""


# No pool that needs kernel modules: fits every target, v1.6 and main included (which cannot
# load a GPU pool's modules, so refuse such a pool).
CPU_CLUSTER = (
    CLUSTER.split("  - name: gpu")[0]
    + """  - name: cpu
    profile: kubevirt-cpu
"""
)


def run(*args: str) -> Result:
    return runner.invoke(app, list(args))


def write(tmp_path: Path, text: str, name: str = "cluster.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def with_target(target: str, text: str = CLUSTER) -> str:
    return text.replace("namespace:", f"cozystack: {{version: {target}}}\nnamespace:", 1)


def plan_of(text: str) -> ClusterPlan:
    return plan_cluster(parse_cluster(text, "cluster.yaml"), source="cluster.yaml")


def strict(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with every object closed: a key it does not list is an error, so a key the
    chart would silently ignore fails validation."""
    closed = copy.deepcopy(schema)

    def close(node: object) -> None:
        if isinstance(node, dict):
            if "properties" in node and not node.get("x-kubernetes-preserve-unknown-fields"):
                node.setdefault("additionalProperties", False)
            for value in node.values():
                close(value)
        elif isinstance(node, list):
            for value in node:
                close(value)

    close(closed)
    return closed


# --- the table -----------------------------------------------------------------------------------


def test_targets_by_release_say_what_the_sources_settle() -> None:
    v16, main, v17 = chart_target("v1.6.4"), chart_target("main"), chart_target("v1.7")
    assert v16.verified_releases == ("v1.6.0", "v1.6.1", "v1.6.2")
    assert (v16.kernel_modules_support, v16.machine_config_changes) == ("no", "new-workers")
    assert (main.commit, main.machine_config_changes) == ("3c780acd", "new-workers")
    assert v17.layout == "osimage" and v17.kernel_modules_support == "unverified"
    assert v17.machine_config_changes == "unverified" and "kernelModules" in v17.unverified_keys
    # A key only unverified targets read is not offered as a way out.
    assert "v1.7" not in charts_with("kernelModules").split(" or ")
    for target in (v16, main):
        assert target.chart_ref.to_json() == {
            "kind": "ExternalArtifact",
            "name": "cozystack-kubernetes-nodes-application-kubevirt-kubernetes-nodes",
            "namespace": "cozy-system",
        }
        assert target.chart_ref.verified


def test_release_notes_name_what_was_not_read() -> None:
    assert release_note("v1.6.2") is None and release_note("main") is None
    assert release_note("v1.6") is None
    assert "v1.6.0 … v1.6.2" in (release_note("v1.6.4") or "")
    assert "no Cozystack v1.7 release" in (release_note("v1.7") or "")


def test_how_config_changes_reach_nodes_per_target() -> None:
    fixed = chart_target("v1.6").config_change_reach()
    assert "only workers created from then on" in fixed and "#3515" in fixed
    open_question = chart_target("v1.7").config_change_reach()
    assert "cozystack/cozystack#3523" in open_question and "do not settle" in open_question
    assert "kubectl get talosconfigtemplates" in open_question


def test_v1_7_gpu_pools_warn_that_kernel_modules_may_be_ignored() -> None:
    fit = fit_plan(plan_of(with_target("v1.7")))
    assert fit.layout == "osimage"
    unverified, warning = fit.warnings  # the target, then one GPU pool
    assert "chart v1.7 (Cozystack v1.7.x) is unverified" in unverified.cause
    assert (warning.where(), warning.pools) == ('cluster.yaml: pool "gpu"', ("gpu",))
    assert warning.cause.startswith("kernelModules (nvidia,")
    assert "grep -c kernelModules" in warning.fix and "--chart pr3571 or osimage" in warning.fix
    notes = " ".join(map(str, fit.notes))
    assert "no Cozystack v1.7 release is in the sources" in notes


def test_v1_6_4_takes_the_talos_layout_with_a_note() -> None:
    fit = fit_plan(plan_of(CPU_CLUSTER), chart="v1.6.4")
    assert fit.target.name == "v1.6" and fit.layout == "talos"
    assert any("v1.6.4 is not among the releases" in note.cause for note in fit.notes)


def test_targets_and_their_layouts() -> None:
    assert [(t.name, t.layout) for t in chart_targets()] == [
        ("v1.6", "talos"),
        ("main", "talos"),
        ("pr3571", "schematicid"),
        ("osimage", "osimage"),
        ("v1.7", "osimage"),
    ]
    assert assumed_target().name == "osimage"
    for target in chart_targets():
        assert target.accepts_layout(target.layout)
        assert target.accepts("gpus") and target.accepts("talos.schematicID")


@pytest.mark.parametrize(
    ("given", "name"),
    [
        ("v1.6", "v1.6"),
        ("v1.6.2", "v1.6"),
        ("1.6.x", "v1.6"),
        ("PR3571", "pr3571"),
        ("pr4171", "osimage"),
        ("main", "main"),
        ("osimage", "osimage"),
        ("v1.6.4", "v1.6"),
        ("v1.7", "v1.7"),
        ("v1.7.0-alpha.3", "v1.7"),
        ("1.7.x", "v1.7"),
    ],
)
def test_chart_names_and_releases(given: str, name: str) -> None:
    assert check_chart_name(given) == name


def test_an_unknown_chart_names_the_choices() -> None:
    with pytest.raises(ValueError, match=r"'v1\.8' is not a chart .*v1\.6 \(Cozystack v1\.6\.x\)"):
        check_chart_name("v1.8")


def test_what_each_chart_ignores() -> None:
    v16, main, pr3571, osimage, _ = chart_targets()
    assert not v16.kernel_modules and not main.kernel_modules
    assert pr3571.kernel_modules and osimage.kernel_modules
    assert not v16.accepts("osImage") and not pr3571.accepts("osImage")
    assert not v16.accepts("talos.registryMirrors") and main.accepts("talos.registryMirrors")
    assert osimage.accepts("talos.imageFactoryCA") and not v16.accepts("talos.imageFactoryCA")
    assert not v16.nvidia_modules_by_default and pr3571.nvidia_modules_by_default


@needs_schemas
@pytest.mark.parametrize("target", [t for t in chart_targets() if t.schema])
def test_table_keys_are_the_stored_schemas_keys(target: Any) -> None:
    schema = json.loads((COZYSTACK / target.schema).read_text())
    assert target.keys == set(schema["properties"])
    assert target.talos_keys == set(schema["properties"]["talos"]["properties"])


# --- the plan's target (the library call other outputs build on) ---------------------------------


def test_the_plan_names_its_target() -> None:
    assert plan_of(with_target("v1.6.2")).cozystack_target.name == "v1.6"
    assert plan_of(with_target("v1.6.2")).cozystack_version == "v1.6"
    assert plan_of(CLUSTER).cozystack_target == assumed_target()
    assert plan_of(CLUSTER).cozystack_version is None


def test_an_unknown_target_in_the_file_is_an_error() -> None:
    expected = r"cluster\.yaml:\d+: cozystack\.version: 'v9' is not"
    with pytest.raises(ClusterFileError, match=expected):
        plan_of(with_target("v9"))


# --- must show: one file, each target, its layout, fitting its chart -------------------------


@needs_schemas
@pytest.mark.parametrize("name", ["v1.6", "main", "pr3571", "osimage"])
def test_same_file_fits_each_target_schema(name: str) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    target = chart_target(name)
    plan = plan_of(with_target(name))
    # v1.6 and main cannot load the GPU pool's modules: fitted only when insisting.
    fit = fit_plan(plan, insist=name in ("v1.6", "main"))
    assert fit.target == target and fit.layout == target.layout
    # PR #4171's schema is not in the shared reference: its osImage subtree is held against the
    # shape recorded in the table, the rest against PR #3571's (same kernelModules and talos).
    schema_name = target.schema or PR3571_SCHEMA
    schema = strict(json.loads((COZYSTACK / schema_name).read_text()))
    if target.schema is None:
        schema["properties"].update({key: {} for key in target.keys - set(schema["properties"])})
    validator = jsonschema.Draft202012Validator(schema)
    for pool in plan.pools:
        values = pool_values(plan.cluster, pool, fit)
        assert [e.message for e in validator.iter_errors(values)] == [], (name, pool.name)
        assert set(values) <= target.keys
        if target.os_image_keys:
            image = values["osImage"]
            assert set(image) == {"factory"}
            assert set(image["factory"]) <= target.os_image_keys["factory"]
    gpu = pool_values(plan.cluster, plan.pools[0], fit)
    if name in ("v1.6", "main"):
        assert gpu["talos"]["schematicID"] == plan.pools[0].schematic_id
        assert "kernelModules" not in gpu and "osImage" not in gpu
    elif name == "osimage":
        assert gpu["osImage"]["factory"]["schematicID"] == plan.pools[0].schematic_id
        assert gpu["kernelModules"][0] == {
            "name": "nvidia",
            "parameters": ["NVreg_NvLinkDisable=1"],
        }


@needs_schemas
@pytest.mark.parametrize("name", ["v1.6", "main", "pr3571", "osimage"])
def test_written_values_fit_each_target_schema(tmp_path: Path, name: str) -> None:
    # The files generate --out writes, not only the library's values: each pool's values.yaml
    # and the spec of its KubernetesNodes object, against the target's closed schema.
    jsonschema = pytest.importorskip("jsonschema")
    target = chart_target(name)
    schema = strict(json.loads((COZYSTACK / (target.schema or PR3571_SCHEMA)).read_text()))
    if target.schema is None:  # PR #4171: see test_same_file_fits_each_target_schema
        schema["properties"].update({key: {} for key in target.keys - set(schema["properties"])})
    validator = jsonschema.Draft202012Validator(schema)
    cluster = write(tmp_path, with_target(name))
    out = tmp_path / "out"
    insist = ["--allow-ignored-keys"] if name in ("v1.6", "main") else []
    result = run("generate", str(cluster), "--out", str(out), *insist)
    assert result.exit_code == 0, result.stderr
    pools = sorted(p.name for p in out.iterdir() if (p / "values.yaml").is_file())
    assert pools == ["cpu", "gpu", "storage"]
    for pool in pools:
        values = yaml.safe_load((out / pool / "values.yaml").read_text())
        manifest = yaml.safe_load((out / pool / "kubernetes-nodes.yaml").read_text())
        assert manifest["spec"] == values
        assert [e.message for e in validator.iter_errors(values)] == [], (name, pool)
        assert set(values) <= target.keys
        if target.os_image_keys:
            assert set(values["osImage"]["factory"]) <= target.os_image_keys["factory"]
        else:
            assert "osImage" not in values


def test_v16_asked_for_osimage_is_refused_with_the_reason(tmp_path: Path) -> None:
    cluster = write(tmp_path, with_target("v1.6"))
    result = run("generate", str(cluster), "--layout", "osimage", "--out", str(tmp_path / "o"))
    assert result.exit_code == 1
    assert result.stderr.startswith(
        f"talos-schematic: {cluster}: osImage: Cozystack v1.6.x's kubernetes-nodes chart has no "
        "osImage value and ignores unknown keys, so osImage would be silently ignored: every "
        "pool would boot the chart's default schematic"
    )
    assert "GPU pools would come up without a driver" in result.stderr
    assert "Use --layout talos (talos.schematicID)" in result.stderr
    assert "--chart osimage" in result.stderr
    assert not (tmp_path / "o").exists()


def test_the_same_refusal_from_the_command_line_chart(tmp_path: Path) -> None:
    cluster = write(tmp_path, CLUSTER)
    result = run("generate", str(cluster), "--chart", "v1.6.2", "--layout", "osimage")
    assert result.exit_code == 1
    assert "osImage would be silently ignored" in result.stderr


def test_insisting_writes_it_with_a_loud_warning(tmp_path: Path) -> None:
    cluster = write(tmp_path, with_target("v1.6"))
    args = ["generate", str(cluster), "--layout", "osimage", "--allow-ignored-keys", "-f", "values"]
    result = run(*args)
    assert result.exit_code == 0, result.stderr
    assert "osImage:" in result.stdout
    warnings = [line for line in result.stderr.splitlines() if "warning:" in line]
    assert warnings[0].startswith(f"talos-schematic: warning: {cluster}: osImage: ")
    assert warnings[0].endswith("; written anyway (--allow-ignored-keys)")


@pytest.mark.parametrize("target", ["v1.6", "main"])
def test_a_pool_whose_modules_cannot_load_on_its_chart_is_an_error(
    tmp_path: Path, target: str
) -> None:
    # The verdict: v1.6.x and main render a TalosConfigTemplate that loads no module whatever
    # the values say (tests/test_real_consumers.py renders them), so a pool needing modules
    # cannot work there: exit 1, naming kernelModules and the way out, nothing written.
    cluster = write(tmp_path, with_target(target))
    out = tmp_path / "out"
    result = run("generate", str(cluster), "--out", str(out))
    assert result.exit_code == 1
    assert not out.exists()
    message = result.stderr
    assert message.startswith(
        f'talos-schematic: {cluster}: pool "gpu" (nvidia, nvidia_uvm, nvidia_drm, '
        'nvidia_modeset), pool "storage" (drbd): kernelModules:'
    )
    assert "talos-reconcile Job rewrites the TalosConfigTemplate" in message
    # In three lines: why, what works on the release, and the ways forward.
    why, works, options = message.rstrip("\n").split("\n")
    assert why.endswith("its node rebooting about every 70 minutes)")
    assert works.startswith("  works on Cozystack ") and "CPU pools" in works
    assert "plain Talos outside Cozystack (a metal-* profile" in works
    assert options.startswith("  options: a chart with kernelModules (--chart pr3571 or osimage")
    assert "Cozystack v1.7.x (--chart v1.7; unverified)" in options
    assert options.endswith("(or --allow-ignored-keys to write it anyway)")
    # Insisting writes the values, with the same words as a warning.
    result = run("generate", str(cluster), "-f", "values", "--allow-ignored-keys")
    assert result.exit_code == 0
    assert "kernelModules" not in result.stdout
    assert "written anyway (--allow-ignored-keys)" in result.stderr
    # A file whose pools need no module fits the same chart: exit 0.
    fine = write(tmp_path, with_target(target, CPU_CLUSTER), "cpu.yaml")
    assert run("generate", str(fine), "-f", "values").exit_code == 0


def test_no_release_named_points_at_the_line_where_it_goes(tmp_path: Path) -> None:
    # The cozystack key's own line when the key is there without a version; else the line
    # the file's mapping starts on (after its comments), where the key is added.
    head = "# a comment\n\ncluster: demo\nnamespace: tenant-ml\n"
    pools = "talos: {version: v1.13.9}\npools:\n  - {name: cpu, profile: kubevirt-cpu}\n"
    for text, line in ((head + pools, 3), (head + pools + "cozystack: {}\n", 8)):
        cluster = write(tmp_path, text)
        result = run("generate", str(cluster), "-f", "values")
        assert result.exit_code == 1
        assert result.stderr.startswith(
            f"talos-schematic: {cluster}:{line}: cozystack.version: no Cozystack release named"
        ), result.stderr


def test_cozystack_output_without_a_release_is_an_error_listing_the_targets(
    tmp_path: Path,
) -> None:
    cluster = write(tmp_path, CLUSTER)
    out = tmp_path / "out"
    for args in (["--out", str(out)], ["-f", "values"], ["-f", "helmrelease", "--layout", "talos"]):
        result = run("generate", str(cluster), *args)
        assert result.exit_code == 1, args
        first = result.stderr.splitlines()[0]
        assert first.startswith(
            f"talos-schematic: {cluster}:1: cozystack.version: no Cozystack release named "
            '(tenant pools "gpu", "cpu", "storage")'
        )
        assert "  cozystack:\n    version: TARGET\n" in result.stderr
        for target in chart_targets():
            assert target.name in result.stderr
        assert "assuming" not in result.stderr
        assert not out.exists()
    # What must not fire: output that carries no chart values needs no release...
    assert run("generate", str(cluster), "-f", "json").exit_code == 0
    # ...and a file that names its release is written on every target.
    for target in chart_targets():
        named = write(tmp_path, with_target(target.name, CPU_CLUSTER), f"{target.name}.yaml")
        result = run("generate", str(named), "--out", str(tmp_path / target.name))
        assert result.exit_code == 0, (target.name, result.stderr)
        assert "no Cozystack release named" not in result.stderr
    # --chart names it as well as the file does.
    cpu = write(tmp_path, CPU_CLUSTER, "cpu-only.yaml")
    for target in chart_targets():
        result = run("generate", str(cpu), "--chart", target.name, "-f", "values")
        assert result.exit_code == 0, (target.name, result.stderr)


def test_a_target_given_says_nothing_about_assuming(tmp_path: Path) -> None:
    result = run("generate", str(write(tmp_path, with_target("osimage"))), "-f", "values")
    assert result.exit_code == 0
    assert "assuming" not in result.stderr


@pytest.mark.parametrize(
    ("pool_extra", "key"),
    [
        ("logSerialConsole: true", "logSerialConsole"),
        ("talos: {registryMirrors: {docker.io: {endpoints: [https://m.example]}}}", "talos."),
        ("kernelModules: [{name: br_netfilter}]", "kernelModules"),
    ],
)
def test_a_key_the_chart_ignores_is_an_error(tmp_path: Path, pool_extra: str, key: str) -> None:
    text = with_target("v1.6", CLUSTER.replace("    profile: kubevirt-cpu\n", "", 1))
    text = text.replace(
        "  - name: cpu\n", f"  - name: cpu\n    profile: kubevirt-cpu\n    {pool_extra}\n"
    )
    result = run("generate", str(write(tmp_path, text)), "-f", "values")
    assert result.exit_code == 1
    assert f'pool "cpu": {key}' in result.stderr
    assert "Cozystack v1.6.x's kubernetes-nodes chart has no" in result.stderr
    assert "--allow-ignored-keys" in result.stderr


# --- imageFactoryCA ------------------------------------------------------------------------------

CA = "-----BEGIN CERTIFICATE-----\nMIIBkDCCATWg\n-----END CERTIFICATE-----\n"


def test_image_factory_ca_passes_through(tmp_path: Path) -> None:
    text = with_target("osimage").replace(
        "talos: {version: v1.13.9}",
        "talos:\n  version: v1.13.9\n  imageFactoryCA: |\n"
        + "".join(f"    {line}\n" for line in CA.splitlines()),
    )
    result = run("generate", str(write(tmp_path, text)), "-f", "values")
    assert result.exit_code == 0, result.stderr
    documents = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert all(d["talos"]["imageFactoryCA"] == CA for d in documents)
    refused = run("generate", str(write(tmp_path, text.replace("osimage", "v1.6"))))
    assert refused.exit_code == 1
    assert "talos: talos.imageFactoryCA: Cozystack v1.6.x's" in refused.stderr
    assert "x509: certificate signed by unknown authority" in refused.stderr


def test_image_factory_ca_never_holds_a_key(tmp_path: Path) -> None:
    key = "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n"
    text = CLUSTER.replace(
        "talos: {version: v1.13.9}",
        f"talos: {{version: v1.13.9, imageFactoryCA: {json.dumps(CA + key)}}}",
    )
    result = run("generate", str(write(tmp_path, text)))
    assert result.exit_code == 1
    assert "talos.imageFactoryCA: holds private key material" in result.stderr


# --- the chart's guards at generate time ---------------------------------------------------------


def test_generate_refuses_a_module_name_the_chart_refuses(tmp_path: Path) -> None:
    text = with_target("osimage").replace(
        "    roles: [gpu]\n", '    roles: [gpu]\n    kernelModules: [{name: "nvidia$(id)"}]\n'
    )
    cluster = write(tmp_path, text)
    result = run("generate", str(cluster), "--out", str(tmp_path / "o"))
    assert result.exit_code == 1
    assert result.stderr.startswith(
        f"talos-schematic: {cluster}: pool \"gpu\": kernelModules[0].name: 'nvidia$(id)' is not "
        "a kernel module name"
    )
    assert "^[a-z0-9_-]+$" in result.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("parameter", ["x=$(id)", "x=`id`", "x=a b", 'x="y"', "x=\\\\n"])
def test_generate_refuses_a_parameter_the_chart_refuses(tmp_path: Path, parameter: str) -> None:
    modules = f"[{{name: nvidia, parameters: [{json.dumps(parameter)}]}}]"
    text = with_target("osimage").replace(
        "    roles: [gpu]\n", f"    roles: [gpu]\n    kernelModules: {modules}\n"
    )
    result = run("generate", str(write(tmp_path, text)))
    assert result.exit_code == 1
    assert 'pool "gpu": kernelModules[0].parameters[0]: ' in result.stderr


def test_nvidia_modules_on_a_pool_without_an_nvidia_gpu_are_refused(tmp_path: Path) -> None:
    text = with_target("osimage").replace(
        "    kubelet: {evictionHardMemory: 5%}\n",
        "    kubelet: {evictionHardMemory: 5%}\n    kernelModules: [{name: nvidia}]\n",
    )
    result = run("generate", str(write(tmp_path, text)))
    assert result.exit_code == 1
    assert 'pool "cpu": kernelModules: loads nvidia, but this pool has no NVIDIA GPU' in (
        result.stderr
    )
    assert "explain TS122" in result.stderr


def test_a_custom_list_dropping_nvlink_disable_gets_a_note(tmp_path: Path) -> None:
    text = with_target(
        "osimage",
        "cluster: demo\nnamespace: ml\ntalos: {version: v1.13.9}\npools:\n"
        "  - name: h200\n    profile: kubevirt-h200-sxm\n"
        "    kernelModules: [{name: nvidia}, {name: nvidia_uvm}, {name: nvidia_drm}, "
        "{name: nvidia_modeset}]\n",
    )
    result = run("generate", str(write(tmp_path, text)), "-f", "values")
    assert result.exit_code == 0, result.stderr
    notes = [line for line in result.stderr.splitlines() if "NVreg_NvLinkDisable" in line]
    assert len(notes) == 2  # the note, then its fix
    assert 'pool "h200": kernelModules lists nvidia without NVreg_NvLinkDisable=1' in notes[0]
    assert notes[1] == "  fix: add NVreg_NvLinkDisable=1 to nvidia's parameters"


# --- check knows its layout ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["--layout", "talos"],
        ["--chart", "v1.6"],
        ["--layout", "schematicid", "-f", "values"],
        ["--chart", "pr3571", "--layout", "talos"],
        [],
    ],
)
def test_check_reads_target_layout_and_format_from_the_index(
    tmp_path: Path, args: list[str]
) -> None:
    cluster = write(tmp_path, with_target("pr3571", CPU_CLUSTER))
    out = tmp_path / "out"
    assert run("generate", str(cluster), "--out", str(out), *args).exit_code == 0
    result = run("check", str(cluster), "--out", str(out))
    assert result.exit_code == 0, result.stderr
    assert f"{out}: up to date" in result.stderr


def test_the_regenerate_hint_repeats_every_option(tmp_path: Path) -> None:
    cluster = write(tmp_path, CPU_CLUSTER)
    out = tmp_path / "out"
    args = ["--chart", "v1.6", "--layout", "talos", "-f", "values"]
    assert run("generate", str(cluster), "--out", str(out), *args).exit_code == 0
    (out / "cpu" / "values.yaml").write_text("changed\n")
    result = run("check", str(cluster), "--out", str(out))
    assert result.exit_code == 3
    assert result.stderr.splitlines()[-1] == (
        f"regenerate with: talos-schematic generate {cluster} --out {out} --chart v1.6 "
        "--layout talos --format values"
    )
    # Following the hint (the edited file removed first, as it says) gives a directory check
    # finds up to date.
    hint = result.stderr.splitlines()[-1].split("talos-schematic generate ", 1)[1].split()
    (out / "cpu" / "values.yaml").unlink()
    assert run("generate", *hint).exit_code == 0
    assert run("check", str(cluster), "--out", str(out)).exit_code == 0


def test_index_records_what_check_needs(tmp_path: Path) -> None:
    cluster = write(tmp_path, CPU_CLUSTER)
    out = tmp_path / "out"
    assert (
        run(
            "generate", str(cluster), "--out", str(out), "--chart", "main", "-f", "values"
        ).exit_code
        == 0
    )
    index = yaml.safe_load((out / "index.yaml").read_text())
    assert (index["cozystack"], index["layout"], index["kinds"]) == ("main", "talos", ["values"])


def test_layout_keys_name_where_the_schematic_goes() -> None:
    assert LAYOUT_KEYS == {
        "osimage": "osImage",
        "schematicid": "schematicID",
        "talos": "talos.schematicID",
    }


# --- changes running nodes do not see ------------------------------------------------------------


def test_a_module_change_without_a_schematic_change_gets_a_note(tmp_path: Path) -> None:
    out = tmp_path / "out"
    cluster = write(tmp_path, with_target("osimage"))
    assert run("generate", str(cluster), "--out", str(out)).exit_code == 0
    modules = "[{name: drbd, parameters: [usermode_helper=disabled]}, {name: dm_thin_pool}]"
    changed = with_target("osimage").replace(
        "    extensions: [siderolabs/drbd]\n",
        f"    extensions: [siderolabs/drbd]\n    kernelModules: {modules}\n",
    )
    cluster.write_text(changed)
    result = run("generate", str(cluster), "--out", str(out))
    assert result.exit_code == 0, result.stderr
    notes = [line for line in result.stderr.splitlines() if "reaches only workers" in line]
    assert len(notes) == 1
    assert notes[0].startswith(
        f'talos-schematic: note: {cluster}: pool "storage": kernelModules change and the '
        "schematic does not"
    )
    # A change that also changes the schematic rolls the pool: nothing to say.
    cluster.write_text(
        changed.replace("[siderolabs/drbd]", "[siderolabs/drbd, siderolabs/iscsi-tools]")
    )
    result = run("generate", str(cluster), "--out", str(out))
    assert result.exit_code == 0, result.stderr
    assert "reaches only workers" not in result.stderr


# --- a directory Flux can read -------------------------------------------------------------------


def test_kustomization_lists_only_the_manifests(tmp_path: Path) -> None:
    out = tmp_path / "out"
    cluster = write(tmp_path, with_target("osimage"))
    assert run("generate", str(cluster), "--out", str(out)).exit_code == 0
    kustomization = yaml.safe_load((out / "kustomization.yaml").read_text())
    assert kustomization["kind"] == "Kustomization"
    listed = kustomization["resources"]
    assert listed == [f"{pool}/kubernetes-nodes.yaml" for pool in ("gpu", "cpu", "storage")]
    for path in sorted(out.rglob("*.yaml")):
        name = path.relative_to(out).as_posix()
        documents = [d for d in yaml.safe_load_all(path.read_text()) if d]
        is_object = all("apiVersion" in d and "kind" in d for d in documents)
        if name in listed:
            assert is_object and documents[0]["kind"] == "KubernetesNodes"
        else:
            # Values, patches, schematics, URLs, the index: not Kubernetes objects to apply.
            assert name == "kustomization.yaml" or not documents[0].get("kind", "").endswith(
                ("KubernetesNodes", "HelmRelease")
            )
    assert "kustomization.yaml" in yaml.safe_load((out / "index.yaml").read_text())["files"]
    values_only = tmp_path / "values"
    assert run("generate", str(cluster), "--out", str(values_only), "-f", "values").exit_code == 0
    assert not (values_only / "kustomization.yaml").exists()


def test_helmrelease_for_flux_users(tmp_path: Path) -> None:
    out = tmp_path / "out"
    cluster = write(tmp_path, with_target("pr3571"))
    result = run("generate", str(cluster), "--out", str(out), "-f", "helmrelease")
    assert result.exit_code == 0, result.stderr
    assert yaml.safe_load((out / "kustomization.yaml").read_text())["resources"] == [
        f"{pool}/helmrelease.yaml" for pool in ("gpu", "cpu", "storage")
    ]
    release = yaml.safe_load((out / "gpu" / "helmrelease.yaml").read_text())
    assert release["apiVersion"] == "helm.toolkit.fluxcd.io/v2"
    assert release["kind"] == "HelmRelease"
    # The chart refuses a release not named kubernetes-nodes-<cluster>-<pool>.
    assert release["metadata"] == {
        "name": "kubernetes-nodes-demo-gpu",
        "namespace": "tenant-ml",
        "labels": {"sharding.fluxcd.io/key": "tenants"},
    }
    # Cozystack v1.x serves the chart as a Flux ExternalArtifact, not from a HelmRepository.
    assert release["spec"]["chartRef"] == {
        "kind": "ExternalArtifact",
        "name": "cozystack-kubernetes-nodes-application-kubevirt-kubernetes-nodes",
        "namespace": "cozy-system",
    }
    assert "chart" not in release["spec"]
    plan = plan_of(with_target("pr3571"))
    assert release["spec"]["values"] == pool_values(plan.cluster, plan.pools[0], fit_plan(plan))
    assert run("check", str(cluster), "--out", str(out)).exit_code == 0
    # lint reads it as the chart's values (the schematic is one of the UI's NVIDIA sets).
    lint = run("lint", str(out / "gpu" / "helmrelease.yaml"), "--format", "json")
    assert lint.exit_code == 0, lint.stdout
    assert json.loads(lint.stdout)["summary"]["files"] == 1


def test_helmrelease_is_never_written_beside_the_kubernetes_nodes_object(tmp_path: Path) -> None:
    out = tmp_path / "out"
    cluster = write(tmp_path, with_target("osimage"))
    assert run("generate", str(cluster), "--out", str(out)).exit_code == 0
    assert not list(out.rglob("helmrelease.yaml"))


def test_the_regenerate_hint_is_quoted_for_a_shell(tmp_path: Path) -> None:
    import shlex

    home = tmp_path / "my repo"
    home.mkdir()
    cluster = write(home, CLUSTER)
    out = home / "out dir"
    args = ["--chart", "pr3571", "--max-input-size", "1MiB"]
    assert run("generate", str(cluster), "--out", str(out), *args).exit_code == 0
    (out / "cpu" / "values.yaml").write_text("changed\n")
    result = run("check", str(cluster), "--out", str(out), "--max-input-size", "1MiB")
    assert result.exit_code == 3
    hint = result.stderr.splitlines()[-1].removeprefix("regenerate with: ")
    words = shlex.split(hint)
    assert words[:2] == ["talos-schematic", "generate"]
    assert words[2:] == [
        *(str(cluster), "--out", str(out), "--chart", "pr3571", "--layout", "schematicid"),
        *("--max-input-size", "1MiB"),
    ]
    (out / "cpu" / "values.yaml").unlink()
    assert run(*words[1:]).exit_code == 0
    assert run("check", str(cluster), "--out", str(out)).exit_code == 0


@pytest.mark.parametrize("command", ["generate", "lint"])
def test_an_unknown_chart_is_a_usage_error_on_every_command(tmp_path: Path, command: str) -> None:
    cluster = write(tmp_path, CLUSTER)
    result = run(command, str(cluster), "--chart", "v1.9")
    assert result.exit_code == 2, result.output
    assert "v1.9" in result.output
    # A release the tool knows is accepted by both (lint checks no cluster file: nothing
    # checked, exit 4, and not a usage error).
    expected = (0, 3) if command == "generate" else (4,)
    assert run(command, str(cluster), "--chart", "v1.7").exit_code in expected


@pytest.mark.parametrize("name", ["v1.6", "main", "pr3571", "osimage", "v1.7"])
def test_a_target_no_chart_in_the_sources_reads_says_unverified(name: str) -> None:
    fit = fit_plan(plan_of(with_target(name, CPU_CLUSTER)))
    said = any("is unverified" in warning.cause for warning in fit.warnings)
    assert said == (name in ("osimage", "v1.7"))
    assert chart_target(name).verified == (name not in ("osimage", "v1.7"))
    help_text = run("generate", "--help").stdout
    assert "unverified" in help_text


def test_output_without_chart_values_is_not_called_unverified() -> None:
    # talhelper and machine-config output carry no chart values: the chart is not theirs to
    # verify, so the warning would only bury the ones that matter.
    fit = fit_plan(plan_of(with_target("v1.7", CPU_CLUSTER)), values=False)
    assert not any("is unverified" in warning.cause for warning in fit.warnings)
    assert any(
        "is unverified" in warning.cause
        for warning in fit_plan(plan_of(with_target("v1.7", CPU_CLUSTER))).warnings
    )


def test_many_refused_pools_are_named_three_at_a_time(tmp_path: Path) -> None:
    pools = "".join(
        f"  - {{name: gpu{n}, profile: kubevirt-l40s, maxReplicas: 1, instanceType: u1.large}}\n"
        for n in range(40)
    )
    text = (
        "cluster: c\nnamespace: tenant-c\ncozystack: {version: v1.6}\n"
        f"talos: {{version: v1.13.9}}\npools:\n{pools}"
    )
    result = run("generate", str(write(tmp_path, text)), "-f", "values")
    assert result.exit_code == 1
    lines = result.stderr.rstrip("\n").split("\n")
    assert len(lines) == 3
    assert 'pool "gpu2" (nvidia, nvidia_uvm, nvidia_drm, nvidia_modeset) and 37 more' in lines[0]
    assert "gpu3" not in result.stderr
