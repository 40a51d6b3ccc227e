/* ripple_cli.codec.fast._speedups: the compiled fast lane of the codec.
 *
 * The pure-Python codec (framing.py, messages.py, delta.py, text.py,
 * analysis/sequence.py) is the definition of what ripple does.  This module
 * only does the common case of it faster, and gives up everywhere else:
 *
 *   Scanner.run(buf, pos, ...) walks whole envelopes from `pos` and consumes
 *   each one that is *boring*: valid (magic, version, length, CRC), flags 0,
 *   a payload of a known type that decodes exactly, a Delta whose key and
 *   delta decode with its schema (or whose schema is unknown), and, when
 *   stream rules are checked, no first Delta of an output.  For those it
 *   counts, applies the stream rules (recording the few problems they can
 *   raise in a compact form), and, when asked, writes the canonical line.
 *   It stops at the first envelope that is anything else (damage, a
 *   Handshake, a warning, a payload that does not decode...) and returns:
 *   the Python decoder then handles that envelope, words its problems, and
 *   the scanner is called again after it.  So every problem the fast lane
 *   does not produce itself is produced by the very same Python code.
 *
 *   Program is a schema compiled into a tiny bytecode (by program.py); the
 *   scanner interprets it to validate or print a Delta's key and delta.
 */
#define _GNU_SOURCE /* memmem, sched_getaffinity */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <sched.h>

#include "binprot.h"
#include "crc32c.h"
#include "layout.h"
#include "sexpout.h"
#include "jsonout.h"
#include "tableout.h"
#include "handshake.h"
#include "rowsout.h"

#define HEADER_SIZE 59
#define OVERHEAD 63
#define RENDER_SPAN (1 << 20) /* the envelopes a run renders at most (bytes) */

/* ------------------------------------------------------------------ Program */

/* The opcodes (OP_*) and the header words (code[PROG_KEY]: key node,
 * code[PROG_ROW]: row node (a record), code[PROG_CTORS]: first Patch
 * constructor atom) are in layout.h, from layout.py.  Nodes follow from
 * PROG_NODES; a child always comes after its parent, so the code has no
 * cycles and the interpreter's recursion is bounded. */
#define MAX_DEPTH 256

typedef struct {
    const char *text; /* printed form (quoted and escaped when it must be) */
    size_t len;
    int quoted;
    const char *json; /* its typed JSON text (program.py says which), or NULL */
    size_t json_len;
} Atom;

typedef struct {
    PyObject_HEAD
    int32_t *code;
    Py_ssize_t ncode;
    Atom *atoms;
    Py_ssize_t natoms;
    PyObject *atom_texts; /* owns the atoms' text */
    PyObject *json_texts; /* owns their JSON text; NULL: the schema has no JSON program */
    PyObject *names; /* the row's field names as on the wire (bytes), for the table; NULL: none */
    uint32_t nfields;
    /* Flat records (see flat_fields): per node, the index in `fields` of
     * its first field, or -1 when the node is not a flat record. */
    int32_t *flat;
    struct FlatField_ *fields;
} Program;

static PyTypeObject ProgramType;

static int
prog_check_node(const int32_t *code, Py_ssize_t ncode, Py_ssize_t natoms, int32_t node, int depth)
{
    if (depth > MAX_DEPTH || node < PROG_NODES || node >= ncode)
        return -1;
    const int32_t *c = code + node;
    Py_ssize_t left = ncode - node;
    switch (c[0]) {
    case OP_INT:
    case OP_INT32:
    case OP_INT64:
    case OP_FLOAT:
    case OP_BOOL:
    case OP_STRING:
        return 0;
    case OP_OPTION:
    case OP_LIST:
        if (left < 2 || c[1] <= node)
            return -1;
        return prog_check_node(code, ncode, natoms, c[1], depth + 1);
    case OP_RECORD:
        if (left < 2 || c[1] < 0 || left < 2 + 2 * (Py_ssize_t)c[1])
            return -1;
        for (int32_t i = 0; i < c[1]; i++) {
            int32_t atom = c[2 + 2 * i], child = c[3 + 2 * i];
            if (atom < 0 || atom >= natoms || child <= node)
                return -1;
            if (prog_check_node(code, ncode, natoms, child, depth + 1))
                return -1;
        }
        return 0;
    case OP_ENUM:
        if (left < 3 || c[1] < 0 || c[1] > 65536 || c[2] < 0 || (Py_ssize_t)c[2] + c[1] > natoms)
            return -1;
        return 0;
    }
    return -1;
}

/* A record is *flat* when every field is an int, a float, a bool or an
 * enum of at most 256 constructors: each field's size then follows from
 * its first byte, in the common cases with no call and no bounds check
 * (sk_rows).  `flat` gives, per node, the index in `fields` of a flat
 * record's first field, or -1. */
enum { FK_FLOAT, FK_INT, FK_BOOL, FK_ENUM };

typedef struct FlatField_ {
    uint8_t kind; /* of the field after the gap; FK_FLOAT only in a record's header entry */
    uint8_t gap; /* bytes of floats before it */
    uint16_t count; /* an enum's constructors; in the header entry, how many entries follow */
} FlatField;

/* Marks the flat records reachable from `node` (the code was checked by
 * prog_check_node: children inside it, depth bounded); a node shared by
 * two parents is seen once.  Each flat record is given its place in
 * `fields`: a header entry, then at most one entry a field. */
static void
flat_mark(const int32_t *code, int32_t *flat, int32_t node, Py_ssize_t *nentries)
{
    if (flat[node] != -2)
        return;
    flat[node] = -1;
    const int32_t *c = code + node;
    if (c[0] == OP_OPTION || c[0] == OP_LIST) {
        flat_mark(code, flat, c[1], nentries);
        return;
    }
    if (c[0] != OP_RECORD)
        return;
    int is_flat = c[1] > 0 && c[1] <= 28; /* 28 floats: a gap still fits a byte */
    for (int32_t i = 0; i < c[1]; i++) {
        const int32_t *f = code + c[3 + 2 * i];
        is_flat &= (f[0] >= OP_INT && f[0] <= OP_BOOL) || (f[0] == OP_ENUM && f[1] <= 256);
        flat_mark(code, flat, c[3 + 2 * i], nentries);
    }
    if (is_flat) {
        flat[node] = (int32_t)*nentries;
        *nentries += 1 + c[1];
    }
}

static int
flat_fields(Program *self)
{
    const int32_t *code = self->code;
    Py_ssize_t nentries = 0;
    self->flat = PyMem_Malloc((size_t)self->ncode * sizeof(int32_t));
    if (!self->flat) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t node = 0; node < self->ncode; node++)
        self->flat[node] = -2; /* not seen yet */
    flat_mark(code, self->flat, code[PROG_KEY], &nentries);
    flat_mark(code, self->flat, code[PROG_ROW], &nentries);
    if (!nentries)
        return 0;
    self->fields = PyMem_Calloc((size_t)nentries, sizeof(FlatField));
    if (!self->fields) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t node = PROG_NODES; node < self->ncode; node++) {
        if (self->flat[node] < 0)
            continue;
        const int32_t *c = code + node;
        FlatField *head = &self->fields[self->flat[node]];
        FlatField *ff = head + 1;
        unsigned gap = 0;
        for (int32_t i = 0; i < c[1]; i++) {
            const int32_t *f = code + c[3 + 2 * i];
            if (f[0] == OP_FLOAT) {
                gap += 8;
                continue;
            }
            ff->kind = f[0] == OP_BOOL ? FK_BOOL : f[0] == OP_ENUM ? FK_ENUM : FK_INT;
            ff->gap = (uint8_t)gap;
            ff->count = f[0] == OP_ENUM ? (uint16_t)f[1] : 0;
            gap = 0;
            ff++;
        }
        int all_ints = 1;
        for (FlatField *v = head + 1; v < ff; v++)
            all_ints &= v->kind == FK_INT;
        head->kind = all_ints ? FK_INT : FK_FLOAT;
        head->gap = (uint8_t)gap; /* the floats after the last other field */
        head->count = (uint16_t)(ff - head - 1);
    }
    return 0;
}

/* Program(code: bytes of int32, atoms: tuple of (text: bytes, quoted: bool),
 *         json: tuple of bytes, one an atom, or None,
 *         names: tuple of bytes, the row's field names, or None) */
static int
Program_init(Program *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"code", "atoms", "json", "names", NULL};
    Py_buffer code;
    PyObject *atoms, *json = Py_None, *names = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "y*O!|OO", kwlist, &code, &PyTuple_Type, &atoms, &json, &names))
        return -1;
    int rc = -1;
    if (self->code) {
        PyErr_SetString(PyExc_TypeError, "Program is already initialised");
        goto done;
    }
    if (code.len % 4 || code.len / 4 < PROG_NODES) {
        PyErr_SetString(PyExc_ValueError, "code: a whole number of int32, with the 3-word header");
        goto done;
    }
    self->ncode = code.len / 4;
    self->code = PyMem_Malloc((size_t)code.len);
    self->natoms = PyTuple_GET_SIZE(atoms);
    self->atoms = PyMem_Calloc((size_t)self->natoms + 1, sizeof(Atom));
    if (!self->code || !self->atoms) {
        PyErr_NoMemory();
        goto done;
    }
    memcpy(self->code, code.buf, (size_t)code.len);
    Py_INCREF(atoms);
    self->atom_texts = atoms;
    for (Py_ssize_t i = 0; i < self->natoms; i++) {
        PyObject *item = PyTuple_GET_ITEM(atoms, i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2 || !PyBytes_Check(PyTuple_GET_ITEM(item, 0))) {
            PyErr_SetString(PyExc_ValueError, "atoms: (text: bytes, quoted: bool) pairs");
            goto done;
        }
        PyObject *t = PyTuple_GET_ITEM(item, 0);
        self->atoms[i].text = PyBytes_AS_STRING(t);
        self->atoms[i].len = (size_t)PyBytes_GET_SIZE(t);
        self->atoms[i].quoted = PyObject_IsTrue(PyTuple_GET_ITEM(item, 1));
    }
    if (json != Py_None) {
        if (!PyTuple_Check(json) || PyTuple_GET_SIZE(json) != self->natoms) {
            PyErr_SetString(PyExc_ValueError, "json: a tuple of bytes, one an atom, or None");
            goto done;
        }
        for (Py_ssize_t i = 0; i < self->natoms; i++)
            if (!PyBytes_Check(PyTuple_GET_ITEM(json, i))) {
                PyErr_SetString(PyExc_ValueError, "json: a tuple of bytes, one an atom, or None");
                goto done;
            }
        self->json_texts = Py_NewRef(json);
        for (Py_ssize_t i = 0; i < self->natoms; i++) {
            PyObject *t = PyTuple_GET_ITEM(json, i);
            self->atoms[i].json = PyBytes_AS_STRING(t);
            self->atoms[i].json_len = (size_t)PyBytes_GET_SIZE(t);
        }
    }
    const int32_t *c = self->code;
    if (prog_check_node(c, self->ncode, self->natoms, c[PROG_KEY], 0) ||
        prog_check_node(c, self->ncode, self->natoms, c[PROG_ROW], 0) || c[c[PROG_ROW]] != OP_RECORD) {
        PyErr_SetString(PyExc_ValueError, "code: a bad node, or nested too deeply");
        goto done;
    }
    self->nfields = (uint32_t)c[c[PROG_ROW] + 1];
    if (c[PROG_CTORS] < 0 || (Py_ssize_t)c[PROG_CTORS] + self->nfields > self->natoms) {
        PyErr_SetString(PyExc_ValueError, "code: Patch constructor atoms out of range");
        goto done;
    }
    if (names != Py_None) {
        int ok = PyTuple_Check(names) && PyTuple_GET_SIZE(names) == (Py_ssize_t)self->nfields;
        for (Py_ssize_t i = 0; ok && i < PyTuple_GET_SIZE(names); i++)
            ok = PyBytes_Check(PyTuple_GET_ITEM(names, i));
        if (!ok) {
            PyErr_SetString(PyExc_ValueError, "names: a tuple of bytes, one a field of the row, or None");
            goto done;
        }
        self->names = Py_NewRef(names);
    }
    if (flat_fields(self))
        goto done;
    rc = 0;
done:
    PyBuffer_Release(&code);
    return rc;
}

