"""`triage --collect DIR`: the steps of ``steps.STEPS`` run unattended, into DIR.

Read-only against the clusters: only ``get``, ``logs``, ``top`` and talosctl's reads; the
steps that need a pod, a console attach or a privileged shell are listed as to collect by
hand. Each step runs its argv (no shell) with a time limit, in a private credentials folder
(0700, removed at the end whatever happens) that holds the tenant's kubeconfig and the Talos
keys and is never below DIR. What a step prints is redacted before it is written, atomically,
to its file below DIR; a step that fails writes nothing and the others go on.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from schematic.doctor.triage.steps import (
    STEPS,
    CommandValueError,
    Reach,
    Step,
    Target,
    placeholders,
)
from schematic.errors import TriageInputError, UsageError, printable
from schematic.output.disk import write_file_atomically
from schematic.redact import redacted

__all__ = ["COLLECTED", "Collection", "Outcome", "collect"]

COLLECTED = "collected"
FAILED = "failed"
BY_HAND = "by hand"
SKIPPED = "skipped"
NEEDS_NODE = "needs --node"
# How far back the metrics reach, as the script's window.
_WINDOW_SECONDS = 2 * 86400
# Why a step waiting on a lookup cannot run, when the lookup found nothing.
_NOT_FOUND = {
    "vm": "no VirtualMachineInstance in the namespace has the node's name or address",
    "monitoring": "no namespace serves vmselect-shortterm",
}
# A failing tool's stderr is reported in one line, at most this long.
_REASON_CHARS = 300


@dataclass(frozen=True)
class Outcome:
    """What became of one step: its state, the command (as run, or to run by hand), its file
    below DIR ("" for none) and, for a step not collected, why."""

    step: Step
    state: str
    command: str
    file: str = ""
    reason: str = ""


@dataclass(frozen=True)
class Collection:
    folder: Path
    outcomes: tuple[Outcome, ...]

    @property
    def files(self) -> tuple[str, ...]:
        """The evidence files written below the folder."""
        return tuple(o.file for o in self.outcomes if o.state == COLLECTED and o.file)

    def summary(self) -> list[str]:
        """What was collected, what failed and why, and what to collect by hand."""
        failed = [o for o in self.outcomes if o.state == FAILED]
        by_hand = [o for o in self.outcomes if o.state == BY_HAND]
        node_files = [o for o in self.outcomes if o.state == NEEDS_NODE]
        lines = [
            f"collected {len(self.files)} file{'' if len(self.files) == 1 else 's'} into "
            f"{printable(str(self.folder), one_line=True)}; {len(failed)} step"
            f"{'' if len(failed) == 1 else 's'} failed"
        ]
        lines += [f"  failed: {o.command}: {o.reason}" for o in failed]
        if node_files:
            lines.append(
                f"not collected: the node's own files ({len(node_files)} steps); give --node "
                "(its name or address) to collect them"
            )
        if by_hand:
            lines.append("collect by hand (into the same folder):")
            for outcome in by_hand:
                lines.append(f"  {outcome.command}   # {outcome.reason}")
        return lines


def _check_folder(folder: Path) -> bool:
    """Whether ``folder`` must be made: it may exist only as an empty directory, as nothing in
    it could be proven the tool's own."""
    shown = printable(str(folder), one_line=True)
    if not folder.exists() and not folder.is_symlink():
        return True
    if folder.is_symlink() or not folder.is_dir():
        raise UsageError(f"{shown} exists and is not a directory", "--collect")
    try:
        holds = any(folder.iterdir())
    except OSError as err:
        raise UsageError(f"cannot read {shown}: {err.strerror}", "--collect") from None
    if holds:
        raise UsageError(
            f"{shown} is not empty: give a new or empty directory (nothing in it is touched)",
            "--collect",
        )
    return False


@contextmanager
def _credentials_folder(folder: Path) -> Iterator[Path]:
    """A private folder for credentials, outside ``folder``; removed on the way out, an
    interrupt included."""
    try:
        made = tempfile.TemporaryDirectory(
            prefix="talos-schematic-creds-", ignore_cleanup_errors=True
        )  # mode 0700
    except OSError as err:
        raise TriageInputError(f"cannot make a private temporary folder: {err}") from None
    with made as name:
        private = Path(name)
        if private.resolve().is_relative_to(folder.resolve()):
            raise UsageError(
                f"the temporary folder {printable(str(private), one_line=True)} is below "
                f"{printable(str(folder), one_line=True)}: set TMPDIR elsewhere",
                "--collect",
            )
        yield private


# The secret parts of a kubeconfig or a talosconfig, and the lines of a PEM private key.
_SECRET_FIELD = re.compile(
    r"(?m)^\s*(?:token|client-key-data|password|key):\s*['\"]?([^\s'\"]{8,})"
)
_PEM_KEY = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----\s*(.*?)-----END [A-Z ]*PRIVATE KEY-----", re.S
)


