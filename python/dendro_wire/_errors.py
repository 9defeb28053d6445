"""The exceptions a stream raises: one class a caller catches, and the two a
caller branches on. A file that cannot be opened or read raises Python's
own ``OSError`` subclass instead (``FileNotFoundError``, ``IsADirectoryError``,
``PermissionError``...)."""

from typing import Optional


class DendroWireError(ValueError):
    """A stream that broke a rule, in the words ``dendro-wire`` says it in.

    ``str(error)`` is the sentence ``dendro-wire check`` prints (with where:
    ``"frame 3 (stream byte 141): ..."``); ``frame`` is the frame's number
    from 1 (0 for the preamble) and ``offset`` the stream offset it starts
    at, each None when the failure was at no place in the stream.
    """

    frame: Optional[int]
    offset: Optional[int]

    def __init__(self, message: str, frame: Optional[int] = None, offset: Optional[int] = None) -> None:
        super().__init__(message)
        self.frame = frame
        self.offset = offset


class CutStreamError(DendroWireError):
    """The stream ended inside its preamble or a frame: a capture cut off,
    or a connection closed mid-frame. ``read(..., cut_ok=True)`` reads such
    a stream up to the frame it was cut inside."""


class BrokenRuleError(DendroWireError):
    """The preamble or a frame broke a rule of the protocol, or the
    subscriber's rules refused a frame (a source no handshake opened, one
    source too many...)."""