static void
Program_dealloc(Program *self)
{
    PyMem_Free(self->flat);
    PyMem_Free(self->fields);
    PyMem_Free(self->code);
    PyMem_Free(self->atoms);
    Py_XDECREF(self->atom_texts);
    Py_XDECREF(self->json_texts);
    Py_XDECREF(self->names);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static inline void
put_atom(Out *o, const Atom *a)
{
    if (a->quoted) {
        out_put(o, a->text, a->len);
        o->need = 0;
    }
    else
        sx_plain(o, a->text, a->len);
}

/* Walk one value of type `node`: validate it (o == NULL) or also print it.
 * 0: ok; -1: does not decode (the Python reader raises); -2: a Python
 * exception is set. */
static int
walk(const Program *pg, int32_t node, Rd *r, Out *o)
{
    const int32_t *c = pg->code + node;
    switch (c[0]) {
    case OP_INT:
    case OP_INT32:
    case OP_INT64: {
        int64_t v;
        int bad = c[0] == OP_INT ? rd_int(r, &v) : c[0] == OP_INT32 ? rd_int32(r, &v) : rd_int_any(r, &v);
        if (bad)
            return -1;
        if (o)
            sx_int(o, v);
        return 0;
    }
    case OP_FLOAT: {
        double x;
        if (rd_float(r, &x))
            return -1;
        if (o && sx_float(o, x))
            return -2;
        return 0;
    }
    case OP_BOOL: {
        int b;
        if (rd_01(r, &b))
            return -1;
        if (o)
            sx_plain(o, b ? "true" : "false", b ? 4 : 5);
        return 0;
    }
    case OP_STRING: {
        const uint8_t *s;
        size_t n;
        if (rd_string(r, &s, &n))
            return -1;
        if (o)
            sx_atom(o, s, n);
        return 0;
    }
    case OP_OPTION: {
        int present;
        if (rd_01(r, &present))
            return -1;
        if (o)
            sx_open(o);
        if (present) {
            int e = walk(pg, c[1], r, o);
            if (e)
                return e;
        }
        if (o)
            sx_close(o);
        return 0;
    }
    case OP_LIST: {
        uint64_t n;
        if (rd_count(r, &n))
            return -1;
        if (o)
            sx_open(o);
        for (uint64_t i = 0; i < n; i++) {
            int e = walk(pg, c[1], r, o);
            if (e)
                return e;
        }
        if (o)
            sx_close(o);
        return 0;
    }
    case OP_RECORD: {
        if (o)
            sx_open(o);
        for (int32_t i = 0; i < c[1]; i++) {
            if (o) {
                sx_open(o);
                put_atom(o, &pg->atoms[c[2 + 2 * i]]);
            }
            int e = walk(pg, c[3 + 2 * i], r, o);
            if (e)
                return e;
            if (o)
                sx_close(o);
        }
        if (o)
            sx_close(o);
        return 0;
    }
    case OP_ENUM: {
        uint32_t t;
        if (rd_ctor(r, (uint32_t)c[1], &t))
            return -1;
        if (o)
            put_atom(o, &pg->atoms[c[2] + (int32_t)t]);
        return 0;
    }
    }
    return -1; /* unreachable: checked when the Program was made */
}

/* Validation only (verify): the same acceptance as walk, faster.  The
 * position is passed and returned by value (SK_BAD: does not decode), so
 * that it lives in a register: through `Rd *` every value paid a store
 * and a reload on the loop's critical path.  A primitive is checked where
 * its parent stands (no call per value, the common one-byte int first),
 * and a list of floats is one bounds check: a 4 KiB book snapshot is a
 * thousand values, and the per-value call, dispatch and memory round trip
 * were most of verify's time on such messages. */
#define SK_BAD ((size_t)-1)

/* An int that is not a one-byte code: the full readers. */
static size_t __attribute__((noinline))
sk_int_slow(int32_t op, const uint8_t *b, size_t len, size_t pos)
{
    Rd r = {b, pos, len};
    int64_t v;
    int e = op == OP_INT ? rd_int(&r, &v) : op == OP_INT32 ? rd_int32(&r, &v) : rd_int_any(&r, &v);
    return e ? SK_BAD : r.pos;
}

static size_t __attribute__((noinline))
sk_string(const uint8_t *b, size_t len, size_t pos)
{
    Rd r = {b, pos, len};
    const uint8_t *s;
    size_t n;
    return rd_string(&r, &s, &n) ? SK_BAD : r.pos;
}

/* One primitive (op <= OP_STRING) at pos, which is <= len. */
static inline size_t
sk_prim(int32_t op, const uint8_t *b, size_t len, size_t pos)
{
    switch (op) {
    case OP_FLOAT:
        return len - pos >= 8 ? pos + 8 : SK_BAD;
    case OP_INT:
    case OP_INT32:
    case OP_INT64:
        /* one byte, or the int16 code: in range for all three */
        if (pos < len && b[pos] < 0x80)
            return pos + 1;
        if (pos < len && b[pos] == 0xFE)
            return len - pos >= 3 ? pos + 3 : SK_BAD;
        return sk_int_slow(op, b, len, pos);
    case OP_BOOL:
        return pos < len && b[pos] <= 1 ? pos + 1 : SK_BAD;
    default:
        return sk_string(b, len, pos);
    }
}

static size_t sk(const Program *pg, int32_t node, const uint8_t *b, size_t len, size_t pos);

static inline size_t
sk_record(const Program *pg, const int32_t *c, const uint8_t *b, size_t len, size_t pos)
{
    for (int32_t i = 0; i < c[1] && pos != SK_BAD; i++) {
        int32_t child = c[3 + 2 * i];
        int32_t op = pg->code[child];
        pos = op <= OP_STRING ? sk_prim(op, b, len, pos) : sk(pg, child, b, len, pos);
    }
    return pos;
}

/* An int of a flat row, no bounds check (the row's budget was): the
 * one-byte, int16 and int32 codes, valid for Int, Int32 and Int64 alike;
 * anything else jumps to `other`, for the checked readers. */
#define SK_ROW_INT(p, other)                                                                                       \
    do {                                                                                                           \
        uint8_t x_ = b[p];                                                                                         \
        if (x_ < 0x80)                                                                                             \
            p += 1;                                                                                                \
        else if (x_ == 0xFE)                                                                                       \
            p += 3;                                                                                                \
        else if (x_ == 0xFD)                                                                                       \
            p += 5;                                                                                                \
        else                                                                                                       \
            goto other;                                                                                            \
    } while (0)

/* Rows whose fields are floats and ints, from pos, while they take the
 * fast path: *n counts down the rows left; returns the position of the
 * first one not taken (a row near the end, or with another int code).
 * One to three ints a row are unrolled, their gaps in registers: the
 * generic loop's per-field bookkeeping doubled the time of a book's
 * levels. */
static size_t
sk_int_rows(const FlatField *vars, int nvar, size_t tail, size_t maxrow, const uint8_t *b, size_t len, size_t pos,
            uint64_t *n)
{
    uint64_t left = *n;
    size_t g0 = vars[0].gap, g1 = nvar > 1 ? vars[1].gap : 0, g2 = nvar > 2 ? vars[2].gap : 0;
    switch (nvar) {
    case 1:
        for (; left && len - pos >= maxrow; left--) {
            size_t p = pos + g0;
            SK_ROW_INT(p, done);
            pos = p + tail;
        }
        break;
    case 2:
        for (; left && len - pos >= maxrow; left--) {
            size_t p = pos + g0;
            SK_ROW_INT(p, done);
            p += g1;
            SK_ROW_INT(p, done);
            pos = p + tail;
        }
        break;
    case 3:
        for (; left && len - pos >= maxrow; left--) {
            size_t p = pos + g0;
            SK_ROW_INT(p, done);
            p += g1;
            SK_ROW_INT(p, done);
            p += g2;
            SK_ROW_INT(p, done);
            pos = p + tail;
        }
        break;
    default:
        for (; left && len - pos >= maxrow; left--) {
            size_t p = pos;
            for (int k = 0; k < nvar; k++) {
                p += vars[k].gap;
                SK_ROW_INT(p, done);
            }
            pos = p + tail;
        }
    }
done:
    *n = left;
    return pos;
}

/* n records of node `rec` from pos.  A flat record's row is a plan: its
 * floats are only a known number of bytes to step over, and each other
 * field is checked with no call and, while the bytes left hold the
 * largest row (nine bytes a field), no bounds check.  Its branches follow
 * the row's pattern and are predicted, so the position's chain is only
 * adds.  A row with anything else (an int64 code, a negative int8, a bad
 * tag), a row near the end, and a record that is not flat, go through the
 * checked sk_record. */
static size_t
sk_rows(const Program *pg, int32_t rec, uint64_t n, const uint8_t *b, size_t len, size_t pos)
{
    const int32_t *c = pg->code + rec;
    int32_t first = pg->flat[rec];
    if (first < 0) {
        for (uint64_t i = 0; i < n && pos != SK_BAD; i++)
            pos = sk_record(pg, c, b, len, pos);
        return pos;
    }
    const FlatField *head = pg->fields + first, *vars = head + 1;
    int nvar = head->count;
    size_t tail = head->gap;
    size_t maxrow = 9 * (size_t)c[1];
    if (nvar == 0) /* floats only: rows of one size */
        return n > (len - pos) / tail ? SK_BAD : pos + tail * (size_t)n;
    if (head->kind == FK_INT) { /* every field but floats an int */
        while (n) {
            pos = sk_int_rows(vars, nvar, tail, maxrow, b, len, pos, &n);
            if (!n)
                break;
            pos = sk_record(pg, c, b, len, pos); /* the row the fast loop left */
            if (pos == SK_BAD)
                return SK_BAD;
            n--;
        }
        return pos;
    }
    for (uint64_t i = 0; i < n; i++) {
        if (len - pos >= maxrow) {
            size_t p = pos;
            int k = 0;
            for (; k < nvar; k++) {
                p += vars[k].gap;
                uint8_t x = b[p];
                if (vars[k].kind == FK_INT) {
                    if (x < 0x80)
                        p += 1;
                    else if (x == 0xFE) /* int16 */
                        p += 3;
                    else if (x == 0xFD) /* int32: in range for Int, Int32 and Int64 */
                        p += 5;
                    else
                        break;
                }
                else if (x < (vars[k].kind == FK_BOOL ? 2 : vars[k].count))
                    p += 1;
                else
                    break;
            }
            if (k == nvar) {
                pos = p + tail;
                continue;
            }
        }
        pos = sk_record(pg, c, b, len, pos);
        if (pos == SK_BAD)
            return SK_BAD;
    }
    return pos;
}

static size_t
sk(const Program *pg, int32_t node, const uint8_t *b, size_t len, size_t pos)
{
    const int32_t *c = pg->code + node;
    switch (c[0]) {
    case OP_OPTION:
        if (pos >= len || b[pos] > 1)
            return SK_BAD;
        return b[pos] ? sk(pg, c[1], b, len, pos + 1) : pos + 1;
    case OP_LIST: {
        Rd r = {b, pos, len};
        uint64_t n;
        if (rd_count(&r, &n))
            return SK_BAD;
        pos = r.pos;
        int32_t elem = pg->code[c[1]];
        if (elem == OP_FLOAT)
            return n > (len - pos) / 8 ? SK_BAD : pos + 8 * (size_t)n;
        if (elem == OP_RECORD) /* rows of a table: levels, fills, legs */
            return sk_rows(pg, c[1], n, b, len, pos);
        if (elem <= OP_STRING) {
            for (uint64_t i = 0; i < n && pos != SK_BAD; i++)
                pos = sk_prim(elem, b, len, pos);
            return pos;
        }
        for (uint64_t i = 0; i < n && pos != SK_BAD; i++)
            pos = sk(pg, c[1], b, len, pos);
        return pos;
    }
    case OP_RECORD:
        return sk_record(pg, c, b, len, pos);
    case OP_ENUM: {
        Rd r = {b, pos, len};
        uint32_t t;
        return rd_ctor(&r, (uint32_t)c[1], &t) ? SK_BAD : r.pos;
    }
    }
    return sk_prim(c[0], b, len, pos);
}

static int
skip(const Program *pg, int32_t node, Rd *r)
{
    size_t pos = sk(pg, node, r->b, r->len, r->pos);
    if (pos == SK_BAD)
        return -1;
    r->pos = pos;
    return 0;
}

/* CompiledSchema.read_key / validate's key part: the value, exactly. */
static int
walk_key(const Program *pg, const uint8_t *s, size_t n, Out *o)
{
    Rd r = {s, 0, n};
    int e = o ? walk(pg, pg->code[PROG_KEY], &r, o) : skip(pg, pg->code[PROG_KEY], &r);
    return e ? e : (r.pos == n ? 0 : -1);
}

/* CompiledSchema.read_delta + delta_to_sexp (or validate's delta part). */
static int
walk_delta(const Program *pg, const uint8_t *s, size_t n, Out *o)
{
    Rd r = {s, 0, n};
    uint32_t tag;
    int e = 0;
    if (rd_ctor(&r, 3, &tag))
        return -1;
    const int32_t *row = pg->code + pg->code[PROG_ROW];
    if (tag == 0) {
        if (o) {
            sx_open(o);
            sx_plain(o, "Set", 3);
        }
        e = o ? walk(pg, pg->code[PROG_ROW], &r, o) : skip(pg, pg->code[PROG_ROW], &r);
        if (o)
            sx_close(o);
    }
    else if (tag == 1) {
        uint64_t count;
        if (rd_count(&r, &count))
            return -1;
        if (o) {
            sx_open(o);
            sx_plain(o, "Patch", 5);
            sx_open(o);
        }
        for (uint64_t i = 0; i < count && !e; i++) {
            uint32_t f;
            if (rd_ctor(&r, pg->nfields, &f))
                return -1;
            if (o) {
                sx_open(o);
                put_atom(o, &pg->atoms[pg->code[PROG_CTORS] + (int32_t)f]);
            }
            e = o ? walk(pg, row[3 + 2 * f], &r, o) : skip(pg, row[3 + 2 * f], &r);
            if (o)
                sx_close(o);
        }
        if (o) {
            sx_close(o);
            sx_close(o);
        }
    }
    else if (o)
        sx_plain(o, "Remove", 6);
    return e ? e : (r.pos == n ? 0 : -1);
}

/* Walk one value of type `node` and write its typed JSON (values.py's
 * to_json, as render/json.py dumps it).  The same acceptance and return
 * codes as walk.  Records' keys and enums' names are the atoms' JSON
 * texts, made by program.py with the very function the Python lane prints
 * with. */
static int
jwalk(const Program *pg, int32_t node, Rd *r, Out *o)
{
    const int32_t *c = pg->code + node;
    switch (c[0]) {
    case OP_INT:
    case OP_INT32:
    case OP_INT64: {
        int64_t v;
        int bad = c[0] == OP_INT ? rd_int(r, &v) : c[0] == OP_INT32 ? rd_int32(r, &v) : rd_int_any(r, &v);
        if (bad)
            return -1;
        js_int(o, v);
        return 0;
    }
    case OP_FLOAT: {
        double x;
        if (rd_float(r, &x))
            return -1;
        return js_float(o, x) ? -2 : 0;
    }
    case OP_BOOL: {
        int b;
        if (rd_01(r, &b))
            return -1;
        if (b)
            JS_LIT(o, "true");
        else
            JS_LIT(o, "false");
        return 0;
    }
    case OP_STRING: {
        const uint8_t *s;
        size_t n;
        if (rd_string(r, &s, &n))
            return -1;
        js_bytes(o, s, n);
        return 0;
    }
    case OP_OPTION: {
        int present;
        if (rd_01(r, &present))
            return -1;
        if (!present) {
            JS_LIT(o, "null");
            return 0;
        }
        /* Some of an option is a one-element list: Some None is [null], None null */
        int nested = pg->code[c[1]] == OP_OPTION;
        if (nested)
            out_ch(o, '[');
        int e = jwalk(pg, c[1], r, o);
        if (nested)
            out_ch(o, ']');
        return e;
    }
    case OP_LIST: {
        uint64_t n;
        if (rd_count(r, &n))
            return -1;
        out_ch(o, '[');
        for (uint64_t i = 0; i < n; i++) {
            if (i)
                out_ch(o, ',');
            int e = jwalk(pg, c[1], r, o);
            if (e)
                return e;
        }
        out_ch(o, ']');
        return 0;
    }
    case OP_RECORD: {
        out_ch(o, '{');
        for (int32_t i = 0; i < c[1]; i++) {
            const Atom *a = &pg->atoms[c[2 + 2 * i]];
            if (i)
                out_ch(o, ',');
            out_put(o, a->json, a->json_len);
            out_ch(o, ':');
            int e = jwalk(pg, c[3 + 2 * i], r, o);
            if (e)
                return e;
        }
        out_ch(o, '}');
        return 0;
    }
    case OP_ENUM: {
        uint32_t t;
        if (rd_ctor(r, (uint32_t)c[1], &t))
            return -1;
        const Atom *a = &pg->atoms[c[2] + (int32_t)t];
        out_put(o, a->json, a->json_len);
        return 0;
    }
    }
    return -1; /* unreachable: checked when the Program was made */
}

/* The key's JSON (key.to_json). */
static int
jwalk_key(const Program *pg, const uint8_t *s, size_t n, Out *o)
{
    Rd r = {s, 0, n};
    int e = jwalk(pg, pg->code[PROG_KEY], &r, o);
    return e ? e : (r.pos == n ? 0 : -1);
}

/* The delta's JSON (CompiledSchema.delta_to_json). */
static int
jwalk_delta(const Program *pg, const uint8_t *s, size_t n, Out *o)
{
    Rd r = {s, 0, n};
    uint32_t tag;
    int e = 0;
    if (rd_ctor(&r, 3, &tag))
        return -1;
    const int32_t *row = pg->code + pg->code[PROG_ROW];
    if (tag == 0) {
        JS_LIT(o, "{\"op\":\"set\",\"row\":");
        e = jwalk(pg, pg->code[PROG_ROW], &r, o);
        out_ch(o, '}');
    }
    else if (tag == 1) {
        uint64_t count;
        if (rd_count(&r, &count))
            return -1;
        JS_LIT(o, "{\"op\":\"patch\",\"updates\":[");
        for (uint64_t i = 0; i < count && !e; i++) {
            uint32_t f;
            if (rd_ctor(&r, pg->nfields, &f))
                return -1;
            if (i)
                out_ch(o, ',');
            /* the Patch constructors' atoms carry the field's name as JSON */
            const Atom *a = &pg->atoms[pg->code[PROG_CTORS] + (int32_t)f];
            JS_LIT(o, "{\"field\":");
            out_put(o, a->json, a->json_len);
            JS_LIT(o, ",\"value\":");
            e = jwalk(pg, row[3 + 2 * f], &r, o);
            out_ch(o, '}');
        }
        JS_LIT(o, "]}");
    }
    else
        JS_LIT(o, "{\"op\":\"remove\"}");
    return e ? e : (r.pos == n ? 0 : -1);
}

/* The table's summary of a delta after "#N " (codec/summary.py): "Set "
 * or "Patch " and name=value pairs (the name as on the wire, the value's
 * one-line text as `sexp_text` prints it), or "Remove".  The program must
 * have its names.  Codes as walk. */
static int
tb_delta(const Program *pg, const uint8_t *s, size_t n, Out *o)
{
    Rd r = {s, 0, n};
    uint32_t tag;
    int e = 0;
    if (rd_ctor(&r, 3, &tag))
        return -1;
    const int32_t *row = pg->code + pg->code[PROG_ROW];
    if (tag == 0 || tag == 1) {
        uint64_t count = pg->nfields;
        if (tag == 1 && rd_count(&r, &count))
            return -1;
        if (tag == 0)
            OUT_LIT(o, "Set ");
        else
            OUT_LIT(o, "Patch ");
        for (uint64_t i = 0; i < count && !e; i++) {
            uint32_t f = (uint32_t)i;
            if (tag == 1 && rd_ctor(&r, pg->nfields, &f))
                return -1;
            if (i)
                out_ch(o, ' ');
            PyObject *name = PyTuple_GET_ITEM(pg->names, (Py_ssize_t)f);
            out_put(o, PyBytes_AS_STRING(name), (size_t)PyBytes_GET_SIZE(name));
            OUT_LIT(o, "=");
            e = walk(pg, row[3 + 2 * f], &r, o);
        }
    }
    else
        OUT_LIT(o, "Remove");
    return e ? e : (r.pos == n ? 0 : -1);
}

static int
prog_ready(Program *self)
{
    if (self->code)
        return 1;
    PyErr_SetString(PyExc_ValueError, "Program not initialised");
    return 0;
}

static PyObject *
text_result(Out *o, int e)
{
    PyObject *res = NULL;
    if (e == -2 || o->failed) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
    }
    else if (e == -1)
        res = Py_NewRef(Py_None);
    else
        res = PyBytes_FromStringAndSize(o->p ? o->p : "", (Py_ssize_t)o->len);
    PyMem_Free(o->p);
    return res;
}

