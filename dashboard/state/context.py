"""The active model and its data: :class:`ModelContext`, loading demos, uploads and
served models (``glassbox serve``, ``show()``: files named by the operator, read from
their paths), the Model page's callbacks and summaries, and exceptions turned into messages.

Cache keys are the sha256 fingerprints of the model and data files (a fitted
model cannot be hashed by Streamlit, and an underscore argument is not hashed
at all, so every cached call takes the keys).
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import streamlit as st

import explainers
from demo_models import build as demo_build
from explainers import ExplainerError, ModelAdapter
from explainers.description import ModelDescription, describe
from explainers.io.isolated import load_data_isolated, load_model_isolated

from dashboard import served as served_list

from .cache import result_cache
from .operator import pickles_trusted
from .session import DEFAULT_DEMO, UPLOAD, UPLOADED, active_model, set_active_model


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
    def description(self) -> ModelDescription:
        """What the model is (engines, fold, link), read once per fitted model by explainers."""
        return describe(self.adapter.model)

    @property
    def key(self) -> str:
        """One cache key for this model + data pair."""
        return f"{self.model_key[:16]}-{self.data_key[:16]}"


# ------------------------------------------------------------------ loading
@st.cache_resource(show_spinner="Building the demo models (first start only, about 10 s)…")
def demo_cards() -> dict[str, dict]:
    cards = demo_build.ensure_built()
    return {c["name"]: c for c in cards}


@st.cache_resource(max_entries=16, show_spinner=False)
def load_model_cached(model_key: str, _data: bytes, filename: str, trusted: bool, isolated: bool = True):
    """The model of a file; an upload (``isolated``) is read in a child process with a CPU and
    memory budget, so no upload holds the server or crashes it (explainers.io.isolated)."""
    if isolated:
        return load_model_isolated(_data, trusted=trusted, filename=filename)
    return explainers.load_model(_data, trusted=trusted, filename=filename)


@st.cache_resource(max_entries=16, show_spinner=False)
def load_data_cached(data_key: str, _data: bytes, filename: str, target: str | None,
                     model_key: str, _model, isolated: bool = True) -> explainers.Dataset:
    """The data of a file checked against the model; an upload's (``isolated``) in a child process.

    Kept as the one object every caller shares (a Dataset is never changed in place): a
    cache that pickles its values held a second copy of a large table and paid for it.
    """
    if isolated:
        return load_data_isolated(_data, model=_model, target=target, filename=filename)
    return explainers.load_data(_data, model=_model, target=target, filename=filename)


@st.cache_resource(max_entries=8, show_spinner=False)
def _demo_files(name: str, version_key: str) -> tuple[bytes, bytes, str, str, str]:
    """A demo's model and data bytes with their fingerprints, hashed once per process, and the
    model file's name (its suffix tells the loader the format: .skops, or a library's own file)."""
    p = demo_build.paths(name)
    model_bytes, data_bytes = p["model"].read_bytes(), p["parquet"].read_bytes()
    return (model_bytes, data_bytes, explainers.fingerprint(model_bytes), explainers.fingerprint(data_bytes),
            p["model"].name)


def demo_context(name: str) -> ModelContext:
    card = demo_cards()[name]
    model_bytes, data_bytes, model_key, data_key, model_name = _demo_files(name, str(card["versions"]))

    def build() -> ModelContext:
        # the same safe loader as uploads (never trusted): skops, or an XGBoost / LightGBM file
        model = load_model_cached(model_key, model_bytes, model_name, False, isolated=False)  # our own file
        ds = load_data_cached(data_key, data_bytes, f"{name}.parquet", card["target"], model_key, model, False)
        return ModelContext(
            name=name, title=card["title"], model=model, adapter=ModelAdapter(model),
            X=ds.X, y=ds.y, model_key=model_key, data_key=ds.fingerprint, card=card,
            notices=list(getattr(model, "notes", ())) + list(ds.notices),
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
    model, ds, notices = _load_file_data(data_key, data_bytes, data_name, target, model_key, model)
    return _file_context(UPLOADED, f"Uploaded: {model_name}", f"Your model {model_name} with data {data_name}.",
                         model, ds, target, model_key, notices)


def _target_notices(adapter: ModelAdapter, target: str | None) -> list[str]:
    """What the user should know about the target of a model with several outputs."""
    k = getattr(adapter, "n_targets", 1)
    if k > 1 and target is not None:
        return [f"This model predicts {k} targets and the data gives one target column, {target!r}. Say in the "
                "sidebar which output it holds the true values of (under the Output picker): quality, errors and "
                "permutation importance then score that output against it."]
    return []


def _load_file_data(data_key: str, data, data_name: str, target: str | None, model_key: str, model,
                    isolated: bool = True):
    """(model, Dataset, notices): the data loaded against the model; a library file's classifier
    that names no classes first gets them from the target column (:func:`classes_from_target`)."""
    notices = []
    if target and _unnamed_classes(model):  # only then is the target read first
        plain = load_data_cached(data_key, data, data_name, target, "", None, isolated)  # the target, unchecked
        named, notice = classes_from_target(model, plain.y, target)
        if named is not model:
            model, model_key = named, f"{model_key}|classes from {target}"
        notices += [notice] if notice else []
        if not isolated:  # a file read here: checked against the model from what was read (not twice)
            from explainers.io.data import refit_data

            return model, refit_data(plain, model, target), notices
    return model, load_data_cached(data_key, data, data_name, target, model_key, model, isolated), notices


def _unnamed_classes(model) -> bool:
    """Whether the model is a library file's classifier whose classes are only 0 .. k-1."""
    import numpy as np

    from explainers.trees import NativeTreeModel

    classes = getattr(model, "classes_", None)
    return (isinstance(model, NativeTreeModel) and classes is not None
            and np.array_equal(np.asarray(classes, dtype=object), np.arange(len(classes))))


