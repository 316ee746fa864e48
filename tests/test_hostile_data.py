"""Hostile data files: no crafted CSV or Parquet exhausts the server or misleads the column picker (issue #15).

Every file is crafted here. The limits are those of :mod:`explainers.limits`;
the tests that need a file over a default limit lower the limit through its
environment variable rather than build gigabytes, except the Parquet files,
which are tiny on disk and huge once read (measured in a subprocess).
"""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from explainers import InvalidDataError, load_data
from explainers.io import peek_columns

ROOT = Path(__file__).resolve().parents[1]


def many_rows_parquet(n_rows=40_000_000, n_cols=4, group=2_000_000) -> bytes:
    """About half a megabyte of Parquet that reads back as ``n_rows`` rows of zeros."""
    block = pa.table({f"c{i}": pa.array(np.zeros(group)) for i in range(n_cols)})
    buf = io.BytesIO()
    with pq.ParquetWriter(buf, block.schema, compression="zstd") as writer:
        for _ in range(n_rows // group):
            writer.write_table(block)
    return buf.getvalue()


def repeated_string_parquet(n_rows=3_000_000, width=1000, store_schema=False) -> bytes:
    """One long string repeated on every row, stored once in a dictionary page."""
    strings = pa.DictionaryArray.from_arrays(pa.array(np.zeros(n_rows, np.int32)), pa.array(["x" * width]))
    buf = io.BytesIO()
    pq.write_table(pa.table({"s": strings, "v": pa.array(np.zeros(n_rows, np.int8))}), buf,
                   compression="zstd", store_schema=store_schema)
    return buf.getvalue()


PROBE = """
    import json, sys
    import pyarrow.parquet as pq
    from explainers import InvalidDataError, load_data
    from explainers.io import peek_columns
    # count every read of the file's data pages (its footer, the metadata, is not one)
    reads = []
    for owner, names in ((pq.ParquetFile, ('read', 'read_row_group', 'read_row_groups', 'iter_batches')),
                         (pq, ('read_table',))):
        for name in names:
            def spy(*a, _real=getattr(owner, name), _name=name, **k):
                reads.append(_name)
                return _real(*a, **k)
            setattr(owner, name, spy)
    data = open(sys.argv[1], 'rb').read()
    out = {}
    for step in ('peek', 'load'):
        del reads[:]
        try:
            if step == 'peek':
                peek_columns(data, filename='d.parquet')
            else:
                load_data(data, filename='d.parquet')
            out[step] = 'ACCEPTED'
        except InvalidDataError as exc:
            out[step] = str(exc)
        out[step + '_data_reads'] = list(reads)
    # VmHWM, not ru_maxrss: ru_maxrss keeps the parent's (pytest's) peak across vfork + exec
    out['peak_mb'] = int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1]) / 1024
    print(json.dumps(out))
"""


def _probe(path: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(PROBE), str(path)], cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_parquet_of_40_million_rows_is_refused_from_its_footer(tmp_path):
    path = tmp_path / "rows.parquet"
    path.write_bytes(many_rows_parquet())
    assert path.stat().st_size < 1_000_000
    got = _probe(path)
    for step in ("peek", "load"):
        assert "has 40,000,000 rows, over the limit of 5,000,000" in got[step], got
        assert "GLASSBOX_MAX_DATA_ROWS" in got[step]
        assert got[step + "_data_reads"] == [], got  # refused from the footer: no data page read
    assert got["peak_mb"] < 500, got  # the whole table is 2.6 GB


def test_parquet_repeating_one_long_string_is_refused_before_unpacking(tmp_path):
    for store_schema in (False, True):  # read as plain text, or as the file's own dictionary
        path = tmp_path / f"strings{store_schema}.parquet"
        path.write_bytes(repeated_string_parquet(store_schema=store_schema))
        assert path.stat().st_size < 1_000_000
        got = _probe(path)
        assert got["peek"] == "ACCEPTED", got  # names only: the column picker still works
        assert got["peek_data_reads"] == [], got  # from the footer alone
        assert "unpacks to 2.8 GB, over the limit of 2.0 GB" in got["load"], got
        assert "GLASSBOX_MAX_DATA_BYTES" in got["load"]
        assert got["peak_mb"] < 700, got


def test_parquet_limits_follow_the_environment(monkeypatch):
    frame = pd.DataFrame({"a": np.arange(2000.0), "b": ["t"] * 2000})
    data = frame.to_parquet()
    assert len(load_data(data, filename="d.parquet").X) == 2000
    monkeypatch.setenv("GLASSBOX_MAX_DATA_ROWS", "1999")
    with pytest.raises(InvalidDataError, match=r"has 2,000 rows.*GLASSBOX_MAX_DATA_ROWS"):
        peek_columns(data, filename="d.parquet")
    monkeypatch.setenv("GLASSBOX_MAX_DATA_ROWS", "2000")
    monkeypatch.setenv("GLASSBOX_MAX_DATA_BYTES", "10KB")
    with pytest.raises(InvalidDataError, match=r"unpacks to .*over the limit of 10.0 KB.*GLASSBOX_MAX_DATA_BYTES"):
        load_data(data, filename="d.parquet")


def test_parquet_peek_reads_the_footer_only():
    """Damaged data pages do not matter to the column picker: it never reads them."""
    frame = pd.DataFrame({"x": np.arange(50_000.0), "target": np.arange(50_000) % 3})
    data = bytearray(frame.to_parquet(compression=None))
    footer = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    data[4:footer] = np.random.default_rng(0).integers(0, 256, footer - 4, dtype=np.uint8).tobytes()
    data = bytes(data)
    assert peek_columns(data, filename="d.parquet") == ["x", "target"]
    with pytest.raises(InvalidDataError, match="Could not read the Parquet file"):
        load_data(data, filename="d.parquet")


def test_parquet_index_is_not_a_column():
    frame = pd.DataFrame({"a": [1.0, 2.0], "y": [0, 1]}, index=pd.Index(["r1", "r2"], name="id"))
    data = frame.to_parquet()
    assert peek_columns(data, filename="d.parquet") == ["a", "y"]
    assert list(load_data(data, filename="d.parquet").X.columns) == ["a", "y"]


# ----------------------------------------------------------------------- CSV
def test_header_longer_than_64_kib_is_read_whole(monkeypatch):
    import csv

    names = [f"x{i}" for i in range(20_000)]
    data = (",".join(names) + "\n" + ",".join("1" for _ in names) + "\n").encode()
    assert data.index(b"\n") > 1 << 16
    sniffed = []  # csv.Sniffer's regular expressions are superlinear: never on a whole long header
    real_sniff = csv.Sniffer.sniff
    monkeypatch.setattr(csv.Sniffer, "sniff",
                        lambda self, sample, *a, **k: sniffed.append(len(sample)) or real_sniff(self, sample, *a, **k))
    assert peek_columns(data, filename="wide.csv") == names
    assert all(n <= 1 << 16 for n in sniffed), sniffed


def test_header_names_match_load_data():
    data = b'\n\n "a","b\nc",,d;e\r\n1,2,3,4\r\n'
    assert peek_columns(data, filename="q.csv") == list(load_data(data, filename="q.csv").X.columns)
    assert peek_columns(data, filename="q.csv") == ["a", "b\nc", "Unnamed: 2", "d;e"]
    utf16 = "p;q\r\n1;2\r\n".encode("utf-16")
    assert peek_columns(utf16, filename="u.csv") == ["p", "q"] == list(load_data(utf16, filename="u.csv").X.columns)


def test_header_line_limit(monkeypatch):
    names = [f"column_{i}" for i in range(200)]
    data = (",".join(names) + "\n" + ",".join("0" for _ in names) + "\n").encode()
    assert peek_columns(data, filename="d.csv") == names
    monkeypatch.setenv("GLASSBOX_MAX_HEADER_BYTES", "1KB")
    for call in (lambda: peek_columns(data, filename="d.csv"), lambda: load_data(data, filename="d.csv")):
        with pytest.raises(InvalidDataError, match=r"header line is longer than 1.0 KB.*GLASSBOX_MAX_HEADER_BYTES"):
            call()
    monkeypatch.setenv("GLASSBOX_MAX_HEADER_BYTES", "8MB")
    monkeypatch.setenv("GLASSBOX_MAX_FEATURES", "100")
    with pytest.raises(InvalidDataError, match=r"has 200 columns, over the limit of 100.*GLASSBOX_MAX_FEATURES"):
        peek_columns(data, filename="d.csv")


def test_duplicates_beyond_64_kib_are_still_found():
    names = [f"x{i}" for i in range(20_000)] + ["x5"]
    data = (",".join(names) + "\n").encode() + b"1," * 20_000 + b"1\n"
    with pytest.raises(InvalidDataError, match="duplicate column names: x5"):
        peek_columns(data, filename="d.csv")


def test_csv_limits(monkeypatch):
    frame = pd.DataFrame({"a": np.arange(1500.0), "b": np.arange(1500) % 7})
    data = frame.to_csv(index=False).encode()
    monkeypatch.setenv("GLASSBOX_MAX_DATA_ROWS", "1500")
    assert len(load_data(data, filename="d.csv").X) == 1500
    monkeypatch.setenv("GLASSBOX_MAX_DATA_ROWS", "1499")
    with pytest.raises(InvalidDataError, match=r"more than 1,499 data rows.*GLASSBOX_MAX_DATA_ROWS"):
        load_data(data, filename="d.csv")
    monkeypatch.setenv("GLASSBOX_MAX_DATA_ROWS", "5000000")
    monkeypatch.setenv("GLASSBOX_MAX_DATA_BYTES", "1KB")
    with pytest.raises(InvalidDataError, match=r"The CSV file is .* over the limit of 1.0 KB.*GLASSBOX_MAX_DATA_BYTES"):
        load_data(data, filename="d.csv")
    assert peek_columns(data, filename="d.csv") == ["a", "b"]  # the header alone is within the limit


def test_bad_limit_value_is_a_clear_error(monkeypatch):
    from explainers.errors import InvalidParameterError

    monkeypatch.setenv("GLASSBOX_MAX_DATA_ROWS", "lots")
    with pytest.raises(InvalidParameterError, match="GLASSBOX_MAX_DATA_ROWS='lots' is not a number"):
        load_data(b"a\n1\n", filename="d.csv")
