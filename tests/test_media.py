"""Boot media options: SecureBoot, overlays, META, bootloader, sector size, boot schematics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from factory_paths import parse_factory_url, parse_installer_name
from typer.testing import CliRunner, Result

from schematic.cli import app, register_all_commands
from schematic.core.model import Schematic
from schematic.errors import ClusterFileError, ProfileError, TalosSchematicError
from schematic.facts.media import MetaValue
from schematic.inputs.cluster_file import parse_cluster
from schematic.inputs.profiles import load_profile
from schematic.output.render.urls import pool_urls
from schematic.plan.cluster import PoolPlan, plan_cluster
from schematic.plan.references import PXE_FACTORY_URL

register_all_commands()
runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
TALOS_SCHEMAS = Path(__file__).resolve().parents[2] / "shared" / "reference" / "talos"
VECTORS = ROOT / "tests" / "data" / "schematic-vectors.yaml"


def run(*args: str) -> Result:
    return runner.invoke(app, list(args))


def plan(pools: str, talos: str = "version: v1.13.9") -> list[PoolPlan]:
    text = f"cluster: c\ntalos: {{{talos}}}\npools:\n{pools}"
    return list(plan_cluster(parse_cluster(text, "c.yaml"), source="c.yaml").pools)


def one(pool: str, talos: str = "version: v1.13.9") -> PoolPlan:
    return plan(f"  - {{name: p, {pool}}}\n", talos)[0]


def published(canonical_of: str) -> dict[str, Any]:
    vectors = yaml.safe_load(VECTORS.read_text())["vectors"]
    return next(v for v in vectors if v["canonical"] == canonical_of)


# --- published IDs -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("profile", "overlay", "image"),
    [
        ("metal-rpi5", "rpi_generic", "siderolabs/sbc-raspberrypi"),
        ("metal-jetson-nano", "jetson_nano", "siderolabs/sbc-jetson"),
    ],
)
def test_board_profiles_give_the_published_vanilla_overlay_ids(
    profile: str, overlay: str, image: str
) -> None:
    pool = one(f"profile: {profile}")
    canonical = f"overlay:\n    image: {image}\n    name: {overlay}\ncustomization: {{}}\n"
    assert pool.canonical == canonical
    # The Talos docs' and image-factory tests' ID for this body.
    assert pool.schematic_id == published(canonical)["id"]
    assert Schematic.from_yaml(pool.canonical).id == pool.schematic_id


def test_secureboot_well_known_certificates_give_the_published_id() -> None:
    pool = one(
        "hardware: {platform: metal}, "
        "secureboot: {enabled: true, includeWellKnownCertificates: true}"
    )
    canonical = "customization:\n    secureboot:\n        includeWellKnownCertificates: true\n"
    assert pool.canonical == canonical
    assert pool.schematic_id == published(canonical)["id"]


def test_meta_gives_the_published_id() -> None:
    pool = one(
        """hardware: {platform: metal}, meta: [{key: 10, value: '{"externalIPs":["1.2.3.4"]}'}]"""
    )
    vectors = yaml.safe_load(VECTORS.read_text())["vectors"]
    (vector,) = [v for v in vectors if v["source"].endswith(" metaSchematicID")]
    # image-factory's integration test ID for this META value (its key written 0xa there).
    assert pool.schematic_id == vector["id"]


def test_every_field_lands_in_the_factorys_order() -> None:
    pool = one(
        "hardware: {platform: metal, architecture: arm64}, "
        "overlay: {name: rock5b, options: {b: 1, a: x}}, "
        "meta: [{key: 12, value: v}], bootloader: sd-boot, diskImage: {sectorSize: 4096}"
    )
    assert pool.canonical == (
        "overlay:\n    image: siderolabs/sbc-rockchip\n    name: rock5b\n"
        "    options:\n        a: x\n        b: 1\n"
        "customization:\n    meta:\n        - key: 12\n          value: v\n"
        "    bootloader: sd-boot\n    diskImage:\n        sectorSize: 4096\n"
    )
    assert Schematic.from_yaml(pool.canonical).id == pool.schematic_id
    assert pool.schematic.overlay.name == "rock5b"


def test_secureboot_alone_keeps_the_schematic_and_changes_the_media() -> None:
    plain = one("profile: metal-intel")
    secure = one("profile: metal-intel, secureboot: {enabled: true}")
    assert secure.schematic_id == plain.schematic_id
    kinds = [(m.kind, m.secureboot) for m in secure.references.media]
    assert kinds == [
        ("disk", True),
        ("iso", True),
        ("uki", True),
        ("pxe", True),
        ("installer", True),
    ]
    assert [(m.kind, m.secureboot) for m in plain.references.media] == [
        ("disk", False),
        ("iso", False),
        ("pxe", False),
        ("installer", False),
    ]


def test_a_pool_overrides_its_profiles_media_keys() -> None:
    pool = one("profile: metal-rpi5, overlay: {name: rpi_5}")
    assert pool.media.overlay is not None and pool.media.overlay.name == "rpi_5"
    assert "name: rpi_5" in pool.canonical


# --- URLs the factory reads ----------------------------------------------------------------------


def _check_media(pool: PoolPlan) -> None:
    for medium in pool.references.media:
        if medium.kind == "installer":
            repository, tag = medium.url.rsplit("/", 1)
            _platform, secure = parse_installer_name(repository.rsplit("/", 1)[1])
            assert secure is medium.secureboot
            assert tag == f"{pool.schematic_id}:{pool.talos.version}"
            continue
        base = PXE_FACTORY_URL if medium.kind == "pxe" else "https://factory.talos.dev"
        _route, schematic_id, version, parsed = parse_factory_url(medium.url, base)
        assert (schematic_id, version) == (medium.schematic_id, pool.talos.version)
        assert parsed.secureboot is medium.secureboot
        assert parsed.arch == pool.profile.architecture
        assert parsed.board == ""


@pytest.mark.parametrize(
    "spec",
    [
        "profile: metal-intel, secureboot: {enabled: true}",
        "profile: metal-rpi5",
        "profile: metal-rock5b",
        "profile: metal-jetson-orin-nano",
        "profile: metal-amd",
        "profile: kubevirt-cpu",
        "hardware: {platform: proxmox}, secureboot: {enabled: true}",
        "hardware: {platform: equinixMetal}",
    ],
)
def test_every_pool_medium_parses_as_the_factory_reads_it(spec: str) -> None:
    _check_media(one(spec))


def test_board_pools_boot_a_raw_xz_disk_image_only() -> None:
    urls = pool_urls(one("profile: metal-rock5b"))
    assert set(urls) == {"pool", "schematicID", "image", "installer"}
    assert urls["image"].endswith("/metal-arm64.raw.xz")


# --- boot schematics -----------------------------------------------------------------------------


def test_a_boot_schematic_adds_to_the_installers() -> None:
    pool = one("profile: metal-intel, boot: {schematic: {kernelArgs: [talos.config=http://c/x]}}")
    assert pool.boot_schematic_id is not None and pool.boot_canonical is not None
    assert pool.boot_schematic_id != pool.schematic_id
    assert "talos.config=http://c/x" in pool.boot_canonical
    assert "talos.config" not in pool.canonical
    media = {m.kind: m for m in pool.references.media}
    assert media["iso"].schematic_id == media["pxe"].schematic_id == pool.boot_schematic_id
    assert media["installer"].schematic_id == pool.schematic_id
    assert Schematic.from_yaml(pool.boot_canonical).id == pool.boot_schematic_id
    _check_media(pool)


def test_a_boot_schematic_equal_to_the_installers_is_none() -> None:
    pool = one("profile: metal-intel, boot: {schematic: {extensions: [siderolabs/intel-ucode]}}")
    assert pool.boot_schematic_id is None


# --- refusals ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "talos", "expected"),
    [
        (
            "profile: kubevirt-cpu, secureboot: {enabled: true}",
            "version: v1.13.9",
            'c.yaml:4: pool "p": secureboot.enabled: platform kubevirt boots the openstack image',
        ),
        (
            "profile: metal-rpi5, overlay: {name: rpi_gen}",
            "version: v1.13.9",
            "c.yaml:4: pool \"p\": overlay.name: 'rpi_gen' is not an official overlay of Talos "
            "v1.13.9: not an official overlay of any known release; did you mean rpi_generic",
        ),
        (
            "profile: metal-rock5b",
            "version: v1.8.4",
            "c.yaml:4: pool \"p\": overlay.name: 'rock5b' is not an official overlay of Talos "
            "v1.8.4: offered by Talos v1.9.2 … v1.14.0",
        ),
        (
            "profile: metal-intel, secureboot: {enabled: true, enrollKeys: force}",
            "version: v1.13.9, imageFactoryURL: 'https://f.internal', imageFactoryVersion: v1.3.2",
            'c.yaml:4: pool "p": secureboot.enrollKeys: image-factory v1.3.2 refuses this key '
            "(it arrived in image-factory v1.4.0)",
        ),
        (
            "profile: metal-amd, overlay: {name: rpi_generic}",
            "version: v1.13.9",
            'c.yaml:4: pool "p": overlay: board overlays are for arm64 single-board computers',
        ),
        (
            "profile: metal-intel, secureboot: {enabled: true}",
            "version: v1.13.9, installerRepository: reg.internal/talos",
            'c.yaml:4: pool "p": secureboot.enabled: installerRepository',
        ),
        (
            "profile: kubevirt-cpu, boot: {schematic: {kernelArgs: [x]}}",
            "version: v1.13.9",
            'c.yaml:4: pool "p": boot.schematic: a KubeVirt pool boots and upgrades from one',
        ),
        (
            "profile: metal-jetson-orin-nano, "
            "extensions: [siderolabs/nvidia-container-toolkit-lts]",
            "version: v1.13.9",
            'c.yaml:4: pool "p": extensions: siderolabs/nvidia-container-toolkit-lts are the '
            "desktop and data-centre NVIDIA drivers",
        ),
    ],
)
def test_refusals_name_the_pool_and_the_key(spec: str, talos: str, expected: str) -> None:
    with pytest.raises(ClusterFileError) as err:
        one(spec, talos)
    assert str(err.value).startswith(expected), str(err.value)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("meta: [{key: 300, value: x}]", "meta[0].key: 300 is outside 0..255"),
        ("meta: [{key: -1}]", "meta[0].key: -1 is outside 0..255"),
        ("meta: [{key: '10'}]", "meta[0].key: must be a whole number, not the text '10'"),
        # The factory would read a missing key as 0; the cluster file says which key it means.
        ("meta: [{value: x}]", "meta[0].key: missing; add it, e.g. key: 10"),
        ("boot: {schematic: {meta: [{value: x}]}}", "boot.schematic.meta[0].key: missing"),
        ("bootloader: auto", "bootloader: 'auto' is not one the factory accepts"),
        ("diskImage: {sectorSize: 1000}", "diskImage.sectorSize: 1000 is not a power of two"),
        ("secureboot: {enabled: true, enrollKeys: always}", "enrollKeys: 'always' is not"),
        ("secureboot: {enable: true}", "secureboot.enable: unknown key; did you mean enabled?"),
        ("secureboot: {enabled: yes}", "secureboot.enabled: write true or false, not the text"),
    ],
)
def test_bad_values_are_refused_with_their_key(spec: str, expected: str) -> None:
    with pytest.raises(TalosSchematicError) as err:
        one(f"profile: metal-intel, {spec}")
    message = str(err.value)
    assert message.startswith('c.yaml:4: pool "p": '), message
    assert expected in message


def test_a_profile_with_a_bad_meta_key_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "board.yaml"
    path.write_text("name: board\nplatform: metal\nmeta: [{key: 300}]\n")
    with pytest.raises(ProfileError, match=r"board.yaml:3: meta\[0\].key: 300 is outside 0..255"):
        load_profile(str(path))


def test_the_jetson_gpu_is_refused_with_a_reason() -> None:
    result = run("gpu", "Jetson Orin Nano", "--talos", "v1.13.9")
    assert result.exit_code == 1
    assert "integrated in the SoC" in result.output
    assert "discrete PCI GPUs" in result.output


# --- the must-show cluster file ------------------------------------------------------------------

# The shipped example is the must-show cluster file.
EDGE = (ROOT / "examples" / "boot-media.yaml").read_text()


def test_generate_ids_urls_and_patches_agree(tmp_path: Path) -> None:
    cluster = tmp_path / "edge.yaml"
    cluster.write_text(EDGE)
    out = tmp_path / "out"
    result = run("generate", str(cluster), "--out", str(out), "--chart", "osimage")
    assert result.exit_code == 0, result.output
    index = yaml.safe_load((out / "index.yaml").read_text())
    entries = {entry["name"]: entry for entry in index["pools"]}
    assert entries["secure"]["secureboot"] is True
    assert entries["rpi"]["overlay"] == "rpi_generic"
    assert "bootSchematicID" in entries["pxe"]
    for name, entry in entries.items():
        schematic = out / name / "schematic.yaml"
        ided = run("id", str(schematic))
        assert ided.exit_code == 0
        assert ided.stdout == f"{entry['schematicID']}  {schematic}\n"
        urls = yaml.safe_load((out / name / "urls.yaml").read_text())
        assert urls["schematicID"] == entry["schematicID"]
        patch = yaml.safe_load((out / name / "machine-config-patch.yaml").read_text())
        assert patch["machine"]["install"]["image"] == urls.get(
            "installerSecureBoot", urls.get("installer")
        )
        _check_listing(urls, entry.get("bootSchematicID", entry["schematicID"]))
    secure = yaml.safe_load((out / "secure" / "urls.yaml").read_text())
    assert secure["installerSecureBoot"].startswith("factory.talos.dev/installer-secureboot/")
    assert "installer" not in secure
    pxe = yaml.safe_load((out / "pxe" / "urls.yaml").read_text())
    assert pxe["ipxe"] == f"chain --autofree {pxe['pxe']}"
    assert f"/pxe/{pxe['bootSchematicID']}/" in pxe["pxe"]
    assert Schematic.from_yaml(pxe["bootSchematic"]).id == pxe["bootSchematicID"]
    summary = json.loads(run("generate", str(cluster), "-f", "json").stdout)
    by_name = {pool["name"]: pool for pool in summary["pools"]}
    assert by_name["secure"]["media"]["uki"].endswith("-secureboot-uki.efi")
    assert by_name["rpi"]["overlay"] == "rpi_generic"


def _check_listing(urls: dict[str, str], boot_id: str) -> None:
    """Every URL a written urls.yaml lists is one the factory's path parser and registry read."""
    secure = "installerSecureBoot" in urls
    for key, url in urls.items():
        if key in {"pool", "schematicID", "bootSchematicID", "bootSchematic"}:
            continue
        if key.startswith("installer"):
            repository, tag = url.rsplit("/", 1)
            assert parse_installer_name(repository.rsplit("/", 1)[1])[1] is secure
            assert tag.split(":")[0] == urls["schematicID"]
            continue
        if key == "ipxe":
            assert url.startswith("chain --autofree ")
            url = url.removeprefix("chain --autofree ")
        base = (
            PXE_FACTORY_URL
            if key in {"pxe", "pxeSecureBoot", "ipxe"}
            else ("https://factory.talos.dev")
        )
        _route, schematic_id, version, parsed = parse_factory_url(url, base)
        assert (schematic_id, version) == (boot_id, "v1.13.9"), key
        assert parsed.secureboot is secure, key


