"""Fixtures the page tests share."""
import pytest


@pytest.fixture
def downloads(monkeypatch):
    """{file name: bytes} of every download button drawn (AppTest keeps no media files)."""
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

    files = {}
    load = MemoryMediaFileStorage.load_and_get_id

    def keep(self, path_or_data, mimetype, kind, filename=None):
        files[filename] = path_or_data
        return load(self, path_or_data, mimetype, kind, filename)

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", keep)
    return files
