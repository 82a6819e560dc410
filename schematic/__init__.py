"""talos-schematic: Talos Image Factory schematics and Cozystack pool values for GPU nodes."""

__version__ = "0.1.0"
