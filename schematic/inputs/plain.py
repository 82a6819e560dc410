"""The fast readers' primitives: a value of the usual shape, or "ask the model".

Each takes what YAML gave and returns it typed, or raises :class:`UnusualShapeError`, on which
the reader hands the whole document to the pydantic models (:mod:`schematic.inputs.documents`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["UnusualShapeError", "plain_choice", "plain_keys", "plain_text", "plain_texts"]


class UnusualShapeError(Exception):
    """The fast reader's "ask the model": an input outside the shapes it reads itself."""


def plain_text(value: object) -> str:
    if type(value) is not str:
        raise UnusualShapeError
    return value


def plain_texts(value: object) -> tuple[str, ...]:
    if type(value) is not list or any(type(item) is not str for item in value):
        raise UnusualShapeError
    return tuple(value)


def plain_choice(value: object, choices: tuple[str, ...]) -> Any:
    if type(value) is not str or value not in choices:
        raise UnusualShapeError
    return value


def plain_keys(data: object, allowed: frozenset[str]) -> dict[str, Any]:
    if type(data) is not dict or not allowed.issuperset(data):
        raise UnusualShapeError
    return data
