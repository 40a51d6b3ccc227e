/* bin_prot readers with exactly the checks of ripple_cli/codec/binprot.py.
 *
 * Each returns 0 and advances `r->pos`, or -1 where the Python reader
 * raises DecodeError.  The C side never reports why: on -1 the caller
 * hands the envelope to the Python decoder, which finds the same failure
 * and words the problem.  So a reader here may refuse more than Python
 * does (that only costs speed) but must never accept what Python refuses.
 */
#ifndef RIPPLE_BINPROT_H
#define RIPPLE_BINPROT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define INT63_MIN (-(INT64_C(1) << 62))
#define INT63_MAX ((INT64_C(1) << 62) - 1)

typedef struct {
    const uint8_t *b; /* the buffer being read: a payload, or a key or delta inside one */
    size_t pos;
    size_t len; /* `len(buf)` of the Python reader */
} Rd;

static inline uint16_t
le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t
le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline uint64_t
le64(const uint8_t *p)
{
    return (uint64_t)le32(p) | ((uint64_t)le32(p + 4) << 32);
}

static inline int
rd_need(const Rd *r, size_t at, size_t n)
{
    return at <= r->len && n <= r->len - at ? 0 : -1;
}

/* read_nat0: a length or count, at most the 63-bit int range. */
static inline int
rd_nat0(Rd *r, uint64_t *out)
{
    if (r->pos >= r->len)
        return -1;
    uint8_t c = r->b[r->pos];
    if (c < 0x80) {
        *out = c;
        r->pos += 1;
        return 0;
    }
    if (c == 0xFE) {
        if (rd_need(r, r->pos + 1, 2))
            return -1;
        *out = le16(r->b + r->pos + 1);
        r->pos += 3;
        return 0;
    }
    if (c == 0xFD) {
        if (rd_need(r, r->pos + 1, 4))
            return -1;
        *out = le32(r->b + r->pos + 1);
        r->pos += 5;
        return 0;
    }
    if (c == 0xFC) {
        if (rd_need(r, r->pos + 1, 8))
            return -1;
        uint64_t n = le64(r->b + r->pos + 1);
        if (n > (uint64_t)INT63_MAX)
            return -1;
        *out = n;
        r->pos += 9;
        return 0;
    }
    return -1;
}

/* read_int_any: the variable-length signed code, no range check. */
static inline int
rd_int_any(Rd *r, int64_t *out)
{
    if (r->pos >= r->len)
        return -1;
    const uint8_t *p = r->b + r->pos;
    uint8_t c = p[0];
    if (c < 0x80) {
        *out = c;
        r->pos += 1;
        return 0;
    }
    if (c == 0xFF) {
        if (rd_need(r, r->pos + 1, 1))
            return -1;
        int8_t v = (int8_t)p[1];
        if (v >= 0) /* Neg_int8 is for negatives only */
            return -1;
        *out = v;
        r->pos += 2;
        return 0;
    }
    if (c == 0xFE) {
        if (rd_need(r, r->pos + 1, 2))
            return -1;
        *out = (int16_t)le16(p + 1);
        r->pos += 3;
        return 0;
    }
    if (c == 0xFD) {
        if (rd_need(r, r->pos + 1, 4))
            return -1;
        *out = (int32_t)le32(p + 1);
        r->pos += 5;
        return 0;
    }
    if (c == 0xFC) {
        if (rd_need(r, r->pos + 1, 8))
            return -1;
        *out = (int64_t)le64(p + 1);
        r->pos += 9;
        return 0;
    }
    return -1;
}

/* read_int: OCaml's 63-bit int. */
static inline int
rd_int(Rd *r, int64_t *out)
{
    if (rd_int_any(r, out))
        return -1;
    return (*out < INT63_MIN || *out > INT63_MAX) ? -1 : 0;
}

/* read_int32: no 8-byte code. */
static inline int
rd_int32(Rd *r, int64_t *out)
{
    if (r->pos < r->len && r->b[r->pos] == 0xFC)
        return -1;
    if (rd_int_any(r, out))
        return -1;
    return (*out < INT32_MIN || *out > INT32_MAX) ? -1 : 0;
}

static inline int
rd_float(Rd *r, double *out)
{
    if (rd_need(r, r->pos, 8))
        return -1;
    uint64_t bits = le64(r->b + r->pos);
    memcpy(out, &bits, 8);
    r->pos += 8;
    return 0;
}

/* read_bool and read_option_tag: 0 or 1. */
static inline int
rd_01(Rd *r, int *out)
{
    if (r->pos >= r->len || r->b[r->pos] > 1)
        return -1;
    *out = r->b[r->pos];
    r->pos += 1;
    return 0;
}

static inline int
rd_string(Rd *r, const uint8_t **s, size_t *n)
{
    uint64_t k;
    if (rd_nat0(r, &k) || k > r->len - r->pos)
        return -1;
    *s = r->b + r->pos;
    *n = (size_t)k;
    r->pos += (size_t)k;
    return 0;
}

/* read_count: a list length; every element takes at least a byte. */
static inline int
rd_count(Rd *r, uint64_t *n)
{
    if (rd_nat0(r, n) || *n > r->len - r->pos)
        return -1;
    return 0;
}

/* read_ctor (values.py): a constructor index of `count`, one byte up to 256
 * constructors, two (little-endian) beyond.  read_tag is the one-byte case. */
static inline int
rd_ctor(Rd *r, uint32_t count, uint32_t *out)
{
    uint32_t t;
    if (count <= 256) {
        if (r->pos >= r->len)
            return -1;
        t = r->b[r->pos];
        r->pos += 1;
    }
    else {
        if (rd_need(r, r->pos, 2))
            return -1;
        t = le16(r->b + r->pos);
        r->pos += 2;
    }
    if (t >= count)
        return -1;
    *out = t;
    return 0;
}

#endif
