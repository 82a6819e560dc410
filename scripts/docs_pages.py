"""The documentation site's reference pages, made at build time from the package's own data.

MkDocs loads this file as a hook (``mkdocs.yml``: ``hooks``); :func:`on_files` adds the pages
to the site without writing them into ``docs/``, so they can never drift from the data they
show. :func:`reference_pages` is what the tests read: path → Markdown.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["PAGES", "build_page", "on_files", "reference_pages"]

_INTRO = (
    "This page is generated from the package's own data each time the site is built; "
    "it shows exactly what the installed tool knows.\n"
)


def _cell(text: object) -> str:
    # A table cell is one line; a pipe would end it.
    return " ".join(str(text).split()).replace("|", "\\|")


def _prose(text: str) -> str:
    """Rule prose as Markdown: its backticks are code spans; ``<id>`` outside them is text."""
    parts = text.strip().split("`")
    for index in range(0, len(parts), 2):
        parts[index] = parts[index].replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts)


def _table(header: Iterable[str], rows: Iterable[Iterable[object]]) -> str:
    head = list(header)
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    lines += ["| " + " | ".join(_cell(value) for value in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _lint_codes() -> str:
    from schematic.doctor.lint.findings import RULES

    out = [
        "# Lint and triage codes\n",
        _INTRO,
        "`talos-schematic explain CODE` prints the same text in a terminal.\n",
        _table(
            ("code", "severity", "title"),
            ((f"[{r.code}](#{r.code.lower()})", r.severity, r.title) for r in RULES.values()),
        ),
    ]
    for rule in RULES.values():
        out.append(f"## {rule.code}\n")
        out.append(f"**{rule.title}** ({rule.severity})\n")
        for heading, text in (
            ("What you see", rule.seen),
            ("What a broken node shows", rule.runtime),
            ("Why it happens", rule.why),
            ("How to confirm it", rule.confirm),
            ("How to fix it", rule.remedy),
        ):
            if not text:
                continue
            out.append(f"### {heading}\n")
            out.append(_prose(text) + "\n")
    return "\n".join(out)


_DecisionKey = tuple[str, str, str, tuple[str, ...], tuple[str, ...]]


def _decision_key(decision: Any) -> _DecisionKey:
    return (
        decision.flavour,
        decision.tier or "",
        decision.driver,
        tuple(decision.extensions),
        tuple(decision.notes),
    )


def _gpu_support() -> str:
    from schematic.errors import TalosSchematicError
    from schematic.facts import nvidia, talos

    out = [
        "# GPU support per Talos release\n",
        _INTRO,
        "For each run of Talos releases that pins the same NVIDIA drivers, every GPU in the "
        "device table is decided as `talos-schematic gpu ID --talos VERSION` would decide it "
        "for a KubeVirt worker with the tier left to the tool. GPUs with the same answer share "
        "a row.\n",
    ]
    gpus = nvidia.all_gpus()
    for row in talos.driver_table():
        version = str(row.last)
        drivers = f"LTS {row.lts_driver}"
        if row.production_driver:
            drivers += f", production {row.production_driver}"
        out.append(f"## Talos {row.first} to {row.last}\n")
        out.append(f"Drivers: {drivers}; container toolkit {row.container_toolkit}.\n")
        groups: dict[_DecisionKey, list[str]] = {}
        refusals: dict[str, list[str]] = {}
        for gpu in gpus:
            arch = "arm64" if gpu.gb10 else "amd64"
            label = f"{gpu.architecture}: {gpu.name} (`{gpu.id}`)"
            try:
                decision = nvidia.decide([nvidia.GpuRequest(gpu.id)], version, arch=arch)
            except TalosSchematicError as err:
                # The GPU's own name out of the reason, so GPUs refused alike share a row.
                why = str(err).replace(gpu.label, "this GPU")
                why = why.replace(f"{gpu.id} ({gpu.name}, ", "this GPU (")
                why = why.replace(gpu.id, "this GPU")
                refusals.setdefault(why, []).append(label)
                continue
            if decision is not None:
                groups.setdefault(_decision_key(decision), []).append(label)
        rows = []
        for (flavour, tier, driver, extensions, notes), labels in groups.items():
            rows.append(
                (
                    _summarise(labels),
                    flavour,
                    tier or "—",
                    driver,
                    ", ".join(f"`{name}`" for name in extensions),
                    " ".join(notes) or "—",
                )
            )
        out.append(_table(("GPUs", "modules", "tier", "driver", "extensions", "notes"), rows))
        if refusals:
            out.append("Refused on this release:\n")
            out.append(
                _table(
                    ("GPUs", "why"),
                    ((_summarise(labels), why) for why, labels in sorted(refusals.items())),
                )
            )
    return "\n".join(out)


def _summarise(labels: list[str]) -> str:
    by_architecture: dict[str, int] = {}
    for label in labels:
        architecture = label.split(":", 1)[0]
        by_architecture[architecture] = by_architecture.get(architecture, 0) + 1
    counts = ", ".join(f"{arch} ({count})" for arch, count in by_architecture.items())
    examples = "; ".join(label.split(": ", 1)[1] for label in labels[:3])
    more = f" and {len(labels) - 3} more" if len(labels) > 3 else ""
    return f"{counts}: {examples}{more}"


def _devices() -> str:
    from schematic.facts import nvidia

    rows = (
        (
            f"`{gpu.id}`",
            gpu.name,
            gpu.chip,
            gpu.architecture,
            f"`{gpu.kubevirt_resource_name}`",
            gpu.first_open_driver or "—",
        )
        for gpu in nvidia.all_gpus()
    )
    return "\n".join(
        [
            "# NVIDIA devices\n",
            _INTRO,
            "Every GPU function the tool knows, with the KubeVirt resource name Cozystack's "
            "`gpus[].name` holds for it and the first open-module driver release that lists "
            "it.\n",
            _table(
                ("PCI ID", "name", "chip", "architecture", "resource", "first open driver"),
                rows,
            ),
        ]
    )


def _extensions() -> str:
    from schematic.facts import catalog

    releases = catalog.talos_versions()
    lines: dict[str, list[str]] = {}
    for release in releases:
        line = ".".join(release.split(".")[:2])
        lines.setdefault(line, []).append(release)
    offered = {release: catalog.extensions_for(release) for release in releases}
    names = sorted({name for release in releases for name in offered[release]})
    out = [
        "# Official extensions per Talos release\n",
        _INTRO,
        f"Source: {catalog.catalog_source()}. A cell names the releases of that minor line "
        "offering the extension (all of them: ✓).\n",
    ]
    header = ("extension", *lines)
    rows = []
    for name in names:
        cells: list[str] = [f"`{name}`"]
        for members in lines.values():
            offering = [r for r in members if name in offered[r]]
            if not offering:
                cells.append("")
            elif len(offering) == len(members):
                cells.append("✓")
            else:
                cells.append(f"{offering[0]} to {offering[-1]}")
        rows.append(cells)
    out.append(_table(header, rows))
    out.append("## Releases\n")
    out.append(", ".join(f"`{release}`" for release in releases) + "\n")
    return "\n".join(out)


def _chart_targets() -> str:
    from schematic.facts import chart_targets

    out = [
        "# Cozystack chart targets\n",
        _INTRO,
        "`cozystack.version` in the cluster file (or `--chart`) names one of these; it decides "
        "which value keys the written `KubernetesNodes` values use.\n",
    ]
    assumed = chart_targets.assumed_target().name
    for target in chart_targets.chart_targets():
        out.append(f"## {target.name}: {target.title}\n")
        facts = [
            ("assumed when none is named", "yes" if target.name == assumed else "no"),
            ("also accepted as", ", ".join(f"`{a}`" for a in target.aliases) or "—"),
            ("release line", target.releases or "—"),
            ("data read from", ", ".join(target.verified_releases) or target.commit or "—"),
            ("schematic written at", f"`{chart_targets.LAYOUT_KEYS[target.layout]}`"),
            ("reads `kernelModules`", target.kernel_modules_support),
            ("a machine-config change reaches", target.machine_config_changes),
            ("Flux `chartRef`", f"`{target.chart_ref.kind}` `{target.chart_ref.name}`"),
            (
                "loads the NVIDIA modules on a GPU pool by default",
                "yes" if target.nvidia_modules_by_default else "no",
            ),
            ("source", target.source),
        ]
        out.append(_table(("", ""), facts))
        out.append("Value keys read: " + ", ".join(f"`{k}`" for k in sorted(target.keys)) + "\n")
        talos_keys = ", ".join(f"`talos.{k}`" for k in sorted(target.talos_keys))
        out.append(f"`talos` keys read: {talos_keys}\n")
        for form, keys in target.os_image_keys.items():
            listed = ", ".join(f"`{k}`" for k in sorted(keys))
            out.append(f"`osImage.{form}` keys: {listed}\n")
    return "\n".join(out)


def _limits() -> str:
    from schematic import safe_yaml
    from schematic.doctor.triage.readers import logs
    from schematic.factory import client as factory
    from schematic.inputs import reading

    policy = factory.DEFAULT_RETRY
    timeout = factory.DEFAULT_TIMEOUT
    answer = _size(factory.DEFAULT_MAX_RESPONSE_SIZE)
    request = f"{factory.DEFAULT_MAX_REQUEST_TIME:g} s"
    kinds = ", ".join(
        f"{kind.value} {_size(limit)}" for kind, limit in safe_yaml.INPUT_LIMITS.items()
    )
    rows = [
        (
            "size of an input file, by kind (also standard input): each kind's limit is what "
            "its worst shape costs at most 5 s and 500 MB to read (`benchmarks/hostile_shapes.py`)",
            f"{kinds}; reading stops there",
            "`--max-input-size SIZE` (`64MiB`, `500k`, bytes) on every command that reads files: "
            "one limit for every kind",
        ),
        (
            "size of a factory's extension, overlay or version list",
            f"{_size(factory.MAX_LIST_RESPONSE_SIZE)}; reading stops there",
            "none",
        ),
        (
            "problems reported from one file",
            f"the first {reading.MAX_PROBLEMS} by line, and a count of the rest (at most "
            f"{reading.MAX_COLLECTED:,} kept)",
            "none",
        ),
        (
            "signals of one kind for one node from one plain-text log (`triage`)",
            f"the first {logs.MAX_SIGNALS_OF_A_KIND - 1:,} and the last",
            "none",
        ),
        (
            "aliases (go-yaml's `DefaultAliasCheck`, as the factory applies it): past 100 "
            "aliased and 1,000 constructed nodes, at most 99 % of the nodes may come from "
            "aliases up to 400,000 nodes, falling linearly to 10 % at 4,000,000",
            '"document contains excessive aliasing"',
            "none (the factory's own rule)",
        ),
        (
            "nesting of lists and mappings",
            f"{safe_yaml.MAX_NESTING} levels (go-yaml allows {safe_yaml.GO_YAML_MAX_DEPTH:,}, "
            "so a schematic nested deeper than this but within go-yaml's limit is refused here "
            "though the factory would take it)",
            "none",
        ),
        (
            "size of a factory's answer, counted after decompression (a 100 MB answer or a "
            "gzip bomb)",
            f"{answer}; reading stops there, and an answer whose `Content-Length` says more is "
            "not read at all",
            "none (`FactoryClient(max_response_size=...)`)",
        ),
        (
            "time per factory request, retries and their waits included (a server dripping a "
            "byte a second)",
            f"{request}; a retry whose wait would pass it is not made",
            "none (`FactoryClient(max_request_time=...)`)",
        ),
        (
            "silence on a factory connection",
            f"{timeout.connect:g} s to connect, {timeout.read:g} s between two reads; "
            f"{policy.attempts} attempts with backoff on connection errors, timeouts, 5xx and 429",
            "none (`FactoryClient(timeout=..., retry=...)`)",
        ),
        (
            "`Retry-After` from the factory",
            f"{policy.max_retry_after:g} s; a longer wait asked for is an error at once",
            "none (`RetryPolicy(max_retry_after=...)`)",
        ),
        ("redirects from the factory", "never followed", "none"),
    ]
    return "\n".join(
        [
            "# Limits\n",
            _INTRO,
            "A hostile or broken input ends in one message naming the file (and line) and "
            "exit 1: never a hang, a traceback or unbounded memory.\n",
            _table(("limit", "default", "how to change it"), rows),
            "Every YAML file the tool reads goes through one reader (`schematic/safe_yaml.py`) "
            "that counts aliases while composing and never expands them, so an alias bomb costs "
            "what its text costs. In `lint`, such a file — and a file over the size limit or "
            "not UTF-8 — is a finding for that file; the other files are still linted. Text "
            "must be UTF-8 (schematic bodies may also be BOM-marked UTF-16, as the factory "
            "accepts).\n",
            "**Redirects are not followed**, to any host: a `3xx` from the factory is one error "
            "showing where it points. Following one would send the token or password to "
            "whatever host the `Location` names, and would turn a `POST /schematics` into a "
            "`GET`; if the new place is your factory, pass it as `--factory` or "
            "`talos.imageFactoryURL`.\n",
        ]
    )


def _size(size: int) -> str:
    return f"{size // (1024 * 1024)} MiB" if size % (1024 * 1024) == 0 else f"{size} bytes"


def _cli() -> str:
    from typer.testing import CliRunner

    cli = importlib.import_module("schematic.cli")
    cli.register_all_commands()
    names = [
        command.name or (command.callback.__name__ if command.callback else "")
        for command in cli.app.registered_commands
        if not command.hidden
    ]
    runner = CliRunner()
    out = [
        "# Command line\n",
        _INTRO,
        "Every command's `--help`, as the installed tool prints it.\n",
    ]
    for name in names:
        # A fixed width and no colour: the page is the same on every machine.
        shown = runner.invoke(
            cli.app, [name, "--help"], env={"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}
        )
        out.append(f"## {name}\n")
        text = "\n".join(line.rstrip() for line in shown.output.strip("\n").splitlines())
        out.append("```text\n" + text + "\n```\n")
    return "\n".join(out)


_PAGES: dict[str, Callable[[], str]] = {
    "reference/codes.md": _lint_codes,
    "reference/gpu-support.md": _gpu_support,
    "reference/devices.md": _devices,
    "reference/extensions.md": _extensions,
    "reference/chart-targets.md": _chart_targets,
    "reference/limits.md": _limits,
    "reference/cli.md": _cli,
}


PAGES = tuple(_PAGES)


def build_page(path: str) -> str:
    """The Markdown of one generated page (``reference/codes.md``, ...)."""
    return _PAGES[path]()


def reference_pages() -> dict[str, str]:
    """Every generated page: its path under ``docs/`` → its Markdown."""
    return {path: build() for path, build in _PAGES.items()}


def on_files(files: Any, config: Any) -> Any:
    """MkDocs hook: add the generated pages to the site."""
    from mkdocs.structure.files import File

    for path, text in reference_pages().items():
        files.append(File.generated(config, path, content=text))
    return files
