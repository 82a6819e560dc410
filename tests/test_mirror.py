"""`generate -f mirror|mirror-script|imager-profile`: everything a disconnected site mirrors."""

from __future__ import annotations

import re
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
import yaml
from typer.testing import CliRunner, Result

from schematic.api import Request, generate
from schematic.cli import app, register_all_commands
from schematic.core.model import Schematic
from schematic.plan.cluster import ClusterPlan

register_all_commands()

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "cluster.yaml"
FACTORY = "https://factory.talos.dev"
TALOS = "v1.13.9"
KINDS = ("mirror", "mirror-script", "imager-profile")

# skopeo's command line, read at containers/skopeo@b71619af4512a2c77dd160576492d4ebbc0b63ea:
# docs/skopeo-copy.1.md (`skopeo copy [options] SOURCE-IMAGE DESTINATION-IMAGE`, the --all and
# --preserve-digests flags), docs/skopeo.1.md (IMAGE NAMES: `docker://docker-reference`), and
# vendor/go.podman.io/image/v5/docker/docker_transport.go (newReference: a reference with both a
# tag and a digest is refused; one with neither too).
SKOPEO_COPY_FLAGS = {"--all", "-a", "--preserve-digests"}
# distribution/reference's grammar (reference/regexp.go), host with an optional port, path
# components, then a tag and/or a digest.
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_LABEL = r"[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?"
_HOST = rf"(?:{_LABEL}(?:\.{_LABEL})*|\$REGISTRY)(?::[0-9]+)?"
DOCKER_REFERENCE = re.compile(
    rf"^(?:{_HOST}/)?{_COMPONENT}(?:/{_COMPONENT})*"
    r"(?P<tag>:[\w][\w.-]{0,127})?(?P<digest>@sha256:[0-9a-f]{64})?$"
)
# The imager profile's keys, read at siderolabs/talos@ad8823176e75b9cd07647ddde13c34f2ab77c663:
# pkg/imager/profile/profile.go (Profile), input.go (Input, ContainerAsset), customization.go,
# output.go and outputkind_enumer.go (the kind and format names).
PROFILE_KEYS = {
    "baseProfileName",
    "arch",
    "platform",
    "secureboot",
    "name",
    "version",
    "customization",
    "input",
    "overlay",
    "output",
}
INPUT_KEYS = {
    "kernel",
    "initramfs",
    "sdStub",
    "sdBoot",
    "baseInstaller",
    "imageCache",
    "overlayInstaller",
    "secureboot",
    "systemExtensions",
}
CONTAINER_ASSET_KEYS = {"imageRef", "forceInsecure", "tarballPath", "ociPath"}
CUSTOMIZATION_KEYS = {"extraKernelArgs", "metaContents", "embeddedMachineConfiguration"}
OUTPUT_KINDS = {"iso", "image", "installer", "kernel", "initramfs", "uki", "cmdline"}
OUT_FORMATS = {"raw", ".tar.gz", ".xz", ".gz", ".zst"}


def _catalogue(plan: ClusterPlan) -> list[dict[str, str]]:
    names = sorted({name for pool in plan.pools for name in pool.extensions})
    return [
        {
            "name": name,
            "ref": f"ghcr.io/{name}:v1.{index}.0-{TALOS}",
            "digest": f"sha256:{format(index, 'x') * 64}",
            "author": "Sidero Labs",
            "description": "",
        }
        for index, name in enumerate(names, start=1)
    ]


@pytest.fixture
def example_plan() -> ClusterPlan:
    plan = generate(Request(EXAMPLE, kinds=("urls",))).plan
    assert plan is not None
    return plan


@pytest.fixture
def factory(example_plan: ClusterPlan) -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=FACTORY, assert_all_mocked=True) as router:
        router.get(f"/version/{TALOS}/extensions/official").mock(
            return_value=httpx.Response(200, json=_catalogue(example_plan))
        )
        yield router


def _run(*args: str, cache: Path) -> Result:
    env = {"TALOS_SCHEMATIC_FACTORY": "", "XDG_CACHE_HOME": str(cache)}
    return CliRunner().invoke(app, list(args), env=env)


@pytest.fixture
def mirrored(factory: respx.MockRouter, tmp_path: Path) -> Path:
    out = tmp_path / "out"
    kinds = [arg for kind in KINDS for arg in ("-f", kind)]
    result = _run(
        "generate", str(EXAMPLE), "--out", str(out), *kinds, "--live-catalogue", cache=tmp_path
    )
    assert result.exit_code == 0, result.output
    return out


