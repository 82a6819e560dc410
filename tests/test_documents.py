"""The fast readers of profiles and cluster files agree with the pydantic models.

`generate` reads files of the usual shape without pydantic (:mod:`schematic.inputs.documents`
holds the models); these tests check, on inputs generated around valid files, that both ways
accept the same files with the same values and refuse the others with the same message, and
that the shipped files really take the fast way.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schematic.errors import TalosSchematicError
from schematic.inputs import cluster_file, cluster_values, profiles
from schematic.inputs.cluster_file import cluster_from_mapping, parse_cluster
from schematic.inputs.documents import validate_cluster, validate_profile
from schematic.inputs.plain import UnusualShapeError
from schematic.inputs.profiles import profile_from_mapping

REPO = Path(__file__).resolve().parents[1]

# Values a key may be given instead of its own: each is valid somewhere and wrong elsewhere.
ODD_VALUES = st.sampled_from(
    [
        None,
        True,
        False,
        0,
        1,
        2,
        -1,
        1.0,
        2.5,
        "",
        " ",
        "2",
        "+2",
        " 2",
        "x",
        "auto",
        "open",
        "lts",
        "Ampere",
        "blackwell",
        "kubevirt",
        "metal",
        "arm64",
        "amd",
        "arm",
        "10de:2330",
        "2330",
        "10DE:26B9",
        "0x26b9",
        "10de:22a3",
        "10de:ffff",
        "8086:1234",
        "v1.13.9",
        "1.12.0",
        "v1.14.0-alpha.1",
        "https://f.example/",
        "ftp://f.example",
        "gpu",
        "GPU",
        2330,
        [],
        ["a"],
        [""],
        [" a "],
        ["siderolabs/drbd"],
        [1],
        {},
        {"a": 1},
        {1: "a"},
        ("a",),
    ]
)

GPU = st.fixed_dictionaries(
    {"id": st.sampled_from(["10de:2330", "2bb5", "10de:26b9", "1002:74a1", "10de:1234"])},
    optional={
        "count": st.sampled_from([1, 2, 8, "2"]),
        "architecture": st.sampled_from(["Hopper", "ada", "Blackwell", "Kepler2"]),
    },
)
# The boot-media keys a profile and a pool share.
MEDIA = {
    "secureboot": st.fixed_dictionaries(
        {},
        optional={
            "enabled": st.booleans(),
            "includeWellKnownCertificates": st.booleans(),
            "enrollKeys": st.sampled_from(["force", "if-safe", "sometimes"]),
        },
    ),
    "overlay": st.fixed_dictionaries(
        {"name": st.sampled_from(["rpi_generic", "rock5b", "nope"])},
        optional={
            "image": st.sampled_from(["siderolabs/sbc-raspberrypi"]),
            "options": st.sampled_from([{}, {"configTxtAppend": "x"}]),
        },
    ),
    "meta": st.lists(
        st.fixed_dictionaries(
            {"key": st.sampled_from([0, 10, 255, 256, -1, "10", "0xa"])},
            optional={"value": st.sampled_from(["", "{}"])},
        ),
        max_size=2,
    ),
    "bootloader": st.sampled_from(["sd-boot", "grub", "dual-boot", "GRUB", "none", "auto"]),
    "diskImage": st.fixed_dictionaries({"sectorSize": st.sampled_from([512, 4096, 3, "4096"])}),
}
PROFILE = st.fixed_dictionaries(
    {
        "name": st.sampled_from(["gpu", "node-1", "a.b_c"]),
        "platform": st.sampled_from(["kubevirt", "metal", "proxmox", "aws"]),
    },
    optional={
        "aliases": st.lists(st.sampled_from(["x", "y-z"]), max_size=2),
        "description": st.sampled_from(["", "a machine"]),
        "architecture": st.sampled_from(["amd64", "arm64"]),
        "cpuVendor": st.sampled_from(["intel", "amd", "arm", None]),
        "gpus": st.lists(GPU, max_size=2),
        "nvswitch": st.booleans(),
        "nvidia": st.fixed_dictionaries(
            {},
            optional={
                "gdrdrv": st.sampled_from([True, False, None]),
                "gds": st.sampled_from([True, False, None]),
                "peermem": st.sampled_from([True, False, None]),
            },
        ),
        "extensions": st.lists(st.sampled_from(["siderolabs/drbd", "siderolabs/zfs"]), max_size=2),
        "kernelArgs": st.lists(st.sampled_from(["console=ttyS0", "quiet"]), max_size=2),
        **MEDIA,
    },
)
NVIDIA = st.fixed_dictionaries(
    {},
    optional={
        "flavour": st.sampled_from(["auto", "open", "proprietary", None]),
        "tier": st.sampled_from(["auto", "lts", "production", None]),
        "gdrdrv": st.sampled_from([True, False, None]),
        "gds": st.sampled_from([True, False, None]),
        "peermem": st.sampled_from([True, False, None]),
    },
)
HARDWARE = PROFILE.map(lambda profile: {k: v for k, v in profile.items() if k != "name"})
POOL_SOURCE = st.one_of(
    st.fixed_dictionaries(
        {"profile": st.sampled_from(["kubevirt-l40s", "kubevirt-cpu", "./mine.yaml"])}
    ),
    st.fixed_dictionaries({"hardware": HARDWARE}),
)
POOL_EXTRAS = st.fixed_dictionaries(
    {},
    optional={
        "extensions": st.lists(st.sampled_from(["siderolabs/iscsi-tools", " drbd "]), max_size=2),
        "kernelArgs": st.lists(st.sampled_from(["console=ttyS0"]), max_size=1),
        "kernelModules": st.lists(
            st.fixed_dictionaries(
                {"name": st.sampled_from(["nvidia", "drbd"])},
                optional={"parameters": st.lists(st.sampled_from(["a=1"]), max_size=1)},
            ),
            max_size=2,
        ),
        "nvidia": NVIDIA,
        "minReplicas": st.integers(0, 3),
        "instanceType": st.just("u1.large"),
        "resources": st.just({"cpu": 8, "memory": "64Gi"}),
        "talos": st.sampled_from([{"registryMirrors": {}}, {"version": "v1.12.0"}]),
        **MEDIA,
        "boot": st.fixed_dictionaries(
            {
                "schematic": st.fixed_dictionaries(
                    {},
                    optional={
                        "kernelArgs": st.lists(st.sampled_from(["talos.config=x", ""]), max_size=1),
                        "extensions": st.lists(st.just("siderolabs/iscsi-tools"), max_size=1),
                        "meta": st.lists(st.fixed_dictionaries({"key": st.just(12)}), max_size=1),
                    },
                )
            }
        ),
    },
)
POOL = st.builds(
    lambda name, source, extras: {"name": name, **source, **extras},
    st.sampled_from(["gpu", "cpu", "p-1"]),
    POOL_SOURCE,
    POOL_EXTRAS,
)
TALOS = st.fixed_dictionaries(
    {"version": st.sampled_from(["v1.13.9", "1.12.4", "v1.9.0", "v1.14.0"])},
    optional={
        "imageFactoryURL": st.sampled_from(["https://f.example/", "http://f.example"]),
        "installerRepository": st.sampled_from(["r.example/installer/", "factory.talos.dev/i"]),
        "registryMirrors": st.sampled_from([None, {"docker.io": {"endpoints": ["https://m"]}}]),
        "imageFactoryVersion": st.sampled_from(["v1.3.2", "v1.5.0", "1.4", "latest"]),
    },
)
CLUSTER = st.fixed_dictionaries(
    {
        "cluster": st.sampled_from(["demo", "c-1"]),
        "talos": TALOS,
        "pools": st.lists(POOL, min_size=1, max_size=3),
    },
    optional={"namespace": st.sampled_from(["tenant-a", None]), "nvidia": NVIDIA},
)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path into nested mappings and lists, the root included."""
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*path, index))
    return found


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[dict[str, Any]]) -> dict[str, Any]:
    """A valid-looking document with up to three changes: a value replaced, a key removed or
    a key added, anywhere in it."""
    # Copies: the strategies share their sample values, which the changes below would edit.
    document = copy.deepcopy(draw(base))
    for _ in range(draw(st.integers(0, 3))):
        path = draw(st.sampled_from(_paths(document)[1:] or [()]))
        if not path:
            break
        parent: Any = document
        for part in path[:-1]:
            parent = parent[part]
        change = draw(st.sampled_from(["replace", "remove", "add"]))
        if change == "replace":
            parent[path[-1]] = copy.deepcopy(draw(ODD_VALUES))
        elif change == "remove":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.sampled_from(["extra", "cpu_vendor", "minReplica", 1]))] = 1
        else:
            parent.append(copy.deepcopy(draw(ODD_VALUES)))
    return document


