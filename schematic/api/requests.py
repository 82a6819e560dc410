"""What the library is asked and what it answers: ``Request`` (``generate`` and ``check``),
``UpgradeRequest`` and ``Result``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from schematic.doctor.lint import LintReport
    from schematic.messages import Message
    from schematic.output.disk import Drift
    from schematic.output.outdir import Written
    from schematic.plan.charts import ChartFit
    from schematic.plan.cluster import ClusterPlan
    from schematic.plan.upgrade import UpgradeReport

__all__ = ["Detail", "Request", "Result", "UpgradeRequest"]


@dataclass(frozen=True)
class Request:
    """What ``generate`` or ``check`` is asked; ``out`` None: ``generate`` renders one kind."""

    cluster_file: Path
    out: Path | None = None
    kinds: tuple[str, ...] = ()  # () writes the default kinds, or renders cozystack
    pools: tuple[str, ...] = ()  # () is every pool
    chart: str | None = None
    layout: str | None = None
    allow_ignored_keys: bool = False
    profiles: tuple[Path, ...] = ()
    register: bool = False
    live_catalogue: bool = False
    factory: str | None = None
    force: bool = False
    progress: Callable[[int, int], None] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class UpgradeRequest:
    """What ``upgrade`` is asked: CLUSTER at ``to`` against ``since`` (or the ``base`` file)."""

    cluster_file: Path
    to: str | None = None
    since: str | None = None
    base: Path | None = None
    pools: tuple[str, ...] = ()
    profiles: tuple[Path, ...] = ()
    live_catalogue: bool = False
    factory: str | None = None


Detail = TypeVar("Detail", "Written | None", "Drift", "UpgradeReport", "LintReport", "ClusterPlan")


@dataclass(frozen=True)
class Result(Generic[Detail]):
    """``status`` 0: done; 3: ``check`` found drift or ``upgrade`` a pool that would break.
    ``detail``: generate's Written (None when printing), check's Drift, upgrade's
    UpgradeReport; ``plan`` and ``fit``: generate's and check's; ``request``: check's, as run."""

    detail: Detail
    status: int = 0
    text: str = ""
    files: Mapping[str, bytes] = field(default_factory=dict)
    messages: tuple[Message, ...] = ()
    lock: str | None = None
    plan: ClusterPlan | None = None
    fit: ChartFit | None = None
    request: Request | None = None
