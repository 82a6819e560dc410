"""What a real HCL2 parser (python-hcl2) reads in Terraform text: the references it holds.

Terraform resolves a reference by its traversal (``local.a.b``, ``module.m.out``); python-hcl2
parses HCL native syntax into a tree where each traversal is one outermost
``get_attr_expr_term``. In a ``*.tf.json`` file the expressions live inside ``${ }`` template
sequences of strings; each is parsed as the value of an attribute.
"""

from __future__ import annotations

import re
from typing import Any

import hcl2
from lark import Token, Tree

__all__ = ["json_expressions", "traversals"]


def traversals(text: str) -> list[str]:
    """Every traversal in HCL ``text``, as written (``module.m.out.key``), in order."""
    found: list[str] = []

    def visit(node: Any) -> None:
        if not isinstance(node, Tree):
            return
        if str(node.data) == "get_attr_expr_term":
            tokens = node.scan_values(lambda value: isinstance(value, Token))
            found.append("".join(str(token).strip() for token in tokens))
            return
        for child in node.children:
            visit(child)

    visit(hcl2.parses_to_tree(text))
    return found


# A template sequence of a JSON string; ``$${`` is an escaped literal.
_SEQUENCE = re.compile(r"(?<!\$)\$\{(.*?)\}")


def json_expressions(document: Any) -> list[str]:
    """The expressions of every ``${ }`` sequence in the strings of a Terraform JSON document,
    each checked to parse as HCL."""
    found: list[str] = []
    if isinstance(document, dict):
        for value in document.values():
            found += json_expressions(value)
    elif isinstance(document, list):
        for value in document:
            found += json_expressions(value)
    elif isinstance(document, str):
        for expression in _SEQUENCE.findall(document):
            hcl2.parses_to_tree(f"x = {expression}\n")  # raises on what HCL cannot read
            found.append(expression)
    return found
