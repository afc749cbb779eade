"""Prefect's clients of an http API parse no CA bundle (flows.http_api_tls); an https API keeps Prefect's own."""

from __future__ import annotations

import os
import ssl

import pytest

from flows.http_api_tls import ONE_ROOT, SETTING, skip_ca_bundle_for_http_api


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A copy of the environment without Prefect's variables, as os.environ for the test."""
    copy = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    monkeypatch.setattr(os, "environ", copy)
    return copy


def test_an_http_api_gets_the_shipped_one_root_file_that_makes_a_context(environment: dict[str, str]) -> None:
    environment["PREFECT_API_URL"] = "http://127.0.0.1:4200/api"
    skip_ca_bundle_for_http_api()
    assert environment[SETTING] == str(ONE_ROOT)
    assert ssl.create_default_context(cafile=environment[SETTING]).cert_store_stats()["x509_ca"] == 1


def test_https_and_the_users_own_file_are_left_alone(environment: dict[str, str]) -> None:
    environment["PREFECT_API_URL"] = "https://api.prefect.cloud/api/accounts/a/workspaces/w"
    skip_ca_bundle_for_http_api()
    assert SETTING not in environment
    environment["PREFECT_API_URL"] = "http://127.0.0.1:4200/api"
    environment[SETTING] = "/etc/ssl/certs/company.pem"
    skip_ca_bundle_for_http_api()
    assert environment[SETTING] == "/etc/ssl/certs/company.pem"


def test_an_inherited_setting_of_ours_is_dropped_for_https(environment: dict[str, str]) -> None:
    environment["PREFECT_API_URL"] = "http://127.0.0.1:4200/api"
    skip_ca_bundle_for_http_api()
    environment["PREFECT_API_URL"] = "https://prefect.example.org/api"  # the next command of a warm process
    skip_ca_bundle_for_http_api()
    assert SETTING not in environment
