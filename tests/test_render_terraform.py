"""`generate -f terraform`: each pool as Terraform JSON for the siderolabs/talos provider, held
to the provider's schema, and read back by `lint`.

Attribute names are the provider's own, siderolabs/terraform-provider-talos at
6d1a91c452e83382bc3e976bc911b85f8d10954d (2026-07-31):
``pkg/talos/talos_image_factory_schematic_resource.go`` (``schematic`` optional, ``id``
read-only: a configuration must not set it),
``pkg/talos/talos_machine_configuration_apply_resource.go`` and
``docs/resources/machine_configuration_apply.md`` (``config_patches``, a list of strings).
The JSON file shape (top-level ``locals``, ``resource``, ``output``; a ``//`` property is a
comment; ``${`` and ``%{`` start template sequences in strings) is Terraform's JSON
configuration syntax.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import hcl2
import pytest
import yaml
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands
from schematic.core.model import Schematic
from schematic.doctor.lint import lint_paths
from schematic.facts.nvidia import NVIDIA_MODULES

register_all_commands()
runner = CliRunner()

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "cluster.yaml"
POOLS = ("rtx6000", "l40s", "v100", "cpu")

SCHEMATIC_RESOURCE = "talos_image_factory_schematic"
SCHEMATIC_ARGUMENTS = {"schematic"}
SCHEMATIC_READ_ONLY = {"id"}
APPLY_ARGUMENTS = {
    "node",
    "apply_mode",
    "client_configuration",
    "client_configuration_wo",
    "config_patches",
    "endpoint",
    "machine_configuration_input",
    "machine_configuration_input_wo",
    "on_destroy",
    "timeouts",
}
# Terraform's meta-arguments of every resource block.
META_ARGUMENTS = {"count", "for_each", "provider", "depends_on", "lifecycle"}
# An officialExtensions item of the canonical schematic text.
ITEM = "            - "
TOP_LEVEL = {"//", "locals", "resource", "output", "terraform", "provider", "variable", "data"}


def generated(cluster_file: Path, pool: str) -> dict[str, Any]:
    result = runner.invoke(app, ["generate", str(cluster_file), "-f", "terraform", "--pool", pool])
    assert result.exit_code == 0, result.output
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def example(tmp_path: Path, talos: str) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(EXAMPLE.read_text("utf-8").replace("v1.13.9", talos), "utf-8")
    return path


def terraform_text(value: str) -> str:
    """A literal JSON string as Terraform reads it: it must hold no template sequence."""
    unescaped = value.replace("$${", "").replace("%%{", "")
    assert "${" not in unescaped and "%{" not in unescaped, value
    return value.replace("$${", "${").replace("%%{", "%{")


def provider_problems(document: dict[str, Any], pool: str) -> list[str]:
    problems = [f"top-level {key}" for key in set(document) - TOP_LEVEL]
    # A module names its providers' sources; the provider's registry address.
    if document["terraform"]["required_providers"]["talos"] != {"source": "siderolabs/talos"}:
        problems.append("the talos provider's source is not named")
    name = "talos_pool_" + pool.replace("-", "_")
    resources = document["resource"]
    if set(resources) != {SCHEMATIC_RESOURCE}:
        problems.append(f"resources {sorted(resources)}")
    block = resources[SCHEMATIC_RESOURCE][name]
    allowed = SCHEMATIC_ARGUMENTS | META_ARGUMENTS
    problems += [f"argument {key}" for key in set(block) - allowed]
    problems += [f"read-only {key} set" for key in SCHEMATIC_READ_ONLY & set(block)]
    local = document["locals"][name]
    if not all(isinstance(p, str) for p in local["config_patches"]):
        problems.append("config_patches is not a list of strings")
    if document["output"][name]["value"] != f"${{local.{name}}}":
        problems.append("output does not expose the local value")
    return problems


@pytest.mark.parametrize("talos", ["v1.12.6", "v1.13.9", "v1.14.0"])
@pytest.mark.parametrize("pool", POOLS)
def test_every_pool_is_terraform_the_provider_takes(tmp_path: Path, talos: str, pool: str) -> None:
    document = generated(example(tmp_path, talos), pool)
    assert provider_problems(document, pool) == []
    name = f"talos_pool_{pool}"
    local = document["locals"][name]
    body = terraform_text(document["resource"][SCHEMATIC_RESOURCE][name]["schematic"])
    # The provider decodes the attribute as the factory does; its ID is the one computed here.
    schematic = Schematic.from_yaml(body)
    assert schematic.id == local["schematic_id"]
    assert local["talos_version"] == talos
    assert f"/{schematic.id}:{talos}" in terraform_text(local["installer_image"])
    assert f"/image/{schematic.id}/{talos}/" in terraform_text(local["boot_image"])
    for patch in local["config_patches"]:
        assert yaml.safe_load(terraform_text(patch))


def test_the_apply_resource_takes_config_patches() -> None:
    # What the guide tells users to write beside the file: an argument the provider has.
    assert "config_patches" in APPLY_ARGUMENTS


def modules(document: dict[str, Any], pool: str) -> list[str]:
    names: list[str] = []
    for patch in document["locals"][f"talos_pool_{pool}"]["config_patches"]:
        data = yaml.safe_load(patch)
        if data.get("kind") == "KernelModuleConfig":
            names.append(data["name"])
        names += [m["name"] for m in data.get("machine", {}).get("kernel", {}).get("modules", [])]
    return names


def test_each_pool_carries_its_own_nvidia_decision() -> None:
    documents = {pool: generated(EXAMPLE, pool) for pool in POOLS}
    schematic = {
        pool: Schematic.from_yaml(
            doc["resource"][SCHEMATIC_RESOURCE][f"talos_pool_{pool}"]["schematic"]
        )
        for pool, doc in documents.items()
    }
    assert "siderolabs/nvidia-open-gpu-kernel-modules-production" in schematic["rtx6000"].extensions
    assert "siderolabs/nvidia-open-gpu-kernel-modules-lts" in schematic["l40s"].extensions
    assert "siderolabs/nonfree-kmod-nvidia-lts" in schematic["v100"].extensions
    assert not any("nvidia" in e for e in schematic["cpu"].extensions)
    for pool in ("rtx6000", "l40s", "v100"):
        assert modules(documents[pool], pool) == list(NVIDIA_MODULES)
        assert documents[pool]["locals"][f"talos_pool_{pool}"]["gpus"]
    assert modules(documents["cpu"], "cpu") == []
    assert documents["cpu"]["locals"]["talos_pool_cpu"]["gpus"] == []


def test_a_kernel_argument_with_a_template_sequence_stays_literal(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(
        "cluster: c\ntalos:\n  version: v1.13.9\npools:\n  - name: gpu\n"
        "    profile: kubevirt-l40s\n    kernelArgs: ['x=${var.y}', 'z=%{if}']\n",
        "utf-8",
    )
    document = generated(path, "gpu")
    body = document["resource"][SCHEMATIC_RESOURCE]["talos_pool_gpu"]["schematic"]
    assert "x=$${var.y}" in body and "z=%%{if}" in body
    assert (
        Schematic.from_yaml(terraform_text(body)).id
        == (document["locals"]["talos_pool_gpu"]["schematic_id"])
    )
    assert codes(write(tmp_path, path)) == []


def test_several_pools_on_stdout_need_pool() -> None:
    result = runner.invoke(app, ["generate", str(EXAMPLE), "-f", "terraform"])
    assert result.exit_code == 2
    assert "--pool" in result.output


def write(tmp_path: Path, cluster_file: Path = EXAMPLE) -> Path:
    out = tmp_path / "out"
    args = ["generate", str(cluster_file), "-f", "terraform", "-f", "omni", "--out", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return out


def codes(path: Path) -> list[tuple[str, str]]:
    return sorted((f.code, f.message) for f in lint_paths([str(path)]).findings)


def test_written_files_are_indexed_checked_and_byte_identical(tmp_path: Path) -> None:
    out = write(tmp_path)
    files = {p.relative_to(out): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    assert Path("l40s/talos-schematic.tf.json") in files
    index = yaml.safe_load(files[Path("index.yaml")])
    assert set(index["kinds"]) == {"omni", "terraform"}
    check = runner.invoke(app, ["check", str(EXAMPLE), "--out", str(out)])
    assert check.exit_code == 0, check.output
    again = write(tmp_path / "again")
    assert {
        p.relative_to(again): p.read_bytes() for p in sorted(again.rglob("*")) if p.is_file()
    } == files
    (out / "l40s" / "talos-schematic.tf.json").write_text("{}\n", "utf-8")
    assert runner.invoke(app, ["check", str(EXAMPLE), "--out", str(out)]).exit_code == 3


def test_no_credential_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    token = "s3cr3t-token-value"
    monkeypatch.setenv("TALOS_SCHEMATIC_FACTORY_TOKEN", token)
    monkeypatch.setenv("TALOS_SCHEMATIC_FACTORY_AUTH", f"user:{token}")
    out = write(tmp_path)
    for path in out.rglob("*"):
        if path.is_file():
            assert token not in path.read_text("utf-8")


@pytest.mark.parametrize("talos", ["v1.12.6", "v1.13.9", "v1.14.0"])
def test_what_generate_writes_lints_clean(tmp_path: Path, talos: str) -> None:
    assert codes(write(tmp_path, example(tmp_path, talos))) == []


def rewrite(path: Path, change: Any) -> None:
    document = json.loads(path.read_text("utf-8"))
    change(document)
    path.write_text(json.dumps(document, indent=2), "utf-8")


def test_nvidia_extensions_for_the_cpu_pool_are_ts101(tmp_path: Path) -> None:
    out = write(tmp_path)

    def add_nvidia(document: dict[str, Any]) -> None:
        block = document["resource"][SCHEMATIC_RESOURCE]["talos_pool_cpu"]
        block["schematic"] = block["schematic"].replace(
            "            - siderolabs/qemu",
            "            - siderolabs/nvidia-container-toolkit-lts\n"
            "            - siderolabs/nvidia-open-gpu-kernel-modules-lts\n"
            "            - siderolabs/qemu",
        )

    rewrite(out / "cpu" / "talos-schematic.tf.json", add_nvidia)
    (out / "cpu" / "omni-workers.yaml").unlink()
    found = codes(out / "cpu")
    assert [code for code, _ in found] == ["TS101"]
    assert "terraform talos_pool_cpu" in found[0][1]


def test_a_gpu_pool_without_its_module_patch_is_ts123(tmp_path: Path) -> None:
    out = write(tmp_path)

    def drop_patches(document: dict[str, Any]) -> None:
        document["locals"]["talos_pool_rtx6000"]["config_patches"] = []

    rewrite(out / "rtx6000" / "talos-schematic.tf.json", drop_patches)
    (out / "rtx6000" / "omni-workers.yaml").unlink()
    assert [code for code, _ in codes(out / "rtx6000")] == ["TS123"]


@pytest.mark.parametrize(
    ("listed", "code"),
    [
        (
            "nvidia-container-toolkit-production\nsiderolabs/nvidia-open-gpu-kernel-modules-lts",
            "TS112",
        ),
        (
            "nonfree-kmod-nvidia-lts\nsiderolabs/nvidia-container-toolkit-lts\n"
            "siderolabs/nvidia-open-gpu-kernel-modules-lts",
            "TS113",
        ),
    ],
)
def test_mixed_tiers_and_both_flavours(tmp_path: Path, listed: str, code: str) -> None:
    listed = listed.replace("\n", "\n" + ITEM)
    out = write(tmp_path)

    def change(document: dict[str, Any]) -> None:
        block = document["resource"][SCHEMATIC_RESOURCE]["talos_pool_l40s"]
        block["schematic"] = block["schematic"].replace(
            f"nvidia-container-toolkit-lts\n{ITEM}siderolabs/nvidia-open-gpu-kernel-modules-lts",
            listed,
        )

    rewrite(out / "l40s" / "talos-schematic.tf.json", change)
    assert code in [c for c, _ in codes(out / "l40s" / "talos-schematic.tf.json")]


def test_a_hand_written_apply_with_literal_patches_is_read(tmp_path: Path) -> None:
    path = tmp_path / "main.tf.json"
    patch = (
        "machine:\n  install:\n    image: factory.talos.dev/installer/" + "a" * 64 + ":v1.13.9\n"
    )
    document = {
        "resource": {
            "talos_machine_configuration_apply": {
                "worker": {"node": "10.0.0.5", "config_patches": [patch, "${local.more}"]}
            }
        }
    }
    path.write_text(json.dumps(document), "utf-8")
    found = codes(path)
    # The installer's schematic is unknown here: it is named, not guessed.
    assert [code for code, _ in found] == ["TS001"]


@pytest.mark.parametrize(
    "document",
    [
        {"resource": {SCHEMATIC_RESOURCE: {"a": {"schematic": 5}}}},
        {"resource": {SCHEMATIC_RESOURCE: {"a": {"schematic": "customization: []\n"}}}},
        {"resource": {SCHEMATIC_RESOURCE: ["x"], "talos_machine_configuration_apply": 3}},
        {
            "locals": {"a": {"gpus": "x", "config_patches": [3, "{{ no", "machine: 1"]}},
            "resource": {SCHEMATIC_RESOURCE: {"a": {"schematic": "customization: {}\n"}}},
        },
        {"resource": {"talos_machine_configuration_apply": {"w": {"config_patches": "x"}}}},
    ],
)
def test_odd_terraform_is_read_without_a_traceback(tmp_path: Path, document: Any) -> None:
    path = tmp_path / "main.tf.json"
    path.write_text(json.dumps(document), "utf-8")
    lint_paths([str(path)])


def test_omni_and_terraform_carry_the_decision_every_other_output_carries(tmp_path: Path) -> None:
    out = tmp_path / "out"
    kinds = ["-f", "schematic", "-f", "machine-config", "-f", "omni", "-f", "terraform"]
    result = runner.invoke(app, ["generate", str(EXAMPLE), *kinds, "--out", str(out)])
    assert result.exit_code == 0, result.output
    for pool in POOLS:
        folder = out / pool
        canonical = (folder / "schematic.yaml").read_text("utf-8")
        terraform = json.loads((folder / "talos-schematic.tf.json").read_text("utf-8"))
        name = f"talos_pool_{pool}"
        assert terraform["resource"][SCHEMATIC_RESOURCE][name]["schematic"] == canonical
        patch = list(yaml.safe_load_all((folder / "machine-config-patch.yaml").read_text("utf-8")))
        local = terraform["locals"][name]
        assert [yaml.safe_load(p) for p in local["config_patches"]] == patch
        (omni,) = yaml.safe_load_all((folder / "omni-workers.yaml").read_text("utf-8"))
        assert tuple(omni["systemExtensions"]) == Schematic.from_yaml(canonical).extensions


HYPHENATED = (
    "cluster: c\ntalos:\n  version: v1.13.9\npools:\n"
    "  - name: gpu-a\n    profile: metal-hgx-b200-8x\n"
    "  - name: l40s-pool-2\n    profile: kubevirt-l40s\n"
)


def resolves(reference: str, declared: dict[str, Any]) -> bool:
    """Whether ``reference`` (``a.b.c``) names a key path of ``declared``."""
    value: Any = declared
    for part in reference.split("."):
        if not isinstance(value, dict) or part not in value:
            return False
        value = value[part]
    return True


def test_every_reference_of_a_hyphenated_pool_resolves(tmp_path: Path) -> None:
    # Read by a real HCL2 parser: the references the file makes, and those a user writes
    # from APPLY.md's module block, name what the file declares.
    from hcl_references import json_expressions, traversals

    cluster_file = tmp_path / "c.yaml"
    cluster_file.write_text(HYPHENATED, "utf-8")
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["generate", str(cluster_file), "-f", "terraform", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    apply = (out / "APPLY.md").read_text("utf-8")
    for pool, name in (("gpu-a", "talos_pool_gpu_a"), ("l40s-pool-2", "talos_pool_l40s_pool_2")):
        document = json.loads((out / pool / "talos-schematic.tf.json").read_text("utf-8"))
        assert set(document["locals"]) == set(document["output"]) == {name}
        assert set(document["resource"][SCHEMATIC_RESOURCE]) == {name}
        expressions = json_expressions(document)
        assert expressions == [f"self.id == local.{name}.schematic_id", f"local.{name}"]
        references = [ref for e in expressions for ref in traversals(f"x = {e}\n")]
        assert references == ["self.id", f"local.{name}.schematic_id", f"local.{name}"]
        for reference in references[1:]:
            assert resolves(reference.removeprefix("local."), document["locals"]), reference
        assert f"talos_pool_{pool}" not in apply
    # APPLY.md's HCL, read by a real parser: each module's source is a pool's folder here, and
    # every module reference names an output and a key that folder's file declares.
    blocks = [textwrap.dedent(b) for b in re.findall(r"```hcl\n(.*?)```", apply, re.DOTALL)]
    assert len(blocks) == 2
    for block in blocks:
        parsed = hcl2.loads(block)
        ((label, body),) = parsed["module"][0].items()
        folder = out / body["source"].strip('"')
        used = json.loads((folder / "talos-schematic.tf.json").read_text("utf-8"))
        modules = [ref for ref in traversals(block) if ref.startswith("module.")]
        assert modules
        for reference in modules:
            _, module, output, key = reference.split(".")
            assert module == label.strip('"')
            assert used["output"][output]["value"] == f"${{local.{output}}}"
            assert key in used["locals"][output]


def test_the_module_block_names_only_the_provider_s_arguments() -> None:
    from hcl_references import traversals

    from schematic.output.render.terraform import module_usage

    usage = hcl2.loads(module_usage("gpu-a", "./gpu-a"))
    (block,) = usage["resource"]
    ((resource, named),) = block.items()
    assert resource.strip('"') == "talos_machine_configuration_apply"
    (arguments,) = named.values()
    given = {key for key in arguments if not key.startswith("__")}
    assert given - META_ARGUMENTS <= APPLY_ARGUMENTS
    assert "node" in given  # the provider's one required argument
    # Outside the module, only the provider example's own objects and for_each's key.
    outside = {
        ref.rsplit(".", 1)[0]
        for ref in traversals(module_usage("gpu-a", "./gpu-a"))
        if not ref.startswith("module.")
    }
    assert outside == {
        "talos_machine_secrets.this",
        "data.talos_machine_configuration.this",
        "each",
    }


def test_one_pool_on_stdout_tells_only_of_that_pool() -> None:
    # rtx6000's GPU is not in Cozystack's default passthrough list; l40s's is.
    result = runner.invoke(app, ["generate", str(EXAMPLE), "-f", "terraform", "--pool", "l40s"])
    assert result.exit_code == 0, result.output
    assert "rtx6000" not in result.stderr
    whole = runner.invoke(app, ["generate", str(EXAMPLE), "-f", "terraform", "--pool", "rtx6000"])
    assert "rtx6000" in whole.stderr


def test_the_guide_s_root_module_resolves_against_what_the_guide_generates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The guide's steps 1 and 2 as a reader runs them, then its HCL read by a real parser:
    # every module reference names an output and a key the generated file declares.
    from hcl_references import traversals

    guide = (ROOT / "docs" / "guides" / "terraform.md").read_text("utf-8")
    (block,) = [part.split("```", 1)[0] for part in guide.split("```hcl\n")[1:]]
    monkeypatch.chdir(tmp_path)
    init = guide.split("```sh\n")[1].split("\n", 1)[0].removeprefix("talos-schematic ")
    assert runner.invoke(app, init.split()).exit_code == 0
    args = ["generate", "cluster.yaml", "-f", "terraform", "--out", "infra/talos"]
    assert " ".join(args) in guide
    assert runner.invoke(app, args).exit_code == 0
    parsed = hcl2.loads(block)
    modules = {
        label.strip('"'): body["source"].strip('"')
        for entry in parsed["module"]
        for label, body in entry.items()
    }
    variables = {label.strip('"') for entry in parsed["variable"] for label in entry}
    from schematic.output.render.terraform import module_usage

    # What the guide shows is what APPLY.md shows for the pool.
    assert module_usage("gpu", "./infra/talos/gpu").split("\n")[:3] == block.split("\n")[4:7]
    used = set()
    for reference in traversals(block):
        root, name, *rest = reference.split(".")
        if root == "module":
            document = json.loads(
                (tmp_path / modules[name] / "talos-schematic.tf.json").read_text("utf-8")
            )
            output, key = rest
            assert document["output"][output]["value"] == f"${{local.{output}}}"
            assert key in document["locals"][output], reference
            used.add(key)
        elif root == "var":
            assert name in variables
        else:
            theirs = ("talos_machine_secrets.this.", "data.talos_machine_configuration.this.")
            assert reference.startswith((*theirs, "each.key")), reference
    assert used == {"config_patches", "boot_image"}
