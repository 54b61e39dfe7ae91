"""Structs that change while they are being encoded (finding E1).

Struct encoding is two passes: the size pass measures the struct (and leaves
each nested struct's size in it), then the write pass writes into room
reserved from that size. Python code can run during and between the passes:
a value's ``__index__`` or ``__float__``, a sequence's ``__len__`` or
``__iter__``, the sort of a map's keys, a finaliser run by the garbage
collector, another thread. Whatever that code changes, the encoder must never
write outside the room it reserved: either the output is a consistent
encoding of the values it read, or :class:`EncodeError` says the struct
changed, and the partial frame is rolled back.

Each case below builds a struct holding a :class:`Trigger`, an integer field
whose ``__index__`` runs a change on its second read, which comes in the
write pass after the struct was measured (or a value that reads differently
from one read to the next). The case is encoded through every struct entry
point: ``codec.encode``, ``FrameEncoder.encode`` (after a first frame, which
must survive) and ``encode_frame_into`` (appending to a buffer, which must
come back unchanged). A change that grows or shrinks the encoding must raise
``EncodeError``; one that keeps every size must give the encoding of the
changed struct. Under the sanitized build (``fuzz/sanitizers.sh test``) the
growing cases showed heap-buffer-overflow and heap-use-after-free writes
before the fix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("grpc_tools", reason="the struct tests compile .proto files with grpcio-tools")

from schemas import everything_pb2, legacy_pb2
from unchecked import put, unchecked

import codec
from codec import EncodeError

AllTypes = codec.struct(everything_pb2.AllTypes)
Inner = codec.struct(everything_pb2.AllTypes.Inner)
Leaf = codec.struct(everything_pb2.Leaf)
WithGroups = codec.struct(legacy_pb2.WithGroups)
Header = codec.struct(legacy_pb2.WithGroups.Header)
Entry = codec.struct(legacy_pb2.WithGroups.Entry)

CHANGED = "changed while it was being encoded"
LONG = "x" * 300  # grows an encoding by a few hundred bytes, inside a FrameEncoder's spare room


class Trigger:
    """An integer that runs ``change`` when it is read for the ``at``-th time."""

    def __init__(self, value: int, change: Callable[[], object], at: int = 2) -> None:
        self.value = value
        self.change = change
        self.at = at
        self.reads = 0

    def __index__(self) -> int:
        self.reads += 1
        if self.reads == self.at:
            self.change()
        return self.value


class Flip:
    """A number that reads as ``first`` once, then as ``later`` (``__index__``, ``__float__``)."""

    def __init__(self, first: float, later: float) -> None:
        self.first = first
        self.later = later
        self.reads = 0

    def read(self) -> float:
        self.reads += 1
        return self.first if self.reads == 1 else self.later

    def __index__(self) -> int:
        return int(self.read())

    def __float__(self) -> float:
        return float(self.read())


class Growing:
    """A sequence that yields ``first`` on its first ``steady`` iterations, then ``later``."""

    def __init__(self, first: list[Any], later: list[Any], steady: int = 1) -> None:
        self.first = first
        self.later = later
        self.steady = steady
        self.iterations = 0

    def __len__(self) -> int:
        return len(self.first if self.iterations < self.steady else self.later)

    def __iter__(self) -> Iterator[Any]:
        self.iterations += 1
        return iter(self.first if self.iterations <= self.steady else self.later)


def with_trigger(cls: Any, change: Callable[[Any], object], **fields: Any) -> Any:
    """A struct whose field 1 (an int32) runs ``change(struct)`` in the write pass."""
    message = cls(**fields)
    trigger = Trigger(1, lambda: change(message))
    first = min(message.__plan__.fields, key=lambda field: field.number).name
    put(message, first, trigger)
    return message


# Changes that grow or shrink the encoding: every entry point must raise EncodeError.
SIZE_CHANGES: dict[str, Callable[[], Any]] = {
    # scalars that read differently in each pass
    "varint grows": lambda: unchecked(AllTypes, f_uint64=Flip(1, 2**64 - 1)),
    "implicit zero becomes non-zero": lambda: unchecked(AllTypes, f_int64=Flip(0, -1)),
    "varint shrinks": lambda: unchecked(AllTypes, f_uint64=Flip(2**64 - 1, 1)),
    "optional varint grows": lambda: unchecked(AllTypes, o_sint64=Flip(0, -(2**63))),
    "packed varint grows": lambda: unchecked(AllTypes, p_uint64=[1, Flip(1, 2**64 - 1), 1]),
    "unpacked varint grows": lambda: unchecked(AllTypes, u_int32=[Flip(1, -1)]),
    "map key grows": lambda: unchecked(AllTypes, m_int32_int32={Flip(1, -1): 1}),
    "map value grows": lambda: unchecked(AllTypes, m_sfixed64_uint64={1: Flip(1, 2**64 - 1)}),
    "oneof varint grows": lambda: unchecked(AllTypes, c_sint64=Flip(0, -(2**63))),
    "nested varint grows": lambda: AllTypes(f_inner=unchecked(Inner, a=Flip(1, -1))),
    "group varint grows": lambda: WithGroups(header=unchecked(Header, version=Flip(1, -1))),
    # strings and bytes
    "string grows": lambda: with_trigger(
        AllTypes, lambda m: setattr(m, "f_string", LONG), f_string="a"
    ),
    "string shrinks": lambda: with_trigger(
        AllTypes, lambda m: setattr(m, "f_string", "a"), f_string="abc"
    ),
    "empty string gets text": lambda: with_trigger(
        AllTypes, lambda m: setattr(m, "f_string", LONG)
    ),
    "bytearray grows in place": lambda: with_trigger(
        AllTypes, lambda m: m.f_bytes.extend(b"y" * 300), f_bytes=bytearray(b"a")
    ),
    "repeated string grows": lambda: with_trigger(
        AllTypes, lambda m: m.r_string.append(LONG), r_string=["a"]
    ),
    # repeated fields and containers
    "packed list grows": lambda: with_trigger(
        AllTypes, lambda m: m.p_int64.extend([-1] * 40), p_int64=[1, 2]
    ),
    "packed list shrinks": lambda: with_trigger(
        AllTypes, lambda m: m.p_int64.pop(), p_int64=[1, 2]
    ),
    "packed fixed list grows": lambda: with_trigger(
        AllTypes, lambda m: m.p_double.extend([1.0] * 40), p_double=[1.0]
    ),
    "packed element replaced": lambda: with_trigger(
        AllTypes, lambda m: m.p_uint32.__setitem__(0, 2**32 - 1), p_uint32=[1]
    ),
    "sequence grows between its sum and its write": lambda: unchecked(
        AllTypes, p_int32=Growing([1], [-1] * 40, steady=2)
    ),
    "sequence grows between the passes": lambda: unchecked(
        AllTypes, u_sint64=Growing([1], [1] * 40)
    ),
    "unpacked list grows": lambda: with_trigger(
        AllTypes, lambda m: m.u_fixed64.extend([1] * 40), u_fixed64=[1]
    ),
    "repeated message appended": lambda: with_trigger(
        AllTypes, lambda m: m.r_leaf.append(Leaf(label=LONG)), r_leaf=[Leaf(id=1)]
    ),
    "repeated message grows": lambda: with_trigger(
        AllTypes, lambda m: setattr(m.r_leaf[0], "label", LONG), r_leaf=[Leaf(id=1)]
    ),
    "map entry added": lambda: with_trigger(
        AllTypes, lambda m: m.m_int64_string.__setitem__(2, LONG), m_int64_string={1: "a"}
    ),
    "map value replaced": lambda: with_trigger(
        AllTypes, lambda m: m.m_int64_string.__setitem__(1, LONG), m_int64_string={1: "a"}
    ),
    "map message value grows": lambda: with_trigger(
        AllTypes,
        lambda m: setattr(m.m_uint64_leaf[1], "label", LONG),
        m_uint64_leaf={1: Leaf(id=1)},
    ),
    "map message value replaced": lambda: with_trigger(
        AllTypes,
        lambda m: m.m_uint64_leaf.__setitem__(1, Leaf(label=LONG)),
        m_uint64_leaf={1: Leaf(id=1)},
    ),
    # nested messages
    "nested message grows": lambda: with_trigger(
        AllTypes, lambda m: setattr(m.f_leaf, "label", LONG), f_leaf=Leaf(id=1)
    ),
    "nested message shrinks": lambda: with_trigger(
        AllTypes, lambda m: setattr(m.f_leaf, "label", ""), f_leaf=Leaf(label="abc")
    ),
    "nested message replaced by an unmeasured one": lambda: with_trigger(
        AllTypes, lambda m: setattr(m, "f_leaf", Leaf(label=LONG)), f_leaf=Leaf(id=1)
    ),
    "deep nested message grows": lambda: with_trigger(
        AllTypes,
        lambda m: m.recursive.recursive.f_inner.tags.append(LONG),
        recursive=AllTypes(recursive=AllTypes(f_inner=Inner(tags=["a"]))),
    ),
    "message made to contain itself": lambda: with_trigger(
        AllTypes, lambda m: setattr(m, "recursive", m), f_string="a"
    ),
    "struct shared by two fields grows between them": lambda: _shared_leaf(),
    # oneofs
    "oneof member switched": lambda: with_trigger(
        AllTypes,
        lambda m: (m.ClearField("c_string"), setattr(m, "c_inner", Inner(tags=[LONG]))),
        c_string="a",
    ),
    "oneof string grows": lambda: with_trigger(
        AllTypes, lambda m: setattr(m, "c_string", LONG), c_string="a"
    ),
    # groups
    "group grows": lambda: with_trigger(
        WithGroups, lambda m: setattr(m.header, "author", LONG), header=Header(version=1)
    ),
    "repeated group appended": lambda: with_trigger(
        WithGroups,
        lambda m: m.entry.append(Entry(key=LONG)),
        entry=[Entry(key="a")],
    ),
    # the struct's own storage
    "unknown fields replaced": lambda: with_trigger(
        AllTypes, lambda m: setattr(m, "_unknown", b"\x08\x01" * 150)
    ),
    "fields reset": lambda: with_trigger(AllTypes, lambda m: m.__init__(), f_string="a", f_2047=5),
    "fields reset in the size pass": lambda: _reset_in_the_size_pass(),
    "unknown fields removed": lambda: _unknown_removed(),
}


def _shared_leaf() -> Any:
    """One Leaf in two fields, grown by a value read between its two measurements."""
    leaf = Leaf(id=1)
    message = AllTypes(f_leaf=leaf, o_leaf=leaf)
    # o_sint32 (field 26) is measured between f_leaf (19) and o_leaf (37).
    put(message, "o_sint32", Trigger(1, lambda: setattr(leaf, "label", LONG), at=1))
    return message


def _reset_in_the_size_pass() -> Any:
    """Every field of the struct unset while the size pass reads it."""
    message = AllTypes(f_max="a")
    put(message, "f_2047", Trigger(1, lambda: message.__init__(), at=1))
    return message


def _unknown_removed() -> Any:
    """Unknown fields dropped (None reads as none) in the write pass."""
    message = with_trigger(AllTypes, lambda m: setattr(m, "_unknown", None), f_string="a")
    message._unknown = b"\xa0\x1f\x01"  # field 500, not in the schema: 3 bytes
    assert 500 not in message.__plan__.by_number
    return message


# Changes that keep every size: the output is the encoding of the changed struct.
SAME_SIZE_CHANGES: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
    "string changed": (
        lambda: with_trigger(AllTypes, lambda m: setattr(m, "f_string", "b"), f_string="a"),
        lambda: AllTypes(f_int32=1, f_string="b"),
    ),
    "varint changed": (
        lambda: unchecked(AllTypes, f_uint64=Flip(1, 2)),
        lambda: AllTypes(f_uint64=2),
    ),
    "float changed": (
        lambda: unchecked(AllTypes, f_double=Flip(1.0, 2.0)),
        lambda: AllTypes(f_double=2.0),
    ),
    "nested struct changed": (
        lambda: with_trigger(
            AllTypes, lambda m: setattr(m.f_leaf, "label", "b"), f_leaf=Leaf(label="a")
        ),
        lambda: AllTypes(f_int32=1, f_leaf=Leaf(label="b")),
    ),
}

ENTRY_POINTS = ["codec.encode", "FrameEncoder.encode", "encode_frame_into"]


def _encode_via(via: str, message: Any) -> bytes:
    """The payload ``message`` encodes to through the entry point ``via``."""
    if via == "codec.encode":
        return codec.encode(message)
    if via == "FrameEncoder.encode":
        encoder = codec.FrameEncoder()
        encoder.encode(message)
        return _payloads(bytes(encoder.getbuffer()))[0]
    buffer = bytearray()
    codec.encode_frame_into(message, buffer)
    return _payloads(bytes(buffer))[0]


def _payloads(stream: bytes) -> list[bytes]:
    decoder = codec.FrameDecoder()
    decoder.feed(stream)
    return [bytes(frame) for frame in decoder]


@pytest.mark.parametrize("via", ENTRY_POINTS)
@pytest.mark.parametrize("case", SIZE_CHANGES)
def test_a_struct_that_changes_size_while_encoded_is_refused(case: str, via: str) -> None:
    make = SIZE_CHANGES[case]
    first = AllTypes(f_string="first frame", p_int32=[1, 2, 3])
    if via == "codec.encode":
        with pytest.raises(EncodeError, match=CHANGED):
            codec.encode(make())
    elif via == "FrameEncoder.encode":
        encoder = codec.FrameEncoder()
        encoder.encode(first)
        before = bytes(encoder.getbuffer())
        with pytest.raises(EncodeError, match=CHANGED):
            encoder.encode(make())
        assert bytes(encoder.getbuffer()) == before  # the partial frame is rolled back
        encoder.encode(first)  # and the encoder goes on
        assert _payloads(bytes(encoder.getbuffer())) == [codec.encode(first)] * 2
    else:
        buffer = bytearray(b"earlier bytes")
        with pytest.raises(EncodeError, match=CHANGED):
            codec.encode_frame_into(make(), buffer)
        assert buffer == b"earlier bytes"


@pytest.mark.parametrize("via", ENTRY_POINTS)
@pytest.mark.parametrize("case", SAME_SIZE_CHANGES)
def test_a_change_that_keeps_the_sizes_gives_the_changed_encoding(case: str, via: str) -> None:
    make, expected = SAME_SIZE_CHANGES[case]
    assert _encode_via(via, make()) == codec.encode(expected())


def test_encoding_into_the_encoder_while_it_encodes_is_refused() -> None:
    """A frame appended by Python code in the middle of a struct's write pass."""
    encoder = codec.FrameEncoder()
    other = AllTypes(f_string="inner")
    message = with_trigger(AllTypes, lambda m: encoder.encode(other), f_string="outer")
    with pytest.raises(RuntimeError, match="FrameEncoder is already encoding"):
        encoder.encode(message)
    assert len(encoder) == 0  # neither frame: the inner one was refused, so the outer failed
    encoder.encode(other)
    assert _payloads(bytes(encoder.getbuffer())) == [codec.encode(other)]


