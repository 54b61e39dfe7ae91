"""B1, misuse: one encoder, writer or decoder shared by two threads, or re-entered from a callback.

Usage: ``python fuzz/figures/misuse.py``

* Two threads: one ``FrameEncoder`` encoding structs whose value's
  ``__index__`` pauses (yields the GIL) while another thread writes frames;
  one ``WireWriter`` writing packed values that pause while another thread
  writes scalars; one ``FrameDecoder`` whose parser pauses, fed and drained by
  two threads. Prints the calls that returned, were refused or raised, what
  reached the stream, and what went missing or came from nowhere.
* Re-entry: each call of the re-entry tests (``tests/test_framing.py``,
  ``tests/test_wire.py``) made from a callback inside a call on the same
  object (a struct value's ``__index__``, a packed value's, a parser), one
  by one: refused with the output intact, or accepted or broken (printed).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import _common

import codec
from peerbench import Sample
from tests.helpers.misuse import DECODER_REENTRY, ENCODER_REENTRY, WRITER_REENTRY, Reentrant
from tests.helpers.unchecked import unchecked

SampleStruct = codec.struct(Sample)


# --- two threads on one object --------------------------------------------------------


def two_threads(busy: Callable[[Callable[[], None]], None], call: Callable[[int], bool]) -> int:
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


class Paused:
    """A number whose ``__index__`` runs ``pause`` first."""

    def __init__(self, value: int, pause: Callable[[], None]) -> None:
        self.value = value
        self.pause = pause

    def __index__(self) -> int:
        self.pause()
        return self.value


def attempt(outcome: Counter[str], call: Callable[[], object]) -> bool:
    """Make the call; count it as returned, refused (``RuntimeError``) or raised."""
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


def compare(outcome: Counter[str], returned: list[Any], landed: list[Any]) -> None:
    """Count what the calls that returned wrote against what is in the output."""
    missing = Counter(returned) - Counter(landed)
    extra = Counter(landed) - Counter(returned)
    outcome["reached the stream"] = sum((Counter(landed) & Counter(returned)).values())
    outcome["returned but missing"] = sum(missing.values())
    outcome["in the stream but not returned"] = sum(extra.values())


def frames_of(stream: bytes) -> list[bytes]:
    """The frames of a whole stream, or one marker frame if it does not decode."""
    decoder = codec.FrameDecoder()
    try:
        decoder.feed(stream)
        decoder.feed_eof()
        return [bytes(frame) for frame in decoder]
    except codec.DecodeError:
        return [b"<corrupt stream>"]


def encoder_threads() -> Counter[str]:
    """Struct encodes pausing in ``__index__`` against writes, on one encoder."""
    struct = codec.struct(Sample)
    encoder = codec.FrameEncoder()
    outcome: Counter[str] = Counter()
    returned: list[bytes] = []

    def encoding(pause: Callable[[], None]) -> None:
        for i in range(200):
            message = unchecked(struct, scope_id=Paused(i, pause), name=f"a{i}")
            if attempt(outcome, lambda message=message: encoder.encode(message)):
                returned.append(codec.encode(struct(scope_id=i, name=f"a{i}")))

    def writing(i: int) -> bool:
        payload = b"b%d" % i
        if attempt(outcome, lambda: encoder.write(payload)):
            returned.append(payload)
        return True

    two_threads(encoding, writing)
    compare(outcome, returned, frames_of(bytes(encoder.getbuffer())))
    return outcome


def writer_threads() -> Counter[str]:
    """Packed fields pausing in ``__index__`` against scalars, on one writer."""
    writer = codec.wire.WireWriter()
    outcome: Counter[str] = Counter()
    returned: list[tuple[int, Any]] = []

    def packing(pause: Callable[[], None]) -> None:
        for i in range(100):
            values = [i, Paused(i + 1, pause), i + 2]
            if attempt(outcome, lambda values=values: writer.packed(1, "uint32", values)):
                returned.append((1, bytes([i, i + 1, i + 2])))

    def scalar(i: int) -> bool:
        if attempt(outcome, lambda: writer.uint32(2, i)):
            returned.append((2, i))
        return True

    two_threads(packing, scalar)
    try:
        with writer.buffer.getbuffer() as view:
            landed = [
                (field, bytes(value) if wire == codec.wire.LEN else value)
                for field, wire, value in codec.wire.WireReader(bytes(view))
            ]
    except codec.DecodeError:
        landed = [(0, "<corrupt message>")]
    compare(outcome, returned, landed)
    return outcome


def decoder_threads() -> Counter[str]:
    """Two threads feeding and draining one decoder whose parser pauses."""
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
        if attempt(outcome, lambda: decoder.feed(frame)):
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

    two_threads(feeding, other)
    pauses.clear()
    with contextlib.suppress(RuntimeError):
        taken.extend(decoder)
    compare(outcome, fed, taken)
    return outcome


# --- re-entry: the calls of the re-entry tests, from tests/helpers/misuse.py -----------


def raised(call: Callable[[], object]) -> str:
    """The name of the exception ``call`` raised, or ``""``."""
    try:
        call()
    except Exception as exc:
        return type(exc).__name__
    return ""


def encoder_reentry(action: Callable[[Any], object]) -> tuple[list[str], str, bool]:
    """``action`` on an encoder from a struct value's ``__index__`` while it encodes."""
    encoder = codec.FrameEncoder()
    value = Reentrant(7, lambda: action(encoder))
    message = unchecked(SampleStruct, scope_id=value, name="x")
    outer = raised(lambda: encoder.encode(message))
    expected = [codec.encode(SampleStruct(scope_id=7, name="x"))]
    return value.outcomes, outer, frames_of(bytes(encoder.getbuffer())) == expected


