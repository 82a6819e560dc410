"""The command line presents itself: --version, one statement of credentials, summaries that
end their sentence, the same metavar for the same kind of value everywhere."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from schematic import __version__
from schematic.cli import app, register_all_commands

register_all_commands()
ROOT_DIR = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT_DIR / "examples" / "cluster.yaml"
ROOT: Any = typer.main.get_command(app)


def run(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def test_version() -> None:
    result = run("--version")
    assert (result.exit_code, result.stdout) == (0, f"talos-schematic {__version__}\n")


def test_the_top_level_help_states_the_credentials_once() -> None:
    result = run("--help")
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    assert text.count("TALOS_SCHEMATIC_FACTORY_TOKEN") == 1
    assert "TALOS_SCHEMATIC_FACTORY_AUTH (user:password); they are never printed." in text
    assert "--version" in text


def test_every_command_summary_is_one_finished_sentence() -> None:
    for name, command in ROOT.commands.items():
        summary = command.short_help or (command.help or "").split("\n\n")[0]
        assert summary.endswith("."), name
        assert "\n" not in summary.strip(), name
        assert len(summary) <= 80, (name, len(summary))


def _metavars() -> dict[tuple[str, str], str]:
    found = {}
    for name, command in ROOT.commands.items():
        context = ROOT.context_class(command, info_name=name)
        for param in command.params:
            if getattr(param, "is_flag", False):
                continue
            found[name, param.opts[0] if param.opts else param.name] = param.make_metavar(context)
    return found


def test_the_same_kind_of_value_has_the_same_metavar_everywhere() -> None:
    metavars = _metavars()
    assert {m for (_, opt), m in metavars.items() if opt == "--talos"} == {"vX.Y.Z"}
    assert {m for (_, opt), m in metavars.items() if opt == "--profiles"} == {"DIR"}
    assert {m for (_, opt), m in metavars.items() if opt in ("--out", "-o")} == {"DIR"}
    assert {m for (_, opt), m in metavars.items() if opt == "--factory"} == {"URL"}
    # No type name where a word for the value belongs (typer's <str>, <path>, <int range>).
    generic = re.compile(r"<(str|path|int|integer|float|text|int range)>|^[a-z_]+(\.\.\.)?$")
    assert not {key: m for key, m in metavars.items() if generic.search(m)}


def test_every_option_and_argument_help_is_a_sentence() -> None:
    unfinished = {
        (name, param.name): help_text
        for name, command in ROOT.commands.items()
        for param in command.params
        if (help_text := getattr(param, "help", None))
        and (
            not (help_text[0].isupper() or help_text[0] in "`$-")
            or not help_text.rstrip().endswith(".")
        )
    }
    assert not unfinished


def _options(command: Any) -> dict[str, Any]:
    return {opt: param for param in command.params for opt in param.opts}


def test_json_output_is_spelt_format_json_everywhere_with_json_as_its_alias() -> None:
    """One spelling: every command printing JSON takes --format/-f json, and --json too."""
    printing_json = set()
    for name, command in ROOT.commands.items():
        options = _options(command)
        choices = getattr(options.get("--format"), "type", None)
        offered = list(getattr(choices, "choices", ()))
        metavar = getattr(options.get("--format"), "metavar", None) or ""
        if "json" in offered or "json" in metavar.split("|"):
            printing_json.add(name)
            assert "-f" in options, name
            assert "--json" in options, name
        elif "--json" in options:
            raise AssertionError(f"{name}: --json without --format json")
    assert {"generate", "check", "upgrade", "lint", "gpu", "detect", "versions"} <= printing_json


def test_json_alias_prints_what_format_json_prints() -> None:
    both = [
        ["gpu", "10de:2bb5", "--talos", "v1.13.9"],
        ["extensions", "--talos", "v1.13.9"],
        ["generate", str(EXAMPLE)],
        ["lint", str(EXAMPLE.parent)],
    ]
    for args in both:
        as_format = run(*args, "--format", "json")
        assert as_format.exit_code in (0, 3), (args, as_format.stderr)
        assert as_format.stdout.startswith(("{", "["))
        assert run(*args, "--json").stdout == as_format.stdout, args
    clash = run("upgrade", str(EXAMPLE), "--to", "v1.13.9", "--json", "-f", "markdown")
    assert clash.exit_code == 2
    assert "--json is --format json" in clash.stderr


def test_every_command_help_shows_an_example_of_itself() -> None:
    for name in ROOT.commands:
        result = run(name, "--help")
        assert result.exit_code == 0, name
        text = " ".join(result.stdout.split())
        assert "Example" in text, name
        shown = text.split("Example", 1)[1]
        assert f"talos-schematic {name}" in shown, name


def test_usage_lines_say_which_arguments_repeat() -> None:
    usage = {name: run(name, "--help").stdout for name in ("register", "verify", "id", "lint")}
    # Typer writes a required argument in braces: {FILE...} is one or more files.
    assert "Usage: talos-schematic register [OPTIONS] {FILE...}" in usage["register"]
    assert "Usage: talos-schematic verify [OPTIONS] [PATH]..." in usage["verify"]
    assert "Usage: talos-schematic id [OPTIONS] [FILE]..." in usage["id"]


def test_check_help_offers_only_its_own_options() -> None:
    text = " ".join(run("check", "--help").stdout.split())
    assert "--register" not in text
    assert "Image Factory for --live-catalogue" in text


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_shell_completion_scripts_as_documented(shell: str) -> None:
    """docs/commands.md: eval "$(_TALOS_SCHEMATIC_COMPLETE=source_bash talos-schematic)"."""
    env = dict(os.environ, _TALOS_SCHEMATIC_COMPLETE=f"source_{shell}")
    script = subprocess.run(
        [sys.executable, "-m", "schematic"], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert "_TALOS_SCHEMATIC_COMPLETE" in script
    assert f"source_{shell}" in (ROOT_DIR / "docs" / "commands.md").read_text()


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_show_completion_prints_a_script_bash_loads() -> None:
    """docs/commands.md: `talos-schematic --show-completion` prints the script."""
    env = dict(os.environ, _TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION="1")
    shown = subprocess.run(
        [sys.executable, "-m", "schematic", "--show-completion", "bash"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert shown.returncode == 0, shown.stderr
    assert "_TALOS_SCHEMATIC_COMPLETE=complete_bash" in shown.stdout
    # bash itself reads the script: it registers a completion function for the command.
    loaded = subprocess.run(
        ["bash", "-c", f"{shown.stdout}\ncomplete -p talos-schematic"],
        capture_output=True,
        text=True,
    )
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip().endswith("-F _talos_schematic_completion talos-schematic")
    assert "--install-completion" in run("--help").stdout


def test_shell_completion_completes_commands_and_choices() -> None:
    def complete(words: str) -> list[str]:
        env = dict(
            os.environ,
            _TALOS_SCHEMATIC_COMPLETE="complete_bash",
            COMP_WORDS=words,
            COMP_CWORD=str(len(words.split()) - (0 if words.endswith(" ") else 1)),
        )
        done = subprocess.run(
            [sys.executable, "-m", "schematic"], env=env, capture_output=True, text=True
        )
        return done.stdout.split()

    assert "generate" in complete("talos-schematic gen")
    assert complete("talos-schematic lint --fail-on ") == ["error", "warning", "note"]


@pytest.mark.parametrize("command", ["generate", "check", "lint", "init"])
def test_chart_help_names_every_target_the_data_has(command: str) -> None:
    # The targets come from data/cozystack-charts.json: a new target needs no help edit.
    from schematic.facts.chart_targets import chart_targets

    result = run(command, "--help")
    text = " ".join(result.stdout.split())
    for target in chart_targets():
        assert re.search(rf"\b{re.escape(target.name)}\b", text), (command, target.name)


def _command_paths(group: Any = ROOT, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command as typed, a group's own commands too (``facts refresh``)."""
    found = []
    for name, command in group.commands.items():
        found.append((*path, name))
        if hasattr(command, "commands"):
            found += _command_paths(command, (*path, name))
    return found


