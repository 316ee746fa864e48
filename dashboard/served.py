"""Models preselected for a dashboard server: ``glassbox serve`` and ``show()`` name them here.

Two sources, both set by whoever starts the server (never by a browser user):

- ``GLASSBOX_SERVE_MODELS``: a JSON list, fixed for the server's life
  (``glassbox serve --model M --data D ...``);
- ``GLASSBOX_SERVE_MANIFEST``: the path of a JSON file holding such a list, re-read
  whenever its modification time or size changes (``show()`` adds models to a running
  server by rewriting it).

Each entry: ``{"model": path, "data": path, "target": column or null, "name": label,
"key": id}`` (``key`` optional: the ``?model=`` value of the URL, made from the name when
absent). An XGBoost / LightGBM / CatBoost model shown from a notebook also has
``"parts": {"final": path, "step": name, "settings": {...}}``: ``model`` is then the
skops file of the pipeline's preprocessing and ``final`` the library's own file of its
last step (without ``final``, ``model`` is the library file itself); ``settings`` what
the library file does not hold (XGBoost's ``missing``, the wrapper's classes), read by
``explainers.io.models.load_model_parts``. The files are read on the server from these paths by the same safe loaders as
uploads (``explainers.load_model`` / ``load_data``); a pickle is loaded only when the
server itself trusts pickles (``--trust-pickles``), whatever the entry says.

This module needs only the standard library: ``show()`` and the command line import it
without Streamlit.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field

SERVE_ENV = "GLASSBOX_SERVE_MODELS"
MANIFEST_ENV = "GLASSBOX_SERVE_MANIFEST"
#: keys the picker already uses (the upload slot); demo names are passed in by the caller
RESERVED = ("__uploaded__",)


class ServeConfigError(ValueError):
    """The served-model list (environment variable or manifest file) is malformed."""


@dataclass(frozen=True)
class ServedModel:
    """One preselected model and its data, by path on the server's disk."""

    key: str
    name: str
    model: str
    data: str
    target: str | None = None
    description: str | None = None
    parts: dict | None = field(default=None, hash=False)
    #: the model predicts log(target) (or log1p, sqrt): the pages offer the original units
    target_transform: str | None = None

    def to_json(self) -> dict:
        out = {"key": self.key, "name": self.name, "model": self.model, "data": self.data,
               "target": self.target, "description": self.description}
        if self.target_transform is not None:
            out["target_transform"] = self.target_transform
        if self.parts is not None:
            out["parts"] = self.parts
        return out


def slug(name: str) -> str:
    """A URL-friendly key made from a display name (letters, digits, ``_ . -``)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", str(name)).strip("-.") or "model"


def unique_key(base: str, taken) -> str:
    """``base``, or ``base-2``, ``base-3``... : the first not in ``taken``."""
    taken = set(taken)
    if base not in taken:
        return base
    n = 2
    while f"{base}-{n}" in taken:
        n += 1
    return f"{base}-{n}"


def parse_entries(raw, where: str, reserved=()) -> list[ServedModel]:
    """Entries of a served-model list (decoded JSON), checked; keys made unique."""
    if not isinstance(raw, list):
        raise ServeConfigError(f"{where} must hold a JSON list of models, got {type(raw).__name__}.")
    taken = set(RESERVED) | set(reserved)
    out = []
    for i, e in enumerate(raw, 1):
        if not isinstance(e, dict) or not isinstance(e.get("model"), str) or not isinstance(e.get("data"), str):
            raise ServeConfigError(f"Entry {i} of {where} needs \"model\" and \"data\" file paths.")
        target = e.get("target")
        name = str(e.get("name") or os.path.splitext(os.path.basename(e["model"]))[0])
        key = unique_key(slug(e.get("key") or name), taken)
        taken.add(key)
        out.append(ServedModel(key=key, name=name, model=e["model"], data=e["data"],
                               target=None if target in (None, "") else str(target),
                               description=None if e.get("description") is None else str(e["description"]),
                               parts=_parts(e.get("parts"), i, where),
                               target_transform=_transform(e.get("target_transform"), i, where)))
    return out


def _transform(name, i: int, where: str) -> str | None:
    """An entry's ``target_transform`` ("log", "log1p", "sqrt" or none), checked."""
    from explainers.errors import ExplainerError
    from explainers.target_scale import check_transform

    try:
        return check_transform(name, "glassbox serve")
    except ExplainerError:
        raise ServeConfigError(f"Entry {i} of {where}: target_transform must be log, log1p, sqrt or none, "
                               f"got {name!r}.") from None


def _parts(parts, i: int, where: str) -> dict | None:
    """An entry's ``parts`` (see the module docstring), checked for shape; the loader checks values."""
    if parts is None:
        return None
    ok = (isinstance(parts, dict) and set(parts) <= {"final", "step", "settings"}
          and isinstance(parts.get("final", ""), str) and isinstance(parts.get("step", ""), str)
          and isinstance(parts.get("settings", {}), dict))
    if not ok:
        raise ServeConfigError(f"Entry {i} of {where}: \"parts\" must be an object with \"final\" (a path), "
                               "\"step\" (a name) and \"settings\" (an object).")
    return parts


def _decode(text: str, where: str):
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ServeConfigError(f"{where} is not valid JSON ({exc}).") from None


_MANIFEST_CACHE: dict = {}


def read_manifest(path: str) -> list:
    """The raw list in a manifest file, re-read only when its mtime or size changed."""
    try:
        st = os.stat(path)
    except OSError:
        return []  # the show() session ended: no models from it any more
    stamp = (st.st_mtime_ns, st.st_size)
    hit = _MANIFEST_CACHE.get(path)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    with open(path, encoding="utf-8") as f:
        raw = _decode(f.read(), f"The manifest {path}")
    _MANIFEST_CACHE[path] = (stamp, raw)
    return raw


def served_models(reserved=(), environ=None) -> list[ServedModel]:
    """Every preselected model, in order: those of GLASSBOX_SERVE_MODELS, then the manifest's."""
    environ = os.environ if environ is None else environ
    raw: list = []
    sources = []
    if environ.get(SERVE_ENV, "").strip():
        sources.append((_decode(environ[SERVE_ENV], SERVE_ENV), SERVE_ENV))
    if environ.get(MANIFEST_ENV, "").strip():
        sources.append((read_manifest(environ[MANIFEST_ENV]), f"The manifest {environ[MANIFEST_ENV]}"))
    for listed, where in sources:
        if not isinstance(listed, list):
            raise ServeConfigError(f"{where} must hold a JSON list of models, got {type(listed).__name__}.")
        raw += listed
    return parse_entries(raw, "the served models", reserved) if raw else []


def write_manifest(path: str, entries: list[ServedModel]) -> None:
    """Replace the manifest atomically (a reader never sees half a file)."""
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump([e.to_json() for e in entries], f, indent=1)
    os.replace(tmp, path)
