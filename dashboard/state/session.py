"""The dashboard's one state model: what each control shows, kept in the session and the URL.

Streamlit forgets a widget's value in every run that does not draw the widget (another
page is shown, or ``st.switch_page`` reran without the browser's widget values), and a
browser keeps what a box showed by itself. So no widget owns a value here:

- every control's value lives under a *store key* (``"v::" + the widget key``) that no
  widget owns, so it survives any page switch, rerun or navigation action;
- :func:`bind` is called right before a widget is drawn: it checks the stored value
  against the widget's options (a value another model cannot take falls back to the
  default), writes it into the widget's key (so the box shows exactly the value the page
  computes with) and returns ``key=`` and ``on_change=`` for the widget; ``on_change``
  copies the user's pick back into the store;
- :func:`set_value` (callbacks, navigation actions) writes the store and the widget key,
  so a button that changes a control changes what the box shows too;
- every control named in :data:`CONTROLS` has a URL query parameter: :func:`bind` puts
  its value there when it differs from the default (and takes it out when not), the
  sidebar's controls on every page, a page's own controls on that page only
  (:func:`begin_run` drops the other pages' parameters); :func:`read_url` fills the
  store from the URL on a session's first run, so a reload or a link a colleague opens
  shows the same view.

No widget is created here: pages draw them, with ``**state.bind(...)``.
"""
from __future__ import annotations

import re

from dataclasses import dataclass
from typing import Any, Callable

import streamlit as st

# ----------------------------------------------------------- session-state keys
ACTIVE = "active_model"  # demo name, served key, or UPLOADED (a bound control: read it with value(ACTIVE))
UPLOAD = "upload"  # dict: model/data bytes, names, keys, target, workspace token
CLASS_INDEX = "class_label"  # the class (or a multi-output regressor's output) picked in the sidebar, by its label
CLASS_NAMES = "class_names"  # a model file that names no classes: the user's names, comma-separated
TARGET_TRANSFORM = "target_transform"  # a regressor fitted on log(target) (or log1p, sqrt): "none" or the transform
SCALE = "output_scale"  # a classifier's explanations: "probability" or "log-odds" (the sidebar's Scale)
TARGET_OUTPUT = "target_output"  # a multi-output regressor: the output whose true values the target column holds
LAST_ERROR = "model_page_error"
UPLOADED = "__uploaded__"
DEFAULT_DEMO = "diabetes_forest"

# widget keys of the Model page's upload form and demo picker
MODEL_FILE = "upload_model_file"
DATA_FILE = "upload_data_file"
TARGET_COL = "upload_target"
DEMO_PICK = "demo_pick"
NO_TARGET = "(no target column)"

_STORE = "v::"
_DEFAULT = "d::"
_URL_READ = "url_read"
_PAGE = "current_page"
_URL_IGNORED = "url_ignored_params"
#: features whose counterfactual range a link carries (the first ones of the data)
RANGE_CONTROLS = 200


# -------------------------------------------------------------- the controls
def _split(text: str, n: int | None = None) -> list[str] | None:
    parts = text.split("~") if text else []
    return parts if n is None or len(parts) == n else None


def _to_int(text: str):
    """An int written in ASCII digits, at most 18 of them (``str.isdigit`` takes "²", which
    ``int`` refuses, and ``int`` refuses more than 4,300 digits: neither may break a page)."""
    return int(text) if _INT.fullmatch(text) else None


_INT = re.compile(r"-?[0-9]{1,18}")


def _to_float(text: str):
    try:
        v = float(text)
    except ValueError:
        return None
    return v if v == v and abs(v) != float("inf") else None


def _to_bool(text: str):
    return {"1": True, "0": False}.get(text)


def _int_pair(text: str):
    parts = _split(text, 2)
    vals = None if parts is None else [_to_int(p) for p in parts]
    return None if vals is None or None in vals else tuple(vals)


