"""Segments: rules select exactly the rows they state, tokens survive the URL (and hostile
ones are refused), and the error tree finds a planted failure region in the original columns."""
import base64
import json
import re

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.linear_model import LinearRegression, LogisticRegression

from explainers import ExplainerError, InvalidDataError, InvalidFeatureError
from explainers import segments
from explainers.segments import _conditions as segment_conditions
from explainers.segments import (
    MAX_TOKEN_CHARS,
    Categories,
    Empty,
    ErrorBand,
    PredictedClass,
    ProposedSegment,
    Range,
    Segment,
    _error_tree,
    propose_segments,
    row_errors,
    split_rows,
    too_small,
)

FEE = "Monthly fee ($)"


@pytest.fixture(scope="module")
def table():
    """A customer table as uploads look: text with empty cells (new string dtype and plain
    objects), a pandas category with an empty cell, numbers with empty cells, a nullable
    integer, a boolean, and a column name with spaces and symbols."""
    rng = np.random.default_rng(7)
    n = 200
    X = pd.DataFrame({
        "age": rng.integers(18, 90, n).astype(float),
        FEE: rng.normal(50, 12, n).round(2),
        "town": pd.Series(rng.choice(["Seoul", "Busan", "Daegu", "Incheon"], n), dtype="str"),
        "plan": pd.Series(rng.choice(["basic", "plus", "max"], n), dtype=object),
        "contract": pd.Categorical(rng.choice(["monthly", "yearly", "two-year"], n)),
        "rooms": pd.array(rng.integers(1, 6, n), dtype="Int64"),
        "paperless": rng.random(n) < 0.4,
    })
    X.loc[::9, "age"] = np.nan
    X.loc[3::11, FEE] = np.nan
    X.loc[5::7, "town"] = np.nan
    X.loc[2::13, "plan"] = None
    X.loc[4::10, "contract"] = np.nan
    X.loc[6::8, "rooms"] = pd.NA
    return X


def _b(series) -> np.ndarray:
    """A pandas boolean expression as a plain bool array (an empty comparison is False)."""
    return series.fillna(False).to_numpy(dtype=bool)


MASK_CASES = [
    ([Range("age", lo=40)], lambda X: X["age"] >= 40),
    ([Range("age", 40, 60, include_empty=True)],
     lambda X: ((X["age"] >= 40) & (X["age"] < 60)) | X["age"].isna()),
    ([Range(FEE, hi=55.5)], lambda X: X[FEE] < 55.5),
    ([Range(FEE, lo=40.25, hi=55.5)], lambda X: (X[FEE] >= 40.25) & (X[FEE] < 55.5)),
    ([Categories("town", {"Busan", "Daegu"})], lambda X: X["town"].isin(["Busan", "Daegu"])),
    ([Categories("town", ["Busan"], include_empty=True)], lambda X: (X["town"] == "Busan") | X["town"].isna()),
    ([Categories("contract", {"monthly", "two-year"})], lambda X: X["contract"].isin(["monthly", "two-year"])),
    ([Categories("contract", {"yearly"}, include_empty=True)],
     lambda X: (X["contract"] == "yearly") | X["contract"].isna()),
    ([Categories("plan", {"basic"})], lambda X: X["plan"] == "basic"),
    ([Categories("paperless", {True})], lambda X: X["paperless"]),
    ([Range("rooms", 2, 4)], lambda X: (X["rooms"] >= 2) & (X["rooms"] < 4)),
    ([Categories("rooms", {1, 5})], lambda X: X["rooms"].isin([1, 5])),
    ([Empty("town")], lambda X: X["town"].isna()),
    ([Empty("age", empty=False)], lambda X: X["age"].notna()),
    ([Empty("contract")], lambda X: X["contract"].isna()),
    ([Range("age", lo=40), Categories("town", {"Busan", "Daegu"}), Range(FEE, hi=60)],
     lambda X: (X["age"] >= 40) & X["town"].isin(["Busan", "Daegu"]) & (X[FEE] < 60)),
    ([], lambda X: pd.Series(True, index=X.index)),
]


