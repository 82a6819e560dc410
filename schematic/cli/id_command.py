"""`talos-schematic id`: offline schematic IDs."""
