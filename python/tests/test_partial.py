"""Partial and streaming reads: a stream cut inside a frame read up to the
cut with `cut_ok`, as `check --cut-ok` reads it; the same rows a batch at a
time from a path, its bytes, a file object or a socket."""

import io
import json
import socket
import threading

import numpy as np
import pytest

import dendro_wire
from streams import SAMPLE, agent_capture, tool

COLUMNS = ("ts", "wall_offset", "offsets", "data")


def same_rows(a, b):
    """Whether two sources' rows are the same rows."""
    return (
        all(np.array_equal(getattr(a, c), getattr(b, c)) for c in COLUMNS)
        and list(a.streams()) == list(b.streams())
    )


def concatenated(batches, source):
    """A source's rows over batches, as one list of (stream, ts, row)."""
    out = []
    for batch in batches:
        if any(s["source"] == source for s in batch.sources):
            rows = batch.rows(source)
            out += zip(rows.streams(), rows.ts.tolist(), (rows.row(i) for i in range(len(rows))))
    return out


def every_row(rows):
    return list(zip(rows.streams(), rows.ts.tolist(), (rows.row(i) for i in range(len(rows)))))


def cut_checked(data):
    """`check --json --cut-ok` of `data`."""
    return json.loads(tool("check", "--json", "--cut-ok", "-", stdin=data).stdout)


def assert_read_up_to_the_cut(data):
    told = cut_checked(data)
    if "error" in told:
        # A cut preamble is still no stream.
        with pytest.raises(dendro_wire.DendroWireError) as caught:
            dendro_wire.read(data, cut_ok=True)
        assert str(caught.value) == told["error"]
        return
    stream = dendro_wire.read(data, cut_ok=True)
    cut_bytes = told.pop("cut_bytes")
    assert stream.tally == told
    if cut_bytes == 0:
        assert stream.cut is None
        whole = dendro_wire.read(data)
    else:
        assert stream.cut is not None and stream.cut.bytes == cut_bytes
        assert stream.cut.offset + cut_bytes == len(data)
        with pytest.raises(dendro_wire.CutStreamError) as caught:
            dendro_wire.read(data)
        assert (caught.value.frame, caught.value.offset) == (stream.cut.frame, stream.cut.offset)
        # Everything before the cut frame, and nothing of it.
        whole = dendro_wire.read(data[: stream.cut.offset])
    assert whole.tally["rows_applied"] == stream.tally["rows_applied"]
    for s in whole.sources:
        assert same_rows(stream.rows(s["source"]), whole.rows(s["source"]))
    for source in (data, io.BytesIO(data)):
        batches = dendro_wire.iter_batches(source, rows=2, cut_ok=True)
        got = list(batches)
        for s in whole.sources:
            assert concatenated(got, s["source"]) == every_row(whole.rows(s["source"]))
        assert batches.cut == stream.cut


@pytest.mark.parametrize("cut", range(len(SAMPLE.read_bytes()) + 1))
def test_the_sample_cut_at_every_byte_is_read_up_to_its_cut(cut):
    assert_read_up_to_the_cut(SAMPLE.read_bytes()[:cut])


def test_a_larger_capture_cut_at_many_places_is_read_up_to_its_cut(tmp_path):
    data = agent_capture(tmp_path, 40).read_bytes()
    for cut in list(range(0, len(data), 997)) + [len(data) - 1, len(data)]:
        assert_read_up_to_the_cut(data[:cut])


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    return agent_capture(tmp_path_factory.mktemp("capture"), 300)


@pytest.mark.parametrize("rows", [1, 64, 65, 1000, 65536])
def test_batches_hold_every_row_once_from_every_kind_of_source(capture, rows):
    whole = dendro_wire.read(capture)
    want = every_row(whole.rows(0))
    data = capture.read_bytes()
    with open(capture, "rb") as file:
        for source in (capture, str(capture), data, bytearray(data), memoryview(data), io.BytesIO(data), file):
            batches = list(dendro_wire.iter_batches(source, rows=rows))
            assert concatenated(batches, 0) == want
            # A frame's rows are never split: a batch holds whole frames.
            assert all(len(b.rows(0)) % 64 == 0 for b in batches)
            assert all(len(b.rows(0)) < rows + 64 for b in batches)
            assert batches[-1].tally == whole.tally


def sent(data):
    """Our end of a socket whose other end sends `data` and closes."""
    ours, theirs = socket.socketpair()

    def send():
        with theirs:
            for at in range(0, len(data), 1000):
                theirs.sendall(data[at : at + 1000])

    threading.Thread(target=send, daemon=True).start()
    return ours


def test_a_socket_is_read_a_batch_at_a_time_as_its_bytes_arrive(capture):
    with sent(capture.read_bytes()) as ours:
        batches = list(dendro_wire.iter_batches(ours, rows=640))
    assert concatenated(batches, 0) == every_row(dendro_wire.read(capture).rows(0))
    assert len(batches) == 300 * 64 // 640
    with sent(capture.read_bytes()) as ours:
        assert dendro_wire.read(ours).tally == dendro_wire.read(capture).tally


def test_a_socket_closed_mid_frame_is_read_up_to_the_cut_with_cut_ok(capture):
    data = capture.read_bytes()[:-10]
    with sent(data) as ours:
        batches = dendro_wire.iter_batches(ours, rows=640, cut_ok=True)
        got = concatenated(batches, 0)
    assert len(got) == 299 * 64
    assert batches.cut is not None and batches.cut.offset + batches.cut.bytes == len(data)
    with sent(data) as ours:
        with pytest.raises(dendro_wire.CutStreamError):
            list(dendro_wire.iter_batches(ours, rows=640))
