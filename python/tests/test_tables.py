"""A source's rows as an Arrow table, a pandas frame and a polars frame,
over the columns' own memory; rows of one size as a fixed-size view."""

import importlib.util

import numpy as np
import pytest

import dendro_wire
from streams import SAMPLE, agent_capture, encode, handshake, rows

pa = pytest.importorskip("pyarrow")


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """A source of three streams: two of rows of one size each (8 and 16
    bytes), one of rows of many sizes."""
    batch = []
    for i in range(300):
        batch += [("a/u64", i, i.to_bytes(8, "little")), ("b/pair", i, np.array([i, -i], "<i8").tobytes()),
                  ("c/text", i, b"x" * (i % 7))]
    path = encode(tmp_path_factory.mktemp("mixed"), [handshake(0), rows(0, 0, [0, 0], batch)])
    return dendro_wire.read(path).rows(0)


def test_arrow_holds_the_same_rows_without_copying_them(mixed):
    table = mixed.to_arrow()
    assert table.column("ts").to_pylist() == mixed.ts.tolist()
    assert table.column("wall_offset").to_pylist() == mixed.wall_offset.tolist()
    assert table.column("stream").to_pylist() == list(mixed.streams())
    assert table.schema.field("stream").type == pa.dictionary(pa.uint32(), pa.string())
    assert table.column("row").to_pylist() == [mixed.row(i) for i in range(len(mixed))]
    # The rows' bytes are `data` itself.
    row = table.column("row").chunk(0)
    assert row.buffers()[2].address == mixed.data.ctypes.data
    assert table.column("ts").chunk(0).buffers()[1].address == mixed.ts.ctypes.data


def test_pandas_has_a_categorical_stream_and_arrow_binary_rows(mixed):
    pd = pytest.importorskip("pandas")
    df = mixed.to_pandas()
    assert list(df.columns) == ["ts", "wall_offset", "stream", "row"]
    assert df["ts"].dtype == np.int64 and df["ts"].tolist() == mixed.ts.tolist()
    assert isinstance(df["stream"].dtype, pd.CategoricalDtype)
    assert list(df["stream"].cat.categories) == mixed.names
    assert df["stream"].tolist() == list(mixed.streams())
    assert df["row"].dtype == pd.ArrowDtype(pa.large_binary())
    assert df["row"].tolist() == [mixed.row(i) for i in range(len(mixed))]
    # ts is the array the reader wrote, not a copy.
    assert np.shares_memory(df["ts"].to_numpy(), mixed.ts)


def test_polars_has_a_categorical_stream_and_binary_rows(mixed):
    pl = pytest.importorskip("polars")
    df = mixed.to_polars()
    assert df.columns == ["ts", "wall_offset", "stream", "row"]
    assert df["stream"].dtype == pl.Categorical
    assert df["stream"].to_list() == list(mixed.streams())
    assert df["row"].dtype == pl.Binary
    assert df["row"].to_list() == [mixed.row(i) for i in range(len(mixed))]
    assert df["ts"].to_list() == mixed.ts.tolist()


def test_an_empty_source_makes_empty_tables(tmp_path):
    empty = dendro_wire.read(encode(tmp_path, [handshake(0)])).rows(0)
    assert empty.to_arrow().num_rows == 0
    assert len(empty.to_pandas()) == 0
    assert empty.row_size() is None
    assert empty.fixed().shape == (0, 0) and empty.fixed(dtype="<u8").shape == (0,)


def test_rows_of_one_size_are_a_fixed_size_view(mixed):
    assert mixed.row_size() is None
    assert (mixed.row_size("a/u64"), mixed.row_size("b/pair"), mixed.row_size("c/text")) == (8, 16, None)
    assert mixed.fixed("a/u64", "<u8").tolist() == list(range(300))
    pair = mixed.fixed("b/pair", [("plus", "<i8"), ("minus", "<i8")])
    assert pair["plus"].tolist() == list(range(300)) and pair["minus"].tolist() == [-i for i in range(300)]
    assert mixed.fixed("b/pair").shape == (300, 16)
    with pytest.raises(ValueError, match="not all of one size"):
        mixed.fixed("c/text")
    with pytest.raises(ValueError, match="not all of one size"):
        mixed.fixed()
    with pytest.raises(ValueError, match="8 bytes"):
        mixed.fixed("a/u64", "<u4")
    with pytest.raises(KeyError):
        mixed.fixed("d/none")
    with pytest.raises(TypeError):
        mixed.fixed(3)


def test_a_source_of_one_row_size_is_viewed_without_a_copy(tmp_path):
    agent = dendro_wire.read(agent_capture(tmp_path, 3)).rows("agent")
    assert agent.row_size() == 32
    view = agent.fixed(dtype=[("ts", "<u8"), ("rest", "V24")])
    assert view["ts"].tolist() == agent.ts.tolist()
    assert np.shares_memory(view, agent.data)
    assert np.array_equal(np.frombuffer(agent.data, "<u8").reshape(-1, 4)[:, 0], agent.ts)


def test_each_missing_library_names_an_extra_the_package_declares(monkeypatch):
    from importlib.metadata import metadata

    extras = set(metadata("dendro-wire").get_all("Provides-Extra"))
    cpu = dendro_wire.read(SAMPLE).rows(0)
    for method, missing, first in (("to_arrow", "pyarrow", None), ("to_pandas", "pandas", None),
                                   ("to_pandas", "pyarrow", "pandas"), ("to_polars", "polars", None),
                                   ("to_polars", "pyarrow", "polars")):
        # pyarrow is asked for after the library it serves, which is
        # missing first if it is not installed.
        if first is not None and importlib.util.find_spec(first) is None:
            continue
        with monkeypatch.context() as m:
            m.setitem(__import__("sys").modules, missing, None)
            with pytest.raises(ImportError) as caught:
                getattr(cpu, method)()
        said = str(caught.value)
        extra = said.split("dendro-wire[", 1)[1].split("]", 1)[0]
        assert extra in extras and missing in said, said
    assert {"arrow", "pandas", "polars"} <= extras
