"""Structs and Python's cycle collector ("the cycle collector" in ``codec/structs/_struct.py``).

Two promises, judged by the collector itself:

* what is not tracked costs no collection: a struct of numbers and strings,
  and everything a decoder makes (maps, oneofs, repeated fields, nested and
  recursive messages), read or not, until a store could close a cycle;
* every cycle made through the checks is collected: by assignment, by a
  constructor, through a default sub-message, and by each way of adding to a
  repeated field or a map, into messages fresh from a decoder, at any depth.
  A weak reference to each struct must be dead after a collection.

Tracking is a compiled-build matter (the pure build tracks every object), so
the first promise is checked compiled only; the second in both builds.
"""

from __future__ import annotations

import collections
import gc
import weakref
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("grpc_tools", reason="the schemas are compiled with grpcio-tools")

from helpers import peerbench
from schemas import everything_pb2 as E

import codec
from codec import EncodeError

COMPILED = codec.COMPILED
AllTypes = codec.struct(E.AllTypes)
Tree = codec.struct(E.Tree)

# Every kind of container and nesting: repeated scalars and messages, maps of scalars, of
# messages and of the message itself, a oneof message member, recursion.
NESTED = E.AllTypes(
    r_string=["a", "b"],
    r_inner=[E.AllTypes.Inner(a=1, tags=["t"])],
    m_int32_int32={1: 2},
    m_string_inner={"k": E.AllTypes.Inner(a=2)},
    m_string_self={"s": E.AllTypes(m_int64_string={3: "x"}, c_inner=E.AllTypes.Inner())},
    c_inner=E.AllTypes.Inner(a=3, tags=["u", "v"]),
    recursive=E.AllTypes(r_leaf=[E.Leaf()], recursive=E.AllTypes(p_int32=[4])),
)
NESTED_BYTES = NESTED.SerializeToString(deterministic=True)

TREE_BYTES = E.Tree(
    value=1,
    left=E.Tree(value=2, right=E.Tree(value=3)),
    children=[E.Tree(value=4, children=[E.Tree(value=5)]), E.Tree(value=6)],
    named={"a": E.Tree(value=7, named={"z": E.Tree(value=8)})},
).SerializeToString(deterministic=True)


def structs_and_containers(message: Any) -> list[Any]:
    """The structs, lists and dicts reachable from ``message`` (each once)."""
    found: dict[int, Any] = {}
    pending = [message]
    while pending:
        item = pending.pop()
        if id(item) in found:
            continue
        if not (isinstance(item, (list, dict)) or hasattr(type(item), "__plan__")):
            continue
        found[id(item)] = item
        pending.extend(item.values() if isinstance(item, dict) else gc.get_referents(item))
    return list(found.values())


def read_every_field(message: Any) -> None:
    """Read each set field through its attribute, as an application does, and what it holds."""
    for field, _ in message.ListFields():
        value = getattr(message, field.name)
        values = value.values() if isinstance(value, dict) else value
        if field.message_type is None:
            continue
        for element in values if field.is_repeated else [value]:
            if hasattr(element, "ListFields"):  # not a map's scalar value
                read_every_field(element)


def tracked(message: Any) -> list[Any]:
    return [item for item in structs_and_containers(message) if gc.is_tracked(item)]


def collected(make: Callable[[], Any]) -> bool:
    """Whether the structs ``make`` returns (in a list) are all freed once dropped."""
    refs = [weakref.ref(item) for item in make()]
    gc.collect()
    return all(ref() is None for ref in refs)


# --- 1. what is not tracked --------------------------------------------------------------


@pytest.mark.skipif(not COMPILED, reason="the pure build tracks every object")
def test_structs_of_scalars_are_not_tracked_until_they_hold_a_container() -> None:
    record = codec.struct(peerbench.Sample)(ts_ns=1, scope_id=2, value=3, name="x")
    assert not gc.is_tracked(record)  # numbers and a str cannot make a cycle
    trace = codec.struct(peerbench.Trace)(index=1)
    assert not gc.is_tracked(trace)  # its repeated field is still an empty slot
    trace.spans.append(codec.struct(peerbench.Span)())  # the list is made and stored
    assert gc.is_tracked(trace) and gc.is_tracked(trace.spans)
    assert not gc.is_tracked(trace.spans[0])  # numbers only
    span = codec.struct(peerbench.Span)(window=codec.struct(peerbench.Interval)())
    assert gc.is_tracked(span)  # a constructor's store of a struct


@pytest.mark.skipif(not COMPILED, reason="the pure build tracks every object")
@pytest.mark.parametrize("via", ["decode", "Decoder", "FrameDecoder"])
def test_what_a_decoder_makes_is_not_tracked_read_or_not(via: str) -> None:
    if via == "decode":
        message = codec.decode(AllTypes, NESTED_BYTES)
    elif via == "Decoder":
        message = codec.Decoder(AllTypes, zero_copy=True).decode(NESTED_BYTES)
    else:
        frames = codec.FrameDecoder(message_type=AllTypes)
        frames.feed(codec.varint.encode(len(NESTED_BYTES)) + NESTED_BYTES)
        message = next(frames)
    held = structs_and_containers(message)
    assert len(held) > 15 and not tracked(message)
    read_every_field(message)  # the containers read are made anew, and stay untracked
    assert not tracked(message)
    assert codec.to_pb2(message) == NESTED


@pytest.mark.skipif(not COMPILED, reason="the pure build tracks every object")
def test_a_store_that_could_close_a_cycle_tracks_what_it_reaches() -> None:
    message = codec.decode(AllTypes, NESTED_BYTES)
    message.recursive.recursive = AllTypes(r_string=["a cycle could close here"])
    assert gc.is_tracked(message.recursive)  # what is assigned to, and what holds it
    assert not gc.is_tracked(message)  # still out of it: nothing could reach it
    message.recursive.recursive.recursive = message  # a cycle: now every part of it
    assert all(gc.is_tracked(m) for m in (message, message.recursive))


