/* The export's rows (batch/rows.py's COLUMNS), written by the scanner as the
 * buffers of Arrow arrays (RENDER_ROWS): batch/arrow.py wraps them with
 * pyarrow's Array.from_buffers, so no Python object is made per value.
 * The columns and their order are layout.py's ROW_INT64, ROW_STRINGS and
 * ROW_BITMAPS; the columns a run shares (the file, the connection, the
 * capture time...) are batch/arrow.py's.
 *
 * Text is as rows.py's `_text` makes it: UTF-8 as is, and each byte that is
 * not part of a valid sequence (Python's strict decoder) as `\xNN`
 * (backslashreplace).
 */
#ifndef RIPPLE_ROWSOUT_H
#define RIPPLE_ROWSOUT_H

#include "jsonout.h" /* utf8_seq, js_utf8_valid */
#include "layout.h"
#include "sexpout.h"

/* A string column stops the run past this many bytes: its offsets are
 * int32, and a run's batch stays a modest allocation. */
#define RB_MAX_STRING_BYTES (64u << 20)

typedef struct {
    size_t n; /* rows written */
    int too_big; /* the last row would take a string column past int32 offsets: not written */
    Out i64[RI_COUNT];
    Out offsets[RS_COUNT]; /* int32: n + 1 of them once a row is written */
    Out data[RS_COUNT];
    Out bits[RB_COUNT];
} Rows;

static void
rows_free(Rows *r)
{
    for (int i = 0; i < RI_COUNT; i++)
        PyMem_Free(r->i64[i].p);
    for (int i = 0; i < RS_COUNT; i++) {
        PyMem_Free(r->offsets[i].p);
        PyMem_Free(r->data[i].p);
    }
    for (int i = 0; i < RB_COUNT; i++)
        PyMem_Free(r->bits[i].p);
    memset(r, 0, sizeof(*r));
}

/* A buffer emptied; kept for the next run unless it grew large (a scanner
 * lives as long as its stream). */
static void
rows_empty(Out *o)
{
    if (o->cap > (8u << 20)) {
        PyMem_Free(o->p);
        o->p = NULL;
        o->cap = 0;
    }
    o->len = 0;
    o->failed = 0;
}

/* Empty, for a run. */
static void
rows_reset(Rows *r)
{
    r->n = 0;
    r->too_big = 0;
    for (int i = 0; i < RI_COUNT; i++)
        rows_empty(&r->i64[i]);
    for (int i = 0; i < RS_COUNT; i++) {
        rows_empty(&r->offsets[i]);
        rows_empty(&r->data[i]);
        int32_t zero = 0;
        out_put(&r->offsets[i], &zero, sizeof zero);
    }
    for (int i = 0; i < RB_COUNT; i++)
        rows_empty(&r->bits[i]);
}

/* Where the row being written started: a frame the scanner stops at takes
 * its partial row back. */
typedef struct {
    size_t i64[RI_COUNT], data[RS_COUNT];
} RowsMark;

static inline void
rows_mark(const Rows *r, RowsMark *m)
{
    for (int i = 0; i < RI_COUNT; i++)
        m->i64[i] = r->i64[i].len;
    for (int i = 0; i < RS_COUNT; i++)
        m->data[i] = r->data[i].len;
}

static inline void
rows_back(Rows *r, const RowsMark *m)
{
    for (int i = 0; i < RI_COUNT; i++)
        r->i64[i].len = m->i64[i];
    for (int i = 0; i < RS_COUNT; i++)
        r->data[i].len = m->data[i];
}

static int
rows_failed(const Rows *r)
{
    int f = 0;
    for (int i = 0; i < RI_COUNT; i++)
        f |= r->i64[i].failed;
    for (int i = 0; i < RS_COUNT; i++)
        f |= r->offsets[i].failed | r->data[i].failed;
    for (int i = 0; i < RB_COUNT; i++)
        f |= r->bits[i].failed;
    return f;
}

/* Whether a string column is past RB_MAX_STRING_BYTES (the run stops after this row). */
static int
rows_full(const Rows *r)
{
    for (int i = 0; i < RS_COUNT; i++)
        if (r->data[i].len > RB_MAX_STRING_BYTES)
            return 1;
    return 0;
}

static inline void
rows_i64(Rows *r, int col, int64_t v)
{
    out_put(&r->i64[col], &v, sizeof v); /* the machine's order: little-endian on every target CPython builds this for */
}

/* The string column's buffer, to print into (then rows_text_done). */
static inline Out *
rows_text(Rows *r, int col)
{
    Out *o = &r->data[col];
    o->need = 0;
    return o;
}

/* What was printed into the column since `start`, as `_text` makes it:
 * bytes that are not UTF-8 as \xNN. */
