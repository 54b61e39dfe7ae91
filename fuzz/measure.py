"""Measure the robustness figures quoted in SECURITY.md (each printed with what it measured).

Usage::

    python fuzz/measure.py [figure ...] [--corpus DIR ...] [--inputs N]
    CODEC_PURE_PYTHON=1 python fuzz/measure.py depth      # the uncompiled build

Figures (SECURITY.md names them D3-D7; all by default, in this order):

* ``split`` (D3): every stream of the frame decoder's corpora decoded whole,
  one byte at a time, at every 2-way split and in 100 random chunkings, via
  ``feed()`` and via ``get_buffer()``: runs and divergences from the whole run.
* ``memory`` (D5): tracemalloc peak and RSS growth after feeding only a hostile
  length prefix, the time from the last prefix byte to the refusal, and 1,000
  stalled decoders each holding a 4 MiB prefix and 100 body bytes.
* ``amplification`` (D6): bytes allocated by ``codec.decode`` per wire byte for
  the adversarial generators of P8 (64 KiB inputs), the worst one, and what the
  ``max_elements`` budget lets one 4 MiB frame cost.
* ``depth`` (D7): time to reject 100,000 nested messages / group starts through
  each message API (median of 5), and the smallest Python recursion limit with
  which each still rejects with ``DepthLimitError``.
* ``differential`` (D9): ``fuzz_differential.verdict`` over the differential
  corpora plus N mutations of valid encodings (``--inputs``, default 20,000):
  accept/reject agreement, content agreement, divergences by kind.
* ``heap`` (D11): the allocation figures of the zero-allocation claims, measured
  as ``tests/test_heap.py`` measures them (warm-up, ``gc.collect()``, tracemalloc).
* ``slow`` (D8): the worst decode time per input byte over the struct and
  differential corpora.
* ``profiler`` (R4-R7): the profiler under hostile use: two asyncio tasks
  whose scopes interleave on one thread (the tree recorded); ``read_capture``
  on 1, 4 and 16 MiB of keyframes each followed by a damaged packet, on 4
  MiB of the same keyframes undamaged, and on 4 MiB of damaged keyframes each
  other than the one before (parsed, not repeats); tracemalloc peak and kept bytes per
  wire byte of one packet of each hostile shape (64 KiB, and 1 MiB for two
  frame shapes, whose 4 MiB packets are timed), and of a stream of minimal
  frames all kept; 10,000 short threads that record one
  scope each: memory still traced, an empty ``end_frame()`` and the keyframe.
* ``coverage`` (D4): each fuzz target's corpora (seeds and ``--corpus``)
  replayed through its ``check`` in the pure build under coverage.py, one
  process per target: the lines of the core modules it reaches, and of the
  profiler's stream reader (``codec/profiler/packets.py``, ``receiver.py``,
  ``capture.py``, ``model.py``). Lines
  under ``if cython.compiled:`` are C only and left out. Needs ``coverage``.

* ``uninitialised``: every probe call of ``tests/test_hostile.py`` on an object
  made with ``cls.__new__(cls)``, each in its own process: how many crash,
  raise a clear error, or work.
* ``misuse``: one ``FrameEncoder``, ``WireWriter`` and ``FrameDecoder`` each
  shared by two threads (one runs Python code in the middle of its calls: a
  value's ``__index__``, a parser), and each re-entered from such a callback
  (the actions of the re-entry tests): calls that returned, what reached the
  stream, what went missing, and calls refused.
* ``stale``: 100 fresh decoders after freed heap blocks were filled with a
  marker: how many ``get_buffer(n)`` views held non-zero bytes.
* ``idle``: tracemalloc bytes kept per idle ``codec.aio`` server connection
  (8 plain-socket peers, a discarding and an echoing handler) once each peer
  has sent nothing, one 4 MiB frame, a 62 KB burst of small frames, or a
  slowloris prefix, and then fallen silent.
* ``fairness``: a good client's round trips (p50, p99, max) against a
  ``codec.aio`` echo server while 0, 3 and 5 peers each send 64 KiB of empty
  frames every 0.5 s (the peers run in a child process).

``--corpus`` adds corpus directories (e.g. the ones a long fuzzing session grew);
each figure reads the directories named after its target.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import threading
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if __package__ in (None, ""):
    sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests"))

import codec  # noqa: E402
from fuzz import _schemas, fuzz_differential, fuzz_frame_decoder  # noqa: E402

E = _schemas.schemas.everything_pb2
L = _schemas.schemas.legacy_pb2
KiB = 1024
MiB = 1024 * KiB


def _inputs(target: str, extra: list[Path]) -> list[bytes]:
    """The files of ``fuzz/corpus/<target>`` and of the extra directories meant for it.

    An extra directory counts when it has a ``<target>`` subdirectory (a parent
    of several corpora) or when its own name contains the target's name.
    """
    dirs = [HERE / "corpus" / target]
    for directory in extra:
        if (directory / target).is_dir():
            dirs.append(directory / target)
        elif target in directory.name:
            dirs.append(directory)
    found: dict[bytes, None] = {}
    for directory in dirs:
        if directory.is_dir():
            for path in sorted(directory.iterdir()):
                if path.is_file():
                    found[path.read_bytes()] = None
    return list(found)


def _peak(action: Callable[[], object]) -> int:
    action()
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        action()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def _rss_kib() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * 4


# --- D3 --------------------------------------------------------------------------------------


def split(extra: list[Path], _: int) -> None:
    rng = random.Random(0)
    files = _inputs("fuzz_frame_decoder", extra)
    runs = divergences = streams = 0
    for data in files:
        flags = data[0] if data else 0
        count = data[1] % fuzz_frame_decoder.MAX_CHUNK_SIZES if len(data) > 1 else 0
        stream = data[2 + count :]
        if len(stream) > 4096:
            continue
        streams += 1
        strict = bool(flags & fuzz_frame_decoder.STRICT)
        limit = fuzz_frame_decoder.LIMITS[(flags >> 1) & 3]
        cuts: list[list[int]] = [[len(stream)], [1] * len(stream)]
        cuts += [[i, len(stream) - i] for i in range(len(stream) + 1)]
        for _ in range(100):
            sizes, left = [], len(stream)
            while left > 0:
                sizes.append(rng.randint(0, min(left, 64)))
                left -= sizes[-1]
            cuts.append(sizes)
        whole = None
        for sizes in cuts:
            chunks = []
            pos = 0
            for size in sizes:
                chunks.append(stream[pos : pos + size])
                pos += size
            for use_feed in (True, False):
                outcome = fuzz_frame_decoder._run(
                    iter(chunks), lambda _, f=use_feed: f, limit, strict, False, False
                )
                runs += 1
                if whole is None:
                    whole = outcome
                elif outcome != whole:
                    divergences += 1
    print(
        f"D3 split invariance: {streams} streams ({len(files)} corpus files), {runs:,} runs "
        "(whole, byte at a time, every 2-way split, 100 random chunkings; feed and "
        f"get_buffer), {divergences} divergences"
    )


# --- D5 --------------------------------------------------------------------------------------

PREFIXES = {
    "2**63-1": bytes.fromhex("ff" * 8 + "7f"),
    "0xffffffff": bytes.fromhex("ff ff ff ff 0f"),
    "max_frame+1": codec.varint.encode(4 * MiB + 1),
    "2**32": bytes.fromhex("80 80 80 80 10"),
}


def memory(extra: list[Path], _: int) -> None:
    for name, prefix in PREFIXES.items():

        def refuse(prefix: bytes = prefix) -> None:
            decoder = codec.FrameDecoder()
            try:
                decoder.feed(prefix)
            except codec.FrameTooLargeError:
                return
            raise AssertionError("accepted")

        peak = _peak(refuse)
        decoders = [codec.FrameDecoder() for _ in range(10_000)]
        for decoder in decoders[:100]:  # warm up
            decoder.feed(prefix[:-1])
        times = []
        for decoder in decoders[100:]:
            decoder.feed(prefix[:-1])
            start = time.perf_counter_ns()
            try:
                decoder.feed(prefix[-1:])
            except codec.FrameTooLargeError:
                times.append(time.perf_counter_ns() - start)
        print(
            f"D5 prefix {name}: tracemalloc peak {peak} B; refused "
            f"{statistics.median(times) / 1000:.1f} us (median) after its last byte"
        )
    # Accepted prefixes: max_frame with no body, and 1,000 stalled decoders.
    peak = _peak(lambda: codec.FrameDecoder().feed(codec.varint.encode(4 * MiB)))
    gc.collect()
    rss_before = _rss_kib()
    tracemalloc.start()
    stalled = []
    for _ in range(1000):
        decoder = codec.FrameDecoder()
        decoder.feed(codec.varint.encode(4 * MiB) + b"x" * 100)
        stalled.append(decoder)
    traced = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    rss = _rss_kib() - rss_before
    assert all(d.frame_in_progress for d in stalled)
    print(
        f"D5 max_frame prefix, no body: peak {peak} B; 1,000 stalled decoders (4 MiB "
        f"declared, 100 B received each): {traced / 1000:.0f} B traced per decoder, "
        f"RSS +{rss} KiB in all"
    )


# --- D6 --------------------------------------------------------------------------------------


def _tag(number: int, wire: int) -> bytes:
    return codec.varint.encode(number << 3 | wire)


def _generators() -> dict[str, tuple[Any, Callable[[int], bytes]]]:
    v = codec.varint.encode

    def packed(n: int) -> bytes:
        return b"\x0a" + v(n) + b"\x01" * n

    def keyed(field: int, extra: bytes = b"") -> Callable[[int], bytes]:
        def make(n: int) -> bytes:
            out = bytearray()
            i = 0
            while len(out) < n:
                if field == 104:  # a string key
                    key = str(i).encode()
                    entry = b"\x0a" + v(len(key)) + key
                else:
                    entry = b"\x08" + v(i) + extra
                out += _tag(field, 2) + v(len(entry)) + entry
                i += 1
            return bytes(out)

        return make

    def repeat(unit: bytes) -> Callable[[int], bytes]:
        return lambda n: unit * (n // len(unit))

    return {
        "packed bools (CatPackedBool)": (E.CatPackedBool, packed),
        "empty sub-messages (CatRepeated 0a 00)": (E.CatRepeated, repeat(b"\x0a\x00")),
        "repeated singular sub-message (CatNested 0a 02 08 01)": (
            E.CatNested,
            repeat(b"\x0a\x02\x08\x01"),
        ),
        "unknown varint fields (CatInt32 10 00)": (E.CatInt32, repeat(b"\x10\x00")),
        "empty Tree children (Tree 22 00)": (E.Tree, repeat(b"\x22\x00")),
        "empty Inner in AllTypes.r_inner": (E.AllTypes, repeat(_tag(83, 2) + b"\x00")),
        "empty Leaf in AllTypes.r_leaf": (E.AllTypes, repeat(_tag(84, 2) + b"\x00")),
        "map<int64, Empty> entries, distinct keys": (E.AllTypes, keyed(106)),
        "map<string, AllTypes> entries, distinct keys, no value": (E.AllTypes, keyed(104)),
        "map<uint64, Leaf> entries, distinct keys, no value": (E.AllTypes, keyed(94)),
        "unknown groups (CatInt32 13 14)": (E.CatInt32, repeat(b"\x13\x14")),
        "repeated Record children (Record fa 01 00)": (L.Record, repeat(_tag(31, 2) + b"\x00")),
    }


def amplification(extra: list[Path], _: int) -> None:
    size = 64 * KiB
    budget = codec.schema.DEFAULT_MAX_ELEMENTS
    worst = (0.0, "")
    worst_unit = (0.0, "")
    for name, (cls, make) in _generators().items():
        data = make(size)
        struct = codec.struct(cls)
        try:
            codec.decode(struct, data)
        except codec.DecodeError as exc:
            print(f"D6 {name}: {len(data)} B refused under the default limits: {exc}")
            continue
        peak = _peak(lambda s=struct, d=data: codec.decode(s, d))
        low, high = 0, budget
        while low < high:  # the smallest max_elements that decodes it: the units it costs
            mid = (low + high) // 2
            try:
                codec.decode(struct, data, max_elements=mid)
                high = mid
            except codec.DecodeError:
                low = mid + 1
        units = low
        ratio = peak / len(data)
        per_unit = peak / units if units else float("nan")
        worst = max(worst, (ratio, name))
        if units >= 1000:  # a cost that scales with the input (not a merged singleton)
            worst_unit = max(worst_unit, (per_unit, name))
        print(
            f"D6 {name}: {len(data)} B -> peak {peak / MiB:.1f} MiB ({ratio:.0f} B per wire "
            f"byte); {units} units of max_elements ({per_unit:.0f} B per unit)"
        )
    print(f"D6 worst: {worst[0]:.0f} B allocated per wire byte ({worst[1]})")
    bound = worst_unit[0] * budget / MiB
    print(
        f"D6 worst per max_elements unit: {worst_unit[0]:.0f} B ({worst_unit[1]}): the "
        f"default budget of {budget:,} units admits about {bound:,.0f} MiB per decode"
    )
    # The two worst generators filling one frame of the default size, through FrameDecoder.
    for name in dict.fromkeys([worst[1], worst_unit[1]]):
        cls, make = _generators()[name]
        data = make(4 * MiB - 16)
        frame = codec.varint.encode(len(data)) + data

        def run(frame: bytes = frame, cls: Any = cls) -> str:
            decoder = codec.FrameDecoder(message_type=codec.struct(cls))
            try:
                decoder.feed(frame)
                decoder.next_frame()
            except codec.DecodeError as exc:
                return f"refused ({type(exc).__name__} at offset {exc.offset:,})"
            return "accepted"

        gc.collect()
        start = time.perf_counter()
        outcome = run()  # timed without tracemalloc, which slows allocation down
        elapsed = time.perf_counter() - start
        tracemalloc.start()
        run()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(
            f"D6 one {len(data):,}-byte frame of {name}, default limits: {outcome} in "
            f"{elapsed:.2f} s, tracemalloc peak {peak / MiB:,.0f} MiB"
        )


# --- D7 --------------------------------------------------------------------------------------

DEEP = 100_000


def _nested(levels: int, header: bytes) -> bytes:
    payload = b""
    for _ in range(levels):
        payload = header + codec.varint.encode(len(payload)) + payload
    return payload


def _walk(reader: codec.WireReader) -> None:
    """Open every LEN value as a nested message, iteratively (the walker uses no stack)."""
    pending = [reader]
    while pending:
        current = pending.pop()
        for _, wire_type, value in current:
            if wire_type == codec.LEN:
                pending.append(current.nested(value))


def _apis(cls: Any) -> dict[str, Callable[[bytes], object]]:
    struct = codec.struct(cls)

    def framed(data: bytes) -> object:
        decoder = codec.FrameDecoder(message_type=struct)
        decoder.feed(codec.varint.encode(len(data)) + data)
        return decoder.next_frame()

    return {
        "WireReader": lambda data: _walk(codec.WireReader(data)),
        "codec.decode": lambda data: codec.decode(struct, data),
        "FrameDecoder(message_type)": framed,
    }


def depth(extra: list[Path], _: int) -> None:
    cases = {
        "100,000 nested messages": (E.Chain, _nested(DEEP, b"\x0a")),
        "100,000 group starts": (E.CatInt32, b"\x0b" * DEEP),
        "100,000 unknown groups, closed": (E.CatInt32, b"\x13" * DEEP + b"\x14" * DEEP),
    }
    build = "compiled" if codec.COMPILED else "pure Python"
    for name, (cls, data) in cases.items():
        for api, run in _apis(cls).items():
            times = []
            for _ in range(5):
                start = time.perf_counter()
                try:
                    run(data)
                except codec.DepthLimitError:
                    pass
                else:
                    raise AssertionError(f"{api} accepted {name}")
                times.append(time.perf_counter() - start)
            limit = _smallest_recursion_limit(run, data)
            print(
                f"D7 {build} {name} via {api}: rejected in "
                f"{statistics.median(times) * 1000:.2f} ms (median of 5); works down to "
                f"sys.setrecursionlimit({limit})"
            )


def _smallest_recursion_limit(run: Callable[[bytes], object], data: bytes) -> int:
    here = len(_stack())
    saved = sys.getrecursionlimit()
    low, high = here + 5, 2000
    try:
        while low < high:
            mid = (low + high) // 2
            sys.setrecursionlimit(mid)
            try:
                run(data)
            except codec.DepthLimitError:
                high = mid
            except (RecursionError, codec.DecodeError):  # FrameDecoder wraps RecursionError
                low = mid + 1
    finally:
        sys.setrecursionlimit(saved)
    return low - here  # frames beyond the caller's


def _stack() -> list[Any]:
    import inspect

    return inspect.stack(0)


# --- D9 --------------------------------------------------------------------------------------


def _mutate(rng: random.Random, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(5)
        if op == 0 and buf:
            buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
        elif op == 1 and buf:
            buf[rng.randrange(len(buf))] = rng.randrange(256)
        elif op == 2:
            at = rng.randint(0, len(buf))
            buf[at:at] = rng.choice([b"\x00", b"\x80", b"\xff", b"\x0b", b"\x0c", b"\x0a\x00"])
        elif op == 3 and buf:
            at = rng.randrange(len(buf))
            del buf[at : at + rng.randint(1, 4)]
        else:
            del buf[rng.randint(0, len(buf)) :]
    return bytes(buf)


def differential(extra: list[Path], inputs: int) -> None:
    rng = random.Random(1)
    corpus = _inputs("fuzz_differential", extra)
    valid = [d for d in corpus if d and d[0] < 128]
    sample = corpus + [
        bytes([rng.randrange(256)]) + _mutate(rng, rng.choice(valid)[1:]) for _ in range(inputs)
    ]
    sample += [
        bytes([rng.randrange(256)]) + rng.randbytes(rng.randint(0, 48)) for _ in range(inputs // 4)
    ]
    verdicts: Counter[str] = Counter()
    findings = []
    start = time.perf_counter()
    for data in sample:
        try:
            verdicts[fuzz_differential.verdict(data)] += 1
        except Exception as exc:  # an unexplained difference: a new finding
            verdicts["DISAGREE"] += 1
            findings.append((data.hex(), f"{type(exc).__name__}: {str(exc)[:200]}"))
    elapsed = time.perf_counter() - start
    total = sum(verdicts.values())
    same = verdicts["both accept, same content"]
    both_accept = same + verdicts["divergence 4: a map entry kept as unknown, with a map inside"]
    decided_alike = both_accept + verdicts["both reject"]
    documented = sum(n for k, n in verdicts.items() if k.startswith("divergence"))
    known = sum(n for k, n in verdicts.items() if k.startswith("known finding"))
    print(
        f"D9 differential vs {_backend()}: {total:,} inputs ({len(corpus)} corpus, "
        f"{inputs:,} mutations of valid encodings, {inputs // 4:,} random) in {elapsed:.1f} s"
    )
    print(
        f"    same accept/reject: {decided_alike:,}/{total:,} "
        f"({100 * decided_alike / total:.3f} %); same content where both accept: "
        f"{same:,}/{both_accept:,}; documented divergences: {documented:,}; known findings: "
        f"{known:,}; unexplained: {verdicts['DISAGREE']:,}"
    )
    for verdict, count in sorted(verdicts.items()):
        print(f"    {verdict}: {count:,}")
    for data, message in findings[:5]:
        print(f"    finding: {data[:120]} {message}")


def _backend() -> str:
    from google.protobuf.internal import api_implementation

    return f"google.protobuf ({api_implementation.Type()} backend)"


# --- D11 -------------------------------------------------------------------------------------


def heap(extra: list[Path], _: int) -> None:
    import test_heap as th
    from helpers.heap import measure

    def fmt(pair: tuple[int, int]) -> str:
        return f"net {pair[0]} B, peak {pair[1]} B"

    encoder = codec.FrameEncoder()
    idle = measure(th._loop_only(encoder, th.STRUCTS))
    busy = measure(th._encode_all(codec.FrameEncoder(), th.STRUCTS))
    print(f"D11 10,000 warm struct encodes: {fmt(busy)} (the bare loop: {fmt(idle)})")
    small = measure(
        th._encode_all(codec.FrameEncoder(), [th.BlobStruct(data=th.PAYLOAD[:KiB])] * 100)
    )
    large = measure(th._encode_all(codec.FrameEncoder(), [th.BlobStruct(data=th.PAYLOAD)] * 100))
    print(
        f"D11 100 struct encodes of 1 KiB payloads: {fmt(small)}; of 1 MiB payloads: {fmt(large)}"
    )
    for size in (16, KiB, 64 * KiB):
        payload = b"p" * size
        count = max(10, MiB // size)
        encoder = codec.FrameEncoder()

        def write(
            encoder: codec.FrameEncoder = encoder, payload: bytes = payload, count: int = count
        ) -> None:
            encoder.clear()
            for _ in range(count):
                encoder.write(payload)

        stream = th.frame(payload) * count
        decoder = codec.FrameDecoder()

        def split(decoder: codec.FrameDecoder = decoder, stream: bytes = stream) -> None:
            decoder.feed(stream)
            while (view := decoder.next_frame()) is not None:
                del view

        w, s = measure(write), measure(split)
        print(
            f"D11 {size} B frames x {count}: warm encoder write {fmt(w)} "
            f"({w[1] / count:.2f} B peak per frame); warm decoder split {fmt(s)} "
            f"({s[1] / count:.2f} B peak per frame)"
        )
    blob = th.Blob(data=th.PAYLOAD)
    encoder = codec.FrameEncoder()

    def encode_pb2() -> None:
        encoder.clear()
        encoder.encode(blob)

    naive = measure(th._naive_blob_frame)
    print(
        f"D11 a 1 MiB pb2 message into a warm encoder: {fmt(measure(encode_pb2))} "
        f"(naive SerializeToString + prefix + concatenation: {fmt(naive)})"
    )


# --- D8 --------------------------------------------------------------------------------------


def slow(extra: list[Path], _: int) -> None:
    worst = (0.0, "", 0)
    count = 0
    for target in ("fuzz_struct_decode", "fuzz_differential"):
        for data in _inputs(target, extra):
            if len(data) < 34:
                continue
            cls = fuzz_differential.pick(data)[0]
            message = data[1:]
            struct = codec.struct(cls)
            best = float("inf")
            for _ in range(3):
                start = time.perf_counter()
                with contextlib.suppress(codec.DecodeError):
                    codec.decode(struct, message)
                best = min(best, time.perf_counter() - start)
            count += 1
            per_byte = best * 1e6 / len(message)
            worst = max(worst, (per_byte, cls.DESCRIPTOR.full_name, len(message)))
    print(
        f"D8 worst decode time per input byte over {count} corpus inputs of >= 32 bytes: "
        f"{worst[0]:.3f} us/byte ({worst[1]}, {worst[2]} bytes)"
    )


# --- D4 coverage ------------------------------------------------------------------------------

TARGETS = (
    "fuzz_varint",
    "fuzz_frame_decoder",
    "fuzz_wire_reader",
    "fuzz_struct_decode",
    "fuzz_differential",
    "fuzz_roundtrip",
    "fuzz_buffer_lifetime",
    "fuzz_profiler_stream",
)
# The modules a peer's bytes reach (aio and the CLI are not decoders); the profiler's
# stream reader is counted apart: only its own target reaches it.
CORE = ("_varint", "varint", "_buffer", "wire", "_struct", "schema", "framing", "errors")
PROFILER = ("profiler/packets", "profiler/receiver", "profiler/capture", "profiler/model")
C_ONLY = r"if cython\.compiled:"  # blocks the pure build never runs

# Run in a fresh interpreter: coverage starts before codec is imported, and only
# the target's own imports count.
_REPLAY = """
import sys
import coverage
data_file, include, root, target, listing = sys.argv[1:]
sys.path[:0] = [root]
cov = coverage.Coverage(data_file=data_file, include=include.split(","), config_file=False)
cov.start()
import importlib
import codec
assert not codec.COMPILED, "the pure build was not loaded"
check = importlib.import_module("fuzz." + target).check
failures = 0
with open(listing) as names:
    for name in names.read().splitlines():
        with open(name, "rb") as file:
            data = file.read()
        try:
            check(data)
        except Exception:
            failures += 1
