"""What ``inspect``, ``help()``, ``dir()`` and ``pickle`` see of codec's classes and functions."""

from __future__ import annotations

import functools
import importlib
import inspect
import pickle
import pydoc
import re

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from schemas import everything_pb2

import codec
import codec.profiler
import codec.structs
from codec import _buffer, _introspection
from codec.profiler import _recorder

E = everything_pb2

SIGNATURES = {
    codec.FrameEncoder: (
        "(max_frame_size: 'int' = 4194304, *, capacity: 'int' = 4096,"
        " deterministic: 'bool' = False) -> 'None'"
    ),
    codec.FrameDecoder: (
        "(max_frame_size: 'int' = 4194304, *, strict: 'bool' = False, message_type: 'Any' = None, "
        "copy: 'bool' = False, offset: 'int' = 0) -> 'None'"
    ),
    codec.Decoder: (
        "(type: 'Any', *, zero_copy: 'bool' = False, numpy: 'bool' = False, "
        "max_depth: 'int' = 100, max_elements: 'int' = 1000000, lazy: 'bool' = False) -> 'None'"
    ),
    codec.wire.WireReader: "(buffer: 'Any', *, max_depth: 'int' = 100) -> 'None'",
    codec.wire.WireWriter: "(buffer: 'WriteBuffer | None' = None) -> 'None'",
    _buffer.WriteBuffer: "(capacity: 'int' = 4096) -> 'None'",
    _buffer.ReceiveWindow: "() -> 'None'",
    _recorder.Scope: "(recording: 'Recording', scope_id: 'int') -> 'None'",
}


@pytest.mark.parametrize("cls", list(SIGNATURES), ids=lambda cls: cls.__name__)
def test_classes_have_their_init_signature(cls: type) -> None:
    """Compiled, ``__init__`` is a slot wrapper; the class still tells its parameters."""
    assert str(inspect.signature(cls)) == SIGNATURES[cls]
    # help() shows it under the class's name (3.13 breaks a long one over lines)
    shown = pydoc.render_doc(cls, renderer=pydoc.plaintext).split("Methods defined here")[0]
    assert f"{cls.__name__}(" in shown
    assert all(f"{name}:" in shown for name in inspect.signature(cls).parameters)


def test_every_public_compiled_class_has_a_signature() -> None:
    public = [
        getattr(module, name)
        for module in (codec, codec.wire, codec.framing, codec.profiler)
        for name in module.__all__
    ]
    classes = {
        base
        for cls in public
        if isinstance(cls, type)
        for base in cls.__mro__
        if base.__module__ in codec._pure.COMPILED_MODULES and "__init__" in vars(base)
    }
    assert classes >= {
        codec.FrameEncoder,
        codec.FrameDecoder,
        codec.wire.WireReader,
        _buffer.WriteBuffer,
    }
    for cls in classes - {codec.structs._struct.Struct}:  # a struct class has its own (see below)
        if issubclass(cls, (list, dict)):  # a field's container: made by reading the field
            continue
        assert "self" not in inspect.signature(cls).parameters, cls


def test_an_instance_has_no_class_signature() -> None:
    with pytest.raises(AttributeError):
        _ = codec.FrameEncoder().__signature__


_SIGNATURE_LINE = re.compile(r"^[\w.]+\(.*\)")


def test_docstrings_are_as_written_without_c_signatures() -> None:
    """No docstring of a compiled function starts with an embedded signature (in C types)."""
    found = []
    for name in codec._pure.COMPILED_MODULES:
        module = importlib.import_module(name)
        for value in vars(module).values():
            if getattr(value, "__module__", None) != name:  # imported, or not a class or function
                continue
            targets = [value]
            if isinstance(value, type):  # its methods, but __init__, which embeds its own
                targets += [member for key, member in vars(value).items() if key != "__init__"]
            for target in targets:
                doc = getattr(target, "__doc__", None) if callable(target) else None
                if isinstance(doc, str) and _SIGNATURE_LINE.match(doc):
                    found.append(f"{name}: {doc.splitlines()[0]}")
    assert found == []
    assert codec.encode.__doc__.startswith("The wire bytes")  # type: ignore[union-attr]
    signature = str(inspect.signature(codec.encode)).split(" ->")[0]  # uncompiled, with -> bytes
    expected = "(message: 'Struct', partial: 'bool' = False, deterministic: 'bool' = False)"
    assert signature == expected


