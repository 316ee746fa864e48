"""Test-only entry script: the real dashboard/app.py, with the Interactions page added to its
navigation when app.py does not register it yet (at url path "interactions").

Once app.py registers the page, this runs app.py unchanged. Page tests open it with
``AppTest.from_file`` and switch to :data:`PAGE_FROM_HERE`.
"""
import runpy
from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "dashboard" / "app.py"
PAGE = ROOT / "dashboard" / "views" / "interactions.py"
#: the page file relative to this script (AppTest.switch_page resolves pages from the main script)
PAGE_FROM_HERE = "../../dashboard/views/interactions.py"

_navigation = st.navigation


def _with_interactions(pages, *args, **kwargs):
    groups = pages.values() if isinstance(pages, dict) else [pages]
    registered = [p for group in groups for p in group]
    if not any(Path(str(getattr(p, "_page", ""))).resolve() == PAGE or getattr(p, "url_path", None) == "interactions"
               for p in registered):
        pages = dict(pages) if isinstance(pages, dict) else {"": list(pages)}
        pages.setdefault("Effects", [])
        pages["Effects"] = [*pages["Effects"], st.Page(PAGE, title="Interactions", icon=":material/hub:",
                                                       url_path="interactions")]
    return _navigation(pages, *args, **kwargs)


st.navigation = _with_interactions
try:
    runpy.run_path(str(APP), run_name="__main__")
finally:
    st.navigation = _navigation