def _outcome(read: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "value", read()
    except TalosSchematicError as err:
        return type(err).__name__, str(err)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(PROFILE))
def test_profiles_read_alike_both_ways(document: dict[str, Any]) -> None:
    fast = _outcome(lambda: profile_from_mapping(document, "p.yaml"))
    model = _outcome(lambda: validate_profile(document, "p.yaml"))
    assert fast == model


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(CLUSTER))
def test_cluster_files_read_alike_both_ways(document: dict[str, Any]) -> None:
    fast = _outcome(lambda: cluster_from_mapping(document, "c.yaml"))
    model = _outcome(lambda: validate_cluster(document, "c.yaml"))
    assert fast == model


@settings(max_examples=100, deadline=None)
@given(PROFILE)
def test_a_valid_profile_takes_the_fast_way_unless_its_values_are_wrong(
    document: dict[str, Any],
) -> None:
    # Unmutated documents have the usual shape: the fast reader either reads them or refuses a
    # value (an unknown GPU, arm64 with cpuVendor intel), never their shape.
    try:
        profiles._plain_profile(document)
    except UnusualShapeError:
        pytest.fail(f"the fast reader passed a usual profile to the model: {document}")
    except ValueError:
        pass  # a wrong value; the model words the error


def _plain_shape(path: Path) -> dict[str, Any]:
    data = yaml.load(path.read_text("utf-8"), Loader=profiles._ProfileLoader)
    assert isinstance(data, dict)
    data.setdefault("name", path.stem)
    return data