def _command(path: tuple[str, ...]) -> Any:
    command = ROOT
    for name in path:
        command = command.commands[name]
    return command


def _unwrapped(text: str) -> str:
    """The help as one line: the wrapping undone, a word broken after its hyphen rejoined."""
    return " ".join(re.sub(r"(?<=\w-)\n\s+", "", text).split())


@pytest.mark.parametrize("path", _command_paths(), ids=" ".join)
def test_every_help_sentence_is_printed_whole_at_80_columns(path: tuple[str, ...]) -> None:
    """What a reader of `--help` in an 80-column terminal sees: every option's and argument's
    whole help (no word dropped as markup, none cut with an ellipsis), no line past the edge."""
    result = CliRunner().invoke(app, [*path, "--help"], terminal_width=80)
    assert result.exit_code == 0, result.stderr
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    shown = _unwrapped(result.stdout)
    for param in _command(path).params:
        if getattr(param, "help", None):
            assert " ".join(param.help.split()) in shown, (path, param.name)
    assert "…" not in shown
    assert not re.search(r"\w \.(\s|$)", shown), re.search(r".{30}\w \.(\s|$)", shown)


def test_the_command_list_gives_every_summary_whole_at_80_columns() -> None:
    result = CliRunner().invoke(app, ["--help"], terminal_width=80)
    assert result.exit_code == 0
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    shown = _unwrapped(result.stdout)
    for name, command in ROOT.commands.items():
        summary = command.get_short_help_str(limit=10_000)
        assert f"{name} {' '.join(summary.split())}" in shown, name
    assert "..." not in shown.split("Commands:", 1)[1]


def test_the_help_keeps_what_is_written_in_brackets() -> None:
    # The text a markup reader took for a style tag and dropped, leaving "CPU architecture .".
    shown = _unwrapped(CliRunner().invoke(app, ["gpu", "--help"], terminal_width=80).stdout)
    assert "CPU architecture [default: arm64 for GB10 / Grace, else amd64]." in shown
    assert "Add GPUDirect RDMA (nvidia-gdrdrv-device)." in shown
