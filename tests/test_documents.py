"""One reader per input kind, one YAML typing rule, and the JSON Schemas held to the readers.

Profiles, a pool's inline ``hardware`` and cluster files are read by one reader each, typed by
one rule: the same value gets the same answer wherever it is written. The pydantic models serve
only the JSON Schemas (`talos-schematic schema`); these tests hold them to the readers: the same
keys at every level, and every file a reader accepts is valid for its schema. The properties
are derandomised: the same examples on every run.
"""

from __future__ import annotations

import copy
import functools
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schematic.errors import ClusterFileError, ProfileError, TalosSchematicError
from schematic.inputs.cluster_file import cluster_json_schema, parse_cluster
from schematic.inputs.profiles import parse_profile, profile_json_schema

jsonschema = pytest.importorskip("jsonschema")

REPO = Path(__file__).resolve().parents[1]
DERANDOMISED = settings(
    max_examples=300,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# Whether accepted files are valid for the schema needs fewer: the schema's patterns and bounds
# are the readers' own constants, and what the readers refuse is listed below, one by one.
SCHEMA_SAMPLE = settings(DERANDOMISED, max_examples=60)

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
        "10de:2330",
        "2330",
        "0x26b9",
        "10de:22a3",
        "10de:ffff",
        "8086:1234",
        "v1.13.9",
        "v1.14.0-alpha.1",
        "https://f.example/",
        "ftp://f.example",
        "gpu",
        2330,
        [],
        ["a"],
        [""],
        ["siderolabs/drbd"],
        [1],
        {},
        {"a": 1},
        {1: "a"},
    ]
)

