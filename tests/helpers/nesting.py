"""Scopes that nest as a test says: depths in pre-order, and a track of a frame built from them."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from codec.profiler import TrackScopes


def nested_track(track_ref: int, ids: Sequence[int], depths: Sequence[int], start: int,
                 gaps: Sequence[int]) -> TrackScopes:  # fmt: skip
    """A track whose scopes nest as ``depths`` says, ``gaps`` (cycled) ns between events."""
    starts = [0] * len(depths)
    ends = [0] * len(depths)
    open_rows: list[int] = []
    now = start
    steps = itertools.cycle(gaps)

    def close() -> None:
        nonlocal now
        now += next(steps)
        ends[open_rows.pop()] = now

    for row, depth in enumerate(depths):
        while len(open_rows) > depth:
            close()
        now += next(steps)
        starts[row] = now
        open_rows.append(row)
    while open_rows:
        close()
    durations = [end - begin for begin, end in zip(starts, ends, strict=True)]
    return TrackScopes.from_sequences(track_ref, ids, starts, durations, depths)


def pre_order(raw: list[int]) -> list[int]:
    """Clamp any list into a valid pre-order: first 0, each step up by at most 1."""
    depths: list[int] = []
    for value in raw:
        depths.append(min(value, depths[-1] + 1 if depths else 0))
    return depths