@pytest.mark.parametrize("conditions, expected", MASK_CASES)
def test_mask_matches_pandas_expression(table, conditions, expected):
    mask = Segment("s", conditions).mask(None, table)
    want = _b(expected(table))
    assert mask.dtype == bool and mask.shape == (len(table),)
    np.testing.assert_array_equal(mask, want)
    assert 0 < want.sum() < len(table) or not conditions  # the case is not vacuous


def test_empty_cells_never_match_unless_asked(table):
    empty_age = table["age"].isna().to_numpy()
    assert not Segment("s", [Range("age", lo=-1e9)]).mask(None, table)[empty_age].any()
    assert Segment("s", [Range("age", lo=-1e9, include_empty=True)]).mask(None, table)[empty_age].all()
    empty_town = table["town"].isna().to_numpy()
    every_town = {"Seoul", "Busan", "Daegu", "Incheon"}
    assert not Segment("s", [Categories("town", every_town)]).mask(None, table)[empty_town].any()


def test_describe_reads_as_a_rule():
    seg = Segment("Older, south-east", [Range("age", lo=40), Categories("town", {"Daegu", "Busan"})])
    assert seg.describe() == "age ≥ 40 and town in {Busan, Daegu}"
    assert Range(FEE, 40.5, 60).describe() == "40.5 ≤ Monthly fee ($) < 60"
    assert Range("age", hi=30, include_empty=True).describe() == "age < 30 (or empty)"
    assert Categories("town", {"Busan"}).describe() == "town = Busan"
    assert Empty("age").describe() == "age is empty"
    assert Empty("age", False).describe() == "age is not empty"
    assert PredictedClass({"yes"}).describe() == "predicted class = yes"
    assert ErrorBand(0.5).describe() == "error ≥ 0.5"
    assert ErrorBand(1, 5, error="absolute").describe() == "1 ≤ absolute error < 5"
    assert Segment("all", []).describe() == "all rows"


def test_mask_takes_arrays_with_the_models_names():
    X = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [0.0, 1.0, 0.0, 1.0]})
    model = LinearRegression().fit(X, [1, 2, 3, 4])
    mask = Segment("s", [Range("a", lo=2.5)]).mask(model, X.to_numpy())
    np.testing.assert_array_equal(mask, [False, False, True, True])


# ------------------------------------------------------------ model conditions
@pytest.fixture(scope="module")
def classified():
    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.normal(size=(150, 2)), columns=["a", "b c"])
    y = pd.Series(np.where(X["a"] + 0.8 * rng.normal(size=150) > 0, "yes", "no"), dtype=object)
    model = LogisticRegression().fit(X, y)
    y_gaps = y.copy()
    y_gaps[::10] = None
    return model, X, y, y_gaps


def test_predicted_class_and_error_bands_by_hand(classified):
    model, X, y, y_gaps = classified
    np.testing.assert_array_equal(Segment("s", [PredictedClass({"yes"})]).mask(model, X),
                                  model.predict(X) == "yes")
    proba = model.predict_proba(X)
    p_true = proba[np.arange(len(y)), np.searchsorted(model.classes_, y)]
    err = 1 - p_true
    np.testing.assert_allclose(row_errors(model, X, y), err)
    np.testing.assert_array_equal(Segment("s", [ErrorBand(0.5)]).mask(model, X, y), err >= 0.5)
    np.testing.assert_array_equal(Segment("s", [ErrorBand(0.2, 0.6)]).mask(model, X, y), (err >= 0.2) & (err < 0.6))
    wrong = model.predict(X) != y.to_numpy()
    assert 0 < wrong.sum() < len(y)
    np.testing.assert_array_equal(Segment("s", [ErrorBand(1, error="misclassified")]).mask(model, X, y), wrong)
    # an empty target: that row has no error and never matches a band
    gaps = y_gaps.isna().to_numpy()
    both = Segment("s", [ErrorBand(0.0), PredictedClass({"no", "yes"})]).mask(model, X, y_gaps)
    np.testing.assert_array_equal(both, ~gaps)
    assert np.isnan(row_errors(model, X, y_gaps)[gaps]).all()


