"""The report of an uploaded model (issue #24): a quality section with the Quality page's
metrics (checked against scikit-learn), mean |SHAP| in the importance section, the SHAP
waterfall on the sidebar's scale, and the numbers of the features table written out."""
import html
import re

import numpy as np
import pandas as pd
import skops.io as sio
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score, roc_auc_score
from streamlit.testing.v1 import AppTest

from dashboard import state
from tests.views._app import APP


def _loan():
    rng = np.random.default_rng(0)
    n = 500
    X = pd.DataFrame({"income": rng.normal(52_000, 9_000, n).round(), "debt": rng.normal(9_000, 3_000, n).round(),
                      "age": rng.integers(21, 70, n).astype(float)})
    y = np.where((X.debt / X.income) + rng.normal(0, 0.05, n) > 0.2, "default", "repaid")
    return X, y, HistGradientBoostingClassifier(max_iter=30, random_state=0).fit(X, y)


def test_report_of_an_uploaded_model_holds_quality_and_mean_shap(downloads):
    X, y, model = _loan()
    at = AppTest.from_file(APP, default_timeout=300).run()
    at.file_uploader(key=state.MODEL_FILE).set_value(("loan.skops", sio.dumps(model), "application/octet-stream"))
    at.file_uploader(key=state.DATA_FILE).set_value(("loans.csv", X.assign(status=y).to_csv(index=False).encode(),
                                                     "text/csv"))
    at.run()
    at.selectbox(key=state.TARGET_COL).set_value("status").run()
    next(b for b in at.button if b.label == "Load model and data").click().run()
    assert not at.exception, at.exception
    at.switch_page("views/report.py").run()
    assert not at.exception, at.exception
    outline = "\n".join(m.value for m in at.markdown)
    assert "**Model quality**" in outline and "Mean |SHAP|" in outline
    positive = at.sidebar.selectbox(key=state.CLASS_INDEX).value
    proba = model.predict_proba(X)[:, list(model.classes_).index(positive)]
    pred = np.where(proba >= 0.5, positive, [c for c in model.classes_ if c != positive][0])
    truth = y == positive
    expected = {"Accuracy": accuracy_score(y, pred), "Precision": precision_score(truth, pred == positive),
                "Recall": recall_score(truth, pred == positive), "F1": f1_score(truth, pred == positive),
                "ROC AUC": roc_auc_score(truth, proba)}
    name = next(n for n in downloads if n and n.startswith("glassbox_report_"))
    doc = html.unescape(downloads[name].decode())
    section = doc[doc.index("Model quality"):]
    for label, value in expected.items():
        cell = re.search(rf"<th>{re.escape(label)}</th>\s*<td>([^<]+)</td>", section)
        assert cell, label
        assert float(cell.group(1)) == float(f"{value:.4g}"), (label, cell.group(1), value)
    assert "e+0" not in doc[doc.index("Features"):doc.index("Model quality")]  # no scientific notation
