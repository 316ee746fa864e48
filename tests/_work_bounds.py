"""Bounds on the work a call does, for tests that guard against a slow path.

No test here asserts a wall-clock limit (machines are shared and a timed test fails under
load): a test bounds what the code does instead. :func:`peak_allocation` measures the peak
memory that Python and NumPy allocate inside a block (``tracemalloc`` counts bytes, not
seconds), so "a hostile file is refused before its claimed size is allocated or parsed"
is a bound that holds on a busy machine too.
"""
from __future__ import annotations

import contextlib
import tracemalloc


class Allocation:
    """What :func:`peak_allocation` measured: ``peak`` bytes above those held when it began."""

    peak: int = 0

    def __repr__(self) -> str:
        return f"Allocation(peak={self.peak:,} bytes)"


@contextlib.contextmanager
def peak_allocation():
    """Measure the peak of the bytes allocated (and still held) inside the block.

    Usage::

        with peak_allocation() as mem:
            work()
        assert mem.peak < 4 << 20

    The block may raise (a refusal under test); the peak is recorded either way.
    """
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    out = Allocation()
    try:
        yield out
    finally:
        out.peak = max(0, tracemalloc.get_traced_memory()[1] - base)
        if started:
            tracemalloc.stop()


def file_budget(data: bytes | str, per_byte: int = 16, fixed: int = 16 << 20) -> int:
    """Bytes a reader may allocate to refuse ``data``: linear in the file, whatever the file claims.

    A hostile file that claims 10**12 elements, 2**40 leaves or a billion nodes must be
    refused from its header, before any of that is allocated; a file's own bytes may be
    decoded (``per_byte`` allows for the Python objects and arrays decoded from them; ``fixed``
    for the reader's own tables). Today's readers stay well inside it: under 40 MB for a 6 MB
    file, under 10 MB for the others.
    """
    return fixed + per_byte * len(data)