typedef int (*walker)(const Program *, const uint8_t *, size_t, Out *);

/* The text one walker prints for a buffer, or None where it fails. */
static PyObject *
walk_text(Program *self, PyObject *arg, walker fn)
{
    Py_buffer b;
    if (!prog_ready(self) || PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE))
        return NULL;
    Out o = {0};
    int e = fn(self, b.buf, (size_t)b.len, &o);
    PyBuffer_Release(&b);
    return text_result(&o, e);
}

/* For the tests: the key's text as key.to_sexp + to_string prints it, or
 * None where read_key raises. */
static PyObject *
Program_key_text(Program *self, PyObject *arg)
{
    return walk_text(self, arg, walk_key);
}

/* For the tests: the delta's text as delta_to_sexp + to_string prints it,
 * or None where read_delta raises. */
static PyObject *
Program_delta_text(Program *self, PyObject *arg)
{
    return walk_text(self, arg, walk_delta);
}

/* For the tests: CompiledSchema.validate(key, delta) does not raise. */
static PyObject *
Program_check(Program *self, PyObject *args)
{
    Py_buffer k, d;
    if (!prog_ready(self) || !PyArg_ParseTuple(args, "y*y*", &k, &d))
        return NULL;
    int e = walk_key(self, k.buf, (size_t)k.len, NULL);
    if (!e)
        e = walk_delta(self, d.buf, (size_t)d.len, NULL);
    PyBuffer_Release(&k);
    PyBuffer_Release(&d);
    return PyBool_FromLong(e == 0);
}

static int
prog_has_json(Program *self)
{
    if (self->json_texts)
        return 1;
    PyErr_SetString(PyExc_ValueError, "Program made without JSON texts");
    return 0;
}

/* For the tests: the key's JSON as key.to_json + dumps prints it, or None. */
static PyObject *
Program_key_json(Program *self, PyObject *arg)
{
    return prog_ready(self) && prog_has_json(self) ? walk_text(self, arg, jwalk_key) : NULL;
}

/* For the tests: the delta's JSON as delta_to_json + dumps prints it, or None. */
static PyObject *
Program_delta_json(Program *self, PyObject *arg)
{
    return prog_ready(self) && prog_has_json(self) ? walk_text(self, arg, jwalk_delta) : NULL;
}

static PyMethodDef Program_methods[] = {
    {"key_json", (PyCFunction)Program_key_json, METH_O, "The key's typed JSON, or None if it does not decode."},
    {"delta_json", (PyCFunction)Program_delta_json, METH_O, "The delta's typed JSON, or None."},
    {"key_text", (PyCFunction)Program_key_text, METH_O, "The key's one-line text, or None if it does not decode."},
    {"delta_text", (PyCFunction)Program_delta_text, METH_O, "The delta's one-line text, or None."},
    {"check", (PyCFunction)Program_check, METH_VARARGS, "Whether key and delta bytes decode exactly."},
    {NULL},
};

static PyTypeObject ProgramType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ripple_cli.codec.fast._speedups.Program",
    .tp_basicsize = sizeof(Program),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A schema compiled for the fast lane (see program.py).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Program_init,
    .tp_dealloc = (destructor)Program_dealloc,
    .tp_methods = Program_methods,
};

/* ------------------------------------------------------------------ Scanner */

/* Problem records, REC_WORDS int64 each (kinds and word order in layout.h,
 * from layout.py).  lane.py turns them into the Problems
 * analysis/sequence.py would have made. */

#define MAX_FPS 64

typedef struct {
    uint8_t raw[32]; /* as in the header */
    PyObject *fp; /* the fingerprint, trailing NULs removed */
    int known; /* the registry has the schema */
    Program *prog; /* its program, NULL when known but not compiled */
    Py_ssize_t name; /* index in the run's `names`, -1 until a record needs it */
} FpEntry;

typedef struct FrameRec FrameRec; /* below, with Run */
#define MAX_SEGMENTS 8 /* par_scan's threads at most */

typedef struct {
    PyObject_HEAD
    long long max_payload;
    int render; /* RENDER_NONE, RENDER_SEXP (canonical lines), RENDER_JSON or RENDER_TABLE (layout.h) */
    int raw; /* DeltaMode.RAW: no schema is applied to Deltas */
    int rules; /* stream rules (verify): envelope seq, Delta sequence_no */
    PyObject *resolve; /* fingerprint -> (known, Program | None) */
    /* A selection's necessary conditions (lane.py: a Prefilter).  An
     * envelope that fails one is consumed, counted and not shown; one that
     * may pass is left to Python, which decodes it and judges it by the
     * whole selection, or, when the conditions are the whole selection
     * (`exact`), rendered here. */
    int select;
    int exact; /* the conditions are the whole selection: those that pass are rendered here */
    unsigned tags; /* bit t: type tag t may pass */
    PyObject *outputs; /* tuple of bytes: a Delta's output is one of them; NULL: any */
    PyObject *keys; /* tuple of bytes: a Delta's key text is one of them; NULL: any */
    Out scratch; /* a key's text, to compare */
    Out cell; /* a table cell's text, before it is escaped */
    Out out; /* the text, reused from call to call */
    Rows rows; /* RENDER_ROWS: the columns, reused from call to call */
    int busy; /* in run: `out` is in use (resolve must not call run again) */
    /* The registry's answers, kept from run to run unless the caller says
     * they may have changed (a Handshake went through Python in between):
     * a capture calls run once a packet, and asking resolve each time for
     * each fingerprint cost more than the packet's envelopes. */
    FpEntry fps[MAX_FPS];
    int nfps;
    /* Where the last run's last envelope of each type tag starts in its
     * buffer, -1 for none (`lasts`): the tap's live view reads the last
     * Delta's and Heartbeat's fields there, a few per run. */
    Py_ssize_t last_at[7]; /* [6]: the last Delta with a watermark */
    /* par_scan's records (SegRec), a buffer per segment, kept from run to run */
    struct SegRec *par_recs[MAX_SEGMENTS];
    size_t par_cap[MAX_SEGMENTS];
} Scanner;

static void
scanner_forget(Scanner *sc)
{
    for (int i = 0; i < sc->nfps; i++) {
        Py_CLEAR(sc->fps[i].fp);
        Py_CLEAR(sc->fps[i].prog);
    }
    sc->nfps = 0;
}

#define MAX_SLOTS 256

typedef struct {
    PyObject *key; /* (worker, output), a key of the checker's last_applied */
    const char *output;
    size_t output_len;
    int64_t last;
    int dirty;
    Py_ssize_t name;
} Slot;

typedef struct {
    Scanner *sc;
    long long base; /* stream offset of buf[0] */
    Slot slots[MAX_SLOTS];
    int nslots;
    PyObject *worker;
    PyObject *applied;
    int has_last;
    int64_t last_seq;
    int64_t *recs;
    size_t nrecs, caprecs; /* in words */
    PyObject *names;
    int has_wm; /* the Delta run_frame last read carries a watermark */
    int nogil; /* a segment's scan without the GIL (par_scan): no call into Python, a stop instead */
} Run;

/* What the stream rules need of an envelope run_frame accepted: they are
 * applied at once (run_rules), or, after a parallel scan, in stream order
 * from these records. */
struct FrameRec {
    size_t at; /* index in the buffer */
    int64_t seq, sequence_no;
    const uint8_t *output; /* a Delta's source_output */
    size_t output_len;
    FpEntry *fe; /* a Delta's schema entry (NULL in RAW mode without rules) */
    uint32_t length;
    uint8_t tag, has_wm;
};

static int
run_record(Run *cx, int64_t kind, int64_t off, int64_t seq, int64_t a, int64_t b, int64_t c)
{
    if (cx->caprecs - cx->nrecs < REC_WORDS) {
        size_t cap = cx->caprecs ? 2 * cx->caprecs : 64 * REC_WORDS;
        int64_t *p = PyMem_Realloc(cx->recs, cap * sizeof(int64_t));
        if (!p) {
            PyErr_NoMemory();
            return -1;
        }
        cx->recs = p;
        cx->caprecs = cap;
    }
    int64_t *r = cx->recs + cx->nrecs;
    r[REC_AT_KIND] = kind, r[REC_AT_OFFSET] = off, r[REC_AT_SEQ] = seq;
    r[REC_AT_A] = a, r[REC_AT_B] = b, r[REC_AT_C] = c;
    cx->nrecs += REC_WORDS;
    return 0;
}

static Py_ssize_t
run_name(Run *cx, Py_ssize_t *slot, PyObject *obj)
{
    if (*slot < 0) {
        if (PyList_Append(cx->names, obj))
            return -1;
        *slot = PyList_GET_SIZE(cx->names) - 1;
    }
    return *slot;
}

static size_t
fp_len(const uint8_t *raw)
{
    size_t n = 32;
    while (n && raw[n - 1] == 0)
        n--;
    return n;
}

