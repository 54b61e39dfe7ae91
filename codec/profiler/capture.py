"""Capture files: a profiler stream in a file, with a keyframe every N frames, read from any.

A capture is the stream as a viewer receives it, so a file cut anywhere
still holds whole packets after its first whole keyframe.

Strategy, writing: :class:`FileSink` is a profiler sink that writes the
stream straight from the profiler's buffer (no copy): a keyframe first,
then every packet, and a fresh keyframe after every ``keyframe_every``
frames. :func:`record` does the same as a viewer of a
:class:`~codec.profiler.server.ProfileServer`: it reads the server's packets
with a :class:`~codec.profiler.receiver.Receiver` (which keeps the registry
and the session), writes each packet's bytes as received, and inserts
keyframes built from the receiver's registry.

Strategy, reading: :func:`read_capture` starts at the first keyframe, found
by the header's magic number (:func:`find_keyframe`), and, after a damaged
packet, resumes at the next keyframe, so a file cut anywhere still yields
every frame after its first whole keyframe. It splits the packets itself,
straight from the file's bytes, so a resync never copies the rest of the
file again: reading is linear in the file's size, however often it is
damaged. The receivers it starts share what the last keyframe decoded to
(:meth:`~codec.profiler.receiver.Receiver.resync`), so a keyframe that
recurs after each damaged packet is parsed once.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO, TypeAlias

from codec import varint
from codec.errors import DecodeError, StreamError, TruncatedError
from codec.framing import DEFAULT_MAX_FRAME_SIZE, FrameEncoder
from codec.profiler.client import connect_viewer
from codec.profiler.model import Frame
from codec.profiler.packets import MAGIC, PacketField, PacketWriter, Session, StreamHeaderField
from codec.profiler.receiver import DEFAULT_MAX_ELEMENTS, Receiver
from codec.profiler.recording import Profiler
from codec.wire import I32, LEN, VARINT, WireReader

__all__ = [
    "DEFAULT_KEYFRAME_EVERY",
    "FileSink",
    "RecordStats",
    "find_keyframe",
    "read_capture",
    "record",
]

# Frames between two keyframes of a capture (5 s at 60 frames a second).
DEFAULT_KEYFRAME_EVERY = 300

File: TypeAlias = str | os.PathLike[str] | BinaryIO


# --- writing ----------------------------------------------------------------------------------


class _KeyframeCadence:
    """When a capture repeats its keyframe: after every ``every`` frames since the last one."""

    def __init__(self, every: int) -> None:
        if every < 1:
            raise ValueError(f"keyframe_every must be at least 1, got {every}")
        self.every = every
        self._since = 0

    def restart(self) -> None:
        """A keyframe was written: count from it."""
        self._since = 0

    def frame_written(self) -> bool:
        """Count a frame written; whether a keyframe is due after it."""
        self._since += 1
        return self._since == self.every


@contextlib.contextmanager
def _opened(file: File) -> Iterator[BinaryIO]:
    """A binary file to write: opened (and closed) here for a path, else as given."""
    if isinstance(file, str | os.PathLike):
        with open(file, "wb") as opened:
            yield opened
    else:
        yield file


class FileSink:
    """A profiler sink that records the stream to a file, with a keyframe every N frames.

    ``file`` is a path (opened here, closed by :meth:`close`) or a binary
    file (flushed by :meth:`close`, left open). The sink attaches itself to
    ``profiler``; :meth:`close` detaches it.
    """

    def __init__(
        self, file: File, profiler: Profiler, *, keyframe_every: int = DEFAULT_KEYFRAME_EVERY
    ) -> None:
        self._cadence = _KeyframeCadence(keyframe_every)
        self.profiler = profiler
        self.keyframe_every = keyframe_every
        self.frames = 0
        self.keyframes = 0
        self.bytes_written = 0
        self._lock = threading.Lock()
        self._files = contextlib.ExitStack()
        self._file = self._files.enter_context(_opened(file))
        self._started = False  # the first keyframe is written
        self._closed = False
        # Attached first, then the keyframe: definitions sent to the sinks
        # before it are all in it, and those sent after follow it.
        profiler.add_sink(self)
        with self._lock:
            self._keyframe()
            self._started = True

    def _write(self, data: Any) -> None:
        self.bytes_written += self._file.write(data) or 0

    def _keyframe(self) -> None:
        self._write(self.profiler.keyframe())
        self.keyframes += 1
        self._cadence.restart()

    def send(self, registry: memoryview, frame: memoryview) -> None:
        """The profiler's sink method: write the packets as they are."""
        with self._lock:
            if not self._started:
                return  # a frame ended while the first keyframe was being taken
            if len(registry):
                self._write(registry)
            self._write(frame)
            self.frames += 1
            if self._cadence.frame_written():
                self._keyframe()

    def close(self) -> None:
        """Detach from the profiler; close the file if it was opened here, else flush it."""
        # Not under our lock: send() takes it under the profiler's lock.
        with contextlib.suppress(ValueError):  # already detached
            self.profiler.remove_sink(self)
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._file.flush()
            self._files.close()

    def __enter__(self) -> FileSink:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


@dataclass
class RecordStats:
    """What :func:`record` wrote."""

    frames: int = 0
    keyframes: int = 0  # the server's and the inserted ones
    bytes_written: int = 0
    frames_dropped: int = 0  # by the server, for this recorder


