from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from schemas import (
    BenchmarkItem,
    BlobRef,
    Producer,
    Record,
    canonical_json,
    make_record,
    payload_model,
    registered_kinds,
)
from schemas.config import Settings, load_settings, masked
from schemas.releases import ReleaseSelection
from tasks.explore.payloads import SceneAnnotation, SceneObject
from tasks.explore.settings import ExploreSettings
from tasks.progress.payloads import Demo, Observation
from tasks.progress.settings import ProgressSettings
from tests.support.catalog import item_record

ROOT = Path(__file__).resolve().parents[1]


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
    with_blob = make_record(payload, benchmark="progress", producer=Producer(task="t"), blobs=[ref])
    without = make_record(payload, benchmark="progress", producer=Producer(task="t"))
    assert with_blob.id != without.id


def test_typed_payload_round_trip_and_validation():
    obs = Observation(demo_id="d", frame="f.jpg", closest_idx=2, delta=-5, progress_score=0.45)
    record = make_record(obs, benchmark="progress", producer=Producer(task="t"))
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


def test_a_record_names_a_registered_benchmark_as_a_plain_string():
    record = item_record(1)
    assert type(record.benchmark) is str and record.benchmark == "explore"
    assert Record.model_validate_json(record.model_dump_json()) == record
    from schemas import registry

    registered = ", ".join(registry.names())  # as the entry points list them
    with pytest.raises(ValidationError, match=f"no benchmark named 'mmbench' is registered; registered: {registered}"):
        make_record(BenchmarkItem(task="maze", question="q", answer=1), benchmark="mmbench",
                    producer=Producer(task="t"))
    with pytest.raises(ValidationError, match="no benchmark named 'mmbench'"):
        ReleaseSelection(benchmarks=("progress", "mmbench"))


def test_a_benchmarks_payloads_load_on_first_use_in_a_fresh_process():
    """A process that only reads records finds every registered benchmark's kinds without importing them first."""
    code = ("import sys; from schemas import payload_model; "
            "loaded = sorted(m for m in sys.modules if m.startswith(('tasks.progress', 'tasks.explore'))); "
            "model = payload_model('observation'); "
            "print(loaded, model.__module__, payload_model('scene').__module__)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[]", "tasks.progress.payloads", "tasks.explore.payloads"]
    with pytest.raises(KeyError, match="no payload model registered for kind 'nope'"):
        payload_model("nope")


def test_the_payloads_json_is_unchanged_by_their_move():
    """Record ids hash the payload JSON: moving a payload class must not change a field's name, order or value."""
    obs = Observation(demo_id="d", frame="f.jpg", closest_idx=2, delta=-0.0, progress_score=0.45)
    assert canonical_json(obs.model_dump(mode="json")) == (
        '{"answerable":true,"camera_combination":null,"closest_idx":2,"delta":-0.0,"demo_id":"d","frame":"f.jpg",'
        '"frame_missing":false,"negative":null,"progress_score":0.45,"source_frame":null,"source_row":null,'
        '"strategy":null,"view":"same"}')
    assert list(obs.model_dump()) == ["demo_id", "frame", "view", "answerable", "closest_idx", "delta",
                                      "progress_score", "negative", "camera_combination", "strategy",
                                      "source_frame", "frame_missing", "source_row"]
    scene = SceneAnnotation(instance_id="i", stage="tagged",
                            objects=[SceneObject(id="bowl.1", category="bowl", box=(1, 2, 3, 4))])
    record = make_record(scene, benchmark="explore", producer=Producer(task="t"))
    assert record.model_dump_json(exclude={"created_at", "producer"}) == (
        '{"id":"ca7e1772ca1b15960cb75752b4fb7f2e01df05ecea079fd131d5c608a7d7196c","kind":"scene",'
        '"benchmark":"explore","payload":{"instance_id":"i","stage":"tagged","tags":[],"objects":[{"id":"bowl.1",'
        '"category":"bowl","box":[1.0,2.0,3.0,4.0],"description":"","relation":[],"key_state":null}],'
        '"triplets":[],"annotator":null},"blobs":[],"parents":[],"status":"candidate","status_reason":null}')
    # both ids as the enum-era code computed them (schemas.Benchmark, payloads in schemas/payloads.py)
    assert make_record(obs, benchmark="progress", producer=Producer(task="t")).id == (
        "d31479bdb1097814f5a700fd61267b2ed3d78711865b7ee887925da466ee1816")


