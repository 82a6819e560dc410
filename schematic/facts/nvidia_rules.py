"""NVIDIA rules that change with the Talos release or the driver branch: package data.

``data/nvidia-rules.tsv`` holds one row per (rule, range): the GB10 flavour and kernel
arguments, the parameter older open modules need for GeForce and workstation GPUs, the modules
the fabric manager needs on NVLink-5, and which NVIDIA extensions a release offers. Planning
looks a release up once (:func:`rules_for`) and the decision in :mod:`schematic.facts.nvidia`
reads the answers, so a new release is a new row.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from typing import Literal

from schematic.errors import CatalogError
from schematic.facts.talos import TalosVersion, driver_key

__all__ = [
    "RULES_FILE",
    "ReleaseRules",
    "RuleAnswer",
    "RuleRow",
    "driver_rule",
    "parse_rules",
    "release_rule",
    "reviewed_through",
    "rules_for",
    "rules_table",
]

RULES_FILE = "nvidia-rules.tsv"
_COLUMNS = ("scope", "from", "to", "rule", "value", "evidence", "note")
_RULES = frozenset(
    {
        "gb10-flavour",
        "gb10-kernel-args",
        "gb10-cuda",
        "gds-module",
        "open-unsupported-gpus",
        "nvlink5-kernel-modules",
        "extension",
    }
)


@dataclass(frozen=True)
class RuleRow:
    """One row: ``rule`` answers ``value`` for Talos releases or drivers ``first``..``last``."""

    scope: Literal["talos", "driver"]
    first: str
    last: str  # "" only for an open-ended driver rule
    rule: str
    value: str
    conflicting: bool
    note: str

    def covers_release(self, release: TalosVersion) -> bool:
        return TalosVersion.parse(self.first) <= release <= TalosVersion.parse(self.last)

    def covers_driver(self, driver: str) -> bool:
        key = driver_key(driver)
        return driver_key(self.first) <= key and (not self.last or key <= driver_key(self.last))


@dataclass(frozen=True)
class RuleAnswer:
    """A rule's row for a release or driver, and why the row is only an estimate if it is."""

    row: RuleRow
    fallback: str = ""  # set when the release is newer than the rows of the rule

    @property
    def value(self) -> str:
        return self.row.value


def parse_rules(text: str, source: str = RULES_FILE) -> tuple[RuleRow, ...]:
    """The rows of a rules table; ValueError naming the line for a malformed one."""
    rows: list[RuleRow] = []
    header_seen = False
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cells = line.split("\t")
        if not header_seen:
            if tuple(cells) != _COLUMNS:
                raise ValueError(f"{source}:{number}: header must be {' '.join(_COLUMNS)}")
            header_seen = True
            continue
        if len(cells) != len(_COLUMNS):
            raise ValueError(f"{source}:{number}: {len(cells)} cells, not {len(_COLUMNS)}")
        scope, first, last, rule, value, evidence, note = cells
        if rule not in _RULES:
            raise ValueError(f"{source}:{number}: unknown rule {rule!r}")
        if evidence not in ("agreed", "conflicting"):
            raise ValueError(f"{source}:{number}: evidence must be agreed or conflicting")
        try:
            if scope == "talos":
                if TalosVersion.parse(first) > TalosVersion.parse(last):
                    raise ValueError("from is after to")
            elif scope == "driver":
                if last and driver_key(first) > driver_key(last):
                    raise ValueError("from is after to")
            else:
                raise ValueError("scope must be talos or driver")
        except (ValueError, CatalogError) as err:
            raise ValueError(f"{source}:{number}: {err}") from None
        rows.append(
            RuleRow(
                scope="talos" if scope == "talos" else "driver",
                first=first,
                last=last,
                rule=rule,
                value=value,
                conflicting=evidence == "conflicting",
                note=note,
            )
        )
    return tuple(rows)


