"""Shipped hardware profiles, one machine kind per YAML file.

Installed, this folder is the package data of `schematic.shipped_profiles`.
"""
