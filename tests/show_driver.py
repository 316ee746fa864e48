"""A Python session that uses ``show()``, driven line by line by a test (run as a subprocess).

Commands on stdin: ``show NAME KIND`` (KIND: forest | linear | classifier | xgboost) prints one JSON
line about the new handle (``seconds`` the call took, for printing only; ``server_starts`` how many
servers this process has started so far); ``stop`` stops the server; ``exit`` leaves without stopping
(atexit cleans up); ``sleep`` blocks (the test kills the process).
"""
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout, as a notebook next to it


def data():
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(240, 3)), columns=["speed", "load", "temp"])
    y = pd.Series(3 * X.speed - X.load ** 2 + rng.normal(0, 0.1, 240), name="wear")
    return X, y


def model(kind, X, y):
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
    from sklearn.linear_model import LinearRegression

    if kind == "forest":
        return RandomForestRegressor(20, max_depth=5, random_state=0).fit(X, y)
    if kind == "linear":
        return LinearRegression().fit(X, y)
    if kind == "xgboost":
        import xgboost as xgb

        return xgb.XGBRegressor(n_estimators=10, max_depth=3).fit(X, y)
    return RandomForestClassifier(20, max_depth=4, random_state=0).fit(X, y > y.median())


def main() -> None:
    from dashboard import notebook, show

    # count the servers started (each start waits for a health check): a later show() reuses the
    # running one, which tests assert by this count rather than by how long the call took
    starts = []
    real_start = notebook._Server.start

    def counted_start(self, *a, **k):
        starts.append(self.folder)
        return real_start(self, *a, **k)

    notebook._Server.start = counted_start
    X, y = data()
    handles = []
    for line in sys.stdin:
        cmd, *args = line.split()
        if cmd == "show":
            name, kind = args
            target = y > y.median() if kind == "classifier" else y
            t0 = time.perf_counter()
            h = show(model(kind, X, y), X, target, name=name.replace("_", " "))
            handles.append(h)
            server = h._server
            print(json.dumps({"url": h.url, "key": h.key, "repr": repr(h), "html": h._repr_html_(),
                              "seconds": time.perf_counter() - t0, "server_starts": len(starts),
                              "pid": server.proc.pid,
                              "folder": str(server.folder), "port": server.port}), flush=True)
        elif cmd == "stop":
            handles[-1].stop()
            print(json.dumps({"stopped": True, "repr": repr(handles[-1])}), flush=True)
        elif cmd == "exit":
            return
        elif cmd == "sleep":
            print(json.dumps({"sleeping": True}), flush=True)
            time.sleep(600)


if __name__ == "__main__":
    main()


class ShowSession:
    """The test's side: start this module in a subprocess and send it commands."""

    def __init__(self, env: dict | None = None):
        import os
        import subprocess
        import tempfile

        self.stderr = tempfile.TemporaryFile("w+")  # a pipe nobody reads could fill up and block it
        self.proc = subprocess.Popen(
            [sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.stderr, text=True, env={**os.environ, **(env or {})},
            cwd=Path(__file__).resolve().parent)

    def errors(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read()[-3000:]

    def send(self, line: str, timeout: float = 180) -> dict | None:
        import select

        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        if line in ("exit",):
            self.proc.stdin.close()
            return None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        out = self.proc.stdout.readline() if ready else ""
        if not out:
            self.proc.kill()
            raise AssertionError(f"show() session gave no answer to {line!r}; stderr:\n{self.errors()}")
        return json.loads(out)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.send("exit")
                self.proc.wait(timeout=30)
            except Exception:  # noqa: BLE001
                self.proc.kill()
                self.proc.wait()
