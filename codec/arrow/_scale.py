"""Scale-out readers: delimited files as the partitions of a distributed dataframe.

Strategy: a delimited file cannot be split at an arbitrary offset (a frame's
prefix is found only by reading from the start), so a partition is a file.
Each worker reads its files with :func:`codec.arrow.read_table`, so the rows,
the errors and the schema are those of a single-process read; the partition
function holds only picklable things (paths, options, the message type), so
any scheduler can ship it.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable
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
    """Read one delimited file into a pandas DataFrame of Arrow-backed columns (a partition)."""

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
