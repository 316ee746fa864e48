"""The Model page's uploads: the files chosen in its uploaders (kept across pages, since
Streamlit empties an uploader on a page switch), loading them, and shared uploads: each loaded
pair kept in the workspace store (:mod:`dashboard.workspace`) under the token a ``?ws=`` link
carries, opened again from such a link, and deleted by its uploader."""
from __future__ import annotations

import streamlit as st

import explainers

from .context import error_message, load_upload
from .session import (DATA_FILE, DEMO_PICK, LAST_ERROR, MODEL_FILE, NO_TARGET, TARGET_COL, UPLOAD,
                      UPLOADED, set_active_model)

#: a sentence about the upload just loaded (not shared, and why), shown once on the Model page
SHARE_NOTICE = "upload_share_notice"

#: the files chosen in those uploaders, kept across pages (Streamlit forgets a widget's
#: value once a run does not draw it, so the Model page's uploaders empty on a page switch)
CHOSEN = "chosen_upload_files"


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
    ss = st.session_state
    if ss.get(MODEL_FILE) is not None and ss.get(DATA_FILE) is not None:
        on_load_upload()  # both uploaders hold a file: the usual way
        return
    files = chosen_files()
    on_load_upload(files["model"], files["data"])  # or says which file is missing


# ------------------------------------------------------------ upload actions
def on_pick_demo() -> None:
    """Callback of the Model page's demo picker (callbacks may set widget state)."""
    if st.session_state.get(DEMO_PICK) is not None:
        set_active_model(st.session_state[DEMO_PICK])
    st.session_state[LAST_ERROR] = None


def on_load_upload(mf=None, df=None) -> None:
    """Load a model file and a data file (by default the uploaders'), or keep what was chosen before;
    a loaded pair is kept in the workspace store too, so the page's link opens it for others."""
    mf = st.session_state.get(MODEL_FILE) if mf is None else mf
    df = st.session_state.get(DATA_FILE) if df is None else df
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
    up = {"model_bytes": model_bytes, "model_name": mf.name, "data_bytes": data_bytes, "data_name": df.name,
          "target": target, **keys}
    st.session_state[SHARE_NOTICE] = share_upload(up)  # checked and loaded first: only a valid pair is kept
    st.session_state[UPLOAD] = up
    set_active_model(UPLOADED)
    st.session_state[LAST_ERROR] = None


# ------------------------------------------------------------ shared uploads
#: the workspace tokens this session created, with their owner secrets (only the uploader may delete)
OWNED = "owned_workspaces"
#: the URL parameter of the uploader's link to manage a shared upload (its owner secret)
OWNER_PARAM = "owner"
#: what a shared link this session was opened with could not do (shown once at the top of the page)
LINK_PROBLEM = "shared_link_problem"
_LINK_READ = "shared_link_read"


@st.cache_resource(show_spinner=False)
def workspace_store():
    """The server's workspace store (one per process), or None when the operator turned sharing off.

    A setting the store cannot take raises WorkspaceError, which the page shows as it is.
    """
    from dashboard import workspace

    return workspace.store_from_env()


def share_upload(up: dict) -> str | None:
    """Keep a just-loaded upload in the workspace store, so a link opens it for anyone who has it.

    Returns the sentence to show when it cannot be shared (sharing off, too large), else None;
    on success ``up["ws"]`` holds the link's token and this session keeps the owner secret.
    """
    from explainers import ExplainerError

    try:
        store = workspace_store()
        if store is None:
            return ("Sharing is off on this server: this upload lives in your browser session only, and a link to "
                    "it opens nothing for others.")
        created = store.create(up["model_bytes"], up["model_name"], up["data_bytes"], up["data_name"], up["target"])
    except ExplainerError as exc:
        return f"This upload is not shared (a link to it opens nothing for others): {exc}"
    up["ws"] = created.token
    st.session_state.setdefault(OWNED, {})[created.token] = created.owner
    return None