def _lock(out: Path) -> dict[str, dict[str, str]]:
    document = yaml.safe_load((out / "extensions.lock.yaml").read_text())
    return {entry["name"]: entry for entry in document["extensions"]}


def test_the_mirror_list_names_every_image_and_medium_with_the_locks_digests(
    mirrored: Path, example_plan: ClusterPlan
) -> None:
    lock = _lock(mirrored)
    for pool in example_plan.pools:
        lines = (mirrored / pool.name / "mirror.txt").read_text().splitlines()
        images = [line.removeprefix("image ") for line in lines if line.startswith("image ")]
        files = [line.removeprefix("file ") for line in lines if line.startswith("file ")]
        assert pool.references.installer in images
        assert f"ghcr.io/siderolabs/imager:{TALOS}" in images
        assert f"ghcr.io/siderolabs/installer-base:{TALOS}" in images
        # Every extension, pinned as the lock file pins it (ref and digest).
        for name in pool.extensions:
            assert f"{lock[name]['ref']}@{lock[name]['digest']}" in images, (pool.name, name)
        assert not any("digest unknown" in line for line in lines)
        # Every boot medium the pool's nodes boot.
        booted = [m.url for m in pool.references.media if m.kind != "installer"]
        assert files == booted and pool.references.boot_image in files
        # Nothing else: each image is the installer, an extension, the imager or the base.
        assert len(images) == 3 + len(pool.extensions)


def _skopeo_problems(line: str) -> list[str]:
    words = line.replace('"$REGISTRY"', "$REGISTRY").split()
    if words[:2] != ["skopeo", "copy"]:
        return ["not skopeo copy"]
    flags = [word for word in words[2:] if word.startswith("-")]
    images = [word for word in words[2:] if not word.startswith("-")]
    problems = [f"flag {flag}" for flag in flags if flag not in SKOPEO_COPY_FLAGS]
    if len(images) != 2:
        return [*problems, f"{len(images)} images"]
    for image in images:
        if not image.startswith("docker://"):
            problems.append(f"transport of {image}")
            continue
        found = DOCKER_REFERENCE.match(image.removeprefix("docker://"))
        if found is None:
            problems.append(f"reference {image}")
        elif bool(found["tag"]) == bool(found["digest"]):
            problems.append(f"tag and digest both or neither: {image}")
    return problems


def test_the_script_copies_each_image_with_skopeos_syntax(
    mirrored: Path, example_plan: ClusterPlan
) -> None:
    lock = _lock(mirrored)
    for pool in example_plan.pools:
        script = mirrored / pool.name / "mirror.sh"
        text = script.read_text()
        assert subprocess.run(["sh", "-n", str(script)], check=False).returncode == 0
        copies = [line for line in text.splitlines() if line.startswith("skopeo ")]
        assert len(copies) == 3 + len(pool.extensions)
        for line in copies:
            assert _skopeo_problems(line) == [], line
        # An extension is copied from its digest to its tag under $REGISTRY.
        for name in pool.extensions:
            repository, _, tag = lock[name]["ref"].rpartition(":")
            path = repository.split("/", 1)[1]
            assert (
                f"docker://{repository}@{lock[name]['digest']} "
                f'docker://"$REGISTRY"/{path}:{tag}' in text
            )


def test_the_skopeo_rules_catch_what_skopeo_refuses() -> None:
    good = (
        "skopeo copy --all docker://ghcr.io/a/b@sha256:" + "a" * 64 + ' docker://"$REGISTRY"/a/b:v1'
    )
    assert _skopeo_problems(good) == []
    for bad in (
        good.replace("@sha256:", ":v1@sha256:"),  # tag and digest
        good.replace("docker://ghcr", "ghcr"),  # no transport
        good.replace("--all", "--everything"),  # no such flag
        "skopeo copy docker://ghcr.io/a/b docker://x/a/b:v1",  # neither tag nor digest
    ):
        assert _skopeo_problems(bad) != [], bad


