"""`triage --commands`: the collection's steps (``steps.STEPS``) as a shell script, for one
cluster and node.

A Talos node's OS image reads ``Talos (vX.Y.Z)`` (its ``status.nodeInfo.osImage``, as ``kubectl
get nodes -o wide`` shows it in siderolabs/extensions#893): the script runs talosctl of that
release from a pod in the tenant namespace, where the workers' addresses are reachable.
"""

from __future__ import annotations

from shlex import quote

from schematic.doctor.triage.steps import (
    PLACEHOLDER,
    STEPS,
    CommandValueError,
    Reach,
    Step,
    Target,
    placeholders,
)

__all__ = ["CommandValueError", "collection_commands"]

# What the script shows where a value was not given.
_UNKNOWN = {"cluster": "CLUSTER", "ns": "TENANT_NAMESPACE", "node": "NODE"}
_WINDOW = "end=$(date +%s); start=$((end - 2*86400))"
_TENANT_KUBECONFIG = "<creds>/tenant.kubeconfig"
# What a lookup keeps of its answer (as collect.py's pick): the VM named first; the tenant's
# own monitoring namespace when it has one, else the first.
_PICK = {
    "vm": "vm=$(printf '%s\\n' $vm | head -n 1)",
    "monitoring": "monitoring=$(printf '%s\\n' \"$monitoring\" | grep -x -m1 -e {ns} "
    "|| printf '%s\\n' \"$monitoring\" | head -n 1)",
}


def _word(text: str, values: dict[str, str]) -> str:
    """One shell word: the static values filled in, the ones found while the script runs
    (``<creds>``, ``<monitoring>``...) as its variables inside double quotes."""
    text = placeholders(text, values)
    if not PLACEHOLDER.search(text):
        return quote(text)
    out, at = ['"'], 0
    for found in PLACEHOLDER.finditer(text):
        out.append(_double_quoted(text[at : found.start()]))
        follows = text[found.end() : found.end() + 1]
        out.append(f"${{{found[1]}}}" if follows.isalnum() or follows == "_" else f"${found[1]}")
        at = found.end()
    out += [_double_quoted(text[at:]), '"']
    return "".join(out)


def _double_quoted(text: str) -> str:
    for special in ("\\", '"', "$", "`"):
        text = text.replace(special, "\\" + special)
    return text


def _command(argv: tuple[str, ...], values: dict[str, str]) -> str:
    return " ".join(_word(part, values) for part in argv)


def _line(step: Step, values: dict[str, str]) -> str:
    """The step as one line of the script."""
    if step.reach is Reach.TENANT:
        argv = (step.argv[0], "--kubeconfig", _TENANT_KUBECONFIG, *step.argv[1:])
        command = _command(argv, values)
    elif step.reach is Reach.TALOS:
        command = "$T " + _command(step.argv, values)
    else:
        command = _command(step.argv, values)
    if step.reach is Reach.LOCAL:
        removes = "".join(f" && rm {quote(name)}" for name in step.removes)
        line = f'(cd "$creds" && {command}{removes})'
    elif step.sets:
        line = f"{step.sets}=$({command})"
    elif step.decode:
        line = f"{command} | base64 -d > {_word(step.output, values)}"
    elif step.watched:
        line = f"{command} | tee {_word(step.output, values)}"
    else:
        line = f"{command} > {_word(step.output, values)}"
    if step.reach is Reach.HOST:
        line = f"#    {line}"
    return f"{line}   # {step.remark}" if step.remark else line


def _talos_pod(values: dict[str, str]) -> list[str]:
    """The pod talosctl runs from: of the nodes' Talos release, with the reader's talosconfig."""
    ns = _word("<ns>", values)
    target = _word("<node>", values)
    return [
        "#    The workers' addresses are reachable only from the tenant's network: talosctl runs",
        "#    from a pod in the tenant namespace, of the release the nodes run (their OS image",
        '#    reads "Talos (v1.12.0)").',
        f"talos_version=$(kubectl --kubeconfig {_word(_TENANT_KUBECONFIG, values)} get nodes "
        "-o jsonpath='{.items[0].status.nodeInfo.osImage}' "
        "| sed -n 's/^Talos (\\(v[^)]*\\))$/\\1/p')",
        f"kubectl -n {ns} run talosctl --restart=Never "
        '--image="ghcr.io/siderolabs/talosctl:$talos_version" --command -- sleep 7200',
        f"kubectl -n {ns} wait --for=condition=Ready pod/talosctl --timeout=120s",
        f'kubectl -n {ns} cp "$creds/talosconfig" talosctl:/tmp/talosconfig',
        "T="
        + quote(
            f"kubectl -n {ns} exec talosctl -- talosctl --talosconfig /tmp/talosconfig "
            f"-e {target} -n {target}"
        ),
    ]


def collection_commands(
    *, cluster: str | None = None, namespace: str | None = None, node: str | None = None
) -> str:
    """Shell commands, with comments, that collect every input triage reads.

    Raises CommandValueError for a value that cannot be a Kubernetes name (or, for ``node``, an
    address); every value is also shell-quoted where it is pasted."""
    values = {
        **_UNKNOWN,
        **Target.checked(cluster=cluster, namespace=namespace, node=node).values(),
    }
    name, ns, target = (_word(f"<{key}>", values) for key in ("cluster", "ns", "node"))
    folders = sorted(
        {
            _word(step.output.rsplit("/", 1)[0], values)
            for step in STEPS
            if "/" in step.output and not step.output.startswith("<creds>")
        }
    )
    lines = [
        f"# Evidence for talos-schematic triage: tenant cluster {name!r} in namespace {ns!r},",
        f"# node {target!r}. Every output goes into evidence/ (a folder per node), then:",
        "#   talos-schematic triage evidence",
        "#   Credentials (the tenant's kubeconfig, the Talos keys) stay in a private folder",
        "#   outside evidence/, removed when the script ends: evidence/ is what you attach.",
        "#   talos-schematic triage --collect DIR runs the same steps itself.",
        "creds=$(mktemp -d) && trap 'rm -rf \"$creds\"' EXIT",
        f"mkdir -p evidence && cd evidence && mkdir -p {' '.join(folders)}",
    ]
    talos_steps = [step for step in STEPS if step.reach is Reach.TALOS]
    for step in STEPS:
        for number, heading in enumerate(step.heading):
            if number == 0 and heading[:1].isdigit():
                lines.append("")
            lines.append(f"# {heading}")
        if step is talos_steps[0]:
            lines += _talos_pod(values)
        if "start" in step.needs and _WINDOW not in lines:
            lines.append(_WINDOW)
        lines.append(_line(step, values))
        if step.sets:
            lines.append(_PICK[step.sets].format(ns=ns))
        if step is talos_steps[-1]:
            lines.append(f"kubectl -n {ns} delete pod talosctl")
    lines += [
        "",
        "echo 'evidence/ holds (no credentials; they are removed with their folder):'",
        "find . -type f | sort",
        "talos-schematic triage .",
    ]
    return "".join(line + "\n" for line in lines)