def classes_from_target(model, y, target: str | None):
    """A classifier read from a boosting library's file that names no classes predicts 0 .. k-1;
    when the target column holds k other values, they are its classes, in sorted order (as
    scikit-learn's LabelEncoder numbers them before such a model is fitted). Returns (the model,
    a copy where its classes are named, and the notice saying so, or None)."""
    import copy

    import numpy as np
    import pandas as pd

    from explainers.trees.native import library_label

    if y is None or not _unnamed_classes(model):
        return model, None
    values = pd.Series(y).dropna().unique()
    k = len(model.classes_)
    if {str(v) for v in values} <= {str(i) for i in range(k)}:
        return model, None  # the column holds the codes themselves
    if len(values) != k:
        return model, None  # the data's own check says which values the model does not know
    named = copy.copy(model)
    named.classes_ = np.asarray(sorted(values, key=lambda v: (str(type(v)), v)), dtype=object)
    pairs = ", ".join(f"{i} = {v!r}" for i, v in enumerate(named.classes_))
    lib = library_label(model.library)
    return named, (f"The {lib} model file names no classes (it predicts 0 to {k - 1}); the target column "
                   f"{target!r} holds {k} values, taken as those classes in sorted order, as scikit-learn's "
                   f"LabelEncoder numbers them: {pairs}. If the model was trained with another numbering, recode "
                   "the column to 0 to k-1 (or save the model with its labels).")


def _file_context(name: str, title: str, description: str, model, ds, target, model_key: str,
                  extra_notices=()) -> ModelContext:
    """The context of a model and data read from files (an upload, or a served model); its notices are
    the model file's notes, the data's, and the target's."""
    adapter = ModelAdapter(model, feature_names=list(ds.X.columns))
    notices = (list(getattr(model, "notes", ())) + list(ds.notices) + _target_notices(adapter, target)
               + list(extra_notices))
    card = {
        "name": name,
        "title": title,
        "description": description,
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
        name=name, title=title, model=model, adapter=adapter, X=ds.X, y=ds.y,
        model_key=model_key, data_key=ds.fingerprint, card=card, notices=notices,
    )


def _model_type(model) -> str:
    if hasattr(model, "ensemble") and hasattr(model, "library"):  # read from a boosting library's file
        return str(model.ensemble.model_name)
    steps = getattr(model, "steps", None)
    if steps:
        return " → ".join(type(s).__name__ for _, s in steps)
    return type(model).__name__


def context_for(key: str) -> ModelContext | None:
    """The context of one model the picker offers (served, demo or this session's upload),
    without making it the active one; None when ``key`` names none of them."""
    up = st.session_state.get(UPLOAD)
    if key == UPLOADED and up is not None:
        return load_upload(up["model_bytes"], up["model_name"], up["data_bytes"], up["data_name"], up["target"],
                           model_key=up["model_key"], data_key=up["data_key"])
    for entry in served_models():
        if entry.key == key:
            return served_context(entry)
    return demo_context(key) if key in demo_build.DEMO_NAMES else None


