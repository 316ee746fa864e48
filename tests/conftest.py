"""Shared, small, session-scoped fixtures."""
import os
import tempfile

import numpy as np
import pandas as pd
import pytest

# The servers the tests start keep shared uploads (and may keep results) under the data folder:
# one of the test run's own, never the developer's (~/.local/share/glassbox) or the operator's.
os.environ["GLASSBOX_DATA_DIR"] = tempfile.mkdtemp(prefix="glassbox-tests-")
for _name in ("GLASSBOX_WORKSPACE_DIR", "GLASSBOX_RESULT_CACHE_DIR", "GLASSBOX_SHARING"):
    os.environ.pop(_name, None)


@pytest.fixture(scope="session")
def demo_cards():
    """Every demo model, built once (only when missing or stale)."""
    from demo_models.build import ensure_built

    return {c["name"]: c for c in ensure_built()}


@pytest.fixture(scope="session")
def reg_data():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(160, 4)), columns=["a", "b", "c", "d"])
    y = X.a * 2 - X.b + X.c * X.d + rng.normal(0, 0.1, 160)
    return X, y


@pytest.fixture(scope="session")
def clf_data():
    rng = np.random.default_rng(1)
    X = pd.DataFrame(rng.normal(size=(180, 4)), columns=["a", "b", "c", "d"])
    score = X.a - X.b + 0.5 * X.c
    y3 = pd.Series(np.digitize(score, [-0.7, 0.7]), name="y").map({0: "lo", 1: "mid", 2: "hi"})
    y2 = pd.Series(np.where(score > 0, "yes", "no"), name="y")
    return X, y2, y3
