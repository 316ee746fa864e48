"""refit_data (issue #31): checking a table already read against a model gives what reading
the file again with the model gives, so a large file is read once."""
import io

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

from explainers import load_data
from explainers.errors import InvalidDataError
from explainers.io.data import refit_data


@pytest.fixture
def fitted():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=60), "b": rng.normal(size=60), "c": rng.normal(size=60)})
    y = np.where(X.a + X.b > 0, "yes", "no")
    return LogisticRegression().fit(X, y), X, y


def _csv(frame) -> bytes:
    buf = io.StringIO()
    frame.to_csv(buf, index=False)
    return buf.getvalue().encode()


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_refit_equals_a_second_read(fitted, fmt):
    model, X, y = fitted
    frame = X.assign(extra="x", target=y)[["target", "c", "extra", "a", "b"]]  # other order, an extra column
    frame.loc[3, "target"] = None  # an empty target cell
    if fmt == "csv":
        data, name = _csv(frame), "d.csv"
    else:
        buf = io.BytesIO()
        frame.to_parquet(buf)
        data, name = buf.getvalue(), "d.parquet"
    direct = load_data(data, model=model, target="target", filename=name)
    plain = load_data(data, target="target", filename=name)
    again = refit_data(plain, model, "target")
    pd.testing.assert_frame_equal(again.X, direct.X)
    pd.testing.assert_series_equal(again.y, direct.y)
    assert again.notices == direct.notices and again.fingerprint == direct.fingerprint
    assert list(again.X.columns) == ["a", "b", "c"]
    assert plain.X.shape[1] == 4  # the plain read is left as it was


def test_refit_refuses_what_a_second_read_refuses(fitted):
    model, X, y = fitted
    bad = X.assign(target=y).astype({"b": object})
    bad.loc[5, "b"] = "twelve"
    data = _csv(bad)
    with pytest.raises(InvalidDataError) as direct:
        load_data(data, model=model, target="target", filename="d.csv")
    with pytest.raises(InvalidDataError) as again:
        refit_data(load_data(data, target="target", filename="d.csv"), model, "target")
    assert str(again.value) == str(direct.value)
    # a target that is one of the model's features: the same message
    data = _csv(X.assign(t=y))
    with pytest.raises(InvalidDataError) as direct:
        load_data(data, model=model, target="a", filename="d.csv")
    with pytest.raises(InvalidDataError) as again:
        refit_data(load_data(data, target="a", filename="d.csv"), model, "a")
    assert str(again.value) == str(direct.value)


def test_numeric_columns_are_kept_as_read_not_copied():
    """Columns the model reads that are numbers already: the frame itself, no second copy of every
    column (a million rows of 28 numbers: 224 MB); a converted column makes a new frame."""
    from explainers.io.data import _coerce_numeric

    frame = pd.DataFrame({"a": np.arange(5.0), "b": np.arange(5), "c": [1.0, np.nan, 3.0, 4.0, 5.0]})
    notices = []
    assert _coerce_numeric(frame, set(), notices) is frame
    assert notices == ["Column 'c' is empty in 1 row(s); the model receives those cells empty (SHAP and What-if "
                       "can treat empty cells as missing features instead)."]
    texts = frame.assign(b=["1", "2", "3", "4", "5"])
    out = _coerce_numeric(texts, set(), [])
    assert out is not texts and out["b"].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert texts["b"].tolist() == ["1", "2", "3", "4", "5"]  # the caller's frame unchanged
