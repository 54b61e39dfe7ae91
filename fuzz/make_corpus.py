"""Write the seed corpora under ``fuzz/corpus/<target>/`` (deterministic, tiny).

Seeds: valid frames and varints, every catalogue vector V1-V4 and F1-F5
(``docs/bad-inputs.md``) and an empty input, wrapped
in each target's input layout (see the target's docstring); for the wire and
struct targets, valid messages of each root type and the catalogue rows T1-T4,
S1-S5, P1-P6 and P8 (section 1.3-1.5); for the round trip and buffer lifetime
targets, a few builder choices and operation programs; for the profiler
stream target, valid streams (both column families, several sessions,
keyframes, stats packets), cuts of them, and the bad streams of
``tests/helpers/profiler_streams.py`` (``BAD_STREAMS``) with the findings R1 and R2. Every
seed is run through the target's ``check()`` before it is written.

Usage: ``python fuzz/make_corpus.py [--check]``. With ``--check`` nothing is
written; the exit status says whether the corpora on disk are up to date
(missing, different or extra files).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if __package__ in (None, ""):  # run as a script: make ``fuzz.*`` importable
    sys.path.insert(0, str(HERE.parent))

import codec  # noqa: E402
from fuzz import (  # noqa: E402
    fuzz_arrow,
    fuzz_buffer_lifetime,
    fuzz_differential,
    fuzz_frame_decoder,
    fuzz_profiler_stream,
    fuzz_roundtrip,
    fuzz_struct_decode,
    fuzz_varint,
    fuzz_wire_reader,
)
from fuzz._seeds import (  # noqa: E402
    LIFETIME_SEEDS,
    ROUNDTRIP_SEEDS,
    STRUCT_MESSAGES,
    WIRE_MESSAGES,
    h,
)

# Catalogue vectors, by id (bytes as in the catalogue).
VECTORS: dict[str, bytes] = {
    "v1-truncated-80": bytes.fromhex("80"),
    "v1-truncated-ff9": bytes.fromhex("ff" * 9),
    "v2-eleven-bytes": bytes.fromhex("80" * 10 + "00"),
    "v3-overflow-2p70": bytes.fromhex("ff" * 9 + "7f"),
    "v3-overflow-2p64": bytes.fromhex("80" * 9 + "02"),
    "v4-padded-one": bytes.fromhex("8100"),
    "v4-padded-zero-10": bytes.fromhex("80" * 9 + "00"),
    "f1-4mib-plus-1": bytes.fromhex("81808002"),
    "f2-2p63-minus-1": bytes.fromhex("ff" * 8 + "7f"),
    "f2-ffffffff": bytes.fromhex("ffffffff0f"),
    "f3-2p32": bytes.fromhex("8080808010"),
    "f3-2p31": bytes.fromhex("8080808008"),
    "f4-eof-in-body": bytes.fromhex("05616263"),
    "f5-empty-frame": bytes.fromhex("00"),
    "f5-empty-frames-64": bytes(64),
}

VARINT_SEEDS: dict[str, bytes] = {
    "empty": b"",
    **{name: b"\x00" + vector for name, vector in VECTORS.items()},
    "valid-0": bytes.fromhex("0000"),
    "valid-1": bytes.fromhex("0001"),
    "valid-127": bytes.fromhex("007f"),
    "valid-128": bytes.fromhex("008001"),
    "valid-300": bytes.fromhex("00ac02"),
    "valid-2p63-minus-1": bytes.fromhex("00" + "ff" * 8 + "7f"),
    "valid-2p64-minus-1": bytes.fromhex("00" + "ff" * 9 + "01"),
    "valid-at-offset-2": bytes.fromhex("02aabb9601cc"),
    "offset-at-end": bytes.fromhex("029601"),
    "offset-past-end": bytes.fromhex("039601"),
}

_FRAMES = bytes.fromhex("00") + b"\x03abc" + bytes.fromhex("03089601")
_LONG_FRAME = bytes.fromhex("c801") + bytes(range(200))
_make = fuzz_frame_decoder.make_input

FRAME_SEEDS: dict[str, bytes] = {
    "empty": b"",
    **{name: _make(vector) for name, vector in VECTORS.items()},
    "v4-padded-one-strict": _make(bytes.fromhex("81007a"), strict=True),
    "valid-frames": _make(_FRAMES),
    "valid-frames-chunked": _make(_FRAMES, chunk_sizes=(1, 2, 0, 3), keep_views=True),
    "valid-frames-strict": _make(_FRAMES, strict=True, exact_hint=True, chunk_sizes=(2,)),
    "valid-long-frame": _make(_LONG_FRAME, chunk_sizes=(7, 63)),
    "valid-long-frame-limit-255": _make(_LONG_FRAME, limit=255, keep_views=True),
    "too-large-limit-16": _make(b"\x03abc" + bytes.fromhex("11") + bytes(17), limit=16),
    "empty-only-limit-0": _make(bytes(3) + b"\x01x", limit=0, chunk_sizes=(1,)),
    "frames-then-bad-prefix": _make(_FRAMES + bytes.fromhex("80" * 10 + "00")),
    "frames-then-eof-in-prefix": _make(_FRAMES + bytes.fromhex("8080"), chunk_sizes=(5, 1)),
}

_wire = fuzz_wire_reader.make_input
WIRE_SEEDS: dict[str, bytes] = {
    "empty": b"",
    **{name: _wire(message) for name, message in WIRE_MESSAGES.items()},
    "valid-depth-1": _wire(WIRE_MESSAGES["valid-nested"], max_depth=1, kind="int32"),
    "valid-depth-0-groups": _wire(WIRE_MESSAGES["valid-groups"], max_depth=0),
    "valid-bytearray": _wire(WIRE_MESSAGES["valid-every-type"], source=1, kind="fixed32"),
    "valid-offset-view": _wire(WIRE_MESSAGES["valid-every-type"], source=4, kind="double"),
    "valid-u16-view": _wire(WIRE_MESSAGES["valid-packed"], source=5, kind="sint64"),
}

STRUCT_SEEDS: dict[str, bytes] = {
    "empty": b"",
    **{
        name: fuzz_struct_decode.make_input(message, root, options)
        for name, (root, options, message) in STRUCT_MESSAGES.items()
    },
}

DIFFERENTIAL_SEEDS: dict[str, bytes] = {
    "empty": b"",
    **{
        name: fuzz_differential.make_input(message, root)
        for name, (root, _, message) in STRUCT_MESSAGES.items()
    },
}


def _frames(*messages: bytes) -> bytes:
    return b"".join(codec.varint.encode(len(message)) + message for message in messages)


# Streams of frames: each message of the struct seeds twice (a batch of 2), the catalogue's
# frame vectors, and a proto2 string that is not UTF-8 after a good frame.
_arrow = fuzz_arrow.make_input
_RECORD = STRUCT_MESSAGES["valid-record"][2]
ARROW_SEEDS: dict[str, bytes] = {
    "empty": b"",
    **{
        name: _arrow(_frames(message, message), root)
        for name, (root, _, message) in STRUCT_MESSAGES.items()
    },
    **{name: _arrow(vector) for name, vector in VECTORS.items()},
    "valid-alltypes-batch-1-chunk-1": _arrow(
        _frames(STRUCT_MESSAGES["valid-alltypes"][2], b""), 0, 0x04
    ),
    "valid-record-large-strict-chunk-7": _arrow(
        _frames(_RECORD, _RECORD, _RECORD), 2, 0x01 | 0x08 | fuzz_arrow.LARGE | fuzz_arrow.STRICT
    ),
    "valid-alltypes-enum-names": _arrow(
        _frames(STRUCT_MESSAGES["valid-alltypes"][2]), 0, fuzz_arrow.NAMES
    ),
    "valid-frames-then-too-large-64": _arrow(
        _frames(b"", STRUCT_MESSAGES["valid-alltypes"][2]), 0, fuzz_arrow.SMALL
    ),
    "proto2-string-not-utf8": _arrow(_frames(_RECORD, _RECORD + h("12 02 ff fe")), 2, 0x01),
}

# --- profiler streams ---------------------------------------------------------------------

_profiler = fuzz_profiler_stream.make_input
_KEYFRAME_END = fuzz_profiler_stream.packets(fuzz_profiler_stream.BASES[0])[0][1][1]
_KEYFRAME = fuzz_profiler_stream.BASES[0][:_KEYFRAME_END]  # session 0x1234: 5 scopes, 2 tracks


def _packet(build: Any) -> bytes:
    out = codec.FrameEncoder()
    with out.frame() as writer:
        build(writer)
    return bytes(out.getbuffer())


def _header(magic: int = 0x31465043, major: int = 1) -> bytes:
    """A header packet with this magic number and major version (and nothing else)."""
    body = b"\x0d" + magic.to_bytes(4, "little") + b"\x10" + codec.varint.encode(major)
    return _packet(lambda writer: (writer.uint32(1, 1), writer.bytes(2, body)))


ONE_SCOPE = {2: ("uint32", [1]), 3: ("uint64", [0]), 4: ("uint64", [5])}


def _frame_packet(
    columns: dict[int, tuple[str, list[int]]],
    *,
    depth: bytes = b"\x00",
    track: int = 1,
    num_scopes: int = 1,
    raw: tuple[int, bytes] | None = None,
) -> bytes:
    def build(writer: Any) -> None:
        writer.uint32(1, 2)
        with writer.message(4) as frame:
            with frame.message(1) as meta:
                meta.uint64(1, 1)
                meta.uint32(4, num_scopes)
            with frame.message(2) as scopes:
                scopes.uint32(1, track)
                for field, (kind, values) in columns.items():
                    scopes.packed(field, kind, values)
                if raw is not None:
                    scopes.bytes(*raw)
                scopes.bytes(5, depth)

    return _packet(build)


def _registry_entry(table: int, fill: Any) -> bytes:
    def build(writer: Any) -> None:
        with writer.message(3) as delta, delta.message(table) as entry:
            fill(entry)

    return _packet(build)


def _padded(data: bytes) -> bytes:
    """``data`` with every packet's length prefix padded by two bytes (finding R1)."""
    whole, _ = fuzz_profiler_stream.packets(data)
    out = b""
    for start, end in whole:
        size, body = codec.varint.decode(data, start)
        prefix = bytearray(codec.varint.encode(size))
        prefix[-1] |= 0x80
        out += bytes(prefix) + b"\x80\x00" + data[body:end]
    return out