def _range(text: str):
    """A feature's allowed values: two numbers (lo, hi) of a numeric feature, else categories."""
    parts = _split(text)
    nums = [_to_float(p) for p in parts] if len(parts) == 2 else [None]
    return tuple(nums) if None not in nums else parts


_PARSE: dict[str, Callable[[str], Any]] = {
    "str": lambda t: t, "int": _to_int, "float": _to_float, "bool": _to_bool, "list": lambda t: _split(t),
    "pair": _int_pair, "cell": _int_pair, "range": _range,
}


def _format(kind: str, value) -> str:
    if kind == "bool":
        return "1" if value else "0"
    if kind in ("list", "pair", "cell", "range"):
        return "~".join(str(v) for v in value)
    if kind == "float":
        return f"{float(value):g}"
    return str(value)


@dataclass(frozen=True)
class Control:
    """A control whose value a link carries.

    Attributes
    ----------
    key : str
        The widget key (its value lives under ``"v::" + key``).
    param : str
        The URL query parameter.
    page : str or None
        The ``url_path`` of the page whose links carry it; None: the sidebar's, on every page.
    kind : str
        How the value is written in the URL: "str", "int", "float", "bool", "list" (of str,
        joined by ``~``), "pair" (two ints, a range) or "cell" (two ints, a matrix cell).
    always : bool
        In the URL even at its default (the model: a link must not depend on which model a
        server opens first).
    """

    key: str
    param: str
    page: str | None
    kind: str = "str"
    always: bool = False

    def parse(self, text: str):
        """The value of a URL's text, or None when it cannot be read (then the default stands)."""
        return _PARSE[self.kind](str(text))

    def format(self, value) -> str:
        return _format(self.kind, value)


def _controls(page: str | None, kind: str, **params_to_keys: str) -> list[Control]:
    return [Control(key, param, page, kind) for param, key in params_to_keys.items()]


#: every control a link carries, by widget key. Page names are the pages' url paths (app.py).
CONTROLS: dict[str, Control] = {c.key: c for c in [
    Control(ACTIVE, "model", None, always=True),
    *_controls(None, "str", **{"class": CLASS_INDEX, "target_of": TARGET_OUTPUT, "scale": SCALE,
                                    "transform": TARGET_TRANSFORM, "classes": CLASS_NAMES}),
    # PDP / ICE / ALE
    *_controls("effects", "str", feature="pdp_f1", feature2="pdp_f2", colour="pdp_colour", style="pdp_style",
               empty="pdp_empty"),
    *_controls("effects", "int", grid="pdp_grid", grid2="pdp_grid2", rows="pdp_rows", ice_lines="pdp_nice"),
    *_controls("effects", "pair", pct="pdp_pct"),
    *_controls("effects", "bool", ice="pdp_ice", centered="pdp_centered", points="pdp_points", ale_all="pdp_ale_all",
               every="pdp_every"),
    # SHAP
    *_controls("attribution", "str", pick="shap_pick", method="shap_method", view="shap_view",
               source="shap_source", dep="shap_dep", dep_colour="shap_dep_col"),
    *_controls("attribution", "int", row="shap_row", sorted_row="shap_row_sorted", sample="shap_n"),
    *_controls("attribution", "list", mask="shap_mask"),
    *_controls("attribution", "bool", empty_missing="shap_empty_missing", every="shap_every",
               **{"global": "shap_global"}),
    # What if?
    *_controls("what-if", "int", row="whatif_row"),
    *_controls("what-if", "list", mask="whatif_mask"),
    *_controls("what-if", "bool", empty_missing="whatif_empty_missing", cf="cf_run"),
    *_controls("what-if", "str", cf_target="cf_target"),
    *_controls("what-if", "list", cf_fixed="cf_fixed", cf_limit="cf_limit"),
    *_controls("what-if", "int", cf_n="cf_n", cf_seconds="cf_seconds"),
    # the counterfactuals' range of the feature at position i (a slider's two numbers, or categories)
    *[Control(f"cf_range_{i}", f"cf_range_{i}", "what-if", "range") for i in range(RANGE_CONTROLS)],
    # Importance
    *_controls("importance-comparison", "int", repeats="imp_repeats", rows="imp_rows"),
    *_controls("importance-comparison", "bool", shap="imp_shap"),
    *_controls("importance-comparison", "str", sort="imp_sort", agreement="imp_agree", scoring="imp_scoring"),
    # Interactions
    *_controls("interactions", "str", measure="ia_measure", f1="ia_f1", f2="ia_f2"),
    *_controls("interactions", "int", rows="ia_rows", features="ia_k"),
    *_controls("interactions", "bool", ale_all="ia_ale_all", every="ia_every"),
    # Quality
    *_controls(None, "float", threshold="quality_threshold"),  # What-if's verdict follows it too
    *_controls("quality", "cell", cell="quality_cell"),
    *_controls("quality", "int", band="quality_band", open_row="quality_open_row"),
    *_controls("quality", "str", residuals_by="quality_feature"),
    # Segments (the proposals; the segments themselves are ?seg= / ?segon=, see .segments)
    *_controls("segments", "int", depth="seg_prop_depth", min_rows="seg_prop_min"),
    *_controls("segments", "bool", every="seg_prop_all"),
    # Compare
    *_controls("compare", "list", models="compare_with"),
    *_controls("compare", "str", feature="compare_feature"),
    # Report
    *_controls("report", "bool", summary="rep_summary", pdp="rep_pdp", shap="rep_shap", importance="rep_imp",
               interactions="rep_inter", quality="rep_quality", preview="rep_show"),
]}

