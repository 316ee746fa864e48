"""dashboard.__main__: the first page's modules are imported once the server listens, not before."""
import socket
import sys
import time

from dashboard.__main__ import _listen_address, command, preload_after_listening


def test_the_address_the_server_listens_on_is_read_from_its_flags():
    assert _listen_address(command([])) == ("127.0.0.1", 8501)
    assert _listen_address(command(["--server.port=9000"])) == ("127.0.0.1", 9000)
    assert _listen_address(command(["--server.address", "0.0.0.0", "--server.port", "77", "--", "--x"])) == (
        "127.0.0.1", 77)
    # the app's own options after "--" are not Streamlit's
    assert _listen_address(command(["--", "--server.port=1"])) == ("127.0.0.1", 8501)


def test_modules_are_imported_only_once_the_port_answers(tmp_path, monkeypatch):
    (tmp_path / "glassbox_preload_probe.py").write_text("import time\nIMPORTED_AT = time.monotonic()\n")
    (tmp_path / "glassbox_preload_broken.py").write_text("raise RuntimeError('broken')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("glassbox_preload_probe", None)
    with socket.socket() as s:  # a free port, closed: nothing answers yet
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    thread = preload_after_listening(("127.0.0.1", port), ("glassbox_preload_broken", "glassbox_preload_probe"),
                                     wait=30)
    time.sleep(0.5)
    assert "glassbox_preload_probe" not in sys.modules  # still waiting for the server
    with socket.socket() as server:
        server.bind(("127.0.0.1", port))
        server.listen()
        listening = time.monotonic()
        thread.join(20)
    assert not thread.is_alive()
    # a module that fails is skipped (the page imports it again and says why), the rest imported
    assert sys.modules["glassbox_preload_probe"].IMPORTED_AT >= listening
    assert "glassbox_preload_broken" not in sys.modules
    sys.modules.pop("glassbox_preload_probe", None)
