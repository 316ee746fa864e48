"""XGBoost model files (JSON and UBJSON) read without XGBoost, checked against XGBoost itself."""
import warnings

import numpy as np
import pandas as pd
import pytest
import xgboost as xgb
from sklearn.datasets import make_classification, make_friedman1

from explainers.effects.pdp import partial_dependence
from explainers.errors import InvalidModelError
from explainers.shap.exact import ExactShap
from explainers.shap.tree import TreeShap
from explainers.trees.native import NativeTreeClassifier, NativeTreeRegressor
from explainers.trees.xgboost import decode_ubjson, read_xgboost, xgboost_from_object
from tests import _native_xgboost_files as F
from tests._work_bounds import file_budget, peak_allocation

warnings.filterwarnings("ignore", category=UserWarning, module="xgboost")


# ----------------------------------------------------------------- data
def _data():
    rng = np.random.RandomState(0)
    Xr, yr = make_friedman1(240, n_features=5, random_state=0)
    Xr[rng.rand(*Xr.shape) < 0.08] = np.nan
    Xc, yc = make_classification(240, 5, n_informative=3, random_state=0)
    Xc[rng.rand(*Xc.shape) < 0.08] = np.nan
    Xm, ym = make_classification(240, 5, n_informative=4, n_redundant=0, n_classes=3, random_state=1)
    frame = pd.DataFrame({"a": rng.randn(240), "b": rng.randn(240)})
    labels = [f"k{i}" for i in range(70)]
    frame["c"] = pd.Categorical(rng.choice(labels, 240), categories=labels)
    frame["d"] = pd.Categorical(rng.choice([10, 20, 30, 40], 240))
    yf = frame.a + (frame.c.cat.codes % 3) + 2 * (frame.d.cat.codes == 2) + 0.1 * rng.randn(240)
    frame.loc[::9, "c"] = np.nan
    return Xr, yr, Xc, yc, Xm, ym, frame, yf.to_numpy()


XR, YR, XC, YC, XM, YM, FRAME, YF = _data()
POS = YR / 10 + 0.5  # positive targets


def _train(params, X, y, rounds, group=None, **dm):
    d = xgb.DMatrix(X, y, **dm)
    if group is not None:
        d.set_group(group)
    return xgb.train({"max_depth": 3, "seed": 0, **params}, d, rounds)


# name -> (builder returning a Booster, X)
CASES = {
    "regression": (lambda: _train({"objective": "reg:squarederror", "max_depth": 4}, XR, YR, 12), XR),
    "binary": (lambda: _train({"objective": "binary:logistic"}, XC, YC, 10), XC),
    "multiclass": (lambda: _train({"objective": "multi:softprob", "num_class": 3}, XM, YM, 6), XM),
    "softmax": (lambda: _train({"objective": "multi:softmax", "num_class": 3}, XM, YM, 3), XM),
    "logitraw": (lambda: _train({"objective": "binary:logitraw"}, XC, YC, 6), XC),
    "reg_logistic": (lambda: _train({"objective": "reg:logistic"}, XC, YC, 6), XC),
    "poisson": (lambda: _train({"objective": "count:poisson"}, XR, POS, 8), XR),
    "gamma": (lambda: _train({"objective": "reg:gamma"}, XR, POS, 8), XR),
    "tweedie": (lambda: _train({"objective": "reg:tweedie"}, XR, POS, 8), XR),
    "cox": (lambda: _train({"objective": "survival:cox"}, XR, POS, 5), XR),
    "absolute": (lambda: _train({"objective": "reg:absoluteerror"}, XR, YR, 6), XR),
    "pseudohuber": (lambda: _train({"objective": "reg:pseudohubererror", "huber_slope": 5.0, "base_score": 14.0},
                                   XR, YR, 8), XR),
    "rank": (lambda: _train({"objective": "rank:pairwise"}, XR, np.round(POS), 5, group=[80, 80, 80]), XR),
    "dart": (lambda: _train({"objective": "reg:squarederror", "booster": "dart", "rate_drop": 0.3},
                            XR, YR, 8), XR),
    "forest": (lambda: _train({"objective": "reg:squarederror", "num_parallel_tree": 4, "subsample": 0.7,
                               "colsample_bynode": 0.8, "learning_rate": 1.0}, XR, YR, 2), XR),
    "single_tree": (lambda: _train({"objective": "reg:squarederror", "max_depth": 2}, XR, YR, 1), XR),
    "deep_tree": (lambda: _train({"objective": "reg:squarederror", "max_depth": 14, "min_child_weight": 0,
                                  "lambda": 0}, XR, YR, 2), XR),
    "exact_pruned": (lambda: _train({"objective": "reg:squarederror", "tree_method": "exact", "max_depth": 6,
                                     "gamma": 5.0, "min_child_weight": 0}, XR, YR, 4), XR),
    "categorical": (lambda: _train({"objective": "reg:squarederror", "tree_method": "hist",
                                    "max_cat_to_onehot": 1, "max_depth": 4}, FRAME, YF, 8,
                                   enable_categorical=True), FRAME),
    "categorical_onehot": (lambda: _train({"objective": "binary:logistic", "tree_method": "hist",
                                           "max_cat_to_onehot": 8}, FRAME, (YF > 1).astype(int), 5,
                                          enable_categorical=True), FRAME),
}


