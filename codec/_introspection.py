"""What ``inspect.signature`` and ``help()`` show of compiled classes and struct classes.

Strategy: ``inspect.signature(cls)`` reads ``cls.__signature__`` before
anything else, so each class that would otherwise have no readable
signature holds one.

1. A compiled class's ``__init__`` is a slot wrapper, which ``inspect``
   cannot read, and an extension type takes no attribute after it is made.
   So the class body holds an :class:`InitSignature`, and its ``__init__``
   is compiled with its signature embedded as the first line of its
   docstring (``@cython.embedsignature(True)``, in Python syntax), which
   the descriptor parses. Uncompiled, ``__init__`` is read directly.
2. A struct class takes its fields as keywords; :func:`struct_signature`
   lists them, each with the value it reads as when left out.
"""

from __future__ import annotations

import ast
import inspect
import keyword
import sys
from inspect import Parameter
from typing import Any

__all__ = ["InitSignature", "struct_signature"]


class InitSignature:
    """``__signature__`` of a class: the parameters of its ``__init__``, without ``self``.

    On an instance it is absent (what calling an instance takes is another
    matter).
    """

    def __get__(self, instance: Any, owner: type) -> inspect.Signature:
        if instance is not None:
            raise AttributeError("__signature__")
        init = owner.__init__  # type: ignore[misc]  # the class's own, or a base's
        if inspect.isfunction(init):  # uncompiled
            signature = inspect.signature(init)
        else:
            signature = _embedded(init.__doc__ or "", vars(sys.modules[owner.__module__]))
        parameters = list(signature.parameters.values())[1:]
        return signature.replace(parameters=parameters)


def _embedded(doc: str, names: dict[str, Any]) -> inspect.Signature:
    """The signature on the first line of ``doc`` (``__init__(self, a: int = LIMIT, *, b=1)``).

    Defaults are evaluated among ``names``, the globals of the class's
    module; annotations are kept as text, as ``from __future__ import
    annotations`` keeps them.
    """
    header = doc.split("\n", 1)[0]
    if not header.startswith("__init__("):
        raise ValueError(f"no signature embedded in {header!r}")
    tree = ast.parse(f"def {header}: pass")
    arguments = tree.body[0].args  # type: ignore[attr-defined]
    parameters = []
    positional = [*arguments.posonlyargs, *arguments.args]
    defaults = [None] * (len(positional) - len(arguments.defaults)) + arguments.defaults
    kinds: list[Any] = [Parameter.POSITIONAL_ONLY] * len(arguments.posonlyargs)
    kinds += [Parameter.POSITIONAL_OR_KEYWORD] * len(arguments.args)
    for argument, default, kind in zip(positional, defaults, kinds, strict=True):
        parameters.append(_parameter(argument, default, kind, names))
    if arguments.vararg is not None:
        parameters.append(
            _parameter(arguments.vararg, None, inspect.Parameter.VAR_POSITIONAL, names)
        )
    for argument, default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
        parameters.append(_parameter(argument, default, inspect.Parameter.KEYWORD_ONLY, names))
    if arguments.kwarg is not None:
        parameters.append(_parameter(arguments.kwarg, None, inspect.Parameter.VAR_KEYWORD, names))
    returns = tree.body[0].returns  # type: ignore[attr-defined]
    return inspect.Signature(
        parameters,
        return_annotation=inspect.Signature.empty if returns is None else ast.unparse(returns),
    )


def _parameter(
    argument: ast.arg, default: Any, kind: Any, names: dict[str, Any]
) -> inspect.Parameter:
    value = inspect.Parameter.empty
    if default is not None:
        value = eval(compile(ast.Expression(default), "<signature>", "eval"), names)
    annotation: Any = Parameter.empty
    if argument.annotation is not None:
        annotation = ast.unparse(argument.annotation)
    return Parameter(argument.arg, kind, default=value, annotation=annotation)


def struct_signature(fields: Any) -> inspect.Signature:
    """The signature of a struct class made of ``fields`` (its plan's FieldPlans).

    Each field is a keyword-only parameter whose default is what it reads
    as when left out: its default value, None for a sub-message (unset),
    ``()`` for a repeated field and ``{}`` for a map. A field whose name
    cannot be a parameter's (a Python keyword: ``Msg(**{"class": 1})``)
    is taken by ``**fields``.
    """
    parameters = []
    others = False
    for field in fields:
        if not field.name.isidentifier() or keyword.iskeyword(field.name):
            others = True
            continue
        if field.map_key is not None:
            default: Any = {}
        elif field.repeated:
            default = ()
        else:
            default = field.default
        parameters.append(
            inspect.Parameter(field.name, inspect.Parameter.KEYWORD_ONLY, default=default)
        )
    if others:
        name = "fields"
        while name in {parameter.name for parameter in parameters}:
            name += "_"
        parameters.append(Parameter(name, Parameter.VAR_KEYWORD))
    return inspect.Signature(parameters)
