"""The dashboard's server settings, wherever Streamlit was started from.

Streamlit reads ``.streamlit/config.toml`` from the working directory and (1.67)
from beside the entry script; an older Streamlit, a moved script or a lost file
would silently fall back to Streamlit's defaults: every network interface, full
tracebacks on the page, 200 MB uploads. So app.py, before anything else:

- :func:`apply_runtime_settings`: sets the options Streamlit reads while serving
  (error details, upload limit, toolbar, usage statistics) to the project's values
  when nobody (flag, environment variable, config file) set them. Error details and
  the upload limit are read when used; the toolbar and usage-statistics flags reach
  the browser with each run's start message, so from the second run on;
- :func:`exposure_problem`: the bind address cannot change after the start: when
  the server listens on every interface although no one asked for it, every page
  refuses to serve and says how to start it.

``python -m dashboard`` starts the app with all of :data:`START_FLAGS` given
explicitly. Keep these values in step with ``.streamlit/config.toml`` and
``dashboard/.streamlit/config.toml`` (a test compares them).
"""
from __future__ import annotations

import os

#: options Streamlit reads while it serves: re-applied at run time when left at Streamlit's default
RUNTIME_SETTINGS = {
    "client.showErrorDetails": "none",  # no tracebacks or exception messages on the page
    "client.toolbarMode": "viewer",  # shows the running indicator and its Stop button on every page
    "server.maxUploadSize": 100,  # MB per uploaded file
    "browser.gatherUsageStats": False,
}
#: options read once, when the server starts (given as flags by ``python -m dashboard``)
START_SETTINGS = {
    "server.address": "127.0.0.1",
    "server.headless": True,
    "server.enableXsrfProtection": True,
    "server.enableCORS": True,
    "server.runOnSave": False,
}
START_FLAGS = [f"--{k}={str(v).lower() if isinstance(v, bool) else v}"
               for k, v in {**START_SETTINGS, **RUNTIME_SETTINGS}.items()]

WHERE = "the Glassbox dashboard (dashboard/server.py)"
LOOPBACK = ("127.0.0.1", "localhost", "::1")

EXPOSED_MESSAGE = (
    "This dashboard is not serving: Streamlit was started without the dashboard's server "
    "settings, so it listens on every network interface of this machine. Stop it and start it "
    "with `python -m streamlit run dashboard/app.py --server.address 127.0.0.1` (or run that "
    "command from the repository root, or use `python -m dashboard`). To serve other machines on "
    "purpose, name the address with `--server.address`, behind a proxy with authentication."
)


def _default(key: str) -> bool:
    """Whether no flag, environment variable or config file set this option."""
    from streamlit import config
    from streamlit.config_option import ConfigOption

    return config.get_where_defined(key) == ConfigOption.DEFAULT_DEFINITION


def _served() -> bool:
    """Whether a real Streamlit server runs this script (not AppTest's stand-in, not bare ``python``)."""
    from streamlit.runtime import Runtime

    # AppTest installs a unittest.mock stand-in as the Runtime instance
    return Runtime.exists() and type(Runtime.instance()) is Runtime


def apply_runtime_settings() -> list[str]:
    """Set each of :data:`RUNTIME_SETTINGS` nobody set; return the keys that were set now."""
    from streamlit import config

    changed = []
    for key, value in RUNTIME_SETTINGS.items():
        if _default(key) and config.get_option(key) != value:
            config.set_option(key, value, where_defined=WHERE)
            changed.append(key)
    return changed


def exposure_problem() -> str | None:
    """:data:`EXPOSED_MESSAGE` when a real server listens on every interface without being asked to.

    Streamlit binds every interface when ``server.address`` is unset. An address
    given by a flag, an environment variable or any config file (even a public
    one) is the operator's choice and is served.
    """
    from streamlit import config

    if not _served():
        return None
    if not config.get_option("server.address") and _default("server.address"):
        return EXPOSED_MESSAGE
    return None


# ------------------------------------------------------------ access token
#: set by show() for the server it starts: the dashboard opens only from a link carrying it
ACCESS_ENV = "GLASSBOX_ACCESS_TOKEN"
TOKEN_PARAM = "token"
_GRANTED = "_access_granted"
ACCESS_MESSAGE = (
    "This dashboard was started from a notebook with show() and opens only from the link show() "
    "printed (it carries a token). Open that link, or print `dash.url` again in the notebook."
)


def access_token() -> str | None:
    """The token this server requires (None: no token, as for ``glassbox serve``)."""
    token = os.environ.get(ACCESS_ENV, "").strip()
    return token or None


def access_problem() -> str | None:
    """:data:`ACCESS_MESSAGE` when this server requires a token and the session has not shown it.

    A session that opened with the right ``?token=`` keeps access while it lasts; the token
    is compared in constant time. Checked before anything of a model is read.
    """
    import hmac

    import streamlit as st

    token = access_token()
    if token is None or st.session_state.get(_GRANTED):
        return None
    given = st.query_params.get(TOKEN_PARAM) or ""
    if hmac.compare_digest(given.encode("utf-8", "replace"), token.encode("utf-8")):
        st.session_state[_GRANTED] = True
        return None
    return ACCESS_MESSAGE


def keep_token_in_url() -> None:
    """Put the token back in the address bar after a page switch cleared it, so that a reload
    (or a bookmark) opens again; only where a token is required and was shown."""
    import streamlit as st

    token = access_token()
    if token is not None and st.session_state.get(_GRANTED) and st.query_params.get(TOKEN_PARAM) != token:
        st.query_params[TOKEN_PARAM] = token
