"""The on-disk layer of the process-wide ResultCache (dashboard.state.cache)."""
from __future__ import annotations

import os
import pickle
import stat
import threading
from pathlib import Path
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from dashboard.state import cache
from dashboard.state.cache import MISS, DiskCache, ResultCache, disk_from_env, persistable


@dataclass(frozen=True)
class Result:
    name: str
    values: tuple


def _files(root) -> list:
    return sorted(p for p in root.rglob("*.pkl"))


def _never():
    raise AssertionError("compute must not be called: the value is on disk")


def test_a_second_cache_on_the_same_folder_reads_the_value_without_computing(tmp_path):
    value = (np.arange(12.0).reshape(3, 4), Result("pdp", (1, 2.5, None)),
             pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", None]}, index=[10, 20, 30]))
    key = ("pdp", "model-key", "data-key", ("bmi",), 40, (0.05, 0.95), 1000)
    first = ResultCache(disk=DiskCache(tmp_path, 10_000_000))
    assert first.get_or_compute(key, lambda: value) is value
    assert first.misses == 1 and len(_files(tmp_path)) == 1

    second = ResultCache(disk=DiskCache(tmp_path, 10_000_000))  # a restarted server
    got = second.get_or_compute(key, _never)
    np.testing.assert_array_equal(got[0], value[0])
    assert got[1] == value[1] and isinstance(got[1], Result)
    pd.testing.assert_frame_equal(got[2], value[2])
    assert (second.hits, second.disk_hits, second.misses) == (0, 1, 0)
    # and it is in memory now: the next call does not read the disk
    assert second.get_or_compute(key, _never) is got and second.hits == 1


def test_other_settings_are_another_entry(tmp_path):
    disk = DiskCache(tmp_path, 10_000_000)
    ResultCache(disk=disk).get_or_compute(("ale", "m", "d", "bmi", 20), lambda: 1)
    calls = []
    got = ResultCache(disk=disk).get_or_compute(("ale", "m", "d", "bmi", 21), lambda: calls.append(1) or 2)
    assert got == 2 and calls == [1] and len(_files(tmp_path)) == 2


@pytest.mark.parametrize("key", [
    ("context", "m", "d", "target"),          # holds the live model
    ("shap_rows", "m", "d", "auto"),          # a _RowStore with a lock
    ("precomputed", "/some/path", 1.0, 10),   # a batch folder read
    ("pdp", "m", "d", object()),              # an element that is not a plain value
    ("pdp", "m", "d", ("bmi", Path("x"))),    # an object inside a tuple
    "pdp",                                    # not a tuple
])
def test_keys_that_are_not_persistable_write_no_file(tmp_path, key):
    assert not persistable(key)
    rc = ResultCache(disk=DiskCache(tmp_path, 10_000_000))
    assert rc.get_or_compute(key, lambda: 42) == 42
    assert _files(tmp_path) == []


def test_persistable_kinds():
    assert persistable(("interactions_h", "m", "d", 100, None, ("a", "b")))
    assert persistable(("ia_pairs", "m", "d")) and persistable(("h_overall", "m", "d"))
    assert persistable(("shap_row", "m", "d", np.int64(3), "auto", (), False))
    assert persistable(("quality", "m", "d", 0.5, 1, frozenset({"a", ("b", None)}), b"x"))
    assert not persistable(("pdp", "m", "d", np.array([1, 2])))
    assert not persistable(())


def test_a_frozenset_in_a_key_names_the_same_file_whatever_its_order(tmp_path):
    disk = DiskCache(tmp_path, 10_000_000)
    names = [f"f{i}" for i in range(30)]
    a, b = frozenset(names), frozenset(reversed(names))
    assert cache._stable_repr(a) == "frozenset({" + ", ".join(sorted(repr(n) for n in names)) + "})"
    assert disk.path(("pdp", a)) == disk.path(("pdp", b))


def test_the_size_bound_evicts_the_least_recently_used_file(tmp_path):
    disk = DiskCache(tmp_path, 10_000)
    keys = [("pdp", "m", "d", name) for name in "abcde"]
    blob = bytes(2000)
    for k in keys[:3]:
        assert disk.put(k, blob)
    size = os.path.getsize(disk.path(keys[0]))
    assert 2000 < size < 2500 and disk.total_bytes() == 3 * size
    for i, k in enumerate(keys[:3]):  # a, b, c used long ago, in that order
        os.utime(disk.path(k), (1_000_000 + i, 1_000_000 + i))
    assert disk.get(keys[0]) == blob  # a read: now a is the most recently used
    assert disk.put(keys[3], blob)    # 4 files: 4 * size <= 10,000
    assert disk.path(keys[1]).exists()
    assert disk.put(keys[4], blob)    # 5 files: over the bound, evict down to under 9,000
    assert not disk.path(keys[1]).exists()  # b: the least recently used
    assert all(disk.path(k).exists() for k in (keys[0], keys[2], keys[3], keys[4]))
    assert disk.total_bytes() == sum(os.path.getsize(p) for p in _files(tmp_path)) == 4 * size


def test_the_bound_holds_for_a_folder_found_over_it(tmp_path):
    big = DiskCache(tmp_path, 100_000)
    keys = [("pdp", name) for name in "abcdef"]
    for i, k in enumerate(keys):
        big.put(k, bytes(2000))
        os.utime(big.path(k), (1_000_000 + i, 1_000_000 + i))
    small = DiskCache(tmp_path, 10_000)  # a restart with a smaller bound: the oldest go
    assert [small.path(k).exists() for k in keys] == [False, False, True, True, True, True]
    assert small.total_bytes() == sum(os.path.getsize(p) for p in _files(tmp_path)) < 9_000


def test_a_value_over_a_quarter_of_the_bound_is_not_stored(tmp_path):
    disk = DiskCache(tmp_path, 10_000)
    rc = ResultCache(disk=disk)
    assert rc.get_or_compute(("pdp", "big"), lambda: bytes(3000)) == bytes(3000)
    assert not disk.put(("pdp", "big"), bytes(3000))
    assert _files(tmp_path) == [] and disk.total_bytes() == 0


def test_a_corrupt_file_is_a_miss_and_is_replaced(tmp_path):
    key = ("importance", "m", "d", "permutation", 5, 1000)
    value = {"bmi": np.array([0.1, 0.2])}
    ResultCache(disk=DiskCache(tmp_path, 10_000_000)).get_or_compute(key, lambda: value)
    (path,) = _files(tmp_path)
    good = path.read_bytes()
    path.write_bytes(good[: len(good) // 2])  # truncated by a crash
    calls = []
    rc = ResultCache(disk=DiskCache(tmp_path, 10_000_000))
    got = rc.get_or_compute(key, lambda: calls.append(1) or value)
    assert calls == [1] and rc.disk_hits == 0 and rc.misses == 1
    np.testing.assert_array_equal(got["bmi"], value["bmi"])
    assert path.read_bytes() == good  # written again, whole
    again = ResultCache(disk=DiskCache(tmp_path, 10_000_000)).get_or_compute(key, _never)
    np.testing.assert_array_equal(again["bmi"], value["bmi"])


def test_a_file_holding_another_key_is_a_miss(tmp_path):
    disk = DiskCache(tmp_path, 10_000_000)
    key, other = ("pdp", "m", "d", "bmi"), ("pdp", "m", "d", "age")
    path = disk.path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps((repr(other), "wrong"), protocol=5))  # a hash collision
    assert disk.get(key) is MISS
    disk.put(other, "right")
    assert disk.get(other) == "right"


def test_a_new_disk_format_does_not_read_old_files(tmp_path, monkeypatch):
    key = ("pdp", "m", "d", "bmi")
    disk = DiskCache(tmp_path, 10_000_000)
    disk.put(key, "old layout")
    old_path = disk.path(key)
    monkeypatch.setattr(cache, "DISK_FORMAT", cache.DISK_FORMAT + 1)
    monkeypatch.setattr(cache, "_SALT", None)
    assert disk.path(key) != old_path and disk.get(key) is MISS


def test_an_unpicklable_value_is_kept_in_memory_only(tmp_path, caplog):
    key = ("report", "m", "d", "bmi", 0, None, (True, True))
    value = {"lock": threading.Lock()}
    rc = ResultCache(disk=DiskCache(tmp_path, 10_000_000))
    with caplog.at_level("DEBUG", logger="dashboard.state.cache"):
        assert rc.get_or_compute(key, lambda: value) is value
    assert _files(tmp_path) == [] and list((tmp_path / "tmp").iterdir()) == []
    assert "cannot be pickled" in caplog.text
    assert rc.get_or_compute(key, _never) is value and rc.hits == 1


def test_a_disk_that_fails_never_breaks_the_page(tmp_path):
    class Broken(DiskCache):
        def get(self, key, default=MISS):
            raise OSError("disk gone")

        def put(self, key, value):
            raise OSError("disk gone")

    rc = ResultCache(disk=Broken(tmp_path, 10_000_000))
    assert rc.get_or_compute(("pdp", "m"), lambda: 7) == 7 and rc.misses == 1


def test_clear_forgets_memory_only_and_clear_disk_the_files(tmp_path):
    rc = ResultCache(disk=DiskCache(tmp_path, 10_000_000))
    rc.get_or_compute(("ale", "m", "d", "bmi", 20), lambda: "x")
    rc.clear()
    assert rc.get_or_compute(("ale", "m", "d", "bmi", 20), _never) == "x" and rc.disk_hits == 1
    rc.clear()
    rc.clear_disk()
    assert _files(tmp_path) == [] and rc.disk.total_bytes() == 0
    assert rc.get_or_compute(("ale", "m", "d", "bmi", 20), lambda: "y") == "y"


def test_the_folders_are_private(tmp_path):
    disk = DiskCache(tmp_path / "results", 10_000_000)
    disk.put(("pdp", "m"), 1)
    for d in (disk.root, disk.root / "tmp", disk.path(("pdp", "m")).parent):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700


# ------------------------------------------------------------------ environment
def test_env_bytes_zero_turns_the_disk_layer_off(tmp_path):
    assert disk_from_env({cache.BYTES_ENV: "0", cache.DIR_ENV: str(tmp_path)}) is None
    assert not (tmp_path / "tmp").exists()


def test_env_explicit_dir_under_pytest_turns_the_disk_layer_on(tmp_path):
    disk = disk_from_env({"PYTEST_CURRENT_TEST": "t", cache.DIR_ENV: str(tmp_path / "r"),
                          cache.BYTES_ENV: "2MB"})
    assert isinstance(disk, DiskCache) and disk.root == (tmp_path / "r").resolve()
    assert disk.max_bytes == 2 << 20


def test_env_defaults(tmp_path):
    assert disk_from_env({"PYTEST_CURRENT_TEST": "t", "GLASSBOX_DATA_DIR": str(tmp_path)}) is None
    assert disk_from_env({cache.SWITCH_ENV: "off", "GLASSBOX_DATA_DIR": str(tmp_path)}) is None
    assert not (tmp_path / "results").exists()
    disk = disk_from_env({"GLASSBOX_DATA_DIR": str(tmp_path)})
    assert disk.root == (tmp_path / "results").resolve() and disk.max_bytes == cache.DEFAULT_DISK_BYTES
    xdg = tmp_path / "xdg"
    assert disk_from_env({"XDG_DATA_HOME": str(xdg)}).root == (xdg / "glassbox" / "results").resolve()


@pytest.mark.parametrize("env", [{cache.BYTES_ENV: "lots"}, {cache.BYTES_ENV: "-5"},
                                 {cache.SWITCH_ENV: "maybe"}])
def test_env_values_not_understood_name_the_variable(tmp_path, env):
    with pytest.raises(ValueError, match=next(iter(env))):
        disk_from_env({cache.DIR_ENV: str(tmp_path), **env})


def test_result_cache_builds_its_disk_layer_on_first_call(tmp_path, monkeypatch):
    monkeypatch.setattr(cache, "_RESULTS", ResultCache())
    monkeypatch.setattr(cache, "_CONFIGURED", False)
    monkeypatch.setenv(cache.DIR_ENV, str(tmp_path))
    rc = cache.result_cache()
    assert rc is cache._RESULTS and rc.disk is not None and rc.disk.root == tmp_path.resolve()
    assert cache.result_cache() is rc


def test_result_cache_under_pytest_has_no_disk_layer_by_default(tmp_path, monkeypatch):
    monkeypatch.setattr(cache, "_RESULTS", ResultCache())
    monkeypatch.setattr(cache, "_CONFIGURED", False)
    monkeypatch.delenv(cache.DIR_ENV, raising=False)
    monkeypatch.setenv("GLASSBOX_DATA_DIR", str(tmp_path))
    assert cache.result_cache().disk is None and not (tmp_path / "results").exists()


def test_result_cache_with_a_bad_setting_keeps_memory_only(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(cache, "_RESULTS", ResultCache())
    monkeypatch.setattr(cache, "_CONFIGURED", False)
    monkeypatch.setenv(cache.DIR_ENV, str(tmp_path))
    monkeypatch.setenv(cache.BYTES_ENV, "lots")
    with caplog.at_level("WARNING", logger="dashboard.state.cache"):
        rc = cache.result_cache()
    assert rc.disk is None and cache.BYTES_ENV in caplog.text
    assert rc.get_or_compute(("pdp", "m"), lambda: 3) == 3
