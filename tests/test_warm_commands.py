"""Many commands through the warm process (``benchwright server start``; flows.warm): quick ones one after another
and several at once, each printing what it prints when it runs itself; longer ones stopped with Ctrl-C or killed
while others run, which leaves none of their forks running, the others served and the catalog as it was.

The commands run the project's code copied (tests.support.server.code_copy): an edit of the checkout meanwhile would
make the warm process refuse them and start over."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from tests.support.app import HASH, free_port
from tests.support.server import code_copy

BENCHWRIGHT = str(Path(sys.executable).with_name("benchwright"))  # as a user types it: flows.entry
RELEASE = "warmtest@1"
QUICK = [["release", "list"], ["records", "stats"], ["config", "show"], ["runs"], ["evaluate", "--help"],
         ["records", "list"], ["release", "verify", RELEASE], ["--help"], ["release", "--help"], ["records", "--help"],
         ["build", "progress", "--help"], ["annotate", "--help"]]
# refusals: their one line on stderr and status 1, as when they run themselves
FAILING = [["release", "verify", "nosuch@1"], ["build", "nosuch"], ["records", "show", "0000000"]]
CATALOG_VIEWS = [["release", "list"], ["records", "stats"], ["records", "list"], ["release", "verify", RELEASE]]
BUILD = ["build", "progress", "--stage", "published"]
WAIT_S = 300.0  # only so that a hang fails the test instead of holding it up: no command should come near


class Project:
    """A folder with the code copied, a catalog and a kept server (its PREFECT_HOME inside) of its own."""

    def __init__(self, folder: Path) -> None:
        from flows.prefect_database import make_template, template_path

        self.folder, self.home = folder, folder / "prefect-home"
        template = template_path() if template_path().is_file() else make_template(folder / "template.db")
        self.env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL" and not k.startswith("BENCHWRIGHT")}
        self.env |= {"PREFECT_HOME": str(self.home), "PYTHONPATH": str(code_copy(folder / "code")),
                     "COLUMNS": "200", "BENCHWRIGHT_PREFECT_TEMPLATE": str(template)}
        self.clients: list[subprocess.Popen[str]] = []

    def start(self, args: list[str], **extra: str) -> subprocess.Popen[str]:
        """``benchwright args`` started in the folder, in a process group of its own (as a shell starts a job)."""
        client = subprocess.Popen([BENCHWRIGHT, *args], cwd=self.folder, env=self.env | extra, text=True,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  start_new_session=True)
        self.clients.append(client)
        return client

    def run(self, args: list[str], **extra: str) -> subprocess.CompletedProcess[str]:
        return finished(self.start(args, **extra))

    def log(self) -> str:
        return (self.home / "benchwright-warm.log").read_text()

    def forks(self, since: int = 0) -> list[tuple[int, str]]:
        """(pid, arguments) of each command the warm process ran, in order, from the log's ``since``-th character."""
        ran = rf"pid (\d+) runs benchwright (.*) in {re.escape(str(self.folder))}$"
        return [(int(pid), argv) for pid, argv in re.findall(ran, self.log()[since:], re.MULTILINE)]

    def fork_of(self, args: list[str], client: subprocess.Popen[str]) -> int:
        """The pid of the fork running ``args`` (arguments no other command here has), once the warm process ran it."""
        def pids() -> list[int]:
            return [pid for pid, argv in self.forks() if argv == " ".join(args)]

        _wait_until(lambda: bool(pids()) or client.poll() is not None, self.log)
        assert pids(), (finished(client), self.log())  # else it ran itself
        return pids()[-1]