_TWO_DEEP = {2: ("uint32", [1, 1]), 3: ("uint64", [0, 0]), 4: ("uint64", [1, 1])}
BAD_PROFILER_STREAMS: dict[str, bytes] = {
    "bad-magic": _header(magic=0x12345678),
    "newer-major-version": _header(major=2),
    "undefined-scope-id": _KEYFRAME + _frame_packet({**ONE_SCOPE, 2: ("uint32", [6])}),
    "scope-id-0": _KEYFRAME + _frame_packet({**ONE_SCOPE, 2: ("uint32", [0])}),
    "undefined-track": _KEYFRAME + _frame_packet(ONE_SCOPE, track=9),
    "columns-of-different-lengths": _KEYFRAME + _frame_packet({**ONE_SCOPE, 4: ("uint64", [5, 6])}),
    "num-scopes-disagrees": _KEYFRAME + _frame_packet(ONE_SCOPE, num_scopes=3),
    "first-depth-not-0": _KEYFRAME + _frame_packet(ONE_SCOPE, depth=b"\x01"),
    "depth-jumps-by-2": _KEYFRAME + _frame_packet(_TWO_DEEP, depth=b"\x00\x02", num_scopes=2),
    "mixed-column-families": _KEYFRAME + _frame_packet({**ONE_SCOPE, 12: ("fixed32", [1])}),
    "fixed-column-not-whole": _KEYFRAME + _frame_packet({}, raw=(13, bytes(7))),
    "registry-ids-not-dense": _KEYFRAME
    + _registry_entry(1, lambda e: (e.uint32(1, 9), e.string(2, "x"))),
    "scope-redefined": _KEYFRAME + _registry_entry(2, lambda e: (e.uint32(1, 1), e.string(2, "z"))),
    "invalid-utf8": _KEYFRAME + _registry_entry(1, lambda e: (e.uint32(1, 3), e.bytes(2, b"\xff"))),
    "string-where-a-number-belongs": _KEYFRAME + _registry_entry(1, lambda e: e.string(1, "three")),
    "incomplete-registry": _KEYFRAME[: _KEYFRAME.rfind(b"\x28")] + b"\x28\x09\x30\x02\x38\x03",
    "malformed-packet": _KEYFRAME + b"\x02\x08\xff",
    "r1-padded-prefixes": _padded(_KEYFRAME + _frame_packet({**ONE_SCOPE, 2: ("uint32", [6])})),
    "r2-length-past-the-end": _KEYFRAME + b"\xff\xff\x3f" + fuzz_profiler_stream.BASES[2],
}

