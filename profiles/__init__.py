"""Shipped hardware profiles, one machine kind per YAML file (package data of `schematic.shipped_profiles`)."""
