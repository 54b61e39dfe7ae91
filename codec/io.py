"""Blocking I/O: framed messages read from and written to files, pipes and sockets.

The counterpart of Java's ``parseDelimitedFrom``/``writeDelimitedTo`` for
Python's blocking streams, on top of the sans-IO framing layer.

Strategy, reading: :func:`read_frames` checks its arguments and makes one
:class:`~codec.framing.FrameDecoder` when it is called, then hands out a
generator that reads straight into the decoder's receive window (``recv_into``
of a socket, else ``readinto1`` or ``readinto`` of a binary file, into the view
``get_buffer()`` gives) and yields the complete frames of each read before
making the next. Bytes are never copied on the way in and never held anywhere
but the window, so a stream of any length is read in the memory of one window
(a 64 KiB read and the frame in progress). A read returns as soon as some
bytes are there (``readinto1``, ``recv_into``), so a pipe's or socket's frames
come out as they arrive. The decoder's errors and limits are the reader's: a
stream that ends at a frame boundary stops the iteration, one that ends
inside a frame raises :class:`~codec.errors.TruncatedError`, and an oversized
or malformed prefix raises as soon as it is read, after the frames before it.

Strategy, writing: :func:`write_frames` encodes every message into one
:class:`~codec.framing.FrameEncoder` and hands the sink a zero-copy view of
the pending frames whenever ``batch_size`` bytes are pending, and once at the
end, then clears the encoder for the next batch, so its buffer is reused.
Whatever ends the run early (an encode error, the messages' iterator), the
frames of the messages before it are written first, so the sink holds a valid
stream. An error of the sink itself propagates as the sink raised it, and
nothing more is handed to the sink: its traceback may still hold views of the
encoder's buffer (a Python sink's frame holding the slice it was writing), so
the buffer is neither cleared nor reused, and the encoder, private to the
call, is dropped with the exception.
"""

from __future__ import annotations

import errno
import io
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from codec._buffer import RECEIVE_CHUNK
from codec.framing import (
    DEFAULT_MAX_FRAME_SIZE,
    FrameDecoder,
    FrameEncoder,
    checked_size,
)

if TYPE_CHECKING:
    from codec._generic import Decoder

__all__ = ["WRITE_BATCH", "read_frames", "write_frames"]

M = TypeVar("M")

#: Pending bytes :func:`write_frames` hands the sink at once, by default.
WRITE_BATCH = 64 * 1024


# The frames are typed as FrameDecoder's (codec/_generic.pyi): ``memoryview`` without a
# message type, ``bytes`` with copy=True, else the message type's instances.
@overload
def read_frames(
    source: Any,
    message_type: None = None,
    *,
    max_frame_size: int = ...,
    strict: bool = ...,
    copy: Literal[False] = False,
    chunk_size: int = ...,
) -> Iterator[memoryview]: ...
@overload
def read_frames(
    source: Any,
    message_type: None = None,
    *,
    max_frame_size: int = ...,
    strict: bool = ...,
    copy: Literal[True],
    chunk_size: int = ...,
) -> Iterator[bytes]: ...
@overload
def read_frames(
    source: Any,
    message_type: None = None,
    *,
    max_frame_size: int = ...,
    strict: bool = ...,
    copy: bool,
    chunk_size: int = ...,
) -> Iterator[memoryview | bytes]: ...  # a copy flag known only at run time
@overload
def read_frames(
    source: Any,
    message_type: type[M] | Decoder[M],
    *,
    max_frame_size: int = ...,
    strict: bool = ...,
    copy: bool = ...,
    chunk_size: int = ...,
) -> Iterator[M]: ...
def read_frames(
    source: Any,
    message_type: Any = None,
    *,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    strict: bool = False,
    copy: bool = False,
    chunk_size: int = RECEIVE_CHUNK,
) -> Iterator[Any]:
    """Iterate the frames of a blocking binary stream, parsed with ``message_type`` if given.

    ``source`` is a ``socket.socket`` (``recv_into``) or a binary file, pipe
    or ``io.BytesIO`` (``readinto1``, else ``readinto``). Each read asks for
    ``chunk_size`` bytes, straight into the decoder's window.
    ``message_type``, ``max_frame_size``, ``strict`` and ``copy`` are
    :class:`~codec.FrameDecoder`'s, and so are the frames (``memoryview``
    slices of the window without ``message_type``; ``bytes`` with
    ``copy=True``) and the errors. The arguments are checked at once; the
    stream is read as the iteration goes. The iteration stops at a clean end
    of stream; a stream cut inside a frame raises
    :class:`~codec.errors.TruncatedError` once the frames before the cut are
    out.
    """
    read = stream_reader(source)
    size = checked_size("chunk_size", chunk_size, 1)
    decoder = FrameDecoder(max_frame_size, strict=strict, message_type=message_type, copy=copy)
    return _frames(read, decoder, size)


