"""Boot images and installers: every URL carries the pool's schematic ID."""

from __future__ import annotations

import pytest
from factory_paths import parse_factory_url, parse_installer_name, parse_profile_path
from hypothesis import given, settings
from hypothesis import strategies as st

from schematic.facts.media import _table, platform_media
from schematic.facts.talos import TalosVersion
from schematic.inputs.cluster_file import parse_cluster
from schematic.output.render.urls import pool_urls
from schematic.plan.cluster import PoolPlan, plan_cluster
from schematic.plan.references import PXE_FACTORY_URL, installer_reference, medium_reference


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
    assert plan.references.boot_image == f"{base}/metal-arm64.raw.zst"
    assert plan.references.iso == f"{base}/metal-arm64.iso"


def test_metal_before_talos_1_8_is_a_raw_xz_disk() -> None:
    # Talos 1.8 moved disk images from xz to zstd; older imagers have no zstd output.
    plan = pool("profile: metal-intel", talos="v1.7.7")
    base = f"https://factory.talos.dev/image/{plan.schematic_id}/v1.7.7"
    assert plan.references.boot_image == f"{base}/metal-amd64.raw.xz"
    assert pool("profile: metal-intel", talos="v1.8.0").references.boot_image.endswith(".raw.zst")


def test_self_hosted_factory_and_installer_repository() -> None:
    plan = pool(
        "profile: kubevirt-cpu",
        ", imageFactoryURL: 'https://factory.internal/'"
        ", installerRepository: reg.internal/installer",
    )
    assert plan.references.boot_image.startswith(
        f"https://factory.internal/image/{plan.schematic_id}/"
    )
    assert plan.references.installer == f"reg.internal/installer/{plan.schematic_id}:v1.13.9"


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
    assert f"/image/{plan.schematic_id}/" in plan.references.boot_image
    assert plan.references.installer.endswith(f"/{plan.schematic_id}:v1.13.9")
    assert plan.schematic.id == plan.schematic_id
    assert list(plan.extensions) == sorted(set(plan.extensions))
    # NVIDIA extensions exactly when the pool holds an NVIDIA GPU.
    has_nvidia = any("nvidia" in name for name in plan.extensions)
    assert has_nvidia == bool(plan.gpu_resources) == (plan.nvidia is not None)


# --- every name against the factory's path grammar (tests/factory_paths.py) ------------------


ID = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"


@pytest.mark.parametrize(
    ("path", "version", "expected"),
    [
        # Cases image-factory's own ParseFromPath test table holds.
        ("kernel-arm64", "v1.5.0", ("kernel", "metal", "arm64", False, "")),
        ("cmdline-aws-amd64-secureboot", "v1.6.0", ("cmdline", "aws", "amd64", True, "")),
        (
            "cmdline-metal-rpi_generic-arm64",
            "v1.6.0",
            ("cmdline", "metal", "arm64", False, "rpi_generic"),
        ),
        ("metal-arm64-secureboot.iso", "v1.6.0", ("iso", "metal", "arm64", True, "")),
        ("metal-amd64-secureboot-uki.efi", "v1.6.0", ("uki", "metal", "amd64", True, "")),
        ("installer-amd64.tar", "v1.6.0", ("installer", "metal", "amd64", False, "")),
        (
            "metal-rpi_generic-arm64.raw.xz",
            "v1.6.0",
            ("image", "metal", "arm64", False, "rpi_generic"),
        ),
        ("aws-amd64-secureboot.qcow2.tar.gz", "v1.6.0", ("image", "aws", "amd64", True, "")),
        ("digital-ocean-amd64.raw.gz", "v1.6.0", ("image", "digital-ocean", "amd64", False, "")),
    ],
)
def test_the_path_rules_read_the_factorys_own_cases(
    path: str, version: str, expected: tuple[str, str, str, bool, str]
) -> None:
    got = parse_profile_path(path, version)
    assert (got.kind, got.platform, got.arch, got.secureboot, got.board) == expected


