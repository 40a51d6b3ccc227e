/* A Handshake payload in C: checked, its schemas read when asked for, and
 * printed as its canonical line straight from its bytes.
 *
 * A Handshake may declare any number of schemas (issue 15: 100,000 in
 * 2.5 MB).  In Python each schema cost about 6 us to read and 5-9 us to
 * print through its s-expression tree, and building them all in C still
 * left 600,000 objects to make, index and free.  Here a Handshake costs
 * what checking and printing its bytes cost; a schema is built, as the
 * very classes of codec/schema.py (passed in by messages.py), when it is
 * asked for.  Nothing downstream can tell the two readers apart
 * (tests/property/test_prop_fast.py reads random and damaged Handshakes
 * both ways).
 *
 * The rules are those of read_schema / read_field_type / read_fields and
 * sexp_of_schema in codec/schema.py, line for line.  As everywhere in this
 * module, a payload the C side does not take (any decoding failure) gives
 * None, and the Python reader then finds the same failure and words it.
 */
#ifndef RIPPLE_HANDSHAKE_H
#define RIPPLE_HANDSHAKE_H

#include <Python.h>
#include <structmember.h>

#include "binprot.h"
#include "sexpout.h"

#define HS_MAX_TYPE_DEPTH 64 /* schema.py's MAX_TYPE_DEPTH */

enum { HS_HANDSHAKE, HS_SCHEMA, HS_FIELD, HS_OPTION, HS_LIST, HS_RECORD, HS_ENUM, HS_CLASSES };

static const char *const hs_prim_names[6] = {"Int", "Int32", "Int64", "Float", "Bool", "String"};

/* Each class's slots, in the order its fields are given to hs_new. */
static const char *const hs_slot_names[HS_CLASSES][4] = {
    [HS_HANDSHAKE] = {"source_worker_id", "output_schemas", "protocol_version"},
    [HS_SCHEMA] = {"name", "version", "key", "fields"},
    [HS_FIELD] = {"name", "typ", "default"},
    [HS_OPTION] = {"inner"},
    [HS_LIST] = {"inner"},
    [HS_RECORD] = {"fields"},
    [HS_ENUM] = {"names"},
};
static PyObject *hs_slot_strs[HS_CLASSES][4]; /* the same, interned */

static int
handshake_init(void)
{
    for (int c = 0; c < HS_CLASSES; c++)
        for (int i = 0; i < 4 && hs_slot_names[c][i]; i++)
            if (!(hs_slot_strs[c][i] = PyUnicode_InternFromString(hs_slot_names[c][i])))
                return -1;
    return 0;
}

typedef struct {
    Rd r;
    PyTypeObject *cls[HS_CLASSES];
    Py_ssize_t slot[HS_CLASSES][4]; /* where each slot is in an instance */
    int nslots[HS_CLASSES];
    PyObject *prims[6]; /* schema.py's INT, INT32, ... (shared, as Python's reader shares them) */
    int refused; /* the payload does not decode: None, Python words why */
} Hs;

/* Where the slot `name` of the slotted class `cls` is kept: its member
 * descriptor says.  Anything else (a class without that slot, a property)
 * is refused with TypeError: kinds are messages.py's own classes. */
static int
hs_find_slot(PyTypeObject *cls, PyObject *name, Py_ssize_t *offset)
{
    PyObject *d = PyObject_GetAttr((PyObject *)cls, name);
    int ok = d && Py_IS_TYPE(d, &PyMemberDescr_Type) &&
             ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX &&
             !(((PyMemberDescrObject *)d)->d_member->flags & READONLY);
    if (ok)
        *offset = ((PyMemberDescrObject *)d)->d_member->offset;
    Py_XDECREF(d);
    if (!ok && !PyErr_Occurred())
        PyErr_Format(PyExc_TypeError, "read_handshake: %s has no slot %U", cls->tp_name, name);
    return ok ? 0 : -1;
}

