"""Objects whose ``__init__`` never ran: the calls that probe them, and the process that makes them.

``UNINITIALISED_CALLS`` holds one plausible call per public method and
property of the compiled classes, ``UNINITIALISED_VIA`` the calls that reach
such an object through another class. :func:`probe` makes calls in a child
process, so that a crash is seen, not fatal. ``test_hostile.py`` asserts on
the outcomes; the figure script ``fuzz/figures/uninitialised.py`` counts them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import codec

ROOT = Path(__file__).resolve().parents[2]

#: A call with plausible arguments for each public method and property of the compiled
#: classes; ``o`` is an object made with ``cls.__new__(cls)``.
UNINITIALISED_CALLS: dict[str, str] = {
    "__call__": "o()",
    "__enter__": "o.__enter__()",
    "__exit__": "o.__exit__(None, None, None)",
    "__iter__": "iter(o)",
    "__len__": "len(o)",
    "__next__": "next(o)",
    "add": "o.add()",
    "append": "o.append(1)",
    "bool": "o.bool(1, True)",
    "buffer": "o.buffer",
    "buffer_updated": "o.buffer_updated(0)",
    "buffered": "o.buffered",
    "bytes": "o.bytes(1, b'x')",
    "capacity": "o.capacity",
    "clear": "o.clear()",
    "ClearField": "o.ClearField('a')",
    "extend": "o.extend([1])",
    "decode": "o.decode(b'\\x08\\x01')",
    "depth": "o.depth",
    "double": "o.double(1, 1.0)",
    "encode": "o.encode(codec.struct(_peerbench.Sample)(name='x'))",
    "enum": "o.enum(1, 1)",
    "feed": "o.feed(b'\\x01x')",
    "feed_eof": "o.feed_eof()",
    "field": "o.field",
    "fixed32": "o.fixed32(1, 1)",
    "fixed64": "o.fixed64(1, 1)",
    "float": "o.float(1, 1.0)",
    "frame": "o.frame().__enter__()",
    "frame_in_progress": "o.frame_in_progress",
    "deterministic": "o.deterministic",
    "get_buffer": "o.get_buffer(16)",
    "get_or_create": "o.get_or_create('a')",
    "getbuffer": "o.getbuffer()",
    "HasField": "o.HasField('a')",
    "insert": "o.insert(0, 1)",
    "int32": "o.int32(1, 1)",
    "int64": "o.int64(1, 1)",
    "lazy": "o.lazy",
    "max_depth": "o.max_depth",
    "max_elements": "o.max_elements",
    "max_frame_size": "o.max_frame_size",
    "MergeFrom": "o.MergeFrom([('a', 1)])",
    "message": "o.message(1).__enter__()",
    "message_type": "o.message_type",
    "nested": "o.nested(memoryview(b'\\x08\\x01'))",
    "next_frame": "o.next_frame()",
    "take_frames": "o.take_frames(1)",
    "numpy": "o.numpy",
    "owner": "o.owner",
    "plan": "o.plan",
    "offset": "o.offset",
    "packed": "o.packed(1, 'int32', [1]); o.packed(1, 'uint32', numpy.ones(3, 'u4'))",
    "raw": "o.raw(b'x')",
    "scope_id": "o.scope_id",
    "setdefault": "o.setdefault('a', 1)",
    "sfixed32": "o.sfixed32(1, 1)",
    "shrink": "o.shrink()",
    "sfixed64": "o.sfixed64(1, 1)",
    "sint32": "o.sint32(1, 1)",
    "sint64": "o.sint64(1, 1)",
    "string": "o.string(1, 'x')",
    "tag": "o.tag(1, 0)",
    "type": "o.type",
    "uint32": "o.uint32(1, 1)",
    "uint64": "o.uint64(1, 1)",
    "update": "o.update(a=1)",
    "varint": "o.varint(1, 1)",
    "WhichOneof": "o.WhichOneof('a')",
    "write": "o.write(b'x')",
    "zero_copy": "o.zero_copy",
}

#: Calls that reach an uninitialised object through another class.
UNINITIALISED_VIA: dict[str, str] = {
    "FrameDecoder(message_type=Decoder.__new__(Decoder))": (
        "codec.FrameDecoder(message_type=codec.Decoder.__new__(codec.Decoder))"
    ),
    "WireWriter(FrameEncoder.__new__(FrameEncoder))": (
        "codec.wire.WireWriter(codec.FrameEncoder.__new__(codec.FrameEncoder)).uint32(1, 1)"
    ),
    "open_frame(None, 5)": "codec.wire.open_frame(None, 5).__enter__()",
    "Delimited(None, 0, 0)": "codec.wire.Delimited(None, 0, 0).__enter__()",
    "a subclass whose __init__ skips the base's": (
        "type('E', (codec.FrameEncoder,), {'__init__': lambda self: None})().write(b'x')"
    ),
}


def compiled_public_classes() -> dict[str, type]:
    """The classes of the compiled modules that the public API hands out, by name."""
    import codec.profiler

    found: dict[str, type] = {}
    for module in (codec, codec.wire, codec.framing, codec.profiler):
        for name in getattr(module, "__all__", ()):
            cls = getattr(module, name)
            if isinstance(cls, type) and cls.__module__ in codec._pure.COMPILED_MODULES:
                for base in cls.__mro__[:-1]:  # and the compiled bases their methods come from
                    if base.__module__ in codec._pure.COMPILED_MODULES:
                        found[base.__name__] = base
    found["Delimited"] = type(codec.wire.WireWriter().message(1))  # made by message() and frame()
    return found


def public_names(cls: type) -> list[str]:
    """The names a class's compiled code defines: public ones, and those with a probe call."""
    names = {
        name
        for klass in cls.__mro__[:-1]
        if klass.__module__ in codec._pure.COMPILED_MODULES  # not list's or dict's own
        for name in vars(klass)
        if not name.startswith("_") or name in UNINITIALISED_CALLS
    }
    return sorted(names)