def test_the_must_show_cluster_file_reads_its_media_keys() -> None:
    text = EDGE + "    meta: [{key: 10, value: x}]\n    diskImage: {sectorSize: 4096}\n"
    last = parse_cluster(text, "edge.yaml").pools[-1]
    assert last.media.meta == (MetaValue(key=10, value="x"),)
    assert last.media.sector_size == 4096


def test_the_must_show_cluster_file_is_valid_for_the_json_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    result = run("schema", "cluster")
    assert result.exit_code == 0
    validator = jsonschema.Draft202012Validator(json.loads(result.stdout))
    document = yaml.safe_load(EDGE)
    assert [error.message for error in validator.iter_errors(document)] == []
    for pool in (
        {"name": "x", "profile": "metal-intel", "secureboot": {"enable": True}},
        {"name": "x", "profile": "metal-rpi5", "overlay": {"nam": "rpi_5"}},
        {"name": "x", "profile": "metal-intel", "meta": [{"key": 300, "value": "v"}]},
        {"name": "x", "profile": "metal-intel", "secureboot": {"enrollKeys": "always"}},
        {"name": "x", "profile": "metal-intel", "boot": {"schematic": {"kernelArg": []}}},
    ):
        assert not validator.is_valid({**document, "pools": [pool]}), pool