def write_frames(
    sink: Any,
    messages: Iterable[Any],
    *,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    batch_size: int = WRITE_BATCH,
    deterministic: bool = False,
) -> int:
    """Write each message as a frame to a blocking binary stream; return how many were written.

    ``sink`` is a ``socket.socket`` (``sendall``) or a binary file, pipe or
    ``io.BytesIO`` (``write``, repeated after a partial write). A message is a
    struct, a google.protobuf message or a raw payload (any object with the
    buffer protocol), as for :meth:`codec.FrameEncoder.encode`.
    The frames go through one :class:`~codec.FrameEncoder` (made with
    ``max_frame_size`` and ``deterministic``), handed to the
    sink whenever ``batch_size`` bytes are pending (0: after every frame) and
    at the end. An error (:class:`~codec.errors.EncodeError`,
    :class:`~codec.errors.FrameTooLargeError`, the iterator's) propagates
    once the frames of the messages before it are written. An error of the
    sink (``OSError``, ``ssl.SSLError``, ...) propagates as it is, and
    nothing more is written: how much of the batch being written reached the
    sink is for the sink to tell.
    """
    write = _writer(sink)
    batch = checked_size("batch_size", batch_size)
    encoder = FrameEncoder(max_frame_size, deterministic=deterministic)
    count = 0
    iterator = iter(messages)
    while True:
        try:
            message = next(iterator, _END)
            if message is _END:
                break
            encoder.encode(message)
        except BaseException:
            _flush(encoder, write)
            raise
        count += 1
        if len(encoder) >= batch:
            _flush(encoder, write)
    _flush(encoder, write)
    return count


_END = object()


def _frames(
    read: Callable[[memoryview], int | None], decoder: FrameDecoder, chunk_size: int
) -> Iterator[Any]:
    while True:
        with decoder.get_buffer(chunk_size) as room:
            received = read(room)
        if received is None:
            raise _would_block("source", "has no data")
        if not received:
            decoder.feed_eof()
            return
        decoder.buffer_updated(received)
        yield from decoder


def _flush(encoder: FrameEncoder, write: Callable[[memoryview], None]) -> None:
    """Hand the pending frames to ``write``, then clear the encoder.

    If ``write`` raises, its exception goes out untouched: the view is left to
    the exception (whose traceback may hold slices of it) and the encoder is
    not cleared, which would raise ``BufferError`` over the sink's error.
    """
    if not len(encoder):
        return
    pending = encoder.getbuffer()
    write(pending)
    pending.release()
    encoder.clear()


def stream_reader(source: Any) -> Callable[[memoryview], int | None]:
    """The method that reads into a view: one read, returning as soon as bytes are there."""
    for name in ("recv_into", "readinto1", "readinto"):
        method = getattr(source, name, None)
        if callable(method):
            return method  # type: ignore[no-any-return]
    raise TypeError(_not_a_stream("source", source, "readinto() or recv_into()"))


def _writer(sink: Any) -> Callable[[memoryview], None]:
    """A function writing all of a view to ``sink``."""
    sendall = getattr(sink, "sendall", None)
    if callable(sendall):
        return sendall  # type: ignore[no-any-return]
    write = getattr(sink, "write", None)
    if isinstance(sink, io.TextIOBase) or not callable(write):
        raise TypeError(_not_a_stream("sink", sink, "write() of bytes or sendall()"))

    def write_all(data: memoryview) -> None:
        done = 0
        while done < len(data):
            written = write(data[done:])
            if written is None:
                raise _would_block("sink", "is full")
            done += written

    return write_all


def _not_a_stream(name: str, value: Any, needs: str) -> str:
    hint = ""
    if isinstance(value, io.TextIOBase):
        hint = " (a text stream: use its binary buffer, such as sys.stdin.buffer)"
    elif isinstance(value, bytes | bytearray | memoryview):
        hint = " (use an io.BytesIO for bytes in memory)"
    return (
        f"{name} must be a binary file, pipe or socket with {needs},"
        f" not {type(value).__name__}{hint}"
    )


def _would_block(name: str, state: str) -> BlockingIOError:
    return BlockingIOError(
        errno.EAGAIN, f"the {name} is non-blocking and {state}: it must be a blocking stream"
    )
