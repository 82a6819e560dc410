"""The errors talos-schematic raises for input a user can fix.

Every error a user can act on derives from :class:`TalosSchematicError`; the CLI prints its
message (one line or a few, never a traceback) to stderr and exits with its ``exit_code``.

    TalosSchematicError                 any user-fixable failure (exit 1)
    ├── UsageError                      a request that contradicts itself or its input (exit 2)
    ├── SchematicError                  a schematic the Image Factory would reject (HTTP 400)
    ├── ProfileError                    a hardware profile that does not validate or is not found
    ├── ClusterFileError                a cluster file that does not validate (file, pool, key)
    ├── CatalogError                    an unknown Talos version or extension name
    ├── NvidiaError                     GPUs no NVIDIA driver on that Talos can drive as asked
    │   └── UnknownDeviceError          a PCI ID or name not in the device table
    │                                   (each carries a GpuRefusal: why, for callers to act on)
    ├── DetectError                     a hardware dump that cannot be parsed
    ├── LintInputError                  a file given to `lint` that cannot be read as YAML
    ├── TriageInputError                a `triage` input that cannot be read (missing, too large)
    ├── OutputError                     output that cannot be written
    └── FactoryError                    the Image Factory could not be reached or answered wrongly
"""

from __future__ import annotations

import difflib
import enum
import io
import os
import re
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

__all__ = [
    "NOTHING_JUDGED",
    "CatalogError",
    "ClusterFileError",
    "DetectError",
    "FactoryError",
    "GpuRefusal",
    "LintInputError",
    "NvidiaError",
    "OutputError",
    "ProfileError",
    "SchematicError",
    "TalosSchematicError",
    "TriageInputError",
    "UnknownDeviceError",
    "UsageError",
    "closest_names",
    "describe_os_error",
    "discard_output",
    "printable",
    "unknown_name_hint",
]

# The exit status of a run whose inputs held nothing it could judge (lint, triage): never 0,
# which says "checked and passed".
NOTHING_JUDGED = 4


class TalosSchematicError(Exception):
    """Base of every user-fixable failure; ``str(err)`` is the complete message."""

    exit_code = 1


class UsageError(TalosSchematicError):
    """A request the library cannot act on as given (an option naming a pool the file lacks,
    kinds that do not fit one stream); ``option`` names the option at fault."""

    exit_code = 2

    def __init__(self, message: str, option: str) -> None:
        super().__init__(message)
        self.option = option


class SchematicError(TalosSchematicError):
    """A schematic body the factory would refuse: names the input, the field and the line."""

    def __init__(
        self, reason: str, *, source: str = "-", path: str = "", line: int | None = None
    ) -> None:
        self.reason = reason
        self.source = source
        self.path = path
        self.line = line
        where = printable(source, one_line=True)
        if line is not None:
            where += f":{line}"
        field = f" {path}:" if path else ""
        super().__init__(f"{where}:{field} {reason}")


class ProfileError(TalosSchematicError):
    """A hardware profile that does not validate, or a profile name that is not found."""


class ClusterFileError(TalosSchematicError):
    """A cluster file that does not validate; the message names the file, pool and key.

    ``gpu_refusal`` is set when a pool's GPUs were refused (the NvidiaError's reason)."""

    def __init__(self, message: str, *, gpu_refusal: GpuRefusal | None = None) -> None:
        super().__init__(message)
        self.gpu_refusal = gpu_refusal


class CatalogError(TalosSchematicError):
    """An unknown Talos version or an extension name that version does not offer."""


class GpuRefusal(enum.Enum):
    """Why the NVIDIA decision refused a node's GPUs."""

    # A value the decision cannot take (flavour, tier, architecture, count).
    SETTING = "setting"
    # A PCI ID or GPU name not in the device table, or not NVIDIA's.
    UNKNOWN_DEVICE = "unknown-device"
    # An architecture no NVIDIA extension on any Talos drives (Kepler and older, Rubin).
    UNSUPPORTED_GPU = "unsupported-gpu"
    # No kernel-module flavour (or not the one asked for) drives every GPU of the node.
    FLAVOUR = "flavour"
    # No driver of the release (or of the tier asked for) drives every GPU of the node.
    DRIVER = "driver"
    # The release lacks an NVIDIA extension or tier the node needs or asks for.
    NOT_OFFERED = "not-offered"
    # A feature asked for (GPUDirect RDMA, nvidia_peermem) needs the open kernel modules.
    NEEDS_OPEN = "needs-open"
    # The release's NVIDIA drivers are known to neither the facts file nor the shipped table.
    UNKNOWN_RELEASE = "unknown-release"