def uninitialised_cases() -> list[tuple[str, str, str]]:
    """``(label, class name, call)``: each method of each class, then the calls through others."""
    cases = [
        (f"{name}.{method}", name, UNINITIALISED_CALLS[method])
        for name, cls in compiled_public_classes().items()
        for method in public_names(cls)
    ]
    cases += [(label, "", call) for label, call in UNINITIALISED_VIA.items()]
    return cases


def acceptable(kind: str, message: str) -> bool:
    """Whether an outcome works, or says clearly what is wrong."""
    if kind == "RuntimeError":
        return "not initialised" in message or "is not open" in message
    return kind in ("ok", "TypeError", "ValueError", "EncodeError")


# The child: for each case, ``o = cls.__new__(cls)`` (none for an empty class name), then
# the call, with codec, numpy, ``o`` and the benchmark records as ``_peerbench``. One
# JSON line as it starts (the build), one before each call and one with each outcome,
# flushed, so that a crash leaves the call that crashed as the last one started.
_PROBE = """
import json, sys, numpy
import codec
import peerbench as _peerbench
import codec.profiler
print(json.dumps(["compiled", codec.COMPILED]), flush=True)
for label, cls_name, call in json.loads(sys.argv[1]):
    print(json.dumps(["call", label]), flush=True)
    o = None
    if cls_name:
        cls = next(c for m in (codec, codec.wire, codec.framing, codec.profiler, codec._buffer)
                   for c in [getattr(m, cls_name, None)] if isinstance(c, type))
        o = cls.__new__(cls)
    try:
        exec(call, {"codec": codec, "numpy": numpy, "_peerbench": _peerbench, "o": o})
    except StopIteration:
        outcome = ["ok", ""]
    except BaseException as exc:
        outcome = [type(exc).__name__, str(exc)]
    else:
        outcome = ["ok", ""]
    print(json.dumps(["done", label] + outcome), flush=True)
"""


def probe(cases: list[tuple[str, str, str]]) -> subprocess.CompletedProcess[str]:
    """Run ``cases`` (``(label, class name, call)``) in a child process, on this codec.

    The child finds codec where this process found it, then the repository
    root (``peerbench.py``); its output is the JSON lines described above.
    """
    paths = [Path(codec.__file__).resolve().parent.parent, ROOT]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(map(str, paths)))
    return subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(cases)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
