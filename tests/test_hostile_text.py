"""Text that costs a backtracking parser the square of its length (issue #28, items 2 and 5).

An XGBoost "JSON" file ``{"learner": {}, "x": "`` followed by many ``\\"`` held the nesting
check's regular expression (and the interpreter lock) for a minute at 160 KB; a CSV header
``a,"a,"…`` of 64 KB cost ``csv.Sniffer`` 13 s. Both scans are now linear: here their answers
are checked against the definitions, and the hostile inputs are run at sizes the old
code could not finish.
"""
from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest

from explainers import InvalidDataError, InvalidModelError, load_data, load_model
from explainers.io._files import CSV_DELIMITERS, guess_delimiter
from explainers.trees.xgboost import _json_depth


def _depth(value) -> int:
    """Nesting depth of a decoded JSON value (the definition)."""
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def _random_value(rng, depth=0):
    kind = rng.integers(0, 5 if depth < 6 else 3)
    if kind == 0:
        return float(rng.normal())
    if kind == 1:  # strings full of brackets, quotes and backslashes
        return "".join(rng.choice(list('ab[]{}"\\\\ ,:'), size=rng.integers(0, 12)))
    if kind == 2:
        return None
    if kind == 3:
        return [_random_value(rng, depth + 1) for _ in range(rng.integers(0, 4))]
    return {f"k{i}\\\"[": _random_value(rng, depth + 1) for i in range(rng.integers(0, 4))}


def test_json_depth_equals_the_definition_on_random_documents():
    rng = np.random.default_rng(0)
    for _ in range(400):
        value = _random_value(rng)
        for text in (json.dumps(value), json.dumps(value, indent=1, ensure_ascii=False)):
            assert _json_depth(text.encode("utf-8")) == _depth(value), text


def test_unterminated_string_of_escaped_quotes_is_refused(tmp_path):
    """2 MB of ``\\"`` (the quadratic expression took 62 s on 160 KB): a clean refusal."""
    body = b'{"learner": {}, "x": "' + b'\\"' * 1_000_000
    assert _json_depth(body) == 2  # {"learner": {} ...: the string never closes
    path = tmp_path / "model.json"
    path.write_bytes(body)
    with pytest.raises(InvalidModelError, match="not valid JSON"):
        load_model(path)


def test_deep_nesting_after_escapes_is_still_counted(tmp_path):
    """Brackets after an escaped quote inside a string are text; after the string closes they count."""
    text = '{"a": "\\\\\\"[[[", "b": ' + "[" * 300 + "]" * 300 + "}"
    assert _json_depth(text.encode()) == 301 == _depth(json.loads(text))
    path = tmp_path / "deep.json"
    path.write_text('{"learner": ' + text + "}")
    with pytest.raises(InvalidModelError, match="nests objects more than"):
        load_model(path)


def test_guess_delimiter_equals_the_csv_reading_of_random_headers():
    rng = np.random.default_rng(1)
    for _ in range(300):
        sep = CSV_DELIMITERS[rng.integers(0, len(CSV_DELIMITERS))]
        n = int(rng.integers(2, 9))
        names = ["".join(rng.choice(list("abc ,;|\t\"x"), size=rng.integers(1, 6))) for _ in range(n)]
        buf = io.StringIO()
        csv.writer(buf, delimiter=sep, quoting=csv.QUOTE_MINIMAL, lineterminator="").writerow(names)
        line = buf.getvalue()
        # the oracle: the separator that reads the line back into the names
        guessed = guess_delimiter(line)
        assert next(csv.reader([line], delimiter=guessed)) == names or (
            # a name list that reads back under two separators (no separator in any name) may take either
            next(csv.reader([line], delimiter=sep)) == names and guessed in CSV_DELIMITERS), (line, sep, guessed)
        if not any(d in nm for nm in names for d in CSV_DELIMITERS):
            assert guessed == sep, (line, sep, guessed)


def test_hostile_csv_header_is_refused_by_its_names(tmp_path):
    """``a,"a,"`` repeated to 1 MB: the separator is found in one pass and the repeated names
    are refused by name (the sniffer took 13 s on 64 KB)."""
    header = 'a,"a,"' * 170_000
    path = tmp_path / "hostile.csv"
    path.write_text(header + "\n1,2\n")
    with pytest.raises(InvalidDataError):
        load_data(path)
    assert guess_delimiter(header) == ","


def test_messages_print_numbers_as_numbers():
    from explainers.errors import param_error, shown

    msg = str(param_error("grid_resolution", "partial_dependence", "an int >= 2", np.float64(7.0)))
    assert msg.endswith("Got 7.0 instead.") and "np." not in msg
    assert shown(np.int64(3)) == "3" and shown("a") == "'a'"
    assert len(shown("x" * 10_000)) == 200


def test_leftover_folders_of_dead_owners_are_removed(tmp_path):
    """A build or a show() folder whose process was killed is removed at the next start; one whose
    owner runs, another prefix, and a fresh folder without a pid are left alone."""
    import os
    import subprocess
    import sys

    from explainers.io._files import remove_orphans

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / f".build-{dead.pid}-abc").mkdir()
    (tmp_path / f".build-{os.getpid()}-def").mkdir()
    (tmp_path / ".build-legacy").mkdir()
    (tmp_path / f"other-{dead.pid}-x").mkdir()
    assert remove_orphans(tmp_path, ".build-") == [f".build-{dead.pid}-abc"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f".build-{os.getpid()}-def", ".build-legacy", f"other-{dead.pid}-x"])
    old = tmp_path / ".build-legacy"
    os.utime(old, (1, 1))  # a folder of the old naming, untouched for hours
    assert remove_orphans(tmp_path, ".build-") == [".build-legacy"]
