"""Build the demo models from bundled and seeded synthetic data.

``python -m demo_models.build`` trains every demo model deterministically and
saves, for each, its model file (a ``.skops`` file for scikit-learn models; the
library's own file for XGBoost, ``.model.json``, and LightGBM, ``.model.txt``),
its data as Parquet (training rows first, then the held-out rows; the card says
how many are training rows) and a JSON card. Files go to ``demo_models/built/`` (gitignored; GLASSBOX_DEMO_DIR or a user
cache folder instead when set, or when the package folder is read-only) and are
rebuilt when missing or when the library versions that wrote them change.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

log = logging.getLogger(__name__)



def _default_build_dir() -> Path:
    """demo_models/built/ beside this file; GLASSBOX_DEMO_DIR when set; a user cache folder
    when the package folder is read-only (an installed package in a system site-packages)."""
    if os.environ.get("GLASSBOX_DEMO_DIR", "").strip():
        return Path(os.environ["GLASSBOX_DEMO_DIR"]).expanduser()
    here = Path(__file__).resolve().parent
    if os.access(here, os.W_OK):
        return here / "built"
    cache = os.environ.get("XDG_CACHE_HOME", "").strip() or Path.home() / ".cache"
    return Path(cache) / "glassbox" / "demo_models"


BUILD_DIR = _default_build_dir()
#: bump when a demo's definition changes, so old builds are replaced
BUILD_VERSION = 2
_LIBS = ("numpy", "pandas", "sklearn", "skops", "pyarrow", "xgboost", "lightgbm")

#: how each kind of demo model is saved: the suffix of its file. XGBoost's JSON model
#: file cannot be ``<name>.json``: that is the card.
MODEL_SUFFIXES = {"skops": ".skops", "xgboost": ".model.json", "lightgbm": ".model.txt"}


@dataclass(frozen=True)
class DemoSpec:
    name: str
    title: str
    description: str
    make: Callable[[], tuple]
    #: "skops" (scikit-learn models), or "xgboost" / "lightgbm": saved as the library's own file
    model_format: str = "skops"

    @property
    def model_suffix(self) -> str:
        return MODEL_SUFFIXES[self.model_format]


#: the installed distributions that may hold a module of :data:`_LIBS` (others: the module's own name)
_DISTRIBUTIONS = {"sklearn": ("scikit-learn",), "xgboost": ("xgboost", "xgboost-cpu")}


def _versions() -> dict:
    """The versions the demos are built with, read from the installed packages' metadata:
    importing the libraries to ask them (scikit-learn, XGBoost, LightGBM) took 1.3 s of every
    server's first page."""
    import importlib
    import importlib.metadata as metadata

    out = {"build_version": BUILD_VERSION, "python": sys.version.split()[0]}
    for lib in _LIBS:
        for dist in _DISTRIBUTIONS.get(lib, (lib,)):
            try:
                out[lib] = metadata.version(dist)
                break
            except metadata.PackageNotFoundError:
                continue
        else:  # installed some other way: the module says
            out[lib] = importlib.import_module(lib).__version__
    return out


def _split(X: pd.DataFrame, y: pd.Series, stratify: bool, seed: int = 0):
    from sklearn.model_selection import train_test_split

    return train_test_split(
        X, y, test_size=0.25, random_state=seed, stratify=y if stratify else None
    )


# ------------------------------------------------------------------ datasets
def _diabetes():
    from sklearn.datasets import load_diabetes

    d = load_diabetes(as_frame=True, scaled=False)
    X = d.data.astype(float)
    y = d.target.rename("disease_progression").astype(float)
    units = {"age": "years", "bmi": "kg/m²", "bp": "mm Hg", "disease_progression": "score"}
    return X, y, units


def _breast_cancer():
    from sklearn.datasets import load_breast_cancer

    d = load_breast_cancer(as_frame=True)
    X = d.data.astype(float)
    y = pd.Series(np.asarray(d.target_names)[d.target.to_numpy()], name="diagnosis")
    return X, y, {}


def _wine():
    from sklearn.datasets import load_wine

    d = load_wine(as_frame=True)
    X = d.data.astype(float)
    y = pd.Series(np.asarray(d.target_names)[d.target.to_numpy()], name="cultivar")
    return X, y, {"alcohol": "% vol"}


