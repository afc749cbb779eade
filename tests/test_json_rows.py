"""``tasks.sources.rows.loads``: whichever parser reads a text (orjson where that is safe, Python's json with its
per-object checks otherwise), the result and the refusals are the same."""

from __future__ import annotations

import json
import random

import pytest

from tasks.sources import rows
from tasks.sources.rows import RowError, loads, problems_of


def test_a_plain_file_is_read_by_the_quick_parser_exactly_as_python_reads_it() -> None:
    generator = random.Random(7)
    manifest = {"id": "ep-1", "fps": 10, "n_frames": 107,
                "states": [{"position": [generator.uniform(-1, 1) for _ in range(3)], "held_by": None,
                            "note": 'a "quoted" word, a back\\slash and é'} for _ in range(200)],
                "small": [generator.uniform(0.001, 0.01) for _ in range(50)], "big": 10**17, "negative": -(10**17),
                "tiny": 5e-324, "zero": -0.0}
    text = json.dumps(manifest, ensure_ascii=False)
    assert rows._checked_quickly(text) is not None  # the quick path serves such a file
    assert loads(text) == json.loads(text)
    read = loads(text)
    assert [repr(x) for s in read["states"] for x in s["position"]] == \
        [repr(x) for s in manifest["states"] for x in s["position"]]
    assert list(map(repr, read["small"])) == list(map(repr, manifest["small"]))


@pytest.mark.parametrize("text", [
    '{"a": {"b": 1, "b": 2}}',
    '[{"k": "x\\"y", "k": "z"}]',
    '{"k" : 1, "k": 2}',
    # two quotes written as \u0022 come back from orjson as \": as many quotes as the repeated key took away
    '{"q": "\\u0022\\u0022", "k": 1, "k": 2}',
])
def test_a_key_repeated_anywhere_is_refused(text: str) -> None:
    with pytest.raises(RowError, match="appears twice"):
        loads(text)


def test_whole_numbers_keep_64_bits_and_beyond_are_refused() -> None:
    data = loads('{"n": 9223372036854775807, "m": [-9223372036854775808]}')  # 19 digits: the careful parser
    assert data == {"n": 2**63 - 1, "m": [-(2**63)]} and isinstance(data["n"], int)
    with pytest.raises(RowError, match=r"123456789012345678901234567890 \(beyond 64 bits\) is not a finite number"):
        loads('{"n": 123456789012345678901234567890}')
    with pytest.raises(RowError, match="1e400 is not a finite number"):
        loads('{"x": [1e400]}')
    keyed = loads('{"ep1": {"n": 1e999}, "ep2": {"n": 1}}', keyed=True)
    assert "1e999" in problems_of(keyed)["ep1"] and keyed["ep2"] == {"n": 1}


def test_deep_nesting_and_escapes_read_as_python_reads_them() -> None:
    deep = "[" * 300 + "1" + "]" * 300
    assert loads(deep) == json.loads(deep)
    with pytest.raises(RowError, match="nested too deep"):
        loads("[" * 100_000 + "]" * 100_000)
    escaped = '{"s": "\\u00e9\\/\\n\\t", "t": "\\ud83d\\ude00"}'
    assert loads(escaped) == {"s": "é/\n\t", "t": "\U0001f600"}


@pytest.mark.parametrize("text, reason", [
    ('{"x": NaN}', "NaN is not a finite number"),
    ('{"x": [1, -Infinity]}', "-Infinity is not a finite number"),
    ('{"x": 1,}', "not valid JSON"),
])
def test_what_orjson_refuses_is_refused_with_the_reason(text: str, reason: str) -> None:
    with pytest.raises(RowError, match=reason):
        loads(text)


def test_a_keyed_file_lists_its_repeated_key_and_keeps_the_rest() -> None:
    data = loads('{"ep1": [1], "ep2": [2], "ep1": [3]}', keyed=True)
    assert problems_of(data) == {"ep1": "'ep1' appears twice"}
    assert data["ep2"] == [2]
    assert problems_of(loads('{"ep1": [1], "ep2": [2]}', keyed=True)) == {}
