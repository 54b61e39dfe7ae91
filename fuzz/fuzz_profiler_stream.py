"""Fuzz target: the profiler stream reader (``Receiver``, ``read_capture``) on hostile input.

A viewer reads profiler streams from the network, so the profiler's stream
reader (``codec.profiler.packets``, ``receiver`` and ``capture``) is a
decoder like the others. Half of the inputs are used raw; the other half
are mutations of valid streams written by ``PacketWriter``, so that the
fuzzer reaches the registry and frame decoding at once.

Input layout (a small header, then the payload)::

    data[0] & 7      mode (MODES): 0 the payload is the stream; 1-6 the payload
                     appended to, spliced into, written over a valid stream, or
                     put into one of its packets (re-framed); 7 a cut of a valid
                     stream (the payload is not used)
    data[0] >> 3 & 3 max_frame_size, one of LIMITS
    data[1] & 3      the valid stream (BASES)
    data[1] >> 2 & 7 k, the number of chunk sizes that follow
    data[2:2+k]      chunk sizes (each byte % 64; 0 means an empty feed), cycled
    data[2+k:4+k]    modes 1-7: two position bytes (p, q)
    the rest         the payload

Short inputs default the missing header fields to 0, so any byte string is an
input. The stream is read four ways by a ``Receiver``: fed whole, one byte at
a time, in the fuzzer's chunks, and in those chunks alternating ``feed()``
with ``get_buffer()`` + ``buffer_updated()`` of its decoder; after each chunk
the receiver is iterated, then ``feed_eof()``; reading stops at the first
error. It is also read by ``read_capture``.

Properties checked by :func:`check` (see ``fuzz/README.md``):

* only :class:`codec.DecodeError` subclasses escape ``feed``, iteration,
  ``feed_eof`` and ``read_capture``; when ``feed`` raises, iterating yields
  the packets before the bad one, then raises that error (or a stream error
  of an earlier packet);
* every ``StreamError`` carries the stream offset of the packet at fault, and
  every framing error the offset of the frame at fault, as a model of the
  framing places them (padded length prefixes included);
* every way gives the same items (sessions and frames, compared by value:
  indices, times, columns and their dtypes), the same error (class, offset,
  message), the same counters and the same registry;
* every frame is consistent when it comes out: four 1-D columns of equal
  length (``uint32``, ``int64``, ``int64``, ``uint8``), ``num_scopes`` as the
  packet declares it, every track ref and scope id defined in the receiver's
  registry at that point, depths starting at 0 and rising by at most one;
  every session is the receiver's session; the same holds for what
  ``read_capture`` yields, which yields at most one item per byte of input;
* a valid stream cut anywhere (mode 7): ``read_capture`` yields exactly the
  items a receiver reads from the first whole keyframe of the cut to its last
  whole packet.

Run: ``python fuzz/fuzz_profiler_stream.py [libFuzzer flags] [corpus dirs]``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

if __name__ == "__main__":
    import atheris

    with atheris.instrument_imports(include=["codec"]):
        import codec
        from codec.profiler import model
        from codec.profiler.capture import _is_header_packet, read_capture
        from codec.profiler.packets import PacketWriter, Session
        from codec.profiler.receiver import Receiver
else:
    import codec
    from codec.profiler import model
    from codec.profiler.capture import _is_header_packet, read_capture
    from codec.profiler.packets import PacketWriter, Session
    from codec.profiler.receiver import Receiver

import numpy

try:
    from fuzz.fuzz_frame_decoder import _chunks
except ImportError:  # run as ``python fuzz/fuzz_profiler_stream.py``: fuzz/ is sys.path[0]
    from fuzz_frame_decoder import _chunks  # type: ignore[no-redef]

from codec import varint
from codec.framing import DEFAULT_MAX_FRAME_SIZE

LIMITS = (DEFAULT_MAX_FRAME_SIZE, 1024, 100, 24)
MAX_CHUNK_SIZES = 8
MODES = ("raw", "append", "splice", "overwrite", "packet-splice", "packet-replace", "insert", "cut")

# A packet body field per value of q & 3 (mode "insert"): header, registry, frame, stats.
BODY_FIELDS = (2, 3, 4, 6)

Key = tuple[Any, ...]


# --- valid streams ------------------------------------------------------------------------


def _track(
    ref: int, ids: list[int], gaps: list[int], durations: list[int], depth: list[int], base: int
) -> model.TrackScopes:
    starts = base + numpy.cumsum(numpy.array(gaps, dtype=numpy.int64))
    return model.TrackScopes.from_sequences(ref, ids, starts, durations, depth)


def _registry(names: Iterable[str], tracks: Iterable[str]) -> model.Registry:
    registry = model.Registry()
    for i, name in enumerate(names):
        if i % 2:
            registry.add_scope(name)
        else:
            registry.add_scope(name, model.ScopeKind.FUNCTION, f"fn_{name}", "app/main.py", i + 1)
    for i, name in enumerate(tracks):
        registry.add_track(name, model.TrackKind(1 + i % 3), 100 + i)
    return registry


def _frame(writer: PacketWriter, out: codec.FrameEncoder, index: int, tracks: list[Any]) -> None:
    start = min((int(track.start_ns[0]) for track in tracks), default=0)
    count = sum(len(track) for track in tracks)
    writer.frame(out, index, start, 1000 * index, tracks, count)


def _frames(writer: PacketWriter, out: codec.FrameEncoder, first: int, base: int) -> None:
    """Three frames: two tracks, one track with a deeper tree, no track at all."""
    _frame(
        writer,
        out,
        first,
        [
            _track(1, [1, 2, 3], [0, 5, 7], [40, 10, 3], [0, 1, 2], base),
            _track(2, [4], [3], [9], [0], base),
        ],
    )
    _frame(
        writer,
        out,
        first + 1,
        [_track(1, [5, 1, 2, 1], [200, 1, 1, 300], [50, 20, 2**40, 0], [0, 1, 1, 0], base)],
    )
    _frame(writer, out, first + 2, [])


def _one_session(fixed: bool) -> bytes:
    registry = _registry(["update", "draw", "physics", "audio", "io"], ["main", "render"])
    feature = "fixed_columns" if fixed else "varint_columns"
    writer = PacketWriter(Session(0x1234, "game", "1.0", 5, (feature,)))
    out = codec.FrameEncoder()
    writer.keyframe(out, registry)
    _frames(writer, out, 1, 10**6)
    writer.stats(out, 2, 64)
    _frames(writer, out, 6, -(10**9))
    return bytes(out.getbuffer())


def _two_sessions() -> bytes:
    out = codec.FrameEncoder()
    first = _registry(["a", "b", "c", "d", "e"], ["main", "render"])
    writer = PacketWriter(Session(1, "one", features=("varint_columns",)))
    marks = writer.keyframe(out, first)
    _frames(writer, out, 1, 0)
    first.add_scope("late", model.ScopeKind.USER)
    first.add_track("async", model.TrackKind.ASYNC)
    writer.registry(out, first, marks, first.marks())
    _frame(writer, out, 4, [_track(3, [6, 6], [1, 1], [1, 1], [0, 1], 7)])
    second = _registry(["e", "d", "c", "b", "a", "z"], ["render", "main", "gpu"])
    writer = PacketWriter(Session(2, "two", features=("fixed_columns",)))
    writer.keyframe(out, second)
    _frame(writer, out, 1, [_track(3, [6], [0], [5], [0], 2**40)])
    writer.keyframe(out, second)  # a repeated keyframe of the same session
    _frame(writer, out, 2, [_track(2, [1, 2], [0, 0], [0, 0], [0, 0], 3)])
    return bytes(out.getbuffer())


def _late_start() -> bytes:
    """Frames and stats before the first keyframe (a reader that joined late, a cut file)."""
    registry = _registry(["x", "y", "z", "w", "v"], ["main", "io"])
    writer = PacketWriter(Session(3, "late"))
    out = codec.FrameEncoder()
    _frames(writer, out, 1, 0)
    writer.stats(out, 7, 16)
    writer.keyframe(out, registry)
    _frames(writer, out, 4, 99)
    return bytes(out.getbuffer())


BASES: tuple[bytes, ...] = (_one_session(False), _one_session(True), _two_sessions(), _late_start())


def packets(data: bytes, limit: int = DEFAULT_MAX_FRAME_SIZE) -> tuple[list[tuple[int, int]], int]:
    """The ``(start, end)`` of each whole packet, and where the framing stops.

    A model of the framing (as ``fuzz_frame_decoder.model``, non-strict
    prefixes): the second value is the offset of the first packet that is
    malformed, too large or cut, or ``len(data)``.
    """
    found = []
    pos = 0
    while pos < len(data):
        try:
            size, body = varint.decode(data, pos)
        except codec.DecodeError:
            break
        if size > limit or body + size > len(data):
            break
        found.append((pos, body + size))
        pos = body + size
    return found, pos


def _framed(payload: bytes) -> bytes:
    return varint.encode(len(payload)) + payload


def _insert_packet(field: int, flags: int, body: bytes) -> bytes:
    out = codec.FrameEncoder()
    with out.frame() as packet:
        if flags:
            packet.uint32(1, flags)
        packet.bytes(field, body)
    return bytes(out.getbuffer())


def cut_bounds(base: bytes, p: int, q: int) -> tuple[int, int]:
    """Where mode "cut" cuts ``base``: from ``p`` (scaled) to ``q`` (scaled), in order."""
    a = p * len(base) // 255
    b = q * len(base) // 255
    return min(a, b), max(a, b)


def make_stream(mode: int, base: bytes, p: int, q: int, payload: bytes) -> bytes:
    """The stream of one input: ``base`` changed by ``payload`` as ``mode`` says."""
    name = MODES[mode]
    at = (p | q << 8) % (len(base) + 1)
    if name == "raw":
        return payload
    if name == "append":
        return base + payload
    if name == "splice":
        return base[:at] + payload + base[at:]
    if name == "overwrite":
        return base[:at] + payload + base[at + len(payload) :]
    if name == "cut":
        begin, end = cut_bounds(base, p, q)
        return base[begin:end]
    whole, _ = packets(base)
    start, end = whole[p % len(whole)]
    body = base[varint.decode(base, start)[1] : end]
    if name == "packet-splice":
        cut = q % (len(body) + 1)
        return base[:start] + _framed(body[:cut] + payload + body[cut:]) + base[end:]
    if name == "packet-replace":
        return base[:start] + _framed(payload) + base[end:]
    # insert: a new packet before packet p, whose body (field chosen by q) is the payload
    return base[:start] + _insert_packet(BODY_FIELDS[q & 3], q >> 2 & 3, payload) + base[start:]


def make_input(
    mode: str = "raw",
    payload: bytes = b"",
    *,
    base: int = 0,
    p: int = 0,
    q: int = 0,
    limit: int = DEFAULT_MAX_FRAME_SIZE,
    chunk_sizes: tuple[int, ...] = (),
) -> bytes:
    """The fuzz input for these settings (for seed corpora)."""
    assert len(chunk_sizes) < MAX_CHUNK_SIZES and all(0 <= n < 64 for n in chunk_sizes)
    first = MODES.index(mode) | LIMITS.index(limit) << 3
    header = bytes([first, base | len(chunk_sizes) << 2, *chunk_sizes])
    if mode == "raw":
        return header + payload
    return header + bytes([p, q]) + payload


def parse_input(data: bytes) -> tuple[str, bytes, int, list[int]]:
    """``(mode, stream, limit, chunk sizes)`` of one fuzz input."""
    first = data[0] if data else 0
    second = data[1] if len(data) > 1 else 0
    mode = first & 7
    limit = LIMITS[first >> 3 & 3]
    count = second >> 2 & 7
    sizes = [b % 64 for b in data[2 : 2 + count]]
    rest = data[2 + count :]
    if mode == 0:
        return MODES[0], rest, limit, sizes
    p = rest[0] if rest else 0
    q = rest[1] if len(rest) > 1 else 0
    return MODES[mode], make_stream(mode, BASES[second & 3], p, q, rest[2:]), limit, sizes


# --- what comes out -------------------------------------------------------------------------

_DTYPES = (numpy.uint32, numpy.int64, numpy.int64, numpy.uint8)


def _declared_scopes(payload: bytes) -> int:
    """``FrameMeta.num_scopes`` of a frame packet, read as protobuf reads it (the last wins)."""
    body: Any = None
    for field, wire_type, value in codec.wire.WireReader(payload):
        if field in BODY_FIELDS and wire_type == codec.wire.LEN:
            body = value
    meta: Any = b""
    for field, wire_type, value in codec.wire.WireReader(body):
        if field == 1 and wire_type == codec.wire.LEN:
            meta = value
    declared = 0
    for field, _, value in codec.wire.WireReader(meta):
        if field == 4:
            declared = value
    return declared


def check_item(item: Any, receiver: Receiver, payload: bytes | None) -> Key:
    """Check one item as it comes out; returns it as a comparable key."""
    if isinstance(item, Session):
        assert item == receiver.session, f"{item} is not the receiver's session"
        assert receiver.has_state
        return ("session", item)
    assert isinstance(item, model.Frame), f"an item of type {type(item).__name__}"
    registry = receiver.registry
    tracks = []
    for track in item.tracks:
        assert isinstance(track, model.TrackScopes)
        ref = track.track_ref
        assert isinstance(ref, int) and 0 < ref <= len(registry.tracks), f"track {ref} undefined"
        columns = (track.scope_id, track.start_ns, track.duration_ns, track.depth)
        for column, dtype in zip(columns, _DTYPES, strict=True):
            assert isinstance(column, numpy.ndarray) and column.ndim == 1, column
            assert column.dtype == dtype, (column.dtype, dtype)
        count = len(track.scope_id)
        assert all(len(column) == count for column in columns), [len(c) for c in columns]
        if count:
            ids = track.scope_id
            assert int(ids.min()) >= 1 and int(ids.max()) <= len(registry.scopes), (
                f"scope ids {ids.tolist()} with {len(registry.scopes)} scopes defined"
            )
            depth = track.depth.astype(numpy.int64)
            assert depth[0] == 0 and (numpy.diff(depth) <= 1).all(), depth.tolist()
        tracks.append((ref, *(column.tolist() for column in columns)))
    assert item.num_scopes == sum(len(track) for track in item.tracks)
    if payload is not None:
        declared = _declared_scopes(payload)
        assert item.num_scopes == declared, f"{item.num_scopes} scopes, {declared} declared"
    for value in (item.index, item.start_ns, item.duration_ns):
        assert isinstance(value, int)
    return ("frame", item.index, item.start_ns, item.duration_ns, tuple(tracks))


def _error_key(exc: codec.DecodeError) -> Key:
    return type(exc), exc.offset, str(exc)


def read(
    data: bytes, chunks: Iterable[bytes], limit: int, use_buffer: Callable[[int], bool]
) -> Key:
    """Read ``chunks`` with one Receiver, stopping at the first error: the outcome, as a key."""
    receiver = Receiver(max_frame_size=limit)
    whole, stop = packets(data, limit)
    starts = [start for start, _ in whole] + [stop]
    items: list[Key] = []

    def drain() -> None:
        for item in receiver:
            assert receiver.packets <= len(whole), "more packets than the framing model has"
            start, end = whole[receiver.packets - 1]
            body_start = varint.decode(data, start)[1]
            items.append(check_item(item, receiver, data[body_start:end]))

    def fed(call: Callable[[], None]) -> None:
        try:
            call()
        except codec.DecodeError as exc:
            try:
                drain()
            except codec.DecodeError as again:
                if not isinstance(again, model.StreamError):
                    assert _error_key(again) == _error_key(exc), f"{again!r} after {exc!r}"
                raise
            raise AssertionError(f"{exc!r} raised, then every packet came out") from exc
        drain()

    error: Key | None = None
    try:
        for i, chunk in enumerate(chunks):
            if use_buffer(i):

                def take(chunk: bytes = chunk) -> None:
                    window = receiver.decoder.get_buffer(len(chunk))
                    try:
                        window[: len(chunk)] = chunk
                    finally:
                        window.release()
                    receiver.decoder.buffer_updated(len(chunk))

                fed(take)
            else:
                fed(lambda chunk=chunk: receiver.feed(chunk))
        fed(receiver.feed_eof)
    except codec.DecodeError as exc:
        offset = exc.offset
        assert isinstance(offset, int), f"{exc!r} without an offset"
        index = receiver.packets - 1 if isinstance(exc, model.StreamError) else receiver.packets
        assert 0 <= index < len(starts), f"{exc!r} after {receiver.packets} packets: {starts}"
        where = starts[index]
        assert offset == where, f"{exc!r} at {offset}, its packet starts at {where}"
        error = _error_key(exc)
    else:
        assert receiver.packets == len(whole) and stop == len(data)
    registry = receiver.registry
    state = (
        receiver.packets,
        receiver.frames,
        receiver.frames_skipped,
        receiver.frames_dropped,
        receiver.session,
        receiver.has_state,
        list(registry.strings),
        list(registry.scopes),
        list(registry.tracks),
    )
    return tuple(items), error, state


def capture(data: bytes) -> list[Key]:
    """What ``read_capture`` yields, each item checked; at most one item per byte."""
    got: list[Key] = []
    for receiver, item in read_capture(data):
        got.append(check_item(item, receiver, None))
        assert len(got) <= len(data), "read_capture yields more items than the input has bytes"
    return got


def expected_capture(base: bytes, begin: int, end: int) -> list[Key]:
    """What ``read_capture`` must yield for ``base[begin:end]``, a cut of a valid stream.

    The items a receiver reads from the first header packet wholly inside the
    cut to the last whole packet of the cut.
    """
    whole, _ = packets(base)
    inside = [(s, e) for s, e in whole if begin <= s and e <= end]
    heads = [s for s, e in inside if _is_header_packet(base, s)]
    if not heads:
        return []
    receiver = Receiver()
    receiver.feed(base[heads[0] : inside[-1][1]])
    receiver.feed_eof()
    return [check_item(item, receiver, None) for item in receiver]


def check(data: bytes) -> None:
    """The properties: raises AssertionError (or any non-DecodeError) on a finding."""
    data = bytes(data)
    mode, stream_bytes, limit, sizes = parse_input(data)
    where = f"mode={mode} limit={limit} sizes={sizes} stream={stream_bytes.hex()}"

    def feed(_: int) -> bool:
        return False

    def alternate(i: int) -> bool:
        return i % 2 == 1

    ways = {
        "whole": ([stream_bytes], feed),
        "bytes": (_chunks(stream_bytes, [1]), feed),
        "chunks": (_chunks(stream_bytes, sizes), feed),
        "chunks/get_buffer": (_chunks(stream_bytes, sizes), alternate),
    }
    first: tuple[str, Key] | None = None
    for name, (chunks, use_buffer) in ways.items():
        try:
            outcome = read(stream_bytes, chunks, limit, use_buffer)
        except AssertionError as exc:
            raise AssertionError(f"{name}: {exc}: {where}") from exc
        if first is None:
            first = name, outcome
        else:
            assert outcome == first[1], f"{name}: {outcome} != {first[0]}: {first[1]}: {where}"
    try:
        got = capture(stream_bytes)
    except codec.DecodeError:
        got = None
    if mode == "cut":
        base = BASES[data[1] & 3 if len(data) > 1 else 0]
        rest = data[2 + len(sizes) :]
        begin, end = cut_bounds(base, rest[0] if rest else 0, rest[1] if len(rest) > 1 else 0)
        want = expected_capture(base, begin, end)
        assert got == want, f"read_capture: {got} != {want}: {where}"


def main() -> None:
    """libFuzzer entry point (only when run as a script)."""
    try:
        from fuzz._harness import run
    except ImportError:  # run as ``python fuzz/fuzz_profiler_stream.py``: fuzz/ is sys.path[0]
        from _harness import run

    run(
        atheris,
        check,
        (
            "codec.profiler.packets",
            "codec.profiler.receiver",
            "codec.profiler.capture",
            "codec.profiler.model",
        ),
    )


if __name__ == "__main__":
    main()
