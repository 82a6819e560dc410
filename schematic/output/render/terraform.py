"""A pool as Terraform JSON for the siderolabs/talos provider.

One ``*.tf.json`` file per pool (Terraform reads JSON configuration from files so named),
declaring, under one name ``talos_pool_<pool>`` (``-`` becomes ``_``):

- ``resource.talos_image_factory_schematic``: the pool's exact schematic (its ``schematic``
  attribute, the factory's own text), which registers it with the provider's factory; a
  postcondition holds the ID the factory answers to the one computed here, so an installer
  reference built from the offline ID cannot point at another schematic;
- ``locals``: the schematic ID computed offline, known at plan time (a schematic edited in
  place changes the resource's ``id`` only at apply), the installer and boot image references,
  the GPUs the pool was planned for, its Talos release, and ``config_patches``: the pool's
  machine-config patch (:mod:`schematic.output.render.machineconfig`), one YAML document per item,
  for ``talos_machine_configuration_apply``'s ``config_patches``;
- ``output``: the same object, for the root module that uses the pool's directory as a module
  (``module "gpu" { source = "./<out>/gpu" }``, then ``module.gpu.talos_pool_gpu``);
- ``terraform.required_providers``: the provider's source, which a module must name (a bare
  ``talos`` would be looked up as ``hashicorp/talos``).

Every string the tool writes is a literal: Terraform reads ``${`` and ``%{`` in JSON strings as
template sequences, so they are escaped (``$${``, ``%%{``).

:func:`module_usage` is the HCL a user writes in their own root module to use a pool's folder:
the module block and a ``talos_machine_configuration_apply`` taking its ``config_patches``,
the provider's other arguments named as in its own example
(siderolabs/terraform-provider-talos ``docs/resources/machine_configuration_apply.md`` at
6d1a91c4: ``talos_machine_secrets.this``, ``data.talos_machine_configuration.this``).
"""

from __future__ import annotations

import json
from typing import Any

from schematic.output.render import yamltext
from schematic.output.render.machineconfig import machine_config_patch
from schematic.plan.cluster import PoolPlan

__all__ = [
    "PROVIDER_SOURCE",
    "SCHEMATIC_RESOURCE",
    "module_usage",
    "terraform_json",
    "terraform_name",
]

SCHEMATIC_RESOURCE = "talos_image_factory_schematic"
PROVIDER_SOURCE = "siderolabs/talos"


def terraform_name(pool: str) -> str:
    """The name a pool's local value, resource and output share (pool names are DNS labels:
    ``-`` is the one character to change, and no two pools meet in one name)."""
    return "talos_pool_" + pool.replace("-", "_")


# What the provider's example calls the cluster's secrets and a node's generated config: the
# user's own objects, named here only so that the block reads whole.
SECRETS = "talos_machine_secrets.this"
MACHINE_CONFIGURATION = "data.talos_machine_configuration.this"
_APPLY_RESOURCE = "talos_machine_configuration_apply"


def module_usage(pool: str, folder: str) -> str:
    """The HCL that uses the pool's ``folder`` (a module source path) from a root module:
    its module block, and each node of the pool configured with the pool's patches."""
    name = terraform_name(pool)
    return (
        f'module "{name}" {{\n'
        f"  source = {json.dumps(folder)}\n"
        "}\n\n"
        f'resource "{_APPLY_RESOURCE}" "{name}" {{\n'
        f'  for_each                    = toset(["NODE"]) # the addresses of pool {pool}\'s nodes\n'
        f"  client_configuration        = {SECRETS}.client_configuration\n"
        f"  machine_configuration_input = {MACHINE_CONFIGURATION}.machine_configuration\n"
        "  node                        = each.key\n"
        f"  config_patches              = module.{name}.{name}.config_patches\n"
        "}\n"
    )


def _literal(text: str) -> str:
    return text.replace("${", "$${").replace("%{", "%%{")


def terraform_json(pool: PoolPlan) -> str:
    """The Terraform JSON of ``pool``."""
    name = terraform_name(pool.name)
    value = {
        "schematic_id": pool.schematic_id,
        "talos_version": pool.talos.version,
        "installer_image": _literal(pool.references.installer),
        "boot_image": _literal(pool.references.boot_image),
        "gpus": list(pool.gpu_resources),
        "config_patches": [_literal(yamltext.dump(d)) for d in machine_config_patch(pool)],
    }
    schematic: dict[str, Any] = {
        "schematic": _literal(pool.posted_canonical),
        "lifecycle": {
            "postcondition": [
                {
                    "condition": f"${{self.id == local.{name}.schematic_id}}",
                    "error_message": (
                        f"The factory answered another ID for pool {pool.name}'s schematic than "
                        "talos-schematic computed; regenerate with --register against it."
                    ),
                }
            ]
        },
    }
    document = {
        "//": (
            f"talos-schematic: pool {pool.name} (Talos {pool.talos.version}), schematic "
            f"{pool.schematic_id}. As a module, module.<name>.{name} holds the schematic ID, "
            "the images and the config_patches for talos_machine_configuration_apply."
        ),
        "terraform": {"required_providers": {"talos": {"source": PROVIDER_SOURCE}}},
        "locals": {name: value},
        "resource": {SCHEMATIC_RESOURCE: {name: schematic}},
        "output": {
            name: {
                "description": f"Pool {pool.name}: schematic ID, images, config patches.",
                "value": f"${{local.{name}}}",
            }
        },
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
