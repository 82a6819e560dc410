"""Bodies a factory stamped: the offline schematic with an ``owner`` added, and nothing else.

An Enterprise Image Factory stores each schematic with the owner of the request, so its ID is
not the offline one. That is the one change the tool accepts in a factory's answer; any other
(a field dropped, an extension renamed) would make the generated values point at a schematic
that is not the one the cluster file asks for.
"""

from __future__ import annotations

from schematic.core.canonical import sha256_hex
from schematic.core.decode import canonical_schematic, decode_fields
from schematic.errors import TalosSchematicError

__all__ = ["owner_added", "recorded_stamped_body"]


def owner_added(stored: str, sent: str) -> str | None:
    """The ``owner`` that ``stored`` adds to ``sent``, when that is all it changes; else None.

    An owner ``sent`` had and ``stored`` replaces is a change too: without the stored owner,
    the bodies differ by the sent one.
    """
    try:
        stored_fields = decode_fields(stored, "factory answer")
        sent_fields = decode_fields(sent, "sent body")
    except TalosSchematicError:
        return None
    owner = stored_fields.pop("owner", "")
    if not owner:
        return None
    if canonical_schematic(stored_fields) != canonical_schematic(sent_fields):
        return None
    return str(owner)


def recorded_stamped_body(body: str, stamped_id: str, offline_id: str) -> bool:
    """Whether ``body``, recorded by an earlier registration, is still a stamped schematic.

    It must hash to the factory's ``stamped_id``, carry an owner, and without that owner be
    the schematic whose offline ID is ``offline_id``.
    """
    if sha256_hex(body) != stamped_id:
        return False
    try:
        fields = decode_fields(body, "recorded schematic")
    except TalosSchematicError:
        return False
    if not fields.pop("owner", ""):
        return False
    return sha256_hex(canonical_schematic(fields)) == offline_id
