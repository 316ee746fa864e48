"""What one browser session remembers: session-state keys, page widgets kept across
page switches, the files chosen in the Model page's uploaders (kept across pages too),
the URL's query parameters, the operator's trust flag and the class pick.
"""
from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import streamlit as st

if TYPE_CHECKING:
    from .context import ModelContext

# ----------------------------------------------------------- session-state keys
ACTIVE = "active_model"  # demo name, or UPLOADED
UPLOAD = "upload"  # dict: model/data bytes, names, keys, target
CLASS_INDEX = "class_label"  # the class (or a multi-output regressor's output) picked in the sidebar, by its label
LAST_ERROR = "model_page_error"
UPLOADED = "__uploaded__"
DEFAULT_DEMO = "diabetes_forest"

# widget keys of the Model page's upload form and demo picker
MODEL_FILE = "upload_model_file"
DATA_FILE = "upload_data_file"
TARGET_COL = "upload_target"
DEMO_PICK = "demo_pick"
NO_TARGET = "(no target column)"

#: the files chosen in those uploaders, kept across pages (Streamlit forgets a widget's
#: value once a run does not draw it, so the Model page's uploaders empty on a page switch)
CHOSEN = "chosen_upload_files"

TRUST_FLAG = "--trust-pickles"
TRUST_ENV = "GLASSBOX_TRUST_PICKLES"
BATCH_ROOT_FLAG = "--batch-root"
BATCH_ROOTS_ENV = "GLASSBOX_BATCH_ROOTS"


def init_session() -> None:
    """Set every session key once, at the top of app.py."""
    from .context import default_model  # the first served model (glassbox serve, show()), else the demo
    st.session_state.setdefault(ACTIVE, default_model())
    st.session_state.setdefault(UPLOAD, None)
    st.session_state.setdefault(LAST_ERROR, None)


def pickles_trusted() -> bool:
    """The operator allowed pickle/joblib uploads (a start flag or environment variable)."""
    env = os.environ.get(TRUST_ENV, "").strip().lower() in ("1", "true", "yes", "on")
    return env or TRUST_FLAG in sys.argv[1:]


def batch_roots() -> list[str]:
    """The folders the operator lets users open batch runs from, resolved (symlinks, ``..``).

    Named after ``--`` at start (``-- --batch-root DIR``, repeatable, or
    ``--batch-root=DIR``) and in GLASSBOX_BATCH_ROOTS (folders separated by
    ``os.pathsep``). None named: the SHAP page offers no batch runs at all.
    """
    named = os.environ.get(BATCH_ROOTS_ENV, "").split(os.pathsep)
    args = sys.argv[1:]
    for i, arg in enumerate(args):
        if arg == BATCH_ROOT_FLAG and i + 1 < len(args):
            named.append(args[i + 1])
        elif arg.startswith(BATCH_ROOT_FLAG + "="):
            named.append(arg[len(BATCH_ROOT_FLAG) + 1:])
    roots = []
    for p in named:
        if p.strip():
            real = os.path.realpath(os.path.expanduser(p.strip()))
            if real not in roots:
                roots.append(real)
    return roots


# ------------------------------------------------------------- chosen files
def note_chosen_files() -> None:
    """Remember the files chosen in the Model page's uploaders, across pages.

    Called at the top of app.py on every run: while the uploaders' values are in the
    session (the Model page drew them last), they are copied; once another page is
    shown the copy stays, so every page can say an upload is waiting, and the Model
    page can load it (:func:`chosen_files`). Emptying an uploader forgets its file.
    """
    ss = st.session_state
    chosen = dict(ss.get(CHOSEN) or {})
    for key, slot in ((MODEL_FILE, "model"), (DATA_FILE, "data"), (TARGET_COL, "target")):
        if key in ss:
            chosen[slot] = ss[key]  # an UploadedFile (None once removed), or the target column
        elif slot != "target" and _is_loaded(slot, chosen.get(slot)):
            chosen[slot] = None  # loaded already: the upload holds its bytes, no need for a second copy
    ss[CHOSEN] = chosen


def _is_loaded(slot: str, f) -> bool:
    """Whether the chosen file ``f`` is the loaded upload's model or data file."""
    up = st.session_state.get(UPLOAD)
    return (f is not None and up is not None and up.get(f"{slot}_name") == f.name
            and len(up.get(f"{slot}_bytes") or b"") == f.size)


def chosen_target() -> str | None:
    """The target column picked with the chosen data file (kept across pages like the files)."""
    return (st.session_state.get(CHOSEN) or {}).get("target")


