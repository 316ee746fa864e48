"""``show(model, X, y)``: the dashboard on an in-memory model, from a notebook or a script.

::

    from dashboard import show
    dash = show(model, X_test, y_test)      # in Jupyter the cell shows the dashboard inline
    dash.url                                # http://127.0.0.1:PORT/?model=...
    show(other_model, X_test, y_test)       # same server, one more model in the picker
    dash.stop()                             # the server ends, its folder is removed

The model is saved with ``skops.io.dump`` (never pickle), an XGBoost, LightGBM or
CatBoost model in its library's own file (a Pipeline ending in one: its preprocessing
with skops, its last step in the library's file), and checked with the dashboard's own
loader, the data as Parquet (``y`` as one more column), in a private
temporary folder (mode 0700) with a manifest that lists them. The first call starts
``glassbox serve --manifest ...`` in a subprocess on a free loopback port and waits for
its health check; later calls in the same Python process rewrite the manifest, which the
server re-reads on its next run. The server and the folder go when ``stop()`` is called,
when this interpreter exits, or (checked every second by the server) when this process
is gone without exiting cleanly.

Only the standard library is imported here at import time.
"""
from __future__ import annotations

import atexit
import html
import operator
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
import warnings
from pathlib import Path

from dashboard import served
from dashboard.server import ACCESS_ENV

__all__ = ["show", "Dashboard", "ShowError", "stop_all"]

#: seconds show() waits for a new server's health check
START_TIMEOUT = 120.0
_ROOT = Path(__file__).resolve().parents[1]  # the folder holding the dashboard package
_LOCK = threading.RLock()
_SERVER: _Server | None = None


class ShowError(ValueError):
    """show() cannot serve this model or data, or the server did not start; the message says why."""