@pytest.mark.skipif(not TALOS_SCHEMAS.is_dir(), reason=f"no Talos schemas at {TALOS_SCHEMAS}")
def test_the_secureboot_patch_validates_against_the_talos_schema(tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((TALOS_SCHEMAS / "config.schema.v1.13.9.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    cluster = tmp_path / "edge.yaml"
    cluster.write_text(EDGE)
    out = tmp_path / "out"
    result = run("generate", str(cluster), "-f", "machine-config", "--out", str(out))
    assert result.exit_code == 0
    documents = [
        d
        for path in sorted(out.glob("*/machine-config-patch.yaml"))
        for d in yaml.safe_load_all(path.read_text())
        if d
    ]
    assert len(documents) == 3
    for document in documents:
        assert [error.message for error in validator.iter_errors(document)] == []


BAD = {
    "unknown overlay": ("    profile: metal-rpi5\n    overlay: {name: rpi_9}\n", "overlay.name"),
    "enrollKeys on an old factory": (
        "    profile: metal-intel\n    secureboot: {enabled: true, enrollKeys: force}\n",
        "secureboot.enrollKeys",
    ),
    "meta key 300": ("    profile: metal-intel\n    meta: [{key: 300, value: x}]\n", "meta[0].key"),
    "SecureBoot on kubevirt": (
        "    profile: kubevirt-cpu\n    secureboot: {enabled: true}\n",
        "secureboot.enabled",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_message_exit_1_and_nothing_written(case: str, tmp_path: Path) -> None:
    body, key = BAD[case]
    cluster = tmp_path / "bad.yaml"
    cluster.write_text(
        "cluster: edge\ntalos: {version: v1.13.9, imageFactoryURL: 'https://f.internal', "
        "imageFactoryVersion: v1.3.2}\npools:\n  - name: ok\n    profile: metal-intel\n"
        f"  - name: bad\n{body}"
    )
    out = tmp_path / "out"
    result = run("generate", str(cluster), "--out", str(out))
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert f'pool "bad": {key}' in lines[0]
    assert "Traceback" not in result.output
    assert not out.exists()


def test_talos_1_14_secureboot_pools_install_from_the_metal_installer_secureboot() -> None:
    pool = one("profile: metal-intel, secureboot: {enabled: true}", "version: v1.14.0")
    installer = pool_urls(pool)["installerSecureBoot"]
    assert installer == f"factory.talos.dev/metal-installer-secureboot/{pool.schematic_id}:v1.14.0"
    assert parse_installer_name("metal-installer-secureboot") == ("metal", True)