/* The objects made here are immutable and refer only to what was made
 * before them (bytes, ints, the shared primitives, other such objects):
 * they can never be part of a reference cycle, so the cycle collector
 * need not know them.  Untracked, it does not walk them again and again
 * as they are made and then at every full collection for as long as a
 * registry holds them (100,000 schemas: 600,000 objects, 0.15 s a walk). */
static PyObject *
hs_untracked(PyObject *o)
{
    if (o && PyObject_GC_IsTracked(o))
        PyObject_GC_UnTrack(o);
    return o;
}

/* An instance of one of the frozen, slotted dataclasses, its slots filled
 * as its __init__ would (they have no __post_init__ and no validation):
 * the generated __init__ goes through object.__setattr__ once a field,
 * and that was most of what a schema cost to read.  Steals the
 * references in vals. */
static PyObject *
hs_new(Hs *h, int c, PyObject **vals)
{
    int n = h->nslots[c];
    PyObject *o = NULL;
    for (int i = 0; i < n; i++)
        if (!vals[i])
            goto fail;
    o = h->cls[c]->tp_alloc(h->cls[c], 0);
    if (!o)
        goto fail;
    for (int i = 0; i < n; i++)
        *(PyObject **)((char *)o + h->slot[c][i]) = vals[i];
    return hs_untracked(o);
fail:
    for (int i = 0; i < n; i++)
        Py_XDECREF(vals[i]);
    return NULL;
}

static PyObject *
hs_refuse(Hs *h)
{
    h->refused = 1;
    return NULL;
}

static PyObject *
hs_string(Hs *h)
{
    const uint8_t *s;
    size_t n;
    if (rd_string(&h->r, &s, &n))
        return hs_refuse(h);
    return PyBytes_FromStringAndSize((const char *)s, (Py_ssize_t)n);
}

static PyObject *hs_fields(Hs *h, int depth);

static PyObject *
hs_type(Hs *h, int depth)
{
    uint32_t tag;
    if (depth > HS_MAX_TYPE_DEPTH || rd_ctor(&h->r, 10, &tag))
        return hs_refuse(h);
    if (tag < 6)
        return Py_NewRef(h->prims[tag]);
    PyObject *v[1];
    if (tag == 6 || tag == 7) {
        v[0] = hs_type(h, depth + 1);
        return hs_new(h, tag == 6 ? HS_OPTION : HS_LIST, v);
    }
    if (tag == 8) {
        v[0] = hs_fields(h, depth + 1);
        return hs_new(h, HS_RECORD, v);
    }
    uint64_t n;
    if (rd_count(&h->r, &n))
        return hs_refuse(h);
    PyObject *names = PyTuple_New((Py_ssize_t)n);
    for (uint64_t i = 0; names && i < n; i++) {
        PyObject *s = hs_string(h);
        if (!s)
            Py_CLEAR(names);
        else
            PyTuple_SET_ITEM(names, (Py_ssize_t)i, s);
    }
    v[0] = hs_untracked(names);
    return hs_new(h, HS_ENUM, v);
}

static PyObject *
hs_fields(Hs *h, int depth)
{
    uint64_t n;
    if (rd_count(&h->r, &n))
        return hs_refuse(h);
    PyObject *fields = PyTuple_New((Py_ssize_t)n);
    for (uint64_t i = 0; fields && i < n; i++) {
        PyObject *v[3] = {hs_string(h), NULL, NULL};
        int some = 0;
        if (v[0] && (v[1] = hs_type(h, depth)) != NULL) {
            if (rd_01(&h->r, &some))
                hs_refuse(h);
            else
                v[2] = some ? hs_string(h) : Py_NewRef(Py_None);
        }
        PyObject *f = hs_new(h, HS_FIELD, v);
        if (!f)
            Py_CLEAR(fields);
        else
            PyTuple_SET_ITEM(fields, (Py_ssize_t)i, f);
    }
    return hs_untracked(fields);
}

