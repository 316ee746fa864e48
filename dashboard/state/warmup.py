"""Compile (or load) the numba kernels behind the PDP, SHAP and What-if pages once per server process."""
from __future__ import annotations

import threading

import numpy as np

#: once per process; tests patch ``dashboard.state.warmup._WARM``
_WARM = {"started": False, "lock": threading.Lock()}

#: seconds the warm-up waits after the first page's script run before it starts (unless a page
#: needs the kernels sooner: :func:`wait_for_warmup`). The browser draws that page meanwhile:
#: on two cores it took 1-2 s after the run ended, and a warm-up beside it made that slower.
START_AFTER_S = 3.0

#: what the other pages import (their figures, scikit-learn's metrics, skops for an upload):
#: imported by the warm-up, so that a page's first visit does not wait for them
OTHER_PAGES = ("sklearn.metrics", "dashboard.figures.shap", "dashboard.figures.pdp",
               "dashboard.figures.interactions", "dashboard.figures.importance", "skops.io")


def warm_kernels_in_background() -> None:
    """Compile (or load from numba's cache) the kernels behind the PDP and SHAP pages, once per
    server process, in a background thread.

    On a fresh install the first PDP view would otherwise wait about ten seconds for
    compilation (the first SHAP view about four); the user spends that time on the Model
    page instead. Later starts only load the cached machine code (about a second).

    It starts :data:`START_AFTER_S` after the call (the end of the first page's script run),
    while the browser draws that page, or at once when a page needs the kernels
    (:func:`wait_for_warmup`); the other pages' modules are imported first (:data:`OTHER_PAGES`).
    """
    with _WARM["lock"]:
        if _WARM["started"]:
            return
        _WARM["started"] = True
        _WARM["go"] = go = threading.Event()
        _WARM["thread"] = threading.Thread(target=_warm_later, args=(go,), name="glassbox-warm-kernels",
                                           daemon=True)
    _WARM["thread"].start()


def wait_for_warmup(timeout: float = 30.0) -> None:
    """Start the warm-up now if it is still waiting (:data:`START_AFTER_S`), and wait (at most
    ``timeout`` seconds) for it to finish: a model's speed measured while it runs would be the
    two sharing the cores."""
    go = _WARM.get("go")
    if go is not None:
        go.set()
    thread = _WARM.get("thread")
    if thread is not None and thread.is_alive():
        thread.join(timeout)


def _warm_later(go: threading.Event) -> None:
    import importlib

    go.wait(START_AFTER_S)
    for name in OTHER_PAGES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the page imports it again and says why
            pass
    _warm_kernels()


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
        explain(forest, X[:2])  # path-dependent, few rows: the linear walk
        explain(forest, X[:2], background=X[:5])  # against a background: the pages' game
        # the probability game of a boosting classifier (the SHAP pages' default scale)
        from sklearn.ensemble import GradientBoostingClassifier

        boost = GradientBoostingClassifier(n_estimators=2, max_depth=2, random_state=0).fit(X, X[:, 0] > 0.5)
        explain(boost, X[:2], background=X[:5], output="proba")
        # the What-if page's counterfactual search (about ten seconds to compile on a fresh install)
        from explainers.counterfactuals import counterfactuals

        counterfactuals(forest, X, [0], target=(float(X[:, 0].max()), np.inf), n=1, time_limit=1.0)
    except Exception:  # pragma: no cover - only a slower first view is at stake
        logging.getLogger(__name__).warning("Warming the compiled kernels failed", exc_info=True)
