"""Stand-in for the ``cython`` module when Cython is not installed.

The compiled modules are Cython pure-Python-mode files. Their type
declarations live in augmenting ``.pxd`` files, and C-only code sits behind
``if cython.compiled:``. A few hot helpers are C inline functions, which
Cython wants declared by decorators in the ``.py`` itself; uncompiled, the
decorators change nothing and the type names are placeholders.
"""

from collections.abc import Callable
from typing import Any

compiled = False

# C type names used in those decorators.
bint = int = double = longlong = ulonglong = Py_ssize_t = p_uchar = void = None
NULL = None  # an absent pointer, which uncompiled code passes along unread


def _unchanged(function: Callable[..., Any]) -> Callable[..., Any]:
    return function


def _decorator(*_args: Any, **_kwargs: Any) -> Callable[..., Any]:
    return _unchanged


def cast(_type: Any, value: Any) -> Any:
    return value


cfunc = inline = _unchanged
locals = returns = exceptval = embedsignature = _decorator
