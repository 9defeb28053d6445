"""Errors as Python's own: DendroWireError a ValueError, with a class for a
cut stream and one for a broken rule; a file's errors as OSError
subclasses; TypeError for what is no stream, source or count; IndexError
and KeyError for a source the stream has not."""

import io
import json
import os

import pytest

import dendro_wire
from streams import SAMPLE, check, encode, handshake, rows, tool


def test_the_classes_are_valueerrors_a_caller_can_branch_on():
    assert issubclass(dendro_wire.DendroWireError, ValueError)
    for cls in (dendro_wire.CutStreamError, dendro_wire.BrokenRuleError):
        assert issubclass(cls, dendro_wire.DendroWireError)
    assert not issubclass(dendro_wire.CutStreamError, dendro_wire.BrokenRuleError)


@pytest.mark.parametrize("data, raised", [
    (SAMPLE.read_bytes()[:7], dendro_wire.CutStreamError),
    (SAMPLE.read_bytes()[:100], dendro_wire.CutStreamError),
    (b"HTTP/1.1 200 OK\r\n\r\n", dendro_wire.BrokenRuleError),
    (SAMPLE.read_bytes()[:14] + b"\x00\x00\x00\x00\x01", dendro_wire.BrokenRuleError),
])
def test_each_route_raises_the_class_and_the_tools_sentence(data, raised):
    told = json.loads(tool("check", "--json", "-", stdin=data).stdout)
    routes = [
        lambda: dendro_wire.read(data),
        lambda: dendro_wire.read(io.BytesIO(data)),
        lambda: dendro_wire.read(bytearray(data)),
        lambda: list(dendro_wire.iter_batches(data)),
        lambda: list(dendro_wire.frames(data)),
    ]
    for route in routes:
        with pytest.raises(raised) as caught:
            route()
        assert str(caught.value) == told["error"]
        assert (caught.value.frame, caught.value.offset) == (told["frame"], told["offset"])


def test_a_subscribers_rule_is_a_broken_rule(tmp_path):
    path = encode(tmp_path, [handshake(0), rows(3, 0, [0, 0], [])])
    with pytest.raises(dendro_wire.BrokenRuleError, match="rule 1") as caught:
        dendro_wire.read(path)
    assert str(caught.value) == check(path)["error"]


def test_a_files_errors_are_oserrors(tmp_path):
    with pytest.raises(FileNotFoundError) as caught:
        dendro_wire.read(tmp_path / "absent.dwr")
    assert caught.value.filename == str(tmp_path / "absent.dwr")
    with pytest.raises(FileNotFoundError):
        dendro_wire.iter_batches(str(tmp_path / "absent.dwr"))
    with pytest.raises(FileNotFoundError):
        dendro_wire.frames(tmp_path / "absent.dwr")
    with pytest.raises(IsADirectoryError):
        dendro_wire.read(tmp_path)
    if os.geteuid() != 0:
        locked = tmp_path / "locked.dwr"
        locked.write_bytes(SAMPLE.read_bytes())
        locked.chmod(0)
        with pytest.raises(PermissionError):
            dendro_wire.read(locked)


def test_a_file_objects_own_exception_is_raised_as_it_was():
    class Failing(io.RawIOBase):
        def readable(self):
            return True

        def read(self, n=-1):
            raise ConnectionResetError("the peer went away")

    with pytest.raises(ConnectionResetError, match="the peer went away"):
        dendro_wire.read(Failing())
    with pytest.raises(ConnectionResetError):
        next(dendro_wire.iter_batches(Failing()))


@pytest.mark.parametrize("source", [
    42, 4.2, None, [1, 2, 3], list(SAMPLE.read_bytes()), (1, 2), {"path": str(SAMPLE)}, object(),
])
def test_what_is_no_stream_is_a_typeerror(source):
    for route in (dendro_wire.read, dendro_wire.iter_batches, dendro_wire.frames):
        with pytest.raises(TypeError, match="a stream is read from"):
            route(source)


def test_a_path_as_bytes_is_not_read_as_a_stream():
    for route in (dendro_wire.read, dendro_wire.iter_batches, dendro_wire.frames):
        with pytest.raises(TypeError, match="give a path as str or os.PathLike"):
            route(os.fsencode(SAMPLE))
    # The path as str, or os.PathLike, is read.
    assert dendro_wire.read(os.fsdecode(os.fsencode(SAMPLE))).tally == check(SAMPLE)


def test_a_text_file_is_a_typeerror():
    with open(SAMPLE, encoding="latin-1") as text:
        with pytest.raises(TypeError, match="binary mode"):
            dendro_wire.read(text)


def test_wrong_arguments_are_typeerrors_and_valueerrors():
    with pytest.raises(TypeError):
        dendro_wire.read(SAMPLE, cut_ok="yes")
    with pytest.raises(TypeError):
        dendro_wire.read(SAMPLE, True)
    with pytest.raises(TypeError):
        dendro_wire.iter_batches(SAMPLE, rows="many")
    with pytest.raises(ValueError):
        dendro_wire.iter_batches(SAMPLE, rows=0)


def test_a_source_is_chosen_by_number_or_label_and_refused_clearly():
    stream = dendro_wire.read(SAMPLE)
    assert [s["labels"]["source"] for s in stream.sources] == ["cpu", "net"]
    cpu = stream.rows(0)
    assert stream.rows("cpu") is cpu and stream.rows({"source": "cpu", "host": "web-01"}) is cpu
    assert stream.rows("net") is stream.rows(1)
    for bad in (-1, 2, 99, 2**40):
        with pytest.raises(IndexError, match=r"the stream's sources are \[0, 1\]"):
            stream.rows(bad)
    for bad in ("disk", {"host": "web-02"}, {"host": "web-01"}):
        with pytest.raises(KeyError):
            stream.rows(bad)
    for bad in (True, 1.0, None, b"cpu", [0]):
        with pytest.raises(TypeError):
            stream.rows(bad)


def test_a_row_out_of_range_is_an_indexerror():
    cpu = dendro_wire.read(SAMPLE).rows(0)
    assert cpu.row(-1) == cpu.row(len(cpu) - 1)
    with pytest.raises(IndexError):
        cpu.row(len(cpu))
