"""`talos-schematic gpu`."""

from __future__ import annotations

from schematic.cli import app as app
