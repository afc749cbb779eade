"""A new PREFECT_HOME's database copied from the installed Prefect's template instead of migrated (the real
template and a real server on it: tests/test_server.py)."""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path

import pytest

from flows import prefect_database
from flows.prefect_database import DATABASE_FILE, TEMPLATE_VARIABLE, seed_database


@pytest.fixture
def template(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "template.db"
    with sqlite3.connect(path) as made:
        made.execute("CREATE TABLE alembic_version (version_num VARCHAR)")
        made.execute("INSERT INTO alembic_version VALUES ('head-of-this-prefect')")
    monkeypatch.setenv(TEMPLATE_VARIABLE, str(path))
    for name in ("PREFECT_SERVER_DATABASE_CONNECTION_URL", "PREFECT_API_DATABASE_CONNECTION_URL"):
        monkeypatch.delenv(name, raising=False)
    return path


def test_a_new_home_gets_a_copy_of_the_template(template: Path, tmp_path: Path) -> None:
    home = tmp_path / "new-home"
    assert seed_database(home) == template and prefect_database.SEEDED[home] == template
    assert (home / DATABASE_FILE).read_bytes() == template.read_bytes()
    assert [p.name for p in home.iterdir()] == [DATABASE_FILE]  # no staged copy left behind


def test_a_home_with_a_database_keeps_it(template: Path, tmp_path: Path) -> None:
    home = tmp_path / "used-home"
    home.mkdir()
    (home / DATABASE_FILE).write_bytes(b"a database with a user's flow runs")
    assert seed_database(home) is None
    assert (home / DATABASE_FILE).read_bytes() == b"a database with a user's flow runs"


def test_a_database_made_meanwhile_is_not_replaced(template: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "raced-home"
    copy = prefect_database.shutil.copyfile

    def a_server_creates_it_meanwhile(source: Path, target: Path) -> None:
        copy(source, target)
        (home / DATABASE_FILE).write_bytes(b"made by the server")

    monkeypatch.setattr(prefect_database.shutil, "copyfile", a_server_creates_it_meanwhile)
    assert seed_database(home) is None
    assert (home / DATABASE_FILE).read_bytes() == b"made by the server"
    assert [p.name for p in home.iterdir()] == [DATABASE_FILE]


@pytest.mark.parametrize("variable", ["PREFECT_SERVER_DATABASE_CONNECTION_URL", "PREFECT_API_DATABASE_CONNECTION_URL"])
def test_a_database_configured_elsewhere_gets_nothing(template: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch, variable: str) -> None:
    monkeypatch.setenv(variable, "postgresql+asyncpg://prefect@db.internal/prefect")
    assert seed_database(tmp_path / "home") is None
    assert not (tmp_path / "home").exists()


def test_without_a_template_prefect_migrates_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TEMPLATE_VARIABLE, str(tmp_path / "none-made.db"))
    assert seed_database(tmp_path / "home") is None
    assert not (tmp_path / "home" / DATABASE_FILE).exists()


def test_the_default_template_is_named_by_the_installed_prefect(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib.metadata import version

    monkeypatch.delenv(TEMPLATE_VARIABLE, raising=False)
    assert prefect_database.template_path().name == f"prefect-{version('prefect')}.db"


def test_a_home_that_cannot_be_written_is_left_to_prefect(template: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    def no_hard_links(source: Path, target: Path) -> None:
        raise PermissionError(1, "Operation not permitted", str(target))

    monkeypatch.setattr(prefect_database.os, "link", no_hard_links)
    home = tmp_path / "home"
    assert seed_database(home) is None
    assert list(home.iterdir()) == []
    (tmp_path / "a-file").write_text("not a folder")
    assert seed_database(tmp_path / "a-file" / "home") is None


def test_a_command_seeds_only_a_home_whose_server_it_may_start(template: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from flows.runtime import prepare_prefect
    from schemas.config import Settings

    elsewhere = Settings.model_validate({"prefect": {"api_url": "http://prefect.internal:4200/api"}})
    with monkeypatch.context() as patched:
        # prepare_prefect sets variables itself: it gets a copy of the environment, so none reaches the later tests
        # (their commands would look for the server named here), and Prefect's settings here stay as they are
        environment = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
        patched.setattr(os, "environ", environment)
        patched.delitem(sys.modules, "prefect.context", raising=False)
        environment["PREFECT_HOME"] = str(tmp_path / "configured")
        prepare_prefect(elsewhere)
        assert environment["PREFECT_API_URL"] == "http://prefect.internal:4200/api"
        assert not (tmp_path / "configured" / DATABASE_FILE).exists()
        del environment["PREFECT_API_URL"]
        environment["PREFECT_HOME"] = str(tmp_path / "local")
        prepare_prefect(None)  # no server named, none kept: a temporary one will start on this home
        assert (tmp_path / "local" / DATABASE_FILE).read_bytes() == template.read_bytes()
    assert os.environ.get("PREFECT_API_URL") != "http://prefect.internal:4200/api"
