"""The Cozystack GPU path beyond the pool: passthrough defaults, addon values, HAMi, smoke tests."""

from __future__ import annotations

import dataclasses
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from schematic.doctor.lint.addons import CDI_DEFAULTS
from schematic.errors import ClusterFileError
from schematic.facts.nvidia import all_gpus
from schematic.inputs.cluster_file import load_cluster, parse_cluster
from schematic.output.render.gpupath import SmokeTests, addons_text, platform_text, smoke_test_text
from schematic.plan.charts import chart_targets
from schematic.plan.cluster import ClusterPlan, hami_notes, plan_cluster
from schematic.plan.gpupath import (
    DEFAULT_RELEASE,
    HamiRequest,
    effective_operator_values,
    management_gpus,
    merge_overwrite,
    merged_operator_values,
    operator_release,
    operator_release_for_chart,
    operator_releases,
    passthrough_defaults,
    platform_values,
    required_device_plugin_env,
    runs_talos_upstream_shape,
    smoke_test_pod,
    talos_device_plugin_env,
    talos_upstream_values,
    tenant_addons,
    upstream_shape_fits,
)

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "cluster.yaml"
SHARED = Path(__file__).resolve().parents[2] / "shared"
APP_SCHEMA = SHARED / "reference" / "cozystack" / "kubernetes.values.schema.v1.6.2.json"


def example_plan() -> ClusterPlan:
    return plan_cluster(load_cluster(EXAMPLE), source=str(EXAMPLE), base_dir=EXAMPLE.parent)


def cdi_plan() -> ClusterPlan:
    """GPU pools on Talos 1.12, which has no /usr/bin/nvidia-ctk: the CDI shape is written."""
    return plan_of("- {name: gpu, profile: kubevirt-l40s}\n", talos="v1.12.4")


def plan_of(pools: str, *, talos: str = "v1.13.9") -> ClusterPlan:
    text = f"cluster: demo\ntalos:\n  version: {talos}\npools:\n" + textwrap.indent(
        textwrap.dedent(pools), "  "
    )
    return plan_cluster(parse_cluster(text, "cluster.yaml"), source="cluster.yaml")


def env_of(values: dict[str, Any], *path: str) -> list[tuple[str, str]]:
    node: Any = values
    for key in path:
        node = node[key]
    return [(item["name"], item["value"]) for item in node]


# --- the management cluster ------------------------------------------------------------------


def test_every_default_resource_name_is_the_device_tables_name() -> None:
    """Recompute each default entry's resource name from the device table: the packaged list
    and the naming rule that writes gpus[] must agree, entry by entry."""
    table = {gpu.id: gpu for gpu in all_gpus()}
    defaults = passthrough_defaults()
    assert len(defaults) == 19
    for entry in defaults:
        gpu = table[entry.pci_vendor_selector.lower()]
        assert gpu.kubevirt_resource_name == entry.resource_name, gpu.label


def test_the_example_lacks_exactly_the_rtx_pro_6000() -> None:
    plan = example_plan()
    gpus = {gpu.gpu_id: gpu for gpu in management_gpus(plan)}
    assert set(gpus) == {"10de:2bb5", "10de:26b9", "10de:1db4"}
    assert [gpu_id for gpu_id, gpu in gpus.items() if not gpu.permitted_by_default] == ["10de:2bb5"]
    assert gpus["10de:2bb5"].pools == ("rtx6000",)
    rtx = next(pool for pool in plan.pools if pool.name == "rtx6000")
    assert platform_values(plan) == {
        "gpu": {
            "permittedHostDevices": {
                "pciHostDevices": [
                    {
                        "pciVendorSelector": "10DE:2BB5",
                        "resourceName": rtx.gpu_resources[0],
                        "externalResourceProvider": True,
                    }
                ]
            }
        }
    }


def test_no_platform_values_when_every_gpu_is_permitted() -> None:
    plan = plan_of("- {name: gpu, profile: kubevirt-l40s}\n- {name: cpu, profile: kubevirt-cpu}\n")
    assert platform_values(plan) is None
    assert platform_text(plan) is None


def test_one_entry_per_gpu_however_many_pools_hold_it() -> None:
    plan = plan_of(
        "- {name: a, profile: kubevirt-b200}\n- {name: b, profile: kubevirt-b200}\n"
        "- {name: c, profile: rtx-pro-6000-blackwell-server}\n"
    )
    missing = [gpu for gpu in management_gpus(plan) if not gpu.permitted_by_default]
    assert [(gpu.gpu_id, gpu.pools) for gpu in missing] == [
        (missing[0].gpu_id, ("a", "b")),
        ("10de:2bb5", ("c",)),
    ]
    values = platform_values(plan)
    assert values is not None
    entries = values["gpu"]["permittedHostDevices"]["pciHostDevices"]
    assert [entry["pciVendorSelector"] for entry in entries] == [
        missing[0].gpu_id.upper(),
        "10DE:2BB5",
    ]


