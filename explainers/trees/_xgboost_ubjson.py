"""XGBoost's UBJSON model files (``booster.save_model("model.ubj")``): a bounded decoder into
dicts, lists, scalars and numpy arrays, and the message every damaged XGBoost file gets."""
from __future__ import annotations

import re
import struct

import numpy as np

from ..errors import InvalidModelError

__all__ = ["decode_ubjson", "MAX_NESTING"]

#: nesting of objects / arrays accepted in a model file (XGBoost writes about 8 levels)
MAX_NESTING = 64

HINT = ("Save the model again with XGBoost (booster.save_model('model.json') or "
        "model.save_model('model.ubj')) and upload that file.")


def _bad(msg: str) -> InvalidModelError:
    return InvalidModelError(f"{msg} {HINT}")


# ====================================================================== UBJSON
_NUMERIC = {  # marker -> (struct format, numpy big-endian dtype)
    b"i": (">b", ">i1"), b"U": (">B", ">u1"), b"I": (">h", ">i2"), b"l": (">i", ">i4"),
    b"L": (">q", ">i8"), b"d": (">f", ">f4"), b"D": (">d", ">f8"),
}
_SIZES = {m: struct.calcsize(f) for m, (f, _) in _NUMERIC.items()}
_NATIVE = {b"i": np.int8, b"U": np.uint8, b"I": np.int16, b"l": np.int32, b"L": np.int64,
           b"d": np.float32, b"D": np.float64}


class _Frame:
    """One open container while decoding: what is built so far and what is left of it."""

    __slots__ = ("value", "left", "typ", "key")

    def __init__(self, value, left, typ):
        self.value = value  # list or dict
        self.left = left  # elements still to read, or -1 until the end marker
        self.typ = typ  # the optimized element type marker, or None
        self.key = None  # an object's key waiting for its value


