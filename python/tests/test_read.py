"""The installed dendro_wire package against the tool: the same counts,
frames and sentences as `dendro-wire check --json` and `dump --json`, the
rows the subscriber's rules apply and no others, as columns.

`cargo xtask python` runs these with DENDRO_WIRE (the tool) and
DENDRO_WIRE_ROOT (the repository) set.
"""

import json
import re

import numpy as np
import pytest

import dendro_wire
from streams import ROOT, SAMPLE, check, encode, full, handshake, rows, tool

def test_the_counts_are_checks():
    assert dendro_wire.read(SAMPLE).tally == check(SAMPLE)


def test_a_path_and_its_bytes_read_alike():
    by_path, by_bytes = dendro_wire.read(SAMPLE), dendro_wire.read(SAMPLE.read_bytes())
    assert by_path.tally == by_bytes.tally
    assert by_path.sources == by_bytes.sources
    for source in (0, 1):
        a, b = by_path.rows(source), by_bytes.rows(source)
        assert a.names == b.names
        for column in ("ts", "wall_offset", "stream", "offsets", "data"):
            assert np.array_equal(getattr(a, column), getattr(b, column))
    by_array = dendro_wire.read(bytearray(SAMPLE.read_bytes()))
    assert by_array.tally == by_path.tally


def test_frames_are_dumps():
    dumped = [json.loads(line) for line in tool("dump", "--json", str(SAMPLE)).stdout.splitlines()]
    assert list(dendro_wire.frames(SAMPLE)) == dumped
    assert list(dendro_wire.frames(SAMPLE.read_bytes())) == dumped


def test_columns_hold_the_rows_the_rules_apply_and_no_others(tmp_path):
    # Source 0 keeps an index: rows before its first Full are skipped
    # (rule 9), so are rows built against another state. Source 1 keeps
    # none: every row applies.
    a, b = [1, 2], [3, 4]
    path = encode(tmp_path, [
        handshake(0), handshake(1),
        rows(0, 0, a, [("cpu/a", 1, b"early")]),
        full(0, a),
        rows(0, 1, a, [("cpu/a", 2, b"x"), ("cpu/b", 3, b""), ("cpu/a", 4, b"yz")]),
        rows(1, 7, [0, 0], [("net", 5, b"n0")]),
        rows(0, 2, b, [("cpu/b", 6, b"stale")]),
        rows(1, 9, [0, 0], [("net", 7, b"n1"), ("net", 8, b"n2")]),
    ])
    stream = dendro_wire.read(path)
    assert stream.tally == check(path)
    assert (stream.tally["rows_applied"], stream.tally["rows_skipped"]) == (6, 2)
    cpu = stream.rows(0)
    assert len(cpu) == 3
    assert cpu.ts.tolist() == [2, 3, 4] and cpu.wall_offset.tolist() == [-2, -3, -4]
    assert cpu.names == ["cpu/a", "cpu/b"] and cpu.stream.tolist() == [0, 1, 0]
    assert list(cpu.streams()) == ["cpu/a", "cpu/b", "cpu/a"]
    assert [cpu.row(i) for i in range(3)] == [b"x", b"", b"yz"]
    assert cpu.offsets.tolist() == [0, 1, 1, 3] and cpu.data.tobytes() == b"xyz"
    net = stream.rows(1)
    assert net.ts.tolist() == [5, 7, 8] and [net.row(i) for i in range(3)] == [b"n0", b"n1", b"n2"]
    with pytest.raises(IndexError):
        stream.rows(9)
    assert [s["source"] for s in stream.sources] == [0, 1]


def test_a_source_of_many_streams_keeps_each_name_once(tmp_path):
    names = [f"cpu{c}/ticks" for c in range(40)]
    order = [names[(i * 7) % 40] for i in range(200)]
    path = encode(tmp_path, [handshake(0), rows(0, 0, [0, 0], [(n, i, bytes([i % 256])) for i, n in enumerate(order)])])
    cpu = dendro_wire.read(path).rows(0)
    assert sorted(cpu.names) == sorted(names)
    assert list(cpu.streams()) == order


