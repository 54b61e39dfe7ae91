"""The generic view type checkers get of codec's compiled generic classes.

``codec/_generic.pyi`` declares the decoders (``codec.Decoder``,
``codec.FrameDecoder``) and the containers a repeated or map field reads as
(``codec.Repeated``, ``codec.RepeatedMessages``, ``codec.Entries``,
``codec.MessageEntries``) again, as generics. These tests keep that
declaration honest: the same public names as the classes (for a container,
the names it adds to ``list`` or ``dict``), the same parameters (where the
build can tell them: the compiled build cannot for ``__init__``, the pure
build can for every method), and a run-time subscription that gives the
class back.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from types import GenericAlias
from typing import Any

import pytest
from helpers.peerbench import Sample

import codec
from codec.framing import FrameDecoder
from codec.structs import _struct
from codec.structs._decode import Decoder

STUB = Path(codec.__file__).with_name("_generic.pyi")
CLASSES = {"Decoder": Decoder, "FrameDecoder": FrameDecoder}
# The containers, each a list or dict subclass.
CONTAINERS = {
    "Repeated": _struct.Repeated,
    "RepeatedMessages": _struct.RepeatedMessages,
    "Entries": _struct.Entries,
    "MessageEntries": _struct.MessageEntries,
}
DUNDERS = {"__init__", "__iter__", "__next__"}
# C fields of the compiled classes, plain attributes of the pure build's: not public.
INTERNAL = {"plan", "state", "field", "owner"}


def _stub_classes() -> dict[str, dict[str, list[list[str]]]]:
    """Each stub class's members: name -> the parameter names of each declaration."""
    classes: dict[str, dict[str, list[list[str]]]] = {}
    for node in ast.parse(STUB.read_text()).body:
        if isinstance(node, ast.ClassDef):
            members = classes.setdefault(node.name, {})
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    arguments = item.args
                    every = (
                        *arguments.posonlyargs,
                        *arguments.args,
                        *([arguments.vararg] if arguments.vararg else []),
                        *arguments.kwonlyargs,
                        *([arguments.kwarg] if arguments.kwarg else []),
                    )
                    members.setdefault(item.name, []).append([a.arg for a in every])
    return classes


def _stub_bases() -> dict[str, str]:
    """Each stub class's base, by name (``list`` for ``list[T]``)."""
    bases = {}
    for node in ast.parse(STUB.read_text()).body:
        if isinstance(node, ast.ClassDef):
            (base,) = node.bases
            bases[node.name] = ast.unparse(base).partition("[")[0]
    return bases


def _instance(name: str) -> Any:
    """An object of the class ``name`` (the pure build's attributes are the instance's own)."""
    if name == "Decoder":
        return Decoder(codec.struct(Sample))
    return FrameDecoder()


def _public(obj: object) -> set[str]:
    names = {name for name in dir(obj) if not name.startswith("_") or name in DUNDERS}
    return names - INTERNAL


def test_the_stub_declares_the_classes() -> None:
    assert set(_stub_classes()) == set(CLASSES) | set(CONTAINERS)


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_the_stub_has_the_public_names_of_the_class(name: str) -> None:
    assert set(_stub_classes()[name]) == _public(_instance(name))


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_the_stub_has_the_parameters_of_each_method(name: str) -> None:
    obj = _instance(name)
    compared = 0
    for member, declarations in _stub_classes()[name].items():
        runtime: Any = getattr(type(obj), member, None)
        if runtime is None or isinstance(runtime, property) or not callable(runtime):
            assert declarations == [["self"]], f"{name}.{member} is an attribute"
            continue
        try:
            parameters = list(inspect.signature(runtime).parameters)
        except ValueError:  # a compiled slot wrapper: no signature to compare
            continue
        if parameters[-2:] == ["args", "kwargs"]:  # compiled __init__: (self, /, *args, **kwargs)
            continue
        for declared in declarations:
            assert declared == parameters, f"{name}.{member}"
        compared += 1
    assert compared >= (1 if name == "Decoder" else 7)  # the methods at the least


@pytest.mark.parametrize(
    ("cls", "arguments"),
    [
        (Decoder, (Sample,)),
        (FrameDecoder, (Sample,)),
        (_struct.Repeated, (int,)),
        (_struct.RepeatedMessages, (Sample,)),
        (_struct.Entries, (str, int)),
        (_struct.MessageEntries, (str, Sample)),
    ],
)
def test_the_classes_are_subscriptable_at_run_time(cls: Any, arguments: tuple[type, ...]) -> None:
    alias = cls[arguments]
    assert isinstance(alias, GenericAlias)
    assert alias.__origin__ is cls
    assert alias.__args__ == arguments


@pytest.mark.parametrize("name", sorted({**CLASSES, **CONTAINERS}))
def test_codec_names_the_classes_at_run_time(name: str) -> None:
    assert getattr(codec, name) is {**CLASSES, **CONTAINERS}[name]
    assert name in codec.__all__


# --- the containers ------------------------------------------------------------------


def _builtin_base(cls: type) -> type:
    """The list or dict a container class derives from."""
    return list if issubclass(cls, list) else dict


def _runtime_members(cls: type) -> set[str]:
    """The public names (and the methods' dunders) a container class defines above its
    list or dict: its own and its container bases'."""
    names: set[str] = set()
    for klass in cls.__mro__[: cls.__mro__.index(_builtin_base(cls))]:
        for name, value in vars(klass).items():
            if name.startswith("__") and not (callable(value) and name.endswith("__")):
                continue
            names.add(name)
    return names - INTERNAL - {"__init__", "__new__", "__reduce__", "__doc__"}


def _stub_members(name: str) -> dict[str, list[list[str]]]:
    """The members a stub container class declares, its stub bases' included."""
    classes, bases = _stub_classes(), _stub_bases()
    members: dict[str, list[list[str]]] = {}
    while name in classes:
        for member, declarations in classes[name].items():
            members.setdefault(member, declarations)
        name = bases[name]
    return members


@pytest.mark.parametrize("name", sorted(CONTAINERS))
def test_the_stub_container_derives_as_the_class(name: str) -> None:
    cls = CONTAINERS[name]
    assert _stub_bases()[name] == cls.__bases__[0].__name__


@pytest.mark.parametrize("name", sorted(CONTAINERS))
def test_the_stub_container_adds_the_names_the_class_adds(name: str) -> None:
    """The stub declares each name the class adds to list's or dict's, and redeclares only
    methods the class defines (those that take a dict for a message, at the least)."""
    cls = CONTAINERS[name]
    inherited = set(dir(_builtin_base(cls)))
    runtime = _runtime_members(cls)
    declared = set(_stub_members(name))
    assert declared - inherited == runtime - inherited
    assert declared <= runtime


@pytest.mark.parametrize("name", sorted(CONTAINERS))
def test_the_stub_container_has_the_parameters_of_each_method(name: str) -> None:
    """A method's declarations (its overloads together) take its parameters, by name; a
    dunder's are positional (a compiled slot's names are CPython's), by number."""
    cls = CONTAINERS[name]
    for member, declarations in _stub_members(name).items():
        parameters = list(inspect.signature(getattr(cls, member)).parameters)
        if member.startswith("__"):
            assert {len(declared) for declared in declarations} == {len(parameters)}, member
            continue
        for declared in declarations:
            assert set(declared) <= set(parameters), f"{name}.{member}"
        assert {p for declared in declarations for p in declared} == set(parameters), member
