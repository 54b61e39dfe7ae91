"""Heap bounds of the framing layer: no payload-sized temporaries, nothing reserved from a
declared length.

Each bound is measured by :func:`helpers.heap.measure` (warm-up, ``gc.collect()``,
one traced run, ``(net, peak)``), with ``tracemalloc`` and, where importable,
``memray``, which also sees native ``malloc`` calls. upb serializes a 1 MiB
message through about 3 MiB of native arena before the ``bytes`` result
exists, on our path and the naive one alike, so with memray the Blob check
compares our ``encode`` with ``SerializeToString()`` alone rather than with
the naive framing (which memray cannot tell apart from ours).
"""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf.internal.encoder import _VarintBytes
from helpers import peerbench as _peerbench
from helpers.heap import encode_all, loop_only, measure, sample_structs, trace_memray
from helpers.peerbench import Blob

from codec import (
    COMPILED,
    FrameDecoder,
    FrameEncoder,
    FrameTooLargeError,
    encode,
    from_pb2,
    struct,
    to_pb2,
    varint,
)

KiB = 1024
MiB = 1024 * KiB
SLACK = 64 * KiB
PAYLOAD = bytes(range(256)) * (MiB // 256)

BACKENDS = ["tracemalloc", "memray"]
# Bytes a run may leave allocated. memray also counts, as never freed, a few KiB
# the interpreter keeps for itself (frame and specialization caches of the
# uncompiled build's Python functions), which tracemalloc does not see.
NET_SLACK = {"tracemalloc": 4 * KiB, "memray": 8 * KiB}


def frame(payload: bytes) -> bytes:
    return _VarintBytes(len(payload)) + payload


# --- the measurement itself ----------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_measure_sees_a_payload_sized_temporary(backend: str) -> None:
    """The bounds below can fail: a 1 MiB temporary shows up in the peak, not in net."""
    net, peak = measure(lambda: bytearray(PAYLOAD), backend=backend)
    assert peak >= MiB
    assert net < SLACK


@pytest.mark.parametrize("backend", BACKENDS)
def test_cold_encoder_shows_its_growth(backend: str) -> None:
    def cold() -> None:
        encoder = FrameEncoder()
        encoder.write(PAYLOAD)

    _, peak = measure(cold, backend=backend)
    assert peak >= MiB


# --- (a) a 1 MiB payload into a warm encoder ------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_warm_encoder_write_allocates_no_payload_copy(backend: str) -> None:
    encoder = FrameEncoder()

    def write() -> None:
        encoder.clear()
        encoder.write(PAYLOAD)

    net, peak = measure(write, backend=backend)
    assert peak < SLACK, peak
    assert net < SLACK, net
    assert bytes(encoder.getbuffer()) == frame(PAYLOAD)


@pytest.mark.parametrize("backend", BACKENDS)
def test_warm_encoder_many_small_writes(backend: str) -> None:
    encoder = FrameEncoder()
    item = b"s" * 35

    def write() -> None:
        encoder.clear()
        for _ in range(10_000):
            encoder.write(item)

    net, peak = measure(write, backend=backend)
    assert peak < SLACK, peak
    assert net < NET_SLACK[backend], net
    assert len(encoder) == 36 * 10_000


# --- (b) 10,000 frames of 1 KiB from a warm decoder -----------------------------------

STREAM = b"".join(frame(bytes([i % 256]) * KiB) for i in range(10_000))


def deliver(decoder: FrameDecoder, data: bytes, via: str) -> None:
    """Give ``data`` to ``decoder`` by ``feed`` or, for ``via="buffer"``, through ``get_buffer``."""
    if via == "feed":
        decoder.feed(data)
    else:
        with decoder.get_buffer(len(data)) as view:
            view[:] = data
        decoder.buffer_updated(len(data))


@pytest.mark.parametrize("via", ["feed", "buffer"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_warm_decoder_splits_frames_without_copies(backend: str, via: str) -> None:
    decoder = FrameDecoder(len(STREAM))  # get_buffer() gives no more room than the limit needs
    sizes: list[int] = []

    def split() -> None:
        deliver(decoder, STREAM, via)
        count = total = 0
        while (frame_view := decoder.next_frame()) is not None:
            count += 1
            total += len(frame_view)
            del frame_view  # drop each view before the next
        sizes.append(count)
        sizes.append(total)

    net, peak = measure(split, backend=backend)
    assert sizes[-2:] == [10_000, 10_000 * KiB]
    assert peak < SLACK, peak
    assert net < NET_SLACK[backend], net


# --- (c) a 1 MiB Blob message into a warm encoder -------------------------------------

BLOB = Blob(data=PAYLOAD)


def _naive_blob_frame() -> bytes:
    serialized = BLOB.SerializeToString()
    return _VarintBytes(len(serialized)) + serialized


def test_blob_into_warm_encoder_costs_one_payload() -> None:
    encoder = FrameEncoder()

    def encode() -> None:
        encoder.clear()
        encoder.encode(BLOB)

    _, ours = measure(encode)
    _, naive = measure(_naive_blob_frame)
    assert ours <= MiB + SLACK, ours  # upb's SerializeToString result, copied once
    assert naive >= 2 * MiB, naive
    assert ours < naive
    assert bytes(encoder.getbuffer()) == _naive_blob_frame()


def test_blob_into_warm_encoder_adds_nothing_to_serialization_memray() -> None:
    """With native allocations seen too: framing costs no more than upb's serializer alone."""
    encoder = FrameEncoder()

    def encode() -> None:
        encoder.clear()
        encoder.encode(BLOB)

    _, ours = measure(encode, backend="memray")
    _, serialize = measure(BLOB.SerializeToString, backend="memray")
    assert serialize >= MiB
    assert ours <= serialize + SLACK, (ours, serialize)


# --- (d) hostile prefixes ---------------------------------------------------------------

HOSTILE = [
    pytest.param(bytes.fromhex("ff ff ff ff ff ff ff ff 7f"), {}, id="2^63-1"),
    pytest.param(bytes.fromhex("ff ff ff ff 0f"), {}, id="0xffffffff"),
    pytest.param(varint.encode(4 * MiB + 1), {}, id="limit+1"),
    pytest.param(bytes.fromhex("80 80 80 80 10"), {}, id="2^32"),
    pytest.param(varint.encode(1024 * MiB + 1), {"max_frame_size": 1024 * MiB}, id="1GiB-limit+1"),
]


@pytest.mark.parametrize("via", ["feed", "buffer"])
@pytest.mark.parametrize(("prefix", "kwargs"), HOSTILE)
@pytest.mark.parametrize("backend", BACKENDS)
def test_hostile_prefix_is_refused_without_allocation(
    backend: str, prefix: bytes, kwargs: dict[str, int], via: str
) -> None:
    errors: list[FrameTooLargeError] = []

    def hostile() -> None:
        decoder = FrameDecoder(**kwargs)
        try:
            deliver(decoder, prefix, via)
        except FrameTooLargeError as exc:
            errors.append(exc)

    _, peak = measure(hostile, backend=backend)
    assert len(errors) == 3  # two warm-ups and the traced run
    assert errors[-1].size > errors[-1].limit
    assert peak < SLACK, peak


@pytest.mark.parametrize(
    "declared",
    [pytest.param(4 * MiB, id="4MiB-at-limit"), pytest.param(2**40, id="1TiB-huge-limit")],
)
@pytest.mark.parametrize("backend", BACKENDS)
def test_accepted_large_prefix_reserves_nothing(backend: str, declared: int) -> None:
    """F2/F6: memory follows the bytes received, never the length declared."""

    def stalled() -> None:
        decoder = FrameDecoder(max_frame_size=2**41)
        decoder.feed(varint.encode(declared) + b"x" * 100)
        assert decoder.frame_in_progress

    _, peak = measure(stalled, backend=backend)
    assert peak < SLACK, peak


# --- structs: encoded straight into the frame buffer, with no allocation ---------------


BlobStruct = struct(Blob)
STRUCTS = sample_structs()


@pytest.mark.skipif(not COMPILED, reason="the no-allocation claim is for the compiled core")
@pytest.mark.parametrize("backend", BACKENDS)
def test_warm_struct_encode_allocates_nothing(backend: str) -> None:
    """10,000 structs into a warm encoder: the same net and peak as the bare loop.

    tracemalloc must agree to the byte. memray also records a few bytes of
    interpreter state on the first traced calls (seen: 12 bytes, the same for
    1,000 and 10,000 messages, sometimes none), so it gets a constant 64-byte
    allowance, far below one allocation per message.
    """
    assert len(STRUCTS) == 10_000
    idle = measure(loop_only(FrameEncoder(), STRUCTS), backend=backend)
    encoded = measure(encode_all(FrameEncoder(), STRUCTS), backend=backend)
    if backend == "tracemalloc":
        assert encoded == idle
    else:
        assert encoded[0] - idle[0] <= 64
        assert encoded[1] - idle[1] <= 64


WORKLOADS = {
    # W2: one message of 1,000 nested spans (a sub-message and a packed list each), 50 times.
    "nested": lambda: [from_pb2(_peerbench.trace(1000))] * 50,
    # W3: 1,000 records of ~350 bytes, each with a 10-entry map<string, int64>, a oneof,
    # repeated strings and a packed int64 list.
    "map-heavy": lambda: [from_pb2(m) for m in _peerbench.records(1000)],
}


def _extended() -> list[Any]:
    """Structs with extensions of every kind (the test schemas are compiled with grpcio-tools)."""
    pytest.importorskip("grpc_tools", reason="the test schemas are compiled with grpcio-tools")
    from schemas import extensions_2023_pb2 as Y

    message = Y.Loose(x=1)
    message.Extensions[Y.verified] = "t" * 70  # spliced, not copied into the tape
    message.Extensions[Y.mood] = 7
    message.Extensions[Y.packed].extend([3, -1, 2**20])
    message.Extensions[Y.nested].Extensions[Y.verified] = "é"
    message.Extensions[Y.delimited].x = 2
    return [from_pb2(message)] * 1000


@pytest.mark.skipif(not COMPILED, reason="the no-allocation claim is for the compiled core")
@pytest.mark.parametrize("backend", BACKENDS)
def test_warm_struct_encode_of_extensions_allocates_nothing(backend: str) -> None:
    """Extensions (scalars, strings, packed lists, sub-messages and groups) make no object."""
    messages = _extended()
    idle = measure(loop_only(FrameEncoder(), messages), backend=backend)
    encoded = measure(encode_all(FrameEncoder(), messages), backend=backend)
    assert encoded[0] - idle[0] <= (0 if backend == "tracemalloc" else 64)
    assert encoded[1] - idle[1] <= (0 if backend == "tracemalloc" else 64)


@pytest.mark.skipif(not COMPILED, reason="the no-allocation claim is for the compiled core")
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("workload", WORKLOADS)
@pytest.mark.parametrize("deterministic", [False, True], ids=["own-order", "deterministic"])
def test_warm_struct_encode_of_nested_and_map_heavy_messages_allocates_nothing(
    backend: str, workload: str, deterministic: bool
) -> None:
    """Sub-messages, packed lists and maps, sorted or not, are encoded without a Python object.

    The one object the loop makes is the frame size ``encode`` returns, an
    ``int`` above CPython's small-int cache for these frames: alive for one
    iteration, it may show in the peak once (an allowance of one int).
    """
    messages = WORKLOADS[workload]()
    idle = measure(loop_only(FrameEncoder(), messages), backend=backend)
    warm = FrameEncoder(deterministic=deterministic)
    encoded = measure(encode_all(warm, messages), backend=backend)
    allowance = 32 if backend == "tracemalloc" else 64
    assert encoded[0] - idle[0] <= (0 if backend == "tracemalloc" else 64)
    assert encoded[1] - idle[1] <= allowance


@pytest.mark.skipif(not COMPILED, reason="the no-allocation claim is for the compiled core")
@pytest.mark.parametrize("backend", BACKENDS)
def test_struct_encode_peak_does_not_depend_on_payload_size(backend: str) -> None:
    small = encode_all(FrameEncoder(), [BlobStruct(data=PAYLOAD[:KiB])] * 100)
    large = encode_all(FrameEncoder(), [BlobStruct(data=PAYLOAD)] * 100)
    assert measure(small, backend=backend) == measure(large, backend=backend)


def test_struct_encode_matches_its_pb2_twin() -> None:
    """The structs measured above encode to what upb writes for the same content."""
    encoder = FrameEncoder()
    encode_all(encoder, STRUCTS[:100])()
    naive = b"".join(frame(to_pb2(s).SerializeToString(deterministic=True)) for s in STRUCTS[:100])
    assert bytes(encoder.getbuffer()) == naive


@pytest.mark.skipif(not COMPILED, reason="the tape's C memory is the compiled build's")
def test_a_tape_grown_past_its_limit_gives_its_memory_back() -> None:
    """The encoder's shared tape keeps at most 1 MiB between encodes (memray sees malloc).

    50,000 strings too long to copy into the tape are 50,000 splices (24 bytes
    each) and references (8 bytes): 1.6 MB of arrays, all freed once written.
    """
    pytest.importorskip("memray")
    names = struct(_peerbench.Record)(names=["n" * 100] * 50_000)
    net, peak = trace_memray(lambda: encode(names))
    assert peak > 5_000_000  # the 5 MB output and the tape were seen
    assert net < 64 * KiB