def housing_data(n: int = 2000, seed: int = 0) -> tuple[pd.DataFrame, pd.Series]:
    """Synthetic coastal housing: latitude and longitude correlated about -0.9.

    Houses lie along a coast running north-west, so most (latitude, longitude)
    pairs are empty: a 2D partial dependence over them averages over places
    where nobody lives. Price has an income effect and a location interaction
    (two expensive metro areas plus a lat x lon term).
    """
    rng = np.random.default_rng(seed)
    lat = rng.uniform(32.5, 41.5, n)
    lon = -117.0 - 0.9 * (lat - 32.5) + rng.normal(0.0, 1.1, n)
    income = np.clip(rng.lognormal(1.3, 0.45, n), 0.5, 15.0)
    age = rng.integers(1, 53, n).astype(float)
    rooms = np.clip(rng.normal(5.2, 1.1, n), 1.5, 10.0)
    la = np.exp(-((lat - 34.0) ** 2 + (lon + 118.3) ** 2) / 1.2)
    sf = np.exp(-((lat - 37.7) ** 2 + (lon + 122.3) ** 2) / 0.9)
    price = (
        0.45 * income
        + 0.012 * age
        - 0.08 * (rooms - 5.5) ** 2
        + 1.6 * la
        + 2.2 * sf
        + 0.25 * (lat - 37.0) * (lon + 121.0)
        + rng.normal(0.0, 0.3, n)
    )
    X = pd.DataFrame(
        {
            "latitude": lat,
            "longitude": lon,
            "median_income": income,
            "house_age": age,
            "rooms_per_household": rooms,
        }
    )
    return X, pd.Series(price, name="price")


def _housing():
    X, y = housing_data()
    units = {"latitude": "°N", "longitude": "°E", "median_income": "10k USD",
             "house_age": "years", "price": "100k USD"}
    return X, y, units


#: the coast categories of :func:`housing_coast_data`, west (the sea) to east, and their price effect
COAST = {"ocean front": 0.6, "near coast": 0.25, "inland": 0.0, "far inland": -0.3}


def housing_coast_data(n: int = 2000, seed: int = 0) -> tuple[pd.DataFrame, pd.Series]:
    """The coastal housing data with a categorical column: how far inland each house is.

    ``coast`` (a pandas category, like California's ocean_proximity) bins each house's
    distance east of the coast line, which the location columns also carry (so it is
    correlated with them); being near the sea adds to the price of
    :func:`housing_data` (:data:`COAST`).
    """
    X, y = housing_data(n, seed)
    inland = X.longitude - (-117.0 - 0.9 * (X.latitude - 32.5))  # the coast line of housing_data
    codes = np.digitize(inland.to_numpy(), [-1.2, 0.0, 1.2])
    labels = list(COAST)
    X = X.assign(coast=pd.Categorical.from_codes(codes, categories=labels))
    y = (y + np.array([COAST[c] for c in labels])[codes]).rename("price")
    return X, y


def _housing_coast():
    X, y = housing_coast_data()
    _, _, units = _housing()
    return X, y, units


def _breast_cancer_01():
    """The breast cancer data with the target as 1 (malignant) / 0 (benign): a library's model
    file keeps no class labels, so its classes are the codes 0 and 1."""
    X, y, units = _breast_cancer()
    return X, (y == "malignant").astype(int).rename("malignant"), units


# -------------------------------------------------------------------- models
def _diabetes_forest():
    from sklearn.ensemble import RandomForestRegressor

    X, y, units = _diabetes()
    model = RandomForestRegressor(
        n_estimators=100, min_samples_leaf=3, max_features=0.5, oob_score=True,
        random_state=0, n_jobs=1,
    )
    return X, y, units, model, "regression"


def _cancer_hgb():
    from sklearn.ensemble import HistGradientBoostingClassifier

    X, y, units = _breast_cancer()
    model = HistGradientBoostingClassifier(max_iter=100, learning_rate=0.1, random_state=0)
    return X, y, units, model, "classification"


def _wine_gb():
    from sklearn.ensemble import GradientBoostingClassifier

    X, y, units = _wine()
    model = GradientBoostingClassifier(n_estimators=100, max_depth=2, learning_rate=0.1, random_state=0)
    return X, y, units, model, "classification"


def _housing_gb():
    from sklearn.ensemble import GradientBoostingRegressor

    X, y, units = _housing()
    model = GradientBoostingRegressor(n_estimators=200, max_depth=4, learning_rate=0.1, random_state=0)
    return X, y, units, model, "regression"


def _cancer_xgb():
    from xgboost import XGBClassifier

    X, y, units = _breast_cancer_01()
    model = XGBClassifier(n_estimators=150, max_depth=3, learning_rate=0.1, subsample=0.8,
                          tree_method="hist", n_jobs=1, random_state=0)
    return X, y, units, model, "classification"


def _housing_lgbm():
    from lightgbm import LGBMRegressor

    X, y, units = _housing_coast()
    # one thread and deterministic: the same file on every machine; "coast" is a pandas
    # category, so LightGBM splits on it natively (a set of categories per split)
    model = LGBMRegressor(n_estimators=200, num_leaves=15, learning_rate=0.05, min_child_samples=10,
                          cat_smooth=5, min_data_per_group=20, n_jobs=1, deterministic=True,
                          force_row_wise=True, random_state=0, verbose=-1)
    return X, y, units, model, "regression"


