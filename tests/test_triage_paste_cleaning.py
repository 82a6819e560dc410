"""A reader is chosen after the paste is cleaned: fences, `<details>`, quote markers, prompts
with or without a space, banners, a caption around the paste. Each wrapping here is one a real
public thread shows (cited beside it); the lines inside are those of the cited bundles."""

from __future__ import annotations

from pathlib import Path

from schematic.doctor.triage import triage_paths
from schematic.doctor.triage.readers import read_evidence
from schematic.doctor.triage.readers.paste import clean, fenced_paste, unquote
from schematic.doctor.triage.signals import Kind

BUNDLES = Path(__file__).parent / "data" / "triage"
KEY_REJECTED = (BUNDLES / "paste-nvidia-module-key-rejected" / "dmesg.txt").read_text("utf-8")
TS101_CONSOLE = (
    (BUNDLES / "ts101-nvidia-image-cpu-worker" / "tenant-a-cpu-7c9xv.console.log")
    .read_text("utf-8")
    .splitlines(keepends=True)
)

# siderolabs/talos#9431 (2024-10-09), a reply quoting the reporter's log line by line.
QUOTED = (
    "> [talos] 2024/10/09 12:53:25 phase saveConfig (1/10): done, 178.498µs\n"
    "> [talos] 2024/10/09 12:53:25 phase memorySizeCheck (2/10): 1 tasks(s)\n"
    "> [talos] 2024/10/09 12:53:25 task memorySizeCheck (1/1): starting\n"
)
# siderolabs/talos#4857 (2022-01-25): "### Logs", a line of prose, then <details><code>.
DETAILS = (
    "### Logs\n"
    "This are the logs of my first server node:\n"
    "<details>\n"
    "<code>\n"
    "10.1.1.2: kern:    info: [2022-01-25T10:19:41.226131566Z]: netconsole: network logging "
    "started\n"
    "10.1.1.2: kern:    info: [2022-01-25T10:19:41.226625566Z]: rdma_rxe: loaded\n"
    "</code>\n"
    "</details>\n"
)


def test_quote_markers_come_off_line_for_line() -> None:
    assert unquote(QUOTED) == QUOTED.replace("> ", "")
    assert unquote("> > " + QUOTED[2:].replace("\n> ", "\n> > ")).count("[talos]") == 3
    # Must not: a text of which one line is not quoted keeps its markers (a prompt, a reply).
    mixed = QUOTED + "[talos] 2024/10/09 12:53:26 task saveConfig (1/1): starting\n"
    assert unquote(mixed) == mixed


def _verdict(path: Path) -> list[tuple[str, tuple[str, ...]]]:
    return [(d.code, d.nodes) for d in triage_paths([str(path)]).diagnoses]


