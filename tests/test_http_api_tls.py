"""Prefect's clients of an http API parse no CA bundle (flows.http_api_tls); an https API keeps Prefect's own."""

from __future__ import annotations

import os
import ssl
from pathlib import Path

import pytest

from flows.http_api_tls import FILE_NAME, SETTING, skip_ca_bundle_for_http_api


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A copy of the environment without Prefect's variables, as os.environ for the test."""
    copy = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    monkeypatch.setattr(os, "environ", copy)
    return copy


def test_an_http_api_gets_a_one_root_file_that_makes_a_context(environment: dict[str, str], tmp_path: Path) -> None:
    environment["PREFECT_API_URL"] = "http://127.0.0.1:4200/api"
    skip_ca_bundle_for_http_api(tmp_path)
    assert environment[SETTING] == str(tmp_path / FILE_NAME)
    context = ssl.create_default_context(cafile=environment[SETTING])
    assert context.cert_store_stats()["x509_ca"] == 1
    assert not [p for p in tmp_path.iterdir() if p.name != FILE_NAME]  # no partial copy left beside it


def test_https_and_the_users_own_file_are_left_alone(environment: dict[str, str], tmp_path: Path) -> None:
    environment["PREFECT_API_URL"] = "https://api.prefect.cloud/api/accounts/a/workspaces/w"
    skip_ca_bundle_for_http_api(tmp_path)
    assert SETTING not in environment and not (tmp_path / FILE_NAME).exists()
    environment["PREFECT_API_URL"] = "http://127.0.0.1:4200/api"
    environment[SETTING] = "/etc/ssl/certs/company.pem"
    skip_ca_bundle_for_http_api(tmp_path)
    assert environment[SETTING] == "/etc/ssl/certs/company.pem"


def test_an_inherited_file_of_ours_is_dropped_for_https_and_renewed_for_another_home(
        environment: dict[str, str], tmp_path: Path) -> None:
    environment["PREFECT_API_URL"] = "http://127.0.0.1:4200/api"
    skip_ca_bundle_for_http_api(tmp_path / "first")
    (tmp_path / "first" / FILE_NAME).unlink()  # that home was removed since
    skip_ca_bundle_for_http_api(tmp_path / "second")
    assert environment[SETTING] == str(tmp_path / "second" / FILE_NAME)
    ssl.create_default_context(cafile=environment[SETTING])
    environment["PREFECT_API_URL"] = "https://prefect.example.org/api"  # the next command of a warm process
    skip_ca_bundle_for_http_api(tmp_path / "second")
    assert SETTING not in environment