def test_metal_pools_do_not_pass_through_kubevirt() -> None:
    plan = plan_of(
        "- name: metal\n  hardware: {platform: metal, cpuVendor: amd, "
        'gpus: [{id: "10de:2bb5", count: 1}]}\n'
    )
    assert management_gpus(plan) == ()
    assert platform_values(plan) is None


def test_platform_text_says_where_it_goes_and_parses_to_the_values() -> None:
    plan = example_plan()
    text = platform_text(plan)
    assert text is not None
    assert "spec.components.platform.values" in text and "replaceDefaults" in text
    assert "10de:2bb5 (NVIDIA RTX PRO 6000 Blackwell Server Edition): pools rtx6000" in text
    assert yaml.safe_load(text) == platform_values(plan)


# --- the tenant's GPU Operator addon ---------------------------------------------------------


def test_lint_and_generate_share_one_cdi_list() -> None:
    assert talos_device_plugin_env() == CDI_DEFAULTS


def test_release_names_and_versions() -> None:
    assert operator_release().name == DEFAULT_RELEASE == "v1.6"
    assert operator_release("v1.6.2").name == "v1.6"
    assert operator_release("pr3585").name == "pr3585"
    with pytest.raises(ValueError, match=r"known: v1\.6, pr3585"):
        operator_release("v0.9")


def test_every_chart_target_has_an_addon_shape() -> None:
    for target in chart_targets():
        assert operator_release_for_chart(target.name).name in operator_releases()
    assert operator_release_for_chart(None).name == DEFAULT_RELEASE


@pytest.mark.parametrize("release", ["v1.6", "pr3585"])
def test_example_addons_restate_every_default_list(release: str) -> None:
    shape = operator_release(release)
    addons = tenant_addons(cdi_plan(), shape)
    assert addons is not None
    gpu_operator = addons["addons"]["gpuOperator"]
    assert gpu_operator["enabled"] is True
    values = gpu_operator["valuesOverride"]["gpu-operator"]
    assert values["driver"] == {"enabled": False} and values["toolkit"] == {"enabled": False}
    plugin_env = env_of(values, "devicePlugin", "env")
    # The chart's defaults, in their order, with nothing dropped, then what Talos needs.
    defaults = list(shape.default_device_plugin_env)
    assert plugin_env[: len(defaults)] == defaults
    assert plugin_env == list(required_device_plugin_env(shape))
    assert set(CDI_DEFAULTS) <= set(plugin_env)
    validator = dict(env_of(values, "validator", "driver", "env"))
    assert validator["DRIVER_ROOT"] == "/" and validator["NVIDIA_DRIVER_ROOT"] == "/"


def test_pending_release_defaults_are_exactly_the_cdi_list() -> None:
    assert operator_release("pr3585").default_device_plugin_env == CDI_DEFAULTS
    assert operator_release("v1.6").default_device_plugin_env == ()


def test_merge_overwrite_merges_maps_and_replaces_lists_and_scalars() -> None:
    dst = {"a": {"b": 1, "c": [1, 2]}, "d": True, "keep": "x"}
    src = {"a": {"c": [3]}, "d": False, "e": {"f": None}}
    merged = merge_overwrite(dst, src)
    assert merged == {"a": {"b": 1, "c": [3]}, "d": False, "keep": "x", "e": {"f": None}}
    assert dst == {"a": {"b": 1, "c": [1, 2]}, "d": True, "keep": "x"}  # untouched


def test_one_added_variable_drops_the_cdi_defaults_as_the_chart_merges() -> None:
    """The footgun itself: the chart's own test pins that a one-item env replaces the list."""
    shape = operator_release("pr3585")
    override = {"gpu-operator": {"devicePlugin": {"env": [{"name": "X", "value": "1"}]}}}
    merged = merged_operator_values(shape, override)
    assert env_of(merged, "gpu-operator", "devicePlugin", "env") == [("X", "1")]


@pytest.mark.parametrize("release", ["v1.6", "pr3585"])
@pytest.mark.parametrize("hami", [False, True])
def test_generated_override_merged_like_the_chart_keeps_every_cdi_default(
    release: str, hami: bool
) -> None:
    shape = operator_release(release)
    addons = tenant_addons(cdi_plan(), shape, HamiRequest(enabled=hami, force=hami))
    assert addons is not None
    override = addons["addons"]["gpuOperator"]["valuesOverride"]
    merged = merged_operator_values(shape, override, hami=hami)
    plugin = merged["gpu-operator"]["devicePlugin"]
    assert set(CDI_DEFAULTS) <= set(env_of(plugin, "env"))
    for name, value in shape.default_device_plugin_env:
        assert (name, value) in env_of(plugin, "env")
    # Never the operator's device plugin and HAMi's at once.
    assert plugin["enabled"] is (not hami)
    assert merged["gpu-operator"]["driver"]["enabled"] is False
    assert merged["gpu-operator"]["toolkit"]["enabled"] is False


