"""Login throttling over real HTTP against the real app: three wrong passwords, then a wait that doubles, then a
lockout; the right password of another account is never kept out by someone else's failures from the same address;
unlocking (in the app or with the CLI, another process) clears the counts behind a lockout.

No test sleeps through a wait: the app's limiter and lockout file run on a clock the test moves (``clock``)."""

from __future__ import annotations

import logging
import threading
from collections import Counter
from typing import Any

import pytest

from annotation_ui.limits import LockoutStore, LoginLimiter
from tests.support.app import Clock, app_settings, call, login, session


def cli_unlock(settings: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, *names: str) -> Any:
    """``benchwright annotate unlock NAMES`` on the app's configuration (its own LockoutStore, as another process)."""
    import tomli_w
    from typer.testing import CliRunner

    from flows.cli import app as cli

    config = tmp_path / f"benchwright-{settings.annotation.port}.toml"
    config.write_text(tomli_w.dumps(settings.model_dump(mode="json", include={"catalog", "blobs", "annotation"},
                                                        exclude_none=True)))
    monkeypatch.setenv("BENCHWRIGHT_CONFIG", str(config))  # restored after the test; --config sets it too
    return CliRunner().invoke(cli, ["--config", str(config), "annotate", "unlock", *names])


def refused(response: Any) -> tuple[int, str]:
    """(Retry-After, the reason) of a 429."""
    assert response.status_code == 429, response.text
    return int(response.headers["retry-after"]), response.json()["detail"]


def test_three_wrong_passwords_then_a_doubling_wait_then_the_lock(running, clock, caplog):
    caplog.set_level(logging.INFO, logger="annotation_ui")
    settings, url = running(lockout_failures=6)  # the defaults otherwise: 3 free failures, 1 s doubling to 60 s
    assert settings.annotation.login_free_failures == 3
    assert [login(url, "ann1", f"guess{i}").status_code for i in range(3)] == [400, 400, 400]
    for wait in (1, 2, 4):
        after, why = refused(login(url, "ann1"))  # the right password waits too: nothing is checked now
        assert after == wait and why == f"too many failed logins for account ann1: try again in {wait} s"
        clock.advance(wait - 0.5)
        assert refused(login(url, "ann1", "guess"))[0] == 1  # half a second still to wait
        clock.advance(0.5)
        assert login(url, "ann1", f"guess-after-{wait}").status_code == 400  # checked, and wrong
    after, why = refused(login(url, "ann1"))  # the sixth failure locked it
    assert after in (3600, 3601) and "account ann1 is locked" in why and "try again in" in why
    assert "benchwright annotate unlock ann1" in why
    assert "login: account ann1 locked for 3600 s after 6 failed logins (the last from 127.0.0.1)" in caplog.text
    assert "locked" in refused(login(url, "ann1", address="10.1.1.1"))[1]  # from any address
    assert login(url, "ann2").status_code == 200  # another account logs in
    clock.advance(3600 + 1)
    assert login(url, "ann1").status_code == 200  # the lockout is over


def test_the_right_password_after_failures_resets_the_count(running, clock):
    _, url = running()
    assert [login(url, "ann1", "typo").status_code for _ in range(2)] == [400, 400]
    assert login(url, "ann1").status_code == 200
    assert [login(url, "ann1", "typo").status_code for _ in range(3)] == [400, 400, 400]  # three free again
    assert login(url, "ann1").status_code == 429


def test_a_colleagues_typos_never_keep_out_another_accounts_right_password(running, clock):
    _, url = running(lockout_failures=1000, lockout_address_failures=5)
    office = "10.2.2.2"  # one NAT for everyone in it
    assert [login(url, "ann1", "typo", address=office).status_code for _ in range(3)] == [400, 400, 400]
    assert "account ann1" in refused(login(url, "ann1", address=office))[1]  # ann1 waits ...
    assert login(url, "ann2", address=office).status_code == 200  # ... a colleague does not
    assert [login(url, "ann3", "typo", address=office).status_code for _ in range(2)] == [400, 400]
    # five wrong passwords from the office: it is marked, and still the right password of a clean account passes
    assert login(url, "ann4", address=office).status_code == 200
    # from the marked address every account waits from its first wrong password (guessing across accounts is
    # slowed to one guess per account); only that account waits
    assert login(url, "ann5", "typo", address=office).status_code == 400
    assert "account ann5" in refused(login(url, "ann5", address=office))[1]
    assert login(url, "ann6", address=office).status_code == 200
    assert login(url, "ann5", address="10.3.3.3").status_code == 429  # the wait is the account's
    clock.advance(1)
    assert login(url, "ann5", address=office).status_code == 200


