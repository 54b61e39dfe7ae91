"""Scale-out readers: delimited files as the partitions of a Dask dataframe or the read
tasks of a Ray dataset.

Strategy: a delimited file cannot be split at an arbitrary offset (a frame's
prefix is found only by reading from the start), so a partition, or a read
task, is a file, or a part of one where an index written beside it
(:func:`write_index`) gives the offsets of its frames, one every so many.
Each worker reads its part with :func:`codec.arrow.read_batches`, from the
part's offset, so the rows, the errors (their offsets in the whole file)
and the schema are those of a single-process read; what a worker is sent
holds only picklable things (a path and its part, options, the message
type), so any scheduler can ship it.

An index is a small file: :data:`INDEX_SUFFIX`'s magic line, then varints:
its format's version, the size of the file it indexes (a file that has
changed since makes the index stale, an error), the number of parts, and
the offset of each part's first frame, each as its distance from the one
before.
"""

from __future__ import annotations

import functools
import glob
import io
import os
from collections.abc import Iterable, Iterator
from typing import Any

from codec._buffer import RECEIVE_CHUNK
from codec.arrow._schema import DEFAULT_BATCH_SIZE, schema_options
from codec.errors import DecodeError
from codec.framing import DEFAULT_MAX_FRAME_SIZE, FrameDecoder, checked_size
from codec.io import stream_reader
from codec.varint import decode as varint_decode
from codec.varint import encode as varint_encode
from codec.varint import size as varint_size

#: What an index's name adds to the name of the file it indexes.
INDEX_SUFFIX = ".codec-index"
_INDEX_MAGIC = b"codec-index\n"
_INDEX_VERSION = 1

Part = tuple[str, int, int]  # a file's path, and the offsets where its part starts and ends