def _diabetes_linear():
    from sklearn.linear_model import LinearRegression

    X, y, units = _diabetes()
    return X, y, units, LinearRegression(), "regression"


def _cancer_logistic():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y, units = _breast_cancer()
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
    return X, y, units, model, "classification"


DEMOS: tuple[DemoSpec, ...] = (
    DemoSpec("diabetes_forest", "Diabetes progression — random forest",
             "Regression on scikit-learn's diabetes data (442 patients, 10 measurements).", _diabetes_forest),
    DemoSpec("breast_cancer_hgb", "Breast cancer diagnosis — histogram gradient boosting",
             "Binary classification (malignant / benign) on 569 tumours, 30 features.", _cancer_hgb),
    DemoSpec("wine_gb", "Wine cultivar — gradient boosting",
             "Three-class classification of 178 wines from 13 chemical measurements.", _wine_gb),
    DemoSpec("housing_gb", "Coastal housing — gradient boosting (correlated location)",
             "Synthetic prices where latitude and longitude are correlated about -0.9 along a "
             "coast: a 2D PDP over them averages over places with no houses.", _housing_gb),
    DemoSpec("diabetes_linear", "Diabetes progression — linear regression",
             "Ordinary least squares on the diabetes data: SHAP has a closed form here.", _diabetes_linear),
    DemoSpec("breast_cancer_logistic", "Breast cancer diagnosis — logistic regression",
             "Standardised logistic regression: SHAP in log-odds has a closed form.", _cancer_logistic),
    DemoSpec("breast_cancer_xgb", "Breast cancer diagnosis — XGBoost (JSON model file)",
             "XGBoost's binary classifier on the 569 tumours, saved with XGBoost's own save_model and "
             "read back without XGBoost; class 1 is malignant, 0 benign (the file keeps no class names).",
             _cancer_xgb, model_format="xgboost"),
    DemoSpec("housing_lgbm", "Coastal housing — LightGBM with a categorical feature (text model file)",
             "LightGBM on the coastal housing prices plus a categorical column, coast (ocean front to far "
             "inland), that LightGBM splits on natively; saved as LightGBM's text model file.",
             _housing_lgbm, model_format="lightgbm"),
)
DEMO_NAMES = tuple(d.name for d in DEMOS)


def train_demo(spec: DemoSpec) -> tuple[object, pd.DataFrame, dict]:
    """Fit one demo model; return (model, data with the target column, card)."""
    from sklearn.metrics import accuracy_score, r2_score, roc_auc_score

    t0 = time.perf_counter()
    X, y, units, model, kind = spec.make()
    stratify = kind == "classification"
    X_tr, X_te, y_tr, y_te = _split(X, y, stratify)
    model.fit(X_tr, y_tr)
    if kind == "regression":
        metric = {"name": "R² (held out)", "value": float(r2_score(y_te, model.predict(X_te)))}
        task = "regression"
        classes = None
    else:
        classes = [str(c) for c in model.classes_]
        task = "binary" if len(classes) == 2 else "multiclass"
        metric = {"name": "accuracy (held out)", "value": float(accuracy_score(y_te, model.predict(X_te)))}
        if task == "binary":
            metric["roc_auc"] = float(roc_auc_score(y_te, model.predict_proba(X_te)[:, 1]))
    frame = pd.concat([X_tr, X_te], axis=0)
    frame[y.name] = pd.concat([y_tr, y_te], axis=0)
    frame = frame.reset_index(drop=True)
    card = {
        "name": spec.name,
        "title": spec.title,
        "description": spec.description,
        "model_type": _model_type(model, spec),
        "model_file": f"{spec.name}{spec.model_suffix}",
        "task": task,
        "target": str(y.name),
        "classes": classes,
        "features": [_feature_card(X[c], units.get(c)) for c in X.columns],
        "target_unit": units.get(str(y.name)),
        "n_rows": int(len(frame)),
        "n_train": int(len(X_tr)),
        "metric": metric,
        "build_seconds": round(time.perf_counter() - t0, 2),
        "versions": _versions(),
    }
    return model, frame, card


