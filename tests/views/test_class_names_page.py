"""A classifier read from a boosting library's file keeps no class names (XGBoost's JSON): the
dashboard takes them from the target column when it holds as many values as the model has
classes, in sorted order (scikit-learn's LabelEncoder numbering), and says so."""
import numpy as np
import pandas as pd
import xgboost as xgb
from sklearn.preprocessing import LabelEncoder
from streamlit.testing.v1 import AppTest

from dashboard import state
from tests.views._app import APP


def _upload(model_bytes, name, csv, target) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180).run()
    at.file_uploader(key=state.MODEL_FILE).set_value((name, model_bytes, "application/json"))
    at.file_uploader(key=state.DATA_FILE).set_value(("loans.csv", csv, "text/csv"))
    at.run()
    at.selectbox(key=state.TARGET_COL).set_value(target).run()
    next(b for b in at.button if b.label == "Load model and data").click().run()
    assert not at.exception, at.exception
    return at


def _data(labels, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"income": rng.normal(50, 10, 300), "debt": rng.normal(10, 3, 300)})
    score = (X.income - 50) / 10 - (X.debt - 10) / 3 + rng.normal(0, 0.5, 300)
    cuts = np.quantile(score, np.linspace(0, 1, len(labels) + 1)[1:-1])
    y = np.asarray(labels, dtype=object)[np.searchsorted(cuts, score)]
    return X, y


def test_class_names_come_from_the_target_column(tmp_path):
    X, y = _data(["approved", "declined", "review"])
    enc = LabelEncoder().fit(y)  # sorted: approved 0, declined 1, review 2
    booster = xgb.XGBClassifier(n_estimators=20, max_depth=3, random_state=0, n_jobs=1).fit(X, enc.transform(y))
    booster.get_booster().save_model(tmp_path / "m.json")  # the booster's own file: no labels
    csv = X.assign(outcome=y).to_csv(index=False).encode()
    at = _upload((tmp_path / "m.json").read_bytes(), "m.json", csv, "outcome")
    text = " ".join(i.value for i in at.info) + " ".join(w.value for w in at.warning)
    assert "taken as those classes in sorted order" in text and "0 = 'approved'" in text, text
    assert "2 = 'review'" in text
    # the model's predictions are the target's labels now: the held-out accuracy the Model page
    # states is the library's own, on the labels
    want = (enc.inverse_transform(booster.predict(X)) == y).mean()
    score = " ".join(m.value for m in at.markdown)
    assert f"{want:.3f}" in score, score
    # the class picker offers the names
    assert set(at.sidebar.selectbox(key=state.CLASS_INDEX).options) >= {"approved", "declined", "review"}


def test_codes_in_the_target_are_left_as_they_are(tmp_path):
    X, y = _data(["a", "b"])
    codes = LabelEncoder().fit_transform(y)
    booster = xgb.XGBClassifier(n_estimators=10, max_depth=3, random_state=0, n_jobs=1).fit(X, codes)
    booster.get_booster().save_model(tmp_path / "m.json")
    at = _upload((tmp_path / "m.json").read_bytes(), "m.json", X.assign(y=codes).to_csv(index=False).encode(), "y")
    text = " ".join(i.value for i in at.info)
    assert "names no classes" not in text
    assert set(at.sidebar.selectbox(key=state.CLASS_INDEX).options) >= {"0", "1"}


def test_a_target_with_other_values_is_refused_with_the_models_classes(tmp_path):
    X, y = _data(["a", "b"])
    booster = xgb.XGBClassifier(n_estimators=10, max_depth=3, random_state=0, n_jobs=1).fit(
        X, LabelEncoder().fit_transform(y))
    booster.get_booster().save_model(tmp_path / "m.json")
    three = np.where(np.arange(len(y)) % 7 == 0, "c", y)  # 3 values for 2 classes: no naming
    at = AppTest.from_file(APP, default_timeout=180).run()
    at.file_uploader(key=state.MODEL_FILE).set_value(("m.json", (tmp_path / "m.json").read_bytes(), "application/json"))
    at.file_uploader(key=state.DATA_FILE).set_value(("d.csv", X.assign(y=three).to_csv(index=False).encode(), "text/csv"))
    at.run()
    at.selectbox(key=state.TARGET_COL).set_value("y").run()
    next(b for b in at.button if b.label == "Load model and data").click().run()
    assert not at.exception, at.exception
    errors = " ".join(e.value for e in at.error)
    assert "does not know" in errors and "classes are: 0, 1" in errors, errors


def test_the_user_names_the_classes_of_a_file_that_has_none(tmp_path):
    from sklearn.metrics import accuracy_score

    X, y = _data(["stay", "leave"])
    codes = (y == "leave").astype(int)
    booster = xgb.XGBClassifier(n_estimators=10, max_depth=3, random_state=0, n_jobs=1).fit(X, codes)
    booster.get_booster().save_model(tmp_path / "m.json")
    at = _upload((tmp_path / "m.json").read_bytes(), "m.json", X.assign(y=codes).to_csv(index=False).encode(), "y")
    box = at.text_input(key=state.CLASS_NAMES)
    box.set_value("stay").run()  # one name for two classes: said, and nothing changes
    assert any("Give 2 names" in w.value for w in at.warning)
    assert at.sidebar.selectbox(key=state.CLASS_INDEX).options == ["0", "1"]
    at.text_input(key=state.CLASS_NAMES).set_value("stay, leave").run()
    assert not at.exception, at.exception
    assert at.sidebar.selectbox(key=state.CLASS_INDEX).options == ["stay", "leave"]
    assert any("0 = 'stay'" in i.value for i in at.info)
    # the target's codes read with the names: the page's score is the model's accuracy on them
    want = accuracy_score(codes, booster.predict(X))
    assert f"{want:.3f}" in " ".join(m.value for m in at.markdown)
    # other pages and the link use them
    at.switch_page("views/quality.py").run()
    assert not at.exception, at.exception
    assert any("leave" in c.value or "stay" in c.value for c in at.caption)
    assert at.query_params["classes"] == "stay, leave"
