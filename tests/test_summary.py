"""explainers.summary: the features table against pandas' own definitions, threaded or not."""
import numpy as np
import pandas as pd
import pytest

from explainers.summary import distinct_count, feature_summary


def _table(n=400, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    x[rng.random(n) < 0.1] = np.nan
    z = np.round(rng.normal(size=n), 1)
    z[:3] = [0.0, -0.0, np.nan]  # 0.0 and -0.0 are one value
    return pd.DataFrame({
        "x": x, "z": z, "i": rng.integers(0, 7, n), "flag": rng.random(n) < 0.3,
        "f32": rng.random(n).astype(np.float32),
        "city": pd.Series(rng.choice(["a", "b", None], n), dtype=object),
        "cat": pd.Categorical(rng.choice(["lo", "hi"], n)),
        "empty": np.full(n, np.nan),
    })


@pytest.mark.parametrize("threads", [1, 3])
def test_every_cell_of_the_summary_is_pandas_definition(threads):
    X = _table()
    got = feature_summary(X, threads=threads).set_index("feature")
    assert list(got.index) == list(X.columns)
    for col in X.columns:
        s = X[col]
        numeric = pd.api.types.is_numeric_dtype(s)
        row = got.loc[col]
        assert row["type"] == ("numeric" if numeric else "categorical") and row["dtype"] == str(s.dtype)
        assert row["distinct"] == s.nunique(dropna=True) and row["missing"] == s.isna().sum()
        for stat in ("min", "max", "mean"):
            if not numeric:
                assert pd.isna(row[stat])
                continue
            want = float(getattr(s, stat)())
            assert row[stat] == want or (np.isnan(want) and np.isnan(row[stat]))


def test_threads_are_used_only_on_a_large_table_and_give_the_same_table(monkeypatch):
    import explainers.summary as summary

    seen = []
    real = summary.ThreadPoolExecutor

    class Counting(real):
        def __init__(self, max_workers=None, **kw):
            seen.append(max_workers)
            super().__init__(max_workers=max_workers, **kw)

    monkeypatch.setattr(summary, "ThreadPoolExecutor", Counting)
    small = _table(100)
    feature_summary(small)
    assert seen == []  # 800 cells: one thread
    big = _table(summary.THREADS_FROM_CELLS // 8 + 1, seed=3)
    threaded = feature_summary(big)
    assert len(seen) == 1 and seen[0] >= 1
    pd.testing.assert_frame_equal(threaded, feature_summary(big, threads=1))


def test_distinct_count_takes_empty_cells_off_once():
    assert distinct_count(pd.Series([1.0, np.nan, 1.0, np.nan, 2.0])) == 2
    assert distinct_count(pd.Series([np.nan, np.nan])) == 0
    assert distinct_count(pd.Series([0.0, -0.0])) == 1
    assert distinct_count(pd.Series([True, False, True])) == 2
