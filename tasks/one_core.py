"""Imported first by the fork server of ``tasks.parallel.process_pool``, before NumPy or OpenCV: each worker forked
from it is one of a pool that fills the machine's cores, so the native libraries' thread pools are kept to one
thread, as Dask's nanny keeps its workers' (``distributed.nanny.pre-spawn-environ``). Without this the server and
each worker started an OpenBLAS thread per core (NumPy's and OpenCV's own copy); idle, those spun about 0.1 s of a
core each before sleeping, on the cores the workers decode on. A value the user set is kept.

Only a worker process imports this module; the process that starts the pool keeps its own settings.
"""

import os

for _variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")
