"""Framed protobuf streams as Arrow record batches, with no Python object per message.

::

    import codec.arrow

    for batch in codec.arrow.read_batches(open("spans.bin", "rb"), Span):
        ...  # a pyarrow.RecordBatch of up to 65,536 spans
    table = codec.arrow.read_table(data, Span)  # bytes, or a file: every batch
    codec.arrow.schema(Span)  # the pyarrow.Schema of both
    codec.arrow.read_dask("spans/*.bin", Span)  # a dask DataFrame, a partition a file
    codec.arrow.read_ray("spans/*.bin", Span)  # a ray Dataset, a read task a file
    codec.arrow.write_index("spans/big.bin")  # ... or a part of every 65,536 frames
    codec.arrow.write_frames(encoder, table, Span)  # each row a frame, into a FrameEncoder

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

The way back is the same mapping read the other way: each row of a batch
whose schema is the message type's becomes a frame, written straight into a
:class:`codec.FrameEncoder`'s buffer by the compiled walk of
``codec.arrow._writers``, with no object made per row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from codec._buffer import RECEIVE_CHUNK
from codec._varint import byte_view
from codec._wire import DEFAULT_MAX_DEPTH, checked_count, checked_flag
from codec.arrow._builders import decode_frames, decode_stream
from codec.arrow._scale import INDEX_SUFFIX, read_dask, read_ray, write_index
from codec.arrow._schema import DEFAULT_BATCH_SIZE, Layout, plan_for, schema_options
from codec.arrow._writers import encode_batches
from codec.errors import DecodeError
from codec.framing import (
    DEFAULT_MAX_FRAME_SIZE,
    FrameDecoder,
    FrameEncoder,
    checked_offset,
    checked_size,
    frame_error,
)
from codec.io import stream_reader

if TYPE_CHECKING:
    import pyarrow

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "INDEX_SUFFIX",
    "read_batches",
    "read_dask",
    "read_ray",
    "read_table",
    "schema",
    "write_frames",
    "write_index",
]


def schema(
    message_type: Any, *, large_types: bool = False, enum_names: bool = False
) -> pyarrow.Schema:
    """The Arrow schema of the batches of ``message_type`` (a struct or pb2 message class).

    ``large_types`` gives strings, bytes and lists 64-bit offsets
    (``large_string``, ``large_binary``, ``large_list``), for batches holding
    more than 2 GiB in one column. ``enum_names`` makes each enum a
    dictionary column of its values' names (``dictionary<values=string,
    indices=int32>``) instead of ``int32`` numbers; a number the enum does
    not declare reads as its digits (``"17"``).
    """
    layout = _layout(_arrow(), plan_for(message_type), large_types, enum_names)
    _give_back(layout)
    return layout.schema


def read_batches(
    source: Any,
    message_type: Any,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    large_types: bool = False,
    enum_names: bool = False,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    strict: bool = False,
    max_depth: int = DEFAULT_MAX_DEPTH,
    chunk_size: int = RECEIVE_CHUNK,
    offset: int = 0,
) -> Iterator[pyarrow.RecordBatch]:
    """Iterate the messages of a framed stream as ``pyarrow.RecordBatch``es.

    ``source`` is bytes (any buffer), read in place, or a blocking binary
    stream as for :func:`codec.read_frames` (a file, a socket,
    ``io.BytesIO``), read ``chunk_size`` bytes at a time: memory holds a batch
    and a chunk, not the stream. Each batch has ``batch_size`` rows, the last
    one fewer.
    ``large_types`` and ``enum_names`` are as for :func:`schema`.
    ``max_frame_size`` and ``strict`` are the frame decoder's, ``max_depth``
    the nesting limit of the struct decoder. ``offset`` is the stream offset
    of the source's first byte, for a stream read from a frame in its middle
    (a part of an indexed file): errors count their offsets from the whole
    stream's start. The arguments are checked at once; the stream is read as
    the iteration goes.
    """
    pa = _arrow()
    layout = _layout(pa, plan_for(message_type), large_types, enum_names)
    rows = checked_size("batch_size", batch_size, 1)
    depth = checked_count("max_depth", max_depth)
    chunk = checked_size("chunk_size", chunk_size, 1)
    limit = checked_size("max_frame_size", max_frame_size)
    strict = checked_flag("strict", strict)
    start = checked_offset(offset)
    if callable(getattr(source, "read", None)) or hasattr(source, "recv_into"):
        decoder = FrameDecoder(limit, strict=strict, offset=start)
        take = _from_stream(layout.root, decoder, stream_reader(source), depth, chunk, start)
    else:
        take = _in_place(layout.root, byte_view(source, False), depth, start, limit, strict)
    return _batches(layout, take, rows)


def read_table(source: Any, message_type: Any, **options: Any) -> pyarrow.Table:
    """Every message of a framed stream as one ``pyarrow.Table`` (see :func:`read_batches`)."""
    batches = list(read_batches(source, message_type, **options))
    if batches:  # each has the schema
        return _arrow().Table.from_batches(batches)
    return _arrow().Table.from_batches([], schema=schema(message_type, **schema_options(options)))


def write_frames(
    encoder: FrameEncoder, data: Any, message_type: Any, *, partial: bool = False
) -> int:
    """Append each row of ``data`` to ``encoder`` as a frame of ``message_type``.

    ``data`` is a ``pyarrow.RecordBatch`` or ``Table``, an iterable of them,
    or anything that exports an Arrow stream (``__arrow_c_stream__``:
    a Polars or DuckDB result). Its schema is that of :func:`schema`, but its
    strings, bytes and lists may have 32- or 64-bit offsets, its fields may
    be nullable (a null is an absent field), and its enums may be numbers or
    dictionaries of names (or of numbers' digits). Map entries go out in the
    column's order. Returns the bytes appended.

    Errors: :class:`~codec.errors.EncodeError` for a column that does not
    match the schema (named), or a value protobuf cannot hold, named by its
    column and row: a null element of a list, a null key or value of a map,
    two members of a oneof set in one row, a null required field (allowed
    with ``partial``), a proto3 string that is not UTF-8;
    :class:`~codec.errors.FrameTooLargeError` for a row over the encoder's
    ``max_frame_size``. On any error nothing is appended. The encoder is
    held for the whole call: code that ``data`` runs as it is iterated (a
    generator's) gets ``RuntimeError`` if it uses it.
    """
    pa = _arrow()
    if not isinstance(encoder, FrameEncoder):
        raise TypeError(f"encoder must be a codec.FrameEncoder, not {type(encoder).__name__}")
    missing = checked_flag("partial", partial)
    layout = _layout(pa, plan_for(message_type), False, True)  # enums: either way
    try:
        batches = _record_batches(pa, data)
        return encode_batches(layout.reader, encoder, batches, layout.bind, missing)
    finally:
        layout.reader.unbind()  # the batch is not kept alive
        _give_back(layout)


# Layouts by plan and options, idle, for the next call that reads, writes or names the
# schema of their type: a layout is made in tens to hundreds of microseconds, as long
# as a small batch takes to read. A call takes one for itself, so that no two threads
# or unfinished readers share one, and gives it back when done, up to _KEPT_LAYOUTS.
# An idle layout keeps the buffers of its last batches, to reuse once the batches are
# freed (see codec.arrow._builders, 1), up to _IDLE_BYTES; past that, it lets them go.
_IDLE_LAYOUTS: dict[tuple[Any, bool, bool], list[Layout]] = {}
_KEPT_LAYOUTS = 4
_IDLE_BYTES = 16 * 2**20


def _layout(pa: Any, plan: Any, large_types: Any, enum_names: Any) -> Layout:
    """A layout of ``plan`` with these options, idle or new, for the caller alone."""
    key = (plan, checked_flag("large_types", large_types), checked_flag("enum_names", enum_names))
    idle = _IDLE_LAYOUTS.get(key)
    if idle:
        try:
            return idle.pop()
        except IndexError:  # another thread took the last one
            pass
    return Layout(pa, *key)


def _give_back(layout: Layout) -> None:
    """Keep ``layout``, which its caller no longer uses and left with no rows, for the
    next call."""
    idle = _IDLE_LAYOUTS.setdefault(layout.key, [])
    if len(idle) < _KEPT_LAYOUTS:
        if layout.root.held() > _IDLE_BYTES:
            layout.root.let_go()
        idle.append(layout)


def _record_batches(pa: Any, data: Any) -> Any:
    if isinstance(data, (pa.RecordBatch, pa.Table)):
        return _each_batch(pa, (data,))
    if hasattr(data, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(data)
    if isinstance(data, (str, bytes)) or not hasattr(data, "__iter__"):
        kind = type(data).__name__
        raise TypeError(f"expected a pyarrow RecordBatch or Table, or an Arrow stream, not {kind}")
    return _each_batch(pa, data)


def _each_batch(pa: Any, items: Any) -> Iterator[Any]:
    """The record batches of ``items``, each a batch or a table."""
    for item in items:
        if isinstance(item, pa.Table):
            yield from item.to_batches()
        elif isinstance(item, pa.RecordBatch):
            yield item
        else:
            raise TypeError(f"expected pyarrow RecordBatches or Tables, not {type(item).__name__}")


def _batches(layout: Layout, take: Callable[[int], bool], rows: int) -> Iterator[Any]:
    """The batches of ``rows`` rows that ``take`` decodes into ``layout``'s root, the
    last one fewer. ``take(n)`` decodes up to ``n`` more frames and returns whether the
    stream goes on; on a DecodeError, the rows before its frame go out first."""
    root = layout.root
    error: DecodeError | None = None
    while error is None:
        try:
            if not take(rows - root.length):
                break
        except DecodeError as exc:
            error = exc
        if root.length == rows:
            yield layout.batch(more=True)
    if root.length:
        yield layout.batch()
    _give_back(layout)  # with no rows, and small buffers (not a reader's left unfinished)
    if error is not None:
        raise error


def _from_stream(
    root: Any, decoder: FrameDecoder, read: Any, depth: int, chunk: int, offset: int
) -> Callable[[int], bool]:
    """The frames of a stream, read ``chunk`` bytes at a time into ``decoder``'s window."""

    def take(wanted: int) -> bool:
        nonlocal offset  # the stream offset of the next frame taken
        while True:
            # Each view of the window is let go before the next read: while one is alive,
            # the window cannot move its bytes in place and copies them to a new one.
            with decoder.take_frames(wanted) as frames:
                size = len(frames)
                if size:
                    decode_frames(root, frames, offset, depth)
            if size:
                offset += size
                return True
            with decoder.get_buffer(chunk) as room:
                received = read(room)
            if not received:
                decoder.feed_eof()  # raises for a stream cut inside a frame
                return False
            decoder.buffer_updated(received)

    return take


def _in_place(
    root: Any, view: memoryview, depth: int, offset: int, max_frame_size: int, strict: bool
) -> Callable[[int], bool]:
    """The frames of a stream held in memory (``view``), walked where they lie."""
    pos = 0

    def take(wanted: int) -> bool:
        nonlocal pos
        if pos == len(view):
            return False
        stop = decode_stream(root, view, pos, wanted, offset, depth, max_frame_size, strict)
        if stop == pos:
            raise frame_error(view, pos, max_frame_size, strict, offset)
        pos = stop
        return True

    return take


def _arrow() -> Any:
    try:
        import pyarrow
    except ImportError:
        raise ImportError("codec.arrow needs pyarrow: pip install codec[arrow]") from None
    return pyarrow
