"""The catalog's tables: the migrations that make them, one entry per schema version, and the records table's
columns in their order (the DuckDB and the PostgreSQL catalog share both)."""

from __future__ import annotations

# Each entry upgrades the schema by one version; never edit a released entry, append a new one.
MIGRATIONS: list[list[str]] = [
    [
        """CREATE TABLE records (
            id VARCHAR PRIMARY KEY,
            kind VARCHAR NOT NULL,
            benchmark VARCHAR NOT NULL,
            payload JSON NOT NULL,
            blobs JSON NOT NULL,
            parents VARCHAR[] NOT NULL,
            producer JSON NOT NULL,
            status VARCHAR NOT NULL,
            status_reason VARCHAR,
            created_at TIMESTAMPTZ NOT NULL,
            run_id VARCHAR
        )""",
        "CREATE TABLE record_parents (child VARCHAR NOT NULL, parent VARCHAR NOT NULL, PRIMARY KEY (child, parent))",
        """CREATE TABLE blobs (
            sha256 VARCHAR PRIMARY KEY, size BIGINT, media_type VARCHAR, created_at TIMESTAMPTZ NOT NULL)""",
        """CREATE TABLE status_events (
            record_id VARCHAR NOT NULL, status VARCHAR NOT NULL, reason VARCHAR, actor VARCHAR,
            changed_at TIMESTAMPTZ NOT NULL)""",
        """CREATE TABLE runs (
            run_id VARCHAR PRIMARY KEY, flow VARCHAR NOT NULL, params JSON, state VARCHAR NOT NULL,
            code_version VARCHAR, started_at TIMESTAMPTZ NOT NULL, finished_at TIMESTAMPTZ, summary JSON)""",
        """CREATE TABLE releases (
            name VARCHAR NOT NULL, version INTEGER NOT NULL, manifest JSON NOT NULL,
            manifest_sha256 VARCHAR NOT NULL, created_at TIMESTAMPTZ NOT NULL, PRIMARY KEY (name, version))""",
        """CREATE TABLE responses (
            key VARCHAR PRIMARY KEY, backend VARCHAR NOT NULL, model_id VARCHAR, request JSON,
            response JSON NOT NULL, created_at TIMESTAMPTZ NOT NULL)""",
        """CREATE VIEW review_decisions AS
            SELECT id, payload->>'item_id' AS item_id, payload->>'target_id' AS target_id,
                   payload->>'annotator' AS annotator, payload->>'verdict' AS verdict,
                   payload->'correction' AS correction, created_at
            FROM records WHERE kind = 'decision'""",
    ],
    [
        # Annotation: an item is leased to one annotator at a time (per overlap slot) until the lease expires; an
        # undone decision keeps its record (status rejected) and stops counting.
        """CREATE TABLE leases (
            item_id VARCHAR NOT NULL, annotator VARCHAR NOT NULL, queue VARCHAR NOT NULL,
            leased_at TIMESTAMPTZ NOT NULL, expires_at TIMESTAMPTZ NOT NULL, PRIMARY KEY (item_id, annotator))""",
        """CREATE OR REPLACE VIEW review_decisions AS
            SELECT id, payload->>'item_id' AS item_id, payload->>'target_id' AS target_id,
                   payload->>'annotator' AS annotator, payload->>'verdict' AS verdict,
                   payload->'correction' AS correction, created_at
            FROM records WHERE kind = 'decision' AND status <> 'rejected'""",
    ],
    [
        # Every flow records itself: a subflow names the run that started it, a scheduled run its deployment.
        "ALTER TABLE runs ADD COLUMN parent_run_id VARCHAR",
        "ALTER TABLE runs ADD COLUMN deployment VARCHAR",
    ],
]
SCHEMA_VERSION = len(MIGRATIONS)

RECORD_COLUMNS = ("id", "kind", "benchmark", "payload", "blobs", "parents", "producer", "status",
                   "status_reason", "created_at", "run_id")
