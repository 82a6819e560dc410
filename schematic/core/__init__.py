"""The schematic ID core: a schematic body decoded, marshalled and hashed as the factory does.

:mod:`~schematic.core.goscalar` (what a plain YAML scalar means to go-yaml),
:mod:`~schematic.core.decode` (the strict decoder and the ID), :mod:`~schematic.core.canonical`
(the marshaller), :mod:`~schematic.core.model` (the schematic as values) and
:mod:`~schematic.core.stamped` (the owner stamp). Imports only the base modules.
"""
