"""`talos-schematic generate, check`."""

from __future__ import annotations

from schematic.cli import app as app
