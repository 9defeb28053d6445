"""The conformance suite's adapter for the Rust tool (README.md: the
contract).

    python3 dendro_wire_tool.py PATH/TO/dendro-wire < stream

The frames are ``dendro-wire dump --json``'s; the end is
``dendro-wire check --json``'s: its tally, or the frame, offset and
sentence of its refusal. ``dump`` does not apply the subscriber's rules
and ``check`` does, so on a refusal only the frames before the refused
one are printed.
"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sentences import rule  # noqa: E402


def main() -> int:
    tool = sys.argv[1]
    stream = sys.stdin.buffer.read()
    dumped = subprocess.run([tool, "dump", "--json", "-"], input=stream, capture_output=True)
    frames = [json.loads(line) for line in dumped.stdout.decode().splitlines() if line]
    checked = subprocess.run([tool, "check", "--json", "-"], input=stream, capture_output=True)
    lines = checked.stdout.decode().splitlines()
    if len(lines) != 1:
        sys.stderr.write(f"check --json printed {lines!r}: {checked.stderr.decode()}")
        return 2
    result = json.loads(lines[0])
    if "error" in result:
        end = {
            "end": "refused",
            "subscriber": True,
            "rule": rule(result["error"]),
            "frame": result["frame"],
            "offset": result["offset"],
            "message": result["error"],
        }
        frames = frames[: max(result["frame"] - 1, 0)]
    else:
        end = {"end": "clean", "subscriber": True, "tally": result}
    for line in frames + [end]:
        print(json.dumps(line))
    return 0


if __name__ == "__main__":
    sys.exit(main())