static PyObject *
hs_schema(Hs *h)
{
    PyObject *v[4] = {hs_string(h), NULL, NULL, NULL};
    int64_t version;
    if (v[0]) {
        if (rd_int(&h->r, &version))
            hs_refuse(h);
        else if ((v[1] = PyLong_FromLongLong(version)) != NULL && (v[2] = hs_type(h, 0)) != NULL)
            v[3] = hs_fields(h, 0);
    }
    return hs_new(h, HS_SCHEMA, v);
}

/* Hs's classes, primitives and slots from `kinds`: (Handshake, Schema,
 * Field, OptionOf, ListOf, RecordOf, EnumOf, (INT, INT32, INT64, FLOAT,
 * BOOL, STRING)). */
static int
hs_kinds(Hs *h, PyObject *kinds)
{
    PyObject *prims = PyTuple_GET_SIZE(kinds) == HS_CLASSES + 1 ? PyTuple_GET_ITEM(kinds, HS_CLASSES) : NULL;
    int ok = prims && PyTuple_Check(prims) && PyTuple_GET_SIZE(prims) == 6;
    for (int c = 0; ok && c < HS_CLASSES; c++)
        ok = PyType_Check(PyTuple_GET_ITEM(kinds, c));
    if (!ok) {
        PyErr_SetString(PyExc_TypeError, "read_handshake: kinds must be 7 classes and a tuple of 6 primitives");
        return -1;
    }
    for (int i = 0; i < 6; i++)
        h->prims[i] = PyTuple_GET_ITEM(prims, i);
    for (int c = 0; c < HS_CLASSES; c++) {
        h->cls[c] = (PyTypeObject *)PyTuple_GET_ITEM(kinds, c);
        for (int i = 0; i < 4 && hs_slot_strs[c][i]; i++, h->nslots[c] = i)
            if (hs_find_slot(h->cls[c], hs_slot_strs[c][i], &h->slot[c][i]))
                return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- the schemas, read when asked
 *
 * read_handshake does not build a Handshake's schemas: it checks them all
 * (every rule of the Python reader, so a payload it takes is one Python
 * takes) and keeps where each one starts.  Its output_schemas is an
 * OutputSchemas over the payload: a sequence of (output name, Schema)
 * pairs made when they are asked for, and `get(fingerprint)`, the lookup
 * the registry (codec/registry.py) makes for a Delta, by an index built in
 * C on the first lookup.  100,000 schemas cost 600,000 objects made,
 * indexed and freed when they were built at once: most of a Handshake's
 * time, for schemas no Delta may ever use.  Iterated, compared, hashed,
 * printed or pickled, it is the tuple of pairs Python's reader makes. */

static int sk_fields(Rd *r, int depth);

/* read_field_type's checks, nothing built */
static int
sk_type(Rd *r, int depth)
{
    uint32_t tag;
    if (depth > HS_MAX_TYPE_DEPTH || rd_ctor(r, 10, &tag))
        return -1;
    if (tag < 6)
        return 0;
    if (tag == 6 || tag == 7)
        return sk_type(r, depth + 1);
    if (tag == 8)
        return sk_fields(r, depth + 1);
    uint64_t n;
    const uint8_t *s;
    size_t k;
    if (rd_count(r, &n))
        return -1;
    for (uint64_t i = 0; i < n; i++)
        if (rd_string(r, &s, &k))
            return -1;
    return 0;
}

static int
sk_fields(Rd *r, int depth)
{
    uint64_t n;
    const uint8_t *s;
    size_t k;
    int some;
    if (rd_count(r, &n))
        return -1;
    for (uint64_t i = 0; i < n; i++)
        if (rd_string(r, &s, &k) || sk_type(r, depth) || rd_01(r, &some) || (some && rd_string(r, &s, &k)))
            return -1;
    return 0;
}

typedef struct {
    PyObject_HEAD
    PyObject *payload; /* the Handshake's payload (bytes) */
    PyObject *kinds; /* what read_handshake was given: keeps h's classes alive */
    Hs h; /* classes, slots and primitives, to build a pair */
    Py_ssize_t n;
    size_t *at; /* where pair i starts: its output name, then its schema */
    uint32_t *index; /* open addressing by fingerprint: pair + 1, 0 empty; NULL until the first get */
    size_t mask;
} OutputSchemas;

static PyTypeObject OutputSchemasType;

/* The schema of pair i: its name and version, where its key starts. */
static void
os_head(OutputSchemas *self, Py_ssize_t i, const uint8_t **name, size_t *n, int64_t *version, size_t *key)
{
    Rd r = {(const uint8_t *)PyBytes_AS_STRING(self->payload), self->at[i], (size_t)PyBytes_GET_SIZE(self->payload)};
    const uint8_t *s;
    size_t k;
    /* checked by read_handshake: cannot fail */
    (void)rd_string(&r, &s, &k);
    (void)rd_string(&r, name, n);
    (void)rd_int(&r, version);
    *key = r.pos;
}

/* `/vVERSION`, the end of a fingerprint, into v (24 bytes); its length.
 * (snprintf was half of what indexing 100,000 schemas cost.) */
static int
os_version_text(int64_t version, char *v)
{
    char digits[20];
    int d = 0;
    uint64_t u = version < 0 ? (uint64_t)0 - (uint64_t)version : (uint64_t)version;
    do {
        digits[d++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    int k = 0;
    v[k++] = '/';
    v[k++] = 'v';
    if (version < 0)
        v[k++] = '-';
    while (d)
        v[k++] = digits[--d];
    return k;
}

#define FNV_OFFSET 0xcbf29ce484222325u

/* FNV-1a of n more bytes, from x (FNV_OFFSET to begin). */
static uint64_t
os_fnv(uint64_t x, const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x = (x ^ s[i]) * 0x100000001b3u;
    return x;
}

/* The hash of Schema.fingerprint's text, `NAME/vVERSION`, as os_fnv of it. */
static uint64_t
os_fp_hash(const uint8_t *name, size_t n, int64_t version)
{
    char v[24];
    int k = os_version_text(version, v);
    return os_fnv(os_fnv(FNV_OFFSET, name, n), (const uint8_t *)v, (size_t)k);
}

static int
os_fp_equal(const uint8_t *name, size_t n, int64_t version, const uint8_t *fp, size_t len)
{
    char v[24];
    int k = os_version_text(version, v);
    return len == n + (size_t)k && memcmp(fp, name, n) == 0 && memcmp(fp + n, v, (size_t)k) == 0;
}

/* The index, pairs in order: a later one of a fingerprint replaces an
 * earlier one, as in the registry's dict. */
static int
os_build_index(OutputSchemas *self)
{
    size_t size = 8;
    while (size < 2 * (size_t)self->n)
        size *= 2;
    uint32_t *t = PyMem_Calloc(size, sizeof(uint32_t));
    if (!t) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < self->n; i++) {
        const uint8_t *name, *other;
        size_t n, m, key;
        int64_t version, w;
        os_head(self, i, &name, &n, &version, &key);
        size_t p = (size_t)os_fp_hash(name, n, version) & (size - 1);
        for (; t[p]; p = (p + 1) & (size - 1)) {
            os_head(self, (Py_ssize_t)t[p] - 1, &other, &m, &w, &key);
            if (m == n && w == version && memcmp(other, name, n) == 0)
                break;
        }
        t[p] = (uint32_t)i + 1;
    }
    self->index = t;
    self->mask = size - 1;
    return 0;
}

static PyObject *
os_schema(OutputSchemas *self, Py_ssize_t i)
{
    Hs h = self->h;
    const uint8_t *s;
    size_t k;
    h.r = (Rd){(const uint8_t *)PyBytes_AS_STRING(self->payload), self->at[i],
               (size_t)PyBytes_GET_SIZE(self->payload)};
    (void)rd_string(&h.r, &s, &k);
    return hs_schema(&h);
}

static Py_ssize_t
os_len(OutputSchemas *self)
{
    return self->n;
}

static PyObject *
os_item(OutputSchemas *self, Py_ssize_t i)
{
    if (i < 0 || i >= self->n) {
        PyErr_SetString(PyExc_IndexError, "output_schemas index out of range");
        return NULL;
    }
    Hs h = self->h;
    h.r = (Rd){(const uint8_t *)PyBytes_AS_STRING(self->payload), self->at[i],
               (size_t)PyBytes_GET_SIZE(self->payload)};
    PyObject *name = hs_string(&h), *schema = name ? hs_schema(&h) : NULL;
    PyObject *pair = schema ? hs_untracked(PyTuple_Pack(2, name, schema)) : NULL;
    Py_XDECREF(name);
    Py_XDECREF(schema);
    return pair;
}

/* get(fingerprint): the schema the pairs declare under it (the last), or None. */
static PyObject *
os_get(OutputSchemas *self, PyObject *arg)
{
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "get: a fingerprint (bytes)");
        return NULL;
    }
    if (!self->index && os_build_index(self))
        return NULL;
    const uint8_t *fp = (const uint8_t *)PyBytes_AS_STRING(arg);
    size_t len = (size_t)PyBytes_GET_SIZE(arg);
    for (size_t p = (size_t)os_fnv(FNV_OFFSET, fp, len) & self->mask; self->index[p]; p = (p + 1) & self->mask) {
        const uint8_t *name;
        size_t n, key;
        int64_t version;
        Py_ssize_t i = (Py_ssize_t)self->index[p] - 1;
        os_head(self, i, &name, &n, &version, &key);
        if (os_fp_equal(name, n, version, fp, len))
            return os_schema(self, i);
    }
    Py_RETURN_NONE;
}

static PyObject *
os_tuple(PyObject *self)
{
    return PySequence_Tuple(self);
}

static PyObject *
os_richcompare(PyObject *self, PyObject *other, int op)
{
    if (op != Py_EQ && op != Py_NE)
        Py_RETURN_NOTIMPLEMENTED;
    /* a tuple, or another such sequence (the pure lane's OutputSchemas):
     * never a list, a string or bytes, as a tuple is never equal to them */
    if (!PyTuple_Check(other) && (!PySequence_Check(other) || PyList_Check(other) || PyUnicode_Check(other) ||
                                  PyBytes_Check(other) || PyByteArray_Check(other)))
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *a = os_tuple(self), *b = a ? (PyTuple_Check(other) ? Py_NewRef(other) : os_tuple(other)) : NULL;
    PyObject *res = b ? PyObject_RichCompare(a, b, op) : NULL;
    Py_XDECREF(a);
    Py_XDECREF(b);
    return res;
}

static Py_hash_t
os_hash(PyObject *self)
{
    PyObject *t = os_tuple(self);
    Py_hash_t h = t ? PyObject_Hash(t) : -1;
    Py_XDECREF(t);
    return h;
}

static PyObject *
os_repr(PyObject *self)
{
    PyObject *t = os_tuple(self);
    PyObject *r = t ? PyObject_Repr(t) : NULL;
    Py_XDECREF(t);
    return r;
}

/* Pickled (a Spark task, a process boundary) as the plain tuple. */
static PyObject *
os_reduce(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *t = os_tuple(self);
    return t ? Py_BuildValue("(O(N))", (PyObject *)&PyTuple_Type, t) : NULL;
}

static void
os_dealloc(OutputSchemas *self)
{
    Py_XDECREF(self->payload);
    Py_XDECREF(self->kinds);
    PyMem_Free(self->at);
    PyMem_Free(self->index);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PySequenceMethods os_as_sequence = {
    .sq_length = (lenfunc)os_len,
    .sq_item = (ssizeargfunc)os_item,
};

static PyMethodDef os_methods[] = {
    {"get", (PyCFunction)os_get, METH_O, "The schema declared under a fingerprint (the last one), or None."},
    {"__reduce__", os_reduce, METH_NOARGS, NULL},
    {NULL},
};

static PyTypeObject OutputSchemasType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ripple_cli.codec.fast._speedups.OutputSchemas",
    .tp_doc = "A Handshake's (output name, Schema) pairs, read from its payload when asked for.",
    .tp_basicsize = sizeof(OutputSchemas),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)os_dealloc,
    .tp_as_sequence = &os_as_sequence,
    .tp_richcompare = os_richcompare,
    .tp_hash = os_hash,
    .tp_repr = os_repr,
    .tp_methods = os_methods,
};

