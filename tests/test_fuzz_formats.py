"""A bounded mutation fuzz of every boosting format's reader (issue #28).

For each format, seeded mutants of a valid file (a byte changed, a byte dropped, a span
doubled, a number swapped for an extreme one) are read by Glassbox in a subprocess with a
memory limit and a timeout, and by the library in another (the libraries' loaders crash on
some of them: that process may die, ours may not). Each mutant must be refused with an
ExplainerError, or load and predict finite numbers; where the library loads it too, the
predictions agree.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
N_MUTANTS = 24
PROBE = np.random.default_rng(7).normal(size=(6, 3)).round(3).tolist()

xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")
cb = pytest.importorskip("catboost")


def _files(tmp: Path) -> dict[str, bytes]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = X[:, 0] + X[:, 1] * X[:, 2]
    out = {}
    b = xgb.train({"max_depth": 3, "eta": 0.3}, xgb.DMatrix(X, y), 4)
    out["xgboost json"] = bytes(b.save_raw("json"))
    out["xgboost ubj"] = bytes(b.save_raw("ubj"))
    lb = lgb.train({"verbose": -1, "num_leaves": 6}, lgb.Dataset(X, y), 4)
    out["lightgbm text"] = lb.model_to_string().encode()
    cm = cb.CatBoostRegressor(iterations=4, depth=3, verbose=0, random_seed=0, allow_writing_files=False).fit(X, y)
    cm.save_model(str(tmp / "m.json"), format="json")
    out["catboost json"] = (tmp / "m.json").read_bytes()
    return out


EXTREMES = [b"1e308", b"-1", b"0", b"2147483648", b"NaN", b"1e-320", b"99999999999"]


def _mutants(data: bytes, seed: int) -> list[bytes]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(N_MUTANTS):
        b = bytearray(data)
        kind = i % 4
        pos = int(rng.integers(0, len(b)))
        if kind == 0:
            b[pos] = int(rng.integers(0, 256))
        elif kind == 1:
            del b[pos]
        elif kind == 2:
            end = min(len(b), pos + int(rng.integers(1, 64)))
            b[pos:pos] = b[pos:end]
        else:  # a number replaced by an extreme one
            digits = [j for j in range(len(b)) if 48 <= b[j] <= 57]
            j = digits[int(rng.integers(0, len(digits)))] if digits else pos
            k = j
            while k < len(b) and (48 <= b[k] <= 57 or b[k] in b".eE-+"):
                k += 1
            b[j:k] = EXTREMES[int(rng.integers(0, len(EXTREMES)))]
        out.append(bytes(b))
    return out


OURS = textwrap.dedent("""
    import json, resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    from explainers import ExplainerError
    from explainers.trees.xgboost import read_xgboost
    from explainers.trees.lightgbm import read_lightgbm
    from explainers.trees.catboost import read_catboost
    read = {"xgboost": read_xgboost, "lightgbm": read_lightgbm, "catboost": read_catboost}[sys.argv[2]]
    probe = np.asarray(json.loads(sys.argv[3]))
    for line in sys.stdin:
        data = bytes.fromhex(line.strip())
        try:
            model = read(data)
            raw = model.predict_raw(probe) if model.n_features_in_ == 3 else None
            out = {"ok": True, "pred": None if raw is None else raw[:, 0].tolist()}
        except ExplainerError as exc:
            out = {"ok": False}
        except Exception as exc:  # noqa: BLE001 - what the test looks for
            out = {"ok": False, "unclean": f"{type(exc).__name__}: {exc}"[:300]}
        print(json.dumps(out), flush=True)
""")

LIBRARY = textwrap.dedent("""
    import json, sys
    import numpy as np
    library, probe = sys.argv[1], np.asarray(json.loads(sys.argv[2]))
    if library == "xgboost":
        import xgboost as xgb
    elif library == "lightgbm":
        import lightgbm as lgb
    else:
        import catboost as cb
    for path in sys.argv[3:]:
        try:
            if library == "xgboost":
                b = xgb.Booster(); b.load_model(path)
                pred = b.predict(xgb.DMatrix(probe), output_margin=True)
            elif library == "lightgbm":
                pred = lgb.Booster(model_file=path).predict(probe, raw_score=True)
            else:
                m = cb.CatBoost(); m.load_model(path, format="json")
                pred = m.predict(probe, prediction_type="RawFormulaVal")
            print("@@" + json.dumps(np.asarray(pred, dtype=float).reshape(-1).tolist()), flush=True)
        except Exception:
            print("@@null", flush=True)
""")


def _library_predictions(library: str, fmt: str, mutants: list[bytes], tmp: Path) -> list:
    """The library's raw predictions of the probe rows from each mutant, None where it refuses,
    crashes or hangs. One process reads them in turn; a crash ends it at that mutant, and the
    next process starts after it."""
    suffix = ".ubj" if fmt == "ubj" else ".txt" if library == "lightgbm" else ".json"
    paths = []
    for i, data in enumerate(mutants):
        path = tmp / f"mutant-{i}{suffix}"
        path.write_bytes(data)
        paths.append(str(path))
    out: list = []
    while len(out) < len(paths):
        try:
            proc = subprocess.run([sys.executable, "-c", LIBRARY, library, json.dumps(PROBE), *paths[len(out):]],
                                  capture_output=True, timeout=120)
            lines = proc.stdout.decode().splitlines()
        except subprocess.TimeoutExpired as exc:
            lines = (exc.stdout or b"").decode().splitlines()
        out += [json.loads(line[2:]) for line in lines if line.startswith("@@")]  # not the library's own lines
        if len(out) < len(paths):
            out.append(None)  # the library died (or hung) on this one
    return out


@pytest.mark.parametrize("fmt", ["xgboost json", "xgboost ubj", "lightgbm text", "catboost json"])
def test_mutants_are_refused_or_read_as_the_library_reads_them(tmp_path, fmt):
    library = fmt.split()[0]
    data = _files(tmp_path)[fmt]
    mutants = _mutants(data, seed=len(fmt) * 7919)
    proc = subprocess.run([sys.executable, "-c", OURS, str(ROOT), library, json.dumps(PROBE)],
                          input="\n".join(m.hex() for m in mutants).encode(), capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]  # never a crash or a memory blow-up
    results = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    assert len(results) == len(mutants)
    unclean = [r["unclean"] for r in results if "unclean" in r]
    assert not unclean, unclean  # every refusal is an ExplainerError with a message
    loaded = [(m, r) for m, r in zip(mutants, results) if r["ok"]]
    compared = 0
    read = [(m, r) for m, r in loaded if r["pred"] is not None]
    for _, r in read:
        assert np.isfinite(r["pred"]).all(), r  # never a NaN prediction
    libs = _library_predictions(library, fmt.split()[1], [m for m, _ in read], tmp_path)
    for (_, r), lib in zip(read, libs):
        if lib is not None and len(lib) == len(PROBE):
            np.testing.assert_allclose(r["pred"], lib, rtol=1e-5, atol=1e-5)
            compared += 1
    refused = len(mutants) - len(loaded)
    print(f"\n{fmt}: {len(mutants)} mutants, {refused} refused, {len(loaded)} read, {compared} compared with the library")
    assert refused > 0  # the mutants are real damage