cov.stop()
cov.save()
print(failures)
"""


def _corpus_files(target: str, extra: list[Path]) -> list[Path]:
    """The files ``_inputs`` reads for ``target``, one per distinct content."""
    seen: dict[bytes, Path] = {}
    for directory in [HERE / "corpus" / target, *extra]:
        if directory != HERE / "corpus" / target:
            if (directory / target).is_dir():
                directory = directory / target
            elif target not in directory.name:
                continue
        if directory.is_dir():
            for path in sorted(directory.iterdir()):
                if path.is_file():
                    seen.setdefault(path.read_bytes(), path)
    return list(seen.values())


def coverage(extra: list[Path], _: int) -> None:
    import os
    import subprocess
    import tempfile

    try:
        from coverage import Coverage
    except ImportError:
        print("D4 coverage: needs coverage.py (pip install coverage)")
        return
    package = Path(codec.__file__).resolve().parent
    env = dict(os.environ, CODEC_PURE_PYTHON="1")
    print(
        "D4 line coverage of the core modules, pure build, each target's corpora replayed "
        f"(C-only blocks left out): {', '.join(CORE)}"
    )
    print(
        f"    {'target':<22} {'inputs':>6} {'failed':>6} {'total':>6}  "
        + " ".join(CORE)
        + f"  {'profiler':>8}  "
        + " ".join(name.split("/")[1] for name in PROFILER)
    )
    with tempfile.TemporaryDirectory() as scratch:
        for target in TARGETS:
            files = _corpus_files(target, extra)
            listing = Path(scratch) / f"{target}.txt"
            listing.write_text("".join(f"{path}\n" for path in files))
            data_file = Path(scratch) / f"{target}.coverage"
            include = f"{package}/*.py,{package}/profiler/*.py"
            command = [sys.executable, "-c", _REPLAY, str(data_file), include]
            command += [str(HERE.parent), target, str(listing)]
            done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
            report = Coverage(data_file=str(data_file), config_file=False)
            report.exclude(C_ONLY)
            report.load()
            totals = []
            shares = []
            for modules in (CORE, PROFILER):
                statements = executed = 0
                for module in modules:
                    _, lines, _, missing, _ = report.analysis2(str(package / f"{module}.py"))
                    statements += len(lines)
                    executed += len(lines) - len(missing)
                    shares.append(f"{100 * (len(lines) - len(missing)) / len(lines):.0f}%")
                totals.append(f"{100 * executed / statements:.1f}%")
            print(
                f"    {target:<22} {len(files):>6} {done.stdout.strip():>6} {totals[0]:>6}  "
                + " ".join(shares[: len(CORE)])
                + f"  {totals[1]:>8}  "
                + " ".join(shares[len(CORE) :])
            )


# --- misuse: objects whose __init__ never ran, threads, re-entry, stale memory ----------------


def uninitialised(extra: list[Path], _: int) -> None:
    import test_hostile as hostile

    cases = [
        (f"{name}.{method}", name, hostile.UNINITIALISED_CALLS[method])
        for name, cls in hostile._compiled_public_classes().items()
        for method in hostile._public_names(cls)
    ]
    cases += [(label, "", call) for label, call in hostile.UNINITIALISED_VIA.items()]
    outcomes: Counter[str] = Counter()
    crashed = []
    for case in cases:
        run = subprocess.run(
            [sys.executable, "-c", hostile._PROBE, json.dumps([case])],
            capture_output=True,
            text=True,
            env=dict(os.environ, PYTHONPATH=str(Path(codec.__file__).resolve().parent.parent)),
        )
        if run.returncode:
            crashed.append(case[0])
            outcomes[f"crash (exit {run.returncode})"] += 1
            continue
        done = [json.loads(line) for line in run.stdout.splitlines()][-1]
        clear = hostile._acceptable(done[2], done[3])
        outcomes[done[2] if clear else f"unclear {done[2]}"] += 1
    classes = len({name for _, name, _ in cases if name})
    print(f"\n## objects whose __init__ never ran: {len(cases)} calls, {classes} classes")
    for outcome, count in sorted(outcomes.items()):
        print(f"  {outcome:<28} {count:>4}")
    if crashed:
        print("  crashed:", ", ".join(crashed))


def _two_threads(busy: Callable[[Callable[[], None]], None], call: Callable[[int], bool]) -> int:
    """Run ``busy`` in one thread and ``call(i)`` in another until ``busy`` ends.

    ``busy`` gets a ``pause`` to run inside its calls: the first waits until the
    other thread has made a call. Returns how many calls the second thread made.
    """
    inside, tried = threading.Event(), threading.Event()

    def pause() -> None:
        if not inside.is_set():
            inside.set()
            tried.wait(10)
        time.sleep(0)

    calls = 0

    def calling() -> None:
        nonlocal calls
        inside.wait(10)
        while calls < 20_000:
            call(calls)
            calls += 1
            tried.set()
            if not first.is_alive():
                return

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        first = threading.Thread(target=busy, args=(pause,))
        second = threading.Thread(target=calling)
        first.start()
        second.start()
        first.join()
        second.join()
    finally:
        sys.setswitchinterval(interval)
    return calls


class _Paused:
    def __init__(self, value: int, pause: Callable[[], None]) -> None:
        self.value = value
        self.pause = pause

    def __index__(self) -> int:
        self.pause()
        return self.value


def _attempt(outcome: Counter[str], call: Callable[[], object]) -> bool:
    try:
        call()
    except RuntimeError:
        outcome["refused"] += 1
        return False
    except Exception as exc:  # what misuse did before the busy flags
        outcome[f"raised {type(exc).__name__}"] += 1
        return False
    outcome["returned"] += 1
    return True


def _compare(outcome: Counter[str], returned: list[Any], landed: list[Any]) -> None:
    missing = Counter(returned) - Counter(landed)
    extra = Counter(landed) - Counter(returned)
    outcome["reached the stream"] = sum((Counter(landed) & Counter(returned)).values())
    outcome["returned but missing"] = sum(missing.values())
    outcome["in the stream but not returned"] = sum(extra.values())


def _frames(stream: bytes) -> list[bytes]:
    decoder = codec.FrameDecoder()
    try:
        decoder.feed(stream)
        decoder.feed_eof()
        return [bytes(frame) for frame in decoder]
    except codec.DecodeError:
        return [b"<corrupt stream>"]


def _encoder_threads() -> Counter[str]:
    from codec._peerbench import Sample

    struct = codec.struct(Sample)
    encoder = codec.FrameEncoder()
    outcome: Counter[str] = Counter()
    returned: list[bytes] = []

    def encoding(pause: Callable[[], None]) -> None:
        from helpers.unchecked import unchecked

        for i in range(200):
            message = unchecked(struct, scope_id=_Paused(i, pause), name=f"a{i}")
            if _attempt(outcome, lambda message=message: encoder.encode(message)):
                returned.append(codec.encode(struct(scope_id=i, name=f"a{i}")))

    def writing(i: int) -> bool:
        payload = b"b%d" % i
        if _attempt(outcome, lambda: encoder.write(payload)):
            returned.append(payload)
        return True

    _two_threads(encoding, writing)
    _compare(outcome, returned, _frames(bytes(encoder.getbuffer())))
    return outcome


def _writer_threads() -> Counter[str]:
    writer = codec.WireWriter()
    outcome: Counter[str] = Counter()
    returned: list[tuple[int, Any]] = []

    def packing(pause: Callable[[], None]) -> None:
        for i in range(100):
            values = [i, _Paused(i + 1, pause), i + 2]
            if _attempt(outcome, lambda values=values: writer.packed(1, "uint32", values)):
                returned.append((1, bytes([i, i + 1, i + 2])))

    def scalar(i: int) -> bool:
        if _attempt(outcome, lambda: writer.uint32(2, i)):
            returned.append((2, i))
        return True

    _two_threads(packing, scalar)
    try:
        with writer.buffer.getbuffer() as view:
            landed = [
                (field, bytes(value) if wire == codec.LEN else value)
                for field, wire, value in codec.WireReader(bytes(view))
            ]
    except codec.DecodeError:
        landed = [(0, "<corrupt message>")]
    _compare(outcome, returned, landed)
    return outcome


def _decoder_threads() -> Counter[str]:
    outcome: Counter[str] = Counter()
    fed: list[bytes] = []
    taken: list[bytes] = []
    pauses: list[Callable[[], None]] = []

    class Parsed:
        @staticmethod
        def FromString(data: memoryview) -> bytes:
            for pause in pauses:
                pause()
            return bytes(data)

    decoder = codec.FrameDecoder(message_type=Parsed)

    def feed(name: bytes, i: int) -> None:
        payload = name + b"%d" % i
        frame = codec.varint.encode(len(payload)) + payload
        if _attempt(outcome, lambda: decoder.feed(frame)):
            fed.append(payload)
        with contextlib.suppress(RuntimeError):
            while (message := decoder.next_frame()) is not None:
                taken.append(message)

    def feeding(pause: Callable[[], None]) -> None:
        pauses.append(pause)
        for i in range(300):
            feed(b"a", i)

    def other(i: int) -> bool:
        feed(b"b", i)
        return True

    _two_threads(feeding, other)
    pauses.clear()
    with contextlib.suppress(RuntimeError):
        taken.extend(decoder)
    _compare(outcome, fed, taken)
    return outcome


def _reentry() -> Counter[str]:
    """Each re-entry action of the tests, run from a callback: refused, or what it did."""
    import test_framing
    import test_wire

    outcome: Counter[str] = Counter()
    for name, action in test_framing.ENCODER_REENTRY.items():
        _reentry_outcome(outcome, f"FrameEncoder: {name}", *_encoder_reentry(action))
    for name, action in test_wire.WRITER_REENTRY.items():
        _reentry_outcome(outcome, f"WireWriter: {name}", *_writer_reentry(action))
    for name, action in test_framing.DECODER_REENTRY.items():
        _reentry_outcome(outcome, f"FrameDecoder: {name}", *_decoder_reentry(action))
    return outcome


def _raised(call: Callable[[], object]) -> str:
    try:
        call()
    except Exception as exc:
        return type(exc).__name__
    return ""


def _encoder_reentry(action: Callable[[Any], object]) -> tuple[list[str], str, bool]:
    import test_framing
    from helpers.misuse import Reentrant
    from helpers.unchecked import unchecked

    struct = test_framing.SampleStruct
    encoder = codec.FrameEncoder()
    value = Reentrant(7, lambda: action(encoder))
    message = unchecked(struct, scope_id=value, name="x")
    raised = _raised(lambda: encoder.encode(message))
    expected = [codec.encode(struct(scope_id=7, name="x"))]
    return value.outcomes, raised, _frames(bytes(encoder.getbuffer())) == expected


def _writer_reentry(action: Callable[[Any], object]) -> tuple[list[str], str, bool]:
    import test_wire
    from helpers.misuse import Reentrant

    writer = codec.WireWriter()
    value = Reentrant(2, lambda: action(writer))
    raised = _raised(lambda: writer.packed(1, "int32", [1, value, 3]))
    return value.outcomes, raised, test_wire.output(writer) == b"\x0a\x03\x01\x02\x03"


def _decoder_reentry(action: Callable[[Any], object]) -> tuple[list[str], str, bool]:
    import test_framing

    outcomes: list[str] = []
    got: list[bytes] = []
    parser = test_framing._parser(lambda payload: payload == b"a" and action(decoder), outcomes)
    decoder = codec.FrameDecoder(message_type=parser)

    def drain() -> None:
        decoder.feed(b"\x01a\x01b")
        got.extend(decoder)

    raised = _raised(drain)
    return outcomes[:1], raised, got == [b"a", b"b"]


def _reentry_outcome(
    outcome: Counter[str], name: str, inner: list[str], raised: str, intact: bool
) -> None:
    if inner and "done" not in inner and not raised and intact:
        outcome["refused, output intact"] += 1
        return
    outcome["accepted, or output broken"] += 1
    print(
        f"  {name}: inner call {'/'.join(inner) or 'not made'}; outer call raised"
        f" {raised or 'nothing'}; output intact: {intact}"
    )


def misuse(extra: list[Path], _: int) -> None:
    for title, run in (
        ("FrameEncoder: encode() of structs pausing in __index__ vs write()", _encoder_threads),
        ("WireWriter: packed() pausing in __index__ vs uint32()", _writer_threads),
        ("FrameDecoder: feed()+next_frame() with a pausing parser, two threads", _decoder_threads),
    ):
        print(f"\n## two threads, {title}")
        for key, count in sorted(run().items()):
            print(f"  {key:<34} {count:>6}")
    print("\n## re-entry from a callback (the actions of the tests)")
    for key, count in sorted(_reentry().items()):
        print(f"  {key:<34} {count:>6}")


def stale(extra: list[Path], _: int) -> None:
    import test_framing

    print("\n## get_buffer(n) of fresh decoders, freed memory filled with 0xA5 first")
    for size in (5000, 8192, 65536, MiB):
        dirty = 0
        nonzero = 0
        for _ in range(100):
            test_framing._fill_freed_memory(0xA5)
            decoder = codec.FrameDecoder()
            with decoder.get_buffer(size) as view:
                count = size - view.tobytes().count(0)
            dirty += count > 0
            nonzero += count
        print(f"  n = {size:>8}: {dirty:>3} / 100 views held non-zero bytes ({nonzero} bytes)")


# --- codec.aio: idle connections and fairness -------------------------------------------

IDLE_CONNECTIONS = 8


def _idle_scenarios() -> dict[str, bytes]:
    """What each peer sends before it falls silent, by name."""
    varint = codec.varint.encode
    return {
        "nothing": b"",
        "one 4 MiB frame": varint(4 * MiB) + bytes(4 * MiB),
        "a 62 KB burst of 100 B frames": (varint(100) + bytes(100)) * 615,
        "a slowloris prefix (4 MiB declared, 100 B sent)": varint(4 * MiB) + bytes(100),
    }


def _frames_in(stream: bytes) -> list[int]:
    """The payload sizes of the complete frames of ``stream``."""
    decoder = codec.FrameDecoder()
    decoder.feed(stream)
    return [len(frame) for frame in decoder]


async def _idle_connections(stream: bytes, echo: bool) -> int:
    """Traced bytes kept by ``IDLE_CONNECTIONS`` server connections once their peers are idle.

    Each peer is a blocking socket in a thread: it sends ``stream``, reads the
    echo of its complete frames if ``echo``, then stays connected and silent
    while the server's memory is measured.
    """
    import asyncio
    import socket

    import codec.aio

    sizes = _frames_in(stream)
    echoed = sum(codec.varint.size(size) + size for size in sizes) if echo else 0
    taken = 0

    async def handler(reader: codec.aio.FramedReader[Any], writer: codec.aio.FramedWriter) -> None:
        nonlocal taken
        async for message in reader:
            if echo:
                writer.send(message)
            del message  # what the library keeps, not what the handler does
            taken += 1

    quiet = threading.Event()
    done: list[threading.Event] = []
    room = bytearray(64 * KiB)  # shared by the peers: its content is not looked at

    def peer(port: int, finished: threading.Event) -> None:
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(stream)
            left = echoed
            while left:
                left -= sock.recv_into(room, min(left, len(room)))
            finished.set()
            quiet.wait()

    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        server = await codec.aio.start_server(handler, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        threads = []
        for _ in range(IDLE_CONNECTIONS):
            finished = threading.Event()
            done.append(finished)
            thread = threading.Thread(target=peer, args=(port, finished), daemon=True)
            thread.start()
            threads.append(thread)
        while not all(event.is_set() for event in done) or taken < len(sizes) * len(threads):
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)  # the last reads and flushes, then silence
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
        quiet.set()
    server.close()
    await server.wait_closed()
    for thread in threads:
        thread.join()
    return kept // IDLE_CONNECTIONS


def idle(extra: list[Path], _: int) -> None:
    import asyncio

    print(
        f"\n## traced memory per idle codec.aio server connection ({IDLE_CONNECTIONS} peers,"
        " server included), once the peer has sent, then fallen silent"
    )
    for name, stream in _idle_scenarios().items():
        for echo in (False, True):
            if echo and not _frames_in(stream):
                continue
            kept = asyncio.run(_idle_connections(stream, echo))
            handler = "echo" if echo else "discard"
            print(f"  {name:48} {handler:8} {kept:>12,} B")


# A peer process: flooding peers and one good client against a codec.aio echo server.
_FAIRNESS_PEERS = """
import json, socket, sys, threading, time
port, floods, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
stop = time.monotonic() + seconds
burst = bytes(64 * 1024)  # 65,536 empty frames

