"""What a fresh server's first page imports: the Model page of a model read from a library's own
file needs neither scikit-learn nor skops nor the SHAP engines (together about three seconds of a
fresh interpreter), and the code that decides so answers as before."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]

FIRST_PAGE = """
import json, os, sys
from dashboard.state import context, preload
from dashboard.state import quality as qs
from dashboard import figures
key = preload.default_model()
ctx = context.context_for(key)
fig = figures.distribution_figure(qs.prediction_spread(ctx), by_class=True)
heavy = ("sklearn", "skops", "explainers.shap", "explainers.importance", "dashboard.figures.shap", "xgboost")
print(json.dumps({"key": key, "rows": len(ctx.X), "traces": len(fig.data),
                  "summary": len(context.feature_summary(ctx.data_key, ctx.X)),
                  "imported": [m for m in heavy if m in sys.modules]}))
"""


def test_the_model_page_of_a_library_file_imports_no_heavy_library(tmp_path):
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(400, 4)), columns=list("abcd"))
    y = (X.a + X.b > 0).astype(int)
    xgb.XGBClassifier(n_estimators=5, max_depth=3).fit(X, y).save_model(tmp_path / "model.json")
    X.assign(target=y, note="text the model does not read").to_parquet(tmp_path / "data.parquet")
    served = [{"model": str(tmp_path / "model.json"), "data": str(tmp_path / "data.parquet"), "target": "target"}]
    env = {"GLASSBOX_SERVE_MODELS": json.dumps(served), "GLASSBOX_RESULT_CACHE": "off", "PYTHONPATH": str(ROOT),
           "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", FIRST_PAGE], env=env, cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["key"] and got["rows"] == 400 and got["summary"] == 4 and got["traces"] == 2
    assert got["imported"] == []


def test_figures_are_imported_on_first_use():
    from dashboard import figures
    from dashboard.figures import quality

    assert figures.roc_figure is quality.roc_figure and figures.quality is quality
    assert "waterfall_figure" in dir(figures) and "compare" in dir(figures)
    from dashboard.figures import waterfall_figure  # noqa: F401 - the name resolves
    with pytest.raises(AttributeError, match="no attribute 'nothing_figure'"):
        figures.nothing_figure  # noqa: B018


def test_scikit_learn_classes_are_told_by_name_subclasses_too():
    from sklearn.ensemble import IsolationForest, RandomForestClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    from explainers.model import is_isolation_forest, is_sklearn

    class Mine(Pipeline):
        pass

    class NotSklearn:  # a class of the same name elsewhere is not scikit-learn's
        pass

    NotSklearn.__name__ = "Pipeline"
    assert is_sklearn(Mine([("m", RandomForestClassifier())]), "Pipeline")
    assert is_sklearn(StandardScaler(), "TransformerMixin") and is_sklearn(StandardScaler(), "BaseEstimator")
    assert not is_sklearn(NotSklearn(), "Pipeline") and not is_sklearn(StandardScaler(), "Pipeline")
    assert is_isolation_forest(Pipeline([("s", StandardScaler()), ("f", IsolationForest())]))
    assert not is_isolation_forest(RandomForestClassifier())


def test_the_demo_build_versions_are_the_libraries_own():
    import importlib

    from demo_models.build import _LIBS, _versions

    got = _versions()
    for lib in _LIBS:
        assert got[lib] == importlib.import_module(lib).__version__, lib