async def record(
    host: str,
    port: int,
    file: File,
    *,
    keyframe_every: int = DEFAULT_KEYFRAME_EVERY,
    duration: float | None = None,
    frames: int | None = None,
) -> RecordStats:
    """Record the stream of the :class:`~codec.profiler.server.ProfileServer` at
    ``host:port`` to ``file``.

    Connects as a viewer and writes every packet as received, plus a
    keyframe (header and full registry) after every ``keyframe_every``
    frames, so that :func:`read_capture` can read the file from any
    keyframe. ``file`` is a path or a binary file (left open).
    Stops after ``duration`` seconds or ``frames`` frames, whichever comes
    first, or when the server closes the connection; cancelling it also
    leaves a file of whole packets. Raises :class:`OSError` if the server
    cannot be reached and :class:`~codec.errors.DecodeError` for a stream
    that is not a profiler stream.
    """
    cadence = _KeyframeCadence(keyframe_every)
    stats = RecordStats()
    deadline = None if duration is None else asyncio.get_running_loop().time() + duration
    out = FrameEncoder()
    keyframes: PacketWriter | None = None
    with _opened(file) as sink:
        async with await connect_viewer(host, port) as client:
            receiver = client.receiver
            with contextlib.suppress(TimeoutError, EOFError, TruncatedError, ConnectionError):
                async with asyncio.timeout_at(deadline):
                    while frames is None or stats.frames < frames:
                        payload, item = await client.next_packet()
                        out.write(payload)
                        if isinstance(item, Session):
                            keyframes = PacketWriter(item)
                            stats.keyframes += 1
                            cadence.restart()
                        elif isinstance(item, Frame):
                            stats.frames += 1
                            if cadence.frame_written() and keyframes is not None:
                                keyframes.keyframe(out, receiver.registry)
                                stats.keyframes += 1
                                cadence.restart()
                        with out.getbuffer() as packets:
                            stats.bytes_written += sink.write(packets) or 0
                        out.clear()
            stats.frames_dropped = receiver.frames_dropped
        sink.flush()
    return stats


# --- reading ----------------------------------------------------------------------------------


def _tag(field: int, wire_type: int) -> int:
    return field << 3 | wire_type


# The header's magic as it appears in a packet: its tag, then the fixed32.
_MAGIC_FIELD = bytes([_tag(StreamHeaderField.MAGIC, I32)]) + MAGIC.to_bytes(4, "little")
# A header packet starts with its flags or with the header.
_FIRST_TAGS = (_tag(PacketField.SEQUENCE_FLAGS, VARINT), _tag(PacketField.HEADER, LEN))


def find_keyframe(data: bytes, start: int = 0) -> int:
    """The offset of the first header packet at or after ``start``, or -1 if there is none.

    It looks for the header's magic number, then for a packet that starts
    at most 14 bytes before it (a length prefix, the flags field, the
    header's tag and length) and decodes as a header, nearest first: a
    start further back whose length prefix is made of damaged bytes could
    decode as the same header inside a longer, bogus packet.
    """
    found = data.find(_MAGIC_FIELD, start)
    while found >= 0:
        for begin in range(found - 1, max(start, found - 14) - 1, -1):
            if _is_header_packet(data, begin):
                return begin
        found = data.find(_MAGIC_FIELD, found + 1)
    return -1


def _is_header_packet(data: bytes, begin: int) -> bool:
    """Whether a packet starting at ``begin`` is a header: its flags, then a header whose
    first field is the magic (the order ``PacketWriter`` writes). Only those first fields
    are read, so a hostile file full of magic numbers costs a few checks per candidate."""
    try:
        length, body = varint.decode(data, begin)
        if length > DEFAULT_MAX_FRAME_SIZE or body + length > len(data) or length < 7:
            return False
        if data[body] not in _FIRST_TAGS:
            return False
        packet = WireReader(memoryview(data)[body : body + length])
        for field, wire_type, value in itertools.islice(packet, 2):
            if field == PacketField.HEADER and wire_type == LEN:
                return next(WireReader(value), None) == (StreamHeaderField.MAGIC, I32, MAGIC)
    except DecodeError:
        return False
    return False


def read_capture(
    data: bytes,
    *,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    max_elements: int = DEFAULT_MAX_ELEMENTS,
) -> Iterator[tuple[Receiver, Session | Frame]]:
    """Every session header and frame of a recorded stream, with the receiver that read it.

    Reading starts at the first keyframe. A damaged packet ends the current
    receiver, and reading resumes, with a new one, at the next keyframe
    after the start of that packet; a packet cut by the end of the data ends
    the capture, unless a keyframe follows its start (a damaged length
    prefix that runs past the end).

    The packets are split here, straight from ``data``, and handed to the
    receiver one by one: no byte is copied into a decoder, so each resync
    costs only what it reads, and a file of damage after damage is read in
    time linear in its size. The limits are each receiver's; a packet over
    ``max_elements`` counts as damaged.
    """
    view = memoryview(data)
    end = len(data)
    receiver = Receiver(max_frame_size=max_frame_size, max_elements=max_elements)
    start = find_keyframe(data)
    while start >= 0:
        pos = start
        try:
            while pos < end:
                packet = pos
                size, body = varint.decode(data, pos)
                pos = body + size
                if size > max_frame_size or pos > end:
                    raise StreamError("a packet runs past the end or over max_frame_size", packet)
                item = receiver.read_packet(view[body:pos], pos - packet)
                if item is not None:
                    yield receiver, item
            return
        except DecodeError:  # a damaged packet, or the last one cut short
            start = find_keyframe(data, packet + 1)
            receiver = receiver.resync()
