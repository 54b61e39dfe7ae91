"""Profiler captures as Arrow tables, for DuckDB, Polars or pandas to query.

Strategy: a capture is read once with :func:`~codec.profiler.read_capture`,
and every frame's track columns, numpy arrays already, become columns of
Arrow record batches with no Python object per scope: concatenated, with a
few columns computed alongside (each scope's self time from its pre-order
depths, its frame, track and session, its name as a dictionary column whose
dictionary is the session's scope names). :func:`scope_batches` streams the
scopes a batch at a time, so a capture of any size is queried in the
memory of a batch (DuckDB reads a ``RecordBatchReader`` as it goes);
:func:`capture_tables` keeps everything, with three small tables beside:

* ``scopes``: one row per recorded scope: ``session``, ``frame``, ``track``,
  ``scope_id``, ``name`` (dictionary), ``start_ns``, ``duration_ns``,
  ``self_ns`` (its duration less its direct children's) and ``depth``;
* ``frames``: ``session``, ``frame``, ``start_ns``, ``duration_ns``, ``scopes``;
* ``threads``: one row per track of each session: ``session``, ``track``,
  ``name``, ``kind``, ``os_thread_id``;
* ``scope_defs``: ``session``, ``scope_id``, ``name``, ``kind``,
  ``function``, ``file``, ``line``.

Sessions are numbered from 1 in the order the capture first shows them; a
batch holds one session's scopes. pyarrow is an optional dependency
(``pip install codec[arrow]``), imported when these functions are called.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from codec.profiler.analysis import self_times
from codec.profiler.capture import read_capture
from codec.profiler.model import Frame, Registry

if TYPE_CHECKING:
    import pyarrow

__all__ = ["CaptureTables", "capture_tables", "scope_batches"]

#: Scopes gathered before a batch of :func:`scope_batches` is made.
DEFAULT_BATCH_ROWS = 1 << 20


@dataclass(frozen=True)
class CaptureTables:
    """The tables of a capture (see the module's docstring for their columns)."""

    scopes: pyarrow.Table
    frames: pyarrow.Table
    threads: pyarrow.Table
    scope_defs: pyarrow.Table


def _arrow() -> Any:
    try:
        import pyarrow
    except ImportError:
        raise ImportError("codec.profiler.tables needs pyarrow: pip install codec[arrow]") from None
    return pyarrow


def _scope_schema(pa: Any) -> Any:
    return pa.schema(
        [
            ("session", pa.uint32()),
            ("frame", pa.uint64()),
            ("track", pa.uint32()),
            ("scope_id", pa.uint32()),
            ("name", pa.dictionary(pa.int32(), pa.string())),
            ("start_ns", pa.int64()),
            ("duration_ns", pa.int64()),
            ("self_ns", pa.int64()),
            ("depth", pa.uint8()),
        ]
    )


class _Reader:
    """One pass over a capture: its scopes as batches, its frames and sessions noted."""

    def __init__(self, data: bytes, batch_rows: int) -> None:
        self.pa = _arrow()
        self.schema = _scope_schema(self.pa)
        self._data = data
        self._batch_rows = batch_rows
        self.frames: list[tuple[int, int, int, int, int]] = []
        self.registries: dict[int, Registry] = {}  # session number -> its last registry
        self._sessions: dict[int | None, int] = {}  # session id -> number
        self._pending: list[Frame] = []  # of the current session
        self._rows = 0

    def batches(self) -> Iterator[Any]:
        """The scopes as record batches of about ``batch_rows`` rows, one session each."""
        current = 0
        for receiver, item in read_capture(self._data):
            if not isinstance(item, Frame):
                continue
            key = None if receiver.session is None else receiver.session.session_id
            session = self._sessions.setdefault(key, len(self._sessions) + 1)
            self.registries[session] = receiver.registry
            if session != current and self._pending:
                yield self._batch(current)
            current = session
            self.frames.append(
                (session, item.index, item.start_ns, item.duration_ns, item.num_scopes)
            )
            self._pending.append(item)
            self._rows += item.num_scopes
            if self._rows >= self._batch_rows:
                yield self._batch(current)
        if self._pending:
            yield self._batch(current)

    def _batch(self, session: int) -> Any:
        """The pending frames' scopes, as one record batch of ``session``."""
        pa = self.pa
        registry = self.registries[session]
        columns: dict[str, list[Any]] = {name: [] for name in self.schema.names}
        for frame in self._pending:
            for track in frame.tracks:
                count = len(track)
                if not count:
                    continue
                ids = np.asarray(track.scope_id, dtype=np.uint32)  # each defined: the receiver's
                columns["frame"].append(np.full(count, frame.index, dtype=np.uint64))
                columns["track"].append(np.full(count, track.track_ref, dtype=np.uint32))
                columns["scope_id"].append(ids)
                columns["name"].append(ids.astype(np.int32) - 1)
                columns["start_ns"].append(np.asarray(track.start_ns, dtype=np.int64))
                columns["duration_ns"].append(np.asarray(track.duration_ns, dtype=np.int64))
                columns["self_ns"].append(self_times(track))
                columns["depth"].append(np.asarray(track.depth, dtype=np.uint8))
        self._pending = []
        self._rows = 0
        rows = sum(len(part) for part in columns["frame"])
        arrays = []
        for field in self.schema:
            parts = columns[field.name]
            if field.name == "session":
                arrays.append(pa.array(np.full(rows, session, dtype=np.uint32)))
            elif field.name == "name":
                names = pa.array([scope.name for scope in registry.scopes], pa.string())
                indices = np.concatenate(parts) if parts else np.zeros(0, np.int32)
                arrays.append(pa.DictionaryArray.from_arrays(pa.array(indices), names))
            else:
                empty = np.zeros(0, field.type.to_pandas_dtype())
                arrays.append(pa.array(np.concatenate(parts) if parts else empty, field.type))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def frames_table(self) -> Any:
        return _table(self.pa, self.frames, _FRAME_COLUMNS)

    def threads_table(self) -> Any:
        rows = [
            (session, t.track_ref, t.name, t.kind.name, t.os_thread_id)
            for session, registry in self.registries.items()
            for t in registry.tracks
        ]
        return _table(self.pa, rows, _THREAD_COLUMNS)

    def scope_defs_table(self) -> Any:
        rows = [
            (session, s.scope_id, s.name, s.kind.name, s.function, s.file, s.line)
            for session, registry in self.registries.items()
            for s in registry.scopes
        ]
        return _table(self.pa, rows, _SCOPE_DEF_COLUMNS)


# The small tables' columns: (name, pyarrow type's name), in row order.
_FRAME_COLUMNS = (
    ("session", "uint32"), ("frame", "uint64"), ("start_ns", "int64"),
    ("duration_ns", "int64"), ("scopes", "uint32"),
)  # fmt: skip
_THREAD_COLUMNS = (
    ("session", "uint32"), ("track", "uint32"), ("name", "string"), ("kind", "string"),
    ("os_thread_id", "int64"),
)  # fmt: skip
_SCOPE_DEF_COLUMNS = (
    ("session", "uint32"), ("scope_id", "uint32"), ("name", "string"), ("kind", "string"),
    ("function", "string"), ("file", "string"), ("line", "uint32"),
)  # fmt: skip


def _table(pa: Any, rows: list[tuple[Any, ...]], columns: tuple[tuple[str, str], ...]) -> Any:
    """A table of ``rows``, a column per item of ``columns`` (its name and type)."""
    values = list(zip(*rows, strict=True)) if rows else [()] * len(columns)
    return pa.table(
        {
            name: pa.array(column, getattr(pa, kind)())
            for (name, kind), column in zip(columns, values, strict=True)
        }
    )


def scope_batches(
    data: bytes, *, batch_rows: int = DEFAULT_BATCH_ROWS
) -> pyarrow.RecordBatchReader:
    """The scopes of a capture as a stream of record batches, read as they are consumed.

    A batch holds the scopes of whole frames of one session, about
    ``batch_rows`` of them (more when one frame has more). The frames are
    those :func:`~codec.profiler.read_capture` yields: a damaged packet is
    left out, and reading resumes at the next keyframe.
    """
    if batch_rows < 1:
        raise ValueError(f"batch_rows must be positive, got {batch_rows}")
    reader = _Reader(data, batch_rows)
    return reader.pa.RecordBatchReader.from_batches(reader.schema, reader.batches())


def capture_tables(data: bytes, *, batch_rows: int = DEFAULT_BATCH_ROWS) -> CaptureTables:
    """Every table of a capture, in memory: its scopes (in batches of about ``batch_rows``),
    frames, threads and scope definitions."""
    if batch_rows < 1:
        raise ValueError(f"batch_rows must be positive, got {batch_rows}")
    reader = _Reader(data, batch_rows)
    scopes = reader.pa.Table.from_batches(list(reader.batches()), reader.schema)
    return CaptureTables(
        scopes, reader.frames_table(), reader.threads_table(), reader.scope_defs_table()
    )