class _UbjReader:
    def __init__(self, data: bytes, max_depth: int):
        self.buf = bytes(data)
        self.n = len(self.buf)
        self.pos = 0
        self.max_depth = max_depth

    def _need(self, k: int) -> None:
        if k < 0 or self.pos + k > self.n:
            raise _bad(f"The UBJSON model file ends early (byte {self.pos} of {self.n}): it is truncated.")

    def _byte(self) -> bytes:
        self._need(1)
        b = self.buf[self.pos:self.pos + 1]
        self.pos += 1
        return b

    def _number(self, marker: bytes):
        fmt, _ = _NUMERIC[marker]
        size = _SIZES[marker]
        self._need(size)
        (v,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += size
        return v

    def _length(self, marker: bytes | None = None) -> int:
        m = self._byte() if marker is None else marker
        if m not in (b"i", b"U", b"I", b"l", b"L"):
            raise _bad(f"The UBJSON model file has a length of type {m!r} at byte {self.pos - 1}, "
                       "not an integer.")
        k = self._number(m)
        if k < 0:
            raise _bad(f"The UBJSON model file states a negative length ({k}) at byte {self.pos}.")
        return k

    def _string(self, k: int) -> str:
        self._need(k)
        raw = self.buf[self.pos:self.pos + k]
        self.pos += k
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise _bad(f"The UBJSON model file has a string that is not UTF-8 at byte {self.pos - k}.") from None

    def _scalar(self, m: bytes):
        if m in _NUMERIC:
            return self._number(m)
        if m == b"S":
            return self._string(self._length())
        if m == b"H":  # high-precision number, written as a string
            text = self._string(self._length())
            try:
                return int(text) if re.fullmatch(r"-?[0-9]+", text) else float(text)
            except ValueError:
                raise _bad(f"The UBJSON model file has the malformed number {text[:40]!r}.") from None
        if m == b"C":
            return self._string(1)
        if m == b"T":
            return True
        if m == b"F":
            return False
        if m == b"Z":
            return None
        raise _bad(f"The UBJSON model file has the unknown type marker {m!r} at byte {self.pos - 1}.")

    def _open(self, m: bytes):
        """Read a container's header; return its frame, or a finished typed array."""
        typ, count = None, -1
        self._need(1)
        nxt = self.buf[self.pos:self.pos + 1]
        if nxt == b"$":
            self.pos += 1
            typ = self._byte()
            if self._byte() != b"#":
                raise _bad(f"The UBJSON model file gives a container type without a count at byte {self.pos - 1}.")
            count = self._length()
        elif nxt == b"#":
            self.pos += 1
            count = self._length()
        remaining = self.n - self.pos
        if typ is not None:
            if typ in _NUMERIC:
                size = _SIZES[typ]
                if m == b"{":
                    per = size + 2  # a key's length marker and length, at the least
                else:
                    per = size
            elif typ in (b"S", b"H", b"C", b"[", b"{"):
                per = 1 if m == b"[" else 3
            else:
                raise _bad(f"The UBJSON model file has a container of {typ!r} values, which this "
                           "reader does not take (XGBoost never writes one).")
            if count > remaining // per:
                raise _bad(f"The UBJSON model file claims {count:,} elements at byte {self.pos} but "
                           f"only {remaining:,} bytes follow: it is truncated or damaged.")
            if m == b"[" and typ in _NUMERIC:
                nbytes = count * size
                arr = np.frombuffer(self.buf, dtype=_NUMERIC[typ][1], count=count, offset=self.pos)
                self.pos += nbytes
                return None, arr.astype(_NATIVE[typ])
        elif count >= 0 and count > remaining // (1 if m == b"[" else 3):
            raise _bad(f"The UBJSON model file claims {count:,} elements at byte {self.pos} but "
                       f"only {remaining:,} bytes follow: it is truncated or damaged.")
        return _Frame([] if m == b"[" else {}, count, typ), None

    def decode(self):
        stack: list[_Frame] = []
        root = _Frame([], 1, None)  # a one-element holder for the document
        stack.append(root)
        while True:
            top = stack[-1]
            if top.left == 0:
                stack.pop()
                if not stack:
                    break
                self._attach(stack[-1], top.value)
                continue
            is_obj = isinstance(top.value, dict)
            # an unsized container ends at its marker; 'N' (no-op) may pad anywhere
            if top.typ is None:
                self._need(1)
                peek = self.buf[self.pos:self.pos + 1]
                while peek == b"N":
                    self.pos += 1
                    self._need(1)
                    peek = self.buf[self.pos:self.pos + 1]
                if top.left < 0 and (is_obj and top.key is None and peek == b"}" or not is_obj and peek == b"]"):
                    self.pos += 1
                    top.left = 0
                    continue
            if is_obj and top.key is None:
                top.key = self._string(self._length())
                continue
            m = top.typ if top.typ is not None else self._byte()
            if m in (b"[", b"{"):
                if len(stack) > self.max_depth:
                    raise _bad(f"The UBJSON model file nests containers more than {self.max_depth} "
                               "levels deep; an XGBoost model never does.")
                frame, arr = self._open(m)
                if frame is None:
                    self._attach(top, arr)
                else:
                    stack.append(frame)
                continue
            self._attach(top, self._scalar(m))
        if self.pos < self.n and self.buf[self.pos:].strip(b"N \t\r\n"):
            raise _bad(f"The UBJSON model file has {self.n - self.pos:,} unexpected bytes after its end.")
        return root.value[0]

    @staticmethod
    def _attach(frame: _Frame, value) -> None:
        if isinstance(frame.value, dict):
            frame.value[frame.key] = value
            frame.key = None
        else:
            frame.value.append(value)
        if frame.left > 0:
            frame.left -= 1


def decode_ubjson(data: bytes, *, max_depth: int = MAX_NESTING):
    """Decode a UBJSON document into dicts, lists, scalars and numpy arrays.

    Typed numeric arrays (``[$d#L...``) become numpy arrays of the native
    byte order. Raises :class:`InvalidModelError` for a damaged document.
    """
    return _UbjReader(data, max_depth).decode()