/* The registry's answer for a header's fingerprint: NULL with an exception
 * set, or NULL without one when the cache is full (stop). */
static FpEntry *
run_fp(Run *cx, const uint8_t *raw)
{
    Scanner *sc = cx->sc;
    for (int i = 0; i < sc->nfps; i++)
        if (!memcmp(sc->fps[i].raw, raw, 32))
            return &sc->fps[i];
    if (cx->nogil)
        return NULL; /* the registry is Python's: the scan stops here */
    if (sc->nfps == MAX_FPS)
        scanner_forget(sc); /* many schemas over time: start the cache over (no entry outlives its frame) */
    PyObject *fp = PyBytes_FromStringAndSize((const char *)raw, (Py_ssize_t)fp_len(raw));
    if (!fp)
        return NULL;
    PyObject *ans = PyObject_CallOneArg(cx->sc->resolve, fp);
    if (!ans) {
        Py_DECREF(fp);
        return NULL;
    }
    if (!PyTuple_Check(ans) || PyTuple_GET_SIZE(ans) != 2) {
        PyErr_SetString(PyExc_TypeError, "resolve must return (known, Program | None)");
        Py_DECREF(fp);
        Py_DECREF(ans);
        return NULL;
    }
    PyObject *prog = PyTuple_GET_ITEM(ans, 1);
    int known = PyObject_IsTrue(PyTuple_GET_ITEM(ans, 0));
    if (known < 0) {
        Py_DECREF(fp);
        Py_DECREF(ans);
        return NULL;
    }
    FpEntry *e = &sc->fps[sc->nfps++];
    memcpy(e->raw, raw, 32);
    e->fp = fp;
    e->known = known;
    int usable = PyObject_TypeCheck(prog, &ProgramType) && ((Program *)prog)->code;
    e->prog = usable ? (Program *)Py_NewRef(prog) : NULL;
    e->name = -1;
    Py_DECREF(ans);
    return e;
}

/* The checker's last applied sequence_no of (worker, output).  1: found;
 * 0: not there, or no room (stop: Python handles a first Delta); -1: error. */
static int
run_slot(Run *cx, const uint8_t *output, size_t n, Slot **found)
{
    for (int i = 0; i < cx->nslots; i++) {
        Slot *s = &cx->slots[i];
        if (s->output_len == n && !memcmp(s->output, output, n)) {
            *found = s;
            return 1;
        }
    }
    if (cx->nslots == MAX_SLOTS)
        return 0;
    PyObject *out = PyBytes_FromStringAndSize((const char *)output, (Py_ssize_t)n);
    if (!out)
        return -1;
    PyObject *key = PyTuple_Pack(2, cx->worker, out);
    Py_DECREF(out);
    if (!key)
        return -1;
    PyObject *v = PyDict_GetItemWithError(cx->applied, key);
    if (!v) {
        Py_DECREF(key);
        return PyErr_Occurred() ? -1 : 0;
    }
    int overflow;
    long long last = PyLong_Check(v) ? PyLong_AsLongLongAndOverflow(v, &overflow) : (overflow = 1, 0);
    if (overflow || (last == -1 && PyErr_Occurred()) || last < INT63_MIN || last > INT63_MAX) {
        PyErr_Clear(); /* not a sequence_no the checker stored: let Python judge */
        Py_DECREF(key);
        return 0;
    }
    Slot *s = &cx->slots[cx->nslots++];
    s->key = key;
    s->output = PyBytes_AS_STRING(PyTuple_GET_ITEM(key, 1));
    s->output_len = n;
    s->last = last;
    s->dirty = 0;
    s->name = -1;
    *found = s;
    return 1;
}

/* The envelope_view prefix: ((seq S)(time_ns T)(schema FP)(msg(CTOR  */
static void
put_head(Out *o, int64_t seq, int64_t time_ns, const uint8_t *raw_fp, const char *ctor)
{
    sx_open(o);
    sx_open(o);
    sx_plain(o, "seq", 3);
    sx_int(o, seq);
    sx_close(o);
    sx_open(o);
    sx_plain(o, "time_ns", 7);
    sx_int(o, time_ns);
    sx_close(o);
    sx_open(o);
    sx_plain(o, "schema", 6);
    sx_atom(o, raw_fp, fp_len(raw_fp));
    sx_close(o);
    sx_open(o);
    sx_plain(o, "msg", 3);
    sx_open(o);
    sx_plain(o, ctor, strlen(ctor));
    sx_open(o); /* the record */
}

/* ( name  -- a record field is opened, its value comes next */
static inline void
put_field(Out *o, const char *name)
{
    sx_open(o);
    sx_plain(o, name, strlen(name));
}

/* closes the last field, the record, the constructor, msg, the envelope */
static inline void
put_tail(Out *o)
{
    OUT_LIT(o, ")))))\n");
}

/* The envelope's JSON object after its head (render/json.py writes
 * `{"v":1,` and where it came from): "offset":..,"size":..,"seq":..,
 * "time_ns":..,"time":"..","schema":..,"flags":0,"type":"T","msg":{ */
static void
put_json_head(Out *o, long long offset, size_t length, int64_t seq, int64_t time_ns, const uint8_t *raw_fp,
              const char *type)
{
    JS_LIT(o, "\"offset\":");
    js_int(o, offset);
    JS_LIT(o, ",\"size\":");
    js_int(o, (int64_t)(OVERHEAD + length));
    JS_LIT(o, ",\"seq\":");
    js_int(o, seq);
    JS_LIT(o, ",\"time_ns\":");
    js_int(o, time_ns);
    JS_LIT(o, ",\"time\":");
    js_time(o, time_ns);
    JS_LIT(o, ",\"schema\":");
    js_bytes(o, raw_fp, fp_len(raw_fp));
    JS_LIT(o, ",\"flags\":0,\"type\":\"");
    out_put(o, type, strlen(type));
    JS_LIT(o, "\",\"msg\":{");
}

/* "name": -- a field of the msg object; `first` has no comma before it */
static inline void
put_json_field(Out *o, const char *name, int first)
{
    if (!first)
        out_ch(o, ',');
    out_ch(o, '"');
    out_put(o, name, strlen(name));
    JS_LIT(o, "\":");
}

/* The head of a message's JSON: its envelope's fields and `"msg":{` for
 * decode's JSON lines, or, for an export row (RENDER_ROWS, j the msg_json
 * column), the envelope's columns and the msg object's `{`. */
static void
json_open(Scanner *sc, Out *j, long long offset, size_t length, int64_t seq, int64_t time_ns, const uint8_t *raw_fp,
          const char *type)
{
    if (sc->render == RENDER_ROWS) {
        rows_head(&sc->rows, offset, length, seq, time_ns, raw_fp, fp_len(raw_fp), type);
        out_ch(j, '{');
    }
    else
        put_json_head(j, offset, length, seq, time_ns, raw_fp, type);
}

static inline void
json_close(Scanner *sc, Out *j)
{
    if (sc->render == RENDER_ROWS)
        out_ch(j, '}');
    else
        JS_LIT(j, "}}\n");
}

static int
bytes_in(PyObject *tuple, const uint8_t *s, size_t n)
{
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tuple); i++) {
        PyObject *b = PyTuple_GET_ITEM(tuple, i);
        if ((size_t)PyBytes_GET_SIZE(b) == n && !memcmp(PyBytes_AS_STRING(b), s, n))
            return 1;
    }
    return 0;
}

/* Whether a Delta may pass the prefilter: 1 yes (Python judges it), 0 no,
 * -1 a Python exception is set.  Its key's text is its sexp when its schema
 * is applied (`prog`), else 0x and the bytes in hex (summary.key_text). */
static int
delta_may_pass(Scanner *sc, const Program *prog, const uint8_t *output, size_t output_len, const uint8_t *key,
               size_t key_len)
{
    if (!(sc->tags >> 1 & 1))
        return 0;
    if (sc->outputs && !bytes_in(sc->outputs, output, output_len))
        return 0;
    if (!sc->keys)
        return 1;
    Out *k = &sc->scratch;
    k->len = 0;
    k->need = 0;
    k->failed = 0;
    int e = 0;
    if (prog)
        e = walk_key(prog, key, key_len, k);
    else {
        static const char hex[] = "0123456789abcdef";
        out_put(k, "0x", 2);
        for (size_t i = 0; i < key_len; i++) {
            out_ch(k, hex[key[i] >> 4]);
            out_ch(k, hex[key[i] & 15]);
        }
    }
    if (e == -2 || k->failed) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        return -1;
    }
    return e == -1 || bytes_in(sc->keys, (const uint8_t *)k->p, k->len);
}

/* A table row's first cells: offset, seq, time, type, schema; a tab after each. */
static void
tb_head(Out *t, long long offset, int64_t seq, int64_t time_ns, const char *type, const uint8_t *raw_fp)
{
    tb_int(t, offset);
    out_ch(t, '\t');
    tb_int(t, seq);
    out_ch(t, '\t');
    tb_time(t, time_ns);
    out_ch(t, '\t');
    out_put(t, type, strlen(type));
    out_ch(t, '\t');
    tb_cell(t, raw_fp, fp_len(raw_fp));
    out_ch(t, '\t');
}

/* The scanner's cell buffer, emptied. */
static Out *
tb_scratch(Scanner *sc)
{
    Out *c = &sc->cell;
    c->len = 0;
    c->need = 0;
    return c;
}

/* The cell composed in c, escaped into t, and what follows it. */
static int
tb_flush(Out *t, Out *c, char after)
{
    if (c->failed) {
        c->failed = 0;
        PyErr_NoMemory();
        return -1;
    }
    tb_cell(t, (const uint8_t *)c->p, c->len);
    out_ch(t, after);
    return 0;
}

/* The payload of one boring envelope: 0 consumed (effects applied), 1 stop
 * (the Python decoder takes it), -1 a Python exception is set. */
static int run_rules(Run *cx, const FrameRec *fr, Slot *slot);

/* One whole, valid envelope at h (index `at` in the buffer): 0, it is
 * boring (rendered when asked, and its stream rules applied unless
 * cx->nogil, `fr` filled for them); 1, Python's (stop); -1, an error. */