@pytest.mark.parametrize("hami", [False, True])
def test_talos_1_13_on_the_released_chart_gets_talos_own_operator_shape(hami: bool) -> None:
    shape = operator_release("v1.6")
    assert shape.operator == "v26.3.1"
    addons = tenant_addons(example_plan(), shape, HamiRequest(enabled=hami, force=hami))
    assert addons is not None
    override = addons["addons"]["gpuOperator"]["valuesOverride"]
    expected: dict[str, Any] = {
        "driver": {"enabled": False},
        "toolkit": {"enabled": False},
        "hostPaths": {"driverInstallDir": "/usr/local"},
    }
    if hami:
        expected["devicePlugin"] = {"enabled": False}
    assert override == {"gpu-operator": expected}
    runs = effective_operator_values(shape, override, hami=hami)
    assert runs_talos_upstream_shape(runs, shape.operator)
    # What the chart itself renders is kept: the NvLinkDisable ConfigMap it always creates.
    merged = merged_operator_values(shape, override)
    assert merged["kernelModuleConfig"] == {"create": True}
    # No env list to restate: TS140 asks for nothing beyond the chart's own (empty) list.
    assert required_device_plugin_env(shape, runs) == ()


def test_the_upstream_shape_needs_operator_26_3_1_and_talos_1_13() -> None:
    shape = operator_release("v1.6")
    assert upstream_shape_fits(shape, ["v1.13.0", "v1.14.0"])
    assert not upstream_shape_fits(shape, ["v1.13.9", "v1.12.4"])
    older = dataclasses.replace(shape, operator="v25.10.0")
    assert not upstream_shape_fits(older, ["v1.14.0"])
    assert not runs_talos_upstream_shape(talos_upstream_values(), "v25.10.0")
    # A chart with its own CDI lists (PR #3585) keeps them.
    assert not upstream_shape_fits(operator_release("pr3585"), ["v1.14.0"])


def test_released_addon_defaults_keep_the_operator_driver_on() -> None:
    shape = operator_release("v1.6")
    runs = effective_operator_values(shape, {})
    assert runs["driver"]["enabled"] is True and runs["toolkit"]["enabled"] is True
    assert runs["driver"]["kernelModuleConfig"] == {"name": "nvidia-kernel-module-params"}
    assert runs["hostPaths"]["driverInstallDir"] == "/run/nvidia/driver"
    # An override without the gpu-operator: level reaches the wrapper chart, not the operator.
    unwrapped = effective_operator_values(shape, {"driver": {"enabled": False}})
    assert unwrapped["driver"]["enabled"] is True


def test_no_addons_without_gpu_pools() -> None:
    plan = plan_of("- {name: cpu, profile: kubevirt-cpu}\n")
    assert tenant_addons(plan, operator_release()) is None
    assert addons_text(plan, operator_release()) is None


def _schema_defaults(schema: dict[str, Any]) -> Any:
    """The values a chart's values.yaml gives: each property's default, recursively."""
    if schema.get("type") == "object" and "properties" in schema:
        base = dict(schema.get("default") or {})
        for key, sub in schema["properties"].items():
            value = _schema_defaults(sub)
            if value is not None:
                base[key] = value
        return base
    return schema.get("default")


@pytest.mark.skipif(not APP_SCHEMA.exists(), reason=f"{APP_SCHEMA} is absent")
def test_addons_validate_against_the_kubernetes_app_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(APP_SCHEMA.read_text())
    text = addons_text(example_plan(), operator_release())
    assert text is not None
    document = yaml.safe_load(text)
    # A merge patch for the app: its values under spec, nothing else at the root.
    assert list(document) == ["spec"]
    values = document["spec"]
    # Helm coalesces the chart's defaults with the values given; validate the result.
    full = merge_overwrite(_schema_defaults(schema), values)
    jsonschema.validate(full, schema)
    # And the addons part only with its own subschema, so a misspelt key would fail too.
    addons_schema = dict(schema["properties"]["addons"], additionalProperties=False)
    jsonschema.validate(full["addons"], addons_schema)


# --- HAMi ------------------------------------------------------------------------------------


def _with_hami(hami: str) -> str:
    text = EXAMPLE.read_text()
    return text.replace("nvidia:\n", f"addons:\n  hami: {hami}\nnvidia:\n", 1)