class _Server:
    """One dashboard server of this Python process, with its private folder."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.manifest = folder / "manifest.json"
        self.log = folder / "server.log"
        self.entries: list[served.ServedModel] = []
        self.proc: subprocess.Popen | None = None
        self.port: int | None = None
        self.seconds_to_health: float | None = None
        self.started = False
        self.stopped = False
        # the server opens only from a link carrying this (another local account can reach the
        # loopback port, never this process's memory or its 0700 folder, where the token is not kept)
        self.token = secrets.token_urlsafe(32)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, n_chars: int = 3000) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return "(no server output)"
        return text[-n_chars:].strip() or "(no server output)"

    def start(self, port: int | None, timeout: float) -> None:
        self.port = port or _free_port()
        env = dict(os.environ)
        for name in (served.SERVE_ENV, served.MANIFEST_ENV, "GLASSBOX_TRUST_PICKLES"):
            env.pop(name, None)  # this server serves only the manifest, and never trusts pickles
        env["PYTHONPATH"] = os.pathsep.join([str(_ROOT), *filter(None, [env.get("PYTHONPATH")])])
        env[ACCESS_ENV] = self.token  # in the environment, which only this account can read; never in argv
        cmd = [sys.executable, "-m", "dashboard.cli", "serve", "--manifest", str(self.manifest),
               "--host", "127.0.0.1", "--port", str(self.port), "--parent-pid", str(os.getpid())]
        t0 = time.perf_counter()
        self.started = True
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(cmd, cwd=self.folder, env=env, stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                code = self.proc.returncode
                tail = self.log_tail()
                self.stop()
                raise ShowError(f"The dashboard server exited (status {code}) before it answered. "
                                f"Its output ends with:\n{tail}")
            try:
                with opener.open(f"{self.base_url}/_stcore/health", timeout=2) as r:
                    if r.read().strip() == b"ok":
                        self.seconds_to_health = time.perf_counter() - t0
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                tail = self.log_tail()
                self.stop()
                raise ShowError(f"The dashboard server did not answer {self.base_url}/_stcore/health within "
                                f"{timeout:.0f} s. Its output ends with:\n{tail}")
            time.sleep(0.2)

    def stop(self) -> None:
        self.stopped = True
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


class Dashboard:
    """What :func:`show` returns: the dashboard's address for one model, and a way to stop it.

    In Jupyter the object shows the dashboard inline (an iframe); elsewhere its repr is
    the URL. ``stop()`` ends the server of this Python process (every model shown in it).
    """

    def __init__(self, url: str, key: str, name: str, server: _Server, height: int = 800):
        self.url = url
        self.key = key
        self.name = name
        self.height = height
        self._server = server

    @property
    def running(self) -> bool:
        return self._server.running

    def stop(self) -> None:
        """Stop the server (every model shown from this process) and remove its folder."""
        global _SERVER
        with _LOCK:
            self._server.stop()
            if _SERVER is self._server:
                _SERVER = None

    def __repr__(self) -> str:
        if not self.running:
            return f"Glassbox dashboard for {self.name!r} (stopped; was at {self.url})"
        return f"Glassbox dashboard for {self.name!r} at {self.url} (.stop() ends it)"

    def _repr_html_(self) -> str:
        if not self.running:
            return f"<p>{html.escape(repr(self))}</p>"
        url = html.escape(self.url, quote=True)
        return (f'<iframe src="{url}" width="100%" height="{int(self.height)}" '
                f'style="border: 1px solid #ddd; border-radius: 4px;" title="Glassbox dashboard"></iframe>'
                f'<p style="font-size: small;"><a href="{url}" target="_blank" rel="noopener">'
                f"Open {html.escape(self.name)} in a new tab</a> · {url}</p>")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _frame(model, X, y):
    """(DataFrame to save, target column name or None) from X and y as the user gave them."""
    import numpy as np
    import pandas as pd

    if isinstance(X, pd.DataFrame):
        frame = X.reset_index(drop=True)
    else:
        arr = np.asarray(X)
        if arr.ndim != 2:
            raise ShowError(f"X must be a table (a DataFrame or a 2-D array), got an array of shape {arr.shape}.")
        names = getattr(model, "feature_names_in_", None)
        cols = [str(c) for c in names] if names is not None and len(names) == arr.shape[1] else \
            [f"x{i}" for i in range(arr.shape[1])]
        frame = pd.DataFrame(arr, columns=cols)
    if len(frame) == 0:
        raise ShowError("X has no rows: pass the rows the dashboard should explain.")
    if frame.columns.duplicated().any():
        raise ShowError("X has duplicated column names: give every column its own name.")
    if not all(isinstance(c, str) for c in frame.columns):
        frame = frame.rename(columns=str)
    if y is None:
        return frame, None
    target = y.name if isinstance(y, pd.Series) and isinstance(y.name, str) and y.name else "target"
    values = np.asarray(y.to_numpy() if isinstance(y, (pd.Series, pd.DataFrame)) else y)
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    if values.ndim != 1:
        raise ShowError(f"y must be one column of targets, got shape {values.shape}.")
    if len(values) != len(frame):
        raise ShowError(f"y has {len(values)} values but X has {len(frame)} rows: pass them for the same rows.")
    target = served.unique_key(target, frame.columns)
    frame = frame.assign(**{target: pd.Series(values).reset_index(drop=True)})
    return frame, target


def _skops_dump(model, path: Path) -> None:
    import skops.io as sio

    try:
        sio.dump(model, path)
    except Exception as exc:  # noqa: BLE001 - whatever skops cannot save
        raise ShowError(
            f"skops cannot save this model ({type(exc).__name__}: {exc}). show() saves models only "
            "with skops (or an XGBoost, LightGBM or CatBoost model in its library's own file), never "
            "with pickle: use a model skops can save (scikit-learn estimators and pipelines of them).") from None


def _save_model(model, folder: Path, index: int) -> tuple[Path, dict | None, list[Path]]:
    """Save the model: skops, or for an XGBoost / LightGBM / CatBoost object its library's own
    file (a Pipeline ending in one: the preprocessing with skops, the last step in its library's
    file). Returns (the entry's model path, its ``parts`` or None, every file written)."""
    from explainers.trees.library import has_library_model, is_library_model, save_native

    if not has_library_model(model):
        path = folder / f"model-{index}.skops"
        written = [path]
        _skops_dump(model, path)
        return path, None, written
    steps = getattr(model, "steps", None)
    try:
        if is_library_model(model):
            final, settings = save_native(model, folder / f"model-{index}")
            return Path(final), {"settings": settings}, [Path(final)]
        if not isinstance(steps, list) or not is_library_model(steps[-1][1]) or len(steps) < 2:
            raise ShowError(
                f"show() saves an XGBoost, LightGBM or CatBoost model alone or as the last step of a "
                f"Pipeline; this {type(model).__name__} holds one elsewhere (inside a "
                "TransformedTargetRegressor or a nested step). Pass the library model, or a Pipeline "
                "that ends in it.")
        from sklearn.pipeline import Pipeline

        prep_path = folder / f"model-{index}.skops"
        final, settings = save_native(steps[-1][1], folder / f"final-{index}")
        written = [prep_path, Path(final)]
        _skops_dump(Pipeline(list(steps[:-1]), memory=model.memory, verbose=model.verbose), prep_path)
        return prep_path, {"final": str(final), "step": str(steps[-1][0]), "settings": settings}, written
    except ShowError:
        raise
    except Exception as exc:  # noqa: BLE001 - the library could not save its model
        raise ShowError(f"The {type(model).__name__} could not be saved in its library's own format "
                        f"({type(exc).__name__}: {exc}).") from None


def _save(model, frame, target, folder: Path, index: int) -> tuple[Path, Path, dict | None]:
    """Save the model (skops, or a boosting library's own file) and data (Parquet); check both
    with the dashboard's own loaders. Returns (model path, data path, the entry's parts)."""
    from explainers import ExplainerError, load_data, load_model
    from explainers.io.models import load_model_parts

    data_path = folder / f"data-{index}.parquet"
    written = []
    try:
        model_path, parts, written = _save_model(model, folder, index)
        try:
            if parts is None:
                loaded = load_model(model_path)
            else:
                final = parts.get("final")
                loaded = load_model_parts(model_path if final else None, final or model_path,
                                          parts.get("settings"), parts.get("step") or "model")
        except ExplainerError as exc:
            raise ShowError(f"The dashboard would refuse this model: {exc}") from None
        try:
            frame.to_parquet(data_path, index=False)
        except Exception as exc:  # noqa: BLE001
            raise ShowError(f"The data cannot be saved as Parquet ({type(exc).__name__}: {exc}). "
                            "Give X plain columns (numbers, text, categories).") from None
        try:
            load_data(data_path, model=loaded, target=target)
        except ExplainerError as exc:
            raise ShowError(f"The dashboard would refuse this data: {exc}") from None
    except ShowError:
        for path in written + [data_path]:
            path.unlink(missing_ok=True)
        raise
    return model_path, data_path, parts


def _server() -> _Server:
    """This process's server: the running one, or a new one (not yet started) in a new private folder."""
    global _SERVER
    if _SERVER is not None and (_SERVER.stopped or (_SERVER.started and not _SERVER.running)):
        _SERVER.stop()  # it ended (stopped, or died): start over in a fresh folder
        _SERVER = None
    if _SERVER is None:
        from explainers.io._files import remove_orphans

        # the folders of notebooks killed with their servers (no atexit ran): gone at the next start
        remove_orphans(tempfile.gettempdir(), "glassbox-show-")
        folder = Path(tempfile.mkdtemp(prefix=f"glassbox-show-{os.getpid()}-"))  # created with mode 0700
        os.chmod(folder, 0o700)
        _register_atexit()
        _SERVER = _Server(folder)
    return _SERVER


def show(model, X, y=None, name: str | None = None, port: int | None = None, *,
         timeout: float = START_TIMEOUT, height: int = 800, target_transform: str | None = None) -> Dashboard:
    """Serve the dashboard on ``model`` with the rows ``X`` (and targets ``y``); return its handle.

    Parameters
    ----------
    model : fitted estimator
        Saved with ``skops.io.dump`` (never pickled), or, for an XGBoost, LightGBM or
        CatBoost model (alone or ending a Pipeline), in its library's own file, and loaded
        back with the dashboard's own safe loader: a model skops cannot save, or that the loader would refuse
        (types outside its reviewed list, malformed trees), raises :class:`ShowError`.
    X : DataFrame or 2-D array
        The rows to explain, with the model's columns.
    y : Series or 1-D array, optional
        Their true values (for scores and permutation importance).
    name : str, optional
        The label in the model picker (default: the model's class name).
    port : int, optional
        Port of the server, when this call starts it (default: a free one). The server
        listens on 127.0.0.1 only. A later call reuses the running server.
    timeout : float
        Seconds to wait for a new server to answer its health check.
    height : int
        Height in pixels of the inline view in Jupyter.
    target_transform : {"log", "log1p", "sqrt"}, optional
        The model predicts this function of the target (it was fitted on ``log(y)``, say): the
        pages offer the target's original units too. ``y`` may hold either scale.

    Returns
    -------
    Dashboard
        ``.url`` opens the dashboard on this model (``?model=...``); ``.stop()`` ends it.
        In Jupyter the returned object shows the dashboard inline.
    """
    if port is not None:
        try:
            number = operator.index(port)  # an int, numpy's too; not 8501.5 or "8501"
        except TypeError:
            number = -1
        if not 1 <= number <= 65535:
            raise ShowError(f"port must be a whole number from 1 to 65535, got {port!r}.")
        port = number
    from explainers.errors import ExplainerError
    from explainers.target_scale import check_transform

    try:
        target_transform = check_transform(target_transform, "show")
    except ExplainerError as exc:
        raise ShowError(str(exc)) from None
    frame, target = _frame(model, X, y)
    with _LOCK:
        server = _server()
        index = len(server.entries) + 1
        names = {e.name for e in server.entries}
        label = str(name) if name else type(model).__name__
        if label in names:
            label = served.unique_key(label, names)
        try:
            model_path, data_path, parts = _save(model, frame, target, server.folder, index)
        except ShowError:
            if not server.entries:  # nothing shown yet: leave no folder behind
                stop_all()
            raise
        from demo_models.build import DEMO_NAMES

        key = served.unique_key(served.slug(label), [e.key for e in server.entries] + list(DEMO_NAMES))
        entry = served.ServedModel(key=key, name=label, model=str(model_path), data=str(data_path), target=target,
                                   description=f"{type(model).__name__}, shown from Python with show() "
                                               f"({len(frame):,} rows).", parts=parts,
                                   target_transform=target_transform)
        server.entries.append(entry)
        served.write_manifest(str(server.manifest), server.entries)
        if not server.running:
            try:
                server.start(port, timeout)
            except BaseException:
                stop_all()
                raise
        elif port is not None and int(port) != server.port:
            warnings.warn(f"The dashboard already runs on port {server.port}; the model was added there "
                          f"(port={port} applies only when show() starts the server).", stacklevel=2)
        url = f"{server.base_url}/?{urllib.parse.urlencode({'model': key, 'token': server.token})}"
        return Dashboard(url, key, label, server, height=height)


def stop_all() -> None:
    """Stop this process's dashboard server, if any, and remove its folder (also run at exit)."""
    global _SERVER
    with _LOCK:
        if _SERVER is not None:
            _SERVER.stop()
            _SERVER = None


_ATEXIT = False


def _register_atexit() -> None:
    global _ATEXIT
    if not _ATEXIT:
        atexit.register(stop_all)
        _ATEXIT = True
