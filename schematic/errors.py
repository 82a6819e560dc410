"""The errors talos-schematic raises for input a user can fix.

Every error a user can act on derives from :class:`TalosSchematicError`; the CLI prints its
message (one line or a few, never a traceback) to stderr and exits with its ``exit_code``.

    TalosSchematicError                 any user-fixable failure (exit 1)
    ├── SchematicError                  a schematic the Image Factory would reject (HTTP 400)
    ├── ProfileError                    a hardware profile that does not validate or is not found
    ├── ClusterFileError                a cluster file that does not validate (file, pool, key)
    ├── CatalogError                    an unknown Talos version or extension name
    ├── NvidiaError                     GPUs no NVIDIA driver on that Talos can drive as asked
    │   └── UnknownDeviceError          a PCI ID or name not in the device table
    ├── DetectError                     a hardware dump that cannot be parsed
    ├── LintInputError                  a file given to `lint` that cannot be read as YAML
    ├── OutputError                     output that cannot be written
    └── FactoryError                    the Image Factory could not be reached or answered wrongly
"""

from __future__ import annotations

__all__ = [
    "CatalogError",
    "ClusterFileError",
    "DetectError",
    "FactoryError",
    "LintInputError",
    "NvidiaError",
    "OutputError",
    "ProfileError",
    "SchematicError",
    "TalosSchematicError",
    "UnknownDeviceError",
]


class TalosSchematicError(Exception):
    """Base of every user-fixable failure; ``str(err)`` is the complete message."""

    exit_code = 1


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
    """A cluster file that does not validate; the message names the file, pool and key."""


class CatalogError(TalosSchematicError):
    """An unknown Talos version or an extension name that version does not offer."""


class NvidiaError(TalosSchematicError):
    """GPUs that no flavour or tier of the NVIDIA driver can drive as requested."""


class UnknownDeviceError(NvidiaError):
    """A PCI device ID or GPU name that is not in the device table."""


class DetectError(TalosSchematicError):
    """A hardware dump (lspci, talosctl) that cannot be parsed."""


class LintInputError(TalosSchematicError):
    """A path given to `lint` that cannot be read."""


class OutputError(TalosSchematicError):
    """Output that cannot be written where asked."""


class FactoryError(TalosSchematicError):
    """An Image Factory request that failed; names the factory URL and the pool or file."""
