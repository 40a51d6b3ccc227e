/* The fast lane's tables: schema program opcodes and header, problem records.
 *
 * ripple_cli/codec/fast/layout.py is their one source.  Each table is written
 * here once, as a list the enums below and the module's `LAYOUT` dict are both
 * expanded from, so the table the module exports is the one it was compiled
 * with; ripple_cli/codec/fast/__init__.py refuses the module (and runs the
 * pure-Python lane) when that table is not layout.py's. */

#ifndef RIPPLE_LAYOUT_H
#define RIPPLE_LAYOUT_H

#include <Python.h>
#include <stdint.h>

/* Node opcodes: X(name, number). */
#define LAYOUT_OPCODES(X)                                                                                              \
    X(INT, 1)                                                                                                          \
    X(INT32, 2)                                                                                                        \
    X(INT64, 3)                                                                                                        \
    X(FLOAT, 4)                                                                                                        \
    X(BOOL, 5)                                                                                                         \
    X(STRING, 6)                                                                                                       \
    X(OPTION, 7) /* child */                                                                                           \
    X(LIST, 8) /* child */                                                                                             \
    X(RECORD, 9) /* n, then n x (name atom, child) */                                                                  \
    X(ENUM, 10) /* count, first name atom */

/* The program's header words, in order: X(NAME, name). */
#define LAYOUT_PROGRAM_HEADER(X)                                                                                       \
    X(KEY, key) /* the key's node */                                                                                   \
    X(ROW, row) /* the row's node (a record) */                                                                        \
    X(CTORS, ctors) /* the atom of the first Patch constructor */

/* Problem record kinds: X(name, number). */
#define LAYOUT_RECORD_KINDS(X)                                                                                         \
    X(SEQ_ORDER, 1) /* a: previous seq */                                                                              \
    X(BEFORE_SCHEMA, 2) /* a: index in names of the fingerprint */                                                     \
    X(DUPLICATE, 3) /* a: index in names of the (worker, output) key, b: sequence_no, c: last applied */               \
    X(GAP, 4) /* the same */

/* A record's int64 words, in order: X(NAME, name). */
#define LAYOUT_RECORD_FIELDS(X) X(KIND, kind) X(OFFSET, offset) X(SEQ, seq) X(A, a) X(B, b) X(C, c)

/* What Scanner.run writes for the envelopes it consumes: X(name, number). */
#define LAYOUT_RENDER_MODES(X)                                                                                         \
    X(NONE, 0) /* nothing: count them (verify) */                                                                      \
    X(SEXP, 1) /* their canonical lines */                                                                             \
    X(JSON, 2) /* their typed JSON objects, each without its head ({"v":1, then where it came from) */               \
    X(TABLE, 3) /* their table cells, escaped, tab-separated (tableout.h) */                                           \
    X(ROWS, 4) /* their export rows' columns as Arrow buffers (rowsout.h) */

/* RENDER_ROWS's buffers, in order: X(NAME, name). */
#define LAYOUT_ROW_INT64(X)                                                                                            \
    X(OFFSET, offset)                                                                                                  \
    X(SEQ, seq)                                                                                                        \
    X(TIME_NS, time_ns)                                                                                                \
    X(TIME, time)                                                                                                      \
    X(SIZE, size)                                                                                                      \
    X(PAYLOAD_LENGTH, payload_length)                                                                                  \
    X(SEQUENCE_NO, sequence_no)                                                                                        \
    X(WATERMARK_NS, watermark_ns)                                                                                      \
    X(EVENT_HOUR, event_hour)
#define LAYOUT_ROW_STRINGS(X)                                                                                          \
    X(SCHEMA, schema)                                                                                                  \
    X(TYPE, type)                                                                                                      \
    X(SOURCE_OUTPUT, source_output)                                                                                    \
    X(KEY, key)                                                                                                        \
    X(DELTA, delta)                                                                                                    \
    X(MSG_JSON, msg_json)                                                                                              \
    X(WORKER, worker)