static void
rows_text_done(Rows *r, int col, size_t start)
{
    Out *o = &r->data[col];
    if (o->failed || js_utf8_valid((const uint8_t *)o->p + start, o->len - start))
        return;
    size_t n = o->len - start;
    uint8_t *copy = PyMem_Malloc(n);
    if (!copy) {
        o->failed = 1;
        return;
    }
    memcpy(copy, o->p + start, n);
    o->len = start;
    static const char hex[] = "0123456789abcdef";
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        size_t k = utf8_seq(copy + i, n - i, &cp);
        if (k) {
            out_put(o, copy + i, k);
            i += k;
        }
        else {
            char e[4] = {'\\', 'x', hex[copy[i] >> 4], hex[copy[i] & 15]};
            out_put(o, e, 4);
            i++;
        }
    }
    PyMem_Free(copy);
}

/* A column's text from bytes. */
static void
rows_bytes(Rows *r, int col, const uint8_t *s, size_t n)
{
    size_t start = r->data[col].len;
    out_put(&r->data[col], s, n);
    rows_text_done(r, col, start);
}

/* The row is written: every string column's end offset, and the bitmaps
 * from `valid` (bit b: the ROW_BITMAPS flag b is set for this row). */
static void
rows_end(Rows *r, unsigned valid)
{
    for (int i = 0; i < RS_COUNT; i++)
        if (r->data[i].len > INT32_MAX) { /* one row's text of gigabytes (a --max-payload that large) */
            r->too_big = 1;
            return;
        }
    for (int i = 0; i < RS_COUNT; i++) {
        int32_t end = (int32_t)r->data[i].len;
        out_put(&r->offsets[i], &end, sizeof end);
    }
    size_t byte = r->n / 8;
    for (int b = 0; b < RB_COUNT; b++) {
        Out *o = &r->bits[b];
        if (o->len <= byte)
            out_ch(o, 0);
        if (!o->failed && valid >> b & 1)
            o->p[byte] = (char)((uint8_t)o->p[byte] | 1u << (r->n % 8));
    }
    r->n++;
}

/* Python's floor division by a positive d. */
static inline int64_t
floor_div(int64_t a, int64_t d)
{
    int64_t q = a / d;
    return a % d < 0 ? q - 1 : q;
}

/* The envelope's columns: offset ... payload_length, the times, schema and
 * type.  (A time_ns from a header is an int64: always within the years the
 * timestamp columns hold, rows.py's micros never makes one null here.) */
static void
rows_head(Rows *r, long long offset, size_t length, int64_t seq, int64_t time_ns, const uint8_t *fp, size_t fp_len,
          const char *type)
{
    rows_i64(r, RI_OFFSET, offset);
    rows_i64(r, RI_SEQ, seq);
    rows_i64(r, RI_TIME_NS, time_ns);
    rows_i64(r, RI_TIME, floor_div(time_ns, 1000));
    rows_i64(r, RI_SIZE, (int64_t)(length + 63));
    rows_i64(r, RI_PAYLOAD_LENGTH, (int64_t)length);
    rows_i64(r, RI_EVENT_HOUR, floor_div(time_ns, 3600000000000LL) * 3600000000LL);
    rows_bytes(r, RS_SCHEMA, fp, fp_len);
    out_put(&r->data[RS_TYPE], type, strlen(type));
}

/* The Delta columns a row of another type leaves null. */
static void
rows_no_delta(Rows *r)
{
    rows_i64(r, RI_SEQUENCE_NO, 0);
    rows_i64(r, RI_WATERMARK_NS, 0);
}

/* (rows, int64s, strings, bitmaps): Scanner.run's result in place of text. */
static PyObject *
rows_result(const Rows *r)
{
    PyObject *ints = PyTuple_New(RI_COUNT), *strs = PyTuple_New(RS_COUNT), *bits = PyTuple_New(RB_COUNT);
    PyObject *res = NULL;
    if (!ints || !strs || !bits)
        goto done;
    for (int i = 0; i < RI_COUNT; i++) {
        PyObject *b = PyBytes_FromStringAndSize(r->i64[i].p ? r->i64[i].p : "", (Py_ssize_t)r->i64[i].len);
        if (!b)
            goto done;
        PyTuple_SET_ITEM(ints, i, b);
    }
    for (int i = 0; i < RS_COUNT; i++) {
        PyObject *pair = Py_BuildValue("(y#y#)", r->offsets[i].p ? r->offsets[i].p : "", (Py_ssize_t)r->offsets[i].len,
                                       r->data[i].p ? r->data[i].p : "", (Py_ssize_t)r->data[i].len);
        if (!pair)
            goto done;
        PyTuple_SET_ITEM(strs, i, pair);
    }
    for (int i = 0; i < RB_COUNT; i++) {
        PyObject *b = PyBytes_FromStringAndSize(r->bits[i].p ? r->bits[i].p : "", (Py_ssize_t)r->bits[i].len);
        if (!b)
            goto done;
        PyTuple_SET_ITEM(bits, i, b);
    }
    res = Py_BuildValue("(nOOO)", (Py_ssize_t)r->n, ints, strs, bits);
done:
    Py_XDECREF(ints);
    Py_XDECREF(strs);
    Py_XDECREF(bits);
    return res;
}

#endif