#: URL parameters kept on every page besides the sidebar's controls (segments, a shared upload,
#: a show() server's access token)
GLOBAL_PARAMS = {"seg", "segon", "ws", "token"}


# ---------------------------------------------------------------- the store
def value(key: str, default=None):
    """The value a control holds (what its widget shows and its page computes with)."""
    return st.session_state.get(_STORE + key, default)


def set_value(key: str, v) -> None:
    """Set a control (from a callback, a navigation action or a URL): the store and the widget's
    key both, so the box shows the new value on the next draw."""
    st.session_state[_STORE + key] = v
    st.session_state[key] = v
    _to_url(key, v, st.session_state.get(_DEFAULT + key))  # a link made now holds it too


def keep_in_url(key: str, default=None) -> None:
    """Write a control no widget draws (a button's flag) into this page's link, as :func:`bind`
    does for a widget's; call it on every run of the page that owns it."""
    _to_url(key, value(key, default), default)


def forget(key: str) -> None:
    """Drop a control's value: its widget starts again from its default."""
    for k in (_STORE + key, key, _DEFAULT + key):
        st.session_state.pop(k, None)


def _copy_back(key: str) -> None:
    st.session_state[_STORE + key] = st.session_state.get(key)


def _valid(v, options, valid) -> bool:
    if valid is not None:
        try:
            return bool(valid(v))
        except (TypeError, ValueError):
            return False
    if options is None:
        return True
    if isinstance(v, list):
        return True  # a multiselect: filtered below
    try:
        return v in options
    except TypeError:
        return False


