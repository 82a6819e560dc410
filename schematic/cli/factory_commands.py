"""`talos-schematic register, verify, extensions, versions`."""

from __future__ import annotations

from schematic.cli import app as app
