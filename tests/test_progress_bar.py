"""The progress bar's time left: from this bar's own pace, so work resumed halfway (rows added
before a Stop) is not counted as done in this bar's seconds."""
from dashboard.state.worker import ProgressBar


class _Bar:
    def __init__(self):
        self.shown = []

    def progress(self, frac, text=""):
        self.shown.append((frac, text))


def _bar(clock):
    bar = _Bar()
    pb = ProgressBar(bar, "Rows explained")
    pb._time = lambda: clock[0]
    pb._start = 0.0
    return pb, bar


def test_time_left_from_a_fresh_start():
    clock = [0.0]
    pb, bar = _bar(clock)
    pb(0, 1000)
    clock[0] = 2.0
    pb(250, 1000)  # 250 rows in 2 s: 750 more take 6 s
    assert bar.shown[-1] == (0.25, "Rows explained: 250 of 1,000 · 2.0 s, about 6 s left")


def test_time_left_of_work_resumed_counts_this_bars_rows_only():
    clock = [0.0]
    pb, bar = _bar(clock)
    pb(600, 1000)  # 600 rows added before a Stop
    assert bar.shown[-1] == (0.6, "Rows explained: 600 of 1,000 · 0.0 s")
    clock[0] = 4.0
    pb(700, 1000)  # 100 rows in 4 s: 300 more take 12 s (not 4 x 300 / 700)
    assert bar.shown[-1] == (0.7, "Rows explained: 700 of 1,000 · 4.0 s, about 12 s left")
    pb(1000, 1000)
    assert bar.shown[-1] == (1.0, "Rows explained: 1,000 of 1,000")