# --- 2. every cycle made through the checks is collected ---------------------------------


def _decoded_tree() -> Any:
    return codec.decode(Tree, TREE_BYTES)


# Each closes a cycle through a decoded Tree ``t`` (value 1), reaching its parts first.
CYCLES: dict[str, Callable[[Any], None]] = {
    "assign": lambda t: setattr(t.left.right, "left", t),
    "assign-self": lambda t: setattr(t, "right", t),
    "assign-after-another-store": lambda t: (
        setattr(t, "right", Tree(value=9)),
        t.children[0].children.append(t),
    ),
    "construct": lambda t: setattr(t.children[1], "left", Tree(value=9, right=t)),
    "default-sub-messages": lambda t: setattr(t.children[1].left.left.right, "left", t),
    "append": lambda t: t.children[0].children[0].children.append(t),
    "insert": lambda t: t.children[0].children.insert(0, t),
    "extend": lambda t: t.children[1].children.extend([Tree(), t]),
    "+=": lambda t: t.named["a"].named["z"].children.__iadd__([t]),
    "item": lambda t: t.children[0].children.__setitem__(0, t),
    "slice": lambda t: t.children.__setitem__(slice(0, 1), [t]),
    "MergeFrom": lambda t: t.left.children.MergeFrom([t]),
    "add": lambda t: t.left.right.children.add(left=t),
    "map-item": lambda t: t.named["a"].named.__setitem__("back", t),
    "map-update": lambda t: t.named["a"].named["z"].named.update({"back": t}),
    "map-setdefault": lambda t: t.named["a"].named.setdefault("new", t),
    "map-|=": lambda t: t.children[1].named.__ior__({"back": t}),
    "map-missing": lambda t: setattr(t.named["new"].named["newer"], "left", t),
    "map-get_or_create": lambda t: setattr(t.named.get_or_create("z"), "right", t),
}


@pytest.mark.parametrize("close", CYCLES.values(), ids=CYCLES.keys())
def test_a_cycle_closed_through_the_checks_is_collected(close: Callable[[Any], None]) -> None:
    def make() -> list[Any]:
        tree = _decoded_tree()
        close(tree)
        with pytest.raises(EncodeError):  # it is a cycle: nested past any depth
            codec.encode(tree)
        return [s for s in structs_and_containers(tree) if hasattr(type(s), "__plan__")]

    assert collected(make)


# Each puts a decoded Tree ``d`` (untracked, and holding d.left) into a new container made by
# a checked path, in the fresh Tree ``t``; the test then closes a cycle back through d.
PLACEMENTS: dict[str, Callable[[Any, Any], object]] = {
    "assign-a-list": lambda t, d: setattr(t, "children", [d]),
    "assign-a-tuple": lambda t, d: setattr(t, "children", (d,)),
    "assign-a-deque": lambda t, d: setattr(t, "children", collections.deque([d])),
    "constructor": lambda t, d: setattr(t, "right", Tree(children=[d])),
    "a-dict-for-a-message": lambda t, d: setattr(t, "left", {"children": [d]}),
    "add": lambda t, d: t.children.add(children=[d]),
    "append-a-dict": lambda t, d: t.children.append({"children": [d]}),
    "map-item-a-dict": lambda t, d: t.named.__setitem__("k", {"children": [d]}),
    "assign-a-map": lambda t, d: setattr(t, "named", {"k": d}),
    "default-sub-message": lambda t, d: setattr(t.right.right, "children", [d]),
}


@pytest.mark.parametrize("place", PLACEMENTS.values(), ids=PLACEMENTS.keys())
def test_a_decoded_struct_put_in_a_new_container_is_collected_in_a_cycle(
    place: Callable[[Any, Any], object],
) -> None:
    def make() -> list[Any]:
        tree, decoded = Tree(value=9), _decoded_tree()
        place(tree, decoded)
        decoded.left.left = tree  # a cycle if decoded is held by tree
        return [tree, decoded, decoded.left]

    assert collected(make)


@pytest.mark.parametrize("how", ["ParseFromString", "MergeFromString", "CopyFrom", "MergeFrom"])
def test_a_message_filled_by_pb2_s_methods_is_collected_in_a_cycle(how: str) -> None:
    def make() -> list[Any]:
        tree = Tree()
        if how.endswith("FromString"):
            getattr(tree, how)(TREE_BYTES)
        else:
            getattr(tree, how)(_decoded_tree())
        child = tree.children[0]
        child.children.append(tree)  # tree -> children -> child -> its children -> tree
        return [tree, child]

    assert collected(make)


FIELDS = ("left", "right", "children", "named", "children=")


@given(st.lists(st.tuples(st.sampled_from(FIELDS), st.integers(0, 99), st.integers(0, 99))))
def test_any_graph_made_through_the_checks_is_collected(stores: list[Any]) -> None:
    """Stores of any decoded struct into any other, cycles or not: all freed once dropped."""

    def make() -> list[Any]:
        roots = [_decoded_tree(), codec.decode(AllTypes, NESTED_BYTES).recursive]
        for field, to, which in stores:
            pool = [s for s in structs_and_containers(roots) if isinstance(s, Tree)]
            holder, value = pool[to % len(pool)], pool[which % len(pool)]
            if field in ("left", "right"):
                setattr(holder, field, value)
            elif field == "children":
                holder.children.append(value)
            elif field == "children=":
                holder.children = [value, *holder.children]
            else:
                holder.named[str(which)] = value
        return [s for s in structs_and_containers(roots) if hasattr(type(s), "__plan__")]

    assert collected(make)
