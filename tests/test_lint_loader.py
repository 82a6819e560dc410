"""The lint loader and inventory: line numbers, scalars as written, objects by shape."""

from __future__ import annotations

from pathlib import Path

import pytest

from schematic.doctor.lint import lint_paths
from schematic.doctor.lint.inventory import build_inventory
from schematic.doctor.lint.loader import load_paths, parse_yaml
from schematic.errors import LintInputError
from schematic.safe_yaml import set_max_input_size

DATA = Path(__file__).parent / "data" / "lint"


def test_lines_of_keys_and_items() -> None:
    text = "a:\n  b:\n    - x\n    - y: 1\n# c\nc: on\n"
    (doc,) = parse_yaml(text, "f.yaml")
    assert doc.line(("a", "b")) == 2
    assert doc.line(("a", "b", 1, "y")) == 4
    assert doc.line(("c",)) == 6
    assert doc.line(("a", "missing", "deeper")) == 1  # nearest recorded ancestor


def test_a_key_written_twice_points_inside_the_value_that_is_read() -> None:
    # The later value is the one read, so its keys' lines are those lint reports; keys the
    # first value alone had are gone, and the keys around both keep their own lines.
    text = "a: 1\nm:\n  old: 1\n  b: 1\nz: 1\nm:\n  b: 2\n"
    (doc,) = parse_yaml(text, "f.yaml")
    assert doc.data["m"] == {"b": 2}
    assert doc.line(("m",)) == 6
    assert doc.line(("m", "b")) == 7
    assert doc.line(("m", "old")) == 6  # only its parent is recorded now
    assert (doc.line(("a",)), doc.line(("z",))) == (1, 5)


def test_yaml_1_1_words_stay_strings_and_go_types_resolve() -> None:
    (doc,) = parse_yaml("a: on\nb: 'true'\nc: true\nd: 10\ne: null\nf: 2024-01-01\n", "f")
    assert doc.data == {"a": "on", "b": "true", "c": True, "d": 10, "e": None, "f": "2024-01-01"}


def test_multi_document_lines_are_absolute() -> None:
    docs = parse_yaml("a: 1\n---\nb: 2\nc: 3\n", "f")
    assert [d.line(("c",)) for d in docs[1:]] == [4]
    assert docs[1].text.startswith("b: 2")


def test_embedded_yaml_is_shifted() -> None:
    (doc,) = parse_yaml("x: 1\ndata: |\n  k: v\n  m: n\n", "f")
    (inner,) = parse_yaml(doc.get(("data",)), "f", line_offset=doc.line(("data",)))
    assert inner.line(("m",)) == 4


def test_missing_path_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(LintInputError, match="no such file"):
        load_paths([str(tmp_path / "nope.yaml")])


def test_a_binary_file_is_a_problem_of_that_file_and_the_rest_is_read(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_bytes(b"\xff\xfe\x00a")
    (tmp_path / "c.yaml").write_text("talos:\n  version: v1.13.6\n")
    documents, problems = load_paths([str(tmp_path)])
    assert [d.get(("talos", "version")) for d in documents] == ["v1.13.6"]
    assert [(p.file, p.message, p.unread) for p in problems] == [
        (str(tmp_path / "b.yaml"), "not UTF-8 text (invalid start byte at byte 0)", True)
    ]


def test_a_file_over_the_input_limit_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "big.yaml").write_text("a: " + "x" * 4096 + "\n")
    set_max_input_size(1024)
    try:
        _, problems = load_paths([str(tmp_path / "big.yaml")])
    finally:
        set_max_input_size(None)
    assert [(p.message, p.unread) for p in problems] == [
        ("4,100 bytes, larger than the 1 KiB input limit (raise it with --max-input-size)", True)
    ]


def test_directories_are_walked_for_yaml_only(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.yml").write_text("gpus: []\n")
    (tmp_path / "README.md").write_text("# not yaml: [\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "x.yaml").write_text("bad: [\n")
    documents, problems = load_paths([str(tmp_path)])
    assert [d.data for d in documents] == [{"gpus": []}] and problems == []


def test_only_files_that_may_hold_an_object_lint_reads_are_composed(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("kind: ConfigMap\ndata: {a: b}\n")
    (tmp_path / "b.yaml").write_text("kind: KubernetesNodes\nspec: {}\n")
    documents, problems = load_paths([str(tmp_path)])
    assert [d.file for d in documents] == [str(tmp_path / "b.yaml")] and problems == []


def test_rendered_chart_output_is_grouped_into_one_pool() -> None:
    documents, _ = load_paths([str(DATA / "rendered-gpu-cluster.yaml")])
    inventory = build_inventory(documents)
    (pool,) = inventory.pools
    assert pool.name == "kubernetes-prod-md0"
    assert [g.name for g in pool.gpus] == ["nvidia.com/GH100_H200_SXM_141GB"]
    roles = [(u.role, u.id[:8], u.place.line) for u in pool.schematics]
    assert roles == [("boot disk", "ce4c9805", 22), ("installer image", "511e4dbb", 78)]
    assert pool.talos == "v1.13.0"
    assert pool.machine_config_modules is not None
    assert pool.machine_config_modules.names == ("nvidia", "nvidia_uvm")
    assert pool.machine_config_modules.place is not None
    assert pool.machine_config_modules.place.line == 73
    assert len(inventory.services) == 1 and len(inventory.control_planes) == 1


def test_rendered_chart_output_findings() -> None:
    report = lint_paths([str(DATA / "rendered-gpu-cluster.yaml")])
    found = sorted((f.code, f.line) for f in report.findings)
    assert found == [
        ("TS001", 78),  # the installer schematic is not known offline
        ("TS110", 22),
        ("TS111", 22),
        ("TS122", 73),
        ("TS130", 78),
        ("TS131", 91),
    ]


def test_machine_deployment_links_templates_with_any_names(tmp_path: Path) -> None:
    manifest = """\
apiVersion: cluster.x-k8s.io/v1beta1
kind: MachineDeployment
metadata: {name: c1-gpu}
spec:
  template:
    spec:
      bootstrap:
        configRef: {kind: TalosConfigTemplate, name: tct-x}
      infrastructureRef: {kind: KubevirtMachineTemplate, name: kmt-y}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1alpha1
kind: KubevirtMachineTemplate
metadata: {name: kmt-y}
spec:
  template:
    spec:
      virtualMachineTemplate:
        spec:
          dataVolumeTemplates:
            - spec:
                source:
                  http:
                    url: https://f.example/image/ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515/v1.13.6/openstack-amd64.raw.xz
---
apiVersion: bootstrap.cluster.x-k8s.io/v1alpha3
kind: TalosConfigTemplate
metadata: {name: tct-x}
spec:
  template:
    spec:
      data: |
        machine:
          install:
            image: reg.example/installer/{EMPTY}:v1.13.6
""".replace("{EMPTY}", "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba")
    (tmp_path / "m.yaml").write_text(manifest)
    report = lint_paths([str(tmp_path)])
    assert [(f.code, f.object, f.line) for f in report.findings] == [("TS130", "c1-gpu", 34)]
