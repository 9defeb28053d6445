"""dendro replication streams from Python.

A stream (a capture file, or its bytes) is read as ``dendro-wire check``
reads it: every rule of the protocol checked, the subscriber's rules
applied, rows that rule 9 skips left out. Its rows come back as columns,
one set per source: numpy arrays of ``ts`` and ``wall_offset``, each row's
stream as a number into ``names``, and the rows' bytes as one buffer with
offsets (or an Arrow table, with pyarrow). A stream that breaks a rule
raises :class:`DendroWireError` with the tool's own sentence.

    >>> import dendro_wire
    >>> stream = dendro_wire.read("capture.dwr")
    >>> stream.tally["rows_applied"]
    >>> cpu = stream.rows(0)          # source 0's rows
    >>> cpu.ts, cpu.row(0)
"""

import json
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional

import numpy as np

from . import _native

__all__ = ["DendroWireError", "Rows", "Stream", "frames", "read"]


class DendroWireError(Exception):
    """A stream that broke a rule, in the words ``dendro-wire`` says it in.

    ``str(error)`` is the sentence ``dendro-wire check`` prints (with where:
    ``"frame 3 (stream byte 141): ..."``); ``frame`` is the frame's number
    from 1 (0 for the preamble) and ``offset`` the stream offset it starts
    at, each None when the failure was at no place in the stream (a file
    that cannot be opened).
    """

    def __init__(self, message: str, frame: Optional[int] = None, offset: Optional[int] = None):
        super().__init__(message)
        self.frame = frame
        self.offset = offset


@dataclass(frozen=True)
class Rows:
    """One source's rows as columns, in the order they were observed.

    Row ``i`` is ``ts[i]``, ``wall_offset[i]``, stream ``names[stream[i]]``
    and bytes ``data[offsets[i]:offsets[i + 1]]`` (``data`` is an array of
    uint8). Every array is the memory the reader built it in, handed to
    numpy without a copy.
    """

    ts: np.ndarray
    wall_offset: np.ndarray
    stream: np.ndarray
    names: List[str]
    offsets: np.ndarray
    data: np.ndarray

    def __len__(self) -> int:
        return len(self.ts)

    def row(self, i: int) -> bytes:
        """Row ``i``'s bytes."""
        return self.data[self.offsets[i]:self.offsets[i + 1]].tobytes()

    def streams(self) -> np.ndarray:
        """Each row's stream name (an array of str, one per row)."""
        return np.asarray(self.names, dtype=object)[self.stream]

    def to_dict(self) -> Dict[str, object]:
        """The columns by name, each row's stream and bytes as objects:
        what ``pandas.DataFrame`` takes."""
        return {
            "ts": self.ts,
            "wall_offset": self.wall_offset,
            "stream": self.streams(),
            "row": [self.row(i) for i in range(len(self))],
        }

    def to_arrow(self):
        """An Arrow table (pyarrow): ``ts``, ``wall_offset``, ``stream`` as
        a dictionary over the names, ``row`` as large binary over the one
        buffer; no row is copied."""
        try:
            import pyarrow as pa
        except ImportError as e:
            raise ImportError("Rows.to_arrow needs pyarrow: pip install dendro-wire[arrow]") from e
        n = len(self)
        rows = pa.LargeBinaryArray.from_buffers(
            pa.large_binary(), n, [None, pa.py_buffer(self.offsets), pa.py_buffer(self.data)]
        )
        stream = pa.DictionaryArray.from_arrays(pa.array(self.stream, pa.uint32()), pa.array(self.names, pa.string()))
        return pa.table({"ts": self.ts, "wall_offset": self.wall_offset, "stream": stream, "row": rows})


class Stream:
    """A stream read whole: its counts, its sources, each source's rows."""

    def __init__(self, native):
        self._native = native
        self._rows: Dict[int, Rows] = {}

    @property
    def tally(self) -> Dict[str, int]:
        """The counts ``dendro-wire check --json`` prints, by its names."""
        return self._native.tally()

    @property
    def sources(self) -> List[dict]:
        """Each source's handshake in the JSON Lines form, in the order
        the sources opened (``source`` is the ordinal ``rows`` takes)."""
        return [json.loads(h) for h in self._native.handshakes()]

    def rows(self, source: int) -> Rows:
        """Source ``source``'s rows as columns (none if it has none)."""
        if source not in self._rows:
            ts, wall, stream, offsets, data, names = self._native.take_columns(source)
            self._rows[source] = Rows(ts, wall, stream, names, offsets, data)
        return self._rows[source]


def read(source) -> Stream:
    """Read a whole stream, a path (str or os.PathLike) or its bytes, with
    every rule checked; raise :class:`DendroWireError` at the first it
    breaks (a stream cut inside a frame too)."""
    try:
        return Stream(_native.read(source))
    except _native.Error as e:
        raise DendroWireError(*e.args) from None


def frames(source) -> Iterator[dict]:
    """Each frame of a stream, a path or its bytes, as a dict in the JSON
    Lines form (``dendro-wire dump --json``: bytes as lowercase hex), after
    the subscriber's rules let it through; raise :class:`DendroWireError`
    where the stream breaks one."""
    try:
        for line in _native.frames(source):
            yield json.loads(line)
    except _native.Error as e:
        raise DendroWireError(*e.args) from None
