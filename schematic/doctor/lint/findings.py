"""What `lint` reports: the Finding model and the Collector the rule modules add to. The rules'
texts (code, title, severity, fix, `explain`'s long text) are :mod:`schematic.doctor.rules`,
which both doctors share; the rule modules keep only the logic that finds them.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from schematic.doctor.rules import RULES, SEVERITIES, Rule, Severity, rule

__all__ = ["RULES", "SEVERITIES", "Collector", "Finding", "Rule", "Severity", "rule"]


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
