"""Seed material for the wire, struct, round trip and lifetime targets (used by make_corpus.py).

Catalogue rows are those of ``docs/bad-inputs.md`` (T, S and P), as bytes. The
struct rows are written for ``everything.AllTypes`` (the first root type), whose
field numbers follow the catalogue's assumptions: 1 int32, 7 fixed32, 8 fixed64,
14 string, 18 a sub-message, 41 packed int32, 47 packed fixed32, 53 packed bool,
130 a recursive AllTypes.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2

try:
    from fuzz import _schemas
except ImportError:  # imported with fuzz/ on sys.path
    import _schemas  # type: ignore[no-redef]

import peerbench  # found through the repository root, which _schemas put on sys.path


def h(text: str) -> bytes:
    return bytes.fromhex(text)


def varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def nested(levels: int, header: bytes, inner: bytes = b"") -> bytes:
    """``levels`` messages, each the only field (``header``) of its parent."""
    payload = inner
    for _ in range(levels):
        payload = header + varint(len(payload)) + payload
    return payload


# --- raw wire messages (fuzz_wire_reader) ---------------------------------------------------------

WIRE_MESSAGES: dict[str, bytes] = {
    "valid-every-type": h("08 96 01 11 01 02 03 04 05 06 07 08 1a 03 61 62 63 23 08 01 24")
    + h("2d 01 02 03 04"),
    "valid-nested": h("0a 06 0a 04 0a 02 08 01 12 00"),
    "valid-groups": h("0b 13 08 01 14 1a 00 0c"),
    "valid-packed": h("0a 05 01 96 01 7f 00 12 08 00 00 80 3f 00 00 80 bf"),
    "valid-padded-tag": h("88 80 80 80 00 01"),
    "valid-reserved-19000": varint(19000 << 3) + b"\x01",
    "valid-max-field": varint((2**29 - 1) << 3) + b"\x00",
    "t1-field-0": h("01 44 45 41 44 42 45 45 46"),
    "t1-field-0-len": h("02 01 01"),
    "t2-field-2p29": h("80 80 80 80 10 00"),
    "t2-conformance": h("88 80 80 80 40 00"),
    "t3-overlong-tag": h("88 80 80 80 80 80 80 80 00 01"),
    "t4-type-6": h("0e 00"),
    "t4-type-7": h("0f 00"),
    "s1-end-without-start": h("0c"),
    "s2-start-never-closed": h("0b 08 01"),
    "s3-mismatched": h("0b 14"),
    "s3-mismatched-nested": h("0b 1b 0c"),
    "s4-nested-30": nested(30, b"\x0a"),
    "s5-groups-101": b"\x0b" * 101 + b"\x0c" * 101,
    "p1-len-past-end": h("0a 05 61 62 63"),
    "p1-len-4gib": h("0a ff ff ff ff 0f"),
    "p2-fixed32": h("0d 61 62 63"),
    "p2-fixed64": h("09 61 62 63 64 65 66 67"),
    "p3-crosses-parent": h("0a 02 08 96 01"),
    "p4-packed-fixed32-3": h("0a 03 00 00 00"),
    "p5-packed-truncated": h("0a 01 80"),
    "v1-truncated": h("08 80"),
    "v2-eleven-bytes": h("08" + " 80" * 10 + " 00"),
    "v3-overflow": h("08" + " ff" * 9 + " 7f"),
    "f3-len-2p32": h("0a 80 80 80 80 10 00"),
}


# --- messages of the root types (fuzz_struct_decode, fuzz_differential) --------------------------


def _valid_messages() -> dict[str, tuple[int, bytes]]:
    all_types = _schemas.by_name("everything.AllTypes")()
    all_types.f_int32 = -1
    all_types.f_uint64 = 2**64 - 1
    all_types.f_sint32 = -5
    all_types.f_fixed32 = 7
    all_types.f_float = 1.5
    all_types.f_double = -0.0
    all_types.f_bool = True
    all_types.f_string = "héllo"
    all_types.f_bytes = b"\x00\xff"
    all_types.f_inner.a = 3
    all_types.f_inner.tags.extend(["x", "y"])
    all_types.o_int32 = 0
    all_types.p_sint64.extend([-1, 2**40, 0])
    all_types.p_fixed32.extend([1, 2])
    all_types.p_bool.extend([True, False])
    all_types.u_int32.extend([1, -1])
    all_types.r_string.extend(["a", ""])
    all_types.r_inner.add(a=1)
    all_types.m_int32_int32[5] = -5
    all_types.m_string_inner["k"].a = 9
    all_types.c_uint32 = 4
    all_types.recursive.f_bool = True
    all_types.f_max = "max"

    tree_type = _schemas.by_name("everything.Tree")
    tree = tree_type(value=1)
    tree.left.value = 2
    tree.left.left.value = 3
    tree.children.add(value=4)
    tree.named["n"].value = 5

    record = _schemas.by_name("legacy.Record")(id=1, name="r")
    record.unpacked.extend([1, 2])
    record.packed.extend([-1, 3])
    record.levels.extend([1, 5])
    record.packed_levels.extend([5])
    record.child.id = 2
    record.child.name = "c"
    record.index["i"].id = 3
    record.index["i"].name = "i"
    record.text = "t"

    groups = _schemas.by_name("legacy.WithGroups")(before=1, after=8)
    groups.header.version = 3
    groups.entry.add(key="k", value=-7)

    link = _schemas.by_name("legacy.Link")(a=1, tag="x")
    link.next.a = 2
    link.next.next.a = 3

    files = descriptor_pb2.FileDescriptorSet()
    files.file.add().CopyFrom(peerbench.file_descriptor())

    frame = _schemas.by_name("peerbench.Frame")(index=1, starts=[1, 2, 3])
    frame.events.add(scope_id=1, start_ns=10, end_ns=20, depth=1)

    messages: list[Any] = [all_types, tree, record, groups, link, files, frame, peerbench.sample()]
    names = ["alltypes", "tree", "record", "groups", "link", "descriptor-set", "frame", "sample"]
    return {
        f"valid-{name}": (root, message.SerializeToString())
        for root, (name, message) in enumerate(zip(names, messages, strict=True))
    }


SMALL = 0x10  # fuzz_struct_decode: max_elements=16

_REJECT: dict[str, bytes] = {
    "t1-field-0": h("01 44 45 41 44 42 45 45 46"),
    "t2-field-2p29": h("80 80 80 80 10 00"),
    "t3-overlong-tag": h("88 80 80 80 80 80 80 80 00 01"),
    "t4-type-6": h("0e 00"),
    "s1-end-without-start": h("0c"),
    "s2-start-never-closed": h("0b"),
    "s3-mismatched": h("0b 14"),
    "s4-depth-101": nested(101, varint(130 << 3 | 2)),
    "s5-unknown-groups-101": b"\x13" * 101 + b"\x14" * 101,
    "p1-string-past-end": h("72 05 61 62 63"),
    "p2-fixed32": h("3d 61 62 63"),
    "p2-fixed64": h("41 61 62 63 64 65 66 67"),
    "p3-crosses-parent": h("92 01 02 08 96 01"),
    "p4-packed-fixed32": varint(47 << 3 | 2) + h("03 00 00 00"),
    "p5-packed-truncated": varint(41 << 3 | 2) + h("01 80"),
    "p6-invalid-utf8": h("72 04 a0 b0 c0 d0"),
    "p8-packed-bools-1mib-declared": varint(53 << 3 | 2) + h("80 80 40 01 01 01"),
    "v1-truncated": h("08 80"),
    "v2-eleven-bytes": h("08" + " 80" * 10 + " 00"),
    "v3-overflow": h("08" + " ff" * 9 + " 7f"),
}

# AllTypes.f_inner (18), then Inner.again (2) 99 times: 100 levels of the small Inner
# (100 levels of AllTypes.recursive re-encode slowly: finding A2 in SECURITY.md).
_INNER_100 = varint(18 << 3 | 2) + varint(len(nested(99, b"\x12"))) + nested(99, b"\x12")

_ACCEPT: dict[str, bytes] = {
    "s4-depth-100": _INNER_100,
    "t5-wrong-wire-type": h("0a 01 00"),
    "t6-reserved-19000": varint(19000 << 3) + b"\x01",
    "p7-last-wins-and-merge": h("08 01 08 02") + h("92 01 02 08 01 92 01 02 18 05"),
    "v4-padded": h("08 81 80 80 80 80 80 80 80 80 00"),
    "v5-int32-truncation": h("08 80 80 80 80 20"),
}

STRUCT_MESSAGES: dict[str, tuple[int, int, bytes]] = {
    **{name: (root, 0, message) for name, (root, message) in _valid_messages().items()},
    **{name: (0, 0, message) for name, message in {**_REJECT, **_ACCEPT}.items()},
    "p8-over-small-budget": (0, SMALL, varint(53 << 3 | 2) + b"\x14" + b"\x01" * 20),
    "s4-depth-9-over-8": (0, 0x04, nested(9, varint(130 << 3 | 2))),
    "valid-zero-copy-numpy": (0, 0x03, _valid_messages()["valid-alltypes"][1]),
    "valid-chunked-7": (0, 0x40, _valid_messages()["valid-alltypes"][1]),
    "valid-lazy": (0, 0x80, _valid_messages()["valid-alltypes"][1]),
    # finding Y1: a lazy decode skipped a repeated group as a value (legacy.WithGroups)
    "y1-lazy-group": (3, 0x80, bytes.fromhex("2b003b14")),
}


# --- builder choices (fuzz_roundtrip) and programs (fuzz_buffer_lifetime) ------------------------

ROUNDTRIP_SEEDS: dict[str, bytes] = {
    "empty": b"",
    **{f"root{root}-zeros": bytes([root, 0]) + bytes(32) for root in range(8)},
    **{f"root{root}-ramp": bytes([root, 0]) + bytes(range(256)) for root in range(8)},
    **{f"root{root}-dense": bytes([root, 0]) + b"\x03\x00\x83" * 120 for root in (0, 2, 3)},
    **{
        f"root{root}-bad": bytes([root, 1]) + bytes((i * 7) % 256 for i in range(256))
        for root in range(8)
    },
}

LIFETIME_SEEDS: dict[str, bytes] = {
    "empty": b"",
    # write, hold a view, write a frame that must grow (refused), clear (refused), release, clear
    "encoder-view-blocks-growth": bytes([0, 9, 40])
    + b"A" * 8
    + bytes([10, 9, 255])
    + b"B" * 8
    + bytes([12, 11, 0, 12]),
    # feed a 12 KB frame, take it, abandon a window, feed, take, scribble, replace, take
    "decoder-views-survive": bytes([0, 0, 250])
    + b"xyz"
    + bytes([0, 3, 6, 10, 1, 5])
    + b"hello"
    + bytes([3, 3, 7, 8, 3]),
    # a 72 KB frame through a 100,000-byte limit: the window grows, then shrinks back
    "window-grows-and-shrinks": bytes([1, 1, 255])
    + b"grow"
    + bytes([7, 3, 0, 3])
    + b"abc"
    + bytes([3, 1, 2])
    + b"zz"
    + bytes([3, 3]),
    "readers-and-into": bytes([0, 14, 30])
    + b"q" * 8
    + bytes([0, 14, 20])
    + b"r" * 8
    + bytes([1, 14, 9])
    + b"s" * 8
    + bytes([2, 15, 20])
    + b"z" * 8
    + bytes([3])
    + b"abc",
    "nested-fields-under-view": bytes([0, 13, 100])
    + b"n" * 8
    + bytes([2, 10, 13, 120])
    + b"m" * 8
    + bytes([3, 11, 0, 13, 120])
    + b"m" * 8
    + bytes([3]),
    "garbage-poisons": bytes([2, 0, 5])
    + b"abcde"
    + bytes([2, 11])
    + b"\xff" * 11
    + bytes([0, 0, 3, 3, 8, 0, 3])
    + b"new"
    + bytes([0, 3]),
    # found under ASan at 17c91a2: a bad prefix behind a frame not yet taken poisons the
    # decoder on arrival (O3), so a later get_buffer() raises FrameTooLargeError at once
    "o3-get-buffer-after-bad-prefix": bytes.fromhex(
        "0078ffff41ff3affff09fe0000fa7900464746787079004619999978ffff41ff"
        "3affff0900000177070000464746787879004699999999790046999999999999"
        "99790046999999990000fa790046474678787900469999999979004699999999"
        "999999790046999999999999"
    ),
}