#define LAYOUT_ROW_BITMAPS(X)                                                                                          \
    X(HAS_DELTA, has_delta)                                                                                            \
    X(HAS_WATERMARK, has_watermark)                                                                                    \
    X(HAS_MSG_JSON, has_msg_json)                                                                                      \
    X(OWN_WORKER, own_worker)                                                                                          \
    X(SCHEMA_KNOWN, schema_known)

/* The enums the module is compiled with: OP_INT.., PROG_KEY.. (and PROG_NODES,
 * the header's length), REC_SEQ_ORDER.., REC_AT_KIND.. (and REC_WORDS). */
enum {
#define X(name, value) OP_##name = value,
    LAYOUT_OPCODES(X)
#undef X
};

enum {
#define X(NAME, name) PROG_##NAME,
    LAYOUT_PROGRAM_HEADER(X)
#undef X
    PROG_NODES
};

enum {
#define X(name, value) REC_##name = value,
    LAYOUT_RECORD_KINDS(X)
#undef X
};

enum {
#define X(name, value) RENDER_##name = value,
    LAYOUT_RENDER_MODES(X)
#undef X
};

enum {
#define X(NAME, name) RI_##NAME,
    LAYOUT_ROW_INT64(X)
#undef X
    RI_COUNT
};

enum {
#define X(NAME, name) RS_##NAME,
    LAYOUT_ROW_STRINGS(X)
#undef X
    RS_COUNT
};

enum {
#define X(NAME, name) RB_##NAME,
    LAYOUT_ROW_BITMAPS(X)
#undef X
    RB_COUNT
};

enum {
#define X(NAME, name) REC_AT_##NAME,
    LAYOUT_RECORD_FIELDS(X)
#undef X
    REC_WORDS
};

/* The module's LAYOUT, as layout.py's LAYOUT writes it:
 * {"opcodes": {name: number}, "program_header": (names), "program_word_bytes": n,
 *  "record_kinds": {name: number}, "record_fields": (names), "record_word_bytes": n,
 *  "render_modes": {name: number}, "row_int64": (names), "row_strings": (names),
 *  "row_bitmaps": (names)}.
 * The numbers are the enums' and a name's place in a tuple is its enum's; a
 * program's words are int32_t, a record's int64_t. */
static PyObject *
layout_table(void)
{
#define F_NUMBERED(name, value) " s:i"
#define F_NAME(NAME, name) " s"
#define OP_ARG(name, value) , #name, OP_##name
#define REC_ARG(name, value) , #name, REC_##name
#define RENDER_ARG(name, value) , #name, RENDER_##name
#define NAME_ARG(NAME, name) , #name
    return Py_BuildValue("{s:{" LAYOUT_OPCODES(F_NUMBERED) "},s:(" LAYOUT_PROGRAM_HEADER(F_NAME) "),s:n,"
                         "s:{" LAYOUT_RECORD_KINDS(F_NUMBERED) "},s:(" LAYOUT_RECORD_FIELDS(F_NAME) "),s:n,"
                         "s:{" LAYOUT_RENDER_MODES(F_NUMBERED) "},s:(" LAYOUT_ROW_INT64(F_NAME) "),"
                         "s:(" LAYOUT_ROW_STRINGS(F_NAME) "),s:(" LAYOUT_ROW_BITMAPS(F_NAME) ")}",
                         "opcodes" LAYOUT_OPCODES(OP_ARG), "program_header" LAYOUT_PROGRAM_HEADER(NAME_ARG),
                         "program_word_bytes", (Py_ssize_t)sizeof(int32_t), "record_kinds" LAYOUT_RECORD_KINDS(REC_ARG),
                         "record_fields" LAYOUT_RECORD_FIELDS(NAME_ARG), "record_word_bytes", (Py_ssize_t)sizeof(int64_t),
                         "render_modes" LAYOUT_RENDER_MODES(RENDER_ARG), "row_int64" LAYOUT_ROW_INT64(NAME_ARG),
                         "row_strings" LAYOUT_ROW_STRINGS(NAME_ARG), "row_bitmaps" LAYOUT_ROW_BITMAPS(NAME_ARG));
#undef F_NUMBERED
#undef F_NAME
#undef OP_ARG
#undef REC_ARG
#undef RENDER_ARG
#undef NAME_ARG
}

#endif