def test_a_struct_that_changes_after_a_frame_was_written_into_its_encoder() -> None:
    encoder = codec.FrameEncoder()
    encoder.encode(AllTypes(f_string="first"))
    before = bytes(encoder.getbuffer())
    message = with_trigger(
        AllTypes,
        lambda m: (encoder.encode(AllTypes(f_string="inner")), setattr(m, "f_string", LONG)),
        f_string="outer",
    )
    with pytest.raises(RuntimeError, match="FrameEncoder is already encoding"):
        encoder.encode(message)
    assert bytes(encoder.getbuffer()) == before


def test_the_encoder_cannot_grow_while_it_encodes() -> None:
    """Growing the buffer would move it under the write pass's pointer (use after free)."""
    encoder = codec.FrameEncoder(capacity=64)
    encoder.encode(AllTypes(f_string="first"))
    before = bytes(encoder.getbuffer())
    message = with_trigger(AllTypes, lambda m: encoder.write(b"z" * 100_000), f_string="a")
    with pytest.raises(RuntimeError, match="FrameEncoder is already encoding"):
        encoder.encode(message)
    assert bytes(encoder.getbuffer()) == before


def test_a_callers_buffer_cannot_be_resized_while_a_frame_is_written_into_it() -> None:
    buffer = bytearray(b"earlier bytes")
    message = with_trigger(AllTypes, lambda m: buffer.extend(b"z" * 100_000), f_string="a")
    with pytest.raises(BufferError):
        codec.encode_frame_into(message, buffer)
    assert buffer == b"earlier bytes"