def test_a_struct_class_takes_its_fields_as_keywords() -> None:
    Leaf = codec.struct(E.Leaf)
    signature = inspect.signature(Leaf)
    assert list(signature.parameters) == [field.name for field in E.Leaf.DESCRIPTOR.fields]
    assert {p.kind for p in signature.parameters.values()} == {inspect.Parameter.KEYWORD_ONLY}
    assert str(signature).startswith("(*, id=0, label='', samples=(),")
    assert inspect.signature(codec.struct(E.AllTypes)).parameters["m_int32_int32"].default == {}
    assert inspect.signature(codec.struct(E.AllTypes)).parameters["f_inner"].default is None
    signature.bind(id=1, label="x")
    with pytest.raises(TypeError):
        signature.bind(1)


def test_a_field_no_parameter_can_be_named_is_taken_by_keywords() -> None:
    class Field:
        def __init__(self, name: str) -> None:
            self.name, self.repeated, self.map_key, self.default = name, False, None, 0

    signature = _introspection.struct_signature([Field("a"), Field("class"), Field("fields")])
    assert str(signature) == "(*, a=0, fields=0, **fields_)"


@functools.cache
def _made_once() -> tuple[type, type, type]:
    """A message, its nested message and its enum, of a package no other pool has."""
    file = descriptor_pb2.FileDescriptorProto(name="found_again.proto", package="found.again")
    file.syntax = "proto3"
    outer = file.message_type.add(name="Outer")
    outer.nested_type.add(name="Inner")
    outer.enum_type.add(name="Kind").value.add(name="KIND_NONE", number=0)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    cls = codec.struct(
        message_factory.GetMessageClass(pool.FindMessageTypeByName("found.again.Outer"))
    )
    return cls, cls.Inner, cls.Kind


def test_struct_classes_are_found_where_their_module_says() -> None:
    for cls in _made_once():
        module = importlib.import_module(cls.__module__)
        found = module
        for part in cls.__qualname__.split("."):
            found = getattr(found, part)
        assert found is cls
        assert pickle.loads(pickle.dumps(cls)) is cls
        assert inspect.getmodule(cls) is module
    assert codec.structs.found.again.Outer.Inner is _made_once()[1]
    with pytest.raises(AttributeError, match=r"no struct or enum class of 'found\.again\.Nothing'"):
        _ = codec.structs.found.again.Nothing
    # A name made in several pools is the default pool's class, else the first made.
    assert codec.structs.everything.Leaf.DESCRIPTOR.full_name == "everything.Leaf"


def test_hidden_slots_stay_out_of_help_and_completion() -> None:
    """Repeated, map and message fields keep their containers in slots of private names."""
    AllTypes = codec.struct(E.AllTypes)
    message = AllTypes()
    public = [name for name in dir(message) if not name.startswith("_")]
    field_names = {field.name for field in E.AllTypes.DESCRIPTOR.fields}
    assert field_names <= set(public)
    assert [name for name in public if name.endswith(("_items", "_part"))] == []
    for name in field_names:
        getattr(message, name)
    text = pydoc.render_doc(AllTypes, renderer=pydoc.plaintext)
    assert "_items" not in text and "_part" not in text


def test_the_package_shows_its_api_and_its_public_modules_only() -> None:
    shown = {name for name in dir(codec) if not name.startswith("_")}
    others = {name: getattr(codec, name) for name in shown - set(codec.__all__)}
    assert {"errors", "framing", "io", "structs", "wire"} <= set(others)  # imported by codec
    assert {  # and any other imported since: each a public module of codec
        name: value
        for name, value in others.items()
        if getattr(value, "__name__", None) != f"codec.{name}"
    } == {}
    assert set(codec.__all__) <= shown