@functools.cache
def rules_table() -> tuple[RuleRow, ...]:
    """The packaged rules, in file order."""
    text = resources.files("schematic.data").joinpath(RULES_FILE).read_text("utf-8")
    return parse_rules(text)


def reviewed_through() -> TalosVersion:
    """The newest Talos release the table's rows name."""
    return max(TalosVersion.parse(row.last) for row in rules_table() if row.scope == "talos")


def release_rule(
    rule: str, talos: str | TalosVersion, *, value: str | None = None
) -> RuleAnswer | None:
    """The row of ``rule`` (with ``value``, if given) for a Talos release; None if none applies.

    A release newer than the whole table uses the rule's newest row, with a note saying so; a
    newer patch of a minor line the rows stop in uses that line's row. A pre-release is looked
    up as the release it leads to.
    """
    release = TalosVersion.of(talos).release
    rows = [
        row
        for row in rules_table()
        if row.scope == "talos" and row.rule == rule and (value is None or row.value == value)
    ]
    for row in rows:
        if row.covers_release(release):
            return RuleAnswer(row)
    if not rows:
        return None
    newest = max(rows, key=lambda row: TalosVersion.parse(row.last))
    through = reviewed_through()
    if release > through:
        return RuleAnswer(
            newest,
            f"Talos {release} is newer than the NVIDIA rules table (reviewed through "
            f"{through}); assuming its {rule} rule for {newest.last} still holds",
        )
    same_line = [
        row
        for row in rows
        if TalosVersion.parse(row.last).minor_line == release.minor_line
        and TalosVersion.parse(row.last) < release
    ]
    if same_line:
        row = max(same_line, key=lambda row: TalosVersion.parse(row.last))
        return RuleAnswer(
            row,
            f"Talos {release} is newer than the NVIDIA rules table's last {row.last} row of "
            f"{rule}; assuming it still holds",
        )
    return None


@dataclass(frozen=True)
class ReleaseRules:
    """The table's answers for one Talos release, looked up once: what an NVIDIA decision of
    that release reads. An answer is None where the rule has no row for the release."""

    release: TalosVersion
    gb10_flavour: RuleAnswer | None
    gb10_kernel_args: RuleAnswer | None
    gb10_cuda: RuleAnswer | None
    gds_module: RuleAnswer | None
    nvlink5_kernel_modules: RuleAnswer | None
    # The NVIDIA extension families (base names) the release offers.
    extensions: frozenset[str]

    def offers(self, base: str) -> bool:
        """Whether the release offers an NVIDIA extension family (base name, no tier)."""
        return base in self.extensions


def rules_for(talos: TalosVersion) -> ReleaseRules:
    """Every release rule's answer for a Talos release (a pre-release as the release it leads
    to). Planning asks once per release and keeps the answers in its ``Release``."""
    return _answers(talos.release, rules_table())


# Keyed on the table as well as the release: an edited table gets its own answers.
@functools.lru_cache(maxsize=256)
def _answers(release: TalosVersion, table: tuple[RuleRow, ...]) -> ReleaseRules:
    families = sorted({row.value for row in table if row.rule == "extension"})
    return ReleaseRules(
        release=release,
        gb10_flavour=release_rule("gb10-flavour", release),
        gb10_kernel_args=release_rule("gb10-kernel-args", release),
        gb10_cuda=release_rule("gb10-cuda", release),
        gds_module=release_rule("gds-module", release),
        nvlink5_kernel_modules=release_rule("nvlink5-kernel-modules", release),
        extensions=frozenset(
            base for base in families if release_rule("extension", release, value=base) is not None
        ),
    )


def driver_rule(rule: str, driver: str) -> RuleAnswer | None:
    """The row of ``rule`` that covers an NVIDIA driver version; None if none does."""
    for row in rules_table():
        if row.scope == "driver" and row.rule == rule and row.covers_driver(driver):
            return RuleAnswer(row)
    return None
