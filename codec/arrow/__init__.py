"""Framed protobuf streams as Arrow record batches, with no Python object per message.

::

    import codec.arrow

    for batch in codec.arrow.read_batches(open("spans.bin", "rb"), Span):
        ...  # a pyarrow.RecordBatch of up to 65,536 spans
    table = codec.arrow.read_table(data, Span)  # bytes, or a file: every batch
    codec.arrow.schema(Span)  # the pyarrow.Schema of both
    codec.arrow.read_dask("spans/*.bin", Span)  # a dask DataFrame, a partition a file

Strategy: a :class:`codec.FrameDecoder` splits the stream and checks each
frame's prefix; it hands out the complete frames a run at a time
(``take_frames``), and the compiled walk of ``codec.arrow._builders``
decodes each frame into a row of column builders, whose buffers become the
batch's arrays without a copy. The schema comes from the message type, so
every batch of it has the same one (``codec.arrow._schema`` gives the
mapping). pyarrow is an optional dependency (``pip install codec[arrow]``);
the rest of codec does not import this module.

Errors are the frame decoder's and the struct decoder's (the
:class:`~codec.errors.DecodeError` family, with the stream offset); the rows
of the frames before a bad one come out as a batch first, so nothing read is
lost.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from codec._buffer import RECEIVE_CHUNK
from codec._wire import DEFAULT_MAX_DEPTH, checked_count, checked_flag
from codec.arrow._builders import decode_frames
from codec.arrow._scale import read_dask
from codec.arrow._schema import Layout, plan_for
from codec.errors import DecodeError
from codec.framing import DEFAULT_MAX_FRAME_SIZE, FrameDecoder, checked_size
from codec.io import stream_reader

if TYPE_CHECKING:
    import pyarrow

__all__ = ["DEFAULT_BATCH_SIZE", "read_batches", "read_dask", "read_table", "schema"]

#: Rows in a batch of :func:`read_batches`, unless asked otherwise.
DEFAULT_BATCH_SIZE = 1 << 16


def schema(message_type: Any, *, large_types: bool = False) -> pyarrow.Schema:
    """The Arrow schema of the batches of ``message_type`` (a struct or pb2 message class).

    ``large_types`` gives strings, bytes and lists 64-bit offsets
    (``large_string``, ``large_binary``, ``large_list``), for batches holding
    more than 2 GiB in one column.
    """
    return Layout(_arrow(), plan_for(message_type), checked_flag("large_types", large_types)).schema


def read_batches(
    source: Any,
    message_type: Any,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    large_types: bool = False,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    strict: bool = False,
    max_depth: int = DEFAULT_MAX_DEPTH,
    chunk_size: int = RECEIVE_CHUNK,
) -> Iterator[pyarrow.RecordBatch]:
    """Iterate the messages of a framed stream as ``pyarrow.RecordBatch``es.

    ``source`` is bytes (any buffer), or a blocking binary stream as for
    :func:`codec.read_frames` (a file, a socket, ``io.BytesIO``), read
    ``chunk_size`` bytes at a time: memory holds a batch and a chunk, not the
    stream. Each batch has ``batch_size`` rows, the last one fewer.
    ``max_frame_size`` and ``strict`` are the frame decoder's, ``max_depth``
    the nesting limit of the struct decoder. The arguments are checked at
    once; the stream is read as the iteration goes.
    """
    pa = _arrow()
    layout = Layout(pa, plan_for(message_type), checked_flag("large_types", large_types))
    rows = checked_size("batch_size", batch_size, 1)
    depth = checked_count("max_depth", max_depth)
    chunk = checked_size("chunk_size", chunk_size, 1)
    decoder = FrameDecoder(max_frame_size, strict=strict)
    if not callable(getattr(source, "read", None)) and not hasattr(source, "recv_into"):
        source = io.BytesIO(memoryview(source))  # raises TypeError for what is not bytes
    return _batches(layout, decoder, stream_reader(source), rows, depth, chunk)


def read_table(source: Any, message_type: Any, **options: Any) -> pyarrow.Table:
    """Every message of a framed stream as one ``pyarrow.Table`` (see :func:`read_batches`)."""
    batches = list(read_batches(source, message_type, **options))
    large = options.get("large_types", False)
    return _arrow().Table.from_batches(batches, schema=schema(message_type, large_types=large))


def _batches(
    layout: Layout, decoder: FrameDecoder, read: Any, rows: int, depth: int, chunk: int
) -> Iterator[Any]:
    root = layout.root
    offset = 0  # the stream offset of the next frame taken
    error: DecodeError | None = None
    while error is None:
        try:
            frames = decoder.take_frames(rows - root.length)
            if not len(frames):
                with decoder.get_buffer(chunk) as room:
                    received = read(room)
                if not received:
                    decoder.feed_eof()  # raises for a stream cut inside a frame
                    break
                decoder.buffer_updated(received)
                continue
            size = len(frames)
            with frames:
                decode_frames(root, frames, offset, depth)
            offset += size
        except DecodeError as exc:
            error = exc  # the rows before its frame go out first
        if root.length == rows:
            yield layout.batch()
    if root.length:
        yield layout.batch()
    if error is not None:
        raise error


def _arrow() -> Any:
    try:
        import pyarrow
    except ImportError:
        raise ImportError("codec.arrow needs pyarrow: pip install codec[arrow]") from None
    return pyarrow
