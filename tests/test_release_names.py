"""The Helm releases a Cozystack output makes: one manager each, under a name Helm accepts.

Helm refuses a release name over 53 characters (helm/helm pkg/chartutil/validate_name.go,
``maxReleaseNameLen``); Flux's helm-controller shortens a longer one to 40 characters, ``-`` and
12 hex digits of its SHA-256 (internal/release/name.go, ``ShortenName``), which Cozystack's
kubernetes-nodes chart, deriving the pool from ``kubernetes-nodes-<cluster>-<pool>``, does not
accept; Cozystack caps cluster names at 32 (cozystack/cozystack#3315).
"""

from __future__ import annotations

from pathlib import Path

import yaml
from typer.testing import CliRunner

from schematic.cli import app, register_all_commands

register_all_commands()

CLUSTER = """\
cluster: {cluster}
namespace: tenant-demo
cozystack: {{version: pr3571}}
talos: {{version: v1.13.9}}
pools:
  - name: {pool}
    profile: kubevirt-l40s
  - name: cpu
    profile: kubevirt-cpu
"""


def generate(tmp_path: Path, cluster: str, pool: str, *formats: str) -> tuple[int, str, Path]:
    path = tmp_path / "cluster.yaml"
    path.write_text(CLUSTER.format(cluster=cluster, pool=pool))
    out = tmp_path / "out"
    args = ["generate", str(path), "--out", str(out)]
    for kind in formats:
        args += ["-f", kind]
    result = CliRunner().invoke(app, args)
    return result.exit_code, result.stderr, out


def objects(out: Path) -> list[dict[str, object]]:
    kustomization = yaml.safe_load((out / "kustomization.yaml").read_text())
    return [yaml.safe_load((out / path).read_text()) for path in kustomization["resources"]]


def release_of(document: dict[str, object]) -> str:
    """The Helm release an object makes: Cozystack's for a KubernetesNodes object, Flux's for a
    HelmRelease (spec.releaseName, else its name)."""
    metadata = document["metadata"]
    assert isinstance(metadata, dict)
    if document["kind"] == "KubernetesNodes":
        return f"kubernetes-nodes-{metadata['name']}"
    spec = document["spec"]
    assert isinstance(spec, dict)
    return str(spec.get("releaseName") or metadata["name"])


def test_helmrelease_and_cozystack_write_one_manager_per_release(tmp_path: Path) -> None:
    code, err, out = generate(tmp_path, "demo", "gpu", "helmrelease", "cozystack")
    assert code == 0, err
    written = objects(out)
    releases = [release_of(document) for document in written]
    assert sorted(releases) == ["kubernetes-nodes-demo-cpu", "kubernetes-nodes-demo-gpu"]
    assert {document["kind"] for document in written} == {"HelmRelease"}
    assert not (out / "gpu" / "kubernetes-nodes.yaml").exists()
    # -f cozystack alone still writes the KubernetesNodes objects.
    (tmp_path / "alone").mkdir()
    code, err, alone = generate(tmp_path / "alone", "demo", "gpu", "cozystack")
    assert code == 0, err
    assert {document["kind"] for document in objects(alone)} == {"KubernetesNodes"}


def test_the_longest_names_cozystack_accepts_make_releases_helm_accepts(tmp_path: Path) -> None:
    cluster = "c" * 32
    code, err, out = generate(tmp_path, cluster, "gpu", "helmrelease")
    assert code == 0, err
    for document in objects(out):
        assert len(release_of(document)) <= 53


def test_a_release_name_helm_would_refuse_is_an_error_naming_the_room_left(
    tmp_path: Path,
) -> None:
    code, err, out = generate(tmp_path, "c" * 32, "gpus", "helmrelease")
    assert code == 1
    assert "kubernetes-nodes-" + "c" * 32 + "-gpus is 54 characters" in err
    assert "a pool name may have 3 characters" in err
    assert not out.exists()


def test_a_cluster_name_cozystack_refuses_is_an_error(tmp_path: Path) -> None:
    code, err, out = generate(tmp_path, "c" * 33, "g", "values")
    assert code == 1
    assert "33 characters" in err and "32 at most" in err
    assert not out.exists()