@pytest.fixture(scope="module")
def models():
    return {name: build() for name, (build, _) in CASES.items()}


def _dm(X):
    return xgb.DMatrix(X, enable_categorical=True) if isinstance(X, pd.DataFrame) else xgb.DMatrix(X)


def _read(booster, fmt):
    return read_xgboost(bytes(booster.save_raw(fmt)), name=f"model.{fmt}")


# --------------------------------------------------------------- predict
@pytest.mark.parametrize("fmt", ["json", "ubj"])
@pytest.mark.parametrize("name", list(CASES))
def test_predict_matches_xgboost(models, name, fmt):
    b, X = models[name], CASES[name][1]
    model = _read(b, fmt)
    assert model.source_format == f"xgboost {fmt}"
    margin = b.predict(_dm(X), output_margin=True)
    raw = model.predict_raw(X)
    scale = max(1.0, np.abs(margin).max())
    np.testing.assert_allclose(raw.reshape(margin.shape), margin, rtol=1e-6, atol=1e-6 * scale)
    pred = b.predict(_dm(X))
    if isinstance(model, NativeTreeClassifier):
        proba = model.predict_proba(X)
        if name in ("binary", "reg_logistic", "categorical_onehot"):
            np.testing.assert_allclose(proba[:, 1], pred, rtol=1e-6, atol=1e-7)
        elif name == "softmax":
            np.testing.assert_array_equal(model.predict(X), pred)
        else:
            np.testing.assert_allclose(proba, pred, rtol=1e-6, atol=1e-7)
    else:
        assert isinstance(model, NativeTreeRegressor)
        np.testing.assert_allclose(model.predict(X), pred, rtol=1e-6, atol=1e-6 * scale)


def test_objective_reading(models):
    assert _read(models["binary"], "json").ensemble.transform == "sigmoid"
    assert _read(models["multiclass"], "ubj").ensemble.transform == "softmax"
    assert list(_read(models["multiclass"], "ubj").classes_) == [0, 1, 2]
    for name in ("poisson", "gamma", "tweedie", "cox"):
        assert _read(models[name], "json").ensemble.transform == "exp"
    for name in ("logitraw", "rank", "absolute"):
        m = _read(models[name], "json")
        assert m.ensemble.transform == "identity" and isinstance(m, NativeTreeRegressor)
    assert isinstance(_read(models["reg_logistic"], "json"), NativeTreeClassifier)


