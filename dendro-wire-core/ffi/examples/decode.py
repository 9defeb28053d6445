#!/usr/bin/env python3
"""decode.py LIBRARY STREAM: print a dendro replication stream's frames as
JSON Lines, as `dendro-wire dump --json STREAM` does, through the C API of
the cdylib at LIBRARY (target/ffi/libdendro_wire_ffi.so), with nothing but
Python's ctypes: the shortest proof that any language with a C FFI can use
it. `cargo xtask c` compares its output with the tool's on
testdata/sample.dwr."""

import ctypes as C
import json
import sys


class Str(C.Structure):
    _fields_ = [("ptr", C.c_void_p), ("len", C.c_size_t)]

    def text(self):
        return C.string_at(self.ptr, self.len).decode() if self.len else ""


class Bytes(C.Structure):
    _fields_ = [("ptr", C.c_void_p), ("len", C.c_size_t)]

    def hex(self):
        return C.string_at(self.ptr, self.len).hex() if self.len else ""


class Map(C.Structure):
    _fields_ = [("entries", C.c_void_p), ("len", C.c_size_t), ("count", C.c_uint32)]


class RowCursor(C.Structure):
    _fields_ = [("rest", C.c_void_p), ("len", C.c_size_t), ("left", C.c_uint32)]


class Row(C.Structure):
    _fields_ = [("stream", Str), ("ts", C.c_int64), ("wall_offset", C.c_int64), ("row", Bytes)]


State = C.c_uint64 * 2


class Handshake(C.Structure):
    _fields_ = [("source", C.c_uint32), ("has_uuid", C.c_bool), ("uuid", Str),
                ("labels", Map), ("metadata", Map), ("clock_anchor_wall_ns", C.c_int64),
                ("complete", C.c_bool)]


class Index(C.Structure):
    _fields_ = [("source", C.c_uint32), ("stream", Str), ("ts", C.c_int64),
                ("kind", C.c_uint32), ("state", State), ("blob", Bytes)]


class Rows(C.Structure):
    _fields_ = [("source", C.c_uint32), ("seq", C.c_uint64), ("index_state", State),
                ("count", C.c_uint32), ("rows", RowCursor)]


class Segment(C.Structure):
    _fields_ = [("source", C.c_uint32), ("stream", Str), ("rows", C.c_uint64),
                ("first_ts", C.c_int64), ("last_ts", C.c_int64), ("bytes", Bytes),
                ("has_caller_index", C.c_bool), ("caller_index", Bytes)]


class ClockOffset(C.Structure):
    _fields_ = [("source", C.c_uint32), ("ts", C.c_int64), ("offset_ns", C.c_int64)]


class SourceUpdate(C.Structure):
    _fields_ = [("source", C.c_uint32), ("ts", C.c_int64), ("labels", Map), ("metadata", Map)]


class Unknown(C.Structure):
    _fields_ = [("kind", C.c_uint8), ("payload", Bytes)]


class Body(C.Union):
    _fields_ = [("handshake", Handshake), ("index", Index), ("rows", Rows),
                ("segment", Segment), ("clock_offset", ClockOffset),
                ("source_update", SourceUpdate), ("unknown", Unknown)]


class Frame(C.Structure):
    _fields_ = [("kind", C.c_uint32), ("body", Body)]


class Error(C.Structure):
    _fields_ = [("result", C.c_uint32), ("reason", C.c_uint32), ("rule", C.c_uint32),
                ("field", C.c_uint32), ("offset", C.c_uint64), ("item", C.c_int64),
                ("frame_kind", C.c_int32), ("encoding", C.c_uint32),
                ("values", C.c_uint64 * 4)]


OK, INCOMPLETE, DONE = 0, 1, 2


