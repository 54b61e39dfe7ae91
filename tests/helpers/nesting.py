"""Scopes that nest as a test says: depths in pre-order, and a track of a frame built from them.

:func:`track_scopes` makes a track from its four columns given as plain lists.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from codec.profiler import TrackScopes


def track_scopes(
    track_ref: int,
    ids: Sequence[int],
    starts: Sequence[int],
    durations: Sequence[int],
    depths: Sequence[int],
) -> TrackScopes:
    """A track of scopes from its columns, each converted to the dtype a track stores."""
    return TrackScopes(
        track_ref,
        np.array(ids, dtype=np.uint32),
        np.array(starts, dtype=np.int64),
        np.array(durations, dtype=np.int64),
        np.array(depths, dtype=np.uint8),
    )


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
    return track_scopes(track_ref, ids, starts, durations, depths)


def pre_order(raw: list[int]) -> list[int]:
    """Clamp any list into a valid pre-order: first 0, each step up by at most 1."""
    depths: list[int] = []
    for value in raw:
        depths.append(min(value, depths[-1] + 1 if depths else 0))
    return depths