def test_values_at_split_conditions(models):
    # XGBoost sends x < split_condition left (float32): rows exactly at, just below and just
    # above every split condition route as XGBoost routes them
    b = models["regression"]
    tree = F.first_tree(decode_ubjson(bytes(b.save_raw("ubj"))))
    inner = np.flatnonzero(tree["left_children"] != -1)
    rows = []
    for node in inner:
        c = tree["split_conditions"][node]
        # float64 values a hair below c round up to c in float32: XGBoost sends them right
        below = float(c) - 1e-12 * abs(float(c))
        for v in (c, np.nextafter(c, np.float32(-np.inf)), np.nextafter(c, np.float32(np.inf)), below):
            row = np.nan_to_num(XR[node % 50]).copy()
            row[tree["split_indices"][node]] = float(v)
            rows.append(row)
    rows = np.asarray(rows)
    model = _read(b, "ubj")
    np.testing.assert_array_equal(model.ensemble.apply(rows)[:, 0] >= 0, True)
    np.testing.assert_allclose(model.predict(rows), b.predict(xgb.DMatrix(rows)), rtol=1e-6, atol=1e-6)
    leaves = b.predict(xgb.DMatrix(rows), pred_leaf=True)[:, 0]
    ours = model.ensemble.apply(rows)[:, 0]  # first tree: compare the leaf each row reaches
    want = [_leaf_position(tree, int(leaf)) for leaf in leaves]
    np.testing.assert_array_equal(model.ensemble.value[ours, 0], want)


def _leaf_position(tree, node):
    return float(np.float32(tree["split_conditions"][node]))


def test_ubj_and_json_give_the_same_trees(models):
    for name in ("regression", "categorical", "multiclass"):
        a, b = _read(models[name], "json").ensemble, _read(models[name], "ubj").ensemble
        for field in ("feature", "threshold", "left", "right", "missing_go_left", "value", "cover",
                      "cat_start", "cat_bits", "base"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)
        assert a.categories == b.categories


def test_ubj_decoder_round_trip(models):
    # re-encoding the decoded document gives a file XGBoost itself loads and predicts the same from
    raw = bytes(models["categorical"].save_raw("ubj"))
    doc = decode_ubjson(raw)
    tree = F.first_tree(doc)
    assert tree["split_conditions"].dtype == np.float32 and tree["left_children"].dtype == np.int32
    again = F.ubj_dumps(doc)
    b2 = xgb.Booster(model_file=bytearray(again))
    np.testing.assert_array_equal(b2.predict(_dm(FRAME)), models["categorical"].predict(_dm(FRAME)))


# ------------------------------------------------------------- categorical
def test_categorical_codes_route_as_xgboost(models):
    b = models["categorical"]
    model = _read(b, "ubj")
    assert model.ensemble.categories[2][:2] == ("k0", "k1")
    assert model.ensemble.categories[3] == (10, 20, 30, 40)
    assert model.ensemble.categories[0] is None
    codes = np.column_stack([FRAME.a, FRAME.b, FRAME.c.cat.codes, FRAME.d.cat.codes]).astype(float)
    codes[codes == -1] = np.nan
    # unknown, negative, fractional and far-out codes: XGBoost sends them left (not in any listed set)
    codes[:40, 2] = np.arange(40) * 3 - 10
    codes[40:60, 3] = [-1, 5, 100, 1e9, 0.5, 2.7, 3.99, -0.5, 4, 63, 64, 65, 128, 1e30, -1e30, 7, 8, 9, 1, 2]
    dm = xgb.DMatrix(codes, feature_names=list("abcd"), feature_types=["q", "q", "c", "c"],
                     enable_categorical=True)
    np.testing.assert_allclose(model.predict(codes), b.predict(dm), rtol=1e-6, atol=1e-6)


# ------------------------------------------------------------------- SHAP
def _contribs(b, X):
    c = b.predict(_dm(X), pred_contribs=True)
    return c


@pytest.mark.parametrize("name", list(CASES))
def test_path_dependent_shap_matches_pred_contribs(models, name):
    b, X = models[name], CASES[name][1]
    X = X.iloc[:60] if isinstance(X, pd.DataFrame) else X[:60]
    model = _read(b, "ubj")
    res = TreeShap(model).explain(X, nan_is_missing=False)
    c = _contribs(b, X)
    if c.ndim == 3:  # (n, k, p + 1)
        ours = np.concatenate([res.values.transpose(0, 2, 1), res.base_values[:, :, None]], axis=2)
    else:
        ours = np.column_stack([res.values, res.base_values])
    scale = max(1.0, np.abs(b.predict(_dm(X), output_margin=True)).max())
    np.testing.assert_allclose(ours, c, rtol=0, atol=1e-5 * scale)