def test_regression_error_band_is_absolute_error():
    rng = np.random.default_rng(4)
    X = pd.DataFrame(rng.normal(size=(80, 2)), columns=["x", FEE])
    y = X["x"] * 3 + rng.normal(size=80)
    model = LinearRegression().fit(X, y)
    err = np.abs(y.to_numpy() - model.predict(X))
    np.testing.assert_allclose(row_errors(model, X, y), err)
    np.testing.assert_array_equal(Segment("s", [ErrorBand(hi=0.5)]).mask(model, X, y), err < 0.5)


@pytest.mark.parametrize("conditions, y, err, match", [
    ([Range("town", lo=1)], None, InvalidFeatureError, "numeric column.*categories"),
    ([Categories("nope", {"a"})], None, InvalidFeatureError, "does not have"),
    ([ErrorBand(0.5)], None, InvalidDataError, "needs the target"),
    ([PredictedClass({"maybe"})], None, ExplainerError, "does not have"),
])
def test_mask_errors(classified, table, conditions, y, err, match):
    model, X, _, _ = classified
    frame = table if isinstance(conditions[0], Range) else X
    with pytest.raises(err, match=match):
        Segment("s", conditions).mask(model, frame, y)


def test_model_conditions_need_a_fitting_model(table):
    with pytest.raises(ExplainerError, match="needs the model"):
        Segment("s", [PredictedClass({"yes"})]).mask(None, table)
    X = pd.DataFrame({"a": [1.0, 2.0, 3.0]})
    with pytest.raises(ExplainerError, match="needs a classifier"):
        Segment("s", [PredictedClass({1})]).mask(LinearRegression().fit(X, [1, 2, 3]), X)


@pytest.mark.parametrize("make, match", [
    (lambda: Range("age"), "lo, hi or both"),
    (lambda: Range("age", 5, 5), "lo < hi"),
    (lambda: Range("age", float("nan")), "finite"),
    (lambda: Range("age", hi=float("inf")), "finite"),
    (lambda: Range("age", lo="3"), "finite number"),
    (lambda: Range("age", lo=True), "finite number"),
    (lambda: Categories("town", []), "at least one"),
    (lambda: Categories("town", "Busan"), "collection"),
    (lambda: Categories("town", {None}), "include_empty"),
    (lambda: Categories("town", [float("nan")]), "include_empty"),
    (lambda: Categories("town", [object()]), "text, numbers"),
    (lambda: ErrorBand(0.5, error="squared"), "'error' parameter of ErrorBand"),
    (lambda: Segment("", []), "segment name"),
    (lambda: Segment("s", ["age > 3"]), "Range, Categories"),
    (lambda: Segment("s", "age > 3"), "list of Range"),
])
def test_conditions_are_checked_when_made(make, match):
    with pytest.raises(ExplainerError, match=match):
        make()


# ------------------------------------------------------------------------ tokens
ROUND_TRIP = [
    Segment("Older", [Range("age", lo=40)]),
    Segment("Band", [Range(FEE, 40.25, 55.5, include_empty=True)]),
    Segment("Low", [Range("age", hi=-3.5)]),
    Segment("Towns · 서울", [Categories("town", {"Busan", "Daegu", "Seoul, \"old\" {town}"}, include_empty=True)]),
    Segment("Mixed values", [Categories("rooms", {1, 2.5, True, "3"})]),
    Segment("Gaps", [Empty("age"), Empty("town", empty=False)]),
    Segment("Predicted", [PredictedClass({"yes"}), PredictedClass({0, 1})]),
    Segment("Errors", [ErrorBand(0.5), ErrorBand(1, 10, error="absolute"), ErrorBand(hi=1, error="misclassified"),
                       ErrorBand(0.1, error="proba")]),
    Segment("Everyone", []),
]


