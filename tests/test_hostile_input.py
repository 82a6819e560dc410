"""Hostile input files end in one clear message and exit 1, with bounded memory, for every reader.

Each case runs the command in a child process and measures the child's peak memory with
``resource`` where the platform has it. No wall-clock asserts: a generous timeout only keeps a
regression from hanging the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hostile_factory import Server, hostile_factory
from typer.testing import CliRunner

PEAK_LIMIT_MB = 200
_TIMEOUT = 120  # a ceiling against hangs, far above what any case needs

# Runs the command as its own child and reports that child's peak resident set size.
_MEASURE = """
import subprocess, sys
try:
    import resource
except ImportError:
    resource = None
done = subprocess.run(sys.argv[1:], capture_output=True)
sys.stdout.buffer.write(done.stdout)
sys.stderr.buffer.write(done.stderr)
if resource is not None:
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # kilobytes on Linux, bytes on macOS
    print(peak / 1024 if sys.platform != "darwin" else peak / 1024 / 1024, file=sys.stderr)
sys.exit(done.returncode)
"""


def run_measured(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> tuple[int, str, list[str], float | None]:
    """Exit code, stdout, stderr lines (the peak figure removed) and the peak in MB."""
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, sys.executable, "-m", "schematic", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=_TIMEOUT,
        env={
            **os.environ,
            "TALOS_SCHEMATIC_FACTORY": "",
            "TALOS_SCHEMATIC_FACTORY_TOKEN": "",
            "TALOS_SCHEMATIC_FACTORY_AUTH": "",
            "XDG_CACHE_HOME": str(cwd / ".c"),
            **(env or {}),
        },
        check=False,
    )
    lines = done.stderr.splitlines()
    peak = None
    if lines and lines[-1].replace(".", "", 1).isdigit():
        peak = float(lines.pop())
    return done.returncode, done.stdout, lines, peak


def assert_one_error(
    result: tuple[int, str, list[str], float | None], *expected: str, code: int = 1
) -> None:
    exit_code, out, err, peak = result
    assert exit_code == code, err
    assert len(err) == 1, err
    assert err[0].startswith("talos-schematic: "), err
    for part in expected:
        assert part in err[0], err
    if code == 1:
        assert out == ""
    if peak is not None:
        assert peak < PEAK_LIMIT_MB, f"peak {peak:.0f} MB"


# The issue's bomb: nine anchors, each a list of ten aliases of the one before (10^9 nodes
# if expanded), under overlay.options.
BOMB = "".join(
    [
        "overlay:\n  name: n\n  image: i\n  options:\n",
        "    k0: &a0 [x, x, x, x, x, x, x, x, x, x]\n",
        *(f"    k{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 10)}]\n" for n in range(1, 9)),
    ]
)
BOMB_LINES = "".join(BOMB.splitlines(keepends=True)[4:])  # the anchors alone
DEEP = "[" * 10_001 + "]" * 10_001

CLUSTER = """\
talos:
  version: v1.13.9
pools:
  - name: gpu
    profile: kubevirt-l40s
