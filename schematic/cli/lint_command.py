"""`talos-schematic lint, explain`."""

from __future__ import annotations

from schematic.cli import app as app