@pytest.mark.parametrize("seg", ROUND_TRIP, ids=lambda s: s.name)
def test_token_round_trip(seg):
    token = seg.to_token()
    assert re.fullmatch(r"[A-Za-z0-9_-]+", token)
    back = Segment.from_token(token)
    assert back == seg
    assert back.describe() == seg.describe()
    assert back.to_token() == token
    assert hash(back) == hash(seg)


def test_token_is_canonical_and_masks_survive(table):
    a = Segment("s", [Categories("town", ["Daegu", "Busan", "Busan"]), Range("age", np.int64(40), np.float32(70))])
    b = Segment("s", [Categories("town", {"Busan", "Daegu"}), Range("age", 40.0, 70.0)])
    assert a.to_token() == b.to_token() == a.key
    np.testing.assert_array_equal(Segment.from_token(a.to_token()).mask(None, table), a.mask(None, table))


def test_overlong_segment_is_refused_when_serialised():
    seg = Segment("big", [Categories("town", {f"town number {i:05d} with a long name" for i in range(400)})])
    with pytest.raises(ExplainerError, match="too long to keep in the URL"):
        seg.to_token()


def _tok(obj) -> str:
    text = obj if isinstance(obj, str) else json.dumps(obj)
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _cond(**kw):
    return {"v": 1, "n": "s", "c": [kw]}