/* read_handshake(payload, kinds): the Handshake, its output_schemas an
 * OutputSchemas, or None where the Python reader raises. */
static PyObject *
py_read_handshake(PyObject *Py_UNUSED(mod), PyObject *args)
{
    PyObject *payload, *kinds;
    if (!PyArg_ParseTuple(args, "O!O!", &PyBytes_Type, &payload, &PyTuple_Type, &kinds))
        return NULL;
    OutputSchemas *outs = PyObject_New(OutputSchemas, &OutputSchemasType);
    if (!outs)
        return NULL;
    outs->payload = Py_NewRef(payload);
    outs->kinds = Py_NewRef(kinds);
    outs->at = NULL;
    outs->index = NULL;
    outs->n = 0;
    memset(&outs->h, 0, sizeof(outs->h));
    Hs *h = &outs->h;
    h->r = (Rd){(const uint8_t *)PyBytes_AS_STRING(payload), 0, (size_t)PyBytes_GET_SIZE(payload)};
    if (hs_kinds(h, kinds)) {
        Py_DECREF(outs);
        return NULL;
    }
    PyObject *v[3] = {hs_string(h), NULL, NULL};
    uint64_t n = 0;
    int64_t version;
    const uint8_t *s;
    size_t k;
    int ok = v[0] && !rd_count(&h->r, &n) && n < UINT32_MAX;
    if (ok && n && !(outs->at = PyMem_Malloc((size_t)n * sizeof(size_t)))) {
        Py_DECREF(outs);
        Py_XDECREF(v[0]);
        return PyErr_NoMemory();
    }
    for (uint64_t i = 0; ok && i < n; i++) {
        outs->at[i] = h->r.pos;
        ok = !rd_string(&h->r, &s, &k) && !rd_string(&h->r, &s, &k) && !rd_int(&h->r, &version) &&
             !sk_type(&h->r, 0) && !sk_fields(&h->r, 0);
    }
    ok = ok && !rd_int(&h->r, &version) && h->r.pos == h->r.len;
    if (!ok) {
        Py_DECREF(outs);
        Py_XDECREF(v[0]);
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    outs->n = (Py_ssize_t)n;
    v[1] = (PyObject *)outs;
    v[2] = PyLong_FromLongLong(version);
    return hs_new(h, HS_HANDSHAKE, v);
}

/* ---------------------------------------------------------------- text */

static int hp_fields(Rd *r, Out *o, int depth);

static inline void
hp_key(Out *o, const char *k, size_t n)
{
    sx_open(o);
    sx_plain(o, k, n);
}

#define HP_KEY(o, k) hp_key((o), (k), sizeof(k) - 1)

static int
hp_string(Rd *r, Out *o)
{
    const uint8_t *s;
    size_t n;
    if (rd_string(r, &s, &n))
        return -1;
    sx_atom(o, s, n);
    return 0;
}

/* sexp_of_field_type */
static int
hp_type(Rd *r, Out *o, int depth)
{
    uint32_t tag;
    if (depth > HS_MAX_TYPE_DEPTH || rd_ctor(r, 10, &tag))
        return -1;
    if (tag < 6) {
        sx_plain(o, hs_prim_names[tag], strlen(hs_prim_names[tag]));
        return 0;
    }
    int rc = 0;
    if (tag == 6 || tag == 7) {
        if (tag == 6)
            HP_KEY(o, "Option");
        else
            HP_KEY(o, "List");
        rc = hp_type(r, o, depth + 1);
    }
    else if (tag == 8) {
        HP_KEY(o, "Record");
        rc = hp_fields(r, o, depth + 1);
    }
    else {
        uint64_t n;
        HP_KEY(o, "Enum");
        if (rd_count(r, &n))
            return -1;
        sx_open(o);
        for (uint64_t i = 0; !rc && i < n; i++)
            rc = hp_string(r, o);
        sx_close(o);
    }
    sx_close(o);
    return rc;
}

/* the list of sexp_of_field */
static int
hp_fields(Rd *r, Out *o, int depth)
{
    uint64_t n;
    if (rd_count(r, &n))
        return -1;
    sx_open(o);
    for (uint64_t i = 0; i < n; i++) {
        int some;
        sx_open(o);
        HP_KEY(o, "name");
        if (hp_string(r, o))
            return -1;
        sx_close(o);
        HP_KEY(o, "typ");
        if (hp_type(r, o, depth))
            return -1;
        sx_close(o);
        HP_KEY(o, "default");
        if (rd_01(r, &some))
            return -1;
        sx_open(o);
        if (some && hp_string(r, o))
            return -1;
        sx_close(o);
        sx_close(o);
        sx_close(o);
    }
    sx_close(o);
    return 0;
}

/* sexp_of_schema */
static int
hp_schema(Rd *r, Out *o)
{
    int64_t version;
    sx_open(o);
    HP_KEY(o, "name");
    if (hp_string(r, o) || rd_int(r, &version))
        return -1;
    sx_close(o);
    HP_KEY(o, "version");
    sx_int(o, version);
    sx_close(o);
    HP_KEY(o, "key");
    if (hp_type(r, o, 0))
        return -1;
    sx_close(o);
    HP_KEY(o, "fields");
    if (hp_fields(r, o, 0))
        return -1;
    sx_close(o);
    sx_close(o);
    return 0;
}

/* handshake_line(seq, time_ns, fingerprint, flags, payload): text.py's
 * envelope_to_line of a Handshake envelope, from its payload's bytes; None
 * where the payload does not read as a Handshake. */
static PyObject *
py_handshake_line(PyObject *Py_UNUSED(mod), PyObject *args)
{
    long long seq, time_ns;
    int flags;
    Py_buffer fp, b;
    if (!PyArg_ParseTuple(args, "LLy*iy*", &seq, &time_ns, &fp, &flags, &b))
        return NULL;
    Rd r = {b.buf, 0, (size_t)b.len};
    Out o = {0};
    out_grow(&o, 5 * (size_t)b.len + 256); /* the text is about 4.6 times the bytes: grown once */
    uint64_t n;
    int64_t version;
    int rc = 0;
    sx_open(&o);
    HP_KEY(&o, "seq");
    sx_int(&o, seq);
    sx_close(&o);
    HP_KEY(&o, "time_ns");
    sx_int(&o, time_ns);
    sx_close(&o);
    HP_KEY(&o, "schema");
    sx_atom(&o, fp.buf, (size_t)fp.len);
    sx_close(&o);
    if (flags) {
        HP_KEY(&o, "flags");
        sx_int(&o, flags);
        sx_close(&o);
    }
    HP_KEY(&o, "msg");
    HP_KEY(&o, "Handshake");
    sx_open(&o);
    HP_KEY(&o, "source_worker_id");
    rc = hp_string(&r, &o) || rd_count(&r, &n);
    sx_close(&o);
    HP_KEY(&o, "output_schemas");
    sx_open(&o);
    for (uint64_t i = 0; !rc && i < n; i++) {
        sx_open(&o);
        rc = hp_string(&r, &o) || hp_schema(&r, &o);
        sx_close(&o);
    }
    sx_close(&o);
    sx_close(&o);
    if (!rc)
        rc = rd_int(&r, &version) || r.pos != r.len;
    if (!rc) {
        HP_KEY(&o, "protocol_version");
        sx_int(&o, version);
        OUT_LIT(&o, ")))))");
    }
    PyBuffer_Release(&fp);
    PyBuffer_Release(&b);
    PyObject *res;
    if (o.failed)
        res = PyErr_NoMemory();
    else if (rc)
        res = Py_NewRef(Py_None);
    else
        res = PyBytes_FromStringAndSize(o.p ? o.p : "", (Py_ssize_t)o.len);
    PyMem_Free(o.p);
    return res;
}

#endif
