"""The lint input formats of other tools: one row each, how a document is recognised and
which reader turns it into pools.

Everything else ``lint`` reads (Kubernetes objects, Cozystack values, Talos machine configs,
schematic files) is sorted by :func:`schematic.doctor.lint.inventory.build_inventory`; a tool's
file is recognised here, by its content, and read by its row's reader, in the table's order.
An output kind names the row that reads its file back (``lint_format`` in
:data:`schematic.output.render.kinds.OUTPUT_KINDS`). Adding a format is adding a row
(``docs/architecture.md`` lists the steps).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from schematic.doctor.lint.inventory import Inventory, build_inventory
from schematic.doctor.lint.loader import Document
from schematic.doctor.lint.omni import add_omni_pools, is_omni_template
from schematic.doctor.lint.talhelper import (
    add_talhelper_fragment_pool,
    add_talhelper_pools,
    is_talconfig,
    is_talhelper_fragment,
)
from schematic.doctor.lint.terraform import add_terraform_pools, is_terraform_json
from schematic.doctor.lint.topf import add_topf_pools, is_topf_config

__all__ = ["LINT_FORMATS", "LintFormat", "format_named", "read_tool_formats"]

Reader = Callable[[Sequence[Document], Inventory], None]


@dataclass(frozen=True, kw_only=True)
class LintFormat:
    """One tool's input format. ``recognise``: whether a document (its parsed value) is one;
    ``read``: adds the pools of all such documents (in input order) to the inventory;
    ``own``: the documents are this format's alone, kept from the Kubernetes and Cozystack
    sorting (whose keys they would be mistaken for)."""

    name: str
    recognise: Callable[[Any], bool]
    read: Reader
    own: bool = False


def _each(
    add: Callable[[Document, Inventory], None],
) -> Callable[[Sequence[Document], Inventory], None]:
    def read(documents: Sequence[Document], inventory: Inventory) -> None:
        for document in documents:
            add(document, inventory)

    return read


LINT_FORMATS: tuple[LintFormat, ...] = (
    LintFormat(name="talconfig", recognise=is_talconfig, read=_each(add_talhelper_pools)),
    # A fragment's kernelModules are not Cozystack values: only talhelper reads it.
    LintFormat(
        name="talhelper-fragment",
        recognise=is_talhelper_fragment,
        read=_each(add_talhelper_fragment_pool),
        own=True,
    ),
    # topf.yaml, with the patch folders and schematic files it names.
    LintFormat(name="topf", recognise=is_topf_config, read=_each(add_topf_pools), own=True),
    LintFormat(
        name="omni-template",
        recognise=is_omni_template,
        read=lambda documents, inventory: add_omni_pools(list(documents), inventory),
    ),
    LintFormat(name="terraform-json", recognise=is_terraform_json, read=_each(add_terraform_pools)),
)

_BY_NAME = {row.name: row for row in LINT_FORMATS}


def format_named(name: str) -> LintFormat:
    """The row of ``name`` (KeyError for a name no row has)."""
    return _BY_NAME[name]


def read_tool_formats(documents: Sequence[Document]) -> Inventory:
    """The inventory of ``documents``: the Kubernetes and Cozystack sorting of all but the
    documents a format owns, then each format's pools, in the table's order."""
    found = {
        row.name: [doc for doc in documents if row.recognise(doc.data)] for row in LINT_FORMATS
    }
    owned = {id(doc) for row in LINT_FORMATS if row.own for doc in found[row.name]}
    inventory = build_inventory([doc for doc in documents if id(doc) not in owned])
    for row in LINT_FORMATS:
        if found[row.name]:
            row.read(found[row.name], inventory)
    return inventory