def delimited_files(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[str]:
    """The files of ``paths``: a directory (its files), a glob pattern, a path, or a list of
    these, each expanded and sorted, but for indexes (named ``*.codec-index``); a pattern
    or directory that finds nothing raises."""
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    found: list[str] = []
    for entry in paths:
        name = os.fspath(entry)
        if os.path.isdir(name):
            files = sorted(
                os.path.join(name, child)
                for child in os.listdir(name)
                if os.path.isfile(os.path.join(name, child))
            )
        elif glob.has_magic(name):
            files = sorted(glob.glob(name))
        else:
            files = [name]
        files = [path for path in files if not path.endswith(INDEX_SUFFIX)]
        if not files:
            raise FileNotFoundError(f"no file matches {name!r}")
        found += files
    return found


def write_index(
    path: str | os.PathLike[str],
    *,
    every: int = DEFAULT_BATCH_SIZE,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
) -> str:
    """Index a delimited file, so that :func:`read_dask` and :func:`read_ray` read it as
    parts of ``every`` frames, in parallel; return the index's path.

    The index is written beside the file, its name the file's and
    :data:`INDEX_SUFFIX`; it holds the offset of every ``every``-th frame.
    The frames' prefixes are checked as a :class:`codec.FrameDecoder` checks
    them (``max_frame_size``), so a bad file raises its error, and a file
    changed since it was indexed makes the readers raise.
    """
    name = os.fspath(path)
    frames = checked_size("every", every, 1)
    decoder = FrameDecoder(max_frame_size, copy=True)
    starts = [0]
    offset = count = 0
    with open(name, "rb") as source:
        size = os.fstat(source.fileno()).st_size
        read = stream_reader(source)
        while True:
            with decoder.get_buffer(RECEIVE_CHUNK) as room:
                received = read(room)
            if not received:
                decoder.feed_eof()
                break
            decoder.buffer_updated(received)
            for frame in decoder:
                if count == frames:
                    starts.append(offset)
                    count = 0
                offset += varint_size(len(frame)) + len(frame)
                count += 1
    deltas = [later - earlier for earlier, later in zip([0, *starts[:-1]], starts, strict=True)]
    index = name + INDEX_SUFFIX
    with open(index, "wb") as sink:
        sink.write(_INDEX_MAGIC)
        for number in (_INDEX_VERSION, size, len(starts), *deltas):
            sink.write(varint_encode(number))
    return index


def delimited_parts(files: list[str]) -> list[Part]:
    """Each file whole, or in the parts its index gives: ``(path, start, end)``."""
    parts: list[Part] = []
    for path in files:
        size = os.path.getsize(path)
        index = path + INDEX_SUFFIX
        if not os.path.exists(index):
            parts.append((path, 0, size))
            continue
        starts = _read_index(index, size)
        parts += [
            (path, start, end) for start, end in zip(starts, [*starts[1:], size], strict=True)
        ]
    return parts


def _read_index(index: str, size: int) -> list[int]:
    """The offsets of the parts' first frames, from the index of a file of ``size`` bytes."""
    with open(index, "rb") as source:
        data = source.read()
    if not data.startswith(_INDEX_MAGIC):
        raise DecodeError(f"{index} is not an index written by codec.arrow.write_index", 0)
    pos = len(_INDEX_MAGIC)
    numbers = []
    try:
        for _ in range(3):
            number, pos = varint_decode(data, pos)
            numbers.append(number)
        version, indexed, count = numbers
        if version != _INDEX_VERSION:
            raise DecodeError(f"version {version} of the index format is unknown", 0)
        if indexed != size:
            raise ValueError(
                f"{index} is stale: it indexes a file of {indexed} bytes, which now has {size};"
                " write it again (codec.arrow.write_index)"
            )
        starts = []
        start = 0
        for _ in range(count):
            delta, pos = varint_decode(data, pos)
            start += delta
            starts.append(start)
    except DecodeError as error:
        raise DecodeError(f"{index}: {error.message}", error.offset) from None
    if pos != len(data) or not starts or starts[0] != 0 or starts != sorted(starts):
        raise DecodeError(f"{index}: its offsets are not those of a file's parts", pos)
    if starts[-1] > size:
        raise DecodeError(f"{index}: a part starts past the end of the file", pos)
    return starts


class _Part(io.RawIOBase):
    """The bytes of a file from ``start`` to ``end``, read as a stream of their own."""

    def __init__(self, source: Any, start: int, end: int) -> None:
        if not 0 <= start <= end:
            raise ValueError(f"a part of a file from {start} to {end}")
        source.seek(start)
        self._source = source
        self._left = end - start

    def readable(self) -> bool:
        return True

    def readinto(self, room: Any) -> int:
        with memoryview(room) as view:
            got = self._source.readinto(view[: min(len(view), self._left)])
        self._left -= got
        return got  # type: ignore[no-any-return]


class ReadFile:
    """Read a part of a delimited file: into a pandas DataFrame of Arrow-backed columns (a
    Dask partition), or into Arrow tables a batch each (a Ray read task's blocks)."""

    def __init__(self, message_type: Any, options: dict[str, Any]) -> None:
        from codec.arrow import read_batches

        read_batches(b"", message_type, **options)  # checked at once, not on a worker
        self.message_type = message_type
        self.options = options

    def __call__(self, part: Part) -> Any:
        import pandas
        import pyarrow

        from codec.arrow import schema

        arrow_schema = schema(self.message_type, **schema_options(self.options))
        table = pyarrow.Table.from_batches(list(self._batches(part)), schema=arrow_schema)
        return table.to_pandas(types_mapper=pandas.ArrowDtype)

    def blocks(self, part: Part) -> Iterator[Any]:
        import pyarrow

        for batch in self._batches(part):
            yield pyarrow.Table.from_batches([batch])

    def _batches(self, part: Part) -> Iterator[Any]:
        from codec.arrow import read_batches

        path, start, end = part
        with open(path, "rb") as source:
            stream = _Part(source, start, end)
            yield from read_batches(stream, self.message_type, offset=start, **self.options)


def read_dask(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    message_type: Any,
    **options: Any,
) -> Any:
    """A ``dask.dataframe.DataFrame`` of the messages in delimited files, a partition a file,
    or a part of one where it has an index (:func:`write_index`).

    ``paths`` is a directory, a glob pattern, a file or a list of them (an
    index is not read as a file of frames); ``options`` are
    :func:`codec.arrow.read_batches`'s. The columns are
    pandas' Arrow-backed types, as the Arrow schema maps them. For a cluster
    of processes, pass a google.protobuf message class, which pickles by
    its module, rather than a struct class made at run time.
    """
    try:
        import dask.dataframe
        import pandas
    except ImportError:
        raise ImportError("codec.arrow.read_dask needs dask: pip install dask[dataframe]") from None

    from codec.arrow import schema

    read = ReadFile(message_type, options)
    arrow_schema = schema(message_type, **schema_options(options))
    meta = arrow_schema.empty_table().to_pandas(types_mapper=pandas.ArrowDtype)
    parts = delimited_parts(delimited_files(paths))
    return dask.dataframe.from_map(read, parts, meta=meta, label="codec-arrow")


def read_ray(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    message_type: Any,
    **options: Any,
) -> Any:
    """A ``ray.data.Dataset`` of the messages in delimited files: a read task a file, or a
    part of one where it has an index (:func:`write_index`), its blocks Arrow tables of up
    to ``batch_size`` rows.

    ``paths`` and ``options`` are as for :func:`read_dask`; so is the advice
    to pass a google.protobuf message class, which pickles by its module.
    """
    try:
        import ray.data
    except ImportError:
        raise ImportError("codec.arrow.read_ray needs ray: pip install codec[ray]") from None

    from codec.arrow import schema

    read = ReadFile(message_type, options)
    arrow_schema = schema(message_type, **schema_options(options))
    parts = delimited_parts(delimited_files(paths))
    return ray.data.read_datasource(_files_source(ray.data.Datasource)(parts, read, arrow_schema))


@functools.cache
def _files_source(base: type) -> type:
    """The Ray datasource of delimited files (a subclass of ``base``, Ray's ``Datasource``,
    made once Ray is imported)."""
    from ray.data.block import BlockMetadata
    from ray.data.datasource import ReadTask

    class DelimitedFiles(base):  # type: ignore[misc]
        def __init__(self, parts: list[Part], read: ReadFile, arrow_schema: Any) -> None:
            self.parts = parts
            self.read = read
            self.arrow_schema = arrow_schema

        def get_name(self) -> str:
            return "codec.arrow"

        def estimate_inmemory_data_size(self) -> int:
            return sum(end - start for _, start, end in self.parts)

        def get_read_tasks(
            self, parallelism: int, per_task_row_limit: int | None = None, **_: Any
        ) -> list[Any]:
            return [
                ReadTask(
                    functools.partial(self.read.blocks, part),
                    BlockMetadata(
                        num_rows=None,
                        size_bytes=part[2] - part[1],
                        exec_stats=None,
                        input_files=(part[0],),
                    ),
                    schema=self.arrow_schema,
                    per_task_row_limit=per_task_row_limit,
                )
                for part in self.parts
            ]

    return DelimitedFiles
