"""Fuzz target: framed streams into Arrow and back (``codec.arrow``), judged by struct decoding.

Input layout::

    data[0]   the message type: below 128, ROOTS[data[0] % len(ROOTS)]; else
              TYPES[data[0] % len(TYPES)] (``fuzz/_schemas.py``'s classes, less those
              that reach a message with extensions, which the columns pass over)
    data[1]   options: bits 0-1 the batch size, one of BATCHES; bits 2-3 the chunk
              size the stream is read in, one of CHUNKS (0: given as bytes); bit 4
              large_types; bit 5 strict prefixes; bit 6 max_frame_size=SMALL_FRAME;
              bit 7 enum_names
    data[2:]  the stream: frames with their length prefixes, damaged as they come

Short inputs default the missing header bytes to 0, so any byte string is an input.

The oracle is ``FrameDecoder(message_type=<struct class>)`` over the same bytes:
the structs of the frames it accepts, then its error or none. Properties checked
by :func:`check` (see ``fuzz/README.md``):

* ``read_batches`` raises only :class:`codec.DecodeError` subclasses, with an
  offset inside the stream;
* it gives a row for each struct the oracle gives, then the oracle's error (same
  class and offset), or none where the oracle has none; the one intended
  difference: a proto2 ``string`` that is not UTF-8, which a struct keeps as
  bytes, raises there (an Arrow string column needs UTF-8), and the rows before
  its frame come out first;
* every row, written back with ``write_frames``, is a frame the struct decoder
  reads as the oracle's struct, unknown fields left out on both sides (protobuf's
  deterministic encodings compared, so NaNs compare too);
* the way back does not depend on the batching (the batches as they came, and the
  rows read again as one table, write the same bytes), and it is a fixed point:
  the bytes written, read and written again, are the same bytes.

Run: ``python fuzz/fuzz_arrow.py [libFuzzer flags] [corpus dirs]``.
"""

from __future__ import annotations

import io
from typing import Any

if __name__ == "__main__":
    import atheris

    with atheris.instrument_imports(include=["codec"]):
        import codec
        import codec.arrow
else:
    import codec
    import codec.arrow

try:
    from fuzz import _schemas
except ImportError:  # run as ``python fuzz/fuzz_arrow.py``: fuzz/ is sys.path[0]
    import _schemas  # type: ignore[no-redef]

BATCHES = (1, 2, 7, 65536)
CHUNKS = (0, 1, 7, 64)
SMALL_FRAME = 64
LARGE, STRICT, SMALL, NAMES = 0x10, 0x20, 0x40, 0x80
NOT_UTF8 = "is not valid UTF-8 (an Arrow string column needs it)"


def _extended(cls: Any) -> bool:
    """Whether a message that ``cls`` reaches has extensions (the columns pass them over)."""
    seen: set[str] = set()
    pending = [cls.__plan__]
    while pending:
        plan = pending.pop()
        if plan.full_name in seen:
            continue
        seen.add(plan.full_name)
        if plan.extensions is not None:
            return True
        pending.extend(field.message for field in plan.fields if field.message is not None)
    return False


ROOTS = [codec.struct(_schemas.by_name(name)) for name in _schemas.ROOTS]
TYPES = [
    struct for struct in (codec.struct(cls) for _, cls in _schemas.CLASSES) if not _extended(struct)
]
assert not any(_extended(root) for root in ROOTS), "a root type reaches extensions"


def pick(data: bytes) -> tuple[Any, dict[str, Any], int, bytes]:
    """``(struct class, read options, chunk size, stream)`` of a fuzz input."""
    which = data[0] if data else 0
    options = data[1] if len(data) > 1 else 0
    cls = ROOTS[which % len(ROOTS)] if which < 128 else TYPES[which % len(TYPES)]
    kwargs = {
        "batch_size": BATCHES[options & 3],
        "large_types": bool(options & LARGE),
        "enum_names": bool(options & NAMES),
        "strict": bool(options & STRICT),
        "max_frame_size": SMALL_FRAME if options & SMALL else codec.DEFAULT_MAX_FRAME_SIZE,
    }
    return cls, kwargs, CHUNKS[(options >> 2) & 3], bytes(data[2:])


def make_input(stream: bytes, root: int = 0, options: int = 0) -> bytes:
    """The fuzz input that reads ``stream`` as frames of ``ROOTS[root]`` (for seed corpora)."""
    return bytes([root, options]) + stream


def oracle(cls: Any, stream: bytes, **options: Any) -> tuple[list[Any], Any]:
    """The structs a FrameDecoder reads from ``stream``, and the error that stops it."""
    decoder = codec.FrameDecoder(
        options["max_frame_size"], strict=options["strict"], message_type=cls
    )
    structs: list[Any] = []
    try:
        decoder.feed(stream)
        structs.extend(decoder)
        decoder.feed_eof()
    except codec.DecodeError as exc:
        return structs, exc
    return structs, None


def _known(message: Any) -> bytes:
    """``message`` without its unknown fields, in protobuf's deterministic encoding."""
    message.DiscardUnknownFields()
    return codec.encode(message, partial=True, deterministic=True)


def _written(cls: Any, data: Any) -> bytes:
    encoder = codec.FrameEncoder()
    codec.arrow.write_frames(encoder, data, cls, partial=True)
    return bytes(encoder.getbuffer())


def check(data: bytes) -> None:
    """The property: raises AssertionError (or any non-DecodeError) on a finding."""
    cls, options, chunk, stream = pick(data)
    where = f"{cls.__plan__.full_name} {options} chunk {chunk}: {stream.hex()}"
    structs, error = oracle(cls, stream, **options)

    source: Any = io.BytesIO(stream) if chunk else stream
    batches = []
    try:
        for batch in codec.arrow.read_batches(source, cls, chunk_size=chunk or 1, **options):
            assert 0 < batch.num_rows <= options["batch_size"], f"{batch.num_rows} rows: {where}"
            batches.append(batch)
    except codec.DecodeError as exc:
        assert isinstance(exc.offset, int) and 0 <= exc.offset <= len(stream), f"{exc!r}: {where}"
        if NOT_UTF8 in str(exc) and (error is None or exc.offset < error.offset):
            structs = structs[: sum(batch.num_rows for batch in batches)]
        else:
            assert error is not None, f"{exc!r} where the struct decoder accepts: {where}"
            got, want = (type(exc), exc.offset), (type(error), error.offset)
            assert got == want, f"{got} != {want}: {where}"
    else:
        assert error is None, f"no error where the struct decoder raises {error!r}: {where}"
    rows = sum(batch.num_rows for batch in batches)
    assert rows == len(structs), f"{rows} rows for {len(structs)} frames: {where}"
    if not rows:
        return

    written = _written(cls, batches)
    decoder = codec.FrameDecoder(message_type=cls)
    decoder.feed(written)
    back = list(decoder)
    decoder.feed_eof()
    assert len(back) == rows, f"{len(back)} frames written for {rows} rows: {where}"
    for index, (again, struct) in enumerate(zip(back, structs, strict=True)):
        assert _known(again) == _known(struct), f"row {index} reads otherwise: {where}"

    shape = {name: options[name] for name in ("large_types", "enum_names")}
    table = codec.arrow.read_table(written, cls, **shape)
    assert _written(cls, table) == written, f"read and written again, other bytes: {where}"


def main() -> None:
    """libFuzzer entry point (only when run as a script)."""
    try:
        from fuzz._harness import run
    except ImportError:  # run as ``python fuzz/fuzz_arrow.py``: fuzz/ is sys.path[0]
        from _harness import run

    run(atheris, check)


if __name__ == "__main__":
    main()