def test_each_benchmarks_settings_section_is_read_from_the_file_and_the_environment(tmp_path, monkeypatch):
    config = tmp_path / "bw.toml"
    config.write_text('[progress]\ninterval_per_segment = 5\nboundary_offsets = [0.2, 0.3]\n'
                      '[explore]\nshort_min = 12\n')
    monkeypatch.setenv("BENCHWRIGHT_CONFIG", str(config))
    monkeypatch.setenv("BENCHWRIGHT_EXPLORE__MEDIUM_MIN", "150")
    settings = load_settings()
    assert isinstance(settings.progress, ProgressSettings) and isinstance(settings.explore, ExploreSettings)
    assert (settings.progress.interval_per_segment, settings.progress.boundary_offsets) == (5, (0.2, 0.3))
    assert settings.progress.demo_camera == "front"  # a default beside the file's values
    assert (settings.explore.short_min, settings.explore.medium_min) == (12, 150)
    shown = masked(settings)
    assert shown["progress"]["interval_per_segment"] == 5 and shown["explore"]["medium_min"] == 150
    assert Settings.model_validate(settings.model_dump()).explore == settings.explore
    changed = settings.model_copy(update={"explore": settings.explore.model_copy(update={"short_min": 3})})
    assert changed.explore.short_min == 3 and settings.explore.short_min == 12
    given = load_settings(progress=ProgressSettings(interval_per_segment=1))
    assert given.progress.interval_per_segment == 1 and given.explore.short_min == 12


def test_sections_default_when_absent_and_a_bad_or_unknown_one_is_a_clear_error(tmp_path, monkeypatch):
    config = tmp_path / "bw.toml"
    config.write_text('[catalog]\npath = "c.duckdb"\n')
    monkeypatch.setenv("BENCHWRIGHT_CONFIG", str(config))
    assert load_settings().progress == ProgressSettings() and load_settings().explore == ExploreSettings()
    config.write_text("[progress]\ninterval_per_segment = -1\n")
    with pytest.raises(ValueError, match=r"\[progress\] interval_per_segment: Input should be greater than "
                                              r"or equal to 0 \(got -1\)"):
        load_settings()
    config.write_text("[mmbench]\nshort_min = 1\n")
    from schemas import registry

    sections = re.escape(", ".join(f"[{name}]" for name in registry.names()))
    with pytest.raises(ValueError, match=r"unknown section\(s\) \[mmbench\]: neither a setting nor the section "
                                         r"of a registered benchmark \(benchmark sections: " + sections):
        load_settings()


@pytest.mark.parametrize(("text", "message"), [
    ('[catalog]\npathh = "x.duckdb"\n', "[catalog] pathh: not a setting of this section (misspelt?) (got 'x.duckdb')"),
    ("[catalog]\nhold_s = inf\n", "[catalog] hold_s: Input should be a finite number (got inf)"),
    ("[compute]\nworkers = 100000\n", "[compute] workers: Input should be less than or equal to 1024"),
    ('[blobs]\nuri = "ftp://host/x"\n', "[blobs]: uri names the blob store as file://<folder> or s3://"),
    ('[vic]\ntasks = ["maze", "sudoku"]\n', "[vic] tasks: unknown ViC-Bench task(s) sudoku; choose from"),
    ('[webplan]\nfuture_count = nan\n', "[webplan] future_count:"),
    ("[explore]\nshort_min = 300\n", "[explore]: the subset bounds must rise: short_min 300 < medium_min 100"),
    ("[progress]\nboundary_offsets = [0.9]\n", "[progress] boundary_offsets: boundary offsets are fractions"),
    ('[annotation]\nport = 80\nhosst = "0.0.0.0"\n', "[annotation] hosst: not a setting of this section"),
])
def test_a_wrong_key_or_value_in_any_section_is_one_line_naming_it(tmp_path, monkeypatch, text, message):
    config = tmp_path / "bw.toml"
    config.write_text(text)
    monkeypatch.setenv("BENCHWRIGHT_CONFIG", str(config))
    with pytest.raises(ValueError) as refused:
        load_settings()
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_a_misspelt_model_role_or_a_backend_number_out_of_range_is_refused_by_name():
    from schemas.config import MODEL_ROLES, Settings
    from tasks.models.registry import BACKENDS

    assert set(MODEL_ROLES) == set(BACKENDS)  # the configuration knows every role the registry serves
    with pytest.raises(ValueError, match=r"unknown model role\(s\) \[models.bogus\]"):
        Settings.model_validate({"models": {"bogus": {"backend": "x"}}})
    for params, said in (({"timeout_s": float("inf")}, "params.timeout_s = inf is not a finite number"),
                         ({"max_concurrency": -3}, "params.max_concurrency = -3 is outside 1-1024")):
        with pytest.raises(ValueError, match=re.escape(said)):
            Settings.model_validate({"models": {"chat": {"backend": "openai", "params": params}}})
    assert Settings.model_validate({"models": {"chat": {"backend": "openai", "params": {"max_concurrency": 4}}}})
