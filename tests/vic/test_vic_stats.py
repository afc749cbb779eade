"""`benchwright stats` of a ViC-Bench release: instances and questions per task beside the paper's 250, each
difficulty descriptor's spread, where Stage 1's right letters fall, and a chart of the descriptors."""

from __future__ import annotations

from schemas.config import Settings
from storage import open_storage
from tests.support.evaluation import vic_release


def test_a_release_is_counted_beside_the_paper_with_its_descriptors(settings: Settings, tmp_path) -> None:
    from tasks.vic.stats import stats_for_release

    tag = vic_release(settings, ("maze", "counting"), count=3)
    stats = stats_for_release(open_storage(settings).catalog, tag)
    per_task, spread, letters = stats.tables()
    assert per_task.rows == [("counting", 3, 9, 250), ("maze", 3, 9, 250), ("all", 6, 18, "1000 (2751 questions)")]
    assert [row[0] for row in spread.rows] == ["counting/density", "counting/near a line", "counting/objects",
                                         "maze/branches", "maze/distractor distance", "maze/moves"]
    assert all(row[1] == 3 and row[3] <= row[2] <= row[4] for row in spread.rows)
    assert sum(n for _, n in letters.rows) == 6
    assert stats.chart(tmp_path / "stats.png", tag).stat().st_size > 0