def flood():
    with socket.create_connection(("127.0.0.1", port)) as sock:
        while time.monotonic() < stop:
            sock.sendall(burst)
            time.sleep(0.5)

threads = [threading.Thread(target=flood, daemon=True) for _ in range(floods)]
for thread in threads:
    thread.start()
time.sleep(0.5)
request = bytes([20]) + bytes(range(20))
rtts = []
with socket.create_connection(("127.0.0.1", port)) as sock:
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while time.monotonic() < stop:
        started = time.perf_counter()
        sock.sendall(request)
        reply = b""
        while len(reply) < len(request):
            reply += sock.recv(len(request) - len(reply))
        rtts.append(time.perf_counter() - started)
        time.sleep(0.005)
for thread in threads:
    thread.join()
print(json.dumps(rtts))
"""


async def _fairness_run(floods: int, seconds: float) -> list[float]:
    """Round trips of a good client while ``floods`` peers send bursts of empty frames."""
    import asyncio

    import codec.aio

    async def handler(reader: codec.aio.FramedReader[Any], writer: codec.aio.FramedWriter) -> None:
        async for message in reader:
            if message:  # requests are answered; empty frames are heartbeats
                writer.send(message)

    server = await codec.aio.start_server(handler, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    peers = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _FAIRNESS_PEERS,
        str(port),
        str(floods),
        str(seconds),
        stdout=asyncio.subprocess.PIPE,
    )
    output, _ = await peers.communicate()
    server.close()
    await server.wait_closed()
    return json.loads(output)  # type: ignore[no-any-return]


def fairness(extra: list[Path], _: int) -> None:
    import asyncio

    print(
        "\n## a good client's round trips (a 21-byte frame echoed) while flooding peers each"
        " send 64 KiB of empty frames every 0.5 s (peers in another process)"
    )
    for floods in (0, 3, 5):
        rtts = sorted(asyncio.run(_fairness_run(floods, 6.0)))
        p50 = rtts[len(rtts) // 2] * 1e3
        p99 = rtts[len(rtts) * 99 // 100] * 1e3
        print(
            f"  {floods} flooding peers: {len(rtts):>5} round trips, p50 {p50:7.2f} ms,"
            f" p99 {p99:7.2f} ms, max {rtts[-1] * 1e3:7.2f} ms"
        )


# --- R4-R7: the profiler -----------------------------------------------------------------


def _profiler_keyframe(first_line: int = 0) -> bytes:
    """A keyframe of 5 scopes (with their functions and file), 3 threads: 275 bytes.

    The scopes are on lines ``first_line``, ``first_line + 10``, ...
    """
    from codec.profiler import PacketWriter, Registry, ScopeKind, Session

    registry = Registry()
    for i in range(5):
        line = first_line + 10 * i
        registry.add_scope(f"scope {i}", ScopeKind.FUNCTION, f"fn{i}", "game/loop.py", line)
    for i in range(3):
        registry.add_track(f"thread {i}", os_thread_id=1000 + i)
    out = codec.FrameEncoder()
    PacketWriter(Session(7, "measure")).keyframe(out, registry)
    return bytes(out.getbuffer())


def _packet(field: int, flags: int, body: bytes) -> bytes:
    out = codec.FrameEncoder(64 * MiB)
    with out.frame() as packet:
        packet.uint32(1, flags)
        packet.bytes(field, body)
    return bytes(out.getbuffer())


def _frame_of(track: bytes, size: int, scopes_each: int) -> bytes:
    entry = b"\x12" + codec.varint.encode(len(track)) + track
    count = size // len(entry)
    meta = b"\x08\x01\x20" + codec.varint.encode(count * scopes_each)
    return _packet(4, 2, b"\x0a" + codec.varint.encode(len(meta)) + meta + entry * count)


def _entries(table: int, size: int, entry: Callable[[int], bytes]) -> bytes:
    body = bytearray()
    i = 0
    while len(body) < size:
        i += 1
        value = entry(i)
        body += _tag(table, 2) + codec.varint.encode(len(value)) + value
    return _packet(3, 0, bytes(body))


def _hostile_packets(size: int) -> dict[str, bytes]:
    one_scope = bytes.fromhex("0801 120101 1a0100 220105 2a0100")
    unknown = bytearray()
    field = 100
    while len(unknown) < size:
        unknown += codec.varint.encode(field << 3) + b"\x00"
        field += 1
    definition = b"\x08\x06" + bytes(unknown)
    header = b"\x0d" + (0x31465043).to_bytes(4, "little") + b"\x10\x01" + b"\x52\x00" * (size // 2)
    return {
        "frame of empty tracks (12 02 08 01)": _frame_of(b"\x08\x01", size, 0),
        "frame of one-scope tracks, varint": _frame_of(one_scope, size, 1),
        "frame of one-scope tracks, fixed": _frame_of(
            bytes.fromhex("0801 6204 01000000 6a08")
            + bytes(8)
            + b"\x72\x08"
            + bytes(8)
            + b"\x2a\x01\x00",
            size,
            1,
        ),
        "one frame of 100 scopes a track": _frame_of(
            b"\x08\x01\x12\x64"
            + b"\x01" * 100
            + b"\x1a\x64"
            + b"\x00" * 100
            + b"\x22\x64"
            + b"\x05" * 100
            + b"\x2a\x64"
            + b"\x00" * 100,
            size,
            100,
        ),
        "registry: track definitions, no name": _entries(
            3, size, lambda i: b"\x08" + codec.varint.encode(i + 3)
        ),
        "registry: scope definitions, no name": _entries(
            2, size, lambda i: b"\x08" + codec.varint.encode(i + 5)
        ),
        "registry: strings str(i)": _entries(
            1,
            size,
            lambda i: (
                b"\x08"
                + codec.varint.encode(i + 6)
                + b"\x12"
                + bytes([len(str(i))])
                + str(i).encode()
            ),
        ),
        "registry: distinct unknown fields": _packet(3, 0, bytes(unknown)),
        "a definition of distinct unknown fields": _packet(
            3, 0, b"\x12" + codec.varint.encode(len(definition)) + definition
        ),
        "header of empty features": _packet(2, 1, header),
    }


def _read_all(data: bytes) -> object:
    from codec.profiler import Receiver

    receiver = Receiver(max_frame_size=64 * MiB)
    receiver.feed(data)
    try:
        return receiver, list(receiver)
    except codec.DecodeError as exc:
        return exc


def _traced(action: Callable[[], object]) -> tuple[int, int, object]:
    """Net (what the result keeps) and peak bytes of one run, after a warm-up run."""
    action()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        result = action()
        net, peak = tracemalloc.get_traced_memory()
        return net - before, peak - before, result
    finally:
        tracemalloc.stop()


def profiler(extra: list[Path], _: int) -> None:
    import asyncio
    import threading

    from codec.profiler import Frame, Profiler, Receiver, read_capture

    print("\n## R4: two asyncio tasks, scopes across awaits (a: 50 ms, b: 200 ms)")
    prof = Profiler("measure")
    sink = bytearray(prof.keyframe())
    prof.add_sink(type("Sink", (), {"send": lambda self, r, f: sink.extend(bytes(r) + bytes(f))})())

    async def work(name: str, seconds: float) -> None:
        with prof.scope(name):
            await asyncio.sleep(seconds)

    async def both() -> None:
        await asyncio.gather(work("a", 0.05), work("b", 0.2))

    asyncio.run(both())
    prof.end_frame()
    receiver = Receiver()
    receiver.feed(bytes(sink))
    for item in receiver:
        if isinstance(item, Frame):
            for track in item.tracks:
                names = [receiver.registry.scope(int(i)).name for i in track.scope_id]
                ms = [round(d / 1e6, 1) for d in track.duration_ns.tolist()]
                print(
                    f"  track {receiver.registry.track(track.track_ref).name!r}: {names}, "
                    f"depths {track.depth.tolist()}, ms {ms}"
                )

    print("\n## R5: read_capture on keyframes each followed by a damaged packet (02 08 ff)")

    def read_timed(what: str, unit: bytes, mib: int) -> None:
        data = unit * (mib * MiB // len(unit))
        started = time.perf_counter()
        items = sum(1 for _ in read_capture(data))
        print(
            f"  {what} ({len(data):,} B, {items:,} sessions): {time.perf_counter() - started:.2f} s"
        )

    damage = b"\x02\x08\xff"
    for mib in (1, 4, 16):
        read_timed(f"{mib:>2} MiB", _profiler_keyframe() + damage, mib)
    read_timed("   4 MiB of the same keyframes, undamaged", _profiler_keyframe(), 4)
    # each keyframe other than the one before: none is a repeat, every one is parsed
    distinct = b"".join(_profiler_keyframe(line) + damage for line in range(256))
    read_timed("   4 MiB of 256 distinct keyframes in turn", distinct, 4)

    print(
        "\n## R6: bytes per wire byte of one packet "
        "(tracemalloc peak while read, kept with the result)"
    )
    keyframe = _profiler_keyframe()
    large = ("frame of empty tracks (12 02 08 01)", "frame of one-scope tracks, varint")
    for size in (64 * KiB, MiB):
        for name, packet in _hostile_packets(size).items():
            if size > 64 * KiB and name not in large:
                continue
            net, peak, result = _traced(lambda p=packet: _read_all(keyframe + p))
            kept = f"kept {net / len(packet):6.1f}"
            if isinstance(result, Exception):
                kept = f"refused: {result}"
            print(f"  {len(packet):>9,} B  {name:42} peak {peak / len(packet):6.1f}  {kept}")
    for name in large:
        packet = _hostile_packets(4 * MiB)[name]
        started = time.perf_counter()
        result = _read_all(keyframe + packet)
        outcome = f"refused: {result}" if isinstance(result, Exception) else "read"
        print(f"  {len(packet):>9,} B  {name:42} {time.perf_counter() - started:.1f} s, {outcome}")
    minimal = _frame_of(bytes.fromhex("0801 120101 1a0100 220105 2a0100"), 16, 1)
    stream = minimal * (64 * KiB // len(minimal))
    net, peak, _ = _traced(lambda: _read_all(keyframe + stream))
    print(
        f"  {len(stream):>9,} B  {'stream of minimal frames, every frame kept':42} "
        f"peak {peak / len(stream):6.1f}  kept {net / len(stream):6.1f}  "
        f"({net * len(minimal) // len(stream):,} B per {len(minimal)}-byte frame)"
    )

    print("\n## R7: 10,000 short threads, one scope each")
    prof = Profiler("threads")
    scope = prof.register_scope("short")

    def one() -> None:
        with scope():
            pass

    def empty_frame_us() -> float:
        times = []
        for _ in range(21):
            started = time.perf_counter_ns()
            prof.end_frame()
            times.append(time.perf_counter_ns() - started)
        return statistics.median(times) / 1e3

    one()
    prof.end_frame()
    print(f"  empty end_frame(), one thread: {empty_frame_us():.1f} us")
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(10_000):
        thread = threading.Thread(target=one)
        thread.start()
        thread.join()
    prof.end_frame()
    gc.collect()
    kept = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    print(
        f"  after them: {kept / MiB:.1f} MiB still traced ({kept / 10_000:,.0f} B a thread); "
        f"empty end_frame() {empty_frame_us():.1f} us; keyframe {len(prof.keyframe()):,} B"
    )


FIGURES: dict[str, Callable[[list[Path], int], None]] = {
    "split": split,
    "memory": memory,
    "amplification": amplification,
    "depth": depth,
    "differential": differential,
    "heap": heap,
    "slow": slow,
    "profiler": profiler,
    "coverage": coverage,
    "uninitialised": uninitialised,
    "misuse": misuse,
    "stale": stale,
    "idle": idle,
    "fairness": fairness,
}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("figures", nargs="*", metavar="figure", help=", ".join(FIGURES))
    parser.add_argument("--corpus", action="append", type=Path, default=[])
    parser.add_argument("--inputs", type=int, default=20_000)
    args = parser.parse_args(argv)
    unknown = set(args.figures) - set(FIGURES)
    if unknown:
        parser.error(f"unknown figure(s) {sorted(unknown)}; choose from {', '.join(FIGURES)}")
    build = "compiled" if codec.COMPILED else "pure Python"
    print(f"# codec {codec.__version__}, {build} build, Python {sys.version.split()[0]}")
    resource.setrlimit(resource.RLIMIT_STACK, resource.getrlimit(resource.RLIMIT_STACK))
    for name in args.figures or list(FIGURES):
        FIGURES[name](args.corpus, args.inputs)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