static int
run_frame(Run *cx, const uint8_t *h, size_t length, long long offset, size_t at, FrameRec *fr)
{
    Scanner *sc = cx->sc;
    uint8_t tag = h[5];
    Rows *rw = sc->render == RENDER_ROWS ? &sc->rows : NULL;
    Out *o = sc->render == RENDER_SEXP ? &sc->out : NULL;
    /* An export row's other types are their JSON (msg_json) */
    Out *j = sc->render == RENDER_JSON ? &sc->out : rw && tag != 1 ? &rw->data[RS_MSG_JSON] : NULL;
    Out *t = sc->render == RENDER_TABLE ? &sc->out : NULL;
    const uint8_t *own_worker = NULL; /* a Heartbeat's or Checkpoint_ack's worker_id */
    size_t own_worker_len = 0;
    if (sc->select && tag != 1) {
        /* another type passes when the prefilter allows it and asks nothing of Deltas alone */
        int may = (sc->tags >> tag & 1) && !sc->outputs && !sc->keys;
        if (may && !sc->exact)
            return 1;
        if (!may)
            o = j = t = NULL;
    }
    int64_t seq = (int64_t)le64(h + 7);
    int64_t time_ns = (int64_t)le64(h + 15);
    const uint8_t *raw_fp = h + 23;
    Rd pr = {h + HEADER_SIZE, 0, length};
    FpEntry *fe = NULL;
    const uint8_t *output = NULL;
    size_t output_len = 0;
    int64_t sequence_no = 0;
    int e;

    switch (tag) {
    case 1: { /* Delta: read_delta_msg, then the schema */
        const uint8_t *key, *delta;
        size_t key_len, delta_len;
        int64_t wm = 0;
        int has_wm;
        if (rd_string(&pr, &output, &output_len) || rd_string(&pr, &key, &key_len) ||
            rd_string(&pr, &delta, &delta_len) || rd_int(&pr, &sequence_no) || rd_01(&pr, &has_wm) ||
            (has_wm && rd_int_any(&pr, &wm)) || pr.pos != pr.len)
            return 1;
        cx->has_wm = has_wm;
        if (!sc->raw || sc->rules) {
            fe = run_fp(cx, raw_fp);
            if (!fe)
                return !cx->nogil && PyErr_Occurred() ? -1 : 1;
        }
        int typed = !sc->raw && fe->known;
        if (typed && (!fe->prog || (j && !fe->prog->json_texts)))
            return 1;
        if (sc->select) {
            int may = delta_may_pass(sc, typed ? fe->prog : NULL, output, output_len, key, key_len);
            if (may < 0)
                return -1;
            if (may && !sc->exact)
                return 1; /* Python judges it by the whole selection */
            if (!may)
                o = j = t = NULL; /* passed over: validated, counted, not shown */
        }
        if (rw) {
            rows_head(rw, offset, length, seq, time_ns, raw_fp, fp_len(raw_fp), "Delta");
            rows_i64(rw, RI_SEQUENCE_NO, sequence_no);
            rows_i64(rw, RI_WATERMARK_NS, has_wm ? wm : 0);
            rows_bytes(rw, RS_SOURCE_OUTPUT, output, output_len);
            size_t start = rw->data[RS_KEY].len;
            if (!typed)
                sx_atom(rows_text(rw, RS_KEY), key, key_len);
            else if ((e = walk_key(fe->prog, key, key_len, rows_text(rw, RS_KEY))) != 0)
                return e == -1 ? 1 : -1;
            rows_text_done(rw, RS_KEY, start);
            start = rw->data[RS_DELTA].len;
            if (!typed)
                sx_atom(rows_text(rw, RS_DELTA), delta, delta_len);
            else if ((e = walk_delta(fe->prog, delta, delta_len, rows_text(rw, RS_DELTA))) != 0)
                return e == -1 ? 1 : -1;
            rows_text_done(rw, RS_DELTA, start);
            rows_end(rw, 1u << RB_HAS_DELTA | (has_wm ? 1u << RB_HAS_WATERMARK : 0) | (typed ? 1u << RB_SCHEMA_KNOWN : 0));
        }
        else if (o) {
            put_head(o, seq, time_ns, raw_fp, "Delta");
            put_field(o, "source_output");
            sx_atom(o, output, output_len);
            sx_close(o);
            put_field(o, "key");
            if (typed) {
                if ((e = walk_key(fe->prog, key, key_len, o)) != 0)
                    return e == -1 ? 1 : -1;
                sx_close(o);
                put_field(o, "delta");
                if ((e = walk_delta(fe->prog, delta, delta_len, o)) != 0)
                    return e == -1 ? 1 : -1;
            }
            else {
                sx_atom(o, key, key_len);
                sx_close(o);
                put_field(o, "delta_bytes");
                sx_atom(o, delta, delta_len);
            }
            sx_close(o);
            put_field(o, "sequence_no");
            sx_int(o, sequence_no);
            sx_close(o);
            put_field(o, "watermark_ns");
            sx_open(o);
            if (has_wm)
                sx_int(o, wm);
            sx_close(o);
            put_tail(o);
        }
        else if (j) {
            json_open(sc, j, offset, length, seq, time_ns, raw_fp, "Delta");
            put_json_field(j, "source_output", 1);
            js_bytes(j, output, output_len);
            if (typed) {
                put_json_field(j, "key", 0);
                if ((e = jwalk_key(fe->prog, key, key_len, j)) != 0)
                    return e == -1 ? 1 : -1;
                put_json_field(j, "delta", 0);
                if ((e = jwalk_delta(fe->prog, delta, delta_len, j)) != 0)
                    return e == -1 ? 1 : -1;
            }
            else {
                JS_LIT(j, ",\"schema_known\":false");
                put_json_field(j, "key_bytes", 0);
                js_base64(j, key, key_len);
                put_json_field(j, "delta_bytes", 0);
                js_base64(j, delta, delta_len);
            }
            put_json_field(j, "sequence_no", 0);
            js_int(j, sequence_no);
            put_json_field(j, "watermark_ns", 0);
            if (has_wm)
                js_int(j, wm);
            else
                JS_LIT(j, "null");
            json_close(sc, j);
        }
        else if (t) {
            if (typed && !fe->prog->names)
                return 1; /* a record naming a field twice: the summary is Python's */
            tb_head(t, offset, seq, time_ns, "Delta", raw_fp);
            tb_cell(t, output, output_len);
            out_ch(t, '\t');
            Out *c = tb_scratch(sc);
            if (typed) {
                if ((e = walk_key(fe->prog, key, key_len, c)) != 0)
                    return e == -1 ? 1 : -1;
            }
            else {
                static const char hex[] = "0123456789abcdef";
                out_put(c, "0x", 2);
                for (size_t i = 0; i < key_len; i++) {
                    out_ch(c, hex[key[i] >> 4]);
                    out_ch(c, hex[key[i] & 15]);
                }
            }
            if (tb_flush(t, c, '\t'))
                return -1;
            c = tb_scratch(sc);
            out_ch(c, '#');
            tb_int(c, sequence_no);
            out_ch(c, ' ');
            if (typed) {
                if ((e = tb_delta(fe->prog, delta, delta_len, c)) != 0)
                    return e == -1 ? 1 : -1;
            }
            else {
                OUT_LIT(c, "schema unknown: ");
                tb_int(c, (long long)delta_len);
                OUT_LIT(c, " delta bytes");
            }
            if (tb_flush(t, c, '\n'))
                return -1;
        }
        else if (typed) {
            if (walk_key(fe->prog, key, key_len, NULL) || walk_delta(fe->prog, delta, delta_len, NULL))
                return 1;
        }
        break;
    }
    case 2: { /* Checkpoint_request */
        int64_t cid, at;
        if (rd_int(&pr, &cid) || rd_int_any(&pr, &at) || pr.pos != pr.len)
            return 1;
        if (o) {
            put_head(o, seq, time_ns, raw_fp, "Checkpoint_request");
            put_field(o, "checkpoint_id");
            sx_int(o, cid);
            sx_close(o);
            put_field(o, "requested_at_ns");
            sx_int(o, at);
            put_tail(o);
        }
        else if (j) {
            json_open(sc, j, offset, length, seq, time_ns, raw_fp, "Checkpoint_request");
            put_json_field(j, "checkpoint_id", 1);
            js_int(j, cid);
            put_json_field(j, "requested_at_ns", 0);
            js_int(j, at);
            json_close(sc, j);
        }
        else if (t) {
            tb_head(t, offset, seq, time_ns, "Checkpoint_request", raw_fp);
            OUT_LIT(t, "\t\tcheckpoint ");
            tb_int(t, cid);
            out_ch(t, '\n');
        }
        break;
    }
    case 3: { /* Checkpoint_ack */
        const uint8_t *worker;
        size_t worker_len;
        int64_t cid;
        uint64_t n;
        if (t || rd_string(&pr, &worker, &worker_len) || rd_int(&pr, &cid) || rd_count(&pr, &n))
            return 1; /* the table's summary of an ack (rstrip) is Python's */
        own_worker = worker, own_worker_len = worker_len;
        if (o) {
            put_head(o, seq, time_ns, raw_fp, "Checkpoint_ack");
            put_field(o, "worker_id");
            sx_atom(o, worker, worker_len);
            sx_close(o);
            put_field(o, "checkpoint_id");
            sx_int(o, cid);
            sx_close(o);
            put_field(o, "positions");
            sx_open(o);
        }
        else if (j) {
            json_open(sc, j, offset, length, seq, time_ns, raw_fp, "Checkpoint_ack");
            put_json_field(j, "worker_id", 1);
            js_bytes(j, worker, worker_len);
            put_json_field(j, "checkpoint_id", 0);
            js_int(j, cid);
            JS_LIT(j, ",\"positions\":[");
        }
        for (uint64_t i = 0; i < n; i++) {
            const uint8_t *name;
            size_t name_len;
            int64_t q;
            if (rd_string(&pr, &name, &name_len) || rd_int(&pr, &q))
                return 1;
            if (o) {
                sx_open(o);
                sx_atom(o, name, name_len);
                sx_int(o, q);
                sx_close(o);
            }
            else if (j) {
                if (i)
                    out_ch(j, ',');
                JS_LIT(j, "{\"output\":");
                js_bytes(j, name, name_len);
                JS_LIT(j, ",\"sequence_no\":");
                js_int(j, q);
                out_ch(j, '}');
            }
        }
        if (pr.pos != pr.len)
            return 1;
        if (o) {
            sx_close(o);
            put_tail(o);
        }
        else if (j) {
            out_ch(j, ']');
            json_close(sc, j);
        }
        break;
    }
    case 4: { /* Heartbeat */
        const uint8_t *worker;
        size_t worker_len;
        int64_t ts;
        double load;
        if (rd_string(&pr, &worker, &worker_len) || rd_int_any(&pr, &ts) || rd_float(&pr, &load) ||
            pr.pos != pr.len)
            return 1;
        own_worker = worker, own_worker_len = worker_len;
        if (o) {
            put_head(o, seq, time_ns, raw_fp, "Heartbeat");
            put_field(o, "worker_id");
            sx_atom(o, worker, worker_len);
            sx_close(o);
            put_field(o, "timestamp_ns");
            sx_int(o, ts);
            sx_close(o);
            put_field(o, "load");
            if (sx_float(o, load))
                return -1;
            put_tail(o);
        }
        else if (j) {
            json_open(sc, j, offset, length, seq, time_ns, raw_fp, "Heartbeat");
            put_json_field(j, "worker_id", 1);
            js_bytes(j, worker, worker_len);
            put_json_field(j, "timestamp_ns", 0);
            js_int(j, ts);
            put_json_field(j, "load", 0);
            if (js_float(j, load))
                return -1;
            json_close(sc, j);
        }
        else if (t) {
            tb_head(t, offset, seq, time_ns, "Heartbeat", raw_fp);
            OUT_LIT(t, "\t\t");
            Out *c = tb_scratch(sc);
            OUT_LIT(c, "worker ");
            out_put(c, worker, worker_len);
            OUT_LIT(c, " load ");
            char *f = PyOS_double_to_string(load, 'f', 2, 0, NULL); /* f"{load:.2f}" */
            if (!f)
                return -1;
            out_put(c, f, strlen(f));
            PyMem_Free(f);
            if (tb_flush(t, c, '\n'))
                return -1;
        }
        break;
    }
    case 5: { /* Schema_negotiation */
        int ok;
        uint64_t n;
        if (rd_01(&pr, &ok) || rd_count(&pr, &n))
            return 1;
        if (!ok && sc->rules)
            return 1; /* negotiation_failed: worded by the checker */
        if (o) {
            put_head(o, seq, time_ns, raw_fp, "Schema_negotiation");
            put_field(o, "ok");
            sx_plain(o, ok ? "true" : "false", ok ? 4 : 5);
            sx_close(o);
            put_field(o, "errors");
            sx_open(o);
        }
        else if (j) {
            json_open(sc, j, offset, length, seq, time_ns, raw_fp, "Schema_negotiation");
            if (ok)
                JS_LIT(j, "\"ok\":true,\"errors\":[");
            else
                JS_LIT(j, "\"ok\":false,\"errors\":[");
        }
        Out *c = NULL;
        if (t) {
            tb_head(t, offset, seq, time_ns, "Schema_negotiation", raw_fp);
            OUT_LIT(t, "\t\t");
            c = tb_scratch(sc);
            if (ok)
                OUT_LIT(c, "ok");
            else
                OUT_LIT(c, "REFUSED: ");
        }
        for (uint64_t i = 0; i < n; i++) {
            const uint8_t *s;
            size_t k;
            if (rd_string(&pr, &s, &k))
                return 1;
            if (o)
                sx_atom(o, s, k);
            else if (j) {
                if (i)
                    out_ch(j, ',');
                js_bytes(j, s, k);
            }
            else if (c && !ok) {
                if (i)
                    OUT_LIT(c, "; ");
                out_put(c, s, k);
            }
        }
        if (pr.pos != pr.len)
            return 1;
        if (o) {
            sx_close(o);
            put_tail(o);
        }
        else if (j) {
            out_ch(j, ']');
            json_close(sc, j);
        }
        else if (c && tb_flush(t, c, '\n'))
            return -1;
        break;
    }
    default: /* Handshake (it declares schemas) and unknown types */
        return 1;
    }
    if (rw && tag != 1) {
        rows_no_delta(rw);
        if (own_worker)
            rows_bytes(rw, RS_WORKER, own_worker, own_worker_len);
        rows_end(rw, 1u << RB_HAS_MSG_JSON | (own_worker ? 1u << RB_OWN_WORKER : 0));
    }

    fr->at = at;
    fr->seq = seq;
    fr->sequence_no = sequence_no;
    fr->output = output;
    fr->output_len = output_len;
    fr->fe = fe;
    fr->length = (uint32_t)length;
    fr->tag = tag;
    fr->has_wm = tag == 1 && cx->has_wm;
    if (cx->nogil || !sc->rules)
        return 0;
    return run_rules(cx, fr, NULL);
}

/* The stream rules of an accepted envelope (SequenceChecker.observe): 0,
 * applied; 1, Python's (the first Delta of an output); -1, an error.  A
 * Delta's `slot`, when the caller has it; else it is looked up. */
static int
run_rules(Run *cx, const FrameRec *fr, Slot *slot)
{
    int64_t seq = fr->seq, sequence_no = fr->sequence_no;
    long long offset = cx->base + (long long)fr->at;
    FpEntry *fe = fr->fe;
    /* decide everything, then apply it */
    int seq_bad = cx->has_last && seq <= cx->last_seq;
    int before_schema = fr->tag == 1 && !fe->known;
    if (fr->tag == 1 && !slot) {
        int found = run_slot(cx, fr->output, fr->output_len, &slot);
        if (found <= 0)
            return found < 0 ? -1 : 1; /* the first Delta of an output: Python's */
    }
    if (seq_bad && run_record(cx, REC_SEQ_ORDER, offset, seq, cx->last_seq, 0, 0))
        return -1;
    if (before_schema) {
        Py_ssize_t name = run_name(cx, &fe->name, fe->fp);
        if (name < 0 || run_record(cx, REC_BEFORE_SCHEMA, offset, seq, name, 0, 0))
            return -1;
    }
    if (slot && sequence_no != slot->last + 1) {
        Py_ssize_t name = run_name(cx, &slot->name, slot->key);
        int64_t kind = sequence_no <= slot->last ? REC_DUPLICATE : REC_GAP;
        if (name < 0 || run_record(cx, kind, offset, seq, name, sequence_no, slot->last))
            return -1;
        if (kind == REC_GAP) {
            slot->last = sequence_no;
            slot->dirty = 1;
        }
    }
    else if (slot) {
        slot->last = sequence_no;
        slot->dirty = 1;
    }
    cx->has_last = 1;
    cx->last_seq = seq;
    return 0;
}

static int
Scanner_init(Scanner *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"max_payload", "render", "raw",     "rules", "resolve", "select",
                             "exact",       "tags",   "outputs", "keys",  NULL};
    PyObject *resolve, *outputs = Py_None, *keys = Py_None;
    self->tags = 0x3F;
    for (int i = 0; i < 7; i++)
        self->last_at[i] = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "LippO|ppIOO", kwlist, &self->max_payload, &self->render, &self->raw,
                                     &self->rules, &resolve, &self->select, &self->exact, &self->tags, &outputs,
                                     &keys))
        return -1;
    for (int i = 0; i < 2; i++) {
        PyObject *t = i ? keys : outputs;
        int ok = t == Py_None || PyTuple_Check(t);
        for (Py_ssize_t j = 0; ok && t != Py_None && j < PyTuple_GET_SIZE(t); j++)
            ok = PyBytes_Check(PyTuple_GET_ITEM(t, j));
        if (!ok) {
            PyErr_SetString(PyExc_TypeError, "outputs and keys: a tuple of bytes, or None");
            return -1;
        }
    }
    if (self->select && self->render == RENDER_ROWS) {
        PyErr_SetString(PyExc_ValueError, "select: an export row is made for every message");
        return -1;
    }
    if (self->select && self->render != RENDER_NONE && !self->exact) {
        PyErr_SetString(PyExc_ValueError, "select: Python judges what may pass; only an exact prefilter renders");
        return -1;
    }
    Py_XSETREF(self->outputs, outputs == Py_None ? NULL : Py_NewRef(outputs));
    Py_XSETREF(self->keys, keys == Py_None ? NULL : Py_NewRef(keys));
    if (self->render != RENDER_NONE && self->render != RENDER_SEXP && self->render != RENDER_JSON &&
        self->render != RENDER_TABLE && self->render != RENDER_ROWS) {
        PyErr_SetString(PyExc_ValueError, "render: one of layout.py's RENDER_MODES");
        return -1;
    }
    if (!PyCallable_Check(resolve)) {
        PyErr_SetString(PyExc_TypeError, "resolve must be callable");
        return -1;
    }
    Py_XSETREF(self->resolve, Py_NewRef(resolve));
    return 0;
}

