"""What one decoded JSON/YAML object says: a talosctl resource, a Kubernetes object, or a
Prometheus-compatible query answer. Shared by the JSON and YAML readers, so a resource means
the same whichever way it was printed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import yaml

from schematic.doctor.triage import values
from schematic.doctor.triage.readers.grafana import frames_answer
from schematic.doctor.triage.readers.messages import failing_operand, message_kinds
from schematic.doctor.triage.readers.pcidevices import PciDeviceError, pci_record
from schematic.doctor.triage.signals import Evidence, Kind, Signal, host_os, pod_text
from schematic.redact import redacted
from schematic.safe_yaml import compose_all

__all__ = ["METRICS_READ", "Located", "empty_list", "interpret"]

_MAX_TEXT = 240
_MEMORY_METRICS = ("node_memory_MemAvailable_bytes", "node_memory_MemTotal_bytes")
_BOOT_METRIC = "node_boot_time_seconds"
# The metrics whose samples are evidence (node_exporter's names); any other series only names
# its node.
METRICS_READ = (*_MEMORY_METRICS, _BOOT_METRIC)


@dataclass(frozen=True, slots=True)
class Located:
    """Where an object starts, and how to find the line of one of its keys."""

    line: int
    locate: Callable[[str], int]


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _evidence(file: str, line: int, text: str) -> Evidence:
    text = redacted(text)
    return Evidence(file, line, text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 1] + "…")


def empty_list(header: Any, file: str, where: Located) -> Iterator[Signal]:
    """The signal of a Kubernetes list whose items are none (``kind: List`` or ``PodList``...,
    as kubectl prints a quiet cluster's events): evidence read, not a file of no interest."""
    if not isinstance(header, dict) or header.get("items") != []:
        return
    kind = _text(header.get("kind"))
    if kind.endswith("List") and "apiVersion" in header:
        yield Signal(Kind.EMPTY_LIST, "", _evidence(file, where.line, f"{kind}: no items"), kind)


def interpret(value: Any, file: str, where: Located) -> Iterator[Signal]:
    """The signals of one object (nothing for objects of no interest)."""
    if not isinstance(value, dict):
        return
    metadata = value.get("metadata")
    if isinstance(metadata, dict) and "spec" in value and "type" in metadata:
        yield from _talos_resource(value, metadata, file, where)
    elif value.get("status") == "success" and isinstance(value.get("data"), dict):
        yield from _metrics(value["data"], file, where)
    elif "schema" in value and "data" in value:
        # A Grafana panel's DataFrame JSON: its series as a query answer.
        answer = frames_answer(value)
        if answer is not None:
            yield from _metrics(answer["data"], file, where)
    elif isinstance(value.get("metric"), dict) and ("value" in value or "values" in value):
        # One series on its own: a VictoriaMetrics /api/v1/export line ("values" and
        # "timestamps" in milliseconds), or an element of a pasted "result" list.
        yield from _metrics({"result": [value]}, file, where)
    elif isinstance(value.get("machine"), dict) and (
        value.get("version") == "v1alpha1"
        or set(value) <= {"machine", "cluster", "version", "debug"}
    ):
        # A machine config document or patch, as written or `talosctl get mc -o yaml`'s spec.
        yield from _machine_config(value, "", file, where)
    elif "kind" in value and "apiVersion" in value:
        reader = _KUBERNETES.get(_text(value["kind"]))
        if reader is not None:
            yield from reader(value, file, where)
    elif isinstance(metadata, dict) and (shaped := _KUBERNETES.get(_shape_kind(value))):
        # A typed client's list (`talosctl support`'s kubernetesResources/*.yaml) writes its
        # items without kind or apiVersion: known by their shape.
        yield from shaped(value, file, where)


# --- talosctl ------------------------------------------------------------------------------


def _talos_resource(
    value: dict[str, Any], metadata: dict[str, Any], file: str, where: Located
) -> Iterator[Signal]:
    node = _text(value.get("node"))
    kind = _text(metadata.get("type")).split(".", 1)[0]
    spec = _dict(value.get("spec"))
    ident = _text(metadata.get("id"))
    if kind == "PCIDevices":
        try:
            record = pci_record(value)
        except PciDeviceError:
            return  # not a device this reader can name; detect reports the key
        line = where.locate("vendor_id")
        text = f"{ident} vendor_id: {record.vendor_hex} product_id: 0x{record.product_id:04x} " + (
            f"driver: {record.driver or '(none)'}" if record.has_driver_field else ""
        )
        yield Signal(
            Kind.PCI_DEVICE,
            node,
            _evidence(file, line, f"{text} ({record.product})".strip()),
            record.vendor_hex,
            (
                ("class", f"0x{record.class_id:02x}"),
                ("subclass", f"0x{record.subclass_id:02x}"),
                ("product", f"0x{record.product_id:04x}"),
                ("driver", record.driver),
                ("has_driver_field", "1" if record.has_driver_field else ""),
                ("address", ident),
                ("class_name", record.class_name),
            ),
        )
    elif kind == "ExtensionStatuses":
        extension = _dict(spec.get("metadata"))
        name = _text(extension.get("name"))
        line = where.locate("name")
        yield Signal(
            Kind.EXTENSION,
            node,
            _evidence(file, line, f"extension {name} {_text(extension.get('version'))}"),
            name,
            (("version", _text(extension.get("version"))),),
        )
    elif kind == "ImageFactorySchematics":
        # Talos 1.14+ publishes the schematic the node runs (siderolabs/talos
        # pkg/machinery/resources/runtime/image_factory_schematic.go, bb2ac754): the same fact
        # as the factory's virtual `schematic` extension, so it is read as that extension.
        schematic_id = _text(spec.get("schematicId"))
        if schematic_id:
            shown = f"image-factory-schematic schematicId: {schematic_id}"
            api_url = _text(spec.get("apiUrl"))
            yield Signal(
                Kind.EXTENSION,
                node,
                _evidence(
                    file, where.locate("schematicId"), shown + (f" ({api_url})" if api_url else "")
                ),
                "schematic",
                (("version", schematic_id),),
            )
    elif kind == "LoadedKernelModules":
        evidence = _evidence(file, where.line, f"loaded kernel module {ident}")
        yield Signal(Kind.MODULES_LISTED, node, evidence)
        yield Signal(Kind.MODULE_LOADED, node, evidence, ident)
    elif kind == "MachineStatuses":
        status = _dict(spec.get("status"))
        stage = _text(spec.get("stage"))
        ready = _text(status.get("ready"))
        yield Signal(
            Kind.MACHINE_STAGE,
            node,
            _evidence(file, where.locate("stage"), f"stage: {stage}, ready: {ready}"),
            stage,
            (("ready", ready),),
        )
    elif kind == "MachineConfigs":
        yield from _machine_config(spec_text(value.get("spec")), node, file, where)
    elif kind == "Services":
        running, healthy = _text(spec.get("running")), _text(spec.get("healthy"))
        yield Signal(
            Kind.SERVICE_STATE,
            node,
            _evidence(file, where.locate("running"), f"service {ident} running: {running}"),
            ident,
            (("running", running), ("healthy", healthy)),
        )


def spec_text(spec: Any) -> Any:
    """A MachineConfig resource's spec: the config as a YAML string (talosctl prints it so),
    decoded to its first v1alpha1 document; anything else as it is."""
    if not isinstance(spec, str):
        return spec
    try:
        nodes = list(compose_all(spec, _strings))
    except yaml.YAMLError:
        return {}
    for node in nodes:
        document = _plain_node(node)
        if isinstance(document, dict) and "machine" in document:
            return document
    return {}


_strings = yaml.resolver.BaseResolver().resolve


def _plain_node(node: yaml.Node | None) -> Any:
    if isinstance(node, yaml.MappingNode):
        return {str(_plain_node(key)): _plain_node(item) for key, item in node.value}
    if isinstance(node, yaml.SequenceNode):
        return [_plain_node(item) for item in node.value]
    return None if node is None else node.value


def _machine_config(config: Any, node: str, file: str, where: Located) -> Iterator[Signal]:
    machine = _dict(_dict(config).get("machine"))
    if not machine:
        return
    modules = [
        _text(_dict(m).get("name")) for m in _list(_dict(machine.get("kernel")).get("modules"))
    ]
    image = _text(_dict(machine.get("install")).get("image"))
    listed = ", ".join(m for m in modules if m) or "(none)"
    yield Signal(
        Kind.MACHINE_CONFIG,
        node,
        _evidence(
            file,
            where.locate("modules") if modules else where.line,
            f"machine.kernel.modules: {listed}; install image: {image or '(none)'}",
        ),
        image,
        (("modules", ",".join(m for m in modules if m)), ("image", image)),
    )


# --- Kubernetes ----------------------------------------------------------------------------


def _node(value: dict[str, Any], file: str, where: Located) -> Iterator[Signal]:
    metadata, status = _dict(value.get("metadata")), _dict(value.get("status"))
    name = _text(metadata.get("name"))
    addresses = [_text(_dict(a).get("address")) for a in _list(status.get("addresses"))]
    ready = next(
        (
            _text(_dict(c).get("status"))
            for c in _list(status.get("conditions"))
            if _dict(c).get("type") == "Ready"
        ),
        "",
    )
    boot_id = _text(_dict(status.get("nodeInfo")).get("bootID"))
    gpus = _text(_dict(status.get("allocatable")).get("nvidia.com/gpu"))
    capacity = _text(_dict(status.get("capacity")).get("nvidia.com/gpu"))
    labels = _dict(metadata.get("labels"))
    hostname = _text(labels.get("kubernetes.io/hostname"))
    yield Signal(
        Kind.IDENTITY,
        name,
        _evidence(file, where.locate("addresses"), f"node {name}: {', '.join(addresses)}"),
        name,
        (
            (
                "aliases",
                ",".join(a for a in dict.fromkeys([*addresses, hostname]) if a and a != name),
            ),
            ("source", "kubectl-node"),
        ),
    )
    annotations = _dict(metadata.get("annotations"))
    yield Signal(
        Kind.NODE,
        name,
        _evidence(file, where.locate("bootID"), f"node {name} Ready={ready} bootID={boot_id}"),
        name,
        (
            ("addresses", ",".join(a for a in addresses if a)),
            ("ready", ready),
            ("boot", boot_id),
            ("gpus", gpus),
            ("capacity", capacity),
            # Label values hold no commas, so the pairs are joined with them.
            ("labels", ",".join(f"{k}={_text(v)}" for k, v in sorted(labels.items()))),
            # Talos copies the schematic ID (no valid label value) to this annotation.
            ("schematic", _text(annotations.get("extensions.talos.dev/schematic"))),
            ("provider", _text(_dict(value.get("spec")).get("providerID"))),
        ),
    )
    info = _dict(status.get("nodeInfo"))
    os_image, kernel = _text(info.get("osImage")), _text(info.get("kernelVersion"))
    if os_image:
        text = f"node {name} osImage {os_image}, kernelVersion {kernel}"
        yield host_os(name, _evidence(file, where.locate("osImage"), text), os_image, kernel)


def _pod(value: dict[str, Any], file: str, where: Located) -> Iterator[Signal]:
    metadata, spec, status = (_dict(value.get(k)) for k in ("metadata", "spec", "status"))
    name = f"{_text(metadata.get('namespace'))}/{_text(metadata.get('name'))}"
    node = _text(spec.get("nodeName"))
    restarts = 0
    exit_code = reason = finished = waiting = ""
    oom = False
    for container in _list(status.get("containerStatuses")):
        container = _dict(container)
        count = container.get("restartCount")
        if isinstance(count, (int, str)) and not isinstance(count, bool):
            held = values.count(str(count))
            if held is None:
                yield values.unreadable(
                    file, where.locate("restartCount"), "restartCount", str(count)
                )
            else:
                restarts = max(restarts, held)
        terminated = _dict(_dict(container.get("lastState")).get("terminated"))
        if terminated and not exit_code:
            exit_code = _text(terminated.get("exitCode"))
            reason = _text(terminated.get("reason"))
            finished = _text(terminated.get("finishedAt"))
        waiting = waiting or _text(
            _dict(_dict(container.get("state")).get("waiting")).get("reason")
        )
        current = _dict(_dict(container.get("state")).get("terminated"))
        oom = oom or "OOMKilled" in (_text(terminated.get("reason")), _text(current.get("reason")))
    init_waiting = next(
        (
            reason
            for c in _list(status.get("initContainerStatuses"))
            if (reason := _text(_dict(_dict(_dict(c).get("state")).get("waiting")).get("reason")))
        ),
        "",
    )
    shown_status = f"Init:{init_waiting}" if init_waiting else waiting
    gpu = any(
        "nvidia.com/gpu" in _dict(_dict(c).get("resources")).get("limits", {})
        for c in _list(spec.get("containers"))
        if isinstance(_dict(_dict(c).get("resources")).get("limits"), dict)
    )
    line = where.locate("restartCount") if restarts else where.line
    evidence = _evidence(file, line, pod_text(name, node, restarts, exit_code, reason))
    yield Signal(
        Kind.POD,
        node,
        evidence,
        name,
        (
            ("restarts", str(restarts)),
            ("exit", exit_code),
            ("reason", reason),
            ("finished", finished),
            ("created", _text(metadata.get("creationTimestamp"))),
            ("started", _text(status.get("startTime"))),
            ("gpu", "1" if gpu else ""),
            ("waiting", waiting),
        ),
    )
    if oom:
        yield Signal(Kind.OOM_KILL, node, _evidence(file, where.line, f"pod {name}: OOMKilled"))
    if failing_operand(_text(metadata.get("name")), shown_status):
        text = f"pod {name} on {node or '?'}: {shown_status}"
        yield Signal(Kind.UNKNOWN_FAILURE, node, _evidence(file, line, text), "gpu-operator")
    host_ip = _text(status.get("hostIP"))
    if node and host_ip and host_ip != node:
        # status.hostIP is the address of the node the pod runs on: the node's name and the
        # address talosctl knows it by, side by side.
        yield Signal(
            Kind.IDENTITY,
            node,
            _evidence(file, where.locate("hostIP"), f"pod {name} on {node}: hostIP {host_ip}"),
            node,
            (("aliases", host_ip), ("source", "pod-host-ip")),
        )


def _event(value: dict[str, Any], file: str, where: Located) -> Iterator[Signal]:
    involved = _dict(value.get("involvedObject") or value.get("regarding"))
    reason = _text(value.get("reason"))
    message = _text(value.get("message") or value.get("note"))
    host = _text(_dict(value.get("source")).get("host")) or _text(
        _dict(value.get("deprecatedSource")).get("host")
    )
    if not host and involved.get("kind") == "Node":
        host = _text(involved.get("name"))
    subject = f"{_text(involved.get('kind'))}/{_text(involved.get('name'))}"
    when = _text(value.get("lastTimestamp") or value.get("eventTime"))
    series = _dict(value.get("series"))
    first = _text(value.get("firstTimestamp") or value.get("eventTime"))
    count = _text(value.get("count") or series.get("count"))
    evidence = _evidence(file, where.locate("reason"), f"{when} {reason} {subject}: {message}")
    yield Signal(
        Kind.EVENT,
        host,
        evidence,
        reason,
        (
            ("object", subject),
            ("namespace", _text(involved.get("namespace"))),
            ("time", when),
            ("first", first),
            ("count", count),
        ),
    )
    for kind in message_kinds(message):
        yield Signal(kind, host, evidence, subject)


def _service(value: dict[str, Any], file: str, where: Located) -> Iterator[Signal]:
    metadata, spec = _dict(value.get("metadata")), _dict(value.get("spec"))
    ports = [_dict(p) for p in _list(spec.get("ports"))]
    numbers = {_text(p.get("port")) for p in ports} | {_text(p.get("targetPort")) for p in ports}
    if "6443" not in numbers:
        return
    name = f"{_text(metadata.get('namespace'))}/{_text(metadata.get('name'))}"
    listed = ", ".join(f"{_text(p.get('name')) or '?'}:{_text(p.get('port'))}" for p in ports)
    has_trustd = "50001" in numbers
    yield Signal(
        Kind.CONTROL_PLANE_SERVICE,
        "",
        _evidence(file, where.locate("ports"), f"Service {name} ports: {listed}"),
        name,
        (("trustd", "1" if has_trustd else ""),),
    )


def _daemonset(value: dict[str, Any], file: str, where: Located) -> Iterator[Signal]:
    metadata = _dict(value.get("metadata"))
    template = _dict(_dict(_dict(value.get("spec")).get("template")).get("spec"))
    for container in _list(template.get("containers")):
        env = {
            _text(_dict(e).get("name")): _text(_dict(e).get("value"))
            for e in _list(_dict(container).get("env"))
        }
        if "DEVICE_LIST_STRATEGY" not in env and "CDI_ENABLED" not in env:
            continue
        name = f"{_text(metadata.get('namespace'))}/{_text(metadata.get('name'))}"
        strategy = env.get("DEVICE_LIST_STRATEGY", "")
        text = (
            f"DaemonSet {name}: DEVICE_LIST_STRATEGY={strategy or '(unset)'} "
            f"CDI_ENABLED={env.get('CDI_ENABLED', '(unset)')}"
        )
        yield Signal(
            Kind.PLUGIN_ENV,
            "",
            _evidence(file, where.locate("env"), text),
            strategy,
            (("cdi_enabled", env.get("CDI_ENABLED", "")), ("object", name)),
        )


def _shape_kind(value: dict[str, Any]) -> str:
    """The kind an object without ``kind`` has by its fields: a Node reports ``nodeInfo``, a
    Pod's spec lists ``containers``, an Event names its ``involvedObject``, a DaemonSet's status
    counts ``desiredNumberScheduled``, a Service's spec lists ``ports`` and a ``clusterIP``."""
    spec, status = _dict(value.get("spec")), _dict(value.get("status"))
    if "nodeInfo" in status:
        return "Node"
    if "containers" in spec:
        return "Pod"
    if "involvedObject" in value:
        return "Event"
    if "desiredNumberScheduled" in status:
        return "DaemonSet"
    if "ports" in spec and "clusterIP" in spec:
        return "Service"
    return ""


_KUBERNETES: dict[str, Callable[[dict[str, Any], str, Located], Iterator[Signal]]] = {
    "Node": _node,
    "Pod": _pod,
    "Event": _event,
    "Service": _service,
    "DaemonSet": _daemonset,
}


# --- metrics -------------------------------------------------------------------------------

_NODE_LABELS = ("node", "kubernetes_node", "nodename", "hostname", "instance")


def _series_names(metric: dict[str, Any]) -> list[str]:
    """Every name of the node a series is about, best first: its node labels, then the
    instance without its port."""
    names: list[str] = []
    for label in _NODE_LABELS:
        if metric.get(label):
            node = _text(metric[label])
            # "10.0.0.5:9100" → "10.0.0.5"; IPv6 instances come bracketed ("[fd00::5]:9100").
            if label == "instance":
                if node.startswith("["):
                    node = node[1:].split("]", 1)[0]
                elif node.count(":") == 1:
                    node = node.split(":")[0]
            names.append(node.strip("[]"))
    return list(dict.fromkeys(n for n in names if n))


def _series_node(metric: dict[str, Any]) -> str:
    names = _series_names(metric)
    return names[0] if names else ""


def _samples(series: dict[str, Any]) -> list[Any]:
    """[time, value] pairs of a query answer, or the export form's two lists zipped."""
    pairs = _list(series.get("values"))
    stamps = _list(series.get("timestamps"))
    if stamps and len(stamps) == len(pairs):
        return [[stamp, value] for stamp, value in zip(stamps, pairs, strict=True)]
    return pairs or [series.get("value")]


def _number(sample: Any) -> float | None:
    if isinstance(sample, list) and len(sample) == 2 and isinstance(sample[1], (str, int, float)):
        return values.number(str(sample[1]))
    return None


def _last_time(samples: list[Any]) -> str:
    """When the last sample was taken, in epoch seconds ("" if unknown): query answers stamp
    in seconds, the export form in milliseconds."""
    stamps: list[float] = []
    for sample in samples:
        if isinstance(sample, list) and sample and isinstance(sample[0], (int, float)):
            stamp = values.number(str(sample[0]))
            if stamp is not None:
                stamps.append(stamp)
    if not stamps:
        return ""
    last = max(stamps)
    return str(round(last / 1000 if last > 1e11 else last))


def _metrics(data: dict[str, Any], file: str, where: Located) -> Iterator[Signal]:
    for series in _list(data.get("result")):
        series = _dict(series)
        metric = _dict(series.get("metric"))
        name = _text(metric.get("__name__"))
        samples = _samples(series)
        numbers = [n for n in (_number(s) for s in samples) if n is not None]
        line = where.locate("metric")
        if len(numbers) < len(samples):
            # NaN, +Inf, a stale marker: the sample is no number the rules could weigh.
            unread = [s[1] for s in samples if isinstance(s, list) and len(s) == 2]
            unread = [v for v in unread if values.number(_text(v)) is None]
            if unread:
                yield values.unreadable(file, line, f"{name} sample", _text(unread[0]))
        if not numbers:
            continue
        names = _series_names(metric)
        node = names[0] if names else ""
        if len(names) > 1:
            yield Signal(
                Kind.IDENTITY,
                node,
                _evidence(file, line, f"{name}{{{', '.join(names)}}}"),
                node,
                (("aliases", ",".join(names[1:])), ("source", "metric-labels")),
            )
        if name in _MEMORY_METRICS:
            low, high = min(numbers), max(numbers)
            yield Signal(
                Kind.MEMORY_AVAILABLE,
                node,
                _evidence(
                    file,
                    line,
                    f"{name}{{{node}}} min {low:.0f} max {high:.0f} over {len(numbers)} samples",
                ),
                name,
                (("min", f"{low:.0f}"), ("max", f"{high:.0f}"), ("samples", str(len(numbers)))),
            )
        elif name == _BOOT_METRIC:
            boots = sorted({round(n) for n in numbers})
            yield Signal(
                Kind.BOOT_TIME,
                node,
                _evidence(file, line, f"node_boot_time_seconds{{{node}}}: {len(boots)} boots"),
                name,
                (("boots", ",".join(str(b) for b in boots)), ("taken", _last_time(samples))),
            )
