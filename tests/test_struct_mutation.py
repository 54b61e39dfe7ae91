"""Structs that change while they are being encoded (finding E1).

The encoder reads a struct once, onto a tape (see ``codec/structs/_encode.py``),
then writes the tape with no Python code run. Python code can run while the
struct is read: a value's ``__index__`` or ``__float__``, a sequence's
``__len__`` or ``__iter__``, a map key's ``__index__`` while the keys are
sorted, a finaliser, another thread. Whatever that code changes, the output
is the encoding of the values as they were read, every length prefix
consistent with its body, and nothing is written outside the room made for
it. Before the tape, the encoder read every value twice (a size pass and a
write pass), and under the sanitized build (``fuzz/sanitizers.sh test``)
the growing cases below showed heap-buffer-overflow and heap-use-after-free
writes until each write was checked against its room.

Each case builds a struct holding a :class:`Trigger`, an integer in its
first field (the first read) whose ``__index__`` runs a change; the change
therefore lands before the rest of the struct is read, and the output must
be the encoding of the changed struct. Other cases change what was already
read, or read values that differ from one read to the next. Each is
encoded through every struct entry point: ``codec.encode``,
``FrameEncoder.encode`` (after a first frame, which must survive) and
``encode_frame_into`` (appending to a buffer).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("grpc_tools", reason="the struct tests compile .proto files with grpcio-tools")

from helpers.unchecked import put, unchecked
from schemas import everything_pb2, legacy_pb2

import codec
from codec import EncodeError

AllTypes = codec.struct(everything_pb2.AllTypes)
Inner = codec.struct(everything_pb2.AllTypes.Inner)
Leaf = codec.struct(everything_pb2.Leaf)
WithGroups = codec.struct(legacy_pb2.WithGroups)
Header = codec.struct(legacy_pb2.WithGroups.Header)
Entry = codec.struct(legacy_pb2.WithGroups.Entry)

LONG = "x" * 300  # longer than the tape copies: written from the str's own memory


class Trigger:
    """An integer that runs ``change`` when it is read for the ``at``-th time."""

    def __init__(self, value: int, change: Callable[[], object], at: int = 1) -> None:
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
    """A sequence that yields ``first`` on its first iteration, then ``later``."""

    def __init__(self, first: list[Any], later: list[Any]) -> None:
        self.first = first
        self.later = later
        self.iterations = 0

    def __len__(self) -> int:
        return len(self.first if self.iterations == 0 else self.later)

    def __iter__(self) -> Iterator[Any]:
        self.iterations += 1
        return iter(self.first if self.iterations == 1 else self.later)


def _first_field(message: Any) -> str:
    return str(min(message.__plan__.fields, key=lambda field: field.number).name)


def with_trigger(cls: Any, change: Callable[[Any], object], **fields: Any) -> Any:
    """A struct whose first field (an int32) runs ``change(struct)`` when it is read."""
    message = cls(**fields)
    put(message, _first_field(message), Trigger(1, lambda: change(message)))
    return message


def settled(message: Any) -> Any:
    """``message`` with its trigger replaced by the value it read as."""
    put(message, _first_field(message), 1)
    return message


# Changes run by the first value read: the rest of the struct is read as changed, so
# the encoding is the changed struct's.
CHANGES: dict[str, Callable[[], Any]] = {
    # strings and bytes
    "string grows": lambda: with_trigger(
        AllTypes, lambda m: setattr(m, "f_string", LONG), f_string="a"
    ),
    "string shrinks": lambda: with_trigger(
        AllTypes, lambda m: setattr(m, "f_string", "a"), f_string="abc"
    ),
    "string changed": lambda: with_trigger(
        AllTypes, lambda m: setattr(m, "f_string", "b"), f_string="a"
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
    "packed list emptied": lambda: with_trigger(
        AllTypes, lambda m: m.p_int64.clear(), p_int64=[1, 2]
    ),
    "packed fixed list grows": lambda: with_trigger(
        AllTypes, lambda m: m.p_double.extend([1.0] * 40), p_double=[1.0]
    ),
    "packed element replaced": lambda: with_trigger(
        AllTypes, lambda m: m.p_uint32.__setitem__(0, 2**32 - 1), p_uint32=[1]
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
    "nested message replaced": lambda: with_trigger(
        AllTypes, lambda m: setattr(m, "f_leaf", Leaf(label=LONG)), f_leaf=Leaf(id=1)
    ),
    "deep nested message grows": lambda: with_trigger(
        AllTypes,
        lambda m: m.recursive.recursive.f_inner.tags.append(LONG),
        recursive=AllTypes(recursive=AllTypes(f_inner=Inner(tags=["a"]))),
    ),
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
    "unknown fields removed": lambda: _with_unknown(
        with_trigger(AllTypes, lambda m: setattr(m, "_unknown", None), f_string="a")
    ),
    "fields reset": lambda: with_trigger(AllTypes, lambda m: m.__init__(), f_string="a", f_2047=5),
}


def _with_unknown(message: Any, unknown: bytes = b"\xa0\x1f\x01") -> Any:
    message._unknown = unknown  # field 500, not in the schema
    assert 500 not in message.__plan__.by_number
    return message


# Changes run by a value read late (f_2047, the last number but f_max), to fields
# already read: the encoding has them as they were read. (expected, as built.)
LATE: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
    "string replaced after it was read": (
        lambda: _late(lambda m: setattr(m, "f_string", "b"), f_string=LONG),
        lambda: AllTypes(f_string=LONG, f_2047=1),
    ),
    "list grown after it was read": (
        lambda: _late(lambda m: m.p_int64.extend([-1] * 40), p_int64=[1, 2]),
        lambda: AllTypes(p_int64=[1, 2], f_2047=1),
    ),
    "nested message grown after it was read": (
        lambda: _late(lambda m: setattr(m.f_leaf, "label", LONG), f_leaf=Leaf(id=1)),
        lambda: AllTypes(f_leaf=Leaf(id=1), f_2047=1),
    ),
    "map emptied after it was read": (
        lambda: _late(lambda m: m.m_int64_string.clear(), m_int64_string={1: LONG, 2: "b"}),
        lambda: AllTypes(m_int64_string={1: LONG, 2: "b"}, f_2047=1),
    ),
    "fields reset after most were read": (
        lambda: _late(lambda m: m.__init__(), f_string="a", f_max="z"),
        lambda: AllTypes(f_string="a", f_2047=1),  # f_max comes after f_2047
    ),
    "unknown fields replaced before they are read": (
        lambda: _late(lambda m: setattr(m, "_unknown", b"\xa0\x1f\x02"), f_string="a"),
        lambda: _with_unknown(AllTypes(f_string="a", f_2047=1), b"\xa0\x1f\x02"),
    ),
    "struct shared by two fields grows between them": (
        # o_sint32 (field 25) is read between f_leaf (19) and o_leaf (37).
        lambda: _shared_leaf(),
        lambda: AllTypes(f_leaf=Leaf(id=1), o_sint32=1, o_leaf=Leaf(id=1, label=LONG)),
    ),
}


def _late(change: Callable[[Any], object], **fields: Any) -> Any:
    message = AllTypes(**fields)
    put(message, "f_2047", Trigger(1, lambda: change(message)))
    return message


def _shared_leaf() -> Any:
    leaf = Leaf(id=1)
    message = AllTypes(f_leaf=leaf, o_leaf=leaf)
    put(message, "o_sint32", Trigger(1, lambda: setattr(leaf, "label", LONG)))
    return message


# Values that read differently each time they are read: each is read once, so the
# encoding has its first reading. Each maker takes the value's constructor.
FLIPS: dict[str, Callable[[Callable[[float, float], Any]], Any]] = {
    "varint grows": lambda v: unchecked(AllTypes, f_uint64=v(1, 2**64 - 1)),
    "varint shrinks": lambda v: unchecked(AllTypes, f_uint64=v(2**64 - 1, 1)),
    "varint changed": lambda v: unchecked(AllTypes, f_uint64=v(1, 2)),
    "implicit zero becomes non-zero": lambda v: unchecked(AllTypes, f_int64=v(0, -1)),
    "optional varint grows": lambda v: unchecked(AllTypes, o_sint64=v(0, -(2**63))),
    "float changed": lambda v: unchecked(AllTypes, f_double=v(1.0, 2.0)),
    "packed varint grows": lambda v: unchecked(AllTypes, p_uint64=[1, v(1, 2**64 - 1), 1]),
    "unpacked varint grows": lambda v: unchecked(AllTypes, u_int32=[v(1, -1)]),
    "map value grows": lambda v: unchecked(AllTypes, m_sfixed64_uint64={1: v(1, 2**64 - 1)}),
    "oneof varint grows": lambda v: unchecked(AllTypes, c_sint64=v(0, -(2**63))),
    "nested varint grows": lambda v: AllTypes(f_inner=unchecked(Inner, a=v(1, -1))),
    "group varint grows": lambda v: WithGroups(header=unchecked(Header, version=v(1, -1))),
}


def _first_reading(first: float, later: float) -> float:
    return first


ENTRY_POINTS = ["codec.encode", "FrameEncoder.encode", "encode_frame_into"]
EARLIER = AllTypes(f_string="first frame", p_int32=[1, 2, 3])


def _encode_via(via: str, message: Any) -> bytes:
    """The payload ``message`` encodes to through the entry point ``via``.

    ``FrameEncoder.encode`` writes after a first frame, which must survive;
    ``encode_frame_into`` appends to a buffer, whose bytes must too.
    """
    if via == "codec.encode":
        return codec.encode(message)
    if via == "FrameEncoder.encode":
        encoder = codec.FrameEncoder()
        encoder.encode(EARLIER)
        encoder.encode(message)
        first, payload = _payloads(bytes(encoder.getbuffer()))
        assert first == codec.encode(EARLIER)
        return payload
    buffer = bytearray(b"earlier bytes")
    codec.encode_frame_into(message, buffer)
    assert buffer.startswith(b"earlier bytes")
    (payload,) = _payloads(bytes(buffer[len(b"earlier bytes") :]))
    return payload


def _payloads(stream: bytes) -> list[bytes]:
    decoder = codec.FrameDecoder()
    decoder.feed(stream)
    return [bytes(frame) for frame in decoder]


@pytest.mark.parametrize("via", ENTRY_POINTS)
@pytest.mark.parametrize("case", CHANGES)
def test_a_struct_changed_while_it_is_read_encodes_as_changed(case: str, via: str) -> None:
    message = CHANGES[case]()
    payload = _encode_via(via, message)
    assert payload == codec.encode(settled(message))


@pytest.mark.parametrize("via", ENTRY_POINTS)
@pytest.mark.parametrize("case", LATE)
def test_a_change_to_fields_already_read_is_not_seen(case: str, via: str) -> None:
    make, expected = LATE[case]
    assert _encode_via(via, make()) == codec.encode(expected())


@pytest.mark.parametrize("via", ENTRY_POINTS)
@pytest.mark.parametrize("case", FLIPS)
def test_each_value_is_read_once(case: str, via: str) -> None:
    make = FLIPS[case]
    assert _encode_via(via, make(Flip)) == codec.encode(make(_first_reading))


def test_a_sequence_is_iterated_once() -> None:
    growing = Growing([1], [-1] * 40)
    message = unchecked(AllTypes, p_int32=growing, u_sint64=Growing([1, 2], [1] * 40))
    assert codec.encode(message) == codec.encode(AllTypes(p_int32=[1], u_sint64=[1, 2]))
    assert growing.iterations == 1


def test_a_map_key_is_read_to_sort_then_to_write() -> None:
    """A key that is not an exact int or str runs Python code twice; the entry stays whole."""
    key = Flip(1, -1)
    message = unchecked(AllTypes, m_int32_int32={key: 7})
    expected = codec.encode(AllTypes(m_int32_int32={-1: 7}))
    assert codec.encode(message, deterministic=True) == expected
    assert key.reads == 2


def test_a_map_key_is_read_once_when_nothing_is_sorted() -> None:
    key = Flip(1, -1)
    message = unchecked(AllTypes, m_int32_int32={key: 7})
    assert codec.encode(message) == codec.encode(AllTypes(m_int32_int32={1: 7}))
    assert key.reads == 1


@pytest.mark.parametrize("via", ENTRY_POINTS)
def test_a_struct_made_to_contain_itself_while_read_is_refused(via: str) -> None:
    message = with_trigger(AllTypes, lambda m: setattr(m, "recursive", m), f_string="a")
    _assert_refused(via, message, "nested deeper than")


def _assert_refused(via: str, message: Any, match: str) -> None:
    """The encode raises EncodeError and leaves the encoder or buffer as it was."""
    if via == "codec.encode":
        with pytest.raises(EncodeError, match=match):
            codec.encode(message)
    elif via == "FrameEncoder.encode":
        encoder = codec.FrameEncoder()
        encoder.encode(EARLIER)
        before = bytes(encoder.getbuffer())
        with pytest.raises(EncodeError, match=match):
            encoder.encode(message)
        assert bytes(encoder.getbuffer()) == before
        encoder.encode(EARLIER)  # and the encoder goes on
        assert _payloads(bytes(encoder.getbuffer())) == [codec.encode(EARLIER)] * 2
    else:
        buffer = bytearray(b"earlier bytes")
        with pytest.raises(EncodeError, match=match):
            codec.encode_frame_into(message, buffer)
        assert buffer == b"earlier bytes"


def test_a_long_string_dropped_after_it_was_read_is_still_written() -> None:
    """The tape holds the str whose bytes it will copy, so freeing it cannot reach the output.

    Under AddressSanitizer a tape without the reference is a heap-use-after-free.
    """
    text = "".join(["y"] * 5000)  # made here, so the struct holds its only other reference
    message = AllTypes(f_string=text)
    del text
    put(message, "f_2047", Trigger(1, lambda: setattr(message, "f_string", "short")))
    assert codec.encode(message) == codec.encode(AllTypes(f_string="y" * 5000, f_2047=1))


def test_a_number_that_empties_its_own_slot_while_read_is_still_written() -> None:
    """The encoder reads a number where it lies, without a reference: one that is not an
    exact int must be held while its ``__index__`` runs, or freeing it there is a
    use-after-free (the sanitized suite runs this test)."""
    message = AllTypes()
    put(message, "f_int64", Trigger(7, lambda: setattr(message, "f_int64", 1)))
    put(message, "o_int32", Trigger(5, lambda: message.ClearField("o_int32")))
    assert codec.encode(message) == codec.encode(AllTypes(f_int64=7, o_int32=5))
    assert message.f_int64 == 1 and not message.HasField("o_int32")


def test_a_packed_element_that_empties_its_list_while_read_is_still_written() -> None:
    items: list[Any] = []
    items.extend([1, Trigger(2, items.clear), 3])  # the list holds the Trigger's only reference
    message = AllTypes(p_int32=[0])
    put(message, "p_int32", items)
    assert codec.encode(message) == codec.encode(AllTypes(p_int32=[1, 2]))
    assert items == []


def test_a_packed_element_that_grows_its_list_while_read_is_written_with_room() -> None:
    """Room for a packed run is made for the elements it has; elements added by one that
    runs Python code are written after room is made for them (the sanitized suite runs
    this test: writing them in the room made before is a heap-buffer-overflow)."""
    items: list[Any] = []
    grow = [-1] * 3000  # 10 bytes each: beyond the room made for three elements
    items.extend([1, Trigger(2, lambda: items.extend(grow)), 3])
    message = AllTypes(p_int32=[0])
    put(message, "p_int32", items)
    assert codec.encode(message) == codec.encode(AllTypes(p_int32=[1, 2, 3, *grow]))


def test_a_bytearray_cannot_be_resized_once_read() -> None:
    """The tape keeps a view of a long bytearray until it is written."""
    data = bytearray(b"z" * 500)
    message = AllTypes(f_bytes=data)
    put(message, "f_2047", Trigger(1, lambda: data.extend(b"more")))
    with pytest.raises(BufferError):
        codec.encode(message)
    data.extend(b"more")  # released with the tape
    assert codec.encode(AllTypes(f_bytes=data))[-4:] == b"more"


def test_an_encode_inside_an_encode_takes_its_own_tape() -> None:
    inner = AllTypes(f_string=LONG, p_int64=[5] * 100, m_int64_string={1: LONG})
    results: list[bytes] = []
    message = with_trigger(
        AllTypes, lambda m: results.append(codec.encode(inner)), f_string="outer", f_leaf=Leaf()
    )
    payload = codec.encode(message)
    assert results == [codec.encode(inner)]
    assert payload == codec.encode(settled(message))


def test_threads_that_switch_while_reading_get_their_own_encodings() -> None:
    """Each thread's values run Python code (a GIL switch) while another thread encodes."""

    def make(n: int) -> Any:
        tick = Trigger(1, lambda: time.sleep(0.001))
        return unchecked(AllTypes, f_int32=tick, f_string=str(n) * 70, p_int64=[n] * 50)

    failures: list[int] = []

    def run(n: int) -> None:
        for _ in range(30):
            message = make(n)
            expected = codec.encode(settled(make(n)))
            if codec.encode(message) != expected:
                failures.append(n)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_encoding_into_the_encoder_while_it_encodes_is_refused() -> None:
    """A frame appended by Python code in the middle of a struct's encoding."""
    encoder = codec.FrameEncoder()
    other = AllTypes(f_string="inner")
    message = with_trigger(AllTypes, lambda m: encoder.encode(other), f_string="outer")
    with pytest.raises(RuntimeError, match="FrameEncoder is already encoding"):
        encoder.encode(message)
    assert len(encoder) == 0  # neither frame: the inner one was refused, so the outer failed
    encoder.encode(other)
    assert _payloads(bytes(encoder.getbuffer())) == [codec.encode(other)]


