"""The CLI in-process against a catalog in a temporary folder."""

from __future__ import annotations

import pytest

from schemas import Status
from tests.support.cli import invoke, pin_console_width, unwrapped

pytestmark = pytest.mark.usefixtures("fixed_width")  # the consoles at 200 columns


def test_every_command_explains_itself():
    for command in ([], ["run"], ["runs"], ["release"], ["release", "create"], ["release", "verify"],
                    ["release", "diff"], ["release", "export"], ["release", "list"], ["records"],
                    ["records", "show"], ["records", "lineage"], ["records", "list"], ["records", "stats"],
                    ["config"], ["config", "show"], ["build"], ["build", "progress"], ["stats"],
                    ["sample-world"], ["models"], ["models", "list"], ["models", "check"], ["evaluate"],
                    ["leaderboard"]):
        result = invoke(*command, "--help")
        assert result.exit_code == 0, command
        assert "Usage" in result.output and len(result.output.splitlines()) > 5, command


def test_config_show_masks_secrets(project):
    result = invoke("config", "show")
    assert result.exit_code == 0
    assert 'path = "state/cat.duckdb"' in result.output
    assert "sk-live-123" not in result.output and '"****"' in result.output


def test_records_show_lineage_list_and_stats(project):
    _, root, child = project
    shown = invoke("records", "show", root.id[:10])
    assert shown.exit_code == 0 and root.id in shown.output and "ann: accepted" in shown.output
    lineage = invoke("records", "lineage", child.id)
    assert lineage.exit_code == 0 and root.id in lineage.output and "demo" in lineage.output
    assert "accepted" in lineage.output
    listed = invoke("records", "list", "--kind", "demo")
    assert listed.exit_code == 0 and listed.output.count("progress") == 2
    assert "item" in invoke("records", "stats").output
    missing = invoke("records", "show", "abcdef123")
    assert missing.exit_code == 1 and "no record id starts with 'abcdef123'" in missing.output


def test_release_commands_and_a_tampered_blob(project, tmp_path):
    storage, root, _ = project
    created = invoke("release", "create", "demo", "--benchmark", "progress")
    assert created.exit_code == 0 and "created demo@1: 1 records, 1 blobs" in created.output
    assert "demo@1" in invoke("release", "list").output
    assert invoke("release", "verify", "demo").exit_code == 0
    storage.catalog.set_status([r.id for r in storage.catalog.find_records(kind="demo")], Status.ACCEPTED)
    assert invoke("release", "create", "demo", "--benchmark", "progress").exit_code == 0
    diff = invoke("release", "diff", "demo@1", "demo@2")
    assert diff.exit_code == 0 and "1 added, 0 removed, 0 changed" in diff.output
    exported = invoke("release", "export", "demo@2", "--out", str(tmp_path / "out"))
    assert exported.exit_code == 0 and (tmp_path / "out" / "demo-v2" / "records.parquet").exists()

    frame = root.blobs[0].sha256
    storage.blobs.path_for(frame).write_bytes(b"edited by hand")
    verify = invoke("release", "verify", "demo@1")
    assert verify.exit_code == 1
    assert f"blob {frame}: content does not hash to its address" in verify.output
    unknown = invoke("release", "verify", "nope")
    assert unknown.exit_code == 1 and "no release 'nope'; known: demo@1, demo@2" in unknown.output
    empty = invoke("release", "create", "x", "--benchmark", "explore")
    assert empty.exit_code == 1 and "matches no record" in empty.output


def test_release_list_and_verify_show_the_content_hash(project):
    from storage.releases import load_release

    storage, _, _ = project
    assert invoke("release", "create", "demo", "--benchmark", "progress").exit_code == 0
    content = load_release(storage.catalog, "demo").content_sha256
    listed = invoke("release", "list")
    assert listed.exit_code == 0 and "content sha256" in listed.output and content[:16] in listed.output
    verified = invoke("release", "verify", "demo")
    assert verified.exit_code == 0 and f"content sha256 {content}" in unwrapped(verified.output)


def test_broken_config_is_one_clear_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "benchwright.toml").write_text("[catalog]\nbatch_size = -3\n")
    result = invoke("config", "show")
    assert result.exit_code == 2 and "configuration error" in result.output and "batch_size" in result.output


def test_names_in_brackets_are_printed_as_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "benchwright.toml").write_text('[vic]\ntasks = ["sudoku"]\n[sectionx]\na = 1\n')
    result = invoke("config", "show")
    assert result.exit_code == 2 and "[sectionx]" in result.output


def test_an_unknown_release_to_evaluate_is_one_line_before_any_flow(project):
    result = invoke("evaluate", "--release", "nope", "--model", "baseline:random")
    assert result.exit_code == 1 and result.output.strip() == "error: no release 'nope'; known: none yet"