def current() -> ModelContext:
    """The active model context (served, demo or upload), its classes named as the user said
    where its file names none (:func:`with_class_names`)."""
    return with_class_names(_current())


def unnamed_class_count(ctx: ModelContext) -> int:
    """How many classes a model file left unnamed (0..k-1) that the user may name; 0 otherwise."""
    base = ctx.card.get("unnamed_classes") if ctx.card.get("named_by_user") else None
    if base:
        return int(base)
    return len(ctx.model.classes_) if _unnamed_classes(ctx.model) else 0


def class_names_problem(ctx: ModelContext, text: str) -> str | None:
    """Why the names typed for the classes cannot be used (None: they can, or none were typed)."""
    names = [n.strip() for n in str(text or "").split(",")]
    k = unnamed_class_count(ctx)
    if not str(text or "").strip() or not k:
        return None
    if len(names) != k:
        return f"Give {k} names, one per class 0 to {k - 1}, separated by commas (got {len(names)})."
    if any(not n for n in names) or len(set(names)) != k:
        return "Each class needs its own name: none empty, no two alike."
    return None


def with_class_names(ctx: ModelContext) -> ModelContext:
    """The context with the user's names for a model file's unnamed classes (0 .. k-1): the model's
    ``classes_`` and the target's codes both become the names, so every page, score and link reads
    them; the names start empty for another model."""
    from .session import CLASS_NAMES, set_value, value

    ss = st.session_state
    if ss.get("_names_for") not in (None, ctx.model_key):
        if value(CLASS_NAMES):
            set_value(CLASS_NAMES, "")
    ss["_names_for"] = ctx.model_key
    text = value(CLASS_NAMES) or ""
    if not text.strip() or not _unnamed_classes(ctx.model) or class_names_problem(ctx, text):
        return ctx
    names = tuple(n.strip() for n in text.split(","))
    return result_cache().get_or_compute(("context_named", ctx.model_key, ctx.data_key, names),
                                         lambda: _named_context(ctx, names))


def _named_context(ctx: ModelContext, names: tuple[str, ...]) -> ModelContext:
    import copy
    from dataclasses import replace

    import numpy as np

    k = len(names)
    named = copy.copy(ctx.model)
    named.classes_ = np.asarray(names, dtype=object)
    y = ctx.y
    if y is not None:
        codes = {str(i): names[i] for i in range(k)} | {str(float(i)): names[i] for i in range(k)}
        y = y.map(lambda v: v if v is None or (isinstance(v, float) and v != v) else codes.get(str(v), v))
    card = {**ctx.card, "classes": list(names), "named_by_user": True, "unnamed_classes": k}
    notice = ("Class names given on the Model page: " + ", ".join(f"{i} = {n!r}" for i, n in enumerate(names)) + ".")
    return replace(ctx, model=named, adapter=ModelAdapter(named, feature_names=list(ctx.X.columns)), y=y,
                   model_key=f"{ctx.model_key}|classes {'|'.join(names)}", card=card,
                   notices=[*ctx.notices, notice])


def _current() -> ModelContext:
    active = active_model()
    ctx = context_for(active)
    if ctx is not None:
        return ctx
    served = served_models()
    if active not in demo_build.DEMO_NAMES:  # gone or unknown: the first served model, else the demo
        if served:
            set_active_model(served[0].key)
            return served_context(served[0])
        active = DEFAULT_DEMO
        set_active_model(active)
    return demo_context(active)


def model_options() -> dict[str, str]:
    """Selectbox options: key -> label. Served models first (``glassbox serve``, ``show()``),
    then the demos, then the upload."""
    opts = {m.key: m.name for m in served_models()}
    cards = demo_cards()
    opts.update({name: cards[name]["title"] for name in demo_build.DEMO_NAMES})
    up = st.session_state.get(UPLOAD)
    if up is not None:
        opts[UPLOADED] = f"Uploaded: {up['model_name']}"
    return opts


# ------------------------------------------------------------ served models
def served_models() -> list[served_list.ServedModel]:
    """The models the server was started with (``glassbox serve``) or given (``show()``).

    Read from GLASSBOX_SERVE_MODELS and the manifest named by GLASSBOX_SERVE_MANIFEST,
    which is re-read when it changes; see :mod:`dashboard.served`.
    """
    try:
        return served_list.served_models(reserved=demo_build.DEMO_NAMES)
    except (served_list.ServeConfigError, OSError) as exc:
        raise ExplainerError(f"The served models cannot be read: {exc}") from None


