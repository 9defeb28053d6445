"""dendro replication streams from Python.

A stream (a capture file, its bytes, a file object or a socket) is read as
``dendro-wire check`` reads it: every rule of the protocol checked, the
subscriber's rules applied, rows that rule 9 skips left out. Its rows come
back as columns, one set per source: numpy arrays of ``ts`` and
``wall_offset``, each row's stream as a number into ``names``, and the
rows' bytes as one buffer with offsets; or an Arrow table, a pandas frame
or a polars frame over the same memory. A stream that breaks a rule raises
:class:`BrokenRuleError`, one cut inside a frame :class:`CutStreamError`
(both :class:`DendroWireError`, a ``ValueError``), with the tool's own
sentence.

    >>> import dendro_wire
    >>> stream = dendro_wire.read("capture.dwr")
    >>> stream.tally["rows_applied"]
    >>> cpu = stream.rows(0)          # source 0's rows, or rows("cpu") by label
    >>> df = cpu.to_pandas()
"""

import io
import json
import os
import socket
from typing import IO, Any, Callable, Dict, Iterator, List, Mapping, NamedTuple, Optional, Tuple, TypeVar, Union

from . import _native
from ._errors import BrokenRuleError, CutStreamError, DendroWireError
from ._rows import Rows

__all__ = [
    "BrokenRuleError",
    "Cut",
    "CutStreamError",
    "Batches",
    "DendroWireError",
    "Rows",
    "Source",
    "Stream",
    "StreamSource",
    "frames",
    "iter_batches",
    "read",
]

__version__: str = _native.version()

#: What a stream is read from: a path, its bytes (``bytes``, ``bytearray``,
#: ``memoryview``), a binary file object (anything with ``read(n)``) or a
#: socket.
StreamSource = Union[
    str, "os.PathLike[str]", "os.PathLike[bytes]", bytes, bytearray, memoryview, IO[bytes], socket.socket
]

#: A source of a stream: its number, the value of its ``source`` label
#: (``"cpu"``), or labels it has (``{"host": "db1", "source": "cpu"}``).
Source = Union[int, str, Mapping[str, str]]


class Cut(NamedTuple):
    """Where a stream read with ``cut_ok`` ended inside a frame: the frame's
    number (from 1), the stream offset it starts at, and the bytes of it
    that arrived (``check --cut-ok``'s ``cut_bytes``)."""

    frame: int
    offset: int
    bytes: int


class _Pieces:
    """A buffer read in pieces, as a file object is: a ``bytearray`` or a
    ``memoryview`` is read through it rather than copied whole."""

    def __init__(self, view: memoryview) -> None:
        self._view = view.cast("B")
        self._at = 0

    def read(self, n: int) -> bytes:
        piece = self._view[self._at : self._at + n].tobytes()
        self._at += len(piece)
        return piece

    def left(self) -> int:
        return len(self._view) - self._at


def _native_source(source: object, whole: bool) -> Tuple[object, Optional[str]]:
    """What ``_native`` reads, and the method it reads it through (None for
    a path, or for bytes read ``whole``, where they lie)."""
    if isinstance(source, bytes):
        return (source, None) if whole else (io.BytesIO(source), "read")
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        return (os.fsdecode(path) if isinstance(path, bytes) else path), None
    if isinstance(source, (bytearray, memoryview)):
        view = memoryview(source)
        if not view.c_contiguous:
            raise TypeError("a memoryview of a stream must be contiguous")
        return _Pieces(view), "read"
    if isinstance(source, io.TextIOBase):
        raise TypeError("a stream is bytes: open its file in binary mode ('rb')")
    if callable(getattr(source, "read", None)):
        return source, "read"
    if isinstance(source, socket.socket):
        return source, "recv"
    raise TypeError(
        "a stream is read from a path (str or os.PathLike), its bytes (bytes, bytearray, "
        f"memoryview), a binary file object or a socket; not from {type(source).__name__}"
    )


def _left(file: object) -> int:
    """The bytes a file object has left to read, if it is a file; 0 if
    unknown (columns are then grown as rows come)."""
    if isinstance(file, _Pieces):
        return file.left()
    fileno, tell = getattr(file, "fileno", None), getattr(file, "tell", None)
    if not (callable(fileno) and callable(tell)):
        return 0
    try:
        left = os.fstat(fileno()).st_size - tell()
    except (OSError, ValueError, TypeError):
        return 0
    return max(int(left), 0)


_Opened = TypeVar("_Opened")


def _opened(source: object, whole: bool, call: Callable[[object, Optional[str]], _Opened]) -> _Opened:
    """``call`` called with what ``_native`` reads ``source`` as, and the
    method it reads it through. Bytes that are no stream but name a file
    are a TypeError: a path given as bytes, which would otherwise be read
    as a stream's bytes."""
    native, method = _native_source(source, whole)
    try:
        return call(native, method)
    except DendroWireError as e:
        if isinstance(source, bytes) and e.frame == 0 and b"\0" not in source and len(source) < 4096:
            if os.path.exists(source):
                raise TypeError(
                    f"bytes are read as a stream's bytes, and {source!r} is none but names a file: "
                    "give a path as str or os.PathLike (os.fsdecode(path))"
                ) from None
        raise


