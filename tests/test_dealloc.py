"""Freeing structs: each releases what it holds, once, whatever its class is by then.

Compiled, a struct class frees its objects with a deallocator that knows their
layout (``codec_struct_dealloc`` in ``codec/structs/_struct.pxd``) instead of
CPython's generic one; these tests hold it to what the generic one does, and
pass in both builds: every value let go without the cycle collector, a
finaliser given to the class called once (and allowed to keep its object), a
subclass's own slots and ``__dict__`` let go too, a class assigned by the
finaliser honoured, and a chain of nested structs deeper than the C stack freed
without a crash.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

import codec
from codec.structs._message import Message

FIELD = descriptor_pb2.FieldDescriptorProto
_made = iter(range(1_000_000))


def fresh_class() -> Any:
    """A struct class of its own (so a test may give it a finaliser): a string, an
    int, a repeated int and a sub-message of its own type."""
    name = f"dealloc{next(_made)}"
    file = descriptor_pb2.FileDescriptorProto(name=name + ".proto", package=name, syntax="proto3")
    body = file.message_type.add(name="Node")
    body.field.add(name="label", number=1, type=FIELD.TYPE_STRING, label=FIELD.LABEL_OPTIONAL)
    body.field.add(name="count", number=2, type=FIELD.TYPE_INT64, label=FIELD.LABEL_OPTIONAL)
    body.field.add(name="values", number=3, type=FIELD.TYPE_INT64, label=FIELD.LABEL_REPEATED)
    body.field.add(
        name="child",
        number=4,
        type=FIELD.TYPE_MESSAGE,
        type_name=f".{name}.Node",
        label=FIELD.LABEL_OPTIONAL,
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return codec.struct(message_factory.GetMessageClass(pool.FindMessageTypeByName(name + ".Node")))


@pytest.fixture(autouse=True)
def no_collector() -> Iterator[None]:
    """Each object here is freed by its last reference going, not by a collection."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def test_a_freed_struct_lets_go_of_every_value_it_holds() -> None:
    Node = fresh_class()
    label = "".join(["held ", "once"])  # a string of its own, not interned
    before = sys.getrefcount(label)
    node = Node(label=label, count=7, values=[1, 2], child=Node(child=Node()))
    assert sys.getrefcount(label) == before + 1  # the slot's
    decoded = Node.FromString(node.SerializeToString())
    held = [weakref.ref(node.child), weakref.ref(decoded.child), weakref.ref(decoded.child.child)]
    values = decoded.values
    before_values = sys.getrefcount(values)
    del node, decoded
    assert sys.getrefcount(label) == before
    assert [ref() for ref in held] == [None, None, None]
    assert sys.getrefcount(values) == before_values - 1


def test_a_finaliser_given_to_a_struct_class_runs_once_and_may_keep_its_object() -> None:
    Node = fresh_class()
    kept: list[Any] = []
    calls: list[int] = []

    def finalise(self: Any) -> None:
        calls.append(self.count)
        if len(calls) == 1:
            kept.append(self)  # brought back

    Node.__del__ = finalise
    child = Node(label="c")
    child_ref = weakref.ref(child)
    node = Node(count=1, child=child)
    del child
    del node
    assert calls == [1] and len(kept) == 1  # the child is still held by the node kept
    assert kept[0].child.label == "c" and kept[0].count == 1  # whole: nothing was freed
    kept.clear()  # freed now, not finalised again; the child is freed and finalised
    assert calls == [1, 0] and child_ref() is None


def test_a_subclass_of_a_struct_class_lets_go_of_its_own_slots_its_dict_and_the_fields() -> None:
    Node = fresh_class()
    finalised: list[str] = []

    class Marker:  # weakly referenceable, as an object held around the checks
        pass

    class Slotted(Node):  # type: ignore[misc,valid-type]
        __slots__ = ("extra",)

        def __del__(self) -> None:
            finalised.append("slotted")

    class WithDict(Node):  # type: ignore[misc,valid-type]
        def __del__(self) -> None:
            finalised.append("dict")

    for cls in (Slotted, WithDict):
        message = cls(label="x", child=Node())
        marker = Marker()
        if cls is Slotted:  # (Struct.__setattr__ takes fields only)
            Slotted.__dict__["extra"].__set__(message, marker)
        else:
            message.__dict__["anything"] = marker
        held = [weakref.ref(marker), weakref.ref(message.child)]
        del marker
        del message
        assert [ref() for ref in held] == [None, None], cls.__name__
    assert finalised == ["slotted", "dict"]


