"""What a fresh server prepares before its first visitor: the model every new session opens
on (the first served model, else the default demo), with its data, its features table and
the predictions behind the Model page's score, computed in a background thread started with
the server (dashboard/__main__.preload_in_background), which may run before Streamlit's
runtime exists: what it keeps goes to the result cache, not to Streamlit's data caches.

A visitor who comes sooner waits for the same computations (the result cache hands a result
under way to whoever asks for it) rather than running them twice; one who comes later finds
them done. A failure here is left to the page, which loads the model again and says why."""
from __future__ import annotations

import logging

log = logging.getLogger(__name__)
#: Streamlit's logger that warns of a thread with no script run (its caches ask): this one has none
CONTEXT_LOGGER = "streamlit.runtime.scriptrunner_utils.script_run_context"


class _NotThisThread(logging.Filter):
    def __init__(self, thread_name: str):
        super().__init__()
        self.thread_name = thread_name

    def filter(self, record: logging.LogRecord) -> bool:
        return record.threadName != self.thread_name


def quiet_for_this_thread() -> None:
    """Leave out Streamlit's "missing ScriptRunContext" warnings of the calling thread (the
    preload's has no script run by design); every other thread's are kept."""
    import threading

    name = threading.current_thread().name
    logger = logging.getLogger(CONTEXT_LOGGER)
    if not any(isinstance(f, _NotThisThread) and f.thread_name == name for f in logger.filters):
        logger.addFilter(_NotThisThread(name))


def default_model() -> str | None:
    """Load the default model's context, features table and all-row predictions; the key of
    the model loaded (None where it could not be: the page will say why)."""
    from . import context
    from .predictions import all_labels, all_predictions

    quiet_for_this_thread()
    key = context.default_model()
    try:
        ctx = context.context_for(key)
        if ctx is None:
            return None
        context.feature_summary(ctx.data_key, ctx.X)
        if ctx.y is not None:  # the Model page's score and its chart of the predictions
            if ctx.task == "regression":
                if getattr(ctx.adapter, "n_targets", 1) == 1:
                    all_predictions(ctx, ctx.adapter.output, ctx.adapter.class_index)
            else:
                all_labels(ctx)
    except Exception as exc:  # noqa: BLE001 - the page loads it again and reports the problem
        log.info("preloading %s failed: %s", key, exc)
        return None
    return key
