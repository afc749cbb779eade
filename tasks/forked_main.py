"""Imported by the fork server of ``tasks.parallel.process_pool`` after it preloaded the main module by name (a
process started with ``python -m package.module``: the warm process behind ``benchwright server start``, or
``python -m flows.cli``).

Each worker forked from the server then runs that module's body once more as ``__mp_main__``, as a spawned worker
would; its imports are loaded already, which is what the preload is for. Python's ``runpy`` warns about exactly
this ("'flows.warm' found in sys.modules after import of package 'flows', but prior to execution of 'flows.warm'"),
once per worker, on the user's terminal: a build command printed the warning twice. The filter, made here, is
inherited by every worker and applies to that message from ``runpy`` alone.
"""

import warnings

warnings.filterwarnings("ignore", message=r"'[\w.]+' found in sys\.modules after import of package",
                        category=RuntimeWarning, module="runpy")