class _Margin:
    """A regressor predicting a native model's raw margin (log of a log-link model's prediction)."""

    _estimator_type = "regressor"

    def __init__(self, model):
        self.model = model
        self.n_features_in_ = model.n_features_in_

    def predict(self, X):
        return self.model.predict_raw(X)[:, 0]

    def __sklearn_is_fitted__(self):
        return True


@pytest.mark.parametrize("name", ["regression", "binary", "multiclass", "categorical", "poisson", "dart"])
def test_interventional_shap_equals_exact(models, name):
    b, X = models[name], CASES[name][1]
    model = _read(b, "json")
    sel = (lambda a, s: a.iloc[s]) if isinstance(X, pd.DataFrame) else (lambda a, s: a[s])
    bg, rows = sel(X, slice(100, 116)), sel(X, slice(0, 6))
    tree = TreeShap(model, bg, mode="interventional").explain(rows, nan_is_missing=False)
    # a log-link model's trees add up to its margin: ExactShap explains that margin too
    game_model = _Margin(model) if model.ensemble.transform == "exp" else model
    exact = ExactShap(game_model, bg, output="raw").explain(rows, nan_is_missing=False)
    np.testing.assert_allclose(tree.values, exact.values, atol=1e-9)
    np.testing.assert_allclose(tree.base_values, exact.base_values, atol=1e-9)


@pytest.mark.parametrize("name", ["regression", "multiclass", "categorical"])
def test_masked_feature_gets_zero(models, name):
    b, X = models[name], CASES[name][1]
    model = _read(b, "ubj")
    X = X.iloc[:20] if isinstance(X, pd.DataFrame) else np.nan_to_num(X[:20])
    bg = CASES[name][1]
    bg = bg.iloc[100:120] if isinstance(bg, pd.DataFrame) else np.nan_to_num(bg[100:120])
    missing = np.zeros(X.shape[1], bool)
    missing[[0, 2]] = True
    for mode, background in (("path_dependent", None), ("interventional", bg)):
        res = TreeShap(model, background, mode=mode).explain(X, missing=missing)
        assert (res.values[:, missing] == 0).all()
        total = res.base_values + res.values.sum(axis=1)
        np.testing.assert_allclose(total, res.predictions, atol=1e-9)
    # interventional: the masked prediction is the mean over the background of f(x_present, b_missing)
    Xa = X.to_numpy(dtype=object) if isinstance(X, pd.DataFrame) else X
    bga = bg.to_numpy(dtype=object) if isinstance(bg, pd.DataFrame) else bg
    want = []
    for i in range(len(Xa)):
        rows = bga.copy()
        rows[:, ~missing] = Xa[i, ~missing]
        rows = pd.DataFrame(rows, columns=X.columns).astype(X.dtypes) if isinstance(X, pd.DataFrame) else rows
        want.append(model.predict_raw(rows).mean(axis=0))
    want = np.asarray(want).reshape(np.shape(res.predictions))
    np.testing.assert_allclose(res.predictions, want, atol=1e-9)


# ---------------------------------------------------------------- tree PD
@pytest.mark.parametrize("name", ["regression", "binary", "multiclass", "categorical"])
def test_tree_pd_equals_brute(models, name):
    b, X = models[name], CASES[name][1]
    model = _read(b, "json")
    feats = ["c", "a"] if name == "categorical" else [0, 2]
    for f in feats:
        tree = partial_dependence(model, X, f, method="tree", grid_resolution=12)
        brute = partial_dependence(model, X, f, method="brute", grid_resolution=12)
        np.testing.assert_allclose(tree.average, brute.average, atol=1e-9)
        np.testing.assert_allclose(tree.individual, brute.individual, atol=1e-9)


