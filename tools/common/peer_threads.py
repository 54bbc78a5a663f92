"""How many cores a PyTorch or NumPy peer really uses.

Debian's PyTorch and NumPy run their matrix products in OpenBLAS (the pthreads build,
libopenblas0-pthread), whose threads are its own: torch.set_num_threads sets OpenMP's count and
leaves OpenBLAS with one thread per core. A peer timed "on 1 thread" then runs its products on
every core of the machine (seen on a 2-core EPYC, 2026-12-04: both cores busy under the PyTorch
peer's `--threads 1`, its GPT-2 prefill at 98 % of one core's FMA peak), and on 2 threads OpenBLAS's
threads and OpenMP's share the two cores. Every peer process is therefore limited twice:
OPENBLAS_NUM_THREADS and OMP_NUM_THREADS in its environment (read when the libraries load), and
openblas_set_num_threads at run time (for a library already loaded, as NumPy loads it).
"""
import ctypes
import os

OPENBLAS = "libopenblas.so.0"  # libblas.so.3 of Debian's OpenBLAS is a wrapper around this one


def thread_env(threads, env=None):
    """A copy of env (default os.environ) in which OpenBLAS and OpenMP start `threads` threads."""
    out = dict(os.environ if env is None else env)
    out["OPENBLAS_NUM_THREADS"] = str(threads)
    out["OMP_NUM_THREADS"] = str(threads)
    return out


def limit_blas_threads(threads):
    """OpenBLAS in this process on `threads` threads from now on (loading it if it is not yet);
    False where there is no OpenBLAS (another BLAS: its own variables apply)."""
    try:
        library = ctypes.CDLL(OPENBLAS)
    except OSError:
        return False
    library.openblas_set_num_threads(ctypes.c_int(threads))
    return library.openblas_get_num_threads() == threads


def limit_this_process(threads):
    """OpenBLAS and OpenMP in this process on `threads` threads: the environment for libraries and
    children not yet loaded, openblas_set_num_threads for OpenBLAS. Call before torch.set_num_threads."""
    os.environ.update({k: thread_env(threads)[k] for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")})
    return limit_blas_threads(threads)