@pytest.mark.parametrize(
    ("path", "version"),
    [
        ("kernel-foo", "v1.5.0"),
        ("metal-rpi_generic-arm64.raw.xz", "v1.7.0"),  # boards moved into overlays
        ("metal-amd64.efi", "v1.13.9"),
        ("metal-amd64-secureboot.uki.efi", "v1.13.9"),  # the old PXE script's typo
        ("metal.raw.xz", "v1.13.9"),
    ],
)
def test_the_path_rules_refuse_what_the_factory_refuses(path: str, version: str) -> None:
    with pytest.raises(ValueError):
        parse_profile_path(path, version)


def _kinds(platform: str, secureboot: bool) -> list[str]:
    media = platform_media(platform)
    kinds = [
        kind
        for kind, method in (("disk", "disk-image"), ("iso", "iso"), ("pxe", "pxe"))
        if method in media.boot_methods
    ]
    return kinds + (["uki"] if secureboot else [])


@pytest.mark.parametrize("version", ["v1.7.7", "v1.12.6", "v1.13.9", "v1.14.0"])
@pytest.mark.parametrize("platform", sorted(_table()))
def test_every_medium_of_every_platform_parses_back(platform: str, version: str) -> None:
    media = platform_media(platform)
    for arch in ("amd64", "arm64"):
        for secure in (False, True) if media.secureboot else (False,):
            for kind in _kinds(platform, secure):
                url = medium_reference(
                    kind,  # type: ignore[arg-type]
                    schematic_id=ID,
                    version=TalosVersion.parse(version),
                    platform=platform,
                    architecture=arch,
                    secureboot=secure,
                )
                base = PXE_FACTORY_URL if kind == "pxe" else "https://factory.talos.dev"
                route, schematic_id, got_version, parsed = parse_factory_url(url, base)
                assert (schematic_id, got_version) == (ID, version)
                assert route == ("pxe" if kind == "pxe" else "image")
                expected_kind = {"disk": "image", "pxe": "cmdline"}.get(kind, kind)
                assert parsed.kind == expected_kind, url
                assert parsed.platform == media.image_platform, url
                assert (parsed.arch, parsed.secureboot, parsed.board) == (arch, secure, ""), url
                if kind == "disk" and version == "v1.7.7":
                    assert parsed.out_format != ".zst", url


def test_board_images_are_raw_xz_with_no_board_in_the_name() -> None:
    url = medium_reference(
        "disk",
        schematic_id=ID,
        version=TalosVersion.parse("v1.13.9"),
        platform="metal",
        architecture="arm64",
        board=True,
    )
    assert url.endswith("/metal-arm64.raw.xz")
    parsed = parse_profile_path(url.rsplit("/", 1)[1], "v1.13.9")
    assert (parsed.platform, parsed.board, parsed.out_format) == ("metal", "", ".xz")


@pytest.mark.parametrize(
    ("repository", "secure", "name"),
    [
        ("factory.talos.dev/installer", False, "installer"),
        ("factory.talos.dev/installer", True, "installer-secureboot"),
        ("factory.talos.dev/metal-installer", False, "metal-installer"),
        ("factory.talos.dev/metal-installer", True, "metal-installer-secureboot"),
        ("reg.internal/mirror/installer-secureboot", True, "installer-secureboot"),
    ],
)
def test_installer_names_are_ones_the_registry_reads(
    repository: str, secure: bool, name: str
) -> None:
    ref = installer_reference(
        repository, schematic_id=ID, version=TalosVersion.parse("v1.14.0"), secureboot=secure
    )
    image = ref.rsplit("/", 2)
    assert image[1] == name and image[2] == f"{ID}:v1.14.0"
    assert parse_installer_name(name)[1] is secure


def test_a_secureboot_pool_needs_a_factory_installer_repository() -> None:
    with pytest.raises(ValueError, match="names no factory installer image"):
        installer_reference(
            "reg.internal/talos",
            schematic_id=ID,
            version=TalosVersion.parse("v1.13.9"),
            secureboot=True,
        )


def test_uki_is_secureboot_only() -> None:
    with pytest.raises(ValueError, match="SecureBoot media only"):
        medium_reference(
            "uki",
            schematic_id=ID,
            version=TalosVersion.parse("v1.13.9"),
            platform="metal",
            architecture="amd64",
        )


