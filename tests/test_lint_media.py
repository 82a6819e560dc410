"""lint on boot media: TS132 (SecureBoot pair), TS133 (boot schematic), TS134 (overlay), TS135."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from schematic.cli import app, register_all_commands
from schematic.core.model import Schematic
from schematic.doctor.lint import lint_paths
from schematic.doctor.lint.findings import RULES, Finding

register_all_commands()
runner = CliRunner()
COZY = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
RPI = "ee21ef4a5ef808a9b7484cc0dda0f25075021691c8c09a276591eedb638ea1f9"
RPI_BODY = (
    "overlay:\n    image: siderolabs/sbc-raspberrypi\n    name: rpi_generic\ncustomization: {}\n"
)


def lint(tmp_path: Path, files: dict[str, str]) -> list[Finding]:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return list(lint_paths([str(tmp_path)]).findings)


def kmt(url: str) -> str:
    return f"""\
apiVersion: infrastructure.cluster.x-k8s.io/v1alpha1
kind: KubevirtMachineTemplate
metadata:
  name: kubernetes-prod-md0-0a1b2c
spec:
  template:
    spec:
      virtualMachineTemplate:
        spec:
          dataVolumeTemplates:
          - spec:
              source:
                http:
                  url: {url}
"""


def tct(image: str) -> str:
    return f"""\
apiVersion: bootstrap.cluster.x-k8s.io/v1alpha3
kind: TalosConfigTemplate
metadata:
  name: kubernetes-prod-md0
spec:
  template:
    spec:
      generateType: none
      talosVersion: "v1.13.6"
      data: |
        version: v1alpha1
        machine:
          type: worker
          install:
            image: {image}
"""


def test_every_new_rule_is_explained() -> None:
    for code in ("TS132", "TS133", "TS134", "TS135"):
        result = runner.invoke(app, ["explain", code])
        assert result.exit_code == 0
        assert RULES[code].title in result.output


def test_ts132_secureboot_installer_with_a_plain_boot_disk(tmp_path: Path) -> None:
    url = f"https://factory.talos.dev/image/{COZY}/v1.13.6/openstack-amd64.raw.xz"
    found = lint(
        tmp_path,
        {
            "kmt.yaml": kmt(url),
            "tct.yaml": tct(f"factory.talos.dev/installer-secureboot/{COZY}:v1.13.6"),
        },
    )
    hits = [f for f in found if f.code == "TS132"]
    assert len(hits) == 1
    assert "non-SecureBoot medium" in hits[0].message
    assert hits[0].file.endswith("tct.yaml")


def test_ts132_passes_when_both_are_secureboot_or_neither(tmp_path: Path) -> None:
    plain = f"https://factory.talos.dev/image/{COZY}/v1.13.6/metal-amd64.raw.zst"
    secure = f"https://factory.talos.dev/image/{COZY}/v1.13.6/metal-amd64-secureboot.raw.zst"
    for url, image in (
        (plain, f"factory.talos.dev/installer/{COZY}:v1.13.6"),
        (secure, f"factory.talos.dev/metal-installer-secureboot/{COZY}:v1.13.6"),
    ):
        found = lint(tmp_path, {"kmt.yaml": kmt(url), "tct.yaml": tct(image)})
        assert "TS132" not in {f.code for f in found}


def test_ts134_overlay_schematic_booted_as_a_vm(tmp_path: Path) -> None:
    url = f"https://factory.talos.dev/image/{RPI}/v1.13.6/openstack-amd64.raw.xz"
    found = lint(tmp_path, {"kmt.yaml": kmt(url), "rpi.schematic.yaml": RPI_BODY})
    hit = next(f for f in found if f.code == "TS134")
    assert "rpi_generic" in hit.message and "openstack-amd64" in hit.message


def test_ts134_passes_on_metal_arm64(tmp_path: Path) -> None:
    url = f"https://factory.talos.dev/image/{RPI}/v1.13.6/metal-arm64.raw.xz"
    found = lint(tmp_path, {"kmt.yaml": kmt(url), "rpi.schematic.yaml": RPI_BODY})
    assert "TS134" not in {f.code for f in found}


def test_ts135_meta_key_above_255(tmp_path: Path) -> None:
    body = "customization:\n  meta:\n    - key: 300\n      value: x\n"
    found = lint(tmp_path, {"s.schematic.yaml": body})
    hit = next(f for f in found if f.code == "TS135")
    assert hit.line == 3
    assert "TS004" not in {f.code for f in found}


def test_ts133_and_ts132_in_this_tools_urls(tmp_path: Path) -> None:
    boot = Schematic.from_extensions([], ["talos.config=x"]).id
    urls = (
        f"pool: pxe\nschematicID: {COZY}\nbootSchematicID: {boot}\n"
        f"pxe: https://pxe.factory.talos.dev/pxe/{boot}/v1.13.6/metal-amd64\n"
        f"installerSecureBoot: factory.talos.dev/installer-secureboot/{COZY}:v1.13.6\n"
    )
    found = lint(tmp_path, {"urls.yaml": urls})
    by_code = {f.code: f for f in found}
    assert by_code["TS133"].severity == "warning" and by_code["TS133"].line == 3
    assert "first upgrade" in by_code["TS133"].message
    assert "pxe is not a SecureBoot medium" in by_code["TS132"].message


def test_generated_secureboot_and_board_output_is_clean(tmp_path: Path) -> None:
    cluster = tmp_path / "c.yaml"
    cluster.write_text(
        "cluster: edge\ntalos: {version: v1.13.9}\ncozystack: {version: osimage}\npools:\n"
        "  - {name: secure, profile: metal-intel, secureboot: {enabled: true}}\n"
        "  - {name: pi, profile: metal-rpi5}\n"
    )
    out = tmp_path / "out"
    assert runner.invoke(app, ["generate", str(cluster), "--out", str(out)]).exit_code == 0
    found = list(lint_paths([str(out)]).findings)
    assert not {f.code for f in found} & {"TS132", "TS133", "TS134", "TS135"}, found
