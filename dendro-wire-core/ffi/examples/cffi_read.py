"""cffi_read.py HEADER LIBRARY FILE: the installed shared library through
cffi in ABI mode, declared by dendro_wire_cffi.h as shipped (cffi.cdef
reads it with no preprocessing): the library loaded is the header's, FILE
is decoded frame by frame, and its end is judged by dw_stream_end. Prints
one line: the number of frames, then "clean" or the library's sentence
for a stream cut or broken.

cargo xtask c runs it on the sample whole and cut, beside check --json.
"""

import sys

import cffi

header, library, path = sys.argv[1:4]
ffi = cffi.FFI()
ffi.cdef(open(header).read())
dw = ffi.dlopen(library)
if dw.dw_version() != dw.DW_VERSION or dw.dw_abi_version() != dw.DW_ABI_VERSION:
    sys.exit("the library loaded is not the one dendro_wire_cffi.h describes")
preamble = bytes(ffi.buffer(dw.dw_preamble, dw.DW_PREAMBLE_BYTES))
if preamble[:12] != b"dendro-repl\0":
    sys.exit("dw_preamble does not start with the magic")

data = open(path, "rb").read()
buf = ffi.from_buffer(data)
used, needed = ffi.new("size_t *"), ffi.new("size_t *")
error, frame = ffi.new("dw_error *"), ffi.new("dw_frame *")
frames, at = 0, 0
r = dw.dw_check_preamble(buf, len(data), used, needed, error)
if r == dw.DW_RESULT_OK:
    at = used[0]
    while r == dw.DW_RESULT_OK and at < len(data):
        r = dw.dw_decode(buf + at, len(data) - at, frame, used, needed, error)
        if r == dw.DW_RESULT_OK:
            frames, at = frames + 1, at + used[0]
if r == dw.DW_RESULT_INCOMPLETE:
    r = dw.dw_stream_end(buf + at, len(data) - at, 1 if at else 0, error)
if r == dw.DW_RESULT_OK:
    print(frames, "clean")
else:
    text, written = ffi.new("char[256]"), ffi.new("size_t *")
    dw.dw_error_message(error, text, 256, written)
    print(frames, ffi.string(text, written[0]).decode())
