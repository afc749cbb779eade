from __future__ import annotations

import pytest
from pydantic import ValidationError

from schemas import Benchmark, BlobRef, Demo, Observation, Producer, Record, make_record, registered_kinds
from schemas.config import load_settings, masked
from tests.conftest import item_record


def test_record_id_depends_on_content_and_parents_not_on_producer_or_time():
    a = item_record(1, producer=Producer(task="one", backend="offline"))
    b = item_record(1, producer=Producer(task="two", backend="openai", model_id="qwen"))
    assert a.id == b.id
    assert a.created_at <= b.created_at
    assert item_record(2).id != a.id
    assert item_record(1, parents=(a.id,)).id != a.id


def test_blobs_are_part_of_identity():
    payload = Demo(trajectory_id="t", modality="visual", task_goal="stack", steps=["f0.jpg"], total_steps=1,
                   data_source="robomind")
    ref = BlobRef(sha256="a" * 64, role="frame_0", media_type="image/jpeg")
    with_blob = make_record(payload, benchmark=Benchmark.PROGRESS, producer=Producer(task="t"), blobs=[ref])
    without = make_record(payload, benchmark=Benchmark.PROGRESS, producer=Producer(task="t"))
    assert with_blob.id != without.id


def test_typed_payload_round_trip_and_validation():
    obs = Observation(demo_id="d", frame="f.jpg", closest_idx=2, delta=-5, progress_score=0.45)
    record = make_record(obs, benchmark=Benchmark.PROGRESS, producer=Producer(task="t"))
    assert isinstance(record.typed(), Observation)
    assert record.typed().progress_score == pytest.approx(0.45)
    restored = Record.model_validate_json(record.model_dump_json())
    assert restored == record
    with pytest.raises(ValidationError):
        Observation(demo_id="d", frame="f.jpg", progress_score=1.5)
    with pytest.raises(ValidationError):
        Observation(demo_id="d", frame="f.jpg", unknown_field=1)
    assert {"trajectory", "demo", "observation", "item", "scene", "review_item", "decision", "prediction",
            "metric", "quarantined_input"} <= set(registered_kinds())


def test_settings_from_toml_then_env_with_secrets_masked(tmp_path, monkeypatch):
    config = tmp_path / "bw.toml"
    config.write_text('[catalog]\npath = "x/cat.duckdb"\n[blobs]\nuri = "s3://bucket/pre"\n'
                      '[models.chat]\nbackend = "openai"\nmodel = "Qwen2.5-VL-72B"\napi_key = "sk-secret"\n')
    monkeypatch.setenv("BENCHWRIGHT_CONFIG", str(config))
    monkeypatch.setenv("BENCHWRIGHT_BLOBS__ENDPOINT_URL", "http://127.0.0.1:9000")
    settings = load_settings()
    assert str(settings.catalog.path) == "x/cat.duckdb"
    assert settings.blobs.uri == "s3://bucket/pre"
    assert settings.blobs.endpoint_url == "http://127.0.0.1:9000"
    assert settings.models["chat"].api_key.get_secret_value() == "sk-secret"
    shown = masked(settings)
    assert shown["models"]["chat"]["api_key"] == "****"
    assert shown["models"]["chat"]["model"] == "Qwen2.5-VL-72B"
    monkeypatch.setenv("BENCHWRIGHT_CATALOG__PATH", "y.duckdb")
    assert str(load_settings().catalog.path) == "y.duckdb"


def test_missing_config_file_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("BENCHWRIGHT_CONFIG", str(tmp_path / "nope.toml"))
    with pytest.raises(FileNotFoundError, match=r"nope\.toml"):
        load_settings()