def _secrets_in(credential: str) -> set[str]:
    found = set(_SECRET_FIELD.findall(credential))
    for body in _PEM_KEY.findall(credential):
        found.update(line.strip() for line in body.splitlines() if len(line.strip()) >= 16)
    return found


@dataclass
class _Run:
    """The state of one collection: the values found so far and the secrets to hide."""

    folder: Path
    private: Path
    values: dict[str, str]
    kubeconfig: Path | None
    talosconfig: Path | None
    timeout: float | None
    secrets: set[str]
    # The command after which each reach is given up: a step that got no answer in its time
    # limit, as every later step that needs the same cluster would wait as long for nothing.
    silent: dict[Reach, str] = field(default_factory=dict)

    def argv(self, step: Step) -> list[str]:
        # A node not given is NODE in the commands shown to run by hand (none of its steps runs).
        shown = {"node": "NODE", **self.values}
        shown.setdefault("vm", f"VM_NAME_OF_{shown['node']}")
        argv = [placeholders(part, shown) for part in step.argv]
        if step.reach is Reach.TENANT:
            argv[1:1] = ["--kubeconfig", str(self.private / "tenant.kubeconfig")]
        elif step.reach is Reach.MANAGEMENT and self.kubeconfig and argv[0] == "kubectl":
            argv[1:1] = ["--kubeconfig", str(self.kubeconfig)]
        elif step.reach is Reach.TALOS:
            node = shown["node"]
            if self.talosconfig:  # the user's own: its endpoints reach the node
                argv = ["talosctl", "--talosconfig", str(self.talosconfig), "-n", node, *argv]
            else:  # the reader's: the node is its own endpoint
                config = str(self.private / "talosconfig")
                argv = ["talosctl", "--talosconfig", config, "-e", node, "-n", node, *argv]
        return argv

    def unmet(self, step: Step) -> str:
        """Why ``step`` cannot run now ("" when it can)."""
        if step.reach in self.silent:
            return f"not run: {self.silent[step.reach]} got no answer in its time limit"
        if step.reach is Reach.TENANT and not (self.private / "tenant.kubeconfig").exists():
            return "the tenant's kubeconfig could not be read"
        if step.reach is Reach.TALOS and not (
            self.talosconfig or (self.private / "talosconfig").exists()
        ):
            return "no talosconfig (give --talosconfig, or see the Talos CA steps)"
        for name, reason in _NOT_FOUND.items():
            if name in step.needs and name not in self.values:
                return reason
        return ""

    def run(self, step: Step, argv: list[str]) -> tuple[bytes, str]:
        """Its standard output, or a reason it failed."""
        timeout = self.timeout if self.timeout is not None else step.timeout
        if shutil.which(argv[0]) is None:
            return b"", f"{argv[0]} not found on PATH"
        process = subprocess.Popen(
            argv,
            env=_environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=self.private,
            start_new_session=True,  # its own process group: a time limit ends its children too
        )
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _end(process)
            self.silent[step.reach] = shlex.join(step.argv)
            return b"", f"no answer within {timeout:g} s"
        except BaseException:
            _end(process)
            raise
        if process.returncode != 0:
            return b"", f"exit {process.returncode}: {self.one_line(err) or 'no message'}"
        return out, ""

    def learn(self, credential: Path) -> None:
        """Hide what ``credential`` (a kubeconfig, a talosconfig) holds from every output."""
        # A file that cannot be read is one kubectl or talosctl will say it cannot read.
        with suppress(OSError):
            self.secrets |= _secrets_in(credential.read_text("utf-8", "replace"))

    def one_line(self, err: bytes) -> str:
        lines = [line for line in err.decode("utf-8", "replace").splitlines() if line.strip()]
        text = redacted(lines[-1].strip() if lines else "", self.secrets)
        return printable(text[:_REASON_CHARS], one_line=True)

    def keep(self, step: Step, out: bytes) -> tuple[str, str]:
        """The file ``out`` became (or the value it set), or why it was not kept."""
        if not step.output and not step.sets:  # a step run for what it leaves in the folder
            for name in step.removes:
                (self.private / name).unlink(missing_ok=True)
            if (self.private / "talosconfig").exists():
                self.learn(self.private / "talosconfig")
            return "", ""
        if not out.strip():
            return "", "no output"
        if step.sets:
            found = out.decode("utf-8", "replace").split()
            ns = self.values.get("ns")
            self.values[step.sets] = ns if step.sets == "monitoring" and ns in found else found[0]
            return "", ""
        if step.output.startswith("<creds>/"):
            return self.keep_credential(step, out)
        text = out.decode("utf-8", "surrogateescape")
        clean = redacted(text, self.secrets).encode("utf-8", "surrogateescape")
        relative = placeholders(step.output, self.values)
        path = self.folder / relative
        if path.exists():
            return "", f"{relative} was already written"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_file_atomically(path, clean, mode=0o644)
        except OSError as err:
            return "", f"cannot write {relative}: {err.strerror}"
        return relative, ""

    def keep_credential(self, step: Step, out: bytes) -> tuple[str, str]:
        self.secrets.add(out.decode("ascii", "replace").strip())
        if step.decode:
            try:
                out = base64.b64decode(out.strip(), validate=True)
            except binascii.Error:
                return "", "the Secret's value is not base64"
        self.secrets |= _secrets_in(out.decode("utf-8", "replace"))
        path = self.private / placeholders(step.output, self.values).rsplit("/", 1)[1]
        write_file_atomically(path, out, mode=0o600)
        return "", ""


