"""What listing commands print for people at any width, and for scripts (``--json``): a table where it fits, one
block per row where it does not, every name and hash whole; ``release diff`` summed up by kind."""

from __future__ import annotations

import json

import pytest

from tests.support.cli import invoke, pin_console_width

LONG = "a-release-name-longer-than-a-narrow-terminal-would-leave-it"


@pytest.fixture
def released(project, monkeypatch):
    pin_console_width(monkeypatch, 200)
    assert invoke("release", "create", LONG, "--benchmark", "progress").exit_code == 0
    assert invoke("release", "create", "short", "--status", "candidate", "--status", "accepted").exit_code == 0
    return project


def test_at_80_columns_a_listing_that_does_not_fit_gives_each_row_a_block_with_every_value_whole(released,
                                                                                               monkeypatch):
    pin_console_width(monkeypatch, 80)
    shown = invoke("release", "list").output
    lines = shown.splitlines()
    assert f"{LONG}@1" in lines and "short@1" in lines  # a row's name is its block's heading, on a line of its own
    assert all(len(line) <= 80 for line in lines) and "…" not in shown and "┃" not in shown
    hashes = [line.split()[-1] for line in lines if line.strip().startswith("content sha256")]
    assert len(hashes) == 2 and all(len(h) == 16 for h in hashes)


def test_a_listing_that_fits_is_a_table_and_json_gives_scripts_every_value(released, monkeypatch):
    pin_console_width(monkeypatch, 200)
    table = invoke("release", "list").output
    assert "┃ release" in table and f"{LONG}@1" in table
    rows = json.loads(invoke("release", "list", "--json").output)
    assert [r["release"] for r in rows] == [f"{LONG}@1", "short@1"]
    assert all(len(r["content sha256"]) == 64 and isinstance(r["records"], int) for r in rows)
    stats = json.loads(invoke("records", "stats", "--json").output)
    assert {"benchmark", "kind", "status", "records"} == set(stats[0]) and sum(r["records"] for r in stats) == 3
    records = json.loads(invoke("records", "list", "--json").output)
    assert len(records) == 3 and all(len(r["id"]) == 64 for r in records)
    assert {r["role"] for r in json.loads(invoke("models", "list", "--json").output)} >= {"chat", "embedder"}


def test_release_diff_sums_up_by_kind_and_lists_only_the_first_ids(released):
    shown = invoke("release", "diff", f"{LONG}@1", "short@1", "--limit", "1").output
    assert shown.splitlines()[0] == f"{LONG}@1 -> short@1: 2 added, 0 removed, 0 changed"
    assert "┃ kind" in shown and "... 1 more added (--limit, --json)" in shown
    assert len([line for line in shown.splitlines() if line.startswith("  + ")]) == 1
    whole = json.loads(invoke("release", "diff", f"{LONG}@1", "short@1", "--json").output)
    assert len(whole["added"]) == 2 and sum(k["added"] for k in whole["by kind"].values()) == 2


def test_a_builds_counts_print_as_words_never_as_a_python_dict():
    from flows.stage_lines import stage_lines

    lines = stage_lines("vic", {"instances": {"instances": 3, "by task": {"maze": 2, "jigsaw": 1}, "skipped": []}})
    assert lines == ["instances: instances 3, by task (maze 2, jigsaw 1), skipped none"]


def test_the_stages_that_decide_are_said_in_words_corrections_first():
    """Which stages report decisions is their declaration's (``BuildStage.decides``), not a list of names in flows."""
    from flows.stage_lines import stage_lines

    lines = stage_lines("explore", {
        "review": {"rejected on recheck": 1, "decided by policy": 0, "queues": {"recheck": 2}},
        "corrections": {"corrections": 2, "withdrawn": 1, "quarantined": 0, "new": 2}})
    assert lines == ["explore review: 2 corrections applied, 1 withdrawn (no longer their item's resolution); "
                     "1 record rejected on recheck (the next release leaves them out); 2 items await people "
                     "(recheck 2)"]
