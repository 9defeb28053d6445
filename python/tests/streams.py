"""What the tests share: the tool and the repository, streams made by the
tool from frames in the JSON Lines form, and its verdict on them.

`cargo xtask python` runs the tests with DENDRO_WIRE (the tool) and
DENDRO_WIRE_ROOT (the repository) set.
"""

import json
import os
import subprocess
from pathlib import Path

TOOL = os.environ["DENDRO_WIRE"]
ROOT = Path(os.environ["DENDRO_WIRE_ROOT"])
SAMPLE = ROOT / "testdata" / "sample.dwr"


def tool(*args, stdin=None):
    return subprocess.run([TOOL, *args], input=stdin, capture_output=True, check=False)


def check(path):
    """`check --json`'s one line, as a dict."""
    return json.loads(tool("check", "--json", str(path)).stdout)


def encode(tmp_path, frames, name="stream.dwr"):
    """A stream from frames in the JSON Lines form (any iterable), by the
    tool."""
    path = tmp_path / name
    with subprocess.Popen([TOOL, "encode", "-", "-o", str(path)], stdin=subprocess.PIPE) as encoder:
        for frame in frames:
            encoder.stdin.write((json.dumps(frame) + "\n").encode())
        encoder.stdin.close()
        assert encoder.wait() == 0
    return path


def handshake(source):
    return {"frame": "handshake", "source": source, "uuid": None, "labels": {"n": str(source)},
            "metadata": {}, "clock_anchor_wall_ns": 0, "complete": False}


def rows(source, seq, state, rows):
    return {"frame": "rows", "source": source, "seq": seq, "index_state": state, "rows": [
        {"stream": s, "ts": ts, "wall_offset": -ts, "row": row.hex()} for s, ts, row in rows]}


def full(source, state):
    return {"frame": "index", "source": source, "stream": "slots", "ts": 0, "kind": "full",
            "state": state, "blob": ""}


def agent_capture(tmp_path, frames, name="agent.dwr"):
    """A capture shaped like an agent's: one source labelled `agent`, frames
    of 64 rows of 32 bytes over four streams."""
    streams = ["cpu/usage", "cpu/irq", "mem/used", "net/rx_bytes"]

    def each():
        yield {**handshake(0), "labels": {"source": "agent"}}
        for f in range(frames):
            batch = [(streams[i % 4], f * 64 + i, (f * 64 + i).to_bytes(8, "little") + bytes(24)) for i in range(64)]
            yield rows(0, f, [0, 0], batch)

    return encode(tmp_path, each(), name)
