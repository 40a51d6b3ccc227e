"""The fast lane's tables: the one source the C module is checked against.

program.py compiles a schema into int32 words that `_speedups.c` interprets,
the C scanner hands stream-rule problems back to lane.py as int64 records,
and lane.py tells it what to write (the render modes).  The two sides must
agree byte for byte (the opcodes' numbers, the program's header words, the
record kinds, the order of a record's words, the size of a word, the render
modes), or the fast lane would print wrong text or report wrong problems
without failing.  So the numbers are written here once; the C
module's copy (layout.h) builds its own `LAYOUT` from the enums it was
compiled with, and `ripple_cli.codec.fast` refuses a module whose `LAYOUT` is
not this one (ripple then runs on the pure-Python lane and says so).
"""

from __future__ import annotations

from array import array

# Node opcodes of a compiled schema program (program.py has the operands).
OP_INT = 1
OP_INT32 = 2
OP_INT64 = 3
OP_FLOAT = 4
OP_BOOL = 5
OP_STRING = 6
OP_OPTION = 7  # child
OP_LIST = 8  # child
OP_RECORD = 9  # n, then n x (name atom, child)
OP_ENUM = 10  # count, first name atom
OPCODES: dict[str, int] = {
    "INT": OP_INT,
    "INT32": OP_INT32,
    "INT64": OP_INT64,
    "FLOAT": OP_FLOAT,
    "BOOL": OP_BOOL,
    "STRING": OP_STRING,
    "OPTION": OP_OPTION,
    "LIST": OP_LIST,
    "RECORD": OP_RECORD,
    "ENUM": OP_ENUM,
}

# The program's header: the words before the nodes, in this order (the key's
# node, the row's node, the atom of the first Patch constructor).
PROGRAM_HEADER = ("key", "row", "ctors")
PROG_KEY, PROG_ROW, PROG_CTORS = range(len(PROGRAM_HEADER))
HEADER_WORDS = len(PROGRAM_HEADER)
PROGRAM_TYPECODE = "i"  # array typecode of a program word (int32 in C)

# The kinds of the scanner's stream-rule problem records.
REC_SEQ_ORDER = 1  # a: previous seq
REC_BEFORE_SCHEMA = 2  # a: index in names of the fingerprint
REC_DUPLICATE = 3  # a: index in names of the (worker, output) key, b: sequence_no, c: last applied
REC_GAP = 4  # the same
RECORD_KINDS: dict[str, int] = {
    "SEQ_ORDER": REC_SEQ_ORDER,
    "BEFORE_SCHEMA": REC_BEFORE_SCHEMA,
    "DUPLICATE": REC_DUPLICATE,
    "GAP": REC_GAP,
}

# A record's words, in this order.
REC_FIELDS = ("kind", "offset", "seq", "a", "b", "c")
REC_WORDS = len(REC_FIELDS)
RECORD_TYPECODE = "q"  # array typecode of a record word (int64 in C)

# What the scanner writes for the envelopes it consumes (Scanner's `render`).
RENDER_NONE = 0  # nothing: count them (verify)
RENDER_SEXP = 1  # their canonical lines
RENDER_JSON = 2  # their typed JSON objects, each without its head ({"v":1, then where it came from)
RENDER_TABLE = 3  # their table cells (offset, seq, time, type, schema, output, key, summary), escaped, a tab between
RENDER_ROWS = 4  # their export rows' columns, as Arrow buffers (the ROW_* tables below)
RENDER_MODES: dict[str, int] = {
    "NONE": RENDER_NONE,
    "SEXP": RENDER_SEXP,
    "JSON": RENDER_JSON,
    "TABLE": RENDER_TABLE,
    "ROWS": RENDER_ROWS,
}

# RENDER_ROWS: the columns of batch/rows.py's COLUMNS that vary from message
# to message, as the buffers of Arrow arrays (batch/arrow.py puts them
# together with the columns a run shares).  Scanner.run hands back
# (rows, int64s, strings, bitmaps) in place of its text: one buffer of
# int64 values (little-endian, one a row; 0 where the row's value is null)
# per ROW_INT64 name, an (int32 offsets, UTF-8 data) pair per ROW_STRINGS
# name, and one bitmap (Arrow's bit order, bit i of byte i // 8) per
# ROW_BITMAPS name, in these orders.
ROW_INT64 = (
    "offset",
    "seq",
    "time_ns",
    "time",  # the microseconds, floored
    "size",
    "payload_length",
    "sequence_no",  # valid: has_delta
    "watermark_ns",  # valid: has_watermark
    "event_hour",  # the hour's first microsecond
)
ROW_STRINGS = (
    "schema",
    "type",
    "source_output",  # valid: has_delta
    "key",  # valid: has_delta
    "delta",  # valid: has_delta
    "msg_json",  # valid: has_msg_json
    "worker",  # valid: own_worker (else the run's worker: the stream's last Handshake's)
)
ROW_BITMAPS = ("has_delta", "has_watermark", "has_msg_json", "own_worker", "schema_known")

# What the C module's `LAYOUT` must equal.
LAYOUT: dict[str, object] = {
    "opcodes": OPCODES,
    "program_header": PROGRAM_HEADER,
    "program_word_bytes": array(PROGRAM_TYPECODE).itemsize,
    "record_kinds": RECORD_KINDS,
    "record_fields": REC_FIELDS,
    "record_word_bytes": array(RECORD_TYPECODE).itemsize,
    "render_modes": RENDER_MODES,
    "row_int64": ROW_INT64,
    "row_strings": ROW_STRINGS,
    "row_bitmaps": ROW_BITMAPS,
}
