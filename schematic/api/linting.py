"""``lint`` as a request to a result: the inputs named, read and checked, an Image Factory asked
only when the request names one, the codes asked to be left out left out. What to print and
when to fail is the caller's (``Result.status`` 3: a finding reached ``fail_on``; 4: the
inputs held nothing lint checks).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from schematic.api.requests import Result
from schematic.errors import (
    NOTHING_JUDGED,
    FactoryError,
    LintInputError,
    SchematicError,
    UsageError,
)

if TYPE_CHECKING:
    from schematic.doctor.lint import LintReport
    from schematic.doctor.rules import Severity
    from schematic.facts.chart_targets import ChartTarget
    from schematic.inputs.profile_values import HardwareProfile

__all__ = ["LintRequest", "lint"]


@dataclass(frozen=True, kw_only=True)
class LintRequest:
    """What ``lint`` is asked: ``config_patches`` as given (``@FILE`` or inline YAML),
    ``hardware`` a profile name or path, ``chart`` a chart target's name, ``ignore`` codes."""

    paths: tuple[str, ...] = ()
    talos: str | None = None
    hardware: str | None = None
    cozystack: str | None = None
    chart: str | None = None
    config_patches: tuple[str, ...] = ()
    factory: str | None = None
    ignore: tuple[str, ...] = ()
    fail_on: Severity = "error"


def lint(request: LintRequest) -> Result[LintReport]:
    """Lint the request's inputs; UsageError for an option that cannot be acted on,
    LintInputError for an input that cannot be read."""
    from schematic.doctor.lint import lint_paths
    from schematic.doctor.rules import RULES

    unknown = sorted(set(request.ignore) - set(RULES))
    if unknown:
        raise UsageError(
            f"unknown lint code {', '.join(unknown)}; `talos-schematic explain --list` lists them",
            "--ignore",
        )
    if not request.paths and not request.config_patches:
        raise UsageError("give at least one PATH or --config-patch", "PATH")
    patches = _read_patches(request.config_patches)
    options = _options(request)
    if request.factory is None:
        report = lint_paths(request.paths, config_patches=patches, **options)
    else:
        from schematic.core.model import Schematic
        from schematic.factory.client import FactoryClient

        with FactoryClient(request.factory) as client:

            def fetch(schematic_id: str) -> Schematic | None:
                body = client.fetch_schematic(schematic_id)
                if body is None:
                    return None
                try:
                    return Schematic.from_yaml(body, f"{client.url}/schematics/{schematic_id}")
                except SchematicError as err:
                    # Lint goes on without the factory (TS005), as when it is unreachable.
                    raise FactoryError(f"not a schematic: {err}") from None

            report = lint_paths(
                request.paths, config_patches=patches, fetch=fetch, factory=client.url, **options
            )
    report = report.without(set(request.ignore))
    if report.reaches(request.fail_on):
        return Result(report, 3)
    # Nothing checked is not a pass: a CI job pointed at the wrong folder must not go green.
    return Result(report, 0 if report.judged else NOTHING_JUDGED)


class _Options(TypedDict):
    talos: str | None
    hardware: HardwareProfile | None
    cozystack: str | None
    chart: ChartTarget | None


def _options(request: LintRequest) -> _Options:
    """The request's release, machine, Cozystack release and chart, each checked."""
    from schematic.facts.chart_targets import chart_target
    from schematic.inputs.profiles import load_profile
    from schematic.plan.gpupath import operator_release_named

    if request.cozystack is not None:
        try:
            operator_release_named(request.cozystack)
        except ValueError as err:
            raise UsageError(str(err), "--cozystack") from None
    target = None
    if request.chart is not None:
        try:
            target = chart_target(request.chart)
        except ValueError as err:
            raise UsageError(str(err), "--chart") from None
    profile = None if request.hardware is None else load_profile(request.hardware)
    return _Options(
        talos=request.talos, hardware=profile, cozystack=request.cozystack, chart=target
    )


def _read_patches(values: tuple[str, ...]) -> list[tuple[str, str]]:
    """(name, text) of each config patch: ``@FILE`` read under the input limit, else the YAML
    given inline."""
    from schematic.safe_yaml import InputKind, read_problem, read_text

    patches = []
    for number, value in enumerate(values, start=1):
        if not value.startswith("@"):
            patches.append((f"--config-patch #{number}", value))
            continue
        try:
            patches.append((value[1:], read_text(value[1:], kind=InputKind.CONFIG_PATCH)))
        except OSError as err:
            # Like a PATH that cannot be read: an input error, not a usage error.
            raise LintInputError(f"{value[1:]}: {read_problem(err)}") from None
    return patches
