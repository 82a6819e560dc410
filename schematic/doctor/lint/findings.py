"""What `lint` reports: the Finding model and the rule registry (code, title, severity, fix,
and the long text `explain` prints).

The rules' texts are package data, ``schematic/data/lint-rules.yaml`` (its header says how codes
are numbered and what each field holds); this module reads them once, at import, and the rule
modules keep only the logic that finds them.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, StringConstraints

__all__ = ["RULES", "SEVERITIES", "Collector", "Finding", "Rule", "Severity", "rule"]

Severity = Literal["error", "warning", "note"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "note")


class Rule(BaseModel):
    """One lint rule: what it checks and how to read and fix what it finds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    code: Annotated[str, StringConstraints(pattern=r"^TS[0-9]{3}$")]
    title: str
    severity: Severity
    fix: str
    seen: str  # what the user sees
    why: str
    confirm: str
    remedy: str
    runtime: str = ""  # what a broken node shows, for the rules `triage` also diagnoses

    def explain(self) -> str:
        """The long text of `talos-schematic explain CODE`."""
        runtime = f"What a broken node shows\n{_indent(self.runtime)}\n\n" if self.runtime else ""
        return (
            f"{self.code} ({self.severity}): {self.title}\n\n"
            f"What you see\n{_indent(self.seen)}\n\n"
            f"{runtime}"
            f"Why it happens\n{_indent(self.why)}\n\n"
            f"How to confirm it\n{_indent(self.confirm)}\n\n"
            f"How to fix it\n{_indent(self.remedy)}\n"
        )


class Finding(BaseModel):
    """One problem found in one place of the input (frozen; built with keywords only, as
    pydantic models are)."""

    model_config = ConfigDict(frozen=True)

    code: str
    severity: Severity
    message: str
    fix: str
    file: str
    line: int | None = None
    object: str = ""  # the pool or object it concerns, e.g. "tenant-a-gpu"

    @property
    def sort_key(self) -> tuple[str, int, str, str]:
        return (self.file, self.line or 0, self.code, self.message)


def _indent(text: str) -> str:
    return "\n".join(f"  {line}" if line else "" for line in text.strip().splitlines())


RULES_FILE = "lint-rules.yaml"


def _load_rules() -> dict[str, Rule]:
    """The rules of ``schematic/data/lint-rules.yaml``, by code, in the file's order."""
    from importlib import resources

    from schematic.safe_yaml import load

    entries = load(resources.files("schematic.data").joinpath(RULES_FILE).read_text("utf-8"))
    rules: dict[str, Rule] = {}
    for entry in entries:
        known = Rule.model_validate(entry)
        if known.code in rules:
            raise ValueError(f"{RULES_FILE}: {known.code} is written twice")
        rules[known.code] = known
    return rules


RULES: dict[str, Rule] = _load_rules()


def rule(code: str) -> Rule:
    """The rule with this code (KeyError for an unknown code)."""
    return RULES[code]


class Collector:
    """Gathers findings, once per (code, file, line, object, message)."""

    def __init__(self) -> None:
        self._found: dict[tuple[str, str, int | None, str, str], Finding] = {}
        self._once: set[str] = set()

    def add(
        self,
        code: str,
        *,
        message: str,
        file: str,
        line: int | None,
        obj: str = "",
        fix: str | None = None,
        certain: bool = True,
    ) -> None:
        """Record a finding; ``fix`` replaces the rule's one-line fix (e.g. per chart).
        ``certain=False`` makes an error rule's finding a warning: the inputs show the failure
        only if something they do not say holds (e.g. that the node has an NVIDIA GPU)."""
        known = RULES[code]
        severity: Severity = known.severity
        if not certain and severity == "error":
            severity = "warning"
        key = (code, file, line, obj, message)
        self._found.setdefault(
            key,
            Finding(
                code=code,
                severity=severity,
                message=message,
                fix=fix or known.fix,
                file=file,
                line=line,
                object=obj,
            ),
        )

    def first(self, key: str) -> bool:
        """True the first time ``key`` is seen: for findings made once per schematic ID."""
        if key in self._once:
            return False
        self._once.add(key)
        return True

    @property
    def findings(self) -> list[Finding]:
        return sorted(self._found.values(), key=lambda f: f.sort_key)