HOSTILE = {
    "empty": "",
    "not base64": "!!!not a token!!!",
    "padding": "a",
    "bytes": b"eyJ2IjoxfQ",
    "none": None,
    "int": 12345,
    "huge": "A" * 10_000_000,
    "just over": "A" * (MAX_TOKEN_CHARS + 1),
    "bad utf8": base64.urlsafe_b64encode(b"\xff\xfe\xfd\xfc").decode(),
    "not json": _tok("this is not json"),
    "python": _tok("__import__('os').system('echo hacked')"),
    "pickle": base64.urlsafe_b64encode(b"\x80\x04\x95cos\nsystem\n").decode().rstrip("="),
    "list": _tok([1, 2, 3]),
    "string": _tok('"segment"'),
    "no fields": _tok({}),
    "extra field": _tok({"v": 1, "n": "s", "c": [], "x": 1}),
    "version 2": _tok({"v": 2, "n": "s", "c": []}),
    "version true": _tok({"v": True, "n": "s", "c": []}),
    "name number": _tok({"v": 1, "n": 5, "c": []}),
    "name empty": _tok({"v": 1, "n": "", "c": []}),
    "name long": _tok({"v": 1, "n": "x" * 500, "c": []}),
    "conditions dict": _tok({"v": 1, "n": "s", "c": {"k": "range"}}),
    "condition list": _tok({"v": 1, "n": "s", "c": [["range", "age", 1, 2]]}),
    "unknown kind": _tok(_cond(k="eval", f="age", x="1+1")),
    "kind number": _tok(_cond(k=3, f="age")),
    "range no kind fields": _tok(_cond(k="range", f="age")),
    "range extra": _tok(_cond(k="range", f="age", lo=1, hi=2, m=False, code="x")),
    "NaN bound": _tok('{"v":1,"n":"s","c":[{"k":"range","f":"age","lo":NaN,"hi":null,"m":false}]}'),
    "Infinity bound": _tok('{"v":1,"n":"s","c":[{"k":"range","f":"age","lo":Infinity,"hi":null,"m":false}]}'),
    "-Infinity bound": _tok('{"v":1,"n":"s","c":[{"k":"error","lo":-Infinity,"hi":null,"e":"auto"}]}'),
    "1e999 bound": _tok('{"v":1,"n":"s","c":[{"k":"range","f":"age","lo":1e999,"hi":null,"m":false}]}'),
    "huge int bound": _tok('{"v":1,"n":"s","c":[{"k":"range","f":"age","lo":' + "9" * 4000 + ',"hi":null,"m":false}]}'),
    "300 digit bound": _tok('{"v":1,"n":"s","c":[{"k":"range","f":"age","lo":' + "9" * 400 + ',"hi":null,"m":false}]}'),
    "string bound": _tok(_cond(k="range", f="age", lo="40", hi=None, m=False)),
    "bool bound": _tok(_cond(k="range", f="age", lo=True, hi=None, m=False)),
    "both open": _tok(_cond(k="range", f="age", lo=None, hi=None, m=False)),
    "lo above hi": _tok(_cond(k="range", f="age", lo=5, hi=1, m=False)),
    "flag string": _tok(_cond(k="range", f="age", lo=1, hi=None, m="yes")),
    "feature number": _tok(_cond(k="range", f=1, lo=1, hi=None, m=False)),
    "feature list": _tok(_cond(k="in", f=["age"], v=["a"], m=False)),
    "values string": _tok(_cond(k="in", f="town", v="Busan", m=False)),
    "values empty": _tok(_cond(k="in", f="town", v=[], m=False)),
    "values null": _tok(_cond(k="in", f="town", v=[None], m=False)),
    "values dict": _tok(_cond(k="in", f="town", v=[{"a": 1}], m=False)),
    "values nested": _tok(_cond(k="in", f="town", v=[[1]], m=False)),
    "values big int": _tok(_cond(k="pred", v=[2 ** 80])),
    "values too many": _tok(_cond(k="in", f="t", v=list(range(1500)), m=False)),
    "error kind": _tok(_cond(k="error", lo=0.5, hi=None, e="exec")),
    "empty flag": _tok(_cond(k="empty", f="age", e=1)),
    "too many conditions": _tok({"v": 1, "n": "s", "c": [{"k": "empty", "f": "a", "e": True}] * 60}),
    "deep list": _tok("[" * 3000 + "]" * 3000),
    "deep dict": _tok('{"a":' * 1500 + "1" + "}" * 1500),
    "deep in values": _tok('{"v":1,"n":"s","c":[{"k":"in","f":"t","v":' + "[" * 2000 + "]" * 2000 + ',"m":false}]}'),
    "unbalanced": _tok('{"v":1,"n":"s","c":[[[[[[[['),
}


@pytest.mark.parametrize("token", list(HOSTILE.values()), ids=list(HOSTILE))
def test_hostile_tokens_raise_explainer_error_cheaply(token, monkeypatch):
    """Refused with bounded work: the JSON parser sees at most MAX_TOKEN_CHARS of text, never
    nested deeper than a segment is (so it cannot recurse), and at most MAX_CONDITIONS
    conditions are read."""
    parsed, conditions = [], []
    real_loads, real_condition = json.loads, segments._condition_from_json

    def loads_spy(text, *a, **k):
        parsed.append(text)
        return real_loads(text, *a, **k)

    def condition_spy(obj, i):
        conditions.append(i)
        return real_condition(obj, i)

    # patched where the token parser looks them up (the package only re-exports them)
    monkeypatch.setattr(segment_conditions.json, "loads", loads_spy)
    monkeypatch.setattr(segment_conditions, "_condition_from_json", condition_spy)
    with pytest.raises(ExplainerError, match="The segment in the link cannot be read"):
        Segment.from_token(token)
    monkeypatch.undo()
    assert len(parsed) <= 1
    for text in parsed:
        assert len(text) <= MAX_TOKEN_CHARS
        assert segments._json_depth(text) <= segments._MAX_JSON_DEPTH
    assert len(conditions) <= segments.MAX_CONDITIONS