def served_keys() -> list[str]:
    """The picker keys (and ``?model=`` values) of the served models."""
    return [m.key for m in served_models()]


def known_model(key) -> bool:
    """Whether ``key`` (e.g. a URL's ``?model=``) names a demo or a served model; never raises."""
    if key in demo_build.DEMO_NAMES:
        return True
    try:
        return key in served_keys()
    except ExplainerError:
        return False


def is_known_model(key) -> bool:
    """Whether a link's ``?model=`` can be shown in this session: a demo, a served model, or the
    upload this session holds (its own, or a shared one the link's ``?ws=`` opened)."""
    return known_model(key) or (key == UPLOADED and st.session_state.get(UPLOAD) is not None)


def default_model() -> str:
    """The model a new session starts on: the first served model, else the default demo."""
    try:
        keys = served_keys()
    except ExplainerError:
        keys = []
    return keys[0] if keys else DEFAULT_DEMO


def _file_key(path: str, what: str, name: str) -> str:
    """sha256 of a served file (the same key an upload of its bytes gets), hashed once per version."""
    try:
        info = os.stat(path)
    except OSError:
        raise ExplainerError(
            f"The {what} file {path!r} of the served model {name!r} cannot be read any more "
            "(moved or deleted?). Restore it, or restart the server with the new path.") from None
    return _file_fingerprint(os.path.abspath(path), info.st_size, info.st_mtime_ns)


@st.cache_resource(max_entries=64, show_spinner=False)
def _file_fingerprint(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def served_context(entry: served_list.ServedModel) -> ModelContext:
    """Load a served model and its data from their paths, by the same safe loaders as uploads."""
    model_key = _file_key(entry.model, "model", entry.name)
    if entry.parts is not None:  # a library model shown from a notebook: its files and settings
        final = entry.parts.get("final")
        extra = json.dumps([_file_key(final, "model", entry.name) if final else None,
                            entry.parts.get("step"), entry.parts.get("settings")], sort_keys=True)
        model_key = hashlib.sha256(f"{model_key}|{extra}".encode()).hexdigest()
    data_key = _file_key(entry.data, "data", entry.name)
    return result_cache().get_or_compute(
        ("context", model_key, data_key, entry.target, "served", entry.key, entry.name),
        lambda: _served_context(entry, model_key, data_key))


def _served_context(entry, model_key: str, data_key: str) -> ModelContext:
    model_name, data_name = Path(entry.model).name, Path(entry.data).name
    if entry.parts is not None:
        from explainers.io.models import load_model_parts

        final = entry.parts.get("final")
        model = load_model_parts(entry.model if final else None, final or entry.model,
                                 entry.parts.get("settings"), entry.parts.get("step") or "model")
    else:
        # the path goes to the loader as the (unhashed) content: the file is read in place
        # (the operator's or the notebook's own file: read here, not in a child)
        model = load_model_cached(model_key, entry.model, model_name, pickles_trusted(), isolated=False)
    model, ds, notices = _load_file_data(data_key, entry.data, data_name, entry.target, model_key, model,
                                         isolated=False)
    ctx = _file_context(entry.key, entry.name, entry.description or f"Your model {model_name} with data {data_name}.",
                        model, ds, entry.target, model_key, notices)
    ctx.card["target_transform"] = getattr(entry, "target_transform", None)  # the Model page's default
    return ctx


# ------------------------------------------------------------------- errors
def error_message(exc: BaseException) -> str:
    """One sentence that says what to do, in page words (:func:`dashboard.messages.for_page`):
    never a traceback, never a Python call."""
    from dashboard.messages import for_page

    return for_page(exc)


# -------------------------------------------------------------- summaries
def feature_summary(data_key: str, _X: pd.DataFrame) -> pd.DataFrame:
    """The Model page's features table of the data ``data_key`` (:func:`explainers.summary.feature_summary`),
    kept in the result cache: shared by every session and by the preload thread, which may run
    before Streamlit's runtime exists (a Streamlit data cache filled then was not the pages' one:
    the first page summarised a million rows again)."""
    from explainers.summary import feature_summary as summary

    return result_cache().get_or_compute(("feature_summary", data_key), lambda: summary(_X))


