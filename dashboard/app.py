"""Glassbox dashboard entry point: ``streamlit run dashboard/app.py``.

Widgets every page shares (the model and the class) live here in the sidebar,
so they keep their values across pages. Start with ``-- --trust-pickles`` (or
GLASSBOX_TRUST_PICKLES=1) to allow pickle/joblib uploads, and with
``-- --batch-root DIR`` (or GLASSBOX_BATCH_ROOTS) to let the SHAP page open batch
runs from DIR. The server settings are checked first (see dashboard/server.py).
"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `streamlit run` puts only dashboard/ on the path
    sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402

from dashboard import server  # noqa: E402

# first of all: the project's server settings, wherever Streamlit was started from
server.apply_runtime_settings()
# the icon ships with the app: a Material icon here would be fetched from fonts.gstatic.com
# by every page (offline: a failed request on each load)
st.set_page_config(page_title="Glassbox — explain your model", page_icon=str(Path(__file__).parent / "assets" / "glassbox.png"),
                   layout="wide")
if problem := server.exposure_problem():
    st.error(problem, icon=":material/block:")
    st.stop()
if problem := server.access_problem():  # a show() server: only its link (with the token) opens it
    st.error(problem, icon=":material/lock:")
    st.stop()

from dashboard import messages, state, widgets  # noqa: E402
from dashboard.safe_text import md  # noqa: E402
from dashboard.state import uploads  # noqa: E402

PAGES_DIR = Path(__file__).resolve().parent / "views"
# (file, title, icon, url path). The page files live in views/, not pages/:
# Streamlit still treats a folder named pages/ beside the entry script as an
# old-style (v1) multipage app on a server's first run, which runs a deep link
# without this entry script or shows "Page not found".
SECTIONS = {
    "Model": [("model.py", "Model", ":material/deployed_code:", "overview"),
              ("quality.py", "Quality", ":material/fact_check:", "quality"),
              ("segments.py", "Segments", ":material/filter_alt:", "segments")],
    "Effects": [("pdp.py", "PDP / ICE / ALE", ":material/show_chart:", "effects"),
                ("interactions.py", "Interactions", ":material/hub:", "interactions")],
    "Attribution": [("shap.py", "SHAP", ":material/waterfall_chart:", "attribution"),
                    ("whatif.py", "What if?", ":material/tune:", "what-if")],
    "Importance": [("importance.py", "Importance", ":material/leaderboard:", "importance-comparison"),
                   ("compare.py", "Compare models", ":material/compare_arrows:", "compare")],
    "Share": [("report.py", "Report", ":material/description:", "report")],
}
nav = {}
for section, pages in SECTIONS.items():
    entries = [
        st.Page(PAGES_DIR / fname, title=title, icon=icon, url_path=url, default=(fname == "model.py"))
        for fname, title, icon, url in pages
        if (PAGES_DIR / fname).is_file()
    ]
    if entries:
        nav[section] = entries
page = st.navigation(nav)

# one state model (dashboard/state/session.py): control values live in the session, not in the
# widgets, and the URL mirrors the sidebar's and this page's controls
state.init_session(state.default_model())
uploads.note_chosen_files()  # before the page: the uploaders' files survive a page switch
uploads.open_shared_link()  # a ?ws= link: the workspace's model and data, once per session
state.read_url(page.url_path, state.is_known_model)
state.begin_run(page.url_path)
server.keep_token_in_url()
if st.session_state.get("_segments_url_read") is None:  # a shared link's segments, once per session
    st.session_state["_segments_url_read"] = state.segments_from_url() or ""

with st.sidebar:
    st.markdown("### :material/search_insights: Glassbox")
    try:
        options = state.model_options()
    except Exception as exc:  # the demo build failed: say so, keep the page alive
        st.error(md(messages.for_page(exc)), icon=":material/error:")
        st.stop()
    keys = list(options)
    st.selectbox(
        "Model", keys, format_func=lambda k: options[k],
        help="A demo model, or the one you uploaded on the Model page.",
        **state.bind(state.ACTIVE, state.default_model(), options=keys),
    )
    try:
        with st.spinner("Reading the model and its data…", show_time=True):  # shown only while a large file reads
            ctx = state.current()
    except Exception as exc:
        st.error(md(messages.for_page(exc)), icon=":material/error:")
        st.stop()
    choices = state.output_choices(ctx)
    if ctx.classes is not None and choices is not None:
        st.selectbox(
            "Class", ctx.classes, help="The class whose probability the pages explain.",
            **state.bind(state.CLASS_INDEX, ctx.classes[-1] if ctx.task == "binary" else ctx.classes[0],
                         options=ctx.classes),
        )
    elif choices is not None:  # a multi-output regressor: its targets, one at a time
        st.selectbox(
            "Output", choices, help="The model predicts several targets; the pages explain this one.",
            **state.bind(state.CLASS_INDEX, choices[0], options=choices),
        )
    state.follow_model(ctx)  # another model: its target transform starts from that model's default
    if (scales := state.scale_choices(ctx)) is not None:  # probabilities, or a transformed target
        st.radio(
            "Scale", scales, horizontal=True,
            help=("What the pages explain: the probability of the class, or its log-odds log(p / (1 - p)) "
                  "(for boosting and linear models the margin their trees or coefficients add up to)."
                  if ctx.task != "regression" else
                  f"The model predicts {state.transformed_name(ctx)} (said on the Model page): the pages show "
                  f"{state.target_name(ctx)} in its original units, or the model's own scale."),
            **state.bind(state.SCALE, scales[0], options=scales),
        )
    if (held := state.target_output_choices(ctx)) is not None:  # which output the one target column is
        st.selectbox(
            f"Target column {md(str(ctx.card.get('target') or ctx.y.name))!s} holds", held,
            help="The true values of which output? Quality, errors and permutation importance score that "
                 "output against the column; with 'none of them' nothing is scored.",
            **state.bind(state.TARGET_OUTPUT, state.default_target_output(ctx), options=held),
        )
    widgets.segment_picker(ctx)  # a segment to compare with the rest, where the user defined some
    state.segments_to_url()  # every run: a page switch from the sidebar starts from a bare URL
    st.caption(f"{md(ctx.card.get('model_type', ''))} · {ctx.task} · {len(ctx.X):,} rows")
    explained = getattr(ctx.adapter, "explained", None) or state.margin_caption(ctx)
    if explained:
        st.caption(f"Explained: {md(explained)}")
    uploads.sync_shared_link(ctx.name == state.UPLOADED)  # ?ws= while a shared upload is shown
    widgets.share_box(ctx)  # what the page's link opens for others, and deleting a shared upload
    if state.pickles_trusted():
        st.warning("Pickle/joblib uploads are **allowed** on this server (started with "
                   "--trust-pickles): only upload files you trust.", icon=":material/warning:")


def _model_line(ctx) -> str:
    """'Model: <title> (demo)': which model every page shows, at the top of every page."""
    from demo_models import build as demo_build

    if ctx.name == state.UPLOADED:
        up = st.session_state.get(state.UPLOAD) or {}
        shared = ", shared: this page's link opens it for anyone you send it to" if up.get("ws") else ""
        return (f"Model: **{md(up.get('model_name', ctx.title))}** with data **{md(up.get('data_name', ''))}** "
                f"(uploaded{shared})")
    kind = "demo" if ctx.name in demo_build.DEMO_NAMES else "served"
    return f"Model: **{md(ctx.title)}** ({kind})"


def _waiting_line(waiting: dict, on_model_page: bool) -> str:
    """What an upload chosen but not loaded needs, naming the button (and the page) to press."""
    where = "below" if on_model_page else "on the Model page"
    names = waiting["names"]
    files = " and ".join(f"**{md(n)}**" for n in names)
    text = (f"An upload is waiting: {files} {'are' if len(names) > 1 else 'is'} chosen but not loaded, "
            "so the pages still show the model above. ")
    if waiting["need"]:
        text += f"Choose {'a model file' if waiting['need'] == ['model'] else 'a data file'} too, then "
        return text + f"press **Load model and data** {where}."
    return text + f"Press **Load model and data** {where}."


# the top of every page: which model it shows, and an upload still waiting to be loaded. One
# container whatever it holds, so the page's own elements keep their places (a notice that comes
# and goes would shift them all, and the browser would redraw the uploaders mid-upload)
with st.container():
    if problem := uploads.take_link_problem():  # a ?ws= link that opens nothing: one message, no listing
        st.error(md(problem), icon=":material/link_off:")
    if notice := uploads.take_share_notice():  # an upload not shared (and why), or a shared one deleted
        st.info(md(notice), icon=":material/share:")
    if unread := state.take_url_problem():  # a hand-edited link's value that no control takes
        st.info(md(unread), icon=":material/link:")
    st.caption(_model_line(ctx))
    if (waiting := uploads.waiting_upload()) is not None:
        st.warning(_waiting_line(waiting, on_model_page=page.title == "Model"), icon=":material/upload_file:")

page.run()
# after the page is drawn, so the first page of a fresh server does not share the CPU with it
state.warm_kernels_in_background()