def test_the_encoder_cannot_grow_while_it_encodes() -> None:
    encoder = codec.FrameEncoder(capacity=64)
    encoder.encode(AllTypes(f_string="first"))
    before = bytes(encoder.getbuffer())
    message = with_trigger(AllTypes, lambda m: encoder.write(b"z" * 100_000), f_string="a")
    with pytest.raises(RuntimeError, match="FrameEncoder is already encoding"):
        encoder.encode(message)
    assert bytes(encoder.getbuffer()) == before


def test_a_callers_buffer_resized_while_the_struct_is_read_gets_the_frame_at_its_end() -> None:
    buffer = bytearray(b"earlier bytes")
    message = with_trigger(AllTypes, lambda m: buffer.extend(b"z" * 1000), f_string="a")
    end = codec.encode_frame_into(message, buffer)
    assert end == len(buffer)
    assert buffer[:1013] == b"earlier bytes" + b"z" * 1000
    assert _payloads(bytes(buffer[1013:])) == [codec.encode(settled(message))]


def test_a_callers_buffer_cut_below_the_offset_while_the_struct_is_read() -> None:
    buffer = bytearray(b"earlier bytes")
    message = with_trigger(AllTypes, lambda m: buffer.clear(), f_string="a")
    with pytest.raises(ValueError, match="outside the buffer"):
        codec.encode_frame_into(message, buffer, 13)
    assert buffer == b""


