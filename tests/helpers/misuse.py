"""Helpers of the misuse tests: values that call back into the codec, threads that race.

The re-entry tables (``ENCODER_REENTRY``, ``WRITER_REENTRY``,
``DECODER_REENTRY``) name each call that may be made on an object from a
callback inside a call on that same object; the tests of ``test_framing.py``
and ``test_wire.py`` and the figure script ``fuzz/figures/misuse.py`` make them.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

import numpy as np

import codec

from .peerbench import Sample, sample


class Reentrant:
    """A number whose ``__index__`` first runs ``action``, noting what it raised each time."""

    def __init__(self, value: int, action: Callable[[], object]) -> None:
        self.value = value
        self.action = action
        self.outcomes: list[str] = []

    def __index__(self) -> int:
        try:
            self.action()
        except RuntimeError as exc:
            self.outcomes.append(str(exc))
        else:
            self.outcomes.append("done")
        return self.value


def race(*targets: Callable[[], object]) -> None:
    """Run each target in a thread of its own, switching threads as often as possible."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        threads = [threading.Thread(target=target) for target in targets]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)


class Overlap:
    """Two threads on one object whose calls are made to overlap at least once.

    The slow side calls :meth:`pause` from inside its call (a value's
    ``__index__``): the first time, it waits until the other side has tried a
    call; every time, it yields the GIL. The other side runs :meth:`tries`
    once the slow side is inside, until it has finished. Calls refused with
    ``RuntimeError`` are noted in ``refused``.
    """

    def __init__(self) -> None:
        self.inside = threading.Event()
        self.tried = threading.Event()
        self.finished = threading.Event()
        self.refused: list[str] = []

    def pause(self) -> None:
        if not self.inside.is_set():
            self.inside.set()
            self.tried.wait(10)
        time.sleep(0)

    def tries(self, call: Callable[[int], object], done: list[object]) -> None:
        """``call(i)`` for i = 0, 1, ...; what each call that returned gives goes to ``done``."""
        self.inside.wait(10)
        for i in range(20_000):
            try:
                result = call(i)
            except RuntimeError as exc:
                self.refused.append(str(exc))
            else:
                done.append(result)
            self.tried.set()
            if self.finished.is_set():
                return


# --- re-entry: the calls made on an object from a callback inside a call on it -------

_SampleStruct = codec.struct(Sample)

ENCODER_REENTRY: dict[str, Callable[[codec.FrameEncoder], object]] = {
    "write": lambda encoder: encoder.write(b"inner"),
    "encode a struct": lambda encoder: encoder.encode(_SampleStruct(name="inner")),
    "encode a pb2 message": lambda encoder: encoder.encode(sample()),
    "frame": lambda encoder: encoder.frame().__enter__(),
    "clear": lambda encoder: encoder.clear(),
    "shrink": lambda encoder: encoder.shrink(),
    "getbuffer": lambda encoder: encoder.getbuffer(),
    "a WireWriter over it": lambda encoder: codec.wire.WireWriter(encoder).uint32(1, 1),
    "__init__": lambda encoder: encoder.__init__(),  # type: ignore[misc]
}
WRITER_REENTRY: dict[str, Callable[[codec.wire.WireWriter], object]] = {
    "scalar": lambda writer: writer.uint32(2, 1),
    "double": lambda writer: writer.double(2, 1.0),
    "bytes": lambda writer: writer.bytes(2, b"x"),
    "string": lambda writer: writer.string(2, "x"),
    "tag": lambda writer: writer.tag(2, 0),
    "raw": lambda writer: writer.raw(b"\x10\x01"),
    "packed sequence": lambda writer: writer.packed(2, "int32", [1]),
    "packed numpy": lambda writer: writer.packed(2, "int32", np.array([1], dtype=np.int32)),
    "packed fixed-width numpy": lambda writer: writer.packed(2, "double", np.zeros(1)),
    "message": lambda writer: writer.message(2).__enter__(),
    "clear": lambda writer: writer.buffer.clear(),
    "getbuffer": lambda writer: writer.buffer.getbuffer(),
    "another writer": lambda writer: codec.wire.WireWriter(writer.buffer).uint32(2, 1),
}
DECODER_REENTRY: dict[str, Callable[[codec.FrameDecoder], object]] = {
    "feed": lambda decoder: decoder.feed(b"\x01x"),
    "get_buffer": lambda decoder: decoder.get_buffer(16),
    "buffer_updated": lambda decoder: decoder.buffer_updated(0),
    "next_frame": lambda decoder: decoder.next_frame(),
    "take_frames": lambda decoder: decoder.take_frames(1),
    "iteration": lambda decoder: list(decoder),
    "feed_eof": lambda decoder: decoder.feed_eof(),
    "frame_in_progress": lambda decoder: decoder.frame_in_progress,
    "shrink": lambda decoder: decoder.shrink(),
    "__init__": lambda decoder: decoder.__init__(),  # type: ignore[misc]
}
