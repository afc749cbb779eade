"""What a password guesser gets from the annotation app, and what it costs everyone else.

    python bench/login_attack.py [--attackers 4] [--seconds 8] [--attempts 3000] [--requests 60]

Starts the app twice (``benchwright annotate``, its own process, on 127.0.0.1 only, a temporary catalog): once with
the login limits as configured by default, once with them out of reach (the floor: what the password check alone
allows). Against each, ``--attackers`` processes post wrong passwords to ``/login`` for one account as fast as the
app answers, for at most ``--seconds`` and ``--attempts`` in all, while another annotator, logged in before, keeps
taking their item through the HTTP API (Gradio's two-step call). That annotator's latency is measured first alone
(``--requests`` calls), then during the burst. Prints, per run: attempts sent and passwords actually checked per
second (a refusal with 429 checks nothing), the answers by status, and the other user's p50/p95 alone and during
the burst.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import tomli_w

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

HOST = "127.0.0.1"  # never anything else: this script attacks only its own server
UNLIMITED = {"login_free_failures": 10 ** 9, "lockout_failures": 10 ** 9, "lockout_address_failures": 10 ** 9}


def start_server(folder: Path, limits: dict[str, Any]) -> tuple[subprocess.Popen, str]:
    from tests.support.app import app_settings, publish

    settings = app_settings(folder, host=HOST, **limits)
    publish(settings, 20)
    config = folder / "benchwright.toml"
    sections = settings.model_dump(mode="json", include={"catalog", "blobs", "annotation"}, exclude_none=True)
    config.write_text(tomli_w.dumps(sections))
    root = Path(__file__).resolve().parent.parent
    log = open(folder / "server.log", "w")  # noqa: SIM115 - lives with the server
    server = subprocess.Popen([sys.executable, "-m", "flows.cli", "--config", str(config), "annotate", "--host", HOST],
                              cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, stdout=subprocess.DEVNULL,
                              stderr=log)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex((HOST, settings.annotation.port)) == 0:
                return server, f"http://{HOST}:{settings.annotation.port}/"
        time.sleep(0.2)
    server.terminate()
    raise SystemExit("the app did not start: " + (folder / "server.log").read_text()[-2000:])


def take(http: Any) -> float:
    """One call of the API as a script makes it; returns its seconds."""
    started = time.perf_counter()
    event = http.post("gradio_api/call/take", json={"data": ["recheck"]}).json()["event_id"]
    stream = http.get(f"gradio_api/call/take/{event}").text
    if "event: complete" not in stream:
        raise RuntimeError(f"take failed: {stream[-300:]}")
    return time.perf_counter() - started


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def guess(url: str, attacker: int, attempts: int, seconds: float, counts: Any) -> None:
    """One attacker, its own process (so the measuring client shares no interpreter with it): wrong passwords for
    ann1 until ``attempts`` or ``seconds`` run out; puts its count of answers by status."""
    import httpx

    statuses: Counter[int] = Counter()
    stop = time.monotonic() + seconds
    with httpx.Client(base_url=url, timeout=60) as http:
        for attempt in range(attempts):
            if time.monotonic() >= stop:
                break
            statuses[http.post("login", data={"username": "ann1", "password": f"guess{attacker}-{attempt}"})
                     .status_code] += 1
    counts.put(statuses)


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far (Linux), or NaN where /proc is not there."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def attack(url: str, pid: int, args: argparse.Namespace) -> dict[str, Any]:
    import httpx

    victim = httpx.Client(base_url=url, timeout=60)
    victim.post("login", data={"username": "ann8", "password": "pw"}).raise_for_status()
    take(victim)  # warm: the first call draws the lease
    quiet = [take(victim) for _ in range(args.requests)]
    counts: Any = multiprocessing.get_context("spawn").Queue()
    share = max(1, args.attempts // args.attackers)
    attackers = [multiprocessing.get_context("spawn").Process(target=guess, args=(url, i, share, args.seconds, counts))
                 for i in range(args.attackers)]
    started, cpu = time.perf_counter(), cpu_seconds(pid)
    for process in attackers:
        process.start()
    during = []
    while any(process.is_alive() for process in attackers) and len(during) < 10 * args.requests:
        during.append(take(victim))
    statuses: Counter[int] = Counter()
    for _ in attackers:
        statuses.update(counts.get(timeout=120))
    for process in attackers:
        process.join(timeout=60)
    wall, cpu = time.perf_counter() - started, cpu_seconds(pid) - cpu
    checked = statuses[400] + statuses[200]
    return {"sent": sum(statuses.values()) / wall, "checked": checked / wall, "checked_total": checked,
            "statuses": dict(sorted(statuses.items())), "wall": wall,
            "cpu_per_attempt": cpu / max(1, sum(statuses.values())), "quiet": quiet, "during": during}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attackers", type=int, default=4, help="processes posting wrong passwords")
    parser.add_argument("--seconds", type=float, default=8.0, help="longest burst of guesses")
    parser.add_argument("--attempts", type=int, default=3000, help="most guesses in all")
    parser.add_argument("--requests", type=int, default=60, help="the other user's calls measured alone")
    args = parser.parse_args()
    args.seconds = min(args.seconds, 60.0)
    args.attempts = min(args.attempts, 20000)
    results = {}
    for name, limits in (("limits (defaults)", {}), ("floor (no limits)", UNLIMITED)):
        with tempfile.TemporaryDirectory() as tmp:
            server, url = start_server(Path(tmp), limits)
            try:
                results[name] = attack(url, server.pid, args)
            finally:
                server.terminate()
                server.wait(timeout=30)
    print(f"{args.attackers} attackers from {HOST}, one account, at most {args.seconds:g} s and {args.attempts} "
          f"attempts; the other user's calls: {args.requests} alone, then as many as fit in the burst")
    print(f"{'':34}" + "".join(f"{name:>20}" for name in results))
    rows = [("attempts sent per second", lambda r: f"{r['sent']:.1f}"),
            ("passwords checked per second", lambda r: f"{r['checked']:.2f}"),
            ("passwords checked in all", lambda r: str(r["checked_total"])),
            ("answers by status", lambda r: json.dumps(r["statuses"]).replace(" ", "")),
            ("server CPU per attempt (ms)", lambda r: f"{r['cpu_per_attempt'] * 1000:.1f}"),
            ("other user p50 alone (ms)", lambda r: f"{percentile(r['quiet'], 0.5) * 1000:.0f}"),
            ("other user p95 alone (ms)", lambda r: f"{percentile(r['quiet'], 0.95) * 1000:.0f}"),
            ("other user p50 in burst (ms)", lambda r: f"{percentile(r['during'], 0.5) * 1000:.0f}"),
            ("other user p95 in burst (ms)", lambda r: f"{percentile(r['during'], 0.95) * 1000:.0f}"),
            ("other user calls in burst", lambda r: str(len(r["during"])))]
    for label, cell in rows:
        print(f"{label:34}" + "".join(f"{cell(r):>20}" for r in results.values()))


if __name__ == "__main__":
    main()
