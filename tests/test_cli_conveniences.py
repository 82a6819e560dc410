"""The conveniences beside generate: urls for any ID, the schematic of a GPU decision, the
profile and overlay lists, and init writing a cluster file generate accepts."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner, Result

from schematic.cli import app, register_all_commands
from schematic.core.model import Schematic
from schematic.facts.chart_targets import chart_targets

register_all_commands()

EMPTY = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"
COZYSTACK = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
# A real lspci -nnvv dump of an HGX B200 (its source is noted in test_cli_detect.py).
HGX_DUMP = Path(__file__).resolve().parent / "data" / "lspci-nnvv.hgx-b200.txt"
# A KubeVirt guest with a passed-through A10, as test_cli_detect.py has it.
A10_VM = (
    '00:00.0 "Host bridge [0600]" "Intel Corporation [8086]" "82G33/G31/P35/P31 Express DRAM '
    'Controller [29c0]" "Red Hat, Inc. [1af4]" "QEMU Virtual Machine [1100]"\n'
    '01:00.0 "Ethernet controller [0200]" "Red Hat, Inc. [1af4]" "Virtio 1.0 network device '
    '[1041]" -r01 "Red Hat, Inc. [1af4]" "Device [1100]"\n'
    '09:00.0 "3D controller [0302]" "NVIDIA Corporation [10de]" "GA102GL [A10] [2236]" -ra1 '
    '"NVIDIA Corporation [10de]" "GA102GL [A10] [1482]"\n'
)


def run(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


# --- urls ---------------------------------------------------------------------------------------


def test_urls_of_any_id_without_a_cluster_file() -> None:
    result = run("urls", EMPTY, "--talos", "v1.13.9", "--platform", "metal")
    assert result.exit_code == 0, result.stderr
    urls = yaml.safe_load(result.stdout)
    base = f"https://factory.talos.dev/image/{EMPTY}/v1.13.9"
    assert urls["schematicID"] == EMPTY
    assert urls["image"] == f"{base}/metal-amd64.raw.zst"
    assert urls["iso"] == f"{base}/metal-amd64.iso"
    assert urls["pxe"] == f"https://pxe.factory.talos.dev/pxe/{EMPTY}/v1.13.9/metal-amd64"
    assert urls["ipxe"] == f"chain --autofree {urls['pxe']}"
    assert urls["installer"] == f"factory.talos.dev/installer/{EMPTY}:v1.13.9"


def test_urls_match_what_generate_writes_for_a_pool(tmp_path: Path) -> None:
    """One path grammar: the urls of a pool's ID are generate's urls.yaml, less the pool name."""
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        "cluster: c\ncozystack: {version: osimage}\ntalos: {version: v1.14.0}\n"
        "pools:\n  - name: cpu\n    profile: kubevirt-cpu\n"
    )
    generated = yaml.safe_load(run("generate", str(cluster), "-f", "urls").stdout)
    result = run("urls", COZYSTACK, "--talos", "v1.14.0", "--platform", "kubevirt", "--json")
    assert result.exit_code == 0, result.stderr
    urls = json.loads(result.stdout)
    assert urls.pop("talos") == "v1.14.0"
    del generated["pool"]
    assert urls == generated
    assert urls["installer"].startswith("factory.talos.dev/openstack-installer/")


def test_urls_secureboot_arm64_and_a_board() -> None:
    secure = yaml.safe_load(
        run("urls", EMPTY, "--talos", "v1.13.9", "--secureboot", "--arch", "arm64").stdout
    )
    assert secure["imageSecureBoot"].endswith("/metal-arm64-secureboot.raw.zst")
    assert secure["ukiSecureBoot"].endswith("/metal-arm64-secureboot-uki.efi")
    assert (
        secure["installerSecureBoot"] == f"factory.talos.dev/installer-secureboot/{EMPTY}:v1.13.9"
    )
    board = yaml.safe_load(
        run("urls", EMPTY, "--talos", "v1.13.9", "--arch", "arm64", "--board").stdout
    )
    assert board["image"].endswith("/metal-arm64.raw.xz")
    assert "iso" not in board


def test_urls_refuses_what_is_not_an_id_or_a_platform() -> None:
    bad_id = run("urls", "abc", "--talos", "v1.13.9")
    assert bad_id.exit_code == 2
    assert "not a schematic ID" in bad_id.stderr
    bad_platform = run("urls", EMPTY, "--talos", "v1.13.9", "--platform", "amiga")
    assert bad_platform.exit_code == 2
    bad_version = run("urls", EMPTY, "--talos", "1.x")
    assert bad_version.exit_code == 1
    assert "is not a Talos version" in bad_version.stderr


# --- gpu --schematic ----------------------------------------------------------------------------


def test_gpu_schematic_prints_the_body_and_its_id() -> None:
    result = run("gpu", "10de:2bb5", "--talos", "v1.13.9", "--schematic")
    assert result.exit_code == 0, result.stderr
    first, body = result.stdout.split("\n", 1)
    schematic = Schematic.from_yaml(body)
    assert first == f"# schematic {schematic.id}"
    # The NVIDIA choice, and the KubeVirt guest agent a passed-through GPU's VM needs.
    assert schematic.extensions == (
        "siderolabs/nvidia-container-toolkit-production",
        "siderolabs/nvidia-open-gpu-kernel-modules-production",
        "siderolabs/qemu-guest-agent",
    )
    # It is the schematic generate gives a pool of that GPU.
    assert body == Schematic.from_extensions(schematic.extensions).canonical()
    metal = run("gpu", "10de:2bb5", "--talos", "v1.13.9", "--schematic", "--metal").stdout
    assert "qemu-guest-agent" not in metal
    as_json = json.loads(
        run("gpu", "10de:2bb5", "--talos", "v1.13.9", "--schematic", "-f", "json").stdout
    )
    assert as_json["schematicID"] == schematic.id
    assert as_json["schematic"] == body
    assert as_json["flavour"] == "open"


def test_gpu_schematic_matches_generate_for_the_same_pool(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        "cluster: c\ncozystack: {version: osimage}\ntalos: {version: v1.13.9}\n"
        "pools:\n  - name: v100\n    profile: kubevirt-v100-pcie-16gb\n"
    )
    (pool,) = json.loads(run("generate", str(cluster), "-f", "json").stdout)["pools"]
    gpu = json.loads(run("gpu", "10de:1db4", "--talos", "v1.13.9", "--schematic", "--json").stdout)
    assert (gpu["schematicID"], gpu["schematic"]) == (pool["schematicID"], pool["schematic"])


# --- profiles, overlays -------------------------------------------------------------------------


def test_profiles_lists_the_shipped_ones_and_a_directory_shadows_them(tmp_path: Path) -> None:
    listed = run("profiles")
    assert listed.exit_code == 0, listed.stderr
    line = next(
        row for row in listed.stdout.splitlines() if row.startswith("kubevirt-v100-pcie-16gb ")
    )
    assert "kubevirt-amd64" in line and "1x 10de:1db4" in line
    (tmp_path / "kubevirt-cpu.yaml").write_text(
        "name: kubevirt-cpu\ndescription: ours\nplatform: kubevirt\n"
    )
    (tmp_path / "lab.yaml").write_text("name: lab\nplatform: metal\ncpuVendor: amd\n")
    documents = json.loads(run("profiles", "--profiles", str(tmp_path), "-f", "json").stdout)
    by_name = {document["name"]: document for document in documents}
    assert by_name["kubevirt-cpu"]["description"] == "ours"
    assert by_name["lab"]["cpuVendor"] == "amd"
    assert [document["name"] for document in documents] == sorted(by_name)


def test_overlays_lists_a_releases_boards_with_their_images() -> None:
    result = run("overlays", "--talos", "v1.13.9", "--json")
    assert result.exit_code == 0, result.stderr
    rows = {row["name"]: row["image"] for row in json.loads(result.stdout)}
    assert rows["rpi_generic"] == "siderolabs/sbc-raspberrypi"
    text = run("overlays", "--talos", "v1.13.9").stdout
    assert any(
        line.split() == ["rpi_generic", "siderolabs/sbc-raspberrypi"] for line in text.splitlines()
    )
    assert run("overlays", "--talos", "v0.1.0").exit_code == 1


# --- init ---------------------------------------------------------------------------------------


def test_init_from_options_writes_a_file_generate_accepts(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    result = run(
        "init",
        str(path),
        "--cluster",
        "ml",
        "--talos",
        "v1.13.9",
        "--chart",
        "pr3571",
        "--namespace",
        "tenant-ml",
        "--pool",
        "gpu=rtx-pro-6000-blackwell-server",
        "--pool",
        "cpu=kubevirt-cpu",
    )
    assert result.exit_code == 0, result.stderr
    text = path.read_text()
    assert text.startswith("# A talos-schematic cluster file")
    assert "  # KubeVirt VM" in text  # each pool carries its profile's description
    document = yaml.safe_load(text)
    assert document["cluster"] == "ml"
    assert document["cozystack"] == {"version": "pr3571"}
    assert document["namespace"] == "tenant-ml"
    assert document["talos"] == {"version": "v1.13.9"}
    assert [pool["name"] for pool in document["pools"]] == ["gpu", "cpu"]
    generated = run("generate", str(path), "-f", "json")
    assert generated.exit_code == 0, generated.stderr
    assert run("generate", str(path), "--out", str(tmp_path / "out")).exit_code == 0
    pools = json.loads(generated.stdout)["pools"]
    assert pools[0]["nvidia"]["flavour"] == "open"
    # init never replaces a file.
    again = run("init", str(path))
    assert again.exit_code == 1
    assert "exists" in again.stderr
    assert path.read_text() == text


def test_init_from_a_detect_dump(tmp_path: Path) -> None:
    dump = tmp_path / "a10.txt"
    dump.write_text(A10_VM)
    result = run(
        "init",
        "--from-dump",
        str(dump),
        "--talos",
        "v1.13.9",
        "--chart",
        "pr3571",
        "--namespace",
        "tenant-a",
    )
    assert result.exit_code == 0, result.stderr
    (pool,) = yaml.safe_load(result.stdout)["pools"]
    assert pool["name"] == "gpu-1"
    assert pool["hardware"]["platform"] == "kubevirt"
    assert pool["hardware"]["gpus"] == [{"id": "10de:2236", "count": 1}]
    written = tmp_path / "cluster.yaml"
    written.write_text(result.stdout)
    assert run("generate", str(written)).exit_code == 0


def test_init_from_a_real_bare_metal_dump(tmp_path: Path) -> None:
    result = run("init", "--from-dump", str(HGX_DUMP), "--talos", "v1.13.9")
    assert result.exit_code == 0, result.stderr
    (pool,) = yaml.safe_load(result.stdout)["pools"]
    assert pool["hardware"]["platform"] == "metal"
    assert pool["hardware"]["gpus"][0]["count"] == 8
    written = tmp_path / "cluster.yaml"
    written.write_text(result.stdout)
    assert run("generate", str(written), "-f", "json").exit_code == 0


def test_init_refuses_an_unknown_profile_before_writing(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    result = run("init", str(path), "--pool", "gpu=no-such-profile")
    assert result.exit_code == 1
    assert "no-such-profile" in result.stderr
    assert not path.exists()
    assert run("init", "--pool", "nameonly").exit_code == 2


def test_init_asks_for_the_cozystack_release_and_writes_what_was_named() -> None:
    refused = run("init", "--namespace", "tenant-ml", "--pool", "gpu=kubevirt-l40s")
    assert refused.exit_code == 2
    assert "--chart" in refused.output
    for target in chart_targets():
        assert target.name in refused.output
    assert refused.stdout == "" or "cozystack" not in refused.stdout
    # Whatever is named, as named: a release of a line, a chart target.
    for named in ("v1.6.2", "v1.6", "v1.7", "main", "pr3571", "osimage"):
        result = run("init", "--chart", named, "--namespace", "t", "--pool", "cpu=kubevirt-cpu")
        assert result.exit_code == 0, result.stderr
        assert yaml.safe_load(result.stdout)["cozystack"] == {"version": named}
    assert run("init", "--chart", "v1.9").exit_code == 2


def test_init_of_bare_metal_pools_needs_no_cozystack_release(tmp_path: Path) -> None:
    result = run("init", "--pool", "gpu=metal-hgx-b200-8x")
    assert result.exit_code == 0, result.stderr
    assert "cozystack" not in yaml.safe_load(result.stdout)
    written = tmp_path / "cluster.yaml"
    written.write_text(result.stdout)
    assert run("generate", str(written), "-f", "json").exit_code == 0


def test_init_without_pools_gives_a_cpu_pool_and_a_gpu_example() -> None:
    result = run("init", "--chart", "osimage", "--namespace", "tenant-ml")
    assert result.exit_code == 0, result.stderr
    assert "#   - name: gpu\n  #     profile: rtx-pro-6000-blackwell-server\n" in result.stdout
    (pool,) = yaml.safe_load(result.stdout)["pools"]
    assert pool["profile"] == "kubevirt-cpu"


def test_init_writes_the_namespace_every_management_object_carries(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    args = ("--chart", "osimage", "--namespace", "tenant-ml", "--pool", "gpu=kubevirt-l40s")
    assert run("init", str(path), *args).exit_code == 0
    assert yaml.safe_load(path.read_text())["namespace"] == "tenant-ml"
    out = tmp_path / "out"
    result = run("generate", str(path), "--out", str(out))
    assert result.exit_code == 0, result.stderr
    nodes = yaml.safe_load((out / "gpu" / "kubernetes-nodes.yaml").read_text())
    assert nodes["metadata"]["namespace"] == "tenant-ml"
    refused = run("init", "--chart", "osimage", "--namespace", "Not A Name")
    assert refused.exit_code == 2
    assert "--namespace" in refused.output


def test_init_requires_the_namespace_for_tenant_pools(tmp_path: Path) -> None:
    # Every KubernetesNodes object carries it and nothing derives it: asked, like --chart.
    path = tmp_path / "cluster.yaml"
    refused = run("init", str(path), "--chart", "osimage", "--pool", "gpu=kubevirt-l40s")
    assert refused.exit_code == 2
    assert "--namespace tenant-NAME" in " ".join(refused.output.split())
    assert not path.exists()
    # Bare-metal pools are no Cozystack objects: neither is asked.
    assert run("init", "--pool", "gpu=metal-hgx-b200-8x").exit_code == 0


def test_cozystack_objects_without_a_namespace_are_an_error_naming_file_line_and_fix(
    tmp_path: Path,
) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        "# no namespace\ncluster: ml\ncozystack: {version: osimage}\n"
        "talos: {version: v1.13.9}\npools:\n  - {name: gpu, profile: kubevirt-l40s}\n"
    )
    out = tmp_path / "out"
    for args in (["--out", str(out)], ["-f", "cozystack"], ["-f", "helmrelease"]):
        result = run("generate", str(cluster), *args)
        assert result.exit_code == 1, args
        assert result.stderr.startswith(
            f'talos-schematic: {cluster}:2: namespace: not set (tenant pools "gpu");'
        ), result.stderr
        assert "  namespace: tenant-NAME\n" in result.stderr
        assert "init --namespace tenant-NAME" in result.stderr
        assert not out.exists()
    # What must not fire: values and the other kinds are no objects.
    for kind in ("values", "json", "urls", "machine-config", "addons"):
        assert run("generate", str(cluster), "-f", kind).exit_code == 0, kind


def test_init_refuses_a_gpu_pool_its_chart_cannot_load_with_generates_verdict(
    tmp_path: Path,
) -> None:
    # v1.6.x and main have no kernelModules value: generate refuses the GPU pool, so init does
    # not write the file (the same words, the same exit, the way out; no flag to insist).
    path = tmp_path / "cluster.yaml"
    for chart in ("v1.6", "v1.6.2", "main"):
        args = ("--chart", chart, "--namespace", "tenant-ml", "--pool", "gpu=kubevirt-l40s")
        refused = run("init", str(path), *args)
        assert refused.exit_code == 1, chart
        assert refused.stderr.startswith(
            f'talos-schematic: init --chart {chart}: pool "gpu" (nvidia, nvidia_uvm, '
            "nvidia_drm, nvidia_modeset): kernelModules:"
        ), refused.stderr
        assert "--chart pr3571 or osimage" in refused.stderr
        assert "--allow-ignored-keys" not in refused.stderr
        assert not path.exists()
    # What must not fire: a CPU pool on v1.6, and the GPU pool on a chart that loads modules.
    cpu = ("--namespace", "tenant-ml", "--pool", "cpu=kubevirt-cpu")
    assert run("init", str(path), "--chart", "v1.6", *cpu).exit_code == 0
    path.unlink()
    gpu = ("--namespace", "tenant-ml", "--pool", "gpu=kubevirt-l40s")
    assert run("init", str(path), "--chart", "pr3571", *gpu).exit_code == 0
    assert run("generate", str(path), "--out", str(tmp_path / "out")).exit_code == 0
