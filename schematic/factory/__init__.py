"""The Image Factory: the client, the only network I/O (:mod:`~schematic.factory.client`),
its extension lists cached on disk (:mod:`~schematic.factory.cache`), names checked against
them (:mod:`~schematic.factory.names`) and the lock file pinning them
(:mod:`~schematic.factory.lock`).
"""