def test_a_burst_of_parallel_guesses_gets_no_more_checks_than_the_rules_allow(running, clock):
    settings, url = running(login_free_failures=3, login_delay_s=60)
    statuses: list[int] = []

    def guess(i: int) -> None:
        statuses.append(login(url, "ann3", f"wrong{i}").status_code)

    threads = [threading.Thread(target=guess, args=(i,)) for i in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    counts = Counter(statuses)
    assert counts[400] == settings.annotation.login_free_failures  # then the 60 s wait refuses the rest unchecked
    assert counts[429] == 40 - counts[400]
    assert login(url, "ann3").status_code == 429  # the right password waits too
    assert login(url, "ann4").status_code == 200  # someone else from the guessing address logs in


def test_unlocking_an_account_clears_it_and_its_share_of_the_address_count(running, clock, tmp_path, monkeypatch):
    settings, url = running(login_free_failures=100, lockout_failures=4, lockout_address_failures=6)
    for place, unlock in (("10.4.4.4", "app"), ("10.5.5.5", "cli")):
        assert [login(url, "ann1", "typo", address=place).status_code for _ in range(4)] == [400] * 4
        assert "account ann1 is locked" in refused(login(url, "ann1", address=place))[1]
        if unlock == "app":
            kind, data = call(session(url, "ann2"), "unlock", "ann1")
            assert kind == "error" and "not an admin" in str(data)
            assert login(url, "ann1", address=place).status_code == 429  # still locked
            kind, data = call(session(url, "boss"), "unlock", "ann1")
            assert kind == "complete" and "account:ann1 unlocked by boss" in data[0], data
        else:
            lifted = cli_unlock(settings, tmp_path, monkeypatch, "ann1")
            assert lifted.exit_code == 0 and "ann1: unlocked (account:ann1)" in lifted.output, lifted.output
        assert login(url, "ann1", address=place).status_code == 200
        # ann1's four failures left the address's count: three more make six only if they had stayed, which would
        # mark the address and make ann2 wait after its third
        assert [login(url, "ann2", "typo", address=place).status_code for _ in range(3)] == [400] * 3
        assert login(url, "ann2", address=place).status_code == 200
    assert not [x for x in cli_unlock(settings, tmp_path, monkeypatch).output.splitlines() if "address:" in x]


def test_the_cli_clears_a_wait_and_lifts_a_marked_address(running, clock, tmp_path, monkeypatch):
    settings, url = running(lockout_address_failures=3)
    assert [login(url, name, "typo", address="10.9.9.9").status_code for name in ("ann1", "ann1", "ann2")] == [
        400, 400, 400]  # the third marks the address
    listed = cli_unlock(settings, tmp_path, monkeypatch)
    assert listed.exit_code == 0 and "address:10.9.9.9" in listed.output
    assert login(url, "ann3", "typo", address="10.9.9.9").status_code == 400
    assert login(url, "ann3", address="10.9.9.9").status_code == 429  # marked: waits from its first failure
    waiting = cli_unlock(settings, tmp_path, monkeypatch, "ann3")  # no lockout, but its count is cleared
    assert waiting.exit_code == 1 and "ann3: no lockout" in waiting.output
    assert login(url, "ann3", address="10.9.9.9").status_code == 200
    lifted = cli_unlock(settings, tmp_path, monkeypatch, "10.9.9.9")
    assert lifted.exit_code == 0 and "unlocked (address:10.9.9.9)" in lifted.output
    assert login(url, "ann4", "typo", address="10.9.9.9").status_code == 400
    assert login(url, "ann4", address="10.9.9.9").status_code == 200  # no longer marked: free failures again
    again = cli_unlock(settings, tmp_path, monkeypatch, "10.9.9.9")
    assert again.exit_code == 1 and "no lockout" in again.output


def test_the_cli_says_in_one_line_that_a_lockout_file_cannot_be_used(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from flows.cli import app as cli
    from tests.support.cli import pin_console_width

    pin_console_width(monkeypatch, width=1000)  # the one line unwrapped, however long the temporary path
    config = tmp_path / "benchwright.toml"
    config.write_text(f'[catalog]\npath = "{tmp_path}/catalog.duckdb"\n[annotation]\nlockouts_path = "{tmp_path}"\n')
    monkeypatch.setenv("BENCHWRIGHT_CONFIG", str(config))
    for args in ([], ["ann1"]):
        result = CliRunner().invoke(cli, ["--config", str(config), "annotate", "unlock", *args])
        assert result.exit_code == 1, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: the lockout file"), result.output
        assert "it is a folder" in lines[0] and "Traceback" not in result.output


def test_the_limiter_alone_counts_by_its_clock_and_forgets_after_the_window(tmp_path):
    moved = Clock()
    settings = app_settings(tmp_path, login_window_s=100, login_max_delay_s=3)
    limiter = LoginLimiter(settings, LockoutStore(tmp_path / "lockouts.sqlite", clock=moved.wall),
                           clock=moved.monotonic)
    waits = []
    for _ in range(6):
        assert limiter.refusal("ann1", "10.0.0.1") is None
        limiter.record("ann1", "10.0.0.1", succeeded=False)
        refusal = limiter.refusal("ann1", "10.0.0.1")
        waits.append(refusal.retry_after_s if refusal else 0)
        moved.advance(waits[-1])
    assert waits == [0, 0, 1, 2, 3, 3]  # the third failure starts the waits; doubled up to login_max_delay_s
    limiter.record("ann1", "10.0.0.1", succeeded=False)
    moved.advance(100.5)  # a window without a failure: forgotten
    limiter.record("ann1", "10.0.0.1", succeeded=False)
    assert limiter.refusal("ann1", "10.0.0.1") is None