GPU = st.fixed_dictionaries(
    {"id": st.sampled_from(["10de:2330", "2bb5", "10de:26b9", "1002:74a1", "10de:1234"])},
    optional={
        "count": st.sampled_from([1, 2, 8]),
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
        {"name": st.sampled_from(["rpi_generic", "rock5b"])},
        optional={
            "image": st.sampled_from(["siderolabs/sbc-raspberrypi"]),
            "options": st.sampled_from([{}, {"configTxtAppend": "x"}]),
        },
    ),
    "meta": st.lists(
        st.fixed_dictionaries(
            {"key": st.sampled_from([0, 10, 255, 256, -1, "10"])},
            optional={"value": st.sampled_from(["", "{}"])},
        ),
        max_size=2,
    ),
    "bootloader": st.sampled_from(["sd-boot", "grub", "dual-boot", "GRUB", "none"]),
    "diskImage": st.fixed_dictionaries({"sectorSize": st.sampled_from([512, 4096, 3])}),
}
HARDWARE = st.fixed_dictionaries(
    {"platform": st.sampled_from(["kubevirt", "metal", "proxmox", "aws"])},
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
POOL_SOURCE = st.one_of(
    st.fixed_dictionaries({"profile": st.sampled_from(["kubevirt-l40s", "kubevirt-cpu"])}),
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
        "installerRepository": st.sampled_from(["r.example/installer/", "factory.talos.dev/i", ""]),
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


def _dump(document: object) -> str:
    return yaml.safe_dump(document, sort_keys=False)


CLUSTER_HEAD = "cluster: demo\ntalos:\n  version: v1.13.9\npools:\n  - name: gpu\n    hardware:\n"


def _inline(hardware: dict[str, Any]) -> str:
    """A cluster file whose one pool, gpu, has ``hardware`` inline."""
    body = _dump(hardware) if hardware else "{}\n"
    return CLUSTER_HEAD + "".join(f"      {line}\n" for line in body.splitlines())


def _problems(message: str, prefix: str) -> list[str]:
    """Each problem of an error without its file:line and ``prefix``."""
    problems = []
    for line in message.splitlines():
        problem = re.sub(r"^[^:]+:\d+: ", "", line).removeprefix(prefix)
        problems.append(problem)
    return problems


# --- the decisions, written out -------------------------------------------------------------------


def test_an_empty_installer_repository_is_refused_alone_and_beside_another_error() -> None:
    alone = (
        "cluster: demo\ntalos:\n  version: v1.13.9\n  installerRepository: ''\n"
        "pools:\n  - {name: cpu, profile: kubevirt-cpu}\n"
    )
    refusal = "c.yaml:4: talos.installerRepository: must not be empty"
    with pytest.raises(ClusterFileError) as caught:
        parse_cluster(alone, "c.yaml")
    assert str(caught.value) == refusal
    beside = alone.replace("{name: cpu,", "{name: cpu, minReplica: 1,")
    with pytest.raises(ClusterFileError) as caught:
        parse_cluster(beside, "c.yaml")
    assert str(caught.value).splitlines() == [
        refusal,
        'c.yaml:6: pool "cpu": minReplica: not a pool setting nor a Cozystack kubernetes-nodes '
        "value; did you mean minReplicas?",
    ]
    # Left out, the release's default is used.
    default = parse_cluster(alone.replace("  installerRepository: ''\n", ""), "c.yaml")
    assert default.talos.installer_repository == "factory.talos.dev/installer"


def test_a_gpu_id_written_as_a_number_gets_one_answer_in_a_profile_and_inline() -> None:
    hint = "gpus[0].id: write the PCI ID as quoted text, e.g. '10de:2330'"
    with pytest.raises(ProfileError) as in_profile:
        parse_profile("platform: kubevirt\ngpus: [{id: 2330}]\n", "p.yaml", "p")
    assert str(in_profile.value) == f"p.yaml:2: {hint}"
    with pytest.raises(ClusterFileError) as inline:
        parse_cluster(_inline({"platform": "kubevirt", "gpus": [{"id": 2330}]}), "c.yaml")
    assert str(inline.value) == f'c.yaml:9: pool "gpu": hardware.{hint}'
    quoted = parse_profile("platform: kubevirt\ngpus: [{id: '2330'}]\n", "p.yaml", "p")
    assert quoted.gpus[0].id == "10de:2330"


@pytest.mark.parametrize(
    ("value", "answer"),
    [
        ("on", "must be true or false"),  # YAML 1.1's boolean stays text
        ("2", 2),
        ("'2'", "must be a whole number, not the text '2'"),
        ("!!str 2", "must be a whole number, not the text '2'"),
        ("2.0", "must be a whole number"),
        ("!!int 2", 2),
        ("0x2", "must be a whole number"),
    ],
)
def test_a_value_is_typed_alike_in_a_profile_and_inline(value: str, answer: object) -> None:
    # `count` and `nvswitch` stand for every typed key: one rule for both kinds of file.
    key = "nvswitch" if value == "on" else "count"
    gpu = "{id: '10de:2330', count: " + value + "}" if key == "count" else "{id: '10de:2330'}"
    extra = f"nvswitch: {value}\n" if key == "nvswitch" else ""
    profile_text = f"platform: metal\ngpus: [{gpu}]\n{extra}"
    cluster_text = CLUSTER_HEAD + "".join(f"      {line}\n" for line in profile_text.splitlines())
    profile = _outcome(lambda: parse_profile(profile_text, "p.yaml", "gpu"))
    cluster = _outcome(lambda: parse_cluster(cluster_text, "c.yaml"))
    if isinstance(answer, int):
        assert profile[0] == cluster[0] == "value"
        assert profile[1].gpus[0].count == answer
        assert cluster[1].pools[0].hardware_profile == profile[1]
        return
    expected = "write true or false" if key == "nvswitch" else str(answer)
    assert expected in profile[1] and expected in cluster[1]
    assert _problems(profile[1], "") == _problems(cluster[1], 'pool "gpu": hardware.')


# --- the typing rule everywhere: derandomised properties ------------------------------------------


@DERANDOMISED
@given(mutated(HARDWARE))
def test_inline_hardware_and_a_profile_file_give_one_answer(hardware: dict[str, Any]) -> None:
    in_file = _outcome(lambda: parse_profile(_dump(hardware), "gpu.yaml", "gpu"))
    inline = _outcome(lambda: parse_cluster(_inline(hardware), "c.yaml"))
    if in_file[0] == "value":
        assert inline[0] == "value", inline
        assert inline[1].pools[0].hardware_profile == in_file[1]
    else:
        assert inline[0] == "ClusterFileError", (in_file, inline)
        inline_problems = [
            re.sub(r'^pool "gpu": hardware[.:] ?', "", problem)
            for problem in _problems(inline[1], "")
        ]
        assert inline_problems == _problems(in_file[1], "")


@SCHEMA_SAMPLE
@given(mutated(CLUSTER))
def test_a_cluster_file_read_is_valid_for_its_schema_or_refused_with_lines(
    document: dict[str, Any],
) -> None:
    schema = jsonschema.Draft202012Validator(cluster_json_schema())
    outcome = _outcome(lambda: parse_cluster(_dump(document), "c.yaml"))
    if outcome[0] == "value":
        errors = [error.message for error in schema.iter_errors(document)]
        assert errors == [], (document, errors)
    else:
        assert outcome[0] == "ClusterFileError"
        for line in outcome[1].splitlines():
            assert re.match(r"c\.yaml(:\d+)?: ", line) or line.startswith("… and "), line
            assert not re.search(r"Input should|Field required|instance of|Value error", line)


@SCHEMA_SAMPLE
@given(mutated(HARDWARE))
def test_a_profile_read_is_valid_for_its_schema(hardware: dict[str, Any]) -> None:
    schema = jsonschema.Draft202012Validator(profile_json_schema())
    outcome = _outcome(lambda: parse_profile(_dump(hardware), "p.yaml", "p"))
    if outcome[0] == "value":
        assert [error.message for error in schema.iter_errors(hardware)] == []


# --- what the readers refuse, the schemas refuse (their patterns and bounds are the readers') -----

GOOD_POOL: dict[str, Any] = {"name": "gpu", "profile": "kubevirt-l40s"}
GOOD_CLUSTER: dict[str, Any] = {"cluster": "demo", "talos": {"version": "v1.13.9"}}
GOOD_PROFILE: dict[str, Any] = {"platform": "kubevirt", "gpus": [{"id": "10de:26b9"}]}


def _cluster(**changes: Any) -> dict[str, Any]:
    pool = {**GOOD_POOL, **changes.pop("pool", {})}
    talos = {**GOOD_CLUSTER["talos"], **changes.pop("talos", {})}
    return {**GOOD_CLUSTER, "talos": talos, "pools": [pool], **changes}


@pytest.mark.parametrize(
    "document",
    [
        _cluster(pool={"name": "GPU"}),
        _cluster(pool={"name": "gpu_1"}),
        _cluster(pool={"name": "-gpu"}),
        _cluster(pool={"name": "g" * 64}),
        _cluster(pool={"extensions": [" "]}),
        _cluster(pool={"kernelArgs": [""]}),
        _cluster(pool={"minReplicas": -1}),
        _cluster(pool={"maxReplicas": 2.5}),
        _cluster(pool={"maxReplicas": True}),
        _cluster(cluster="Demo"),
        _cluster(namespace="tenant_a"),
        _cluster(talos={"version": "1.13"}),
        _cluster(talos={"version": "v1.14.0-beta.1"}),
        _cluster(talos={"imageFactoryURL": "ftp://f.example"}),
        _cluster(talos={"imageFactoryURL": "https://u:p@f.example"}),
        _cluster(talos={"imageFactoryURL": "https://f.example/a b"}),
        _cluster(talos={"installerRepository": "my repo/installer"}),
    ],
    ids=lambda document: yaml.safe_dump(document, default_flow_style=True, width=1 << 16)[:80],
)
def test_a_cluster_file_the_reader_refuses_is_invalid_for_the_schema(
    document: dict[str, Any],
) -> None:
    assert _outcome(lambda: parse_cluster(_dump(document), "c.yaml"))[0] == "ClusterFileError"
    schema = jsonschema.Draft202012Validator(cluster_json_schema())
    assert list(schema.iter_errors(document)), document
    # The same file with the one value put right is valid for both.
    assert _outcome(lambda: parse_cluster(_dump(_cluster()), "c.yaml"))[0] == "value"
    assert not list(schema.iter_errors(_cluster()))


@pytest.mark.parametrize(
    "changes",
    [
        {"name": "My Machine"},
        {"gpus": [{"id": "10de:26b"}]},
        {"gpus": [{"id": "vendor:26b9"}]},
        {"gpus": [{"id": "10de:26b9", "count": 0}]},
        {"gpus": [{"id": "10de:26b9", "count": 65}]},
        {"extensions": [""]},
        {"kernelArgs": ["  "]},
    ],
    ids=str,
)
def test_a_profile_the_reader_refuses_is_invalid_for_the_schema(changes: dict[str, Any]) -> None:
    document = {**GOOD_PROFILE, **changes}
    assert _outcome(lambda: parse_profile(_dump(document), "p.yaml", "p"))[0] == "ProfileError"
    schema = jsonschema.Draft202012Validator(profile_json_schema())
    assert list(schema.iter_errors(document)), document
    assert _outcome(lambda: parse_profile(_dump(GOOD_PROFILE), "p.yaml", "p"))[0] == "value"
    assert not list(schema.iter_errors(GOOD_PROFILE))


# --- the schemas' keys are the readers' keys ------------------------------------------------------


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """``node`` with its ``$ref`` or single non-null ``anyOf`` branch followed."""
    while True:
        if "$ref" in node:
            node = schema["$defs"][node["$ref"].rsplit("/", 1)[1]]
        elif "anyOf" in node:
            (node,) = [branch for branch in node["anyOf"] if branch.get("type") != "null"]
        elif node.get("type") == "array" and "items" in node:
            node = node["items"]
        else:
            return node


def _levels(
    schema: dict[str, Any], node: dict[str, Any], path: tuple[Any, ...] = ()
) -> list[tuple[tuple[Any, ...], list[str]]]:
    """Every object in a schema: where it sits (a list's item as index 0) and its keys."""
    node = _resolve(schema, node)
    if "properties" not in node:
        return []
    found = [(path, list(node["properties"]))]
    for key, child in node["properties"].items():
        step = (key, 0) if _is_list(schema, child) else (key,)
        found += _levels(schema, child, (*path, *step))
    return found


def _is_list(schema: dict[str, Any], node: dict[str, Any]) -> bool:
    while "$ref" in node or "anyOf" in node:
        if "$ref" in node:
            node = schema["$defs"][node["$ref"].rsplit("/", 1)[1]]
        else:
            (node,) = [branch for branch in node["anyOf"] if branch.get("type") != "null"]
    return bool(node.get("type") == "array")


def _with(document: Any, path: tuple[Any, ...], key: str) -> Any:
    """``document`` with ``key: null`` added where ``path`` points (made as it goes)."""
    document = copy.deepcopy(document)
    parent = document
    for step, after in zip(path, [*path[1:], None], strict=False):
        if isinstance(step, int):
            while len(parent) <= step:
                parent.append({})
        elif not isinstance(parent.get(step), (dict, list)):
            parent[step] = [] if isinstance(after, int) else {}
        parent = parent[step]
    parent[key] = None
    return document


BASE_CLUSTER = {
    "cluster": "demo",
    "talos": {"version": "v1.13.9"},
    "pools": [{"name": "gpu", "profile": "kubevirt-l40s", "boot": {"schematic": {}}}],
}


@pytest.mark.parametrize(
    ("schema_of", "read", "base"),
    [
        (
            cluster_json_schema,
            lambda text: parse_cluster(text, "c.yaml"),
            BASE_CLUSTER,
        ),
        (
            profile_json_schema,
            lambda text: parse_profile(text, "p.yaml", "p"),
            {"platform": "metal"},
        ),
    ],
    ids=["cluster", "profile"],
)
def test_every_key_of_the_schema_is_read_and_no_other(
    schema_of: Callable[[], dict[str, Any]], read: Callable[[str], Any], base: dict[str, Any]
) -> None:
    schema = schema_of()
    levels = _levels(schema, schema)
    assert len(levels) >= 5
    for path, keys in levels:
        where = ".".join(str(step) for step in path)
        for key in [*keys, "notAKey"]:
            text = _dump(_with(base, path, key))
            outcome = _outcome(functools.partial(read, text))
            unknown = outcome[0] != "value" and (
                re.search(rf"\b{key}: unknown key|{key}: not a pool setting", outcome[1])
            )
            assert bool(unknown) == (key == "notAKey"), (where, key, outcome)


# --- the shipped files and start-up ---------------------------------------------------------------


@pytest.mark.parametrize(
    "path", sorted((REPO / "profiles").glob("*.yaml")), ids=lambda path: path.stem
)
def test_every_shipped_profile_is_valid_for_the_schema(path: Path) -> None:
    schema = jsonschema.Draft202012Validator(profile_json_schema())
    text = path.read_text("utf-8")
    parse_profile(text, path.name, path.stem)
    assert [error.message for error in schema.iter_errors(yaml.safe_load(text))] == []


def test_generating_the_example_defines_no_pydantic_model(tmp_path: Path) -> None:
    program = (
        "import sys\n"
        "from schematic.cli import main\n"
        "sys.argv = ['talos-schematic', 'generate', 'examples/cluster.yaml', "
        f"'--out', {str(tmp_path / 'out')!r}]\n"
        "try:\n    main()\nexcept SystemExit as done:\n    assert not done.code, done.code\n"
        "print(sorted(name for name in ('pydantic.main', 'schematic.inputs.documents', "
        "'schematic.core.model') if name in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=False, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[]\n"


def test_a_cluster_level_registry_mirror_is_rendered(tmp_path: Path) -> None:
    # Settings holding a mapping must still work as the renderers' cache keys.
    from schematic.output.render.files import render_files
    from schematic.plan.cluster import plan_cluster

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


@settings(max_examples=150, derandomize=True, deadline=None)
@given(mutated(CLUSTER))
def test_generated_cluster_files_render_or_fail_with_a_user_error(
    document: dict[str, Any],
) -> None:
    # Whatever the file says, planning and every output kind and layout either work or raise
    # the error the CLI prints; never another exception (a traceback for the user).
    from schematic.output.outdir import parse_index
    from schematic.output.render.files import (
        INDEX,
        KINDS,
        POOL_FILES,
        TENANT_KINDS,
        render_files,
        render_stream,
    )
    from schematic.plan.cluster import plan_cluster

    text = yaml.safe_dump(document)
    try:
        plan = plan_cluster(parse_cluster(text, "c.yaml"), source="c.yaml", base_dir=REPO)
    except TalosSchematicError:
        return
    for layout in ("osimage", "schematicid", "talos"):
        files = render_files(plan, KINDS, layout)
        # The index records every other file, with its digest.
        assert set(parse_index(files[INDEX]).files) == set(files) - {INDEX}
        names = set(POOL_FILES.values())
        per_pool = [name for name in files if name.count("/") == 1 and name.split("/")[1] in names]
        # A bare-metal or board pool gets no Cozystack object, values or HelmRelease; with every
        # kind asked for, a pool's HelmRelease replaces its KubernetesNodes object.
        assert len(per_pool) == sum(
            len(
                [
                    k
                    for k in POOL_FILES
                    if (pool.tenant_pool or k not in TENANT_KINDS) and k != "cozystack"
                ]
            )
            for pool in plan.pools
        )
        assert not any(name.endswith(f"/{POOL_FILES['cozystack']}") for name in per_pool)
        for kind in KINDS:
            assert render_stream(plan, kind, layout)