def test_an_out_below_a_file_is_one_line_for_every_command_that_writes(project, tmp_path):
    (tmp_path / "a-file").write_text("kept")
    below = str(tmp_path / "a-file" / "out")
    create = invoke("release", "create", "r1")
    assert create.exit_code == 0, create.output
    for args in (("release", "export", "r1", "--out", below), ("evaluate", "--release", "r1", "--model",
                                                               "baseline:random", "--out", below),
                 ("leaderboard", "--out", below)):
        result = invoke(*args)
        assert result.exit_code == 1 and "a-file exists and is not a folder" in result.output, (args, result.output)
        assert "Traceback" not in result.output
    assert (tmp_path / "a-file").read_text() == "kept"


def test_an_answers_file_that_cannot_be_read_is_one_line_before_any_flow(project, tmp_path):
    assert invoke("release", "create", "r1").exit_code == 0
    (tmp_path / "fake.xlsx").write_bytes(b"not a zip")
    result = invoke("evaluate", "--release", "r1", "--predictions", str(tmp_path / "fake.xlsx"), "--model", "m")
    assert result.exit_code == 1 and "not a readable xlsx file" in result.output and "Traceback" not in result.output


def test_models_list_and_check(tmp_path, monkeypatch):
    from tests.support.chat_server import ScriptedChatServer

    monkeypatch.chdir(tmp_path)
    with ScriptedChatServer() as server:
        server.script(("text", "a red cube"))
        (tmp_path / "benchwright.toml").write_text(
            f'[models.chat]\nbackend = "openai"\nmodel = "qwen-vl"\nparams = {{ base_url = "{server.url}" }}\n')
        listed = invoke("models", "list")
        assert listed.exit_code == 0
        assert "qwen-vl" in listed.output and "opencv" in listed.output and "default" in listed.output
        chat = invoke("models", "check", "chat")
        assert chat.exit_code == 0 and "chat ok openai qwen-vl" in chat.output and "a red cube" in chat.output
    for role, expected in (("detector", "('red cube', (20, 30, 60, 70), 1.0)"), ("tagger", "red cube"),
                           ("editor", "edited image of"), ("embedder", "384-dimensional"), ("scorer", "of 5")):
        result = invoke("models", "check", role)
        assert result.exit_code == 0 and expected in result.output, (role, result.output)
    (tmp_path / "benchwright.toml").write_text('[models.chat]\nbackend = "openai"\nmodel = "m"\n'
                                               'params = { base_url = "http://127.0.0.1:9/v1", max_retries = 0 }\n')
    down = invoke("models", "check", "chat")
    assert down.exit_code == 1 and "chat: failed ChatRequestError" in down.output


def test_sample_world_command_writes_episodes(tmp_path):
    result = invoke("sample-world", str(tmp_path / "world"), "--episodes", "3", "--cameras", "top,ego",
                    "--width", "96", "--height", "72")
    assert result.exit_code == 0, result.output
    folders = sorted(p.name for p in (tmp_path / "world").iterdir())
    assert folders == ["sample-pick_place-00000", "sample-stack-00001", "sample-unstack-00002"]
    assert sorted(p.name for p in (tmp_path / "world" / folders[0]).iterdir()) == ["ego.mp4", "episode.json",
                                                                                  "top.mp4"]
    bad = invoke("sample-world", str(tmp_path / "w2"), "--cameras", "roof")
    assert bad.exit_code == 2 and "unknown camera(s) roof" in bad.output


def test_release_export_in_the_progresslm_format(project, tmp_path, monkeypatch):
    from schemas import Producer
    from tasks.progress.published import SAMPLE_DIR, import_into_catalog

    storage, _, _ = project
    import_into_catalog(SAMPLE_DIR, storage, Producer(task="import"))
    assert invoke("release", "create", "pub", "--kind", "observation", "--kind", "demo").exit_code == 0
    pin_console_width(monkeypatch, 40)  # narrower than the path: it must still come out whole
    result = invoke("release", "export", "pub", "--format", "progresslm", "--out", str(tmp_path / "x"))
    assert result.exit_code == 0, result.output
    target = tmp_path / "x" / "pub-v1-progresslm"
    lines = [line.strip() for line in result.output.splitlines()]
    assert str(target) in lines and "visual_cross_view.jsonl 30" in lines  # each on a line of its own
    assert len((target / "visual_cross_view.jsonl").read_text().splitlines()) == 30
    assert (target / "text-normal.jsonl").exists()
    wrong = invoke("release", "export", "pub", "--format", "csv")
    assert wrong.exit_code == 1 and "unknown export format 'csv'" in wrong.output and "lmms-eval" in wrong.output