class NvidiaError(TalosSchematicError):
    """GPUs that no flavour or tier of the NVIDIA driver can drive as requested; ``refusal``
    says why."""

    def __init__(self, message: str, refusal: GpuRefusal) -> None:
        super().__init__(message)
        self.refusal = refusal


class UnknownDeviceError(NvidiaError):
    """A PCI device ID or GPU name that is not in the device table."""

    def __init__(self, message: str) -> None:
        super().__init__(message, GpuRefusal.UNKNOWN_DEVICE)


class DetectError(TalosSchematicError):
    """A hardware dump (lspci, talosctl) that cannot be parsed."""


class LintInputError(TalosSchematicError):
    """A path given to `lint` that cannot be read."""


class OutputError(TalosSchematicError):
    """Output that cannot be written where asked.

    Each message is one line naming a path of the output directory, whose name may hold any
    character: the message is kept on its line (:func:`printable`, ``one_line``)."""

    def __init__(self, message: str) -> None:
        super().__init__(printable(message, one_line=True))


class FactoryError(TalosSchematicError):
    """An Image Factory request that failed; names the factory URL and the pool or file."""


class TriageInputError(TalosSchematicError):
    """An input of `triage` that cannot be read: missing, too large, or nested too deeply."""


# What may not reach a terminal from outside text: C0 controls other than tab and line feed (a
# NUL; ESC, which starts every escape sequence, OSC 52 clipboard writes included; a carriage
# return that hides the start of a line), DEL, the C1 controls (U+0085 to U+009F; U+009B is a
# one-byte CSI), and the bidirectional overrides, isolates and marks that make a terminal show
# text in another order than it is (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C); and
# the lone surrogates a file name that is no UTF-8 decodes to (a byte 0x9b becomes U+DC9B),
# which no UTF-8 stream can write and a C-locale stream would write as that raw byte.
_CONTROL = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
# The same, tab and line feed included: for a name that must stay on its line.
_CONTROL_OR_BREAK = re.compile(
    r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _escape(found: re.Match[str]) -> str:
    code = ord(found.group())
    # C0 controls as Python writes them (\x1b, \r, \n); the rest as \u escapes, which mean the
    # same character in a JSON or YAML string, so escaping a JSON document keeps its value.
    return repr(found.group())[1:-1] if code < 0x20 else f"\\u{code:04x}"


def printable(text: str, *, one_line: bool = False) -> str:
    """``text`` with every character that could rewrite a terminal written as a visible escape
    (``\\x1b``, ``\\r``, ``\\u009b``, ``\\u202e``): the one way outside text (evidence, file
    names, arguments, a server's answers) is shown. ``one_line`` escapes tab and line feed too,
    for a name or a value that must not break the line it stands in."""
    return (_CONTROL_OR_BREAK if one_line else _CONTROL).sub(_escape, text)


class TerminalSafeStream(io.TextIOBase):
    """A text stream that writes through :func:`printable`: whatever a command prints, no
    control character, C1 control or bidirectional override reaches the terminal raw.

    Evidence, file names, arguments and a server's answers end up in messages and reports by
    many routes; this is the one place they all pass. JSON stays exact: it holds such a
    character only inside a string, where the ``\\u`` escape written instead means the same.
    """

    def __init__(self, stream: Any) -> None:
        super().__init__()
        self.unescaped = stream

    def write(self, text: str) -> int:
        self._write_through(printable(text))
        return len(text)

    def _write_through(self, text: str) -> None:
        # The reader left (`| head -2`): the rest goes nowhere, quietly, and the command
        # runs on to its own exit status, so `lint ... | head` still exits 3 on an error.
        try:
            self.unescaped.write(text)
        except BrokenPipeError:
            discard_output(self.unescaped)

    def write_data(self, text: str) -> None:
        """An artifact (a schematic, values, a manifest): escaped like any text on a terminal,
        where it is read; written as it is to a pipe or file, where it is the data, so
        ``> file`` holds what ``--out`` writes. Data no UTF-8 file can hold is refused."""
        if self.isatty():
            self.write(text)
            return
        if _SURROGATE.search(text):
            raise TalosSchematicError(
                "the output holds a character that is no UTF-8 (from a file name that is not "
                "UTF-8?): it cannot be written as it is; rename the file"
            )
        self._write_through(text)

    def flush(self) -> None:
        try:
            self.unescaped.flush()
        except BrokenPipeError:
            discard_output(self.unescaped)

    def isatty(self) -> bool:
        return bool(self.unescaped.isatty())

    def fileno(self) -> int:
        return int(self.unescaped.fileno())

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(getattr(self.unescaped, "encoding", None) or "utf-8")

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.unescaped, "errors", None)


