"""Boot images and installers: every URL carries the pool's schematic ID."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from schematic.cluster import PoolPlan, plan_cluster
from schematic.inputs.cluster_file import parse_cluster
from schematic.render.urls import boot_image_url, installer_image, iso_url, pool_urls


def pool(spec: str, top: str = "", talos: str = "v1.13.9") -> PoolPlan:
    text = f"cluster: c\ntalos: {{version: {talos}{top}}}\npools:\n  - {{name: p, {spec}}}\n"
    return plan_cluster(parse_cluster(text, "c.yaml")).pools[0]


def test_kubevirt_boots_the_openstack_image() -> None:
    plan = pool("profile: kubevirt-cpu")
    base = f"https://factory.talos.dev/image/{plan.schematic_id}/v1.13.9"
    assert pool_urls(plan) == {
        "pool": "p",
        "schematicID": plan.schematic_id,
        "image": f"{base}/openstack-amd64.raw.xz",
        "installer": f"factory.talos.dev/installer/{plan.schematic_id}:v1.13.9",
    }


def test_metal_has_a_raw_zst_disk_and_an_iso() -> None:
    plan = pool("profile: metal-dgx-spark")
    base = f"https://factory.talos.dev/image/{plan.schematic_id}/v1.13.9"
    assert boot_image_url(plan) == f"{base}/metal-arm64.raw.zst"
    assert iso_url(plan) == f"{base}/metal-arm64.iso"


def test_metal_before_talos_1_8_is_a_raw_xz_disk() -> None:
    # Talos 1.8 moved disk images from xz to zstd; older imagers have no zstd output.
    plan = pool("profile: metal-intel", talos="v1.7.7")
    base = f"https://factory.talos.dev/image/{plan.schematic_id}/v1.7.7"
    assert boot_image_url(plan) == f"{base}/metal-amd64.raw.xz"
    assert boot_image_url(pool("profile: metal-intel", talos="v1.8.0")).endswith(".raw.zst")


def test_self_hosted_factory_and_installer_repository() -> None:
    plan = pool(
        "profile: kubevirt-cpu",
        ", imageFactoryURL: 'https://factory.internal/'"
        ", installerRepository: reg.internal/installer",
    )
    assert boot_image_url(plan).startswith(f"https://factory.internal/image/{plan.schematic_id}/")
    assert installer_image(plan) == f"reg.internal/installer/{plan.schematic_id}:v1.13.9"


PROFILES = [
    "kubevirt-cpu",
    "kubevirt-l40s",
    "kubevirt-v100-pcie-16gb",
    "kubevirt-rtx-pro-6000-blackwell-server",
    "metal-amd",
    "metal-hgx-h100-8x",
]


@settings(max_examples=40, deadline=None)
@given(
    profile=st.sampled_from(PROFILES),
    extras=st.lists(
        st.sampled_from(["iscsi-tools", "drbd", "zfs", "util-linux-tools"]), max_size=3
    ),
    args=st.lists(st.sampled_from(["console=ttyS0", "quiet", "net.ifnames=0"]), max_size=2),
)
def test_image_installer_and_nvidia_extensions_follow_the_pool(
    profile: str, extras: list[str], args: list[str]
) -> None:
    plan = pool(f"profile: {profile}, extensions: {extras}, kernelArgs: {args}")
    assert f"/image/{plan.schematic_id}/" in boot_image_url(plan)
    assert installer_image(plan).endswith(f"/{plan.schematic_id}:v1.13.9")
    assert plan.schematic.id == plan.schematic_id
    assert list(plan.extensions) == sorted(set(plan.extensions))
    # NVIDIA extensions exactly when the pool holds an NVIDIA GPU.
    has_nvidia = any("nvidia" in name for name in plan.extensions)
    assert has_nvidia == bool(plan.gpu_resources) == (plan.nvidia is not None)
