"""The contract: the record envelope, the payloads every benchmark shares and the configuration model. A
benchmark's own payloads live in its folder (``tasks/<name>/payloads.py``)."""

from schemas.payloads import (
    BenchmarkItem,
    Decision,
    EvaluationRun,
    MetricRow,
    Prediction,
    QuarantinedInput,
    ReviewItem,
    Trajectory,
)
from schemas.records import (
    BenchmarkName,
    BlobRef,
    Payload,
    Producer,
    Record,
    Status,
    canonical_json,
    code_version,
    make_record,
    payload_model,
    record_id,
    register_payload,
    registered_benchmark,
    registered_kinds,
)

__all__ = [
    "BenchmarkItem",
    "BenchmarkName",
    "BlobRef",
    "Decision",
    "EvaluationRun",
    "MetricRow",
    "Payload",
    "Prediction",
    "Producer",
    "QuarantinedInput",
    "Record",
    "ReviewItem",
    "Status",
    "Trajectory",
    "canonical_json",
    "code_version",
    "make_record",
    "payload_model",
    "record_id",
    "register_payload",
    "registered_benchmark",
    "registered_kinds",
]