def test_mutated_tokens_never_raise_another_error():
    rng = np.random.default_rng(0)
    good = ROUND_TRIP[3].to_token()
    alphabet = np.array(list("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"))
    raw = json.dumps({"v": 1, "n": "s", "c": [c._to_json() for c in ROUND_TRIP[7].conditions]})
    for i in range(1500):
        if i % 2:
            chars = np.array(list(good))
            pos = rng.integers(0, len(chars), rng.integers(1, 4))
            chars[pos] = rng.choice(alphabet, len(pos))
            token = "".join(chars)
        else:  # mutate the JSON itself, then encode it
            chars = list(raw)
            for p in rng.integers(0, len(chars), rng.integers(1, 4)):
                chars[p] = rng.choice(list('{}[]",:0123456789.-eEtruefalsnNI '))
            token = _tok("".join(chars))
        try:
            seg = Segment.from_token(token)
        except ExplainerError:
            continue
        assert isinstance(seg, Segment)


# --------------------------------------------------------------------- comparing
def test_split_rows_and_too_small(table):
    mask = Segment("s", [Range("age", lo=40)]).mask(None, table)
    inside, rest = split_rows(table, mask)
    pd.testing.assert_frame_equal(inside, table[mask])
    pd.testing.assert_frame_equal(rest, table[~mask])
    a, b = split_rows(table["age"].to_numpy(), mask)
    assert len(a) == mask.sum() and len(b) == (~mask).sum()
    assert too_small(mask) is None
    seven = np.zeros(100, dtype=bool)
    seven[:7] = True
    assert too_small(seven) == "The segment has 7 rows; at least 20 are needed to compare it with the rest."
    assert too_small(seven, min_rows=5) is None
    assert too_small(~seven, min_rows=10) == (
        "The rest (the rows outside the segment) has 7 rows; at least 10 are needed to compare the segment with it.")
    one = np.zeros(30, dtype=bool)
    one[0] = True
    assert too_small(one).startswith("The segment has 1 row;")
    with pytest.raises(ExplainerError, match="1-D array of True/False"):
        too_small([0, 1, 1])
    with pytest.raises(ExplainerError, match="has 3 values but the data has"):
        split_rows(table, np.ones(3, dtype=bool))
    with pytest.raises(ExplainerError, match="'min_rows' parameter of too_small"):
        too_small(seven, min_rows=0)


# ------------------------------------------------------------------ proposals
def _planted_frame(n=900, seed=0, region_dtype="str", age_gaps=False):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({
        "age": rng.integers(18, 90, n).astype(float),
        "region": pd.Series(rng.choice(["north", "south", "east", "west"], n), dtype=region_dtype),
        FEE: rng.normal(50, 10, n).round(2),
        "plan": pd.Series(rng.choice(["basic", "plus"], n), dtype=object),
    })
    X.loc[::17, FEE] = np.nan
    X.loc[3::23, "plan"] = None
    if age_gaps:
        X.loc[::15, "age"] = np.nan
    return X


def _bad(X, gaps_bad=False) -> np.ndarray:
    age_bad = X["age"] > 50
    if gaps_bad:
        age_bad = age_bad | X["age"].isna()
    return ((X["region"] == "north") & age_bad).fillna(False).to_numpy(dtype=bool)


class PlantedRegressor(RegressorMixin, BaseEstimator):
    """Exactly right everywhere except where region == 'north' and age > 50: off by 10 there."""

    def __init__(self, gaps_bad=False):
        self.gaps_bad = gaps_bad

    def fit(self, X, y):
        self.feature_names_in_ = np.asarray(X.columns, dtype=object)
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X):
        X = pd.DataFrame(X, columns=self.feature_names_in_)
        return _truth(X) + 10.0 * _bad(X, self.gaps_bad)