def bind(key: str, default=None, *, options=None, valid: Callable[[Any], bool] | None = None,
         on_change: Callable[[], None] | None = None) -> dict:
    """Keyword arguments for the widget ``key``: its value from the store, checked first.

    Parameters
    ----------
    key : str
        The widget key.
    default : object
        What the widget shows when nothing valid is stored (the widget itself gets no
        ``value=`` / ``index=``: its value always comes from here).
    options : sequence, optional
        The widget's options: a stored value not among them (another model's feature)
        falls back to ``default``; a list value (multiselect) keeps only its valid items.
    valid : callable, optional
        A check of the value instead of ``options`` (number bounds).
    on_change : callable, optional
        Called after the user's pick is stored.

    Returns
    -------
    dict
        ``key`` and ``on_change`` for the widget call.
    """
    ss = st.session_state
    v = ss.get(_STORE + key, default)
    if key in ss and ss[key] != v:  # set on the widget's key by code outside a callback (a test, a page)
        v = ss[key]
    if isinstance(v, list) and options is not None:
        v = [x for x in v if x in options]
    elif not _valid(v, options, valid):
        v = default
    ss[_STORE + key] = v
    ss[_DEFAULT + key] = default
    ss[key] = v  # before the widget is drawn: what the box shows is what the page computes with
    _to_url(key, v, default)

    def changed():
        _copy_back(key)
        _to_url(key, st.session_state[_STORE + key], st.session_state.get(_DEFAULT + key))
        if on_change is not None:
            on_change()

    return {"key": key, "on_change": changed}


# --------------------------------------------------------------------- URL
def _to_url(key: str, v, default) -> None:
    control = CONTROLS.get(key)
    if control is None or (control.page is not None and control.page != st.session_state.get(_PAGE)):
        return
    if v is None or (v == default and not control.always) or (isinstance(v, list) and not v):
        if control.param in st.query_params:
            del st.query_params[control.param]
        return
    text = control.format(v)
    if st.query_params.get(control.param) != text:
        st.query_params[control.param] = text


def begin_run(page: str) -> None:
    """Every run, before anything is drawn: the page shown, and a URL that holds only what
    belongs to it (the sidebar's controls, the segments, the shared upload, this page's controls)."""
    st.session_state[_PAGE] = page
    own = {c.param for c in CONTROLS.values() if c.page in (None, page)} | GLOBAL_PARAMS
    for param in [p for p in st.query_params.keys() if p not in own]:
        del st.query_params[param]


def read_url(page: str, is_known_model: Callable[[str], bool]) -> None:
    """On a session's first run: the URL's values into the store.

    A link made here holds the sidebar's controls and those of its page (``page``), which
    take their parameters. A parameter that page does not own (a hand-made link) goes to
    every page's control of that name. A value that cannot be read is ignored (the default
    stands); values are checked against the widget's options when it is drawn (:func:`bind`),
    so a stale link never breaks a page.
    """
    ss = st.session_state
    if ss.get(_URL_READ):
        return
    ss[_URL_READ] = True
    qp = st.query_params
    owned = {c.param for c in CONTROLS.values() if c.page in (None, page)}
    for control in CONTROLS.values():
        text = qp.get(control.param)
        if text is None or (control.page not in (None, page) and control.param in owned):
            continue
        if control.key == ACTIVE and not is_known_model(text):
            continue
        try:
            parsed = control.parse(text)
        except (ValueError, TypeError, OverflowError):  # pragma: no cover - every parser returns None instead
            parsed = None
        if parsed is not None:
            ss[_STORE + control.key] = parsed
        else:
            ss.setdefault(_URL_IGNORED, []).append(control.param)


def take_url_problem() -> str | None:
    """The link parameters :func:`read_url` could not read (once), in a sentence."""
    params = st.session_state.pop(_URL_IGNORED, None)
    if not params:
        return None
    names = ", ".join(f"“{p}”" for p in dict.fromkeys(params))
    return (f"This link's {names} could not be read (not a value this page takes), so the page shows "
            "its default there instead.")


def init_session(default_model: str) -> None:
    """Set the session's keys once, at the top of app.py."""
    ss = st.session_state
    ss.setdefault(_STORE + ACTIVE, default_model)
    ss.setdefault(UPLOAD, None)
    ss.setdefault(LAST_ERROR, None)


def active_model() -> str:
    """The key of the model every page shows (a demo, a served model, or UPLOADED)."""
    return value(ACTIVE, DEFAULT_DEMO)


def set_active_model(key: str) -> None:
    set_value(ACTIVE, key)
