"""One source's rows as columns, and the same columns as an Arrow table, a
pandas frame or a polars frame, each built over the columns' own memory
with no Python object per row."""

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Dict, List, Optional

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    # pandas and pyarrow ship no types (pandas-stubs has pandas'): a
    # caller's mypy sees Any where they are not installed.
    import pandas  # type: ignore[import-untyped, unused-ignore]
    import polars
    import pyarrow  # type: ignore[import-untyped, unused-ignore]

__all__ = ["Rows"]


def _needs(module: str, extra: str, method: str) -> ModuleType:
    """``module`` imported, or an ImportError naming the extra that
    installs it (each extra is declared in pyproject.toml)."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(
            f"{method} needs {module}: pip install {module}, or install the package's wheel "
            f"with its extra dendro-wire[{extra}]"
        ) from e


@dataclass(frozen=True)
class Rows:
    """One source's rows as columns, in the order they were observed.

    Row ``i`` is ``ts[i]``, ``wall_offset[i]``, stream ``names[stream[i]]``
    and bytes ``data[offsets[i]:offsets[i + 1]]`` (``data`` is an array of
    uint8). Every array is the memory the reader built it in, handed to
    numpy without a copy.
    """

    ts: npt.NDArray[np.int64]
    wall_offset: npt.NDArray[np.int64]
    stream: npt.NDArray[np.uint32]
    names: List[str]
    offsets: npt.NDArray[np.int64]
    data: npt.NDArray[np.uint8]

    def __len__(self) -> int:
        return len(self.ts)

    def row(self, i: int) -> bytes:
        """Row ``i``'s bytes."""
        if not -len(self) <= i < len(self):
            raise IndexError(f"row {i} of {len(self)}")
        i %= len(self)
        return self.data[self.offsets[i] : self.offsets[i + 1]].tobytes()

    def streams(self) -> npt.NDArray[np.object_]:
        """Each row's stream name (an array of str, one per row)."""
        return np.asarray(self.names, dtype=object)[self.stream]

    def row_size(self, stream: Optional[str] = None) -> Optional[int]:
        """The one size every row has (of ``stream``, if named), or None if
        their sizes differ or there are none."""
        starts, sizes = self._of(stream)
        if len(sizes) == 0 or not (sizes == sizes[0]).all():
            return None
        return int(sizes[0])

    def fixed(self, stream: Optional[str] = None, dtype: "Optional[npt.DTypeLike]" = None) -> np.ndarray:
        """Rows of one size as an array: ``(rows, size)`` of uint8, or, with
        ``dtype`` (of that size: a number, or a structured dtype for a
        row's fields), one element a row, as ``np.frombuffer`` would read
        them. Every row of the source: a view of ``data``, no copy; the rows
        of one ``stream``: gathered into an array of their own. A
        ValueError if their sizes differ."""
        starts, sizes = self._of(stream)
        if len(sizes) == 0:
            return np.empty((0, 0), np.uint8) if dtype is None else np.empty(0, dtype)
        size = self.row_size(stream)
        if size is None:
            which = f"stream {stream!r}" if stream is not None else "this source"
            raise ValueError(f"the rows of {which} are not all of one size")
        if stream is None:
            rows = self.data.reshape(len(self), size)
        else:
            rows = self.data[starts[:, None] + np.arange(size)]
        if dtype is None:
            return rows
        dtype = np.dtype(dtype)
        if dtype.itemsize != size:
            raise ValueError(f"rows of {size} bytes are not {dtype} ({dtype.itemsize} bytes)")
        return np.ascontiguousarray(rows).view(dtype).reshape(len(rows))

    def _of(self, stream: Optional[str]) -> "tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]":
        """Where each row (of ``stream``, if named) starts in ``data``, and
        its size."""
        starts, ends = self.offsets[:-1], self.offsets[1:]
        if stream is not None:
            if not isinstance(stream, str):
                raise TypeError(f"a stream is named by a str, not {type(stream).__name__}")
            if stream not in self.names:
                raise KeyError(f"no row of this source is of stream {stream!r}: its streams are {self.names}")
            mine = self.stream == self.names.index(stream)
            starts, ends = starts[mine], ends[mine]
        return starts, ends - starts

    def to_dict(self) -> Dict[str, Any]:
        """The columns by name, each row's stream and bytes as a Python
        object (slow: prefer :meth:`to_pandas` or :meth:`to_arrow`)."""
        return {
            "ts": self.ts,
            "wall_offset": self.wall_offset,
            "stream": self.streams(),
            "row": [self.row(i) for i in range(len(self))],
        }

    def to_arrow(self) -> "pyarrow.Table":
        """An Arrow table (pyarrow): ``ts`` and ``wall_offset`` as int64,
        ``stream`` as a dictionary over the names, ``row`` as large binary
        over the one buffer; nothing is copied."""
        pa = _needs("pyarrow", "arrow", "Rows.to_arrow")
        columns = [self._arrow(pa, pa.int64(), self.ts), self._arrow(pa, pa.int64(), self.wall_offset),
                   self._arrow_streams(pa), self._arrow_rows(pa)]
        return pa.Table.from_arrays(columns, names=["ts", "wall_offset", "stream", "row"])

    def to_pandas(self) -> "pandas.DataFrame":
        """A pandas frame: ``ts`` and ``wall_offset`` as int64 (the arrays
        themselves), ``stream`` as a categorical over the names, ``row`` as
        Arrow binary (``pd.ArrowDtype(pa.large_binary())``) over the one
        buffer."""
        pd = _needs("pandas", "pandas", "Rows.to_pandas")
        pa = _needs("pyarrow", "pandas", "Rows.to_pandas")
        # The codes in the smallest integer that holds them, as pandas keeps
        # them: a copy of 1 to 4 bytes a row.
        codes = self.stream.astype(next(t for t in (np.int8, np.int16, np.int32) if len(self.names) <= np.iinfo(t).max))
        stream = pd.Categorical.from_codes(codes, categories=pd.Index(self.names, dtype=object))
        row = pd.arrays.ArrowExtensionArray(self._arrow_rows(pa))
        columns = {"ts": self.ts, "wall_offset": self.wall_offset, "stream": stream, "row": row}
        # copy=False: each array a column of its own, not copied into one
        # block.
        frame: "pandas.DataFrame" = pd.DataFrame(columns, copy=False)
        return frame

    def to_polars(self) -> "polars.DataFrame":
        """A polars frame, from :meth:`to_arrow`'s table: ``stream`` as a
        categorical, ``row`` as binary."""
        pl = _needs("polars", "polars", "Rows.to_polars")
        _needs("pyarrow", "polars", "Rows.to_polars")
        # A table makes a frame (a lone array would make a series).
        frame: "polars.DataFrame" = pl.from_arrow(self.to_arrow())
        return frame

    # Each Arrow array is made from its buffers: pyarrow's own conversion
    # of numpy arrays and lists looks for pandas, and imports it.

    def _arrow(self, pa: Any, type: Any, array: np.ndarray) -> "pyarrow.Array":
        return pa.Array.from_buffers(type, len(array), [None, pa.py_buffer(array)])

    def _arrow_rows(self, pa: Any) -> "pyarrow.LargeBinaryArray":
        return pa.Array.from_buffers(
            pa.large_binary(), len(self), [None, pa.py_buffer(self.offsets), pa.py_buffer(self.data)]
        )

    def _arrow_streams(self, pa: Any) -> "pyarrow.DictionaryArray":
        encoded = [name.encode() for name in self.names]
        ends = np.cumsum([0] + [len(name) for name in encoded], dtype=np.int32)
        names = pa.Array.from_buffers(
            pa.string(), len(encoded), [None, pa.py_buffer(ends), pa.py_buffer(b"".join(encoded))]
        )
        return pa.DictionaryArray.from_arrays(self._arrow(pa, pa.uint32(), self.stream), names, safe=False)