def test_pxe_of_a_self_hosted_factory_is_on_the_factory() -> None:
    url = medium_reference(
        "pxe",
        schematic_id=ID,
        version=TalosVersion.parse("v1.13.9"),
        platform="metal",
        architecture="amd64",
        image_factory_url="https://factory.internal",
    )
    assert url == f"https://factory.internal/pxe/{ID}/v1.13.9/metal-amd64"


def test_talos_1_14_installs_from_the_factorys_metal_installer() -> None:
    plan = pool("profile: metal-hgx-b200-8x", talos="v1.14.0")
    assert plan.references.installer == (
        f"factory.talos.dev/metal-installer/{plan.schematic_id}:v1.14.0"
    )
    assert parse_installer_name("metal-installer") == ("metal", False)
    # A repository the user names is kept on every release.
    mirrored = pool(
        "profile: metal-intel", ", installerRepository: reg.internal/installer", talos="v1.14.0"
    )
    assert (
        mirrored.references.installer == f"reg.internal/installer/{mirrored.schematic_id}:v1.14.0"
    )
    assert pool("profile: metal-intel", talos="v1.13.9").references.installer.startswith(
        "factory.talos.dev/installer/"
    )


@pytest.mark.parametrize(
    ("spec", "platform"),
    [
        ("profile: kubevirt-cpu", "openstack"),
        ("profile: kubevirt-l40s", "openstack"),
        ("profile: metal-intel", "metal"),
        ("profile: metal-rpi5", "metal"),
    ],
)
def test_talos_1_14_upgrades_from_the_installer_of_the_platform_it_booted(
    spec: str, platform: str
) -> None:
    # A platform installer writes its platform's kernel arguments (talos.platform=...): a
    # KubeVirt worker that booted the openstack image must not upgrade into metal's.
    plan = pool(spec, talos="v1.14.0")
    urls = pool_urls(plan)
    name = urls["installer"].split("/")[1]
    assert parse_installer_name(name) == (platform, False)
    booted = parse_factory_url(urls["image"], "https://factory.talos.dev")[3]
    assert booted.platform == platform
    # The user's repository is theirs on every platform.
    chosen = pool(f"{spec}", ", installerRepository: factory.talos.dev/metal-installer", "v1.14.0")
    assert chosen.references.installer.startswith("factory.talos.dev/metal-installer/")


def test_talos_1_14_secureboot_upgrades_from_the_platform_secureboot_installer() -> None:
    plan = pool("profile: metal-intel, secureboot: {enabled: true}", talos="v1.14.0")
    assert plan.references.installer == (
        f"factory.talos.dev/metal-installer-secureboot/{plan.schematic_id}:v1.14.0"
    )


def test_owner_stamped_schematics_get_the_enterprise_download_urls() -> None:
    from schematic.output.render.urls import enterprise_urls, pool_urls
    from schematic.plan.cluster import with_factory_schematics

    text = "cluster: c\ntalos: {version: v1.13.9}\npools:\n  - {name: cpu, profile: kubevirt-cpu}\n"
    offline = plan_cluster(parse_cluster(text, "c.yaml"))
    (pool,) = offline.pools
    assert enterprise_urls(pool) is None and "enterprise" not in pool_urls(pool)
    stamped = "owner: team@example.com\n" + pool.canonical
    (owned,) = with_factory_schematics(offline, {pool.schematic_id: ("f" * 64, stamped)}).pools
    disk = owned.references.boot_image
    assert pool_urls(owned)["enterprise"] == {
        "downloadToken": "https://factory.talos.dev/download-token",
        "sha256": disk + ".sha256",
        "sha512": disk + ".sha512",
        "sigstore": disk + ".sigstore.json",
    }


def test_alibabacloud_boots_a_qcow2_disk_image_from_talos_1_14() -> None:

    plan = pool("hardware: {platform: alibabacloud}", talos="v1.14.0")
    assert plan.references.boot_image.endswith("/v1.14.0/alibabacloud-amd64.qcow2")
    media = platform_media("alibabacloud")
    assert media.boot_methods == frozenset({"disk-image"}) and not media.secureboot
