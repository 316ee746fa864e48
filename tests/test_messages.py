"""Messages for their reader, and outputs that are never substituted (issue #16).

- ``output="raw"`` on a classifier with no raw output (no decision function, not a
  tree ensemble whose trees give probabilities) is an error naming what the model
  offers, never probabilities in its place;
- the command line's errors name its flags (``--trust-pickles``, ``--chunk-rows``),
  not the dashboard or a Python call;
- MDI says why an XGBoost-style model is refused without claiming it has no trees;
- the batch run reports progress within a chunk, not only when a chunk ends.
"""
import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestClassifier
from sklearn.neighbors import KNeighborsClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from explainers import ModelAdapter
from explainers.__main__ import cli_message, main
from explainers.errors import InvalidModelError, InvalidParameterError
from explainers.shap import explain
from tests._batch_models import SlowLinearRegressor


@pytest.fixture(scope="module")
def clf_data():
    rng = np.random.default_rng(11)
    X = pd.DataFrame(rng.normal(size=(120, 3)), columns=["a", "b", "c"])
    y = np.where(X.a - X.b > 0, "yes", "no")
    return X, y


# ----------------------------------------------------------- raw outputs
@pytest.mark.parametrize("make", [lambda: KNeighborsClassifier(),
                                  lambda: MLPClassifier(hidden_layer_sizes=(4,), max_iter=300, random_state=0),
                                  lambda: make_pipeline(StandardScaler(), KNeighborsClassifier())],
                         ids=["knn", "mlp", "knn_pipeline"])
def test_raw_output_that_does_not_exist_is_an_error(make, clf_data):
    X, y = clf_data
    with _quiet():
        model = make().fit(X, y)
    with pytest.raises(InvalidParameterError) as err:
        ModelAdapter(model, output="raw")
    msg = str(err.value)
    assert "output='raw'" in msg and "does not have" in msg
    assert "output='auto' (class probabilities)" in msg and "output='proba'" in msg and "output='log_odds'" in msg
    with pytest.raises(InvalidParameterError, match="output='raw'"):
        explain(model, X.iloc[:2], background=X.iloc[:20], output="raw")
    # what it does offer still works
    np.testing.assert_array_equal(ModelAdapter(model, output="proba").predict(X[:5]), model.predict_proba(X[:5]))


def test_outputs_that_exist_are_given_as_they_are(clf_data):
    X, y = clf_data
    svc = SVC().fit(X, y)
    np.testing.assert_array_equal(ModelAdapter(svc, output="raw").predict(X[:5]), svc.decision_function(X[:5]))
    with pytest.raises(InvalidParameterError, match=r"output='proba' needs predict_proba.*It offers: output='raw'"):
        ModelAdapter(svc, output="proba")
    # shap's TreeExplainer convention: a forest classifier's raw output is its trees' probabilities
    forest = RandomForestClassifier(10, random_state=0).fit(X, y)
    np.testing.assert_array_equal(ModelAdapter(forest, output="raw").predict(X[:5]), forest.predict_proba(X[:5]))


class _quiet:
    def __enter__(self):
        import warnings

        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc):
        return self._w.__exit__(*exc)


# -------------------------------------------------------------------- MDI
def test_mdi_of_another_librarys_trees_says_why_without_denying_them(clf_data):
    from explainers.importance import mdi

    XGBClassifier = type("XGBClassifier", (), {"__module__": "xgboost.sklearn",
                                                "predict": lambda self, X: np.zeros(len(X)),
                                                "fit": lambda self, X, y: self})
    with pytest.raises(InvalidModelError) as err:
        mdi(XGBClassifier())
    msg = str(err.value)
    assert "XGBClassifier" in msg and "has no trees" not in msg and "its own library's format" in msg
    assert "permutation_importance" in msg  # the Python API names the Python call


# --------------------------------------------------------- command line
@pytest.fixture(scope="module")
def files(tmp_path_factory, clf_data):
    d = tmp_path_factory.mktemp("cli_messages")
    X, y = clf_data
    with _quiet():
        knn = KNeighborsClassifier(algorithm="brute").fit(X, y)  # no KD tree: skops reads it
    joblib.dump(knn, d / "knn.joblib")
    import skops.io as sio

    sio.dump(knn, d / "knn.skops")
    X.to_csv(d / "rows.csv", index=False)
    slow = SlowLinearRegressor(delay=0.005).fit(X, X.a - 2 * X.b)
    joblib.dump(slow, d / "slow.joblib")
    X.to_parquet(d / "rows.parquet")
    return d


def _run(capsys, *args) -> tuple[int, str]:
    rc = main([str(a) for a in args])
    return rc, capsys.readouterr().err


def test_cli_pickle_refusal_names_the_flag_not_the_dashboard(files, capsys, tmp_path):
    rc, err = _run(capsys, "batch", "--model", files / "knn.joblib", "--data", files / "rows.csv",
                   "--out", tmp_path / "o", "--quiet")
    assert rc == 2
    assert "--trust-pickles" in err and "add --trust-pickles to this command" in err
    assert "dashboard" not in err and "operator" not in err


def test_cli_errors_name_flags_not_python(files, capsys, tmp_path):
    rc, err = _run(capsys, "batch", "--model", files / "knn.skops", "--data", files / "rows.csv",
                   "--out", tmp_path / "o1", "--chunk-rows", "1500", "--quiet")
    assert rc == 2 and "--chunk-rows must be a multiple of --block-rows 1000" in err, err
    assert "chunk_rows" not in err and "explain_file" not in err
    rc, err = _run(capsys, "batch", "--model", files / "knn.skops", "--data", files / "rows.csv",
                   "--out", tmp_path / "o2", "--output", "raw", "--quiet")
    assert rc == 2 and "--output raw" in err and "--output proba" in err, err
    assert "output='" not in err
    rc, err = _run(capsys, "batch", "--model", files / "knn.skops", "--data", files / "rows.csv",
                   "--out", tmp_path / "o3", "--method", "tree", "--quiet")
    assert rc == 2 and "--method exact or --method kernel" in err and "explain(" not in err, err


def test_cli_wording_of_python_advice():
    from explainers.errors import ExplainerError

    assert cli_message(ExplainerError("Fill the missing values, or use method='tree' (path-dependent), which "
                                      "needs no background.")).endswith("use --method tree (path-dependent), "
                                                                        "which needs no background.")


# -------------------------------------------------- progress within a chunk
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_batch_progress_moves_within_a_chunk(files, tmp_path, n_jobs):
    """One chunk of 120 rows: progress arrives as its blocks of rows finish, not only at its end."""
    from explainers.batch import explain_file

    events = []
    explain_file(files / "slow.joblib", files / "rows.parquet", tmp_path / "out", trusted=True, method="exact",
                 background=10, chunk_rows=120, block_rows=20, n_jobs=n_jobs, progress=events.append)
    inside = [e for e in events if e.chunks_done == 0 and 0 < e.done_rows < 120]
    assert inside, [(e.done_rows, e.chunks_done) for e in events]
    assert all(e.total_rows == 120 for e in events)
    done = [e.done_rows for e in events]
    assert done == sorted(done) and done[-1] == 120
    assert inside[0].rows_per_s > 0 and inside[0].eta_s is not None