/* The scanner takes part in garbage collection: `resolve` is a bound method
 * of the lane that owns the scanner, a cycle that reference counts alone
 * never free (every closed connection would leave its lane behind). */
static int
Scanner_traverse(Scanner *self, visitproc visit, void *arg)
{
    Py_VISIT(self->resolve);
    for (int i = 0; i < self->nfps; i++)
        Py_VISIT(self->fps[i].prog);
    return 0;
}

static int
Scanner_clear(Scanner *self)
{
    Py_CLEAR(self->resolve);
    Py_CLEAR(self->outputs);
    Py_CLEAR(self->keys);
    scanner_forget(self);
    return 0;
}

static void
Scanner_dealloc(Scanner *self)
{
    PyObject_GC_UnTrack(self);
    Scanner_clear(self);
    PyMem_Free(self->out.p);
    PyMem_Free(self->scratch.p);
    PyMem_Free(self->cell.p);
    rows_free(&self->rows);
    for (int i = 0; i < MAX_SEGMENTS; i++)
        PyMem_RawFree(self->par_recs[i]);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* run(buf, pos, end, base, last_seq, worker, applied, fresh)
 *   -> (pos, messages, bytes, counts, last_seq, text, records, names)
 * text: RENDER_ROWS's (rows, int64s, strings, bitmaps) (rowsout.h), else bytes or None.
 * fresh: ask resolve again (the registry may have changed since the last run). 
 * See the top of this file and lane.py. */
/* ------------------------------------------------- the scan over cores */

/* `verify` (RENDER_NONE, no selection) scans a long run on every core the
 * process may use: the run is cut into segments at envelope boundaries
 * (found as resync finds an envelope: magic, version, length and CRC), each
 * segment is validated on its own thread without the GIL (run_frame with
 * cx->nogil: no call into Python, a stop where one is needed), and the
 * stream rules are then applied in stream order from the segments' records
 * (run_rules), as the scan in order would have applied them.  A segment
 * counts only when the one before it ended exactly where it begins and
 * stopped nowhere before: anything else (a Handshake, damage, a schema the
 * cache does not hold yet, a boundary that was not one) ends the parallel
 * part there, and the scan goes on in order from that envelope.  On 2
 * cores this took verify's scan of a 127 MB stream from 125 to 70 ms. */

static size_t par_min = 1 << 20; /* a run at least this long is cut */
static size_t par_warmup = 64 << 10; /* scanned in order first: the cache then holds the stream's schemas */
static int par_segments = 1; /* the cores the process may use, at most MAX_SEGMENTS */

/* What a segment keeps of an accepted envelope for the rules: a FrameRec
 * with its pointers as small indices, so that the records of a run stay
 * in the caches (32 bytes, not 56). */
typedef struct SegRec {
    size_t at;
    int64_t seq, sequence_no;
    uint32_t length;
    uint8_t tag, has_wm;
    uint8_t fe; /* index in sc->fps */
    uint8_t out; /* a Delta's source_output: index in the segment's outs */
} SegRec;

#define MAX_OUTS 64 /* a segment's distinct source_outputs; past them it stops */

typedef struct {
    Run cx; /* nogil */
    int index; /* in the run's segments */
    int *cut; /* the first segment that stopped short: the ones after it stop scanning in vain */
    const uint8_t *b;
    size_t from, to, end; /* envelopes starting in [from, to), ending by `end` */
    size_t stop; /* where the scan stopped */
    SegRec *recs;
    size_t nrecs, cap;
    struct {
        const uint8_t *p;
        size_t len;
    } outs[MAX_OUTS];
    int nouts, last_out;
} Segment;

/* The index of a Delta's source_output in the segment's table, -1 when full. */
static inline int
seg_out(Segment *g, const uint8_t *p, size_t len)
{
    int k = g->last_out; /* a run of Deltas often keeps its output */
    if (k < g->nouts && g->outs[k].len == len && !memcmp(g->outs[k].p, p, len))
        return k;
    for (k = 0; k < g->nouts; k++)
        if (g->outs[k].len == len && !memcmp(g->outs[k].p, p, len))
            return g->last_out = k;
    if (g->nouts == MAX_OUTS)
        return -1;
    g->outs[k].p = p;
    g->outs[k].len = len;
    return g->last_out = g->nouts++;
}

/* The length of the whole, valid envelope at p (magic, version, length,
 * CRC: FrameDecoder._check's valid case), or -1. */
static inline int32_t
whole_envelope(const Scanner *sc, const uint8_t *b, size_t p, size_t n)
{
    if (n - p < HEADER_SIZE)
        return -1;
    const uint8_t *h = b + p;
    if (memcmp(h, "RIPP", 4) != 0 || h[4] != 1)
        return -1;
    int32_t length = (int32_t)le32(h + 55);
    if (length < 0 || length > sc->max_payload || (size_t)length + OVERHEAD > n - p)
        return -1;
    if (crc32c(h, HEADER_SIZE + (size_t)length) != le32(h + HEADER_SIZE + length))
        return -1;
    return length;
}

static void
seg_scan(Segment *g)
{
    const uint8_t *b = g->b;
    size_t p = g->from;
    while (p < g->to) {
        if ((g->nrecs & 255) == 0 && __atomic_load_n(g->cut, __ATOMIC_RELAXED) < g->index)
            break;
        int32_t length = whole_envelope(g->cx.sc, b, p, g->end);
        if (length < 0 || b[p + 6] != 0) /* flags: a warning, Python's */
            break;
        if (g->nrecs == g->cap) {
            size_t cap = g->cap ? 2 * g->cap : 4096;
            SegRec *r = PyMem_RawRealloc(g->recs, cap * sizeof(SegRec)); /* no GIL: the raw allocator */
            if (!r)
                break; /* the scan in order takes it from here */
            g->recs = r;
            g->cap = cap;
        }
        FrameRec fr;
        if (run_frame(&g->cx, b + p, (size_t)length, g->cx.base + (long long)p, p, &fr) != 0)
            break;
        int out = 0;
        if (fr.tag == 1 && (out = seg_out(g, fr.output, fr.output_len)) < 0)
            break;
        SegRec *r = &g->recs[g->nrecs++];
        r->at = p;
        r->seq = fr.seq;
        r->sequence_no = fr.sequence_no;
        r->length = fr.length;
        r->tag = fr.tag;
        r->has_wm = fr.has_wm;
        r->fe = fr.fe ? (uint8_t)(fr.fe - g->cx.sc->fps) : 0;
        r->out = (uint8_t)out;
        p += OVERHEAD + (size_t)length;
    }
    g->stop = p;
    if (p != g->to) { /* the segments after this one are not used: tell them */
        int cur = __atomic_load_n(g->cut, __ATOMIC_RELAXED);
        while (g->index < cur && !__atomic_compare_exchange_n(g->cut, &cur, g->index, 1, __ATOMIC_RELAXED,
                                                              __ATOMIC_RELAXED))
            ;
    }
}

static void *
seg_thread(void *arg)
{
    seg_scan((Segment *)arg);
    return NULL;
}

/* The first index in [from, from + span) where a whole valid envelope
 * starts, or (size_t)-1. */
static size_t
next_whole(const Scanner *sc, const uint8_t *b, size_t from, size_t n, size_t span)
{
    size_t stop = n - from > span ? from + span : n;
    for (size_t p = from; p < stop;) {
        const uint8_t *r = memmem(b + p, stop - p, "RIPP\x01", 5);
        if (!r)
            break;
        p = (size_t)(r - b);
        if (whole_envelope(sc, b, p, n) >= 0)
            return p;
        p++;
    }
    return (size_t)-1;
}

/* Scan [*pp, n) in segments and apply what they accepted, in order; *pp
 * is then where the scan in order goes on.  0, or -1 with an error set. */
static int
par_scan(Scanner *self, Run *cx, const uint8_t *b, size_t *pp, size_t n, long long *messages, long long *nbytes,
         long long *counts)
{
    size_t p0 = *pp;
    size_t starts[MAX_SEGMENTS + 1];
    int nseg = 1;
    starts[0] = p0;
    for (int i = 1; i < par_segments; i++) {
        size_t m = next_whole(self, b, p0 + (n - p0) / (size_t)par_segments * (size_t)i, n, 1 << 20);
        if (m == (size_t)-1 || m <= starts[nseg - 1])
            break;
        starts[nseg++] = m;
    }
    if (nseg < 2)
        return 0;
    starts[nseg] = n;
    Segment g[MAX_SEGMENTS];
    pthread_t th[MAX_SEGMENTS];
    int started[MAX_SEGMENTS] = {0};
    int cut = nseg;
    for (int i = 0; i < nseg; i++) {
        memset(&g[i], 0, sizeof g[i]);
        g[i].index = i;
        g[i].cut = &cut;
        g[i].cx.sc = self;
        g[i].cx.base = cx->base;
        g[i].cx.nogil = 1;
        g[i].b = b;
        g[i].from = starts[i];
        g[i].to = starts[i + 1];
        g[i].end = n;
        g[i].recs = self->par_recs[i];
        g[i].cap = self->par_cap[i];
    }
    Py_BEGIN_ALLOW_THREADS
    for (int i = 1; i < nseg; i++)
        started[i] = pthread_create(&th[i], NULL, seg_thread, &g[i]) == 0;
    seg_scan(&g[0]);
    for (int i = 1; i < nseg; i++) {
        if (started[i])
            pthread_join(th[i], NULL);
        else
            seg_scan(&g[i]);
    }
    Py_END_ALLOW_THREADS
    int e = 0;
    for (int i = 0; i < nseg && !e; i++) {
        Slot *slots[MAX_OUTS] = {NULL}; /* the checker's slot of each of the segment's outputs */
        for (size_t r = 0; r < g[i].nrecs; r++) {
            const SegRec *sr = &g[i].recs[r];
            if (self->rules) {
                FrameRec fr = {.at = sr->at,
                               .seq = sr->seq,
                               .sequence_no = sr->sequence_no,
                               .fe = sr->tag == 1 ? &self->fps[sr->fe] : NULL,
                               .length = sr->length,
                               .tag = sr->tag};
                Slot **slot = &slots[sr->out];
                if (sr->tag == 1 && !*slot) {
                    int found = run_slot(cx, g[i].outs[sr->out].p, g[i].outs[sr->out].len, slot);
                    if (found <= 0) {
                        e = found < 0 ? -1 : 1; /* the first Delta of an output: Python's */
                        break;
                    }
                }
                if ((e = run_rules(cx, &fr, sr->tag == 1 ? *slot : NULL)) != 0)
                    break;
            }
            (*messages)++;
            *nbytes += OVERHEAD + (long long)sr->length;
            counts[sr->tag]++;
            self->last_at[sr->tag] = (Py_ssize_t)sr->at;
            if (sr->has_wm)
                self->last_at[6] = (Py_ssize_t)sr->at;
            *pp = sr->at + OVERHEAD + sr->length;
        }
        if (g[i].stop != g[i].to)
            break; /* stopped inside, or ran past the next one's start: what follows is not used */
    }
    for (int i = 0; i < nseg; i++) {
        self->par_recs[i] = g[i].recs;
        self->par_cap[i] = g[i].cap;
    }
    return e < 0 ? -1 : 0;
}

static PyObject *
py_parallel(PyObject *Py_UNUSED(mod), PyObject *args)
{
    Py_ssize_t min = (Py_ssize_t)par_min, warmup = (Py_ssize_t)par_warmup;
    int segments = par_segments;
    PyObject *old = Py_BuildValue("(nni)", min, warmup, segments);
    if (!old || !PyArg_ParseTuple(args, "|nni", &min, &warmup, &segments)) {
        Py_XDECREF(old);
        return NULL;
    }
    if (min < 0 || warmup < 0 || segments < 1) {
        Py_DECREF(old);
        PyErr_SetString(PyExc_ValueError, "parallel(min_bytes >= 0, warmup_bytes >= 0, segments >= 1)");
        return NULL;
    }
    par_min = (size_t)min;
    par_warmup = (size_t)warmup;
    par_segments = segments < MAX_SEGMENTS ? segments : MAX_SEGMENTS;
    return old;
}

static PyObject *
Scanner_run(Scanner *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t pos, end;
    long long base;
    PyObject *last_obj, *worker, *applied;
    int fresh;
    if (!self->resolve || self->busy) {
        PyErr_SetString(PyExc_RuntimeError, self->busy ? "Scanner.run is not re-entrant" : "Scanner not initialised");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "y*nnLOOOp", &view, &pos, &end, &base, &last_obj, &worker, &applied, &fresh))
        return NULL;
    self->busy = 1;
    if (fresh)
        scanner_forget(self);
    for (int i = 0; i < self->nfps; i++)
        self->fps[i].name = -1; /* names are per run */
    PyObject *result = NULL, *counts_t = NULL, *last = NULL, *text = NULL, *recs = NULL;
    long long messages = 0, nbytes = 0, counts[6] = {0};
    Run cx;
    memset(&cx, 0, sizeof(cx));
    cx.sc = self;
    cx.base = base;
    cx.worker = worker;
    cx.applied = applied;
    cx.names = PyList_New(0);
    if (!cx.names)
        goto done;
    if (pos < 0 || pos > end || end > view.len) {
        PyErr_SetString(PyExc_ValueError, "pos and end outside the buffer");
        goto done;
    }
    if (self->rules) {
        if (!PyBytes_Check(worker) || !PyDict_Check(applied)) {
            PyErr_SetString(PyExc_TypeError, "rules need a worker (bytes) and last_applied (dict)");
            goto done;
        }
        if (last_obj != Py_None) {
            cx.last_seq = PyLong_AsLongLong(last_obj); /* a seq read from a header: an int64 */
            if (cx.last_seq == -1 && PyErr_Occurred())
                goto done;
            cx.has_last = 1;
        }
    }
    self->out.len = 0;
    self->out.need = 0;
    self->out.failed = 0;
    for (int i = 0; i < 7; i++)
        self->last_at[i] = -1;
    Rows *rw = self->render == RENDER_ROWS ? &self->rows : NULL;
    RowsMark row_mark;
    if (rw)
        rows_reset(rw);

    const uint8_t *b = view.buf;
    size_t n = (size_t)end, p = (size_t)pos;
    /* where a long run is handed to par_scan, after a stretch in order */
    size_t par_at = self->render == RENDER_NONE && !self->select && par_segments > 1 && n - p >= par_min
                        ? p + par_warmup
                        : (size_t)-1;
    FrameRec fr;
    for (;;) {
        if (p >= par_at) {
            par_at = (size_t)-1;
            if (par_scan(self, &cx, b, &p, n, &messages, &nbytes, counts))
                goto done;
        }
        int32_t length = whole_envelope(self, b, p, n);
        if (length < 0)
            break;
        const uint8_t *h = b + p;
        if (h[6] != 0) /* non-zero flags: a warning */
            break;
        size_t mark = self->out.len;
        if (rw)
            rows_mark(rw, &row_mark);
        int rc = run_frame(&cx, h, (size_t)length, base + (long long)p, p, &fr);
        int failed = self->out.failed || (rw && rows_failed(rw));
        if (rw && rw->too_big && rc == 0) {
            rw->too_big = 0;
            rc = 1; /* Python's row */
        }
        if (rc != 0 || failed) {
            self->out.len = mark; /* the stopped envelope's partial line */
            if (rw)
                rows_back(rw, &row_mark);
            if (rc < 0)
                goto done;
            if (failed) {
                PyErr_NoMemory();
                goto done;
            }
            break;
        }
        messages++;
        nbytes += OVERHEAD + length;
        counts[h[5]]++;
        self->last_at[h[5]] = (Py_ssize_t)p;
        if (h[5] == 1 && cx.has_wm)
            self->last_at[6] = (Py_ssize_t)p;
        p += OVERHEAD + (size_t)length;
        if (rw && rows_full(rw))
            break; /* the rest in the next run */
        if (self->render != RENDER_NONE && p - (size_t)pos >= RENDER_SPAN)
            break; /* a file's window is megabytes: its text in pieces, not all held at once */
    }
    counts_t = Py_BuildValue("(LLLLLL)", counts[0], counts[1], counts[2], counts[3], counts[4], counts[5]);
    last = cx.has_last ? PyLong_FromLongLong(cx.last_seq) : Py_NewRef(last_obj);
    text = rw                            ? rows_result(rw)
           : self->render != RENDER_NONE ? PyBytes_FromStringAndSize(self->out.p ? self->out.p : "", (Py_ssize_t)self->out.len)
                                         : Py_NewRef(Py_None);
    recs = PyBytes_FromStringAndSize((const char *)cx.recs, (Py_ssize_t)(cx.nrecs * sizeof(int64_t)));
    if (counts_t && last && text && recs)
        result = Py_BuildValue("(nLLOOOOO)", (Py_ssize_t)p, messages, nbytes, counts_t, last, text, recs, cx.names);
done:
    self->out.len = 0;
    /* The checker's dict is the truth between calls: write back. */
    for (int i = 0; i < cx.nslots; i++) {
        Slot *s = &cx.slots[i];
        if (s->dirty && result) {
            PyObject *v = PyLong_FromLongLong(s->last);
            if (!v || PyDict_SetItem(applied, s->key, v))
                Py_CLEAR(result);
            Py_XDECREF(v);
        }
        Py_DECREF(s->key);
    }
    Py_XDECREF(counts_t);
    Py_XDECREF(last);
    Py_XDECREF(text);
    Py_XDECREF(recs);
    PyMem_Free(cx.recs);
    Py_XDECREF(cx.names);
    PyBuffer_Release(&view);
    self->busy = 0;
    return result;
}

