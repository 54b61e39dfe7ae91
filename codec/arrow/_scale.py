"""Scale-out readers: delimited files as the partitions of a Dask dataframe or the read
tasks of a Ray dataset.

Strategy: a delimited file cannot be split at an arbitrary offset (a frame's
prefix is found only by reading from the start), so a partition, or a read
task, is a file. Each worker reads its files with
:func:`codec.arrow.read_batches`, so the rows, the errors and the schema are
those of a single-process read; what a worker is sent holds only picklable
things (paths, options, the message type), so any scheduler can ship it.
"""

from __future__ import annotations

import functools
import glob
import os
from collections.abc import Iterable, Iterator
from typing import Any


def delimited_files(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[str]:
    """The files of ``paths``: a directory (its files), a glob pattern, a path, or a list of
    these, each expanded and sorted; a pattern or directory that finds nothing raises."""
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
        if not files:
            raise FileNotFoundError(f"no file matches {name!r}")
        found += files
    return found


class ReadFile:
    """Read one delimited file: into a pandas DataFrame of Arrow-backed columns (a Dask
    partition), or into Arrow tables a batch each (a Ray read task's blocks)."""

    def __init__(self, message_type: Any, options: dict[str, Any]) -> None:
        from codec.arrow import read_batches

        read_batches(b"", message_type, **options)  # checked at once, not on a worker
        self.message_type = message_type
        self.options = options

    def __call__(self, path: str) -> Any:
        import pandas

        from codec.arrow import read_table

        with open(path, "rb") as source:
            table = read_table(source, self.message_type, **self.options)
        return table.to_pandas(types_mapper=pandas.ArrowDtype)

    def blocks(self, path: str) -> Iterator[Any]:
        import pyarrow

        from codec.arrow import read_batches

        with open(path, "rb") as source:
            for batch in read_batches(source, self.message_type, **self.options):
                yield pyarrow.Table.from_batches([batch])


def read_dask(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    message_type: Any,
    **options: Any,
) -> Any:
    """A ``dask.dataframe.DataFrame`` of the messages in delimited files, a partition a file.

    ``paths`` is a directory, a glob pattern, a file or a list of them;
    ``options`` are :func:`codec.arrow.read_batches`'s. The columns are
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
    arrow_schema = schema(message_type, large_types=options.get("large_types", False))
    meta = arrow_schema.empty_table().to_pandas(types_mapper=pandas.ArrowDtype)
    return dask.dataframe.from_map(read, delimited_files(paths), meta=meta, label="codec-arrow")


def read_ray(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    message_type: Any,
    **options: Any,
) -> Any:
    """A ``ray.data.Dataset`` of the messages in delimited files: a read task a file, its
    blocks Arrow tables of up to ``batch_size`` rows.

    ``paths`` and ``options`` are as for :func:`read_dask`; so is the advice
    to pass a google.protobuf message class, which pickles by its module.
    """
    try:
        import ray.data
    except ImportError:
        raise ImportError("codec.arrow.read_ray needs ray: pip install codec[ray]") from None

    from codec.arrow import schema

    read = ReadFile(message_type, options)
    arrow_schema = schema(message_type, large_types=options.get("large_types", False))
    files = delimited_files(paths)
    return ray.data.read_datasource(_files_source(ray.data.Datasource)(files, read, arrow_schema))


@functools.cache
def _files_source(base: type) -> type:
    """The Ray datasource of delimited files (a subclass of ``base``, Ray's ``Datasource``,
    made once Ray is imported)."""
    from ray.data.block import BlockMetadata
    from ray.data.datasource import ReadTask

    class DelimitedFiles(base):  # type: ignore[misc]
        def __init__(self, files: list[str], read: ReadFile, arrow_schema: Any) -> None:
            self.files = files
            self.read = read
            self.arrow_schema = arrow_schema

        def get_name(self) -> str:
            return "codec.arrow"

        def estimate_inmemory_data_size(self) -> int:
            return sum(os.path.getsize(path) for path in self.files)

        def get_read_tasks(
            self, parallelism: int, per_task_row_limit: int | None = None, **_: Any
        ) -> list[Any]:
            return [
                ReadTask(
                    functools.partial(self.read.blocks, path),
                    BlockMetadata(
                        num_rows=None,
                        size_bytes=os.path.getsize(path),
                        exec_stats=None,
                        input_files=(path,),
                    ),
                    schema=self.arrow_schema,
                    per_task_row_limit=per_task_row_limit,
                )
                for path in self.files
            ]

    return DelimitedFiles