def _feature_card(s: pd.Series, unit) -> dict:
    """A feature's entry on the card: its range, or its categories for a categorical column."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        return {"name": s.name, "dtype": "category", "min": None, "max": None, "unit": unit,
                "categories": [str(c) for c in s.cat.categories]}
    return {"name": s.name, "dtype": str(s.dtype), "min": float(s.min()), "max": float(s.max()), "unit": unit}


def _model_type(model, spec: DemoSpec) -> str:
    """What the Model page calls the model: for a library's file, what Glassbox reads from it
    (the same words an upload of the file gets)."""
    if spec.model_format == "xgboost":
        from explainers.trees.xgboost import xgboost_from_object

        return xgboost_from_object(model).ensemble.model_name
    if spec.model_format == "lightgbm":
        from explainers.trees.lightgbm import lightgbm_from_object

        return lightgbm_from_object(model).ensemble.model_name
    if hasattr(model, "steps"):
        return " → ".join(type(s).__name__ for _, s in model.steps)
    return type(model).__name__


def save_model(model, spec: DemoSpec, path: Path) -> None:
    """Save a trained demo model in its format: skops, or the library's own model file."""
    if spec.model_format == "xgboost":
        model.save_model(str(path))  # XGBModel.save_model: the booster's JSON (the suffix picks JSON)
    elif spec.model_format == "lightgbm":
        model.booster_.save_model(str(path))  # text; keeps the pandas categories of "coast"
    else:
        import skops.io as sio

        sio.dump(model, path)


def _build_one(spec: DemoSpec, out: Path) -> dict:
    model, frame, card = train_demo(spec)
    frame.to_parquet(out / f"{spec.name}.parquet", index=False)
    save_model(model, spec, out / f"{spec.name}{spec.model_suffix}")
    (out / f"{spec.name}.json").write_text(json.dumps(card, indent=2))
    return card


def is_current(build_dir: Path = BUILD_DIR) -> bool:
    """True when every demo is built by the library versions installed now."""
    manifest = build_dir / "manifest.json"
    if not manifest.is_file():
        return False
    try:
        info = json.loads(manifest.read_text())
    except (OSError, ValueError):
        return False
    if info.get("versions") != _versions():
        return False
    return all(p.is_file() for n in DEMO_NAMES for p in paths(n, build_dir).values())


def build_all(build_dir: Path = BUILD_DIR, *, force: bool = False) -> list[dict]:
    """Train and save every demo model; skip when current unless ``force``.

    The files are written to a temporary folder and moved into place at the
    end, so a reader never sees half a build (two dashboard sessions starting
    at once may both build; the last one to finish wins with identical files).
    """
    if not force and is_current(build_dir):
        return load_cards(build_dir)
    build_dir.parent.mkdir(parents=True, exist_ok=True)
    from explainers.io._files import remove_orphans

    # a build killed before its end (a server stopped during the first start) left its folder
    remove_orphans(build_dir.parent, ".build-")
    remove_orphans(build_dir.parent, build_dir.name + ".old-")
    tmp = Path(tempfile.mkdtemp(prefix=f".build-{os.getpid()}-", dir=build_dir.parent))
    try:
        cards = []
        for spec in DEMOS:
            log.info("building demo model %s", spec.name)
            cards.append(_build_one(spec, tmp))
        (tmp / "manifest.json").write_text(
            json.dumps({"versions": _versions(), "demos": list(DEMO_NAMES)}, indent=2)
        )
        old = build_dir.with_name(build_dir.name + f".old-{os.getpid()}-")
        if build_dir.exists():
            build_dir.rename(old)
        tmp.rename(build_dir)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return cards


def ensure_built(build_dir: Path = BUILD_DIR) -> list[dict]:
    """Return the demo cards, building the demos first when missing or stale."""
    return build_all(build_dir, force=False)


def load_cards(build_dir: Path = BUILD_DIR) -> list[dict]:
    return [json.loads((build_dir / f"{n}.json").read_text()) for n in DEMO_NAMES]


def spec(name: str) -> DemoSpec:
    """The definition of the demo called ``name``."""
    for s in DEMOS:
        if s.name == name:
            return s
    raise KeyError(f"Unknown demo model {name!r}; known: {', '.join(DEMO_NAMES)}")


def paths(name: str, build_dir: Path = BUILD_DIR) -> dict:
    """Paths of one demo's files: ``"model"`` (the model file, whatever its format),
    ``"parquet"`` (the data), ``"json"`` (the card), and ``"skops"`` for a scikit-learn
    demo (the same file as ``"model"``)."""
    if name not in DEMO_NAMES:
        raise KeyError(f"Unknown demo model {name!r}; known: {', '.join(DEMO_NAMES)}")
    s = spec(name)
    out = {"model": build_dir / f"{name}{s.model_suffix}", "parquet": build_dir / f"{name}.parquet",
           "json": build_dir / f"{name}.json"}
    if s.model_format == "skops":
        out["skops"] = out["model"]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="rebuild even when current")
    parser.add_argument("--out", type=Path, default=BUILD_DIR, help="output folder")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    t0 = time.perf_counter()
    current = not args.force and is_current(args.out)
    cards = build_all(args.out, force=args.force)
    for c in cards:
        m = c["metric"]
        print(f"{c['name']:<24} {c['task']:<10} {m['name']}: {m['value']:.3f}")
    verb = "already current" if current else f"built in {time.perf_counter() - t0:.1f} s"
    print(f"{len(cards)} demo models {verb} in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