@contextmanager
def terminal_safe_output() -> Iterator[None]:
    """stdout and stderr through :class:`TerminalSafeStream` for the duration."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = TerminalSafeStream(saved[0]), TerminalSafeStream(saved[1])
    try:
        yield
    finally:
        for guarded in (sys.stdout, sys.stderr):
            with suppress(OSError, ValueError):
                try:
                    guarded.flush()
                except BrokenPipeError:
                    discard_output(guarded)
        sys.stdout, sys.stderr = saved


def describe_os_error(err: OSError) -> str:
    """``PATH: reason`` for a failed file-system call (both paths of a rename or link)."""
    names = [str(name) for name in (err.filename, err.filename2) if name is not None]
    reason = err.strerror or str(err) or type(err).__name__
    return ": ".join([" → ".join(names), reason] if names else [reason])


def discard_output(stream: Any) -> None:
    """Point ``stream``'s descriptor at the null device: its reader left (`| head`), and what
    is still buffered, flushed at exit, must not end the run with a complaint about the pipe."""
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, stream.fileno())
    except (OSError, ValueError):  # a stream with no descriptor (a test's capture): nothing to do
        pass
    finally:
        os.close(null)


def _name_tokens(name: str) -> set[str]:
    """The runs of letters and of digits in a lowered name, a number without leading zeros:
    ``kubevirt-h100-nvl`` → kubevirt, h, 100, nvl."""
    return {run.lstrip("0") or "0" if run.isdigit() else run for run in _RUNS.findall(name)}


_RUNS = re.compile(r"[a-z]+|[0-9]+")


def closest_names(word: str, known: Iterable[str], most: int = 3) -> list[str]:
    """The known names nearest ``word``, for a "did you mean": every name of the program's
    hints comes from here.

    A name is near when difflib finds it similar or it holds every run of letters and of
    digits ``word`` has (``rtx6000`` finds ``rtx-pro-6000-blackwell-server``, too far apart
    for difflib alone). Near names are ranked by the runs they share with ``word`` first, then
    by difflib's ratio: ``kubevirt-h300`` shares kubevirt and h with ``kubevirt-h100-nvl`` but
    only kubevirt with ``kubevirt-a30``, which difflib alone ranks higher. Case is no distance.
    """
    by_lowered = {name.lower(): name for name in sorted(set(known))}
    lowered = word.lower()
    if not lowered or not by_lowered:  # a factory that lists nothing: nothing is near
        return []
    # difflib's filter first: it skips most names on cheap bounds (a run over many unknown
    # keys looks each one up).
    similar = difflib.get_close_matches(lowered, list(by_lowered), n=len(by_lowered), cutoff=0.6)
    runs = _RUNS.findall(lowered)
    holding = [name for name in by_lowered if runs and all(run in name for run in runs)]
    tokens = _name_tokens(lowered)

    def nearness(name: str) -> tuple[int, float, str]:
        shared = len(tokens & _name_tokens(name))
        return (-shared, -difflib.SequenceMatcher(None, lowered, name).ratio(), name)

    near = sorted(dict.fromkeys([*similar, *holding]), key=nearness)
    return [by_lowered[name] for name in near[:most]]


def unknown_name_hint(word: str, known: Iterable[str], lister: str) -> str:
    """``; did you mean A, B? (`LISTER` lists them all)``: what follows "no X named W" in a message,
    instead of every known name."""
    close = closest_names(word, known)
    if close:
        return f"; did you mean {', '.join(close)}? (`{lister}` lists them all)"
    return f"; `{lister}` lists them"