PROFILER_SEEDS: dict[str, bytes] = {
    "empty": b"",
    **{f"valid-{i}": _profiler("raw", base) for i, base in enumerate(fuzz_profiler_stream.BASES)},
    **{f"valid-{i}-append": _profiler("append", base=i) for i in range(4)},
    "valid-1-chunked": _profiler("raw", fuzz_profiler_stream.BASES[1], chunk_sizes=(1, 9, 0, 33)),
    "valid-2-chunked": _profiler("append", base=2, chunk_sizes=(63, 2, 17)),
    "valid-0-limit-100": _profiler("raw", fuzz_profiler_stream.BASES[0], limit=100),
    **{
        f"cut-{i}-{p}-{q}": _profiler("cut", base=i, p=p, q=q)
        for i, p, q in (
            (0, 3, 200),
            (1, 40, 255),
            (2, 0, 128),
            (2, 130, 250),
            (3, 10, 160),
            (3, 200, 255),
        )
    },
    **{f"bad-{name}": _profiler("raw", data) for name, data in BAD_PROFILER_STREAMS.items()},
    "splice-frame-in-registry": _profiler("splice", b"\x22\x00", base=0, p=60, q=0),
    "overwrite-columns": _profiler("overwrite", b"\x10\x07", base=1, p=200, q=1),
    "packet-splice-frame": _profiler("packet-splice", b"\x12\x00", base=0, p=2, q=9),
    "packet-replace-stats": _profiler("packet-replace", b"\x32\x02\x08\x05", base=0, p=5),
    "insert-registry-delta": _profiler("insert", b"\x0a\x05\x08\x01\x12\x01a", base=3, p=4, q=1),
    "insert-header-other-session": _profiler(
        "insert", _KEYFRAME[_KEYFRAME.index(b"\x12") + 2 : _KEYFRAME_END], base=2, p=9, q=0
    ),
}

