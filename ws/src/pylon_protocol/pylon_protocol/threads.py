"""One BLAS thread per process: every process of the workspace calls ``limit_threads`` first.

numpy and scipy link OpenBLAS (or another BLAS with an OpenMP pool) that starts one worker
thread per core and lets them spin between calls. The workspace multiplies 3x3 and 6x6
matrices, where those threads never pay for themselves: they only burn the cores the
other nodes need (``pylon_sim --rate 1`` alone took 1.6 cores with the default pool and
0.65 with one thread on a 2-core machine). So every process holds its pools to one thread:

- the environment variables the BLAS and OpenMP runtimes read at load time are set (unless
  the user set them), for libraries loaded later and for child processes;
- pools already loaded (numpy is imported by every ROS message module with an array
  field) are limited at once with ``threadpoolctl`` where it is installed (the native
  environment installs it from PyPI). Without it, the variables above still act on every
  process started after this one, and the Docker image sets them in its environment.

``PYLON_BLAS_THREADS`` chooses another count (e.g. for a benchmark of the BLAS itself).
"""

from __future__ import annotations

import os

THREADS_VARIABLE = 'PYLON_BLAS_THREADS'
DEFAULT_THREADS = 1
RUNTIME_VARIABLES = ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS')


def thread_count() -> int:
    """Return the number of BLAS threads to allow (``PYLON_BLAS_THREADS``, default 1)."""
    text = os.environ.get(THREADS_VARIABLE, '')
    try:
        count = int(text) if text else DEFAULT_THREADS
    except ValueError:
        raise ValueError(f'{THREADS_VARIABLE} must be a whole number >= 1, got {text!r}') \
            from None
    if count < 1:
        raise ValueError(f'{THREADS_VARIABLE} must be a whole number >= 1, got {text!r}')
    return count


def limit_threads() -> bool:
    """Hold BLAS and OpenMP pools to ``thread_count()`` threads.

    Return whether pools already loaded in this process were limited (``threadpoolctl``
    present); the environment is set either way.
    """
    count = thread_count()
    for name in RUNTIME_VARIABLES:
        os.environ.setdefault(name, str(count))
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return False
    threadpool_limits(limits=count)
    return True