def writer_reentry(action: Callable[[Any], object]) -> tuple[list[str], str, bool]:
    """``action`` on a writer from a packed value's ``__index__`` while it writes the field."""
    writer = codec.wire.WireWriter()
    value = Reentrant(2, lambda: action(writer))
    outer = raised(lambda: writer.packed(1, "int32", [1, value, 3]))
    with writer.buffer.getbuffer() as view:
        intact = bytes(view) == b"\x0a\x03\x01\x02\x03"
    return value.outcomes, outer, intact


def decoder_reentry(action: Callable[[Any], object]) -> tuple[list[str], str, bool]:
    """``action`` on a decoder from its parser, while it parses the first of two frames."""
    outcomes: list[str] = []
    got: list[bytes] = []

    class Parsed:
        @staticmethod
        def FromString(data: memoryview) -> bytes:
            if bytes(data) == b"a":
                try:
                    action(decoder)
                except RuntimeError as exc:
                    outcomes.append(str(exc))
                else:
                    outcomes.append("done")
            return bytes(data)

    decoder = codec.FrameDecoder(message_type=Parsed)

    def drain() -> None:
        decoder.feed(b"\x01a\x01b")
        got.extend(decoder)

    outer = raised(drain)
    return outcomes[:1], outer, got == [b"a", b"b"]


def reentry() -> Counter[str]:
    """Each re-entry call, run from a callback: refused with the output intact, or what it did."""
    outcome: Counter[str] = Counter()
    runs = [
        (f"{owner}: {name}", reenter(call))
        for owner, reenter, calls in (
            ("FrameEncoder", encoder_reentry, ENCODER_REENTRY),
            ("WireWriter", writer_reentry, WRITER_REENTRY),
            ("FrameDecoder", decoder_reentry, DECODER_REENTRY),
        )
        for name, call in calls.items()
    ]
    for name, (inner, outer, intact) in runs:
        if inner and "done" not in inner and not outer and intact:
            outcome["refused, output intact"] += 1
            continue
        outcome["accepted, or output broken"] += 1
        print(
            f"  {name}: inner call {'/'.join(inner) or 'not made'}; outer call raised"
            f" {outer or 'nothing'}; output intact: {intact}"
        )
    return outcome


def main() -> None:
    _common.arguments(__doc__)
    for title, run in (
        ("FrameEncoder: encode() of structs pausing in __index__ vs write()", encoder_threads),
        ("WireWriter: packed() pausing in __index__ vs uint32()", writer_threads),
        ("FrameDecoder: feed()+next_frame() with a pausing parser, two threads", decoder_threads),
    ):
        print(f"\n## two threads, {title}")
        for key, count in sorted(run().items()):
            print(f"  {key:<34} {count:>6}")
    print("\n## re-entry from a callback (the calls of the re-entry tests)")
    for key, count in sorted(reentry().items()):
        print(f"  {key:<34} {count:>6}")


if __name__ == "__main__":
    main()