CORPORA = {
    "fuzz_varint": (VARINT_SEEDS, fuzz_varint.check),
    "fuzz_frame_decoder": (FRAME_SEEDS, fuzz_frame_decoder.check),
    "fuzz_wire_reader": (WIRE_SEEDS, fuzz_wire_reader.check),
    "fuzz_struct_decode": (STRUCT_SEEDS, fuzz_struct_decode.check),
    "fuzz_differential": (DIFFERENTIAL_SEEDS, fuzz_differential.check),
    "fuzz_roundtrip": (ROUNDTRIP_SEEDS, fuzz_roundtrip.check),
    "fuzz_buffer_lifetime": (LIFETIME_SEEDS, fuzz_buffer_lifetime.check),
    "fuzz_profiler_stream": (PROFILER_SEEDS, fuzz_profiler_stream.check),
    "fuzz_arrow": (ARROW_SEEDS, fuzz_arrow.check),
}


def main(argv: list[str]) -> int:
    check_only = "--check" in argv
    stale = []
    for target, (seeds, check) in CORPORA.items():
        directory = HERE / "corpus" / target
        for name, data in seeds.items():
            check(data)  # a seed that fails its own target is a bug in the seed or the target
            path = directory / name
            if path.exists() and path.read_bytes() == data:
                continue
            stale.append(path)
            if not check_only:
                directory.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
        extra = sorted(set(directory.glob("*")) - {directory / name for name in seeds})
        if extra:
            stale.extend(extra)
            print(f"{directory}: {len(extra)} file(s) not written by this script", file=sys.stderr)
    if check_only and stale:
        for path in stale:
            print(f"out of date: {path}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
