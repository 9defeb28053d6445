"""One route from a capture to a source's rows, timed and measured in a
process of its own: `python routes.py ROUTE PATH [WARM]` prints one JSON
line of the rows, the seconds and the peak memory the route added, over
the file's size (null where the kernel keeps no peak a process can
reset). What the process held before the route began is not counted: the
libraries, warmed by the route over the small capture WARM first (polars
starts its threads, pyarrow its pools), and, for `bytes`, the caller's
bytes of the file.

The memory tests and `cargo xtask bench-report` both run it.
"""

import json
import os
import sys
import time

import dendro_wire

ROUTES = {
    "numpy": lambda path: len(dendro_wire.read(path).rows(0)),
    "bytes": lambda data: len(dendro_wire.read(data).rows(0)),
    "file object": lambda file: len(dendro_wire.read(file).rows(0)),
    "to_arrow": lambda path: dendro_wire.read(path).rows(0).to_arrow().num_rows,
    "to_pandas": lambda path: len(dendro_wire.read(path).rows(0).to_pandas()),
    "to_polars": lambda path: len(dendro_wire.read(path).rows(0).to_polars()),
    "iter_batches": lambda path: sum(len(b.rows(0)) for b in dendro_wire.iter_batches(path)),
}

#: What each route needs imported before it is measured.
NEEDS = {"to_arrow": ["pyarrow"], "to_pandas": ["pandas", "pyarrow"], "to_polars": ["polars", "pyarrow"]}


def resident():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def reset_peak():
    """The peak from here on: a process's peak starts at its parent's
    (kept across exec), and imports raise it and give memory back. False
    where the kernel does not let it be reset."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


def peak():
    with open("/proc/self/status") as f:
        kib = next(line for line in f if line.startswith("VmHWM:")).split()[1]
    return int(kib) * 1024


def source(route, path):
    """What the route reads `path` as."""
    if route == "bytes":
        with open(path, "rb") as f:
            return f.read()
    return open(path, "rb") if route == "file object" else path


def measure(route, path, warm=None):
    for module in NEEDS.get(route, []):
        __import__(module)
    if warm is not None:
        ROUTES[route](source(route, warm))
    read = source(route, path)
    before = resident()
    measured = reset_peak()
    start = time.perf_counter()
    rows = ROUTES[route](read)
    seconds = time.perf_counter() - start
    added = (peak() - before) / os.path.getsize(path) if measured else None
    return {"route": route, "rows": rows, "seconds": seconds, "peak": added}


if __name__ == "__main__":
    print(json.dumps(measure(*sys.argv[1:4])))
