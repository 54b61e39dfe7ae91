"""Hypothesis strategies for the values of protobuf scalar fields, from their descriptors.

Shared by the tests that fill messages of any schema at random and compare
codec with upb (``tests/test_structs_differential.py``,
``tests/test_real_schemas.py``): every value in its type's range, floats of
every kind (NaNs and signed zeros included), any text, and for an open enum
any 32-bit number beside the declared ones.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.descriptor import FieldDescriptor as FD
from hypothesis import strategies as st

#: The range of each integer type, by descriptor type.
INT_RANGES = {
    FD.TYPE_INT32: (-(2**31), 2**31 - 1),
    FD.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FD.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    FD.TYPE_INT64: (-(2**63), 2**63 - 1),
    FD.TYPE_SINT64: (-(2**63), 2**63 - 1),
    FD.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    FD.TYPE_UINT32: (0, 2**32 - 1),
    FD.TYPE_FIXED32: (0, 2**32 - 1),
    FD.TYPE_UINT64: (0, 2**64 - 1),
    FD.TYPE_FIXED64: (0, 2**64 - 1),
}


def scalar_values(field: Any, max_size: int) -> st.SearchStrategy[Any]:
    """Values of one scalar (non-message) field; strings and bytes of up to ``max_size``."""
    kind = field.type
    if kind in INT_RANGES:
        return st.integers(*INT_RANGES[kind])
    if kind == FD.TYPE_FLOAT:
        return st.floats(width=32)
    if kind == FD.TYPE_DOUBLE:
        return st.floats()
    if kind == FD.TYPE_BOOL:
        return st.booleans()
    if kind == FD.TYPE_STRING:
        return st.text(max_size=max_size)
    if kind == FD.TYPE_BYTES:
        return st.binary(max_size=max_size)
    if kind == FD.TYPE_ENUM:
        declared = st.sampled_from([value.number for value in field.enum_type.values])
        if field.enum_type.is_closed:
            return declared
        return st.one_of(declared, st.integers(-(2**31), 2**31 - 1))
    raise AssertionError(f"not a scalar field: {field.full_name}")