class PlantedClassifier(ClassifierMixin, BaseEstimator):
    """Predicts the true class, sure of it, except in the planted region, where it is sure of the other."""

    def fit(self, X, y):
        self.feature_names_in_ = np.asarray(X.columns, dtype=object)
        self.n_features_in_ = X.shape[1]
        self.classes_ = np.array(["churn", "stay"], dtype=object)
        return self

    def predict_proba(self, X):
        X = pd.DataFrame(X, columns=self.feature_names_in_)
        truth = _truth(X) > 100
        said = truth ^ _bad(X)
        p = np.where(said, 0.9, 0.1)
        return np.column_stack([1 - p, p])

    def predict(self, X):
        return self.classes_[(self.predict_proba(X)[:, 1] > 0.5).astype(int)]


def _truth(X) -> np.ndarray:
    return (X[FEE].fillna(50) * 2).to_numpy()


def _age_rule(cond) -> bool:
    return isinstance(cond, Range) and cond.feature == "age" and cond.hi is None and 50 < cond.lo <= 51


@pytest.mark.parametrize("region_dtype", ["str", "category", object])
def test_proposal_finds_the_planted_region_in_original_columns(region_dtype):
    X = _planted_frame(region_dtype=region_dtype)
    y = _truth(X)
    model = PlantedRegressor().fit(X, y)
    found = propose_segments(model, X, y)
    assert found and all(isinstance(p, ProposedSegment) for p in found)
    top = found[0]
    conds = {type(c).__name__: c for c in top.segment.conditions}
    assert len(top.segment.conditions) == 2
    assert conds["Categories"] == Categories("region", {"north"})
    assert _age_rule(conds["Range"]) and not conds["Range"].include_empty
    assert top.rule in ("region = north and age ≥ 51", "region = north and age ≥ 50.5")
    np.testing.assert_array_equal(top.segment.mask(model, X), _bad(X))
    assert top.n_rows == _bad(X).sum() and top.rest_n_rows == len(X) - top.n_rows
    assert top.mean_error == pytest.approx(10.0) and top.rest_mean_error == pytest.approx(0.0)
    assert top.error == "absolute" and top.segment.name == "Error segment 1"
    assert [p.mean_error for p in found] == sorted((p.mean_error for p in found), reverse=True)
    assert all(p.n_rows >= 30 for p in found)


def test_proposal_states_empty_cells_where_they_went():
    X = _planted_frame(age_gaps=True)
    y = _truth(X)
    model = PlantedRegressor(gaps_bad=True).fit(X, y)
    top = propose_segments(model, X, y)[0]
    age = [c for c in top.segment.conditions if getattr(c, "feature", None) == "age"][0]
    assert _age_rule(age) and age.include_empty
    assert top.rule.endswith("(or empty)")
    np.testing.assert_array_equal(top.segment.mask(model, X), _bad(X, gaps_bad=True))
    assert top.mean_error == pytest.approx(10.0) and top.rest_mean_error == pytest.approx(0.0)


@pytest.mark.parametrize("error, expected_error, inside",
                         [("auto", "proba", 0.9), ("misclassified", "misclassified", 1.0)])
def test_proposal_for_a_classifier(error, expected_error, inside):
    X = _planted_frame(seed=1)
    y = np.where(_truth(X) > 100, "stay", "churn")
    model = PlantedClassifier().fit(X, y)
    top = propose_segments(model, X, y, error=error)[0]
    np.testing.assert_array_equal(top.segment.mask(model, X), _bad(X))
    assert top.error == expected_error
    assert top.mean_error == pytest.approx(inside)
    assert top.rest_mean_error == pytest.approx(inside - 0.8 if error == "auto" else 0.0)


