"""The commands around the annotation app: `annotate` without accounts, `records lineage` as a tree, and
`review recheck` sending released records back to people."""

from __future__ import annotations

import pytest

from schemas import Status
from tests.support.catalog import item_record
from tests.support.cli import invoke

pytestmark = pytest.mark.usefixtures("fixed_width")  # the consoles at 200 columns


def test_lineage_is_a_tree_with_each_records_stage(project):
    storage, root, child = project
    grandchild = item_record(2, parents=(root.id, child.id))  # two paths lead to it from the root
    storage.catalog.put_records([grandchild])
    result = invoke("records", "lineage", root.id)
    assert result.exit_code == 0, result.output
    ancestors, descendants = result.output.split("descendants")
    assert "(0)" in ancestors
    lines = descendants.splitlines()
    child_line = next(i for i, line in enumerate(lines) if line.lstrip("│├└─ ").startswith(child.id))
    assert lines[child_line].startswith(("├── ", "└── ")) and " item test " in lines[child_line]
    under_child = lines[child_line + 1]
    assert grandchild.id in under_child and under_child.index(grandchild.id) > lines[child_line].index(child.id)
    assert sum(grandchild.id in line for line in lines) == 2 and "(shown above)" in descendants
    assert f" {grandchild.producer.task} " in under_child and "candidate" in under_child


def test_annotate_without_accounts_prints_the_configuration_to_add_and_no_address(project):
    result = invoke("annotate")
    assert result.exit_code == 1
    assert "[[annotation.users]]" in result.output and 'role = "annotator"' in result.output
    assert "http://" not in result.output and "hash-password" in result.output


def test_review_recheck_sends_a_seeded_sample_of_a_release_once(project):
    from annotation_ui.work import Work
    from schemas.config import AnnotationSettings
    from storage.releases import create_release
    from tasks.review import open_items

    storage, _, child = project
    storage.catalog.set_status([child.id], Status.ACCEPTED, actor="ann")
    tag = create_release(storage.catalog, storage.blobs, "t-progress").tag
    first = invoke("review", "recheck", tag, "--sample", "2", "--seed", "7")
    assert first.exit_code == 0, first.output
    assert "2 records of t-progress@1 in the recheck queue (2 new, 0 sent before)" in first.output
    sent = {i.payload["target_id"] for i in open_items(storage.catalog, "recheck")}
    again = invoke("review", "recheck", tag, "--sample", "2", "--seed", "7")
    assert "(0 new, 2 sent before)" in again.output
    assert {i.payload["target_id"] for i in open_items(storage.catalog, "recheck")} == sent
    only = invoke("review", "recheck", tag, "--kind", "item")
    assert "1 records of t-progress@1" in only.output
    work = Work(storage.catalog, AnnotationSettings())
    item = work.next_item("recheck", "ann1")
    work.submit(item.id, "ann1", "reject", note="wrong label")
    assert storage.catalog.get_record(item.payload["target_id"]).status == Status.REJECTED  # out of the next one
    missing = invoke("review", "recheck", "nope")
    assert missing.exit_code == 1 and "no release 'nope'" in missing.output