@pytest.mark.parametrize(
    "path", sorted((REPO / "profiles").glob("*.yaml")), ids=lambda path: path.stem
)
def test_every_shipped_profile_takes_the_fast_way(path: Path) -> None:
    fast = profiles._plain_profile(_plain_shape(path))
    assert fast == validate_profile(_plain_shape(path), path.name)


def test_the_shipped_example_takes_the_fast_way() -> None:
    path = REPO / "examples" / "cluster.yaml"
    text = path.read_text("utf-8")
    data = yaml.safe_load(text)
    fast = cluster_file._plain_cluster(data)
    assert fast == validate_cluster(data, "cluster.yaml") == parse_cluster(text, "cluster.yaml")
    for pool in fast.pools:
        if pool.hardware is not None:
            profiles._plain_profile({"name": pool.name, **pool.hardware})


def test_generating_the_example_defines_no_pydantic_model(tmp_path: Path) -> None:
    program = (
        "import sys\n"
        "from schematic.cli import main\n"
        "sys.argv = ['talos-schematic', 'generate', 'examples/cluster.yaml', "
        f"'--out', {str(tmp_path / 'out')!r}]\n"
        "try:\n    main()\nexcept SystemExit as done:\n    assert not done.code, done.code\n"
        "print(sorted(name for name in ('pydantic.main', 'schematic.inputs.documents', "
        "'schematic.model') if name in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=False, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[]\n"


def test_a_cluster_level_registry_mirror_is_rendered(tmp_path: Path) -> None:
    # Settings holding a mapping must still work as the renderers' cache keys.
    from schematic.cluster import plan_cluster
    from schematic.render.files import render_files

    text = (
        "cluster: demo\ntalos:\n  version: v1.13.9\n"
        "  registryMirrors: {docker.io: {endpoints: [https://mirror.example]}}\n"
        "pools:\n  - {name: gpu, profile: kubevirt-l40s}\n  - {name: cpu, profile: kubevirt-cpu}\n"
    )
    plan = plan_cluster(parse_cluster(text, "c.yaml"), source="c.yaml")
    files = render_files(plan, ["values"], "osimage")
    values = [body for name, body in files.items() if name.endswith("values.yaml")]
    assert len(values) == 2
    assert all(b"- https://mirror.example\n" in body for body in values)


def test_the_fast_readers_know_exactly_the_models_keys() -> None:
    from pydantic import BaseModel

    from schematic.inputs import documents

    def keys(model: type[BaseModel]) -> set[str]:
        return set(documents._model_keys(model))

    assert keys(documents.ProfileDocument) == profiles._PROFILE_KEYS
    assert keys(documents.GpuDocument) == profiles._GPU_KEYS
    assert keys(documents.ClusterDocument) == cluster_file._CLUSTER_KEYS
    assert keys(documents.TalosDocument) == cluster_file._TALOS_KEYS
    assert keys(documents.NvidiaDocument) == cluster_file._NVIDIA_KEYS
    assert keys(documents.AddonsDocument) == cluster_file._ADDONS_KEYS
    assert keys(documents.HamiDocument) == cluster_file._HAMI_KEYS
    assert keys(documents.KernelModuleDocument) == cluster_file._MODULE_KEYS
    assert set(cluster_values.TOOL_KEYS) == keys(documents.PoolDocument)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(CLUSTER))
def test_generated_cluster_files_render_or_fail_with_a_user_error(
    document: dict[str, Any],
) -> None:
    # Whatever the file says, planning and every output kind and layout either work or raise
    # the error the CLI prints; never another exception (a traceback for the user).
    from schematic.cluster import plan_cluster
    from schematic.render.files import INDEX, KINDS, POOL_FILES, render_files, render_stream

    text = yaml.safe_dump(document)
    try:
        plan = plan_cluster(parse_cluster(text, "c.yaml"), source="c.yaml", base_dir=REPO)
    except TalosSchematicError:
        return
    for layout in ("osimage", "schematicid", "talos"):
        files = render_files(plan, KINDS, layout)
        # The GPU path's files are not in every pool's directory: the index lists them.
        gpu_files = yaml.safe_load(files[INDEX]).get("gpuFiles", [])
        assert set(gpu_files) <= set(files)
        # Besides: summary.json, index.yaml, kustomization.yaml.
        assert len(files) == 3 + len(plan.pools) * len(POOL_FILES) + len(gpu_files)
        for kind in KINDS:
            assert render_stream(plan, kind, layout)
