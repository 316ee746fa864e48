"""The parallel backends: joblib's loky processes on this machine, or a dask.distributed
cluster (a running scheduler, or a LocalCluster). The backend is entered before the set-up,
so that an unreachable scheduler fails first and the workers warm up meanwhile."""
from __future__ import annotations

import contextlib
import os
import threading
import time
import warnings

from ..errors import ExplainerError

#: seconds between a loky worker's checks that the process that started it is alive
PARENT_POLL_S = 0.5
_watching: int | None = None


def _exit_with_parent(parent_pid: int, poll_s: float = PARENT_POLL_S) -> None:
    """loky worker initializer: end this worker soon after the batch run's process is gone.

    loky workers do not watch their parent: after a SIGKILL or a crash, a busy
    worker finishes its chunk and the chunks already queued for it, then waits out
    joblib's 300 s idle timeout, so a killed run's workers (hundreds of MB each)
    lived on for many minutes. A daemon thread polls the parent pid (a worker is
    reparented when its parent dies) and ends the process. The tree kernels release
    the GIL, so it runs even mid-chunk; the part being written is a temporary
    file, removed by the next run.
    """
    global _watching
    if _watching == parent_pid:
        return
    _watching = parent_pid

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(poll_s)
        os._exit(1)

    threading.Thread(target=watch, name="glassbox-exit-with-parent", daemon=True).start()


def _warm_worker() -> int:
    """Import what a chunk needs (scikit-learn, skops, the compiled kernels); runs in a worker."""
    import sklearn.ensemble  # noqa: F401  (most of a worker's start-up)
    import skops.io  # noqa: F401

    from ..shap import tree  # noqa: F401

    return os.getpid()


class _Warmup:
    """Workers started while the parent still sets up (reads the model, probes the
    data, hashes the file): their imports then use the core the parent leaves
    idle, and the chunk loop starts with ready workers. loky: joblib hands the
    same workers to the chunk loop (one reusable executor per configuration);
    Dask: the cluster is up and every worker has run the imports."""

    def __init__(self, backend: str, jobs: int):
        self.jobs = jobs  # what the chunk loop passes to joblib
        self.pids: set[int] = set()
        self._gen = self._futures = None
        if backend == "dask":
            from distributed import get_client

            client = get_client()
            self._futures = [client.submit(_warm_worker, pure=False, workers=[w], allow_other_workers=False)
                             for w in client.scheduler_info()["workers"]]
            return
        if jobs == 1:
            return
        from joblib import Parallel, delayed, effective_n_jobs

        if effective_n_jobs(jobs) > 1:
            self._gen = Parallel(n_jobs=jobs, return_as="generator_unordered", batch_size=1)(
                delayed(_warm_worker)() for _ in range(effective_n_jobs(jobs)))

    def wait(self) -> None:
        """Collect the warm-up (before another Parallel call starts)."""
        if self._gen is not None:
            gen, self._gen = self._gen, None
            self.pids.update(gen)
        if self._futures is not None:
            futures, self._futures = self._futures, None
            self.pids.update(f.result() for f in futures)

    def close(self) -> None:
        """Drop a warm-up still pending (an error before the chunk loop): nothing waits for it."""
        gen, self._gen = self._gen, None
        futures, self._futures = self._futures, None
        with contextlib.suppress(Exception), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # joblib: "tasks executed but not used"
            if gen is not None:
                gen.close()
            for f in futures or ():
                f.cancel()


@contextlib.contextmanager
def _warmed(backend: str, n_jobs: int, scheduler: str | None, connect_timeout: float):
    """The parallel backend, entered before the set-up (an unreachable scheduler fails
    first), with its workers warming up meanwhile."""
    with _backend(backend, n_jobs, scheduler, connect_timeout) as jobs:
        warmup = _Warmup(backend, jobs)
        try:
            yield warmup
        finally:
            warmup.close()


@contextlib.contextmanager
def _backend(backend: str, n_jobs: int, scheduler: str | None, connect_timeout: float):
    """Yield the joblib n_jobs to use, inside the chosen backend's context."""
    from joblib import parallel_config

    if backend == "loky":
        # the same initializer (and arguments) for the warm-up and the chunk loop, so that
        # joblib hands both the same reusable executor, and its workers the same watch
        with parallel_config(backend="loky", initializer=_exit_with_parent, initargs=(os.getpid(),)):
            yield n_jobs
        return
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:  # pragma: no cover - dask is in requirements.txt
        raise ExplainerError(
            "--backend dask needs dask.distributed: pip install 'dask[distributed]'."
        ) from None
    import logging

    with contextlib.ExitStack() as stack:
        if scheduler:
            try:
                client = Client(scheduler, timeout=connect_timeout, set_as_default=True)
            except (OSError, TimeoutError, ValueError) as exc:
                raise ExplainerError(
                    f"Could not reach the Dask scheduler at {scheduler!r} within {connect_timeout:g} s "
                    f"({type(exc).__name__}: {exc}). Check the address (e.g. tcp://host:8786) and that the "
                    "scheduler is running, or leave out --scheduler to run on this machine."
                ) from None
            stack.enter_context(client)
        else:
            cluster = stack.enter_context(
                LocalCluster(n_workers=n_jobs, threads_per_worker=1, processes=True,
                             dashboard_address=None, silence_logs=logging.ERROR)
            )
            stack.enter_context(Client(cluster, set_as_default=True))
        stack.enter_context(parallel_config(backend="dask"))
        yield -1