def _profile_problems(profile: dict[str, Any]) -> list[str]:
    problems = [f"key {key}" for key in set(profile) - PROFILE_KEYS]
    problems += [f"input.{key}" for key in set(profile["input"]) - INPUT_KEYS]
    problems += [
        f"customization.{key}" for key in set(profile.get("customization", {})) - CUSTOMIZATION_KEYS
    ]
    for asset in [profile["input"]["baseInstaller"], *profile["input"]["systemExtensions"]]:
        problems += [f"asset key {key}" for key in set(asset) - CONTAINER_ASSET_KEYS]
    if profile["output"] != {"kind": "installer", "outFormat": "raw"}:
        problems.append("output")
    if (
        profile["output"]["kind"] not in OUTPUT_KINDS
        or profile["output"]["outFormat"] not in OUT_FORMATS
    ):
        problems.append("output names")
    if profile["arch"] not in ("amd64", "arm64") or not profile["platform"]:
        problems.append("arch or platform")  # Profile.Validate
    return problems


def test_the_imager_profile_builds_the_same_schematic_offline(
    mirrored: Path, example_plan: ClusterPlan, tmp_path: Path
) -> None:
    lock = _lock(mirrored)
    by_ref = {f"{entry['ref']}@{entry['digest']}": name for name, entry in lock.items()}
    for pool in example_plan.pools:
        profile = yaml.safe_load((mirrored / pool.name / "imager-profile.yaml").read_text())
        assert _profile_problems(profile) == []
        assert profile["version"] == TALOS and profile["secureboot"] is False
        assert profile["input"]["baseInstaller"] == {
            "imageRef": f"ghcr.io/siderolabs/installer-base:{TALOS}"
        }
        *official, virtual = profile["input"]["systemExtensions"]
        names = [by_ref[asset["imageRef"]] for asset in official]
        args = profile.get("customization", {}).get("extraKernelArgs", [])
        # The extensions (in order) and kernel arguments are the pool's schematic: its ID.
        assert Schematic.from_extensions(names, args).id == pool.schematic_id
        assert virtual == {"tarballPath": f"/out/schematic-{pool.schematic_id}.tar"}


def test_the_virtual_schematic_extension_carries_the_pools_id(
    mirrored: Path, example_plan: ClusterPlan, tmp_path: Path
) -> None:
    pool = example_plan.pools[0]
    text = (mirrored / pool.name / "mirror.sh").read_text()
    build = text[text.index("# The factory's virtual") :]
    work = tmp_path / "work"
    work.mkdir()
    subprocess.run(["sh", "-eu", "-c", build], cwd=work, check=True)
    with tarfile.open(work / "_out" / f"schematic-{pool.schematic_id}.tar") as tar:
        names = tar.getnames()
        manifest_file = tar.extractfile("manifest.yaml")
        assert manifest_file is not None
        manifest = yaml.safe_load(manifest_file.read())
    assert f"rootfs/usr/local/share/schematic/{pool.schematic_id}" in names
    assert manifest["metadata"]["name"] == "schematic"
    assert manifest["metadata"]["version"] == pool.schematic_id
    assert Schematic.from_yaml(manifest["metadata"]["extraInfo"]).id == pool.schematic_id


def test_a_secureboot_pool_mirrors_its_secureboot_installer_and_signs_with_site_keys(
    tmp_path: Path,
) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        "cluster: c\ntalos: {version: v1.14.0}\npools:\n"
        "  - name: secure\n    profile: metal-amd\n    secureboot: {enabled: true}\n"
    )
    listing = generate(Request(cluster, kinds=("mirror",))).text
    assert "image factory.talos.dev/metal-installer-secureboot/" in listing
    assert "metal-amd64-secureboot.iso" in listing and "secureboot-uki.efi" in listing
    profile_text = generate(Request(cluster, kinds=("imager-profile",))).text
    profile = yaml.safe_load(profile_text)
    assert profile["secureboot"] is True and profile["platform"] == "metal"
    assert set(profile["input"]["secureboot"]) == {"secureBootSigner", "pcrSigner"}


def test_without_the_lock_each_digest_is_said_to_be_unknown(tmp_path: Path) -> None:
    listing = generate(Request(EXAMPLE, kinds=("mirror",))).text
    unknown = [line for line in listing.splitlines() if "digest unknown" in line]
    assert unknown and all("--live-catalogue" in line for line in unknown)
    assert "# extension siderolabs/qemu-guest-agent: digest unknown" in listing
    profile = generate(Request(EXAMPLE, kinds=("imager-profile",), pools=("cpu",))).text
    assert "# incomplete: siderolabs/qemu-guest-agent: digest unknown" in profile


def test_check_offline_finds_no_drift_in_a_directory_written_with_the_lock(
    mirrored: Path, tmp_path: Path
) -> None:
    result = _run("check", str(EXAMPLE), "--out", str(mirrored), cache=tmp_path)
    assert result.exit_code == 0, result.output
