"""The resolver's shortcut for a whole list of plain names."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from schematic.goscalar import all_read_as_strings, reads_as_string

# Names that read as strings and names that do not, with every first character the shortcut
# treats differently: the YAML 1.1 letters, digits, signs, '.', '~' and the empty name.
_NAMES = st.one_of(
    st.sampled_from(
        [
            "siderolabs/drbd",
            "console=ttyS0",
            "nvidia",
            "no",
            "null",
            "~",
            "",
            "1",
            "0x1F",
            "+.inf",
            ".5",
            "2001-12-14",
            "true",
            "on",
            "yes",
            "Off",
            "1_000",
            "-",
            "_x",
        ]
    ),
    st.text(alphabet="abnyT01.+-~/=_:", max_size=6),
)


@given(st.lists(_NAMES, max_size=8))
def test_the_shortcut_agrees_with_the_resolver_name_by_name(names: list[str]) -> None:
    assert all_read_as_strings(names) is all(map(reads_as_string, names))


def test_the_shortcut_answers_the_usual_lists_and_the_exceptions() -> None:
    assert all_read_as_strings(["siderolabs/drbd", "console=ttyS0"])
    assert all_read_as_strings([])
    # A first character that leaves the answer open is resolved: strings stay strings.
    assert all_read_as_strings(["nvidia", "talos.platform=metal", "off-peak"])
    assert not all_read_as_strings(["siderolabs/drbd", "10"])
    assert not all_read_as_strings(["siderolabs/drbd", ""])
    assert not all_read_as_strings(["null", "siderolabs/drbd"])