def finished(process: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    stdout, stderr = process.communicate(timeout=WAIT_S)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    """A kept server started in a new folder, whose catalog holds one build and one release."""
    project = Project(tmp_path_factory.mktemp("warm-commands"))
    started = project.run(["server", "start"])
    try:
        assert started.returncode == 0, started.stderr
        for args in (BUILD, ["release", "create", RELEASE.partition("@")[0]]):
            made = project.run(args)
            assert made.returncode == 0, made.stderr
        yield project
    finally:
        for client in project.clients:  # a failed test's: killing a client kills its fork too
            client.kill()
        stopped = project.run(["server", "stop"])
    assert stopped.returncode == 0, stopped.stderr


@pytest.mark.slow
def test_quick_commands_in_the_warm_process_print_what_they_print_alone(project: Project) -> None:
    alone = {" ".join(args): project.run(args, BENCHWRIGHT_WARM="0") for args in QUICK}
    since = len(project.log())
    one_by_one = [project.run(args) for args in QUICK]
    at_once = [finished(client) for client in [project.start(args) for args in QUICK[::2]]]
    for result in one_by_one + at_once:
        expected = alone[" ".join(result.args[1:])]
        assert expected.returncode == 0 and expected.stdout.strip(), expected.stderr
        assert (result.returncode, result.stdout, result.stderr) == (0, expected.stdout, expected.stderr)
    # each ran in a fork of the warm process, none refused (then it would have run itself)
    assert Counter(argv for _, argv in project.forks(since)) == Counter(" ".join(r.args[1:]) for r in one_by_one
                                                                        + at_once)
    assert "refused" not in project.log()[since:] and "fell through" not in project.log()[since:]


@pytest.mark.slow
def test_a_build_in_the_warm_process_prints_what_it_prints_alone(project: Project) -> None:
    """Prefect's logging set up in the fork (flows.warm_logging) shows the terminal what a command running itself
    shows: warnings only, not each flow and task run's INFO lines."""
    since = len(project.log())
    warm, alone = project.run(BUILD), project.run(BUILD, BENCHWRIGHT_WARM="0")
    assert alone.returncode == 0 and "published: rows" in alone.stdout, alone.stderr
    assert (warm.returncode, warm.stdout, warm.stderr) == (0, alone.stdout, alone.stderr)
    assert [argv for _, argv in project.forks(since)] == [" ".join(BUILD)]  # the first ran in a fork


@pytest.mark.slow
def test_failing_commands_in_the_warm_process_end_as_they_end_alone(project: Project) -> None:
    for args in FAILING:
        alone, warm = project.run(args, BENCHWRIGHT_WARM="0"), project.run(args)
        assert alone.returncode != 0 and alone.stderr.strip(), alone
        assert (warm.returncode, warm.stdout, warm.stderr) == (alone.returncode, alone.stdout, alone.stderr)


@pytest.mark.slow
def test_commands_killed_while_others_run_leave_no_fork_and_the_catalog_as_it_was(project: Project) -> None:
    before = [project.run(args) for args in CATALOG_VIEWS]
    assert all(view.returncode == 0 for view in before), [view.stderr for view in before]
    builds = []
    for i in range(3):  # the arguments tell each command's fork apart in the warm log
        (project.folder / f"build-{i}.toml").write_text("")
        builds.append(["--config", f"build-{i}.toml", *BUILD])
    servers = [_annotation_app(project, f"annotate-{i}") for i in range(2)]
    clients = {" ".join(args): project.start(args) for args in builds + [args for args, _ in servers]}
    killed = clients[" ".join(builds[0])]
    forks = [project.fork_of(builds[0], killed)]
    killed.kill()  # the client alone, mid-build (or right after it)
    for args, port in servers:  # each serves until stopped
        forks.append(project.fork_of(args, clients[" ".join(args)]))
        _serves(project, port, clients[" ".join(args)])
    ctrl_c, group_killed = (clients[" ".join(args)] for args, _ in servers)
    ctrl_c.send_signal(signal.SIGINT)  # Ctrl-C at its terminal: passed on to the fork
    os.killpg(group_killed.pid, signal.SIGKILL)  # the client's whole group, as `kill -9 %1` in a shell
    assert finished(ctrl_c).returncode in (0, 130)  # 0 when the app's loop takes the Ctrl-C and closes
    assert _killed(group_killed) == -signal.SIGKILL  # not its output: a fork left running would hold its pipes
    assert _killed(killed) in (0, -signal.SIGKILL)
    for fork in forks:  # each fork, and whatever it started, ended with its client
        _wait_until(lambda fork=fork: not _session(fork), lambda fork=fork: (_session(fork), project.log()))
    assert not any(_listening(port) for _, port in servers)

    for args in builds[1:]:  # the others went on and stored nothing twice
        built = finished(clients[" ".join(args)])
        assert built.returncode == 0 and "records 150, quarantined 0, new 0" in built.stdout, built.stderr
    since = len(project.log())
    after = [project.run(args) for args in CATALOG_VIEWS]  # the warm process still serves, the catalog as it was
    assert [(view.returncode, view.stdout) for view in after] == [(0, view.stdout) for view in before]
    assert [argv for _, argv in project.forks(since)] == [" ".join(args) for args in CATALOG_VIEWS]


@pytest.mark.slow
def test_server_stop_leaves_a_running_command_to_its_client(project: Project) -> None:
    """`server stop` ends the warm process, not a command running from it: the command goes on, and its client still
    passes Ctrl-C on and gets the command's exit status. Last in the file: it stops the module's server."""
    args, port = _annotation_app(project, "annotate-stop")
    client = project.start(args)
    fork = project.fork_of(args, client)
    _serves(project, port, client)
    stopped = project.run(["server", "stop"])
    assert stopped.returncode == 0 and "stopped the Prefect server" in stopped.stdout, stopped.stderr
    assert _listening(port)
    client.send_signal(signal.SIGINT)
    _wait_until(lambda: not _session(fork), lambda: _session(fork))  # before reading: a fork holds the pipes
    result = finished(client)
    assert result.returncode in (0, 130) and "without an exit status" not in result.stderr, result.stderr


def _killed(client: subprocess.Popen[str]) -> int:
    code = client.wait(timeout=WAIT_S)
    for pipe in (client.stdout, client.stderr):
        if pipe:
            pipe.close()
    return code


def _annotation_app(project: Project, name: str) -> tuple[list[str], int]:
    """The arguments that serve the annotation app with a configuration ``name`` of its own, and its port."""
    port = free_port()
    (project.folder / f"{name}.toml").write_text(
        f'[annotation]\nport = {port}\n[[annotation.users]]\nname = "ann1"\npassword_hash = "{HASH}"\n')
    return ["--config", f"{name}.toml", "annotate"], port


def _serves(project: Project, port: int, client: subprocess.Popen[str]) -> None:
    """Wait until the app ``client`` started answers on ``port``."""
    _wait_until(lambda: _listening(port) or client.poll() is not None, project.log)
    assert client.poll() is None, (finished(client), project.log())


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _wait_until(condition: Callable[[], bool], why: Callable[[], object]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, why()
        time.sleep(0.2)


def _session(leader: int) -> list[psutil.Process]:
    """The processes still running in the session ``leader`` made (a command's fork, and all it started)."""
    running = []
    for process in psutil.process_iter():
        with contextlib.suppress(OSError, psutil.Error):
            if os.getsid(process.pid) == leader and process.status() != psutil.STATUS_ZOMBIE:
                running.append(process)
    return running