def test_a_harness_export_of_items_without_frames_is_refused(project, tmp_path):
    from schemas import Producer
    from tasks.progress.published import SAMPLE_DIR, import_into_catalog

    storage, _, _ = project
    import_into_catalog(SAMPLE_DIR, storage, Producer(task="import"))  # the published rows ship no frames
    assert invoke("release", "create", "pub", "--kind", "observation", "--kind", "demo").exit_code == 0
    blind = invoke("release", "export", "pub", "--format", "vlmevalkit", "--out", str(tmp_path / "x"))
    assert blind.exit_code == 1 and "no item that can be shown to a model" in blind.output
    assert "lack their images" in blind.output


def test_release_export_in_a_harness_format_the_benchmark_declares(tmp_path, monkeypatch):
    from dataclasses import replace

    from schemas.config import BlobSettings, CatalogSettings, Settings
    from tasks import benchmarks
    from tests.support.evaluation import progress_release

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BENCHWRIGHT_CONFIG", raising=False)
    (tmp_path / "benchwright.toml").write_text('[catalog]\npath = "state/cat.duckdb"\n'
                                               '[blobs]\nuri = "file://state/blobs"\n')
    settings = Settings(catalog=CatalogSettings(path=tmp_path / "state" / "cat.duckdb"),
                        blobs=BlobSettings(uri=f"file://{tmp_path}/state/blobs"))
    tag, _ = progress_release(settings, trajectories=1)
    result = invoke("release", "export", tag, "--format", "vlmevalkit", "--out", str(tmp_path / "x"))
    assert result.exit_code == 0, result.output
    lines = [line.strip() for line in result.output.splitlines()]
    written = sorted(p.name for p in (tmp_path / "x" / "tiny-progress-v1-vlmevalkit").iterdir())
    assert written == ["bw_tiny_progress.json", "bw_tiny_progress_same.tsv", "bw_tiny_progress_text.tsv"]
    assert "same 4" in lines and "text 3" in lines
    plugin = benchmarks.get("progress")
    from schemas import registry

    monkeypatch.setitem(registry._loaded, "progress", replace(plugin, harness_formats=("hf",)))
    refused = invoke("release", "export", tag, "--format", "lmms-eval", "--out", str(tmp_path / "y"))
    assert refused.exit_code == 1 and "PROGRESS-BENCH does not export to lmms-eval" in refused.output


def test_stats_prints_settings_and_draws_a_chart(project, tmp_path):
    from schemas import Producer
    from tasks.progress.published import SAMPLE_DIR, import_into_catalog

    storage, _, _ = project
    import_into_catalog(SAMPLE_DIR, storage, Producer(task="import"))
    assert invoke("release", "create", "pub", "--kind", "observation", "--kind", "demo").exit_code == 0
    result = invoke("stats", "pub", "--png", str(tmp_path / "chart.png"))
    assert result.exit_code == 0, result.output
    cells = {row[0]: row[1:] for line in result.output.splitlines() if line.count("│") >= 4
             for row in [[cell.strip() for cell in line.split("│")[1:-1]]]}
    assert cells["visual cross-view"] == ["2", "30"] and cells["all"][1] == "120"  # the bundled sample files
    assert "franka" in result.output and "agilex" in result.output
    assert (tmp_path / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("kind", ["folder", "fifo", "junk"])
def test_a_catalog_path_that_cannot_be_a_catalog_is_one_line_from_the_command(tmp_path, kind):
    """Through the installed entry point, as a user runs it: no traceback, no hang on a FIFO."""
    import os
    import subprocess
    import sys

    target = tmp_path / "cat.duckdb"
    {"folder": target.mkdir, "fifo": lambda: os.mkfifo(target), "junk": lambda: target.write_text("junk")}[kind]()
    (tmp_path / "benchwright.toml").write_text(f'[catalog]\npath = "{target}"\n')
    done = subprocess.run([sys.executable, "-c", "from flows.entry import main; main()", "release", "list"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "BENCHWRIGHT_WARM": "0", "BENCHWRIGHT_CONFIG": ""})
    assert done.returncode == 1 and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"error: [catalog] path {target}")


def test_records_list_shows_a_reason_as_written_on_one_line(project, monkeypatch):
    storage, root, _ = project
    storage.catalog.set_status([root.id], Status.QUARANTINED, reason="x: refused (allow it with [sources] "
                                                                        "allow_symlinks_outside)\nFORGED LINE")
    shown = invoke("records", "list", "--status", "quarantined").output
    assert "[sources] allow_symlinks_outside" in shown and "\\nFORGED LINE" in shown and "\nFORGED" not in shown


def test_release_create_with_a_name_that_cannot_be_one_is_one_line(project):
    result = invoke("release", "create", "../../evil")
    assert result.exit_code == 1 and len(result.output.strip().splitlines()) == 1, result.output
    assert "errors.pydantic.dev" not in result.output
