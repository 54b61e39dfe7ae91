"""The generic view type checkers get of ``codec.Decoder`` and ``codec.FrameDecoder``.

``codec/_generic.pyi`` declares the two compiled classes again, as generics.
These tests keep that declaration honest: the same public names as the
classes, the same parameters (where the build can tell them: the compiled
build cannot for ``__init__``, the pure build can for every method), and a
run-time subscription that gives the class back.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from types import GenericAlias
from typing import Any

import pytest

import codec
from codec._decode import Decoder
from codec._peerbench import Sample
from codec.framing import FrameDecoder

STUB = Path(codec.__file__).with_name("_generic.pyi")
CLASSES = {"Decoder": Decoder, "FrameDecoder": FrameDecoder}
DUNDERS = {"__init__", "__iter__", "__next__"}
# C fields of the compiled Decoder, plain attributes of the pure build's: not public.
INTERNAL = {"plan", "state"}


def _stub_classes() -> dict[str, dict[str, list[list[str]]]]:
    """Each stub class's members: name -> the parameter names of each declaration."""
    classes: dict[str, dict[str, list[list[str]]]] = {}
    for node in ast.parse(STUB.read_text()).body:
        if isinstance(node, ast.ClassDef):
            members = classes.setdefault(node.name, {})
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    arguments = item.args
                    names = [a.arg for a in (*arguments.args, *arguments.kwonlyargs)]
                    members.setdefault(item.name, []).append(names)
    return classes


def _instance(name: str) -> Any:
    """An object of the class ``name`` (the pure build's attributes are the instance's own)."""
    if name == "Decoder":
        return Decoder(codec.struct(Sample))
    return FrameDecoder()


def _public(obj: object) -> set[str]:
    names = {name for name in dir(obj) if not name.startswith("_") or name in DUNDERS}
    return names - INTERNAL


def test_the_stub_declares_both_classes() -> None:
    assert set(_stub_classes()) == set(CLASSES)


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


@pytest.mark.parametrize("cls", [Decoder, FrameDecoder])
def test_the_classes_are_subscriptable_at_run_time(cls: type) -> None:
    alias = cls[Sample]  # type: ignore[index]
    assert isinstance(alias, GenericAlias)
    assert alias.__origin__ is cls
    assert alias.__args__ == (Sample,)
