"""A factory's stamped body is accepted only as the offline schematic with an owner added."""

from __future__ import annotations

import hashlib

import pytest

from schematic.core.stamped import owner_added, recorded_stamped_body

SENT = (
    "customization:\n    systemExtensions:\n        officialExtensions:\n"
    "            - siderolabs/qemu-guest-agent\n"
)
OFFLINE_ID = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
STAMPED = "owner: alice@example.com\n" + SENT


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_an_added_owner_is_the_only_change_accepted() -> None:
    assert owner_added(STAMPED, SENT) == "alice@example.com"
    # Written another way (flow style, other quoting), the same schematic with an owner.
    flow = "{owner: 'alice@example.com', customization: {systemExtensions: "
    flow += '{officialExtensions: ["siderolabs/qemu-guest-agent"]}}}'
    assert owner_added(flow, SENT) == "alice@example.com"


@pytest.mark.parametrize(
    ("stored", "sent"),
    [
        (SENT, SENT),  # no owner
        ("owner: ''\n" + SENT, SENT),  # an empty owner is none
        ("owner: a\ncustomization: {}\n", SENT),  # an owner, and the extension gone
        (STAMPED + "    bootloader: grub\n", SENT),  # an owner, and a field more
        (STAMPED, "owner: bob@example.com\n" + SENT),  # an owner replaced, not added
        ("owner: [a]\n" + SENT, SENT),  # not a body the factory itself would accept
        ("customization: {systemExtensions: 1}\n", SENT),
    ],
)
def test_any_other_difference_is_refused(stored: str, sent: str) -> None:
    assert owner_added(stored, sent) is None


def test_a_recorded_body_counts_while_it_is_the_stamped_schematic() -> None:
    assert recorded_stamped_body(STAMPED, sha256(STAMPED), OFFLINE_ID)
    # Edited since: no longer the factory's ID.
    edited = STAMPED.replace("alice", "mallory")
    assert not recorded_stamped_body(edited, sha256(STAMPED), OFFLINE_ID)
    # Without its owner another schematic than the offline one.
    other = "owner: alice@example.com\ncustomization: {}\n"
    assert not recorded_stamped_body(other, sha256(other), OFFLINE_ID)
    # No owner at all: nothing was stamped, whatever the IDs say.
    assert not recorded_stamped_body(SENT, sha256(SENT), OFFLINE_ID)
    assert not recorded_stamped_body("owner: [", sha256("owner: ["), OFFLINE_ID)
