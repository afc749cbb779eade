"""A fork server made by forking the command's process, not by starting an interpreter that imports the work again.

``multiprocessing``'s fork server is a new interpreter that imports the work's modules (pydantic's models, OpenCV:
0.36-0.55 s of a core a command, 3-4% of a 240-episode PROGRESS-BENCH construct's CPU, while the flow is being set
up on the other core). A command that is still one thread when it starts its stages' workers
(``tasks.parallel.start_fork_server``) has all of that loaded already, most of it inherited from the warm process:
forked, the server starts with it, and serves ``multiprocessing.forkserver``'s own protocol (``forkserver.main``), so
a pool of the ``forkserver`` context forks its workers from it as from a started one.

A fork copies only the calling thread, and a lock another thread held at that moment would stay held in the copy
for good: so this is done only while the command runs no other Python thread (``single_threaded``), else the server
is started as usual. The server itself, before serving, does what a started one would have: it imports what was asked
(``tasks.one_core`` first: the workers' native thread pools kept to one thread, which the command's own process
must not be), keeps the native libraries already loaded here to one thread (``threadpoolctl``), and takes back the
command's signal handlers (a SIGTERM for the command is not the server's to handle).
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys


def single_threaded() -> bool:
    """Whether this process runs no Python thread but this one. The native libraries' own idle pools (NumPy's
    OpenBLAS, jemalloc's background thread) may run: they are made fork-safe by their fork handlers, as every command
    the warm process forks relies on too (``flows.warm_process`` checks the same)."""
    import threading

    return threading.active_count() == 1


def fork_into_server(preload: list[str]) -> bool:
    """Make this process's fork server a fork of it, importing ``preload`` there; False (nothing done) where this
    process runs more than one thread or has a server already."""
    import socket
    from multiprocessing import connection, forkserver, resource_tracker

    server = forkserver._forkserver  # the module's one instance: pools of the forkserver context use it
    # Python 3.14 authenticates the server's clients (an authkey pipe): its protocol is not the one served here
    if sys.version_info >= (3, 14) or not single_threaded() or server._forkserver_pid is not None:
        return False
    with server._lock:
        resource_tracker.ensure_running()  # started first, as ensure_running does: the server's workers share it
        address = connection.arbitrary_address("AF_UNIX")
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(address)
        os.chmod(address, 0o600)
        listener.listen()
        alive_r, alive_w = os.pipe()  # every user of the server holds the write end; once all are gone it exits
        pid = os.fork()
        if pid == 0:
            _serve(listener.fileno(), alive_r, alive_w, preload)
        listener.close()
        os.close(alive_r)
        server._forkserver_address, server._forkserver_alive_fd, server._forkserver_pid = address, alive_w, pid
    return True


def _serve(listener_fd: int, alive_r: int, alive_w: int, preload: list[str]) -> None:
    """The server's life, in the forked child: never returns."""
    from multiprocessing import forkserver

    status = 1
    try:
        os.close(alive_w)
        for signum in signal.valid_signals():  # the command's handlers are the command's
            if callable(signal.getsignal(signum)):  # (SIGKILL and SIGSTOP never have one)
                signal.signal(signum, signal.SIG_DFL)
        for name in preload:
            if name != "__main__":  # loaded: this is a fork of it
                with contextlib.suppress(ImportError):  # as a started server does
                    __import__(name)
        _one_thread_each()
        gc.freeze()  # what the command made stays out of the workers' collections: they would walk it all
        with contextlib.suppress(SystemExit):  # how forkserver.main ends, once every user has closed the pipe
            forkserver.main(listener_fd, alive_r, [], main_path=None, sys_path=None)
        status = 0
    finally:
        sys.stdout.flush()
        os._exit(status)


def _one_thread_each() -> None:
    """The native thread pools the command loaded before the fork (NumPy's OpenBLAS, OpenMP) kept to one thread in
    the server, so in its workers; ``tasks.one_core``'s variables reach only the libraries loaded after."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