def chosen_columns() -> list[str]:
    """Columns of the chosen data file (the uploader's, or the one kept across pages)."""
    f = chosen_files()["data"]
    if f is None:
        return []
    return _peek_columns(f"{f.file_id}:{f.size}", f.getvalue(), f.name)


@st.cache_data(max_entries=16, show_spinner=False)
def _peek_columns(file_key: str, _data: bytes, name: str) -> list[str]:
    from explainers.io import peek_columns

    return peek_columns(_data, filename=name)


def chosen_files() -> dict:
    """{"model": UploadedFile or None, "data": UploadedFile or None}: the uploaders' files, or
    the ones chosen before the Model page was left."""
    ss = st.session_state
    chosen = dict(ss.get(CHOSEN) or {})
    for key, slot in ((MODEL_FILE, "model"), (DATA_FILE, "data")):
        if ss.get(key) is not None:
            chosen[slot] = ss[key]
    return {"model": chosen.get("model"), "data": chosen.get("data")}


def waiting_upload() -> dict | None:
    """What waits to be loaded: {"names": the chosen files that are not the loaded upload,
    "need": the slots ("model", "data") with no file chosen}, or None when nothing waits."""
    names, need = [], []
    for slot, f in chosen_files().items():
        if f is None:
            need.append(slot)
        elif not _is_loaded(slot, f):
            names.append(f.name)
    return {"names": names, "need": need} if names else None


def on_load_chosen() -> None:
    """Callback of the Model page's Load button: load the chosen files, also those chosen
    before the user left the page (whose uploaders Streamlit has emptied since)."""
    from .context import on_load_upload

    ss = st.session_state
    if ss.get(MODEL_FILE) is not None and ss.get(DATA_FILE) is not None:
        on_load_upload()  # both uploaders hold a file: the usual way
        return
    files = chosen_files()
    on_load_upload(files["model"], files["data"])  # or says which file is missing


# ------------------------------------------------------------ page widgets
#: widget keys of the pages, kept when the user goes to another page and back
PAGE_KEY_PREFIXES = ("pdp_", "shap_", "imp_", "whatif_", "rep_", "ia_", "quality_")
_NOT_KEPT = {"rep_download", "quality_open", "quality_confusion", "imp_fewer", "imp_go", "shap_fewer", "ia_fewer", "ia_go"}  # buttons and chart selections cannot be given a value
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


# --------------------------------------------------------------------- URL
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
    from .context import known_model  # a demo or a served model
    if known_model(model):
        st.session_state[ACTIVE] = model
    value = qp.get("row")
    if value is not None and value.isdigit():
        st.session_state[URL_KEYS["row"]] = int(value)
    for param in ("class", "feature", "feature2"):
        if qp.get(param):
            st.session_state[URL_KEYS[param]] = qp.get(param)


def share_in_url(**params) -> None:
    """Keep the page's main selections in the URL, so a view can be shared and reopened."""
    for name, value in params.items():
        if value is None:
            st.query_params.pop(name, None)
        else:
            st.query_params[name] = str(value)


# -------------------------------------------------------------- class pick
def output_choices(ctx: ModelContext) -> list[str] | None:
    """What the sidebar's picker offers: the classes of a classifier, the targets of a
    multi-output regressor (each explained on its own), None for one output."""
    if ctx.classes is not None:
        return ctx.classes
    adapter = ctx.adapter
    if getattr(adapter, "n_targets", 1) > 1:
        return [str(n) for n in adapter.all_output_names]
    return None


def picker_label(ctx: ModelContext) -> str:
    """"Class" for a classifier, "Output" for a multi-output regressor."""
    return "Class" if ctx.classes is not None else "Output"


def class_index(ctx: ModelContext) -> int:
    """Position of the sidebar's class (or output) among the model's (0 when none is picked).

    The widget holds the label, not its position: when the model changes, a
    label the new model lacks simply falls back to the first one.
    """
    label = st.session_state.get(CLASS_INDEX)
    choices = output_choices(ctx)
    if choices is None or label is None:
        return 0
    return choices.index(str(label)) if str(label) in choices else 0


def pdp_class(ctx: ModelContext) -> int | None:
    """The sidebar's class or output for PDP/ALE figures (None for one output)."""
    return None if output_choices(ctx) is None else class_index(ctx)


def shap_class(res, ctx: ModelContext) -> int | None:
    """The sidebar's class as an output index of a SHAP result (None for one output)."""
    if res.values.ndim == 2:
        return None
    k = res.values.shape[2]
    ci = class_index(ctx)
    return ci if ci < k else k - 1
