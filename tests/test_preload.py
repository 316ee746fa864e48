"""dashboard.__main__: the default model is read, then the pages' modules imported, in a thread
started with the server."""
import sys
import threading

from dashboard.__main__ import PRELOAD, preload_in_background
from dashboard.state.warmup import OTHER_PAGES


def test_the_data_comes_first_then_the_modules_a_broken_one_skipped(tmp_path, monkeypatch):
    (tmp_path / "glassbox_preload_probe.py").write_text("import time\nIMPORTED_AT = time.monotonic()\n")
    (tmp_path / "glassbox_preload_broken.py").write_text("raise RuntimeError('broken')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("glassbox_preload_probe", None)
    release = threading.Event()
    order = []

    def then():
        order.append("then")
        assert release.wait(20)
        assert "glassbox_preload_probe" not in sys.modules  # nothing imported before the data

    thread = preload_in_background(then, ("glassbox_preload_broken", "glassbox_preload_probe"))
    assert thread.daemon and thread.name == "glassbox-preload"
    release.set()
    thread.join(20)
    assert not thread.is_alive() and order == ["then"]
    # a module that fails is skipped (the page imports it again and says why), the rest imported
    assert "glassbox_preload_probe" in sys.modules
    assert "glassbox_preload_broken" not in sys.modules
    sys.modules.pop("glassbox_preload_probe", None)


def test_the_preloaded_modules_exist():
    import importlib.util

    for name in PRELOAD + OTHER_PAGES:
        assert importlib.util.find_spec(name) is not None, name