def test_a_value_that_changes_type_between_the_passes_is_an_encode_error() -> None:
    message = with_trigger(AllTypes, lambda m: put(m, "f_leaf", Inner()), f_leaf=Leaf(id=1))
    with pytest.raises(EncodeError):
        codec.encode(message)
    message = with_trigger(
        AllTypes,
        lambda m: m.m_uint64_leaf.__setitem__(1, "not a struct"),
        m_uint64_leaf={1: Leaf(id=1)},
    )
    with pytest.raises(EncodeError):
        codec.encode(message)
    message = with_trigger(AllTypes, lambda m: put(m, "f_string", "\ud800"), f_string="a")
    with pytest.raises(EncodeError):
        codec.encode(message)
    for key in (5, "\ud800"):  # a string map's key replaced: an EncodeError, not what sorting met
        message = with_trigger(
            AllTypes,
            lambda m, key=key: (m.m_string_string.clear(), m.m_string_string.update({key: "a"})),
            m_string_string={"k": "a", "j": "b"},
        )
        with pytest.raises(EncodeError, match="m_string_string"):
            codec.encode(message)
    message = with_trigger(
        AllTypes,
        lambda m: m.m_int32_int32.update({"x": 1}),
        m_int32_int32={1: 1, 2: 2},
    )
    with pytest.raises(EncodeError, match="m_int32_int32"):
        codec.encode(message)


def test_unchanged_structs_still_encode_after_a_refused_one() -> None:
    leaf = Leaf(id=1)
    message = AllTypes(f_leaf=leaf, r_leaf=[leaf])
    expected = codec.encode(message)
    grown = with_trigger(
        AllTypes, lambda m: setattr(m.f_leaf, "label", LONG), f_leaf=leaf, r_leaf=[leaf]
    )
    with pytest.raises(EncodeError):
        codec.encode(grown)
    leaf.label = ""
    assert codec.encode(message) == expected