# ------------------------------------------------------ names, importances
def test_importances_match_get_score(models):
    for name in ("regression", "multiclass", "categorical"):
        b = models[name]
        model = _read(b, "ubj")
        n = model.n_features_in_
        names = list(model.feature_names_in_) if hasattr(model, "feature_names_in_") else [f"f{i}" for i in range(n)]
        for ours, theirs in (("gain", "total_gain"), ("cover", "total_cover"), ("split count", "weight")):
            score = b.get_score(importance_type=theirs)
            want = np.array([score.get(f, 0.0) for f in names])
            np.testing.assert_allclose(model.importances[ours], want, rtol=1e-5, err_msg=f"{name} {ours}")


def test_feature_names_and_notes(models):
    plain = _read(models["regression"], "json")
    assert not hasattr(plain, "feature_names_in_")
    assert any("named by position" in n for n in plain.notes)
    framed = _read(models["categorical"], "json")
    assert list(framed.feature_names_in_) == ["a", "b", "c", "d"]
    assert any("dart" in n for n in _read(models["dart"], "json").notes)
    assert any("pruned" in n for n in _read(models["exact_pruned"], "json").notes)


def test_sklearn_wrappers_and_from_object():
    clf = xgb.XGBClassifier(n_estimators=5, max_depth=3).fit(XM, YM)
    for fmt in ("json", "ubj"):
        path_model = read_xgboost(bytes(clf.get_booster().save_raw(fmt)))
        np.testing.assert_allclose(path_model.predict_proba(XM), clf.predict_proba(XM), rtol=1e-6, atol=1e-7)
    obj = xgboost_from_object(clf)
    np.testing.assert_array_equal(obj.classes_, clf.classes_)
    np.testing.assert_array_equal(obj.predict(XM), clf.predict(XM))
    reg = xgb.XGBRegressor(n_estimators=5).fit(XR, YR)
    np.testing.assert_allclose(xgboost_from_object(reg.get_booster()).predict(XR), reg.predict(XR), rtol=1e-6)
    with pytest.raises(InvalidModelError, match="not an XGBoost model"):
        xgboost_from_object(object())


def test_early_stopping(tmp_path):
    X, y = XR[:160], YR[:160]
    reg = xgb.XGBRegressor(n_estimators=60, early_stopping_rounds=3, learning_rate=0.9, max_depth=3)
    reg.fit(X, y, eval_set=[(XR[160:], YR[160:])], verbose=False)
    booster = reg.get_booster()
    assert booster.best_iteration + 1 < booster.num_boosted_rounds()
    reg.save_model(tmp_path / "m.json")
    model = read_xgboost((tmp_path / "m.json").read_bytes(), name="m.json")
    # the wrapper's file: read as XGBRegressor.load_model(file).predict predicts (best rounds only)
    again = xgb.XGBRegressor()
    again.load_model(tmp_path / "m.json")
    np.testing.assert_allclose(model.predict(XR), again.predict(XR), rtol=1e-6, atol=1e-6)
    assert any("best_iteration" in n for n in model.notes)
    # a plain Booster's file: all rounds, as Booster.predict
    raw = xgb.train({"max_depth": 3, "eta": 0.9}, xgb.DMatrix(X, y), 60, evals=[(xgb.DMatrix(XR[160:], YR[160:]), "v")],
                    early_stopping_rounds=3, verbose_eval=False)
    model = read_xgboost(bytes(raw.save_raw("ubj")))
    np.testing.assert_allclose(model.predict(XR), raw.predict(xgb.DMatrix(XR)), rtol=1e-6, atol=1e-6)
    assert any("Booster.predict" in n for n in model.notes)