def _environment() -> dict[str, str]:
    """The user's environment, with the config paths kubectl and talosctl read made absolute:
    the steps run in the credentials' folder."""
    env = dict(os.environ)
    for name in ("KUBECONFIG", "TALOSCONFIG"):
        if env.get(name):
            paths = env[name].split(os.pathsep)
            env[name] = os.pathsep.join(os.path.abspath(path) if path else path for path in paths)
    return env


def _end(process: subprocess.Popen[bytes]) -> None:
    """Kill ``process`` and everything it started, and reap it."""
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.communicate()


def _shown(argv: list[str], step: Step, values: dict[str, str]) -> str:
    command = shlex.join(argv)
    if step.output and not step.output.startswith("<creds>/"):
        command += " > " + shlex.quote(placeholders(step.output, {"node": "NODE", **values}))
    return printable(command, one_line=True)


def collect(
    folder: Path,
    target: Target,
    *,
    kubeconfig: Path | None = None,
    talosconfig: Path | None = None,
    timeout: float | None = None,
    progress: Callable[[str], None] = lambda line: None,
) -> Collection:
    """Run every unattended step for ``target`` into ``folder`` (new or empty), each within
    its own time limit or ``timeout``; ``progress`` is told of each step as it starts.

    Raises UsageError for a folder that exists and is not empty, or a target without its
    cluster and namespace."""
    for option, given in (("--cluster", target.cluster), ("--namespace", target.namespace)):
        if given is None:
            raise CommandValueError(option, f"--collect needs {option}")
    made = _check_folder(folder)
    if made:
        try:
            folder.mkdir(parents=True)
        except OSError as err:
            shown = printable(str(folder), one_line=True)
            raise UsageError(f"cannot make {shown}: {err.strerror}", "--collect") from None
    now = int(time.time())
    outcomes: list[Outcome] = []
    with _credentials_folder(folder) as private:
        values = {**target.values(), "creds": str(private)}
        values |= {"start": str(now - _WINDOW_SECONDS), "end": str(now)}
        # The steps run in the credentials' folder: the user's files are named from anywhere.
        kubeconfig, talosconfig = (
            None if config is None else config.absolute() for config in (kubeconfig, talosconfig)
        )
        run = _Run(folder, private, values, kubeconfig, talosconfig, timeout, set())
        for config in (kubeconfig, talosconfig):
            if config is not None:
                run.learn(config)
        for number, step in enumerate(STEPS, 1):
            outcomes.append(_step(run, step, f"[{number}/{len(STEPS)}]", progress))
    if made and not any(folder.iterdir()):
        folder.rmdir()  # nothing collected: no folder left behind
    return Collection(folder, tuple(outcomes))


def _step(run: _Run, step: Step, counter: str, progress: Callable[[str], None]) -> Outcome:
    argv = run.argv(step)
    command = _shown(argv, step, run.values)
    if not step.unattended:
        progress(f"{counter} by hand: {command}")
        return Outcome(step, BY_HAND, command, reason=step.why_by_hand)
    if run.talosconfig and (step.reach is Reach.LOCAL or step.output.startswith("<creds>/talos")):
        # These make a reader's talosconfig; the user gave their own.
        progress(f"{counter} skipped (--talosconfig given): {command}")
        return Outcome(step, SKIPPED, command, reason="--talosconfig given")
    if "node" in step.needs and "node" not in run.values:
        progress(f"{counter} not run (give --node): {command}")
        return Outcome(step, NEEDS_NODE, command, reason="give --node")
    progress(f"{counter} {command}")
    reason = run.unmet(step)
    out = b""
    if not reason:
        out, reason = run.run(step, argv)
    file = ""
    if not reason:
        file, reason = run.keep(step, out)
    if reason:
        progress(f"{' ' * len(counter)} failed: {reason}")
        return Outcome(step, FAILED, command, reason=reason)
    return Outcome(step, COLLECTED, command, file=file)
