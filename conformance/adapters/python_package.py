"""The conformance suite's adapter for the Python package ``dendro_wire``
(README.md: the contract), through its public API only.

    python3 python_package.py < stream

The frames are ``dendro_wire.frames``'s, which apply the subscriber's
rules as they go; the end is ``dendro_wire.read``'s tally, or the
``DendroWireError`` the frames stopped at (its frame, offset and
sentence; the rule named from the sentence).
"""

import json
import os
import sys

import dendro_wire

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sentences import rule  # noqa: E402


def main() -> int:
    stream = sys.stdin.buffer.read()
    frames = []
    try:
        for frame in dendro_wire.frames(stream):
            frames.append(frame)
        end = {"end": "clean", "subscriber": True, "tally": dict(dendro_wire.read(stream).tally)}
    except dendro_wire.DendroWireError as e:
        end = {
            "end": "refused",
            "subscriber": True,
            "rule": rule(str(e)),
            "frame": e.frame,
            "offset": e.offset,
            "message": str(e),
        }
    for line in frames + [end]:
        print(json.dumps(line))
    return 0


if __name__ == "__main__":
    sys.exit(main())
