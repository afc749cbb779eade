"""The Hugging Face export of every benchmark, loaded with the real ``datasets`` (``load_dataset`` of the folder and
of a Parquet file) and compared row for row with the release, each image at its place in the question as the
benchmark's request has it (the dataset card's own code puts them back); its dataset card (hashes, counts,
sources, who reviewed what); a benchmark refusing a harness format it does not declare."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from schemas.config import Settings
from storage import open_storage
from tasks import benchmarks
from tests.support.harness_cases import IMAGE, REVIEW_QUEUE, SOURCES, check_row, exported, webplan_release


def _card_code(card: str) -> dict[str, Any]:
    """The Python the dataset card gives its readers (its ``interleaved``), run as written."""
    block = card.split("## Prompt format")[1].split("```python\n")[1].split("\n```")[0]
    namespace: dict[str, Any] = {}
    exec(block, namespace)
    return namespace


@pytest.mark.parametrize("name", benchmarks.names())
def test_the_hf_export_loads_with_datasets_row_for_row(settings: Settings, tmp_path: Path, name: str) -> None:
    import datasets

    from tasks.exporting.hf import export_hf

    tag, counts, expected = exported(settings, name, export_hf, tmp_path / "hf")
    storage = open_storage(settings)
    assert sum(counts.values()) == len(expected)
    card = (tmp_path / "hf" / "README.md").read_text()
    from storage.releases import load_release

    manifest = load_release(storage.catalog, tag)
    assert manifest.sha256() in card and "## How it was built" in card and "## What people reviewed" in card
    assert (tmp_path / "hf" / "statistics.png").read_bytes().startswith(b"\x89PNG")
    assert "Sources: not recorded" not in card and SOURCES[name] in card
    interleaved = _card_code(card)["interleaved"]
    seen = set()
    for config, count in counts.items():
        assert f"| {config} | test | {count} |" in card
        # a cache of the test's own: datasets' shared one keys a folder by its name, and gave an earlier export's rows
        loaded = datasets.load_dataset(str(tmp_path / "hf"), config, split="test", cache_dir=str(tmp_path / "cache"))
        assert isinstance(loaded.features["images"], datasets.List)
        assert isinstance(loaded.features["images"].feature, datasets.Image)
        raw = loaded.cast_column("images", datasets.List(datasets.Image(decode=False)))
        for row, raw_row in zip(loaded, raw, strict=True):
            want = expected[(row["strategy"], row["index"])]
            check_row(name, row, config, want)
            assert [image["bytes"] for image in raw_row["images"]] == want["images"]
            assert len(row["images"]) == len(want["images"])  # decoded as PIL images too
            # the request's order: each image at its place, its label beside it (not every image first)
            assert row["question"].count(IMAGE) == len(want["images"])
            parts = interleaved({"question": row["question"], "images": [i["bytes"] for i in raw_row["images"]]})
            assert [("image", p) if isinstance(p, bytes) else ("text", p) for p in parts] == want["parts"]
            assert [p for p in interleaved(row) if not isinstance(p, str)] == row["images"]
            seen.add((row["strategy"], row["index"]))
    assert seen == set(expected)
    whole = datasets.load_dataset("parquet", data_files={"test": str(tmp_path / "hf" / next(iter(counts)) /
                                                                       "test.parquet")}, split="test",
                                 cache_dir=str(tmp_path / "cache"))
    assert len(whole) == next(iter(counts.values()))



@pytest.mark.parametrize("people", [False, True])
def test_the_card_tells_people_from_the_unattended_demo_policy(settings: Settings, tmp_path: Path,
                                                               people: bool) -> None:
    from storage.releases import load_release
    from tasks.exporting.hf import export_hf

    tag = webplan_release(settings, people=people)
    storage = open_storage(settings)
    export_hf(storage.catalog, storage.blobs, tag, tmp_path / "hf")
    reviewed = (tmp_path / "hf" / "README.md").read_text().split("## What people reviewed")[1]
    released = len(load_release(storage.catalog, tag).records)
    automatic = released - 2 if people else released
    assert (f"{automatic} decision(s) by the unattended demo policy (`policy:unattended-demo`), not counted above: "
            "auto-accepted by the unattended demo review policy; NOT human-reviewed.") in reviewed
    assert f"| {REVIEW_QUEUE} | accept | unattended demo policy | {automatic} |" in reviewed
    if not people:
        assert "No person reviewed these records." in reviewed and "| person |" not in reviewed
        return
    # ann2's correction: the released record is the corrected version, whose parents name the decision
    assert "2 human decision(s) by 2 annotator(s) (ann1, ann2)" in reviewed
    assert f"| {REVIEW_QUEUE} | accept | person | 1 |" in reviewed
    assert f"| {REVIEW_QUEUE} | correct | person | 1 |" in reviewed



def test_a_benchmark_refuses_a_harness_format_it_does_not_declare(settings: Settings, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    from schemas import registry
    from tasks.exporting.hf import export_hf

    tag = webplan_release(settings)
    plugin = benchmarks.get("webplan")
    monkeypatch.setitem(registry._loaded, "webplan", replace(plugin, harness_formats=("vlmevalkit",)))
    storage = open_storage(settings)
    with pytest.raises(ValueError, match="does not export to hf: its harness formats are vlmevalkit"):
        export_hf(storage.catalog, storage.blobs, tag, tmp_path / "hf")
    assert not (tmp_path / "hf").exists()