def open_shared_link() -> None:
    """A ``?ws=`` link: open its workspace as this session's upload, once per session (and again
    when the link names another workspace). A token that opens nothing, for whatever reason
    (mistyped, deleted, expired), gets one message, the same for all, and no listing."""
    from dashboard import workspace
    from explainers import ExplainerError

    ss = st.session_state
    token = st.query_params.get(workspace.PARAM)
    owner = st.query_params.get(OWNER_PARAM)
    if owner is not None:  # the uploader's link to manage the upload: never left in the address bar
        del st.query_params[OWNER_PARAM]
    if not token or ss.get(_LINK_READ) == token:
        return
    ss[_LINK_READ] = token
    up = ss.get(UPLOAD)
    if up is not None and up.get("ws") == token:
        return
    try:
        store = workspace_store()
    except ExplainerError as exc:
        ss[LINK_PROBLEM] = str(exc)
        return
    if store is None:
        ss[LINK_PROBLEM] = ("This link names a shared upload, but sharing is off on this server: ask whoever sent it "
                            "for the model and data files, and load them on the Model page.")
        del st.query_params[workspace.PARAM]
        return
    found = store.open(token)
    if found is None:
        ss[LINK_PROBLEM] = workspace.not_found_message(store)
        del st.query_params[workspace.PARAM]
        return
    from explainers import fingerprint

    keys = {"model_key": fingerprint(found.model_bytes), "data_key": fingerprint(found.data_bytes)}
    try:  # the stored files go through the same checks as a new upload (allow-list, validation, limits)
        load_upload(found.model_bytes, found.model_name, found.data_bytes, found.data_name, found.target, **keys)
    except Exception as exc:  # noqa: BLE001 - said on the page, never a traceback
        ss[LINK_PROBLEM] = f"The shared upload cannot be opened: {error_message(exc)}"
        return
    ss[UPLOAD] = {"model_bytes": found.model_bytes, "model_name": found.model_name, "data_bytes": found.data_bytes,
                  "data_name": found.data_name, "target": found.target, "ws": token, **keys}
    if owner is not None and store.is_owner(token, owner):
        ss.setdefault(OWNED, {})[token] = owner
    set_active_model(UPLOADED)
    ss[LAST_ERROR] = None


def take_share_notice() -> str | None:
    """What the last load or delete has to say about sharing (once): not shared and why, or deleted."""
    return st.session_state.pop(SHARE_NOTICE, None)


def take_link_problem() -> str | None:
    """What the shared link could not open (once)."""
    return st.session_state.pop(LINK_PROBLEM, None)


def sync_shared_link(active_is_upload: bool) -> None:
    """Keep ``?ws=`` in the URL exactly while a shared upload is shown."""
    from dashboard import workspace

    up = st.session_state.get(UPLOAD)
    token = up.get("ws") if active_is_upload and up else None
    if token:
        if st.query_params.get(workspace.PARAM) != token:
            st.query_params[workspace.PARAM] = token
    elif workspace.PARAM in st.query_params:
        del st.query_params[workspace.PARAM]


def owns_shared_upload() -> bool:
    """Whether this session uploaded the shared upload shown now (and so may delete it)."""
    up = st.session_state.get(UPLOAD) or {}
    return bool(up.get("ws")) and up["ws"] in (st.session_state.get(OWNED) or {})


def manage_link() -> str | None:
    """The uploader's link to the shared upload shown now, with the owner secret that lets whoever
    opens it delete the upload (None when this session does not own it)."""
    from dashboard import workspace

    up = st.session_state.get(UPLOAD) or {}
    owner = (st.session_state.get(OWNED) or {}).get(up.get("ws"))
    if not owner:
        return None
    base = (st.context.url or "").split("?")[0]
    return f"{base}?model={UPLOADED}&{workspace.PARAM}={up['ws']}&{OWNER_PARAM}={owner}"


def on_delete_shared() -> None:
    """Callback of "Delete the shared upload": its files leave the server; the link opens nothing."""
    from .context import default_model

    ss = st.session_state
    up = ss.get(UPLOAD) or {}
    token = up.get("ws")
    owner = (ss.get(OWNED) or {}).pop(token, None)
    store = workspace_store()
    if token and owner and store is not None:
        store.delete(token, owner)
    ss[UPLOAD] = None
    ss[_LINK_READ] = None
    set_active_model(default_model())
    ss[SHARE_NOTICE] = "The shared upload is deleted from the server: its link opens nothing now."
