"""A new cluster file's text, commented for a reader starting from it (``init``)."""

from __future__ import annotations

from typing import Any

from schematic.output.render import yamltext

__all__ = ["cluster_text"]


def _indented(text: str, prefix: str = "  ") -> str:
    return "".join(f"{prefix}{line}\n" if line else "\n" for line in text.splitlines())


def _comment(text: str, prefix: str = "") -> str:
    return "".join(f"{prefix}# {line}\n" for line in text.splitlines())


def cluster_text(
    cluster: str,
    talos: str,
    chart: str | None,
    entries: list[tuple[str, dict[str, Any]]],
    namespace: str | None = None,
) -> str:
    """The commented cluster file."""
    parts = [
        _comment(
            "A talos-schematic cluster file: one schematic per pool, so the NVIDIA extensions\n"
            "land only on nodes that hold an NVIDIA GPU.\n"
            f"  talos-schematic generate THIS_FILE --out deploy/{cluster}\n"
            "Every key: talos-schematic schema cluster (a JSON Schema for editors)."
        ),
        yamltext.dump({"cluster": cluster}),
        _comment(
            "The management-cluster namespace of the tenant (its Kubernetes app): every\n"
            "generated object for the management cluster carries it."
        )
        + (
            yamltext.dump({"namespace": namespace})
            if namespace is not None
            else _comment(f"namespace: tenant-{cluster}   (init --namespace NS writes it)")
        ),
        _comment(
            "The Cozystack release (kubernetes-nodes chart) the values are for, as named by\n"
            "init --chart: v1.6 (released v1.6.x, talos.schematicID only), pr3571, osimage\n"
            "(PR #4171: osImage and kernelModules)."
        )
        + yamltext.dump({"cozystack": {"version": chart}})
        if chart is not None
        else _comment(
            "No Cozystack release: no pool is a Cozystack tenant pool. For Cozystack output add\n"
            "cozystack:\n  version: TARGET   # v1.6, main, pr3571, osimage, v1.7"
        ),
        yamltext.dump({"talos": {"version": talos}}),
        _comment(
            "imageFactoryURL: https://factory.talos.dev (default; a self-hosted factory here)",
            "  ",
        ),
        _comment(
            "NVIDIA choice for every pool (a pool's own nvidia: wins). auto: open modules\n"
            "where every GPU supports them, the tier whose driver knows every GPU."
        ),
        yamltext.dump({"nvidia": {"flavour": "auto", "tier": "auto"}}),
        "pools:\n",
    ]
    for comment, pool in entries:
        if comment:
            parts.append(_comment(comment, "  "))
        parts.append(_indented(yamltext.dump([pool])))
    return "".join(parts)