class Stream:
    """A stream read whole, or one batch of it (:func:`iter_batches`): its
    counts, its sources, each source's rows, and where it was cut."""

    def __init__(self, native: Any) -> None:
        self._native = native
        self._rows: Dict[int, Rows] = {}
        self._sources: List[Dict[str, Any]] = [json.loads(h) for h in native.handshakes()]
        cut = native.cut()
        #: Where the stream ended inside a frame, read with ``cut_ok``; None
        #: if it ended at a frame's end.
        self.cut: Optional[Cut] = Cut(*cut) if cut is not None else None

    @property
    def tally(self) -> Dict[str, int]:
        """The counts ``dendro-wire check --json`` prints, by its names (of
        the stream so far, for a batch)."""
        counts: Dict[str, int] = self._native.tally()
        return counts

    @property
    def sources(self) -> List[Dict[str, Any]]:
        """Each source's handshake in the JSON Lines form, in the order the
        sources opened (``source`` is the number :meth:`rows` takes,
        ``labels`` the labels it matches)."""
        return self._sources

    def rows(self, source: Source) -> Rows:
        """A source's rows as columns: by its number, by the value of its
        ``source`` label, or by labels it has. An IndexError for a number
        no handshake opened, a KeyError for labels no source (or more than
        one) has."""
        number = self._number(source)
        if number not in self._rows:
            ts, wall, stream, offsets, data, names = self._native.take_columns(number)
            self._rows[number] = Rows(ts, wall, stream, names, offsets, data)
        return self._rows[number]

    def _number(self, source: Source) -> int:
        numbers = [s["source"] for s in self._sources]
        if isinstance(source, bool) or not isinstance(source, (int, str, Mapping)):
            raise TypeError(
                "a source is chosen by its number (int), its source label (str) or labels it has "
                f"(a mapping); not by {type(source).__name__}"
            )
        if isinstance(source, int):
            if source not in numbers:
                raise IndexError(f"no handshake opened source {source}: the stream's sources are {numbers}")
            return source
        wanted = {"source": source} if isinstance(source, str) else dict(source)
        found = [s["source"] for s in self._sources if wanted.items() <= s["labels"].items()]
        if len(found) != 1:
            which = "no source" if not found else f"sources {found}"
            raise KeyError(f"labels {wanted} are those of {which}; a source is chosen by the labels of one")
        number: int = found[0]
        return number


def read(source: StreamSource, *, cut_ok: bool = False) -> Stream:
    """Read a whole stream with every rule checked: a path, its bytes (read
    where they lie), a binary file object or a socket (read to its end).

    A stream that breaks a rule raises :class:`BrokenRuleError`, one cut
    inside a frame :class:`CutStreamError`, a file that cannot be read its
    ``OSError``. With ``cut_ok``, a stream cut inside a frame (not inside
    its preamble) is read up to that frame, as ``dendro-wire check
    --cut-ok`` reads it, and ``Stream.cut`` says where."""
    if not isinstance(cut_ok, bool):
        raise TypeError(f"cut_ok is a bool, not {type(cut_ok).__name__}")
    return Stream(_opened(source, True, lambda native, method: _native.read(native, cut_ok, method, _left(native))))


class Batches(Iterator[Stream]):
    """A stream read a batch at a time (:func:`iter_batches`). Each batch
    is a :class:`Stream` of the rows read since the last; ``cut`` says
    where the stream was cut, once it has ended under ``cut_ok``."""

    def __init__(self, native: Any) -> None:
        self._native = native

    def __iter__(self) -> "Batches":
        return self

    def __next__(self) -> Stream:
        batch = next(self._native)
        return Stream(batch)

    @property
    def cut(self) -> Optional[Cut]:
        cut = self._native.cut()
        return Cut(*cut) if cut is not None else None


def iter_batches(source: StreamSource, rows: int = 65536, *, cut_ok: bool = False) -> Batches:
    """Read a stream a batch of at least ``rows`` rows at a time (a frame's
    rows are never split between batches), in memory bounded by the batch:
    for captures larger than memory, and for live streams (a socket, a
    pipe). Each batch is a :class:`Stream` whose counts and sources are
    the stream's so far; errors are :func:`read`'s, raised when reached."""
    if isinstance(rows, bool) or not isinstance(rows, int):
        raise TypeError(f"rows is an int, not {type(rows).__name__}")
    if rows < 1:
        raise ValueError(f"a batch holds at least one row, not {rows}")
    if not isinstance(cut_ok, bool):
        raise TypeError(f"cut_ok is a bool, not {type(cut_ok).__name__}")
    return Batches(_opened(source, False, lambda native, method: _native.batches(native, rows, cut_ok, method)))


def frames(source: StreamSource) -> Iterator[Dict[str, Any]]:
    """Each frame of a stream as a dict in the JSON Lines form
    (``dendro-wire dump --json``: bytes as lowercase hex), after the
    subscriber's rules let it through; :func:`read`'s errors where the
    stream breaks one."""
    lines = _opened(source, False, _native.frames)
    return (json.loads(line) for line in lines)