@pytest.mark.parametrize("fast", [True, False])
def test_hami_on_talos_gpu_pools_is_refused_with_the_reason(fast: bool) -> None:
    text = _with_hami("{enabled: true}")
    if not fast:  # an unusual shape: the pydantic models read it
        text = text.replace("maxReplicas: 4", "maxReplicas: 4.0")
    with pytest.raises(ClusterFileError) as caught:
        plan_cluster(parse_cluster(text, "cluster.yaml"), source="cluster.yaml", base_dir=ROOT)
    message = str(caught.value)
    assert message.startswith("cluster.yaml: addons.hami.enabled: refused")
    assert '"rtx6000", "l40s", "v100"' in message
    assert "CDI" in message and "addons.hami.force: true" in message


def test_forced_hami_is_written_with_the_operator_plugin_off_and_a_warning() -> None:
    text = _with_hami("{enabled: true, force: true}")
    plan = plan_cluster(parse_cluster(text, "cluster.yaml"), source="cluster.yaml", base_dir=ROOT)
    assert plan.hami == HamiRequest(enabled=True, force=True)
    notes = hami_notes(plan)
    assert len(notes) == 1 and "nvidia-ctk" in str(notes[0])
    addons = tenant_addons(plan, operator_release(), plan.hami)
    assert addons is not None
    assert addons["addons"]["hami"] == {"enabled": True}
    override = addons["addons"]["gpuOperator"]["valuesOverride"]
    assert override["gpu-operator"]["devicePlugin"]["enabled"] is False


def test_hami_without_gpu_pools_is_no_concern() -> None:
    text = (
        "cluster: demo\naddons: {hami: {enabled: true}}\ntalos: {version: v1.13.9}\n"
        "pools:\n  - {name: cpu, profile: kubevirt-cpu}\n"
    )
    plan = plan_cluster(parse_cluster(text, "cluster.yaml"), source="cluster.yaml")
    assert hami_notes(plan) == []
    assert tenant_addons(plan, operator_release(), plan.hami) is None


def test_a_misspelt_addons_key_names_the_right_one() -> None:
    with pytest.raises(ClusterFileError, match=r"addons\.hami\.enable: unknown key; did you mean"):
        parse_cluster(_with_hami("{enable: true}"), "cluster.yaml")


# --- the smoke test --------------------------------------------------------------------------


def test_a_smoke_test_pod_per_gpu_pool() -> None:
    plan = example_plan()
    pods = {pool.name: smoke_test_pod(plan, pool) for pool in plan.pools}
    assert pods["cpu"] is None
    for name in ("rtx6000", "l40s", "v100"):
        pool = next(p for p in plan.pools if p.name == name)
        pod = pods[name]
        assert pod is not None and pod["kind"] == "Pod"
        (container,) = pod["spec"]["containers"]
        assert container["command"] == ["nvidia-smi", "-L"]
        assert container["resources"]["limits"] == {"nvidia.com/gpu": len(pool.gpu_resources)}
        assert pod["metadata"]["annotations"]["talos-schematic/gpus"] == ",".join(
            pool.gpu_resources
        )
        # Talos 1.13 has CDI in containerd: no runtime class needed.
        assert "runtimeClassName" not in pod["spec"]
    l40s = pods["l40s"]
    assert l40s is not None
    assert l40s["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 2


def test_before_talos_1_13_the_pod_needs_the_nvidia_runtime_class() -> None:
    plan = plan_of("- {name: gpu, profile: kubevirt-l40s}\n", talos="v1.12.6")
    pod = smoke_test_pod(plan, plan.pools[0])
    assert pod is not None and pod["spec"]["runtimeClassName"] == "nvidia"
    text = smoke_test_text(plan, plan.pools[0])
    assert text is not None and "nvidia runtime class" in text


def test_smoke_test_text_says_how_to_read_it_and_that_cdi_is_decided_at_admission() -> None:
    plan = example_plan()
    text = smoke_test_text(plan, plan.pools[0])
    assert text is not None
    assert "nvidia-smi -L" in text and "No devices found" in text
    assert "decided when a pod is admitted" in text and "recreate" in text
    assert yaml.safe_load(text) == smoke_test_pod(plan, plan.pools[0])


@pytest.mark.parametrize("name", ["gpu", "123", "true", "on", "a-b"])
def test_shared_smoke_test_rendering_equals_the_direct_one(name: str) -> None:
    plan = plan_of(
        f"- {{name: x, profile: kubevirt-l40s}}\n- {{name: '{name}', profile: kubevirt-l40s}}\n"
    )
    smoke_tests = SmokeTests(plan)
    for pool in plan.pools:
        assert smoke_tests.text(pool) == smoke_test_text(plan, pool)
    text = smoke_tests.text(plan.pools[1])
    assert text is not None
    assert yaml.safe_load(text)["metadata"]["annotations"]["talos-schematic/pool"] == name