def test_a_quoted_console_is_read_as_the_console(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    (tmp_path / "quoted").mkdir()
    (tmp_path / "plain" / "console.txt").write_text("".join(TS101_CONSOLE), encoding="utf-8")
    quoted = "".join(f"> {line}" for line in TS101_CONSOLE)
    (tmp_path / "quoted" / "console.txt").write_text(quoted, encoding="utf-8")
    assert _verdict(tmp_path / "plain")  # the console alone names a held boot
    assert _verdict(tmp_path / "quoted") == _verdict(tmp_path / "plain")


def test_details_and_code_tags_come_off() -> None:
    cleaned = clean(DETAILS)
    assert "<details>" not in cleaned and "<code>" not in cleaned
    assert cleaned.count("\n") == DETAILS.count("\n")
    assert "10.1.1.2: kern:" in cleaned


def test_a_details_block_around_a_console_is_read(tmp_path: Path) -> None:
    body = DETAILS.replace("</code>", "".join(KEY_REJECTED.splitlines(keepends=True)) + "</code>")
    (tmp_path / "issue.md").write_text(body, encoding="utf-8")
    report = triage_paths([str(tmp_path)])
    assert [d.code for d in report.diagnoses if d.severity == "error"] == ["TS204"]
    assert report.diagnoses[0].nodes == ("10.20.30.29",)


def test_a_prompt_run_into_the_command_names_the_node() -> None:
    # The form #51 reports ("$talosctl ..."); the lines are talos#7043's, without their prefix.
    lines = [line.split(": ", 1)[1] for line in KEY_REJECTED.splitlines()]
    text = "$talosctl -n 10.20.30.29 dmesg\n" + "\n".join(lines) + "\n"
    reading = read_evidence(text, "paste.txt")
    assert {s.node for s in reading.signals} == {"10.20.30.29"}
    assert Kind.MODULE_KEY_REJECTED in {s.kind for s in reading.signals}
    # "$ dmesg" with its space too.
    spaced = read_evidence("$ dmesg\n" + "\n".join(lines) + "\n", "paste.txt")
    assert Kind.MODULE_KEY_REJECTED in {s.kind for s in spaced.signals}


def test_virtctl_console_banner_and_its_vm_name_the_node() -> None:
    # The prompt and banner as pasted in a public KubeVirt demo ("stirabos@t14s:~$ virtctl
    # console -n simone testvm" / "Successfully connected to testvm console. The escape
    # sequence is ^]", kubevirt pkg/virtctl/console/console.go), then a Talos console.
    text = (
        "stirabos@t14s:~$ virtctl console -n simone testvm\n"
        "Successfully connected to testvm console. The escape sequence is ^]\n"
        + "".join(TS101_CONSOLE)
    )
    reading = read_evidence(text, "console.txt")
    assert reading.signals
    assert {s.node for s in reading.signals} == {"testvm"}
    assert all("Successfully connected" not in s.evidence.text for s in reading.signals)


def test_a_long_note_around_a_fence_stays_a_note() -> None:
    note = "# What we saw\n\n" + "We looked at the graphs and they were fine again today.\n" * 9
    text = note + "```\n" + "".join(TS101_CONSOLE[8:12]) + "```\n"
    assert fenced_paste(text) is None
    assert read_evidence(text, "README.md").signals == ()


def test_a_fence_around_prose_is_no_paste() -> None:
    text = "# Plan\n\n```\nWe will rebuild the pool with the plain image on Thursday.\n```\n"
    assert fenced_paste(text) is None


def test_a_console_that_looks_like_json_is_read_as_text(tmp_path: Path) -> None:
    # A fenced console starts, after its fence, with "[": no JSON list, a log.
    (tmp_path / "plain").mkdir()
    (tmp_path / "fenced").mkdir()
    (tmp_path / "plain" / "console.txt").write_text("".join(TS101_CONSOLE), encoding="utf-8")
    (tmp_path / "fenced" / "console.txt").write_text(
        "```text\n" + "".join(TS101_CONSOLE) + "```\n", encoding="utf-8"
    )
    report = triage_paths([str(tmp_path / "fenced")])
    assert report.readings[0].format == "log"
    assert _verdict(tmp_path / "fenced") == _verdict(tmp_path / "plain")


def test_a_broken_json_document_is_still_reported_as_such(tmp_path: Path) -> None:
    # Must not hide: JSON broken further on, with nothing a text reader knows, names its line.
    (tmp_path / "pods.json").write_text('{\n  "items": [\n    {"kind": "Pod",,}\n', "utf-8")
    (reading,) = triage_paths([str(tmp_path)]).readings
    assert (reading.format, reading.problem.startswith("line 3: invalid JSON")) == ("", True)


# --- `talosctl support` bundles: a folder or its zip, the node named by its folder -----------

SUPPORT = BUNDLES / "support-bundle-key-rejected"


def test_a_support_bundle_folder_names_the_node_for_every_file_under_it() -> None:
    report = triage_paths([str(SUPPORT)])
    (diagnosis,) = [d for d in report.diagnoses if d.severity == "error"]
    assert (diagnosis.code, diagnosis.nodes) == ("TS204", ("talos-a5000-1",))
    formats = {Path(r.file).name: r.format for r in report.readings}
    assert formats["devices"] == "proc-pci"
    assert formats["nodes.yaml"] == "yaml"  # a list without kind, read by shape
    node_of = {s.evidence.file: s.node for r in report.readings for s in r.signals}
    assert {n for f, n in node_of.items() if "/10.20.30.29/" in f} == {"10.20.30.29"}


def test_the_node_folder_given_itself_names_the_node() -> None:
    report = triage_paths([str(SUPPORT / "support" / "10.20.30.29")])
    nodes = {s.node for r in report.readings for s in r.signals}
    assert nodes == {"10.20.30.29"}


def test_a_support_bundle_zip_is_read_whole(tmp_path: Path) -> None:
    import zipfile

    archive = tmp_path / "support.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        for file in sorted((SUPPORT / "support").rglob("*")):
            if file.is_file():
                bundle.write(file, file.relative_to(SUPPORT / "support"))
    report = triage_paths([str(archive)])
    assert [(d.code, d.nodes) for d in report.diagnoses if d.severity == "error"] == [
        ("TS204", ("talos-a5000-1",))
    ]
    files = {r.file for r in report.readings}
    assert f"{archive}/10.20.30.29/dmesg.log" in files
    assert all(e.file.startswith(str(archive)) for d in report.diagnoses for e in d.evidence)


def test_a_zip_member_over_the_limit_is_refused_not_half_read(tmp_path: Path) -> None:
    import zipfile

    from schematic.errors import TriageInputError

    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        bundle.writestr("10.0.0.5/dmesg.log", b"\n" * (3 * 1024 * 1024))
    try:
        triage_paths([str(archive)], max_json_size=1024 * 1024)
    except TriageInputError as err:
        assert "over the input limit" in str(err)
    else:
        raise AssertionError("a member over the limit was read")


def test_an_address_named_folder_names_its_node_and_a_plain_folder_does_not(
    tmp_path: Path,
) -> None:
    # Must not: a folder named "evidence" names no node.
    lines = [line.split(": ", 1)[1] for line in KEY_REJECTED.splitlines()]
    (tmp_path / "evidence" / "10.1.2.3" / "logs").mkdir(parents=True)
    (tmp_path / "evidence" / "10.1.2.3" / "logs" / "kern.txt").write_text(
        "\n".join(lines) + "\n", encoding="utf-8"
    )
    (tmp_path / "evidence" / "other.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = triage_paths([str(tmp_path / "evidence")])
    node_of = {Path(r.file).name: {s.node for s in r.signals} for r in report.readings}
    assert node_of == {"kern.txt": {"10.1.2.3"}, "other.txt": {""}}
