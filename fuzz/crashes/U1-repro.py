"""U1: UBSan "left shift of negative value" in the compiled struct encoder (sint32/sint64 zigzag).

Run against the sanitized build (fuzz/sanitizers.sh build first), from the repository root:

    env $(fuzz/sanitizers.sh env) python fuzz/crashes/U1-repro.py

codec/_struct.py _scalar_bits: ``(number << 1) ^ (number >> 63)`` (SINT64) and
``((number << 1) ^ (number >> 31)) & _MASK32`` (SINT32) shift a signed int64_t left;
for a negative number that is undefined behaviour in C (C11 6.5.7p4), and
for -2**63 the result overflows as well. wire.py's _zigzag casts to uint64_t first.
"""
import sys
sys.path.insert(1, "tests")
import codec
from schemas import everything_pb2

assert codec.COMPILED, "run against the compiled (sanitized) build"
print(codec.__file__)
print(codec.encode(codec.struct(everything_pb2.AllTypes)(f_sint64=-7)).hex())
print(codec.encode(codec.struct(everything_pb2.AllTypes)(f_sint32=-(2**31))).hex())
