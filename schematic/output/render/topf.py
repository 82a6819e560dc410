"""A pool as the files topf (postfinance/topf) reads: a node entry and a patch template.

topf (at 2a60138c) builds each node's config from ``topf.yaml`` and patch files: every
``*.yaml`` / ``*.yaml.tpl`` under ``all/``, then ``<role>/``, then ``node/<host>/``
(``pkg/config/patches.go``, ``PatchContext.Load``), each document loaded by its bundled Talos
machinery (``configpatcher.LoadPatch``; ``go.mod``: machinery v1.13.7, which has no
``KernelModuleConfig`` document). A node's ``schematicId`` may be ``@path`` to a schematic file,
relative to ``topf.yaml``: topf computes its ID (``internal/schematic/resolver.go``) and installs
``<factory>/<platform>-installer[-secureboot]/<ID>:v<talosVersion>`` (``internal/topf/node.go``),
prepended to the patches, so a later patch's ``machine.install.image`` wins
(``internal/topf/nodes.go``, ``generateNodeConfig``).

Per pool:

- :func:`topf_node`: the ``nodes:`` entry of each of the pool's nodes in ``topf.yaml``: its
  ``schematicId`` the pool's ``schematic.yaml`` as ``@path``, its ``talosVersion``, and the
  ``platform``, ``secureboot`` and ``factory`` topf's installer needs when not its defaults;
- :func:`topf_patch`: ``topf-patch.yaml.tpl``, the pool's machine-config patch with the modules
  as ``machine.kernel.modules`` (``machineconfig.patch_with_module_list``) and the installer
  only where topf's own is another image. It is a Go template guarded by the
  pool's schematic ID (``.SchematicID``, the node's resolved ID, is set before the patches are
  read): linked into ``all/``, it applies to the nodes of the pool's schematic and renders to
  comments (an empty patch, skipped) for every other node. The guard sits in YAML comments, so
  the file is also the plain patch to any YAML reader.
"""

from __future__ import annotations

from typing import Any

from schematic.output.render import yamltext
from schematic.output.render.machineconfig import patch_with_module_list
from schematic.output.render.platform_installer import derives_the_pools_installer, node_platform
from schematic.plan.cluster import PoolPlan

__all__ = [
    "DEFAULT_FACTORY",
    "TOPF_PATCH_FILE",
    "guard_line",
    "linked_patch_name",
    "topf_node",
    "topf_patch",
]

TOPF_PATCH_FILE = "topf-patch.yaml.tpl"
# topf's defaults (internal/topf/node.go): what a node entry need not say.
DEFAULT_FACTORY = "factory.talos.dev"
_DEFAULT_PLATFORM = "metal"
_END = "#{{ end }}"


def guard_line(schematic_id: str) -> str:
    """The line that opens a pool's patch: nothing below it applies to another schematic's node."""
    condition = f'if ne .SchematicID "{schematic_id}"'
    return f"#{{{{ {condition} }}}} another schematic: no patch{{{{ else }}}}"


def linked_patch_name(pool: str) -> str:
    """The name the pool's patch is linked under in topf's ``all/`` (topf reads a folder in
    lexical order; the ``.tpl`` suffix makes it render the template)."""
    return f"50-talos-schematic-{pool}.yaml.tpl"


def _factory_host(pool: PoolPlan) -> str:
    return pool.talos.image_factory_url.split("://", 1)[-1].rstrip("/")


def topf_node(pool: PoolPlan, schematic_path: str) -> dict[str, Any]:
    """A ``topf.yaml`` node entry of the pool (``host`` to fill in), its schematic read from
    ``schematic_path`` (relative to ``topf.yaml``)."""
    node: dict[str, Any] = {
        "host": "HOST",
        "role": "worker",
        "talosVersion": pool.talos.version,
        "schematicId": f"@{schematic_path}",
    }
    if node_platform(pool) != _DEFAULT_PLATFORM:
        node["platform"] = node_platform(pool)
    if pool.media.secureboot_enabled:
        node["secureboot"] = True
    if _factory_host(pool) != DEFAULT_FACTORY:
        node["factory"] = _factory_host(pool)
    return node


def patch_documents(pool: PoolPlan) -> list[dict[str, Any]]:
    """The documents of the pool's patch (what its template renders for its nodes)."""
    v1alpha1, *typed = patch_with_module_list(pool)
    machine = dict(v1alpha1["machine"])
    if not derives_the_pools_installer(pool):
        # topf's installer is <platform>-installer/<ID>: this pool upgrades with another.
        machine["install"] = {"image": pool.references.installer}
    return [*([{"machine": machine}] if machine else []), *typed]


def topf_patch(pool: PoolPlan) -> str:
    """``topf-patch.yaml.tpl`` of ``pool``."""
    lines = [
        f"# topf patch for pool {pool.name} (Talos {pool.talos.version}): link it into all/ as",
        f"# {linked_patch_name(pool.name)}. topf applies it to the nodes whose schematicId",
        f"# is schematic {pool.schematic_id}, and to no other.",
    ]
    documents = patch_documents(pool)
    if not documents:
        lines.append("# The pool's nodes need no patch beyond the installer topf writes.")
        return "\n".join(lines) + "\n"
    # Go templates read {{ anywhere: a literal one in the patch is written as an action.
    body = yamltext.dump_all(documents).replace("{{", '{{ "{{" }}')
    return "\n".join([*lines, guard_line(pool.schematic_id)]) + "\n" + body + _END + "\n"
