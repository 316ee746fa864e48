"""XGBoost, LightGBM and CatBoost objects from a notebook, by path: the largest difference
between Glassbox's Tree SHAP and the library's own contributions, and the time of the first
explanation (it converts the object) against the next (the conversion is reused).

Paths: ``object`` (the fitted object), ``pipeline`` (a StandardScaler and the object in a
Pipeline, folded into the trees: compared with the library's contributions on the scaled
columns), ``file`` (saved in the library's own file, read by ``load_model``, the upload
path), ``show`` (saved as ``show()`` saves it and read back as its server does).

    python benchmarks/library_objects.py
"""
from __future__ import annotations

import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _fit(library, task, X, y):
    import catboost as cb
    import lightgbm as lgb
    import xgboost as xgb

    if library == "xgboost":
        cls = xgb.XGBRegressor if task == "regression" else xgb.XGBClassifier
        return cls(n_estimators=100, max_depth=6).fit(X, y)
    if library == "lightgbm":
        cls = lgb.LGBMRegressor if task == "regression" else lgb.LGBMClassifier
        return cls(n_estimators=100, verbose=-1).fit(X, y)
    cls = cb.CatBoostRegressor if task == "regression" else cb.CatBoostClassifier
    return cls(iterations=100, depth=6, verbose=0, allow_writing_files=False).fit(X, y)


def _contribs(model, X) -> np.ndarray:
    import catboost as cb
    import lightgbm as lgb
    import xgboost as xgb

    if isinstance(model, xgb.XGBModel):
        c = model.get_booster().predict(xgb.DMatrix(X), pred_contribs=True)
    elif isinstance(model, lgb.LGBMModel):
        c = model.predict(X, pred_contrib=True)
    else:
        c = model.get_feature_importance(cb.Pool(X), type="ShapValues")
    c = np.asarray(c, dtype=float)
    p1 = X.shape[1] + 1
    if c.ndim == 2 and c.shape[1] != p1:
        c = c.reshape(len(X), -1, p1)
    return c[:, :, :-1] if c.ndim == 3 else c[:, None, :-1]


def _values(res) -> np.ndarray:
    v = np.asarray(res.values, dtype=float)
    return v[:, None, :] if v.ndim == 2 else v.transpose(0, 2, 1)


def main() -> None:
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from dashboard import notebook
    from explainers import load_model
    from explainers.io.models import load_model_parts
    from explainers.shap import TreeShap
    from explainers.trees.library import save_native

    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    n, p = 4000, 8
    X = pd.DataFrame(rng.normal(size=(n, p)), columns=[f"x{i}" for i in range(p)])
    signal = X.x0 * 2 + X.x1 * X.x2 + np.sin(X.x3)
    targets = {"regression": signal.to_numpy(), "binary": (signal > signal.median()).astype(int).to_numpy(),
               "multiclass": np.digitize(signal, np.quantile(signal, [1 / 3, 2 / 3]))}
    rows = X.iloc[:500]
    print(f"{'library':9} {'task':11} {'object':>9} {'pipeline':>9} {'file':>9} {'show':>9}  "
          f"{'first s':>8} {'next s':>8}")
    for library in ("xgboost", "lightgbm", "catboost"):
        for task, y in targets.items():
            model = _fit(library, task, X, y)
            lib = _contribs(model, rows)
            t0 = time.perf_counter()
            obj = _values(TreeShap(model).explain(rows))
            first = time.perf_counter() - t0
            t0 = time.perf_counter()
            TreeShap(model).explain(rows)
            again = time.perf_counter() - t0
            pipe = make_pipeline(StandardScaler(), _fit(library, task, X, y)).fit(X, y)
            scaled = pd.DataFrame(pipe[0].transform(rows), columns=X.columns)
            pipe_diff = np.abs(_values(TreeShap(pipe).explain(rows)) - _contribs(pipe[-1], scaled)).max()
            with tempfile.TemporaryDirectory() as tmp:
                path, _ = save_native(model, Path(tmp) / "model")
                file_vals = _values(TreeShap(load_model(path)).explain(rows))
                frame, target = notebook._frame(model, X, pd.Series(y, name="y"))
                model_path, _, parts = notebook._save(model, frame, target, Path(tmp), 1)
                shown = load_model_parts(None, model_path, parts.get("settings"))
                show_vals = _values(TreeShap(shown).explain(rows))
            print(f"{library:9} {task:11} {np.abs(obj - lib).max():9.1e} {pipe_diff:9.1e} "
                  f"{np.abs(file_vals - lib).max():9.1e} {np.abs(show_vals - lib).max():9.1e}  "
                  f"{first:8.3f} {again:8.3f}")


if __name__ == "__main__":
    main()
