"""Session state and cached calls, keyed by model and data fingerprints.

Pages never compute: they ask :func:`current` for the active model context and
call the cached functions here, whose cache keys are the sha256 fingerprints of
the model and data files (a fitted model cannot be hashed by Streamlit, and an
underscore argument is not hashed at all, so every cached call takes the keys).
"""
from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

import explainers
from demo_models import build as demo_build
from explainers import ExplainerError, ModelAdapter

# ----------------------------------------------------------- session-state keys
ACTIVE = "active_model"  # demo name, or UPLOADED
UPLOAD = "upload"  # dict: model/data bytes, names, keys, target
CLASS_INDEX = "class_label"  # the class picked in the sidebar, by its label
LAST_ERROR = "model_page_error"
UPLOADED = "__uploaded__"
DEFAULT_DEMO = "diabetes_forest"

TRUST_FLAG = "--trust-pickles"
TRUST_ENV = "GLASSBOX_TRUST_PICKLES"


#: widget keys of the pages, kept when the user goes to another page and back
PAGE_KEY_PREFIXES = ("pdp_", "shap_", "imp_", "whatif_", "rep_")
_NOT_KEPT = {"rep_download"}  # buttons cannot be given a value
_KEPT = "kept::"


def keep_page_widgets() -> None:
    """Keep the pages' widget values across page switches.

    Streamlit forgets a widget's value when a run does not draw it (another
    page is shown); writing the value back as plain session state on every run
    keeps it, so a page comes back as it was left.
    """
    ss = st.session_state
    for key in list(ss.keys()):
        if isinstance(key, str) and key.startswith(PAGE_KEY_PREFIXES) and key not in _NOT_KEPT:
            ss[_KEPT + key] = ss[key]  # remember what the page shows now
    for key in list(ss.keys()):
        if isinstance(key, str) and key.startswith(_KEPT) and key[len(_KEPT):] not in ss:
            ss[key[len(_KEPT):]] = ss[key]  # the page is back: restore what it showed


class _RestoredWidgetFilter:
    """Drops Streamlit's log line about a widget whose value came from session state.

    :func:`keep_page_widgets` restores a page's widget values on purpose, so
    every return to a page would otherwise log "created with a default value
    but also had its value set via the Session State API" once per widget.
    """

    def filter(self, record) -> bool:
        return "also had its value set via the Session State API" not in record.getMessage()


def quiet_restored_widgets() -> None:
    """Install :class:`_RestoredWidgetFilter` on Streamlit's widget-policy logger (once)."""
    import logging

    log = logging.getLogger("streamlit.elements.lib.policies")
    if not any(isinstance(f, _RestoredWidgetFilter) for f in log.filters):
        log.addFilter(_RestoredWidgetFilter())


_WARM = {"started": False, "lock": threading.Lock()}


def warm_kernels_in_background() -> None:
    """Compile (or load from numba's cache) the kernels behind the PDP and SHAP pages, once per
    server process, in a background thread.

    On a fresh install the first PDP view would otherwise wait about ten seconds for
    compilation (the first SHAP view about four); the user spends that time on the Model
    page instead. Later starts only load the cached machine code (about a second).
    """
    with _WARM["lock"]:
        if _WARM["started"]:
            return
        _WARM["started"] = True
    threading.Thread(target=_warm_kernels, name="glassbox-warm-kernels", daemon=True).start()


