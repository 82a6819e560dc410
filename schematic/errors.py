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

import enum
import re

__all__ = [
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
    "printable",
]


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
        where = source
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
    """Output that cannot be written where asked."""


class FactoryError(TalosSchematicError):
    """An Image Factory request that failed; names the factory URL and the pool or file."""


class TriageInputError(TalosSchematicError):
    """An input of `triage` that cannot be read: missing, too large, or nested too deeply."""


# Control characters other than line breaks and tabs, C1 included: a NUL, an escape sequence that
# would recolour or rewrite the terminal (ESC, or CSI as one byte), a carriage return that would
# hide the start of the line.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with control characters written as escapes (``\\x00``, ``\\r``, ``\\x1b``): how
    every message and every string a server sent is shown."""
    return _CONTROL.sub(lambda found: repr(found.group())[1:-1], text)