# ------------------------------------------------------------- refusals
def test_refusals():
    X, y = XR[:100], YR[:100]
    lin = xgb.train({"booster": "gblinear"}, xgb.DMatrix(X, y), 2)
    with pytest.raises(InvalidModelError, match="gblinear"):
        read_xgboost(bytes(lin.save_raw("json")))
    multi = xgb.XGBRegressor(n_estimators=2, multi_strategy="multi_output_tree", tree_method="hist")
    multi.fit(X, np.column_stack([y, 2 * y]))
    with pytest.raises(InvalidModelError, match="targets"):
        read_xgboost(bytes(multi.get_booster().save_raw("ubj")))
    hinge = xgb.train({"objective": "binary:hinge"}, xgb.DMatrix(XC[:100], YC[:100]), 2)
    with pytest.raises(InvalidModelError, match="binary:hinge"):
        read_xgboost(bytes(hinge.save_raw("json")))
    doc = decode_ubjson(bytes(_train({}, X, y, 1).save_raw("ubj")))
    doc["learner"]["gradient_booster"]["name"] = "mystery"
    with pytest.raises(InvalidModelError, match="mystery"):
        read_xgboost(F.ubj_dumps(doc))
    doc = decode_ubjson(bytes(_train({}, X, y, 1).save_raw("ubj")))
    F.first_tree(doc)["tree_param"]["size_leaf_vector"] = "2"
    with pytest.raises(InvalidModelError, match="multi-target"):
        read_xgboost(F.to_json(doc))


# --------------------------------------------------------- hostile files
@pytest.fixture(scope="module")
def plain_doc():
    b = _train({"objective": "reg:squarederror"}, XR, YR, 2)
    return decode_ubjson(bytes(b.save_raw("ubj")))


def _refused_cheaply(data, name=""):
    """Refused, from what the file says: no more memory than the file's own bytes account for,
    whatever it claims (10**12 elements, a billion nodes, 100,000 levels of nesting)."""
    with peak_allocation() as mem, pytest.raises(InvalidModelError):
        read_xgboost(data, name=name)
    assert mem.peak < file_budget(data), (mem, len(data))


@pytest.mark.parametrize("fmt", ["json", "ubj"])
@pytest.mark.parametrize("kind", F.DAMAGE)
def test_damaged_files_refused(plain_doc, kind, fmt):
    doc = F.damaged(plain_doc, kind)
    data = F.to_json(doc) if fmt == "json" else F.ubj_dumps(doc)
    _refused_cheaply(data, f"m.{fmt}")


def test_cycle_message(plain_doc):
    doc = F.damaged(plain_doc, "cycle_to_root")
    with pytest.raises(InvalidModelError, match="cycle"):
        read_xgboost(F.ubj_dumps(doc))


def test_hostile_bytes(plain_doc):
    good = F.ubj_dumps(plain_doc)
    read_xgboost(good)  # the re-encoded document itself is fine
    for cut in (1, 9, 40, len(good) // 3, len(good) // 2, len(good) - 1):
        _refused_cheaply(good[:cut], "m.ubj")
    _refused_cheaply(F.to_json(plain_doc)[:-5], "m.json")
    _refused_cheaply(F.huge_count_ubj())
    _refused_cheaply(F.huge_count_untyped_ubj())
    _refused_cheaply(F.deep_json(10_000))
    _refused_cheaply(F.deep_ubj(10_000))
    _refused_cheaply(F.deep_json(100_000), "m.json")
    _refused_cheaply(b"")
    _refused_cheaply(b"\x00\x01garbage")
    _refused_cheaply(b"{" + b"\xff" * 50)
    _refused_cheaply(b'{"learner": 5}')
    _refused_cheaply(b"[1, 2, 3]")
    _refused_cheaply(good + b"trailing")
    with pytest.raises(InvalidModelError):
        read_xgboost("not bytes")


def test_fractional_child_index_is_refused_not_truncated(plain_doc):
    """A child index 1.5 was cut to 1 without a word (issue #28): a file that is not what
    XGBoost wrote is refused, naming the field."""
    import copy

    doc = copy.deepcopy(plain_doc)
    tree = F.first_tree(doc)
    kids = [int(v) for v in tree["left_children"]]
    kids[0] = kids[0] + 0.5
    tree["left_children"] = kids
    with pytest.raises(InvalidModelError, match="left_children holds numbers that are not integers"):
        read_xgboost(F.to_json(doc))