@pytest.mark.parametrize("layout", ["slots", "dict"])
def test_a_finaliser_given_while_a_subclass_object_is_freed_is_not_called(layout: str) -> None:
    """CPython decides whether to call a finaliser before freeing starts: one given to the
    struct class while the subclass's own slots are emptied is not called on the object,
    half freed by then (it would store into emptied slots, or bring it back)."""
    Node = fresh_class()
    late: list[Any] = []

    class Sub(Node):  # type: ignore[misc,valid-type]
        if layout == "slots":
            __slots__ = ("extra",)

    class Arm:  # freed with the subclass's slots, it gives the struct class a finaliser
        def __del__(self) -> None:
            Node.__del__ = lambda message: late.append(message)

    message = Sub(label="x")
    if layout == "slots":
        Sub.__dict__["extra"].__set__(message, Arm())
    else:
        message.__dict__["extra"] = Arm()
    freed = weakref.ref(message)
    del message
    assert late == [] and freed() is None


def test_a_struct_class_of_no_fields_swaps_class_with_one_of_its_layout() -> None:
    """CPython lets ``__class__`` be assigned between classes of one layout and one
    deallocator: a struct class of no fields keeps CPython's, as such a class has."""
    pytest.importorskip("grpc_tools", reason="the schemas are compiled with grpcio-tools")
    from schemas import everything_pb2 as E

    Empty = codec.struct(E.Empty)

    class Plain(Message):
        __slots__ = ()

    message = Empty()
    object.__dict__["__class__"].__set__(message, Plain)
    object.__dict__["__class__"].__set__(message, Empty)
    assert type(message) is Empty and message == Empty()


@pytest.mark.parametrize("kind", ["a struct class", "a class made by a class statement"])
def test_a_finaliser_may_give_its_object_another_class_of_the_same_slots(kind: str) -> None:
    """``__class__`` assigned while the object is being freed: CPython allows any class of
    the same slots; the object is freed whole by the deallocator of the class it has."""
    Node = fresh_class()
    if kind == "a struct class":
        other = fresh_class()
    else:

        class Plain(Message):  # its objects freed by CPython's deallocator
            __slots__ = Node.__dict__["__slots__"]

        other = Plain

    def finalise(self: Any) -> None:
        object.__dict__["__class__"].__set__(self, other)

    Node.__del__ = finalise
    node = Node(label="y", child=Node())
    child = weakref.ref(node.child)
    del node
    assert child() is None


_DEEP_CHAIN = """
import threading
import codec
from schemas import everything_pb2 as E

AllTypes = codec.struct(E.AllTypes)
chain = [AllTypes()]
for _ in range(100_000):
    chain[0] = AllTypes(recursive=chain[0])
threading.stack_size(2 * 1024 * 1024)  # freed in a thread of a small stack
thread = threading.Thread(target=chain.clear)
thread.start()
thread.join()
print("ok")
"""


def test_a_chain_of_structs_deeper_than_the_stack_is_freed_without_a_crash() -> None:
    """Freeing a struct frees what it holds, in nested C calls: 100,000 levels overrun a
    thread's 2 MiB of C stack unless the deallocator defers the deep ones, as CPython's
    do. (CPython 3.13 defers only past its C recursion limit, 10,000 levels or so: with
    a stack much smaller, its own deallocator overruns it too.)"""
    pytest.importorskip("grpc_tools", reason="the schemas are compiled with grpcio-tools")
    tests = Path(__file__).resolve().parent
    paths = [str(Path(codec.__file__).resolve().parent.parent), str(tests)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths))
    done = subprocess.run(
        [sys.executable, "-c", _DEEP_CHAIN], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["ok"]