static PyObject *
Scanner_lasts(Scanner *self, PyObject *Py_UNUSED(arg))
{
    Py_ssize_t *a = self->last_at;
    return Py_BuildValue("(nnnnnnn)", a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
}

static PyMethodDef Scanner_methods[] = {
    {"run", (PyCFunction)Scanner_run, METH_VARARGS,
     "run(buf, pos, end, base, last_seq, worker, applied, fresh) -> (pos, messages, bytes, counts, last_seq, text, "
     "records, names)"},
    {"lasts", (PyCFunction)Scanner_lasts, METH_NOARGS,
     "lasts() -> where the last run's last envelope of each type tag 0..5, then its last Delta with a watermark, "
     "starts in its buffer (-1: none)"},
    {NULL},
};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ripple_cli.codec.fast._speedups.Scanner",
    .tp_basicsize = sizeof(Scanner),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)Scanner_traverse,
    .tp_clear = (inquiry)Scanner_clear,
    .tp_doc = "Consumes the boring envelopes of a buffer (see lane.py).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Scanner_init,
    .tp_dealloc = (destructor)Scanner_dealloc,
    .tp_methods = Scanner_methods,
};

/* ------------------------------------------------------------------ module */

static PyObject *
py_crc32c(PyObject *Py_UNUSED(mod), PyObject *arg)
{
    Py_buffer b;
    if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE))
        return NULL;
    uint32_t c = crc32c(b.buf, (size_t)b.len);
    PyBuffer_Release(&b);
    return PyLong_FromUnsignedLong(c);
}

/* crc32c_shift(crc, n): the CRC register moved past n zero bytes, that is
 * crc * x^(8n) modulo the polynomial (zlib's multmodp and x2nmodp), for
 * crcrange.py's CRC of any range from prefix CRCs. */
#define SHIFT_POLY 0x82F63B78u

static uint32_t
shift_mul(uint32_t a, uint32_t b)
{
    uint32_t m = 1u << 31, p = 0;
    while (a) {
        if (a & m) {
            p ^= b;
            a ^= m;
        }
        m >>= 1;
        b = (b & 1) ? (b >> 1) ^ SHIFT_POLY : b >> 1;
    }
    return p;
}

static uint32_t shift_x2n[67]; /* x^(2^k), k < 3 + 64 (a shift by n < 2^64 bytes), filled by shift_init */
static uint32_t shift_by(uint32_t crc, uint64_t n);

static PyObject *
py_crc32c_shift(PyObject *Py_UNUSED(mod), PyObject *args)
{
    unsigned long crc;
    unsigned long long n;
    if (!PyArg_ParseTuple(args, "kK", &crc, &n))
        return NULL;
    return PyLong_FromUnsignedLong(shift_by((uint32_t)crc, n));
}

/* CrcPrefixes: crcrange.py's Prefixes (the CRCs of a stream's prefixes,
 * one every PREFIX_STEP bytes, from which the CRC of any range is two short
 * CRCs and two shifts) in C.  Resync after damage asks it once per magic in
 * the damaged bytes, and in Python its arithmetic was most of the time of a
 * stream of headers claiming long payloads (issue 15's resync row: 13x a
 * clean stream's time per byte, against a goal of 10x).  Same marks, same
 * results as the Python class, which stays the definition (tests compare). */
#define PREFIX_STEP 512

static uint32_t prefix_step_zeros[4][256]; /* the register past PREFIX_STEP zero bytes */

static void
shift_init(void)
{
    uint32_t x = 1u << 30; /* x^1 */
    for (int k = 0; k < 67; k++) {
        shift_x2n[k] = x;
        x = shift_mul(x, x);
    }
    crc32c_zeros(prefix_step_zeros, PREFIX_STEP);
}

/* The register past 2^k zero bytes as four byte tables (crc32c.h's form):
 * a shift by any n is then four lookups per set bit of n, where the
 * multiplication loop below costs a few microseconds (a resync candidate
 * asks for three shifts).  Filled on first use, only as far as needed. */
#define SHIFT_TABLES 40
static uint32_t shift_tables[SHIFT_TABLES][4][256];
static uint32_t shift_matrix[32]; /* past 2^(shift_ready - 1) zero bytes */
static int shift_ready;

static void
shift_prepare(int k)
{
    for (; shift_ready <= k; shift_ready++) {
        uint32_t next[32];
        if (!shift_ready) {
            uint32_t bit[32], two[32], four[32];
            bit[0] = CRC32C_POLY; /* one zero bit, as crc32c_zeros */
            for (int i = 1; i < 32; i++)
                bit[i] = 1u << (i - 1);
            gf2_square(two, bit);
            gf2_square(four, two);
            gf2_square(next, four); /* one zero byte */
        }
        else
            gf2_square(next, shift_matrix);
        memcpy(shift_matrix, next, sizeof(next));
        for (uint32_t v = 0; v < 256; v++) {
            shift_tables[shift_ready][0][v] = gf2_times(next, v);
            shift_tables[shift_ready][1][v] = gf2_times(next, v << 8);
            shift_tables[shift_ready][2][v] = gf2_times(next, v << 16);
            shift_tables[shift_ready][3][v] = gf2_times(next, v << 24);
        }
    }
}

static uint32_t
shift_by(uint32_t crc, uint64_t n)
{
    if (!n)
        return crc;
    if (n < ((uint64_t)1 << SHIFT_TABLES)) {
        int top = 63 - __builtin_clzll(n);
        if (top >= shift_ready)
            shift_prepare(top);
        for (int k = 0; n; n >>= 1, k++)
            if (n & 1)
                crc = crc32c_shift((const uint32_t(*)[256])shift_tables[k], crc);
        return crc;
    }
    uint32_t power = 1u << 31; /* x^0 */
    unsigned k = 3;
    for (; n; n >>= 1, k++)
        if (n & 1)
            power = shift_mul(shift_x2n[k], power);
    return shift_mul(power, crc);
}

typedef struct {
    PyObject_HEAD
    long long origin;
    uint32_t *marks; /* marks[k] = crc32c(stream[origin : origin + k STEP]) */
    Py_ssize_t nmarks, cap;
} CrcPrefixes;

static int
CrcPrefixes_init(CrcPrefixes *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"origin", NULL};
    long long origin;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "L", kwlist, &origin))
        return -1;
    PyMem_Free(self->marks);
    self->marks = PyMem_Malloc(64 * sizeof(uint32_t));
    if (!self->marks) {
        PyErr_NoMemory();
        return -1;
    }
    self->cap = 64;
    self->nmarks = 1;
    self->marks[0] = 0;
    self->origin = origin;
    return 0;
}