def main(library, path):
    dw = C.CDLL(library)
    size_p = C.POINTER(C.c_size_t)
    dw.dw_check_preamble.argtypes = [C.c_void_p, C.c_size_t, size_p, size_p, C.POINTER(Error)]
    dw.dw_decode.argtypes = [C.c_void_p, C.c_size_t, C.POINTER(Frame), size_p, size_p,
                             C.POINTER(Error)]
    dw.dw_rows_next.argtypes = [C.POINTER(RowCursor), C.POINTER(Row), C.POINTER(Error)]
    dw.dw_map_next.argtypes = [C.POINTER(Map), C.POINTER(Str), C.POINTER(Str), C.POINTER(Error)]
    dw.dw_error_message.argtypes = [C.POINTER(Error), C.c_char_p, C.c_size_t, size_p]
    for f in (dw.dw_check_preamble, dw.dw_decode, dw.dw_rows_next, dw.dw_map_next,
              dw.dw_error_message):
        f.restype = C.c_uint32

    data = open(path, "rb").read()
    buf = C.create_string_buffer(data, len(data) or 1)
    base = C.addressof(buf)
    consumed, needed, error = C.c_size_t(), C.c_size_t(), Error()

    def sentence():
        text, n = C.create_string_buffer(512), C.c_size_t()
        dw.dw_error_message(C.byref(error), text, 512, C.byref(n))
        return text.raw[: n.value].decode()

    def entries(m):
        m, key, value, out = Map.from_buffer_copy(m), Str(), Str(), {}
        while dw.dw_map_next(C.byref(m), C.byref(key), C.byref(value), None) == OK:
            out[key.text()] = value.text()
        return out

    r = dw.dw_check_preamble(base, len(data), C.byref(consumed), C.byref(needed), C.byref(error))
    if r != OK:
        sys.exit(f"decode.py: preamble: {sentence() if r != INCOMPLETE else 'too short'}")
    at = consumed.value
    frame = Frame()
    while at < len(data):
        r = dw.dw_decode(base + at, len(data) - at, C.byref(frame), C.byref(consumed),
                         C.byref(needed), C.byref(error))
        if r != OK:
            sys.exit(f"decode.py: at byte {at}: {sentence() if r != INCOMPLETE else 'cut short'}")
        at += consumed.value
        b = frame.body
        if frame.kind == 1:
            h = b.handshake
            line = {"frame": "handshake", "source": h.source,
                    "uuid": h.uuid.text() if h.has_uuid else None,
                    "labels": entries(h.labels), "metadata": entries(h.metadata),
                    "clock_anchor_wall_ns": h.clock_anchor_wall_ns, "complete": h.complete}
        elif frame.kind == 2:
            i = b.index
            line = {"frame": "index", "source": i.source, "stream": i.stream.text(),
                    "ts": i.ts, "kind": "full" if i.kind == 0 else "delta",
                    "state": list(i.state), "blob": i.blob.hex()}
        elif frame.kind == 3:
            rows, cursor, row, listed = b.rows, RowCursor.from_buffer_copy(b.rows.rows), Row(), []
            while dw.dw_rows_next(C.byref(cursor), C.byref(row), None) == OK:
                listed.append({"stream": row.stream.text(), "ts": row.ts,
                               "wall_offset": row.wall_offset, "row": row.row.hex()})
            line = {"frame": "rows", "source": rows.source, "seq": rows.seq,
                    "index_state": list(rows.index_state), "rows": listed}
        elif frame.kind == 4:
            s = b.segment
            line = {"frame": "segment", "source": s.source, "stream": s.stream.text(),
                    "rows": s.rows, "first_ts": s.first_ts, "last_ts": s.last_ts,
                    "bytes": s.bytes.hex(),
                    "caller_index": s.caller_index.hex() if s.has_caller_index else None}
        elif frame.kind == 5:
            c = b.clock_offset
            line = {"frame": "clock_offset", "source": c.source, "ts": c.ts,
                    "offset_ns": c.offset_ns}
        elif frame.kind == 6:
            u = b.source_update
            line = {"frame": "source_update", "source": u.source, "ts": u.ts,
                    "labels": entries(u.labels), "metadata": entries(u.metadata)}
        else:
            line = {"frame": "unknown", "kind": b.unknown.kind, "payload": b.unknown.payload.hex()}
        print(json.dumps(line, separators=(",", ":"), ensure_ascii=False))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: decode.py LIBRARY STREAM")
    main(sys.argv[1], sys.argv[2])
