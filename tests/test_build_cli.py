"""`benchwright build NAME`, made from each plugin's build options: a flag per field, the shared options once, what
the command line gave reaching the build as the model names it, and one line for a wrong value."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, Field
from typer.testing import CliRunner

from flows.cli import app
from flows.cli.build_options import build_options
from tasks import benchmarks
from tests.support.cli import pin_console_width, unwrapped

runner = CliRunner()


@pytest.fixture
def built(tmp_path, monkeypatch) -> list[dict[str, Any]]:
    """The calls the build commands make to the build flow, which does not run."""
    from flows import build as build_flow

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BENCHWRIGHT_CONFIG", raising=False)
    pin_console_width(monkeypatch)
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(build_flow, "start_stage_workers", lambda *args: None)
    monkeypatch.setattr(build_flow, "build", lambda name, settings, **kwargs: calls.append({"name": name, **kwargs})
                        or {})
    return calls


def flags_of(name: str) -> set[str]:
    import typer.main

    command = typer.main.get_command(app).commands["build"].commands[name]
    return {flag for param in command.params for flag in (*param.opts, *param.secondary_opts)}


@pytest.mark.parametrize("name", [p.name for p in benchmarks.every() if p.build_options is not None])
def test_every_build_option_is_a_flag_beside_the_shared_ones(name):
    plugin = benchmarks.get(name)
    flags = flags_of(name)
    declared = {f"--{option.flag}" for option in build_options(plugin.build_options)}
    assert declared <= flags and {"--stage", "--unattended-review"} <= flags
    assert len(declared) == len(plugin.build_options.model_fields)
    shown = runner.invoke(app, ["build", name, "--help"])
    assert shown.exit_code == 0 and all(stage.name in shown.output for stage in plugin.stages)


def test_the_flags_users_know_stay_what_they_were():
    assert {"--test", "--count", "--episodes", "--seed", "--trajectories", "--trajectories-format",
            "--rebuild"} <= flags_of("webplan")
    assert {"--episodes", "--key-steps", "--hdf5-images", "--hdf5-camera", "--published", "--published-frames",
            "--interval", "--boundary", "--demo-camera", "--cross-camera", "--trajectory"} <= flags_of("progress")
    assert {"--clips", "--clip-format", "--narrations", "--official", "--official-release", "--clip",
            "--annotate-again"} <= flags_of("explore")
    assert {"--task", "--images", "--crowd", "--quality-top-n"} <= flags_of("vic")


def test_what_the_command_line_gave_reaches_the_build_as_the_options_name_it(built, tmp_path):
    (tmp_path / "trajectories").mkdir()
    result = runner.invoke(app, ["build", "webplan", "--test", "edge", "--test", "future", "--count", "2",
                                 "--trajectories", str(tmp_path / "trajectories"), "--rebuild",
                                 "--unattended-review", "accept"])
    assert result.exit_code == 0, result.output
    assert built == [{"name": "webplan", "stages": None, "units": None, "unattended_review": "accept",
                      "options": {"tests": ("edge", "future"), "count": 2,
                                  "trajectories_dir": str(tmp_path / "trajectories"), "rebuild": True}}]


def test_a_mapping_repeated_units_and_an_option_that_chooses_its_stages(built, tmp_path):
    result = runner.invoke(app, ["build", "progress", "--hdf5-camera", "top=obs/top", "--hdf5-camera", "side=obs/s",
                                 "--boundary", "0.1", "--trajectory", "t1", "--stage", "construct"])
    assert result.exit_code == 0, result.output
    assert built[0]["options"] == {"hdf5_cameras": {"top": "obs/top", "side": "obs/s"}, "boundary_offsets": (0.1,)}
    assert built[0]["units"] == ["t1"] and built[0]["stages"] == ["construct"]
    (tmp_path / "official").mkdir()
    assert runner.invoke(app, ["build", "explore", "--official", str(tmp_path / "official")]).exit_code == 0
    assert built[1]["stages"] == ["official"] and built[1]["options"] == {"official_dir": str(tmp_path / "official")}


@pytest.mark.parametrize(("args", "said"), [
    (["webplan", "--trajectories-format", "bad"], "--trajectories-format: one of jsonl, mm-mind2web, guiact "
                                                  "(got 'bad')"),
    (["progress", "--hdf5-camera", "top"], "--hdf5-camera 'top': expected NAME=KEY"),
    (["vic", "--stage", "nope"], "ViC-Bench has no stage nope: choose from generate, review"),
])
def test_a_wrong_value_is_one_line_naming_the_flag(built, args, said):
    result = runner.invoke(app, ["build", *args])
    assert result.exit_code == 2 and said in unwrapped(result.output)
    assert "Traceback" not in result.output and not built


def test_a_missing_folder_is_refused_before_anything_runs(built, tmp_path):
    result = runner.invoke(app, ["build", "vic", "--images", str(tmp_path / "nowhere")])
    assert result.exit_code == 2 and "does not exist" in unwrapped(result.output) and not built


def test_a_field_no_option_can_carry_is_an_error_when_the_command_is_made():
    class Odd(BaseModel):
        shapes: list[dict[str, int]] | None = None
        tries: int = Field(3, ge=1, le=9, description="How often.")

    with pytest.raises(TypeError, match="build option shapes"):
        build_options(Odd)
    (tries,) = build_options(type("Plain", (BaseModel,), {"__annotations__": {"tries": int}, "tries": Field(
        3, ge=1, le=9, description="How often.")}))
    assert tries.flag == "tries" and tries.parameter.default.min == 1 and tries.parameter.default.max == 9


def test_every_help_fits_80_columns_without_cutting_a_word(monkeypatch):
    import typer.main

    monkeypatch.setenv("COLUMNS", "80")
    root = typer.main.get_command(app)

    def paths(command: Any, path: list[str]) -> list[list[str]]:
        return [path] + [p for name, sub in (getattr(command, "commands", None) or {}).items()
                         for p in paths(sub, [*path, name])]

    for path in paths(root, []):
        shown = runner.invoke(app, [*path, "--help"], terminal_width=80)
        assert shown.exit_code == 0, path
        assert "…" not in shown.output, (path, shown.output)
        assert max(len(line) for line in shown.output.splitlines()) <= 80, path


def test_the_main_job_table_shows_what_each_stage_read_in_its_own_unit(monkeypatch, capsys):
    from rich.console import Console

    from flows import cli
    from flows.cli import terminal
    from flows.stage_counts import BuiltCounts

    assert BuiltCounts.of({"decided by policy": 3, "queues": {}}) is None  # review: decisions, no records built
    official = BuiltCounts.of({"rows": 9, "instances": 4, "records": 8, "new": 8, "quarantined": 1}, "rows")
    assert (official.unit, official.read, official.records, official.superseded) == ("rows", 9, 8, None)
    # the read column is the count the stage's declaration names (``BuildStage.unit``), never a guess: a
    # generator's "instances" count what it made, so its read cell stays empty
    extract, annotate = (stage for stage in benchmarks.get("explore").stages if stage.name in ("extract", "annotate"))
    monkeypatch.setattr(terminal, "console", Console(width=200))
    cli.print_main_job({"run_id": "r1", "releases": {}, "built": {
        "explore": {extract.key: {"clips": 3, "records": 6, "new": 0, "quarantined": 1},
                    annotate.key: {"instances": 3, "records": 3, "new": 3}, "review": {"decided by policy": 0}},
        "vic": {"instances": {"instances": 2, "records": 4, "new": 4, "quarantined": 0}}}})
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in capsys.readouterr().out.splitlines()
            if line.startswith("│")]
    assert rows == [["explore", extract.key, "3", "6", "0", "1"], ["explore", annotate.key, "3", "3", "3", ""],
                    ["vic", "instances", "", "4", "4", "0"]]