def test_rules_reproduce_the_trees_leaves():
    """Every leaf's rule selects exactly the rows the fitted tree puts in that leaf."""
    rng = np.random.default_rng(5)
    X = _planted_frame(n=700, seed=2, age_gaps=True)
    y = _truth(X) + rng.normal(0, 3, len(X)) + 5 * (X["plan"] == "plus").to_numpy()
    model = PlantedRegressor(gaps_bad=True).fit(X, y)
    found = propose_segments(model, X, y, max_depth=4, min_rows=10, n=100)
    err = row_errors(model, X, y)
    tree, Z, *_ = _error_tree(X, err, max_depth=4, min_rows=10, max_levels=100, random_state=0)
    leaf_of_row = tree.apply(Z)
    assert sorted(p.leaf for p in found) == sorted(np.unique(leaf_of_row))  # n large: every leaf
    covered = np.zeros(len(X), dtype=int)
    for p in found:
        mask = p.segment.mask(model, X)
        np.testing.assert_array_equal(mask, leaf_of_row == p.leaf, err_msg=p.rule)
        assert p.n_rows == mask.sum()
        assert p.mean_error == pytest.approx(err[mask].mean())
        assert p.rest_mean_error == pytest.approx(err[~mask].mean())
        covered += mask
    assert (covered == 1).all()  # the leaves' rules partition the rows


def test_proposals_are_deterministic_and_round_trip():
    X = _planted_frame(seed=3)
    y = _truth(X)
    model = PlantedRegressor().fit(X, y)
    a = propose_segments(model, X, y, n=8)
    b = propose_segments(model, X, y, n=8)
    assert [p.segment.to_token() for p in a] == [p.segment.to_token() for p in b]
    assert [(p.n_rows, p.mean_error, p.leaf) for p in a] == [(p.n_rows, p.mean_error, p.leaf) for p in b]
    for p in a:
        back = Segment.from_token(p.segment.to_token())
        np.testing.assert_array_equal(back.mask(model, X), p.segment.mask(model, X))


def test_proposal_leaves_out_rows_without_a_target_and_small_leaves():
    X = _planted_frame(seed=4)
    y = pd.Series(_truth(X))
    y[::6] = np.nan
    model = PlantedRegressor().fit(X, _truth(X))
    found = propose_segments(model, X, y, min_rows=40)
    has_y = y.notna().to_numpy()
    assert all(p.n_rows >= 40 for p in found)
    top = found[0]
    assert top.n_rows == (_bad(X) & has_y).sum()
    assert top.n_rows + top.rest_n_rows == has_y.sum()
    assert propose_segments(model, X.iloc[:50], y.iloc[:50], min_rows=30) == []  # no split leaves 30 a side


def test_a_perfect_model_has_no_error_segments():
    """Errors that are only rounding noise give no segments (no rules carved from noise)."""
    X = _planted_frame(seed=5)[[FEE, "age"]].fillna(50)
    y = X[FEE] * 2 - X["age"] / 3
    model = LinearRegression().fit(X, y)
    assert 0 < row_errors(model, X, y).max() < 1e-9
    assert propose_segments(model, X, y) == []


@pytest.mark.parametrize("kwargs, match", [
    ({"max_depth": 0}, "'max_depth' parameter of propose_segments"),
    ({"max_depth": 20}, "'max_depth' parameter of propose_segments"),
    ({"min_rows": 0}, "'min_rows' parameter"),
    ({"n": 1.5}, "'n' parameter"),
    ({"error": "absolute-ish"}, "'error' parameter"),
    ({"error": "proba"}, "for classifiers"),
])
def test_proposal_parameter_errors(kwargs, match):
    X = _planted_frame(n=100)
    y = _truth(X)
    model = PlantedRegressor().fit(X, y)
    with pytest.raises(ExplainerError, match=match):
        propose_segments(model, X, y, **kwargs)


def test_proposal_needs_the_target():
    X = _planted_frame(n=100)
    model = PlantedRegressor().fit(X, _truth(X))
    with pytest.raises(InvalidDataError, match="needs the target"):
        propose_segments(model, X, None)


def test_segments_module_imports_no_dashboard_libraries():
    import subprocess
    import sys

    code = "import sys, explainers.segments; print('streamlit' in sys.modules or 'plotly' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
