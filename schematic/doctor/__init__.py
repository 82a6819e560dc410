"""The doctor: what users already have, checked (:mod:`~schematic.doctor.lint`), hardware
dumps turned into profiles (:mod:`~schematic.doctor.detect`), and a broken cluster's evidence
named (:mod:`~schematic.doctor.triage`).
"""