def test_a_value_that_changes_type_while_read_is_an_encode_error() -> None:
    message = with_trigger(AllTypes, lambda m: put(m, "f_leaf", Inner()), f_leaf=Leaf(id=1))
    with pytest.raises(EncodeError, match="f_leaf"):
        codec.encode(message)
    message = with_trigger(
        AllTypes,
        lambda m: dict.__setitem__(m.m_uint64_leaf, 1, "not a struct"),  # around the checks
        m_uint64_leaf={1: Leaf(id=1)},
    )
    with pytest.raises(EncodeError):
        codec.encode(message)
    message = with_trigger(AllTypes, lambda m: put(m, "f_string", "\ud800"), f_string="a")
    with pytest.raises(EncodeError, match="lone surrogate"):
        codec.encode(message)
    for key in (5, "\ud800"):  # a string map's key replaced: an EncodeError, not what sorting met
        message = with_trigger(
            AllTypes,
            lambda m, key=key: (
                m.m_string_string.clear(),
                dict.update(m.m_string_string, {key: "a"}),
            ),
            m_string_string={"k": "a", "j": "b"},
        )
        with pytest.raises(EncodeError, match="m_string_string"):
            codec.encode(message)
    message = with_trigger(
        AllTypes,
        lambda m: dict.update(m.m_int32_int32, {"x": 1}),
        m_int32_int32={1: 1, 2: 2},
    )
    with pytest.raises(EncodeError, match="m_int32_int32"):
        codec.encode(message)


@pytest.mark.parametrize("via", ENTRY_POINTS)
def test_structs_still_encode_after_a_refused_one(via: str) -> None:
    """A refused encode releases its tape: the next ones are whole."""
    leaf = Leaf(id=1, label=LONG)
    message = AllTypes(f_leaf=leaf, r_leaf=[leaf], f_string=LONG, m_int64_string={1: LONG})
    expected = codec.encode(message)
    bad = with_trigger(
        AllTypes,
        lambda m: list.append(m.r_leaf, "not a leaf"),  # around the checks
        f_leaf=leaf,
        r_leaf=[leaf],
        f_string=LONG,
    )
    _assert_refused(via, bad, "r_leaf")
    assert codec.encode(message) == expected
    assert _encode_via(via, message) == expected