"""


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return tmp_path


def test_the_issues_bomb_is_refused_naming_the_file(workdir: Path) -> None:
    (workdir / "bomb.yaml").write_text(BOMB)
    assert_one_error(
        run_measured("id", "bomb.yaml", cwd=workdir),
        "bomb.yaml:8: document contains excessive aliasing",
    )


@pytest.mark.parametrize(
    ("command", "text", "expected"),
    [
        (["generate"], "talos:\n  version: v1.13.9\nextra:\n" + BOMB_LINES, "excessive aliasing"),
        (["detect"], BOMB_LINES, "excessive aliasing"),
        (["id"], "overlay:\n  options:\n    k: " + DEEP, "nested deeper than 100 levels"),
        (["generate"], "talos: " + DEEP, "nested deeper than 100 levels"),
        (["detect"], "a: " + DEEP, "nested deeper than 100 levels"),
        (["detect"], DEEP, "JSON nested deeper than 100 levels"),
        (["register"], BOMB, "excessive aliasing"),
    ],
    ids=["cluster-bomb", "dump-bomb", "id-deep", "cluster-deep", "dump-deep", "json-deep", "reg"],
)
def test_each_reader_refuses_bombs_and_depth(
    workdir: Path, command: list[str], text: str, expected: str
) -> None:
    (workdir / "hostile.yaml").write_text(text)
    assert_one_error(run_measured(*command, "hostile.yaml", cwd=workdir), "hostile.yaml", expected)


def test_a_profile_bomb_is_refused(workdir: Path) -> None:
    (workdir / "p.yaml").write_text("platform: metal\nextra:\n" + BOMB_LINES)
    (workdir / "dump.txt").write_text("18:00.0 3D controller [0302]: NVIDIA L40S [10de:26b9]\n")
    assert_one_error(
        run_measured("detect", "--against", "p.yaml", "dump.txt", cwd=workdir),
        "p.yaml:",
        "excessive aliasing",
    )


def test_a_bomb_in_one_linted_file_is_a_finding_and_the_rest_is_linted(workdir: Path) -> None:
    (workdir / "lint").mkdir()
    (workdir / "lint" / "a-bomb.yaml").write_text(BOMB)
    (workdir / "lint" / "b-deep.yaml").write_text("x: " + DEEP)
    (workdir / "lint" / "c.schematic.yaml").write_text("customization:\n  bootloader: auto\n")
    code, _, err, peak = run_measured("lint", "lint", cwd=workdir)
    assert code == 3
    assert [line.split("; facts: ")[0] for line in err] == [
        "talos-schematic lint: 3 errors, 0 warnings, 0 notes in 3 files"
    ]
    result = subprocess.run(
        [sys.executable, "-m", "schematic", "lint", "lint"],
        capture_output=True,
        text=True,
        cwd=workdir,
        timeout=_TIMEOUT,
        check=False,
    )
    assert "lint/a-bomb.yaml:8: error TS002: " in result.stdout
    assert "document contains excessive aliasing" in result.stdout
    assert "lint/b-deep.yaml:1: error TS002: " in result.stdout
    assert "lint/c.schematic.yaml:2: error TS004: " in result.stdout
    assert peak is None or peak < PEAK_LIMIT_MB


@pytest.mark.parametrize(
    ("command", "limit"),
    [
        (["id"], "512 KiB, the limit for a schematic"),
        (["generate"], "1 MiB, the limit for a cluster file"),
        (["detect"], "6 MiB, the limit for a hardware dump"),
        (["register"], "512 KiB, the limit for a schematic"),
    ],
)
def test_a_50_mb_file_is_refused_at_its_kinds_size_limit(
    workdir: Path, command: list[str], limit: str
) -> None:
    with (workdir / "big.yaml").open("wb") as big:
        big.write(b"a: ")
        big.write(b"x" * (50 << 20))
    code, _, err, peak = run_measured(*command, "big.yaml", cwd=workdir)
    assert code == 1, err
    assert err[-1] == (
        f"talos-schematic: big.yaml: cannot read: {3 + (50 << 20):,} bytes, larger than {limit} "
        "(raise it with --max-input-size)"
    )
    assert peak is None or peak < PEAK_LIMIT_MB, f"peak {peak:.0f} MB"


@pytest.mark.parametrize("command", [["generate"], ["check"]])
def test_an_output_index_past_its_kinds_limit_is_refused(workdir: Path, command: list[str]) -> None:
    # The index is the tool's own record, but anyone with write access to the repository may
    # have replaced it: it is read within its own limit (a thousand pools take 1.3 MB), not
    # the 16 MiB of any input, and nothing is written.
    (workdir / "cluster.yaml").write_text(
        "cluster: c\nnamespace: tenant-a\ncozystack: {version: osimage}\n" + CLUSTER
    )
    out = workdir / "out"
    out.mkdir()
    with (out / "index.yaml").open("wb") as index:
        index.write(b"generator: talos-schematic\npools: [")
        index.write(b"1," * (3 << 20) + b"1]\n")
    assert_one_error(
        run_measured(*command, "cluster.yaml", "--out", "out", cwd=workdir),
        f"out/index.yaml: cannot read: {35 + (6 << 20) + 3:,} bytes, larger than 3 MiB, "
        "the limit for an output directory's "
        "index or journal (raise it with --max-input-size)",
    )
    assert sorted(p.name for p in out.iterdir()) == ["index.yaml"]


def test_lint_reports_an_oversized_or_binary_file_and_lints_the_rest(workdir: Path) -> None:
    (workdir / "lint").mkdir()
    with (workdir / "lint" / "a-big.yaml").open("wb") as big:
        big.write(b"a: " + b"x" * (50 << 20))
    (workdir / "lint" / "b-bin.yaml").write_bytes(b"talos:\n  version: \xff\n")
    (workdir / "lint" / "c.schematic.yaml").write_text("customization:\n  bootloader: auto\n")
    code, out, err, peak = run_measured("lint", "lint", cwd=workdir)
    assert code == 3, err
    assert [line.split("; facts: ")[0] for line in err] == [
        "talos-schematic lint: 3 errors, 0 warnings, 0 notes in 3 files"
    ]
    assert (
        f"lint/a-big.yaml: error TS002: not read: {3 + (50 << 20):,} bytes, larger than 1 MiB, "
        "the limit for a lint input "
        "(raise it with --max-input-size)\n"
    ) in out
    assert "lint/b-bin.yaml: error TS002: not read: not UTF-8 text (invalid start byte" in out
    assert "    fix: raise the limit with --max-input-size if the file is meant" in out
    assert "    fix: save the file as UTF-8 text" in out
    assert "lint/c.schematic.yaml:2: error TS004: " in out
    assert peak is None or peak < PEAK_LIMIT_MB, f"peak {peak:.0f} MB"


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero on this platform")
@pytest.mark.parametrize("command", [["id"], ["generate"], ["detect"]])
def test_dev_zero_is_refused_without_being_read(workdir: Path, command: list[str]) -> None:
    assert_one_error(
        run_measured(*command, "--max-input-size", "1MiB", "/dev/zero", cwd=workdir),
        "/dev/zero: ",
        "not a regular file (a FIFO, socket or device)",
    )


def test_the_size_limit_can_be_raised(workdir: Path) -> None:
    (workdir / "s.yaml").write_text("customization:\n  extraKernelArgs: [" + "a, " * 1000 + "b]\n")
    code, _, err, _ = run_measured("id", "--max-input-size", "2k", "s.yaml", cwd=workdir)
    assert code == 1 and "larger than the 2000 bytes input limit" in err[-1]
    code, out, err, _ = run_measured("id", "--max-input-size", "1MiB", "s.yaml", cwd=workdir)
    assert (code, len(out.split()[0]), out.split()[1:]) == (0, 64, ["s.yaml"])


def test_a_bad_size_is_a_usage_error(workdir: Path) -> None:
    (workdir / "s.yaml").write_text("{}\n")
    code, _, err, _ = run_measured("id", "--max-input-size", "lots", "s.yaml", cwd=workdir)
    assert code == 2
    assert any("is not a size" in line for line in err)


@pytest.mark.parametrize("command", [["generate"], ["id"]])
def test_non_utf8_input_is_one_clear_error(workdir: Path, command: list[str]) -> None:
    (workdir / "bin.yaml").write_bytes(b"talos:\n  version: \xff\xfe\xfa\n")
    code, _, err, _ = run_measured(*command, "bin.yaml", cwd=workdir)
    assert code == 1, err
    assert len(err) == 1 and "bin.yaml" in err[0] and "UTF-8" in err[0], err


def test_a_non_utf8_profile_is_one_clear_error(workdir: Path) -> None:
    (workdir / "p.yaml").write_bytes(b"platform: metal\nname: \xff\n")
    (workdir / "dump.txt").write_text("18:00.0 3D controller [0302]: NVIDIA L40S [10de:26b9]\n")
    assert_one_error(
        run_measured("detect", "--against", "p.yaml", "dump.txt", cwd=workdir),
        "p.yaml: not UTF-8 text (invalid start byte at byte 22)",
    )


# --- hostile factories (a loopback server; the command runs in a child process) -------------

TOKEN = "s3cr3t-Token-value"
QEMU_BODY = (
    "customization:\n  systemExtensions:\n    officialExtensions:\n"
    "      - siderolabs/qemu-guest-agent\n"
)


@pytest.fixture(scope="module")
def redirect_target() -> Iterator[Server]:
    with hostile_factory() as server:
        yield server


@pytest.fixture(scope="module")
def factory(redirect_target: Server) -> Iterator[Server]:
    with hostile_factory(redirect_target.url.replace("127.0.0.1", "localhost")) as server:
        yield server


@pytest.mark.parametrize("mode", ["huge", "huge-unannounced", "gzip-bomb"])
def test_a_100_mb_factory_answer_is_one_error_naming_the_factory(
    workdir: Path, factory: Server, mode: str
) -> None:
    (workdir / "a.yaml").write_text(QEMU_BODY)
    url = f"{factory.url}/{mode}"
    assert_one_error(
        run_measured("register", "a.yaml", cwd=workdir, env={"TALOS_SCHEMATIC_FACTORY": url}),
        f"talos-schematic: {url}: a.yaml: POST /schematics: the answer is larger than the "
        "16 MiB a factory answer may be; not read further",
    )


def test_a_cross_host_redirect_is_not_followed_and_the_token_stays_home(
    workdir: Path, factory: Server, redirect_target: Server
) -> None:
    (workdir / "cluster.yaml").write_text("cluster: c\nnamespace: tenant-c\n" + CLUSTER)
    url = f"{factory.url}/redirect"
    before = len(redirect_target.seen.requests)
    result = run_measured(
        "generate",
        "cluster.yaml",
        "--register",
        "--chart",
        "osimage",
        "--out",
        "out",
        cwd=workdir,
        env={"TALOS_SCHEMATIC_FACTORY": url, "TALOS_SCHEMATIC_FACTORY_TOKEN": TOKEN},
    )
    assert_one_error(
        result, "HTTP 307 Temporary Redirect: the factory redirects to http://localhost:"
    )
    assert TOKEN not in result[2][0]
    assert len(redirect_target.seen.requests) == before
    assert not (workdir / "out").exists()


def test_a_drip_feeding_factory_is_cut_at_the_time_allowed(
    workdir: Path, factory: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    # In process, with the allowance lowered: the default (120 s) would make a slow test.
    import schematic.factory.client
    from schematic.cli import app, register_all_commands

    register_all_commands()
    monkeypatch.setattr(schematic.factory.client, "DEFAULT_MAX_REQUEST_TIME", 0.3)
    (workdir / "a.yaml").write_text(QEMU_BODY)
    url = f"{factory.url}/drip-headers"
    result = CliRunner().invoke(
        app,
        ["register", str(workdir / "a.yaml")],
        env={
            "TALOS_SCHEMATIC_FACTORY": url,
            "TALOS_SCHEMATIC_FACTORY_TOKEN": "",
            "TALOS_SCHEMATIC_FACTORY_AUTH": "",
        },
    )
    assert result.exit_code == 1, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"talos-schematic: {url}: ")
    assert "no complete answer within the 0.3 s allowed per request" in lines[0]
    assert result.stdout == ""
