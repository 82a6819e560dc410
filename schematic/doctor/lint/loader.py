"""Read lint inputs: files and directories → YAML documents that remember their line numbers.

Parsing is PyYAML's composer; values are built here so that plain scalars follow go-yaml's
resolution (what Kubernetes and Helm read) and YAML-1.1-only words such as ``on`` stay
strings. Every mapping key and list item records its line, so a finding can point at the
line it concerns. Embedded YAML (a TalosConfigTemplate's machine config, the heredoc of the
reconcile Job) is parsed the same way, shifted to its place in the outer file.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from schematic.core.goscalar import resolve_plain
from schematic.errors import LintInputError, printable
from schematic.output.outdir import HEADER as INDEX_HEADER
from schematic.output.outdir import INDEX
from schematic.safe_yaml import (
    InputKind,
    InputTooLargeError,
    NotTextError,
    YamlLimitError,
    check_size,
    check_syntax,
    compose_all,
    files_below,
    node_budget,
    read_problem,
    read_text,
)

__all__ = [
    "Document",
    "LoadProblem",
    "Path_",
    "collect_files",
    "is_schematic_file",
    "load_counted",
    "load_paths",
    "may_hold_lint_object",
    "parse_yaml",
    "walk",
]

Key = str | int
Path_ = tuple[Key, ...]

_SUFFIXES = (".yaml", ".yml", ".json")
# Terraform HCL: not read, but never passed over in silence when it builds a Talos schematic.
_HCL_SUFFIX = ".tf"
# A rollout script (upgrade -f talosctl|tuppr): read as text, its upgrade lines checked (TS136).
_SCRIPT_SUFFIX = ".sh"
# What only HCL that builds a schematic names ("siderolabs/" alone would take a file that
# merely pins ghcr.io/siderolabs/installer).
_HCL_TALOS_WORDS = (
    "talos_image_factory_schematic",
    "officialExtensions",
    "talos_image_factory_extensions_versions",
)


@dataclass(frozen=True)
class Document:
    """One YAML document: its value, where each key sits, and its own source text."""

    file: str
    index: int
    data: Any
    lines: dict[Path_, int] = field(repr=False)
    text: str = field(default="", repr=False)
    # Each mapping key written twice: its path, the line of the later one (which lint reads,
    # as PyYAML and Helm do) and of the first. go-yaml, and so Talos, refuses such a config.
    duplicates: tuple[tuple[Path_, int, int], ...] = field(default=(), repr=False)
    # A shell script (a rollout): only its text is read, by schematic.doctor.lint.rollout.
    script: bool = False

    def line(self, path: Path_ = ()) -> int:
        """The line of ``path``, or of its nearest ancestor the document records."""
        for end in range(len(path), -1, -1):
            found = self.lines.get(path[:end])
            if found is not None:
                return found
        return 1

    def get(self, path: Path_, default: Any = None) -> Any:
        """The value at ``path`` (keys and list indices), or ``default``."""
        value = self.data
        for key in path:
            listed = isinstance(key, int) and isinstance(value, list) and 0 <= key < len(value)
            mapped = isinstance(key, str) and isinstance(value, dict) and key in value
            if listed or mapped:
                value = value[key]
            else:
                return default
        return value

    def has(self, path: Path_) -> bool:
        sentinel = object()
        return self.get(path, sentinel) is not sentinel


@dataclass(frozen=True)
class LoadProblem:
    """A file that could not be read as YAML; reported as a finding, not raised."""

    file: str
    line: int | None
    message: str
    template: bool  # a Helm/Go template, skipped rather than wrong
    skipped: bool = False  # a dangling link or a FIFO below a directory: not read at all
    unread: bool = False  # larger than the input limit, or not UTF-8: refused while reading
    fix: str = ""  # what to do, where the rule's own fix line does not fit
    # Whether the text names anything lint reads: an unparsable file that does not (a Grafana
    # dashboard, someone's notes) is a note, not an error that fails the run.
    relevant: bool = True
    hcl: bool = False  # Terraform HCL that builds a Talos schematic: not read, said so


def _scalar(node: yaml.ScalarNode) -> Any:
    if node.style:  # quoted or block: always a string (plain is None or "")
        return node.value
    tag, value = resolve_plain(node.value)
    # Timestamps stay as written; lint only compares them as text.
    return node.value if tag in ("timestamp", "str") else value


def _build(
    node: yaml.Node,
    path: Path_,
    lines: dict[Path_, int],
    offset: int,
    duplicates: list[tuple[Path_, int, int]],
) -> Any:
    lines.setdefault(path, node.start_mark.line + 1 + offset)
    if isinstance(node, yaml.ScalarNode):
        return _scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return [
            _build(item, (*path, index), lines, offset, duplicates)
            for index, item in enumerate(node.value)
        ]
    if isinstance(node, yaml.MappingNode):
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                continue  # complex keys never occur in the objects lint reads
            key = str(key_node.value)
            if key == "<<" and not key_node.style:
                continue
            line = key_node.start_mark.line + 1 + offset
            if key in mapping:
                duplicates.append(((*path, key), line, lines[(*path, key)]))
                # The later value is read: drop what the first one recorded.
                for recorded in [p for p in lines if p[: len(path) + 1] == (*path, key)]:
                    del lines[recorded]
            lines[(*path, key)] = line
            mapping[key] = _build(value_node, (*path, key), lines, offset, duplicates)
        return mapping
    return None


def _untyped(kind: type[yaml.Node], value: Any, implicit: Any) -> str:
    return ""


def parse_yaml(
    text: str,
    file: str,
    line_offset: int = 0,
    *,
    only_read: bool = False,
    max_nodes: int | None = None,
) -> list[Document]:
    """Every document of ``text``; raises yaml.YAMLError on a syntax error, or past
    ``max_nodes`` YAML nodes. ``only_read`` keeps only the documents that may hold an object
    lint reads (:func:`may_hold_lint_object` on each document's own text): the rest of a file is
    composed, never built or kept."""
    documents: list[Document] = []
    # Aliases counted, never expanded, and nesting bounded: a bomb is a YAMLError like any other.
    # Node tags are left untyped: _scalar types values by go-yaml's rules, not by the tag.
    for index, node in enumerate(compose_all(text, _untyped, max_nodes=max_nodes)):
        if node is None:
            continue
        start = node.start_mark.index
        if not text[start - node.start_mark.column : start].strip():
            start -= node.start_mark.column  # an indented root keeps its indentation
        source = text[start : node.end_mark.index]
        if only_read and not (may_hold_lint_object(source) or is_schematic_file(file)):
            continue
        lines: dict[Path_, int] = {}
        duplicates: list[tuple[Path_, int, int]] = []
        data = _build(node, (), lines, line_offset, duplicates)
        lines[()] = node.start_mark.line + 1 + line_offset
        documents.append(Document(file, index, data, lines, source, tuple(duplicates)))
    return documents


def collect_files(paths: Sequence[str]) -> list[tuple[Path, str]]:
    """The files to read: named files as given, YAML/JSON files below named directories."""
    return [(path, shown) for path, shown, reason in _entries(paths) if not reason]


def _entries(paths: Sequence[str]) -> list[tuple[Path, str, str]]:
    """Each input with the reason it is skipped ("" when it is read)."""
    found: list[tuple[Path, str, str]] = []
    for given in paths:
        path = Path(given)
        if given == "-":
            # Standard input: `helm template ... | talos-schematic lint -`.
            found.append((path, given, ""))
        elif path.is_dir():
            try:
                found += [
                    (child, str(child), _unreadable(child))
                    for child in files_below(path)
                    if child.name.endswith((*_SUFFIXES, _HCL_SUFFIX, _SCRIPT_SUFFIX))
                ]
            except OSError as err:
                # A folder that cannot be listed holds files nobody checked: passing the rest
                # would be a gate passing on what it could not read.
                where = printable(str(err.filename), one_line=True)
                raise LintInputError(f"{where}: cannot be read ({err.strerror or err})") from None
        elif path.exists():
            # Named on the command line: read_text refuses a FIFO or device, except a pipe this
            # process holds (`lint <(helm template)`).
            found.append((path, given, ""))
        else:
            raise LintInputError(f"{printable(given, one_line=True)}: no such file or directory")
    return found


def _unreadable(path: Path) -> str:
    """Why a file found below a directory is not read: a dangling link or not a regular file
    (a FIFO would block the run, a device never end)."""
    try:
        info = path.stat()
    except FileNotFoundError:
        target = os.readlink(path) if path.is_symlink() else "?"
        return f"a symbolic link to {target}, which does not exist; skipped"
    except OSError as err:
        raise LintInputError(f"{path}: cannot be read ({err.strerror or err})") from None
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file (a FIFO, socket or device); skipped"
    return ""


# The words of the objects lint reads: a file is composed only if its text holds one of them
# (the rest is checked for syntax only, in C); then each document of it is built and kept only if
# its own text does. A plain substring test: it may let through files that hold nothing lint
# reads, never turn one away, whatever the spelling (indentation, comments, tags, anchors,
# explicit keys, line ends), as each object lint reads cannot lack its word
# (tests/test_lint_look.py holds every shape to it):
_WORDS = (
    # the kinds schematic.doctor.lint.inventory reads whatever else they hold;
    "KubernetesNodes",
    "KernelModuleConfig",  # read beside a machine config in the same file
    "HelmRelease",
    "KubevirtMachineTemplate",
    "TalosConfigTemplate",  # also inside the reconcile Job's heredoc
    "MachineDeployment",
    "KamajiControlPlane",
    # a Kubernetes app or Package has a cozystack apiVersion;
    "cozystack",
    # a control-plane Service carries Kamaji's or Cluster API's labels
    # (schematic.doctor.lint.manifests);
    "kamaji.clastix.io",
    "cluster.x-k8s.io/role",
    # a top-level key of the objects without a kind: a Talos machine config (machine; also an
    # RFC 6902 patch's path: /machine/...), platform values (gpu), a schematic (owner, overlay,
    # customization), kubernetes and kubernetes-nodes values, this tool's urls.yaml
    # (schematicID), a talhelper config (clusterName) or a node's talhelper keys (schematic; also
    # Terraform JSON's talos_image_factory_schematic).
    "machine",
    "gpu",
    "owner",
    "overlay",
    "customization",
    "nodeGroups",
    "addons",
    "talos",
    "osImage",
    "schematicID",
    "kernelModules",
    "clusterName",
    "schematic",
    # an Omni cluster template's machine sets, and a machine with extensions of its own
    # (schematic.doctor.lint.omni; its Cluster has talos).
    "Workers",
    "ControlPlane",
    "systemExtensions",
    "extraKernelArgs",
    # the GPU Operator's own values file (its driver and toolkit).
    "toolkit",
)
# A file of this name holds a schematic whatever its keys: read (and decoded) as one.
SCHEMATIC_FILE_NAMES = frozenset({"schematic.yaml", "schematic.yml"})


def is_schematic_file(shown: str) -> bool:
    """Whether the file is named as a schematic (``…/schematic.yaml``)."""
    return shown.replace("\\", "/").rpartition("/")[2] in SCHEMATIC_FILE_NAMES


# An escape in a double-quoted scalar or a JSON string (\u006b, \x6b, \/, a line continuation)
# can spell a word without its letters: a text holding one is always composed.
_ESCAPES = ("\\u", "\\U", "\\x", "\\/", "\\\n", "\\\r")


def may_hold_lint_object(text: str) -> bool:
    """Whether ``text`` can hold an object lint reads (it holds one of the words above); False
    only when it certainly holds none."""
    return any(word in text for word in _WORDS) or (
        "\\" in text and any(escape in text for escape in _ESCAPES)
    )


def _problem(shown: str, text: str, err: yaml.YAMLError, relevant: bool) -> LoadProblem:
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    line = mark.line + 1 if mark is not None else None
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    # A file refused by a safety limit (an alias bomb, nesting too deep) is hostile, whatever
    # it names: always an error.
    relevant = relevant or isinstance(err, YamlLimitError)
    return LoadProblem(shown, line, str(problem), template="{{" in text, relevant=relevant)


def load_paths(paths: Sequence[str]) -> tuple[list[Document], list[LoadProblem]]:
    """Read every file below ``paths``; LintInputError for a file that cannot be read."""
    documents, problems, _ = load_counted(paths)
    return documents, problems


def load_counted(paths: Sequence[str]) -> tuple[list[Document], list[LoadProblem], int]:
    """:func:`load_paths`, and how many files it read (those :func:`collect_files` lists), from
    the one walk of the tree."""
    documents: list[Document] = []
    problems: list[LoadProblem] = []
    entries = _entries(paths)
    for path, shown, reason in entries:
        if reason:
            problems.append(LoadProblem(shown, None, reason, template=False, skipped=True))
            continue
        # The index `generate --out` writes is read within its own budget (a thousand pools
        # are 1.3 MB, past lint's 1 MiB), and only when it starts as the tool writes it.
        index = Path(shown).name == INDEX
        try:
            text = read_text(path, kind=InputKind.OUTPUT_RECORD if index else InputKind.LINT)
            if index and not text.startswith(INDEX_HEADER):
                index = False
                check_size(text, InputKind.LINT)
        except (InputTooLargeError, NotTextError) as err:
            # Like a bomb, a hostile file is a finding for that file; the others are still read.
            fix = (
                "raise the limit with --max-input-size if the file is meant to be that large"
                if isinstance(err, InputTooLargeError)
                else "save the file as UTF-8 text"
            )
            reason = str(err.strerror)
            problems.append(LoadProblem(shown, None, reason, template=False, unread=True, fix=fix))
            continue
        except OSError as err:
            raise LintInputError(f"{shown}: {read_problem(err)}") from None
        if shown.endswith(_SCRIPT_SUFFIX):
            documents.append(Document(shown, 0, None, {}, text, script=True))
            continue
        if shown.endswith(_HCL_SUFFIX):
            if hcl_line := _hcl_talos_line(text):
                problems.append(LoadProblem(shown, hcl_line, "", template=False, hcl=True))
            continue
        relevant = may_hold_lint_object(text) or is_schematic_file(shown)
        try:
            if relevant:
                nodes = node_budget(InputKind.OUTPUT_RECORD) if index else None
                documents.extend(parse_yaml(text, shown, only_read=True, max_nodes=nodes))
            else:
                # Nothing in it is read: only whether it parses matters (a TS191 or TS003 note).
                check_syntax(text)
        except yaml.YAMLError as err:
            problems.append(_problem(shown, text, err, relevant))
    return documents, problems, sum(1 for _, _, reason in entries if not reason)


def _hcl_talos_line(text: str) -> int | None:
    """The line of Terraform HCL that names a Talos schematic (the resource first, else the
    first extension); None when it names none (a Terraform file of anything else)."""
    lines = text.splitlines()
    for word in _HCL_TALOS_WORDS:
        for number, line in enumerate(lines, 1):
            if word in line:
                return number
    return None


def walk(value: Any, path: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    """Every (path, value) below ``value``, depth first, the value itself first."""
    yield path, value
    if isinstance(value, dict):
        for key, child in value.items():
            yield from walk(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from walk(child, (*path, index))


def strings(values: Iterable[Any]) -> list[str]:
    return [value for value in values if isinstance(value, str)]