def test_columns_outgrow_the_first_guess_and_keep_every_row(tmp_path):
    # Room for a source's rows is guessed from its first frame: source 0's
    # is one row of 3000 bytes, so the guess is a few dozen rows, and its
    # columns must grow for the small rows after it. Row lengths run from 0
    # to 99 bytes, across every way a row is copied.
    names = ["cpu/usage", "cpu/irq", "net/rx_bytes_total_of_all_interfaces"]
    want = {0: [("big", 0, bytes(range(200)) * 15)], 1: []}
    frames = [handshake(0), handshake(1), rows(0, 0, [0, 0], want[0])]
    for f in range(40):
        for source in (0, 1):
            batch = [(names[(f + i) % 3], f * 100 + i, bytes([i % 256]) * ((f + i) % 100)) for i in range(40 + source)]
            frames.append(rows(source, f + 1, [0, 0], batch))
            want[source] += batch
    path = encode(tmp_path, frames)
    for stream in (dendro_wire.read(path), dendro_wire.read(path.read_bytes())):
        assert stream.tally == check(path)
        for source in (0, 1):
            got = stream.rows(source)
            assert len(got) == len(want[source])
            assert list(got.streams()) == [n for n, _, _ in want[source]]
            assert got.ts.tolist() == [ts for _, ts, _ in want[source]]
            assert got.wall_offset.tolist() == [-ts for _, ts, _ in want[source]]
            assert [got.row(i) for i in range(len(got))] == [row for _, _, row in want[source]]
            assert got.offsets[-1] == len(got.data) == sum(len(row) for _, _, row in want[source])
            # Cut to what they hold: each array owns its memory, no larger.
            assert all(a.flags.owndata for a in (got.ts, got.wall_offset, got.stream, got.offsets, got.data))


@pytest.mark.parametrize("cut", list(range(0, 70)) + [100, 500, 800, 852, 860, 900])
def test_a_stream_cut_anywhere_says_what_check_says(cut):
    data = SAMPLE.read_bytes()[:cut]
    told = json.loads(tool("check", "--json", "-", stdin=data).stdout)
    if "error" in told:
        with pytest.raises(dendro_wire.DendroWireError) as caught:
            dendro_wire.read(data)
        assert str(caught.value) == told["error"]
        assert (caught.value.frame, caught.value.offset) == (told["frame"], told["offset"])
        with pytest.raises(dendro_wire.DendroWireError) as caught:
            list(dendro_wire.frames(data))
        assert str(caught.value) == told["error"]
    else:
        assert dendro_wire.read(data).tally == told


def test_a_broken_rule_raises_the_tools_sentence(tmp_path):
    for data in (b"HTTP/1.1 200 OK\r\n\r\n", SAMPLE.read_bytes()[:14] + b"\x00\x00\x00\x00\x01"):
        told = json.loads(tool("check", "--json", "-", stdin=data).stdout)
        with pytest.raises(dendro_wire.DendroWireError, match=re.escape(told["error"])):
            dendro_wire.read(data)
    # A frame for a source no handshake opened: the subscriber's rule 1.
    path = encode(tmp_path, [handshake(0), rows(3, 0, [0, 0], [])])
    with pytest.raises(dendro_wire.DendroWireError) as caught:
        dendro_wire.read(path)
    assert str(caught.value) == check(path)["error"]
    assert "rule 1" in str(caught.value)


def test_a_source_beyond_the_tools_1024_is_refused(tmp_path):
    path = encode(tmp_path, [handshake(s) for s in range(1025)])
    with pytest.raises(dendro_wire.DendroWireError) as caught:
        dendro_wire.read(path)
    assert str(caught.value) == check(path)["error"]
    assert "the limit of 1024 sources" in str(caught.value)


def test_arrow_holds_the_same_rows():
    pytest.importorskip("pyarrow")
    cpu = dendro_wire.read(SAMPLE).rows(0)
    table = cpu.to_arrow()
    assert table.column("ts").to_pylist() == cpu.ts.tolist()
    assert table.column("wall_offset").to_pylist() == cpu.wall_offset.tolist()
    assert table.column("stream").to_pylist() == list(cpu.streams())
    assert table.column("row").to_pylist() == [cpu.row(i) for i in range(len(cpu))]