def _warm_kernels() -> None:
    import logging
    import warnings

    try:
        from sklearn.ensemble import RandomForestRegressor
        from sklearn.neural_network import MLPRegressor

        from explainers.pdp import partial_dependence
        from explainers.shap import explain

        rng = np.random.default_rng(0)
        X = rng.uniform(size=(40, 3))
        forest = RandomForestRegressor(n_estimators=2, max_depth=3, random_state=0).fit(X, X[:, 0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tiny MLP does not converge
            mlp = MLPRegressor(hidden_layer_sizes=(4,), max_iter=5, random_state=0).fit(X, X[:, 0])
        for kind in ("both", "average"):
            partial_dependence(forest, X, [0], grid_resolution=3, kind=kind)
        partial_dependence(mlp, X, [0], grid_resolution=3, kind="average")
        explain(forest, X[:2])
    except Exception:  # pragma: no cover - only a slower first view is at stake
        logging.getLogger(__name__).warning("Warming the compiled kernels failed", exc_info=True)


def init_session() -> None:
    """Set every session key once, at the top of app.py."""
    st.session_state.setdefault(ACTIVE, DEFAULT_DEMO)
    st.session_state.setdefault(UPLOAD, None)
    st.session_state.setdefault(LAST_ERROR, None)


def pickles_trusted() -> bool:
    """The operator allowed pickle/joblib uploads (a start flag or environment variable)."""
    env = os.environ.get(TRUST_ENV, "").strip().lower() in ("1", "true", "yes", "on")
    return env or TRUST_FLAG in sys.argv[1:]


# ------------------------------------------------------------------ contexts
@dataclass
class ModelContext:
    """Everything a page needs about the active model and its data."""

    name: str
    title: str
    model: object
    adapter: ModelAdapter
    X: pd.DataFrame
    y: pd.Series | None
    model_key: str
    data_key: str
    card: dict
    notices: list = field(default_factory=list)

    @property
    def task(self) -> str:
        return self.adapter.task

    @property
    def classes(self) -> list[str] | None:
        return None if self.adapter.classes is None else [str(c) for c in self.adapter.classes]

    @property
    def key(self) -> str:
        """One cache key for this model + data pair."""
        return f"{self.model_key[:16]}-{self.data_key[:16]}"


@st.cache_resource(show_spinner="Building the demo models (first start only, about 10 s)…")
def demo_cards() -> dict[str, dict]:
    cards = demo_build.ensure_built()
    return {c["name"]: c for c in cards}


@st.cache_resource(max_entries=16, show_spinner=False)
def load_model_cached(model_key: str, _data: bytes, filename: str, trusted: bool):
    return explainers.load_model(_data, trusted=trusted, filename=filename)


@st.cache_data(max_entries=16, show_spinner=False)
def load_data_cached(data_key: str, _data: bytes, filename: str, target: str | None,
                     model_key: str, _model) -> explainers.Dataset:
    return explainers.load_data(_data, model=_model, target=target, filename=filename)


@st.cache_resource(max_entries=8, show_spinner=False)
def _demo_files(name: str, version_key: str) -> tuple[bytes, bytes, str, str]:
    """A demo's model and data bytes with their fingerprints, hashed once per process."""
    p = demo_build.paths(name)
    model_bytes, data_bytes = p["skops"].read_bytes(), p["parquet"].read_bytes()
    return model_bytes, data_bytes, explainers.fingerprint(model_bytes), explainers.fingerprint(data_bytes)


def demo_context(name: str) -> ModelContext:
    card = demo_cards()[name]
    model_bytes, data_bytes, model_key, data_key = _demo_files(name, str(card["versions"]))

    def build() -> ModelContext:
        model = load_model_cached(model_key, model_bytes, f"{name}.skops", False)
        ds = load_data_cached(data_key, data_bytes, f"{name}.parquet", card["target"], model_key, model)
        return ModelContext(
            name=name, title=card["title"], model=model, adapter=ModelAdapter(model),
            X=ds.X, y=ds.y, model_key=model_key, data_key=ds.fingerprint, card=card, notices=ds.notices,
        )

    # one context per model and data, built once: every rerun of every page asks for it
    return result_cache().get_or_compute(("context", model_key, data_key, card["target"]), build)


def load_upload(model_bytes: bytes, model_name: str, data_bytes: bytes, data_name: str,
                target: str | None, *, model_key: str | None = None,
                data_key: str | None = None) -> ModelContext:
    """Load an uploaded pair; raises ExplainerError with a readable message on bad input.

    Pass the fingerprints when they are known, so the bytes are not hashed again.
    """
    model_key = model_key or explainers.fingerprint(model_bytes)
    data_key = data_key or explainers.fingerprint(data_bytes)
    return result_cache().get_or_compute(
        ("context", model_key, data_key, target, model_name, data_name),
        lambda: _upload_context(model_bytes, model_name, data_bytes, data_name, target, model_key, data_key))


def _upload_context(model_bytes, model_name, data_bytes, data_name, target, model_key, data_key) -> ModelContext:
    model = load_model_cached(model_key, model_bytes, model_name, pickles_trusted())
    ds = load_data_cached(data_key, data_bytes, data_name, target, model_key, model)
    adapter = ModelAdapter(model, feature_names=list(ds.X.columns))
    card = {
        "name": UPLOADED,
        "title": f"Uploaded: {model_name}",
        "description": f"Your model {model_name} with data {data_name}.",
        "model_type": _model_type(model),
        "task": adapter.task,
        "target": target,
        "classes": None if adapter.classes is None else [str(c) for c in adapter.classes],
        "n_rows": int(len(ds.X)),
        "n_train": None,
        "metric": None,
        "features": [],
    }
    return ModelContext(
        name=UPLOADED, title=card["title"], model=model, adapter=adapter, X=ds.X, y=ds.y,
        model_key=model_key, data_key=ds.fingerprint, card=card, notices=ds.notices,
    )


def _model_type(model) -> str:
    steps = getattr(model, "steps", None)
    if steps:
        return " → ".join(type(s).__name__ for _, s in steps)
    return type(model).__name__


def current() -> ModelContext:
    """The active model context (demo or upload)."""
    active = st.session_state.get(ACTIVE, DEFAULT_DEMO)
    up = st.session_state.get(UPLOAD)
    if active == UPLOADED and up is not None:
        return load_upload(up["model_bytes"], up["model_name"], up["data_bytes"], up["data_name"], up["target"],
                           model_key=up["model_key"], data_key=up["data_key"])
    if active not in demo_build.DEMO_NAMES:
        active = DEFAULT_DEMO
        st.session_state[ACTIVE] = active
    return demo_context(active)


def model_options() -> dict[str, str]:
    """Selectbox options: key -> label."""
    cards = demo_cards()
    opts = {name: cards[name]["title"] for name in demo_build.DEMO_NAMES}
    up = st.session_state.get(UPLOAD)
    if up is not None:
        opts[UPLOADED] = f"Uploaded: {up['model_name']}"
    return opts


# -------------------------------------------------------------- summaries
@st.cache_data(max_entries=32, show_spinner=False)
def feature_summary(data_key: str, _X: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for col in _X.columns:
        s = _X[col]
        numeric = pd.api.types.is_numeric_dtype(s)
        rows.append({
            "feature": col,
            "type": "numeric" if numeric else "categorical",
            "dtype": str(s.dtype),
            "min": float(s.min()) if numeric else None,
            "max": float(s.max()) if numeric else None,
            "mean": float(s.mean()) if numeric else None,
            "distinct": int(s.nunique(dropna=True)),
            "missing": int(s.isna().sum()),
        })
    return pd.DataFrame(rows)


@st.cache_data(max_entries=32, show_spinner=False)
def data_score(model_key: str, data_key: str, _ctx_adapter: ModelAdapter, _X: pd.DataFrame,
               _y: pd.Series) -> dict | None:
    """R² or accuracy of the model on the given rows (None when the target is unusable)."""
    from sklearn.metrics import accuracy_score, r2_score

    y = _y
    keep = y.notna().to_numpy()
    if keep.sum() < 2:
        return None
    X = _X[keep]
    y = y[keep]
    if _ctx_adapter.task == "regression":
        pred = _ctx_adapter.predict(X)
        return {"name": "R²", "value": float(r2_score(y.astype(float), pred))}
    pred = _ctx_adapter.predict_labels(X)
    return {"name": "accuracy", "value": float(accuracy_score(y.astype(str), pred.astype(str)))}


def error_message(exc: BaseException) -> str:
    """One sentence that says what to do: never a traceback on the page."""
    if isinstance(exc, ExplainerError):
        return str(exc)
    return (
        f"Something went wrong ({type(exc).__name__}: {exc}). Nothing was changed; "
        "check the inputs and try again."
    )


def show_error(exc: BaseException) -> None:
    st.error(error_message(exc), icon=":material/error:")


# ------------------------------------------------------------ upload actions
MODEL_FILE = "upload_model_file"
DATA_FILE = "upload_data_file"
TARGET_COL = "upload_target"
DEMO_PICK = "demo_pick"
NO_TARGET = "(no target column)"


def on_pick_demo() -> None:
    """Callback of the Model page's demo picker (callbacks may set widget state)."""
    st.session_state[ACTIVE] = st.session_state[DEMO_PICK]
    st.session_state[LAST_ERROR] = None


def on_load_upload() -> None:
    """Callback of the Load button: load both files or keep what was chosen before."""
    mf = st.session_state.get(MODEL_FILE)
    df = st.session_state.get(DATA_FILE)
    if mf is None or df is None:
        st.session_state[LAST_ERROR] = "Choose both a model file and a data file, then press Load."
        return
    target = st.session_state.get(TARGET_COL)
    target = None if target in (None, NO_TARGET) else target
    model_bytes, data_bytes = mf.getvalue(), df.getvalue()
    keys = {"model_key": explainers.fingerprint(model_bytes), "data_key": explainers.fingerprint(data_bytes)}
    try:
        load_upload(model_bytes, mf.name, data_bytes, df.name, target, **keys)
    except Exception as exc:  # keep the model already chosen; say what to fix
        st.session_state[LAST_ERROR] = error_message(exc)
        return
    st.session_state[UPLOAD] = {
        "model_bytes": model_bytes, "model_name": mf.name, "data_bytes": data_bytes, "data_name": df.name,
        "target": target, **keys,
    }
    st.session_state[ACTIVE] = UPLOADED
    st.session_state[LAST_ERROR] = None


def upload_columns() -> list[str]:
    """Columns of the data file chosen in the uploader (for the target picker)."""
    df = st.session_state.get(DATA_FILE)
    if df is None:
        return []
    # the uploader's file id names this upload: no need to hash the bytes on every rerun
    return _peek(f"{df.file_id}:{df.size}", df.getvalue(), df.name)


@st.cache_data(max_entries=16, show_spinner=False)
def _peek(data_key: str, _data: bytes, name: str) -> list[str]:
    from explainers.io import peek_columns

    return peek_columns(_data, filename=name)


# ------------------------------------------------------------------ importance
IMPORTANCE_METHODS = {
    "mdi": "Mean decrease in impurity (MDI)",
    "oob": "Out-of-bag permutation (MDA)",
    "permutation": "Holdout permutation",
    "shap": "Mean |SHAP|",
}


def split_rows(ctx: ModelContext) -> tuple[tuple, tuple]:
    """((X_train, y_train), (X_holdout, y_holdout)) for this model's data.

    Demo data stores the training rows first (the card says how many); for an
    upload the file is taken as the training data for out-of-bag importance
    (the check against the forest's own out-of-bag predictions tells when it is
    not) and as held-out data for permutation importance.
    """
    n_train = ctx.card.get("n_train")
    if n_train:
        tr = (ctx.X.iloc[:n_train], None if ctx.y is None else ctx.y.iloc[:n_train])
        ho = (ctx.X.iloc[n_train:], None if ctx.y is None else ctx.y.iloc[n_train:])
        return tr, ho
    both = (ctx.X, ctx.y)
    return both, both


class ResultCache:
    """A small LRU cache shared by every session, for long computations that report progress.

    st.cache_data cannot be used there: a progress bar created outside a cached
    function and updated inside it breaks Streamlit's replay of cached elements.
    Keys are built from the model and data fingerprints plus every setting; the
    values are immutable result dataclasses, so sharing them is safe.
    """

    def __init__(self, max_entries: int = 64):
        from collections import OrderedDict

        self._data: "OrderedDict[tuple, object]" = OrderedDict()
        self._lock = threading.Lock()
        self.max_entries = max_entries
        self.hits = 0
        self.misses = 0

    def get_or_compute(self, key: tuple, compute):
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                self.hits += 1
                return self._data[key]
            self.misses += 1
        value = compute()  # outside the lock: other sessions keep working meanwhile
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.max_entries:
                self._data.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


_RESULTS = ResultCache()


def result_cache() -> ResultCache:
    """The process-wide cache of long results (one per server, shared by sessions)."""
    return _RESULTS


def importance(ctx: ModelContext, method: str, n_repeats: int, max_rows: int, progress=None):
    """One importance result, cached per model, data, method and settings."""
    key = ("importance", ctx.model_key, ctx.data_key, method, n_repeats if method == "permutation" else 0,
           max_rows if method in ("permutation", "shap") else 0)
    return result_cache().get_or_compute(key, lambda: _importance(ctx, method, n_repeats, max_rows, progress))


def _importance(ctx: ModelContext, method: str, n_repeats: int, max_rows: int, progress):
    from explainers import importance as imp

    (X_tr, y_tr), (X_ho, y_ho) = split_rows(ctx)
    if method == "mdi":
        return imp.mdi(ctx.model)
    if method == "oob":
        if y_tr is None:
            raise ExplainerError("Out-of-bag importance needs the target: pick the target column on the Model page.")
        return imp.oob_permutation_importance(ctx.model, X_tr, y_tr, progress=progress)
    if method == "permutation":
        if y_ho is None:
            raise ExplainerError("Permutation importance needs the target: pick the target column on the Model page.")
        take = _seeded_rows(len(X_ho), max_rows)
        return imp.permutation_importance(ctx.model, X_ho.iloc[take], y_ho.iloc[take], n_repeats=n_repeats,
                                          random_state=0, progress=progress)
    if method == "shap":
        return imp.shap_importance(explain_sample(ctx, max_rows, "auto", progress))
    raise KeyError(method)


def _seeded_rows(n_total: int, n: int) -> np.ndarray:
    """Positions of a seeded sample of n rows (all rows when there are no more), in data order."""
    if n_total <= n:
        return np.arange(n_total)
    return np.sort(np.random.default_rng(0).choice(n_total, n, replace=False))


def background(ctx: ModelContext, n: int = 100) -> pd.DataFrame:
    """A seeded sample of the data as the SHAP background (training rows where known)."""
    (X_tr, _), _ = split_rows(ctx)
    return X_tr.iloc[_seeded_rows(len(X_tr), n)]


@st.cache_data(max_entries=32, show_spinner=False)
def comparison(model_key: str, data_key: str, labels: tuple, _results: list, _X):
    from explainers.importance import compare_importances

    return compare_importances(_results, X=_X)


def shap_is_fast(ctx: ModelContext) -> bool:
    """Whether the automatic SHAP method for this model is a fast one (linear or tree)."""
    try:
        from explainers.shap import auto
    except Exception:
        return False
    try:
        method, _ = auto.choose_method(ctx.model, ctx.X.shape[1], 100)
    except Exception:
        return False
    return method in ("linear", "tree")


def importances(ctx: ModelContext, methods: list[str], n_repeats: int, max_rows: int, bar) -> tuple[list, list]:
    """Compute (cached) each method that applies; return (results, [(label, reason)] skipped)."""
    results, skipped = [], []
    for i, method in enumerate(methods):
        label = IMPORTANCE_METHODS[method]

        progress = ProgressBar(bar, label)
        bar.progress(i / len(methods), text=f"{label}…")
        try:
            results.append(importance(ctx, method, n_repeats, max_rows, progress))
        except ExplainerError as exc:
            skipped.append((label, str(exc)))
        except Exception as exc:  # never a traceback on the page
            skipped.append((label, error_message(exc)))
    return results, skipped


# ------------------------------------------------------------------------ SHAP
SHAP_METHODS = ("auto", "linear", "exact", "kernel", "tree")


def explain_row(ctx: ModelContext, row: int, method: str, missing: tuple[str, ...]):
    """SHAP values of one row with the given features masked, cached per setting."""
    def compute():
        from explainers.shap import explain

        return explain(ctx.model, ctx.X.iloc[[row]], background=background(ctx),
                       method=method, missing=list(missing) or None)

    return result_cache().get_or_compute(("shap_row", ctx.model_key, ctx.data_key, row, method, missing), compute)


def explain_sample(ctx: ModelContext, n_rows: int, method: str, progress=None):
    """SHAP values of a seeded sample of rows, for the global views."""
    def compute():
        from explainers.shap import explain

        X = sample_rows(ctx, n_rows)
        return explain(ctx.model, X, background=background(ctx),
                       method=method, progress=progress)

    return result_cache().get_or_compute(("shap_sample", ctx.model_key, ctx.data_key, n_rows, method), compute)


def sample_rows(ctx: ModelContext, n_rows: int) -> pd.DataFrame:
    """A seeded sample of the data's rows (the global views, the 2D data overlay)."""
    return ctx.X.iloc[_seeded_rows(len(ctx.X), n_rows)]


@st.cache_data(max_entries=32, show_spinner=False)
def row_table(model_key: str, data_key: str, class_index: int, _ctx: ModelContext) -> pd.DataFrame:
    """Per row: the prediction (of the chosen class) and, with a target, the error."""
    pred = _ctx.adapter.predict(_ctx.X)
    if pred.ndim == 2:
        pred = pred[:, class_index]
    table = pd.DataFrame({"row": np.arange(len(_ctx.X)), "prediction": pred})
    if _ctx.y is not None:
        if _ctx.task == "regression":
            table["error"] = np.abs(pred - _ctx.y.to_numpy(dtype=float))
        else:
            # error = 1 - probability given to the true class
            position = {str(c): i for i, c in enumerate(_ctx.adapter.classes)}
            idx = np.array([position.get(str(t), -1) for t in _ctx.y])
            proba = _ctx.adapter.predict(_ctx.X)
            table["error"] = np.where(idx >= 0, 1.0 - proba[np.arange(len(idx)), np.maximum(idx, 0)], np.nan)
        table["target"] = _ctx.y.to_numpy()
    return table


def class_index(ctx: ModelContext) -> int:
    """Position of the sidebar's class among the model's classes (0 when none is picked).

    The widget holds the class label, not its position: when the model
    changes, a label the new model lacks simply falls back to the first class.
    """
    label = st.session_state.get(CLASS_INDEX)
    if ctx.classes is None or label is None:
        return 0
    return ctx.classes.index(str(label)) if str(label) in ctx.classes else 0


def shap_class(res, ctx: ModelContext) -> int | None:
    """The sidebar's class as an output index of a SHAP result (None for one output)."""
    if res.values.ndim == 2:
        return None
    k = res.values.shape[2]
    ci = class_index(ctx)
    return ci if ci < k else k - 1


def additivity_line(res, row: int, class_index: int | None) -> str:
    """'base + contributions = prediction' with the numbers of this row."""
    vals = res.values[row] if class_index is None else res.values[row, :, class_index]
    base = res.base_values[row] if class_index is None else res.base_values[row, class_index]
    pred = res.predictions[row] if class_index is None else res.predictions[row, class_index]
    total = float(np.sum(vals))
    return f"base {base:.6g} + contributions {total:+.6g} = prediction {float(base) + total:.6g} (model: {float(pred):.6g})"


# ------------------------------------------------------------------------- PDP
PDP_MAX_ROWS = 2_000  # rows behind a PDP/ICE on the page; a seeded sample above that


def pdp(ctx: ModelContext, features: tuple[str, ...], grid_resolution: int, percentiles: tuple[float, float],
        max_rows: int = PDP_MAX_ROWS):
    """Partial dependence (and ICE for one feature), cached per model, data and settings."""
    sample = max_rows if len(ctx.X) > max_rows else None

    def compute():
        from explainers.pdp import partial_dependence

        return partial_dependence(
            ctx.model, ctx.X, list(features), grid_resolution=grid_resolution, percentiles=percentiles,
            kind="both" if len(features) == 1 else "average", sample=sample, random_state=0,
        )

    key = ("pdp", ctx.model_key, ctx.data_key, features, grid_resolution, percentiles, sample)
    return result_cache().get_or_compute(key, compute)


def ale(ctx: ModelContext, feature, n_bins: int):
    """ALE of one numeric feature (a name), or second-order ALE of two (a tuple), cached."""
    def compute():
        from explainers.ale import ale as ale_fn

        return ale_fn(ctx.model, ctx.X, list(feature) if isinstance(feature, tuple) else feature,
                      n_bins=n_bins)

    return result_cache().get_or_compute(("ale", ctx.model_key, ctx.data_key, feature, n_bins), compute)


def pdp_class(ctx: ModelContext) -> int | None:
    """The sidebar's class for PDP/ALE figures (None for regression)."""
    return None if ctx.classes is None else class_index(ctx)


# ------------------------------------------------------------- progress, URL
class ProgressBar:
    """A progress callback for st.progress that also estimates the time left."""

    def __init__(self, bar, label: str):
        import time

        self._time = time.perf_counter
        self._start = self._time()
        self.bar = bar
        self.label = label

    def __call__(self, done: int, total: int) -> None:
        frac = min(done / total, 1.0) if total else 1.0
        elapsed = self._time() - self._start
        text = f"{self.label}: {done:,} of {total:,}"
        if 0 < frac < 1 and elapsed > 0.5:
            text += f" · about {elapsed * (1 - frac) / frac:.0f} s left"
        self.bar.progress(frac, text=text)


URL_KEYS = {  # query parameter -> session-state key of the widget it fills
    "model": ACTIVE,
    "class": CLASS_INDEX,
    "feature": "pdp_f1",
    "feature2": "pdp_f2",
    "row": "shap_row",
}
_URL_DONE = "url_applied"


def apply_url() -> None:
    """On a session's first run, fill the shared selections from the URL's query parameters.

    Values are only taken when valid (a known model; the pages check features
    and rows against their own options), so a stale link never breaks a page.
    """
    if st.session_state.get(_URL_DONE):
        return
    st.session_state[_URL_DONE] = True
    qp = st.query_params
    model = qp.get("model")
    if model in demo_build.DEMO_NAMES:
        st.session_state[ACTIVE] = model
    value = qp.get("row")
    if value is not None and value.isdigit():
        st.session_state[URL_KEYS["row"]] = int(value)
    for param in ("class", "feature", "feature2"):
        if qp.get(param):
            st.session_state[URL_KEYS[param]] = qp.get(param)


def valid_choice(key: str, options: list, default=None) -> None:
    """Drop a session value (e.g. from a URL) that is not among a widget's options."""
    if key in st.session_state and st.session_state[key] not in options:
        if default is None:
            del st.session_state[key]
        else:
            st.session_state[key] = default


def valid_choices(key: str, options: list) -> None:
    """Keep only the values of a multiselect that are among its options (e.g. after a model switch)."""
    if key in st.session_state:
        st.session_state[key] = [v for v in st.session_state[key] if v in options]


def share_in_url(**params) -> None:
    """Keep the page's main selections in the URL, so a view can be shared and reopened."""
    for name, value in params.items():
        if value is None:
            st.query_params.pop(name, None)
        else:
            st.query_params[name] = str(value)


# -------------------------------------------------------------------- what-if
def explain_edited(ctx: ModelContext, values: tuple, missing: tuple[str, ...]):
    """SHAP values (automatic method) of one edited row, cached by its values and mask."""
    def compute():
        from explainers.shap import explain

        row = pd.DataFrame([list(values)], columns=list(ctx.X.columns)).astype(ctx.X.dtypes.to_dict())
        return explain(ctx.model, row, background=background(ctx),
                       missing=list(missing) or None)

    return result_cache().get_or_compute(("whatif", ctx.model_key, ctx.data_key, values, missing), compute)


def output_label(res, class_index: int | None) -> str:
    """What the numbers are: 'prediction', or 'P(class)' / 'log-odds(class)'."""
    if class_index is None and res.values.ndim == 2:
        name = res.output_names[0] if res.output_names else ""
        return {"raw": "prediction", "log_odds": f"log-odds({name})", "margin": f"margin({name})"}.get(
            res.output, "prediction")
    name = res.output_names[class_index]
    return {"proba": f"P({name})", "log_odds": f"log-odds({name})"}.get(res.output, f"{res.output}({name})")


def precomputed_attributions(ctx: ModelContext, folder: str, n_rows: int):
    """A seeded sample of a finished ``python -m explainers batch`` run, and whether it is this model's.

    Returns (ShapResult, same_model). Raises ExplainerError when the folder
    holds no finished run.
    """
    import json

    from explainers.batch import MANIFEST, load_attributions

    path = Path(folder).expanduser()
    manifest = path / MANIFEST if path.is_dir() else path
    if not manifest.is_file():
        raise ExplainerError(
            f"{folder!r} holds no batch run: give the --out folder of "
            "`python -m explainers batch` (it contains _manifest.json)."
        )
    stamp = manifest.stat().st_mtime_ns
    res = result_cache().get_or_compute(
        ("precomputed", str(path.resolve()), stamp, n_rows),
        lambda: load_attributions(path, sample=n_rows))
    try:
        sha = json.loads(manifest.read_text()).get("model", {}).get("sha256")
    except (OSError, ValueError):
        sha = None
    return res, sha == ctx.model_key


# --------------------------------------------------------------------- report
def report_html(ctx: ModelContext, feature: str, row: int, wanted: tuple[bool, bool, bool, bool],
                bar) -> tuple[str, int]:
    """The report as one HTML document and its number of sections, built once per choice.

    ``wanted`` says which parts to include: summary, PDP/ICE, SHAP waterfall,
    importance comparison.
    """
    ci = pdp_class(ctx)
    key = ("report", ctx.model_key, ctx.data_key, feature, row, ci, wanted)
    return result_cache().get_or_compute(key, lambda: _build_report(ctx, feature, row, wanted, ci, bar))


def _build_report(ctx: ModelContext, feature: str, row: int, wanted, ci, bar) -> tuple[str, int]:
    from dashboard import figures, report

    want_summary, want_pdp, want_shap, want_imp = wanted
    sections = []
    if want_summary:
        sections.append(report.Section("Features", "Types, ranges and missing values of the data.",
                                       table=feature_summary(ctx.data_key, ctx.X).set_index("feature")))
    bar.progress(0.25, text="Partial dependence…")
    if want_pdp:
        res = pdp(ctx, (feature,), 40, (0.05, 0.95))
        sections.append(report.Section(f"Partial dependence and ICE: {feature}",
                                       "The bold line is the average effect; thin lines are single rows.",
                                       figure=figures.pdp_figure(res, class_index=ci)))
    bar.progress(0.5, text="SHAP…")
    if want_shap:
        sres = explain_row(ctx, row, "auto", ())
        sci = shap_class(sres, ctx)
        sections.append(report.Section(f"Why row {row} gets its prediction", additivity_line(sres, 0, sci),
                                       figure=figures.waterfall_figure(sres, 0, class_index=sci, max_display=12)))
    bar.progress(0.75, text="Importance…")
    if want_imp:
        results, _ = importances(ctx, ["mdi", "oob", "permutation"], 5, 1_000, bar)
        if len(results) >= 2:
            comp = comparison(ctx.model_key, ctx.data_key, tuple(r.label for r in results), results, ctx.X)
            sections.append(report.Section("Variable importance, compared",
                                           " ".join(f"{r.label}: {r.description}" for r in results),
                                           figure=figures.importance_bars_figure(comp)))
        elif results:
            sections.append(report.Section("Variable importance", results[0].description,
                                           figure=figures.importance_bars_figure(results[0])))
    summary = {"Model": ctx.card.get("model_type", ""), "Task": ctx.task, "Rows": f"{len(ctx.X):,}",
               "Features": ctx.X.shape[1]}
    if ctx.classes:
        summary["Classes"] = ", ".join(ctx.classes)
    if ctx.card.get("metric"):
        summary[ctx.card["metric"]["name"]] = f"{ctx.card['metric']['value']:.3f}"
    html_doc = report.build_report(f"Glassbox — {ctx.title}", summary if want_summary else {}, sections)
    return html_doc, len(sections)