static void
CrcPrefixes_dealloc(CrcPrefixes *self)
{
    PyMem_Free(self->marks);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static long long
prefixes_covered(const CrcPrefixes *self)
{
    return self->origin + (long long)(self->nmarks - 1) * PREFIX_STEP;
}

/* The buffer's bytes [from, to) of the stream (buffer byte i is stream byte
 * base + i), or NULL with ValueError when the buffer does not hold them (the
 * callers keep them; this only refuses to read outside the buffer). */
static const uint8_t *
prefixes_span(const Py_buffer *b, long long base, long long from, long long to)
{
    if (from < base || to < from || to - base > (long long)b->len) {
        PyErr_Format(PyExc_ValueError, "stream bytes %lld..%lld are not in the buffer (%lld..%lld)", from, to, base,
                     base + (long long)b->len);
        return NULL;
    }
    return (const uint8_t *)b->buf + (from - base);
}

static int
prefixes_extend(CrcPrefixes *self, const Py_buffer *b, long long base, long long upto)
{
    while (prefixes_covered(self) + PREFIX_STEP <= upto) {
        long long at = prefixes_covered(self);
        const uint8_t *p = prefixes_span(b, base, at, at + PREFIX_STEP);
        if (!p)
            return -1;
        if (self->nmarks == self->cap) {
            Py_ssize_t cap = self->cap * 2;
            uint32_t *grown = PyMem_Realloc(self->marks, (size_t)cap * sizeof(uint32_t));
            if (!grown) {
                PyErr_NoMemory();
                return -1;
            }
            self->marks = grown;
            self->cap = cap;
        }
        uint32_t last = self->marks[self->nmarks - 1];
        self->marks[self->nmarks++] = crc32c_shift(prefix_step_zeros, last) ^ crc32c(p, PREFIX_STEP);
    }
    return 0;
}

/* crc32c(stream[origin:x]) into *out; -1 with an exception set. */
static int
prefixes_upto(CrcPrefixes *self, const Py_buffer *b, long long base, long long x, uint32_t *out)
{
    if (x < self->origin) {
        PyErr_Format(PyExc_ValueError, "offset %lld is before the prefixes' origin %lld", x, self->origin);
        return -1;
    }
    if (prefixes_extend(self, b, base, x))
        return -1;
    long long k = (x - self->origin) / PREFIX_STEP;
    long long m = self->origin + k * PREFIX_STEP;
    if (m == x) {
        *out = self->marks[k];
        return 0;
    }
    const uint8_t *p = prefixes_span(b, base, m, x);
    if (!p)
        return -1;
    *out = shift_by(self->marks[k], (uint64_t)(x - m)) ^ crc32c(p, (size_t)(x - m));
    return 0;
}

static PyObject *
CrcPrefixes_crc(CrcPrefixes *self, PyObject *args)
{
    Py_buffer b;
    long long base, start, end;
    if (!PyArg_ParseTuple(args, "y*LLL", &b, &base, &start, &end))
        return NULL;
    uint32_t a, z;
    int bad = start > end;
    if (bad)
        PyErr_Format(PyExc_ValueError, "range %lld..%lld runs backwards", start, end);
    else
        bad = prefixes_upto(self, &b, base, end, &z) || prefixes_upto(self, &b, base, start, &a);
    PyBuffer_Release(&b);
    if (bad)
        return NULL;
    return PyLong_FromUnsignedLong(z ^ shift_by(a, (uint64_t)(end - start)));
}

static PyObject *
CrcPrefixes_upto(CrcPrefixes *self, PyObject *args)
{
    Py_buffer b;
    long long base, x;
    if (!PyArg_ParseTuple(args, "y*LL", &b, &base, &x))
        return NULL;
    uint32_t c;
    int bad = prefixes_upto(self, &b, base, x, &c);
    PyBuffer_Release(&b);
    return bad ? NULL : PyLong_FromUnsignedLong(c);
}

static PyObject *
CrcPrefixes_extend(CrcPrefixes *self, PyObject *args)
{
    Py_buffer b;
    long long base, upto;
    if (!PyArg_ParseTuple(args, "y*LL", &b, &base, &upto))
        return NULL;
    int bad = prefixes_extend(self, &b, base, upto);
    PyBuffer_Release(&b);
    if (bad)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
CrcPrefixes_get_origin(CrcPrefixes *self, void *Py_UNUSED(closure))
{
    return PyLong_FromLongLong(self->origin);
}

static PyObject *
CrcPrefixes_get_covered(CrcPrefixes *self, void *Py_UNUSED(closure))
{
    return PyLong_FromLongLong(prefixes_covered(self));
}

static PyObject *
CrcPrefixes_get_marks(CrcPrefixes *self, void *Py_UNUSED(closure))
{
    PyObject *list = PyList_New(self->nmarks);
    for (Py_ssize_t i = 0; list && i < self->nmarks; i++) {
        PyObject *v = PyLong_FromUnsignedLong(self->marks[i]);
        if (!v) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, v);
    }
    return list;
}

static PyGetSetDef CrcPrefixes_getset[] = {
    {"origin", (getter)CrcPrefixes_get_origin, NULL, "Stream offset of the first prefix.", NULL},
    {"covered", (getter)CrcPrefixes_get_covered, NULL, "Stream offset up to which the marks go.", NULL},
    {"marks", (getter)CrcPrefixes_get_marks, NULL, "A copy of the marks (for tests).", NULL},
    {NULL},
};

static PyMethodDef CrcPrefixes_methods[] = {
    {"crc", (PyCFunction)CrcPrefixes_crc, METH_VARARGS, "crc(buf, base, start, end): crc32c(stream[start:end])."},
    {"upto", (PyCFunction)CrcPrefixes_upto, METH_VARARGS, "upto(buf, base, x): crc32c(stream[origin:x])."},
    {"extend", (PyCFunction)CrcPrefixes_extend, METH_VARARGS, "extend(buf, base, upto): marks up to stream offset upto."},
    {NULL},
};

static PyTypeObject CrcPrefixesType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ripple_cli.codec.fast._speedups.CrcPrefixes",
    .tp_basicsize = sizeof(CrcPrefixes),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "crcrange.Prefixes in C: CRCs of a stream's prefixes, every 512 bytes.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)CrcPrefixes_init,
    .tp_dealloc = (destructor)CrcPrefixes_dealloc,
    .tp_methods = CrcPrefixes_methods,
    .tp_getset = CrcPrefixes_getset,
};

/* The first "RIPP" in buf[from:to], or -1 (bytes.find). */
static Py_ssize_t
find_magic(const uint8_t *buf, Py_ssize_t from, Py_ssize_t to)
{
    while (to - from >= 4) {
        const uint8_t *r = memchr(buf + from, 'R', (size_t)(to - from - 3));
        if (!r)
            return -1;
        Py_ssize_t at = r - buf;
        if (!memcmp(r, "RIPP", 4))
            return at;
        from = at + 1;
    }
    return -1;
}

/* A candidate envelope at p (magic already matched) judged as framing.py's
 * _check(resync=True) does: 0 valid, 1 not enough bytes yet (and not
 * final), 2 not an envelope, -1 error.  `pre` holds the prefixes for a
 * long payload's CRC, made (or made again from p) when needed. */
static int
resync_candidate(const Py_buffer *b, Py_ssize_t p, Py_ssize_t n, int final, long long max_payload, long long base,
                 PyObject **pre)
{
    const uint8_t *buf = b->buf;
    if (n - p < HEADER_SIZE)
        return final ? 2 : 1;
    if (buf[p + 4] != 1)
        return 2;
    int32_t length = (int32_t)le32(buf + p + 55);
    if (length < 0 || length > max_payload)
        return 2;
    Py_ssize_t end = p + HEADER_SIZE + length;
    if (end + 4 > n)
        return final ? 2 : 1;
    uint32_t computed;
    if (length >= PREFIX_STEP) {
        if (*pre == Py_None || ((CrcPrefixes *)*pre)->origin > base + p) {
            PyObject *fresh = PyObject_CallFunction((PyObject *)&CrcPrefixesType, "L", base + p);
            if (!fresh)
                return -1;
            Py_SETREF(*pre, fresh);
        }
        uint32_t a, z;
        CrcPrefixes *pr = (CrcPrefixes *)*pre;
        if (prefixes_upto(pr, b, base, base + end, &z) || prefixes_upto(pr, b, base, base + p, &a))
            return -1;
        computed = z ^ shift_by(a, (uint64_t)(end - p));
    }
    else
        computed = crc32c(buf + p, (size_t)(end - p));
    return computed == le32(buf + end) ? 0 : 2;
}

/* resync(buf, p, n, final, max_payload, base, prefixes): framing.py's
 * search for the next valid envelope after damage, from p, in C (one call
 * per damaged region instead of a Python round per magic: issue 15's
 * resync row).  Returns (status, pos, prefixes): status 0, a valid
 * envelope at pos; 1, a candidate at pos needs more bytes; 2, no magic
 * left: go on from pos.  prefixes: the one given, or a new one (see
 * framing.py's _check). */
/* find(buf, needle, start, stop): buf.find(needle, start, stop) for a
 * needle that occurs often in part (the batch scan's Handshake head, whose
 * first five bytes begin every envelope): glibc's memmem, 4x bytes.find there. */
static PyObject *
py_find(PyObject *Py_UNUSED(mod), PyObject *args)
{
    Py_buffer b, nd;
    Py_ssize_t start, stop;
    if (!PyArg_ParseTuple(args, "y*y*nn", &b, &nd, &start, &stop))
        return NULL;
    if (start < 0)
        start = 0;
    if (stop > b.len)
        stop = b.len;
    Py_ssize_t at = -1;
    if (nd.len > 0 && stop - start >= nd.len) {
        const char *base = b.buf;
        const char *hit;
        Py_BEGIN_ALLOW_THREADS
        hit = memmem(base + start, (size_t)(stop - start), nd.buf, (size_t)nd.len);
        Py_END_ALLOW_THREADS
        if (hit)
            at = hit - base;
    }
    else if (nd.len == 0 && start <= stop)
        at = start;
    PyBuffer_Release(&b);
    PyBuffer_Release(&nd);
    return PyLong_FromSsize_t(at);
}

static PyObject *
py_resync(PyObject *Py_UNUSED(mod), PyObject *args)
{
    Py_buffer b;
    Py_ssize_t p, n;
    int final;
    long long max_payload, base;
    PyObject *pre;
    if (!PyArg_ParseTuple(args, "y*nnpLLO", &b, &p, &n, &final, &max_payload, &base, &pre))
        return NULL;
    if (n > b.len || p < 0 || p > n || (pre != Py_None && !PyObject_TypeCheck(pre, &CrcPrefixesType))) {
        PyBuffer_Release(&b);
        PyErr_SetString(PyExc_ValueError, "resync: bad arguments");
        return NULL;
    }
    Py_INCREF(pre);
    int status = 2;
    Py_ssize_t pos;
    for (;;) {
        Py_ssize_t idx = find_magic(b.buf, p, n);
        if (idx < 0) {
            pos = final ? n : (p > n - 3 ? p : n - 3);
            status = 2;
            break;
        }
        int v = resync_candidate(&b, idx, n, final, max_payload, base, &pre);
        if (v < 0) {
            PyBuffer_Release(&b);
            Py_DECREF(pre);
            return NULL;
        }
        if (v == 2) {
            p = idx + 1;
            continue;
        }
        status = v;
        pos = idx;
        break;
    }
    PyBuffer_Release(&b);
    PyObject *res = Py_BuildValue("inO", status, pos, pre);
    Py_DECREF(pre);
    return res;
}

static PyObject *
py_crc32c_table(PyObject *Py_UNUSED(mod), PyObject *arg)
{
    Py_buffer b;
    if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE))
        return NULL;
    uint32_t c = crc32c_update_table(0xFFFFFFFFu, b.buf, (size_t)b.len) ^ 0xFFFFFFFFu;
    PyBuffer_Release(&b);
    return PyLong_FromUnsignedLong(c);
}

static PyObject *
py_atom_text(PyObject *Py_UNUSED(mod), PyObject *arg)
{
    Py_buffer b;
    if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE))
        return NULL;
    Out o = {0};
    sx_atom(&o, b.buf, (size_t)b.len);
    PyBuffer_Release(&b);
    return text_result(&o, 0);
}

static PyObject *
py_float_atom(PyObject *Py_UNUSED(mod), PyObject *arg)
{
    double x = PyFloat_AsDouble(arg);
    if (x == -1.0 && PyErr_Occurred())
        return NULL;
    Out o = {0};
    return text_result(&o, sx_float(&o, x) ? -2 : 0);
}

/* sexp/write.py's to_string of a Python tree (bytes atoms, lists, or any
 * iterable node such as text.py's lazy Handshake schemas), by the same
 * printer as the lane's lines: the Python printer costs a call per node,
 * and a line the lane declines (a Handshake of many schemas, a message a
 * selection leaves to Python) spent most of its time there (perf). */
static int
tree_out(Out *o, PyObject *t)
{
    if (PyBytes_Check(t)) {
        sx_atom(o, (const uint8_t *)PyBytes_AS_STRING(t), (size_t)PyBytes_GET_SIZE(t));
        return 0;
    }
    if (Py_EnterRecursiveCall(" in to_string"))
        return -1;
    int rc = 0;
    sx_open(o);
    if (PyList_Check(t)) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(t) && !rc; i++)
            rc = tree_out(o, PyList_GET_ITEM(t, i));
    }
    else {
        PyObject *it = PyObject_GetIter(t), *x;
        if (!it)
            rc = -1;
        else {
            while (!rc && (x = PyIter_Next(it)) != NULL) {
                rc = tree_out(o, x);
                Py_DECREF(x);
            }
            if (!rc && PyErr_Occurred())
                rc = -1;
            Py_DECREF(it);
        }
    }
    sx_close(o);
    Py_LeaveRecursiveCall();
    return rc;
}

static PyObject *
py_to_string(PyObject *Py_UNUSED(mod), PyObject *arg)
{
    Out o = {0};
    return text_result(&o, tree_out(&o, arg) ? -2 : 0);
}

static PyMethodDef module_methods[] = {
    {"to_string", py_to_string, METH_O, "sexplib's one-line printer of a tree of bytes and lists."},
    {"crc32c", py_crc32c, METH_O, "CRC-32C of a buffer (the instruction when the CPU has it)."},
    {"crc32c_shift", py_crc32c_shift, METH_VARARGS, "crc32c_shift(crc, n): the register past n zero bytes."},
    {"resync", py_resync, METH_VARARGS, "The next valid envelope after damage (framing.py's resync)."},
    {"parallel", py_parallel, METH_VARARGS,
     "parallel([min_bytes, warmup_bytes, segments]) -> the old (min_bytes, warmup_bytes, segments): how verify's "
     "scan is cut over cores (tests set it)."},
    {"find", py_find, METH_VARARGS, "find(buf, needle, start, stop): buf.find(needle, start, stop), by memmem."},
    {"crc32c_table", py_crc32c_table, METH_O, "CRC-32C by the slicing-by-8 table (the fallback)."},
    {"atom_text", py_atom_text, METH_O, "An atom as sexplib's one-line printer writes it."},
    {"float_atom", py_float_atom, METH_O, "sexp_of_float's text of a float."},
    {"read_handshake", py_read_handshake, METH_VARARGS, "A Handshake payload read into messages.py's classes, or None."},
    {"handshake_line", py_handshake_line, METH_VARARGS, "A Handshake envelope's canonical line, or None."},
    {NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "ripple_cli.codec.fast._speedups",
    .m_doc = "The fast lane of ripple's codec; see ripple_cli/codec/fast/__init__.py.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    const char *impl = crc32c_init();
    cpu_set_t cpus;
    if (sched_getaffinity(0, sizeof cpus, &cpus) == 0) {
        int k = CPU_COUNT(&cpus);
        par_segments = k < 1 ? 1 : k > MAX_SEGMENTS ? MAX_SEGMENTS : k;
    }
    sexpout_init();
    jsonout_init();
    shift_init();
    if (handshake_init() || PyType_Ready(&OutputSchemasType) || PyType_Ready(&ProgramType) || PyType_Ready(&ScannerType) || PyType_Ready(&CrcPrefixesType))
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (!m)
        return NULL;
    PyObject *layout = layout_table();
    int bad = !layout || PyModule_AddObjectRef(m, "LAYOUT", layout);
    Py_XDECREF(layout);
#define X(name, value) || PyModule_AddIntConstant(m, "REC_" #name, REC_##name)
    if (bad || PyModule_AddStringConstant(m, "CRC32C_IMPL", impl) ||
        PyModule_AddObjectRef(m, "Program", (PyObject *)&ProgramType) ||
        PyModule_AddObjectRef(m, "Scanner", (PyObject *)&ScannerType) ||
        PyModule_AddObjectRef(m, "CrcPrefixes", (PyObject *)&CrcPrefixesType) ||
        PyModule_AddObjectRef(m, "OutputSchemas", (PyObject *)&OutputSchemasType) LAYOUT_RECORD_KINDS(X)) {
        Py_DECREF(m);
        return NULL;
    }
#undef X
    return m;
}
