/* sexplib's one-line printer (`Sexp.to_string`), written straight into a
 * growing byte buffer: the rules of ripple_cli/sexp/write.py.
 *
 *  - an atom is quoted when it must be (sexplib0's `must_escape`): empty,
 *    a byte of `"();\` or outside `!`..`~`, or `#|` / `|#` anywhere;
 *    quoted atoms are escaped as OCaml's String.escaped;
 *  - a space separates two atoms only where both are unquoted (the `need`
 *    flag: the previous thing written in this list was an unquoted atom);
 *  - floats print as sexp_of_float: %.15G when it reads back, else %.17G.
 *    Python's own conversions are used (PyOS_double_to_string), so the text
 *    is that of `"%.15G" % x` in ripple_cli/sexp/tree.py, byte for byte.
 */
#ifndef RIPPLE_SEXPOUT_H
#define RIPPLE_SEXPOUT_H

#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    char *p;
    size_t len, cap;
    int need; /* a space must come before the next unquoted atom */
    int failed; /* out of memory: the whole call fails with MemoryError */
} Out;

static uint8_t sexp_special[256]; /* 1: the byte forces quoting */
static char sexp_escape[256][5]; /* String.escaped of each byte, NUL-terminated */

static void
sexpout_init(void)
{
    for (int b = 0; b < 256; b++) {
        sexp_special[b] = b <= 32 || b >= 127 || b == '"' || b == '(' || b == ')' || b == ';' || b == '\\';
        char *e = sexp_escape[b];
        switch (b) {
        case '"': strcpy(e, "\\\""); break;
        case '\\': strcpy(e, "\\\\"); break;
        case '\n': strcpy(e, "\\n"); break;
        case '\t': strcpy(e, "\\t"); break;
        case '\r': strcpy(e, "\\r"); break;
        case '\b': strcpy(e, "\\b"); break;
        default:
            if (b >= 0x20 && b <= 0x7E) {
                e[0] = (char)b;
                e[1] = 0;
            }
            else {
                e[0] = '\\';
                e[1] = (char)('0' + b / 100);
                e[2] = (char)('0' + b / 10 % 10);
                e[3] = (char)('0' + b % 10);
                e[4] = 0;
            }
        }
    }
}

static int
out_grow(Out *o, size_t extra)
{
    if (o->failed)
        return -1;
    size_t cap = o->cap ? o->cap : 1 << 16;
    while (cap - o->len < extra) {
        if (cap > PY_SSIZE_T_MAX / 2) {
            o->failed = 1;
            return -1;
        }
        cap *= 2;
    }
    char *p = PyMem_Realloc(o->p, cap);
    if (!p) {
        o->failed = 1;
        return -1;
    }
    o->p = p;
    o->cap = cap;
    return 0;
}

static inline int
out_put(Out *o, const void *s, size_t n)
{
    if (o->cap - o->len < n && out_grow(o, n))
        return -1;
    memcpy(o->p + o->len, s, n);
    o->len += n;
    return 0;
}

static inline void
out_ch(Out *o, char c)
{
    if (o->cap == o->len && out_grow(o, 1))
        return;
    o->p[o->len++] = c;
}

/* Literal structure ("(", ")", "(seq" ...) resets the atom flag. */
#define OUT_LIT(o, s) (out_put((o), (s), sizeof(s) - 1), (o)->need = 0)

static inline void
sx_open(Out *o)
{
    out_ch(o, '(');
    o->need = 0;
}

static inline void
sx_close(Out *o)
{
    out_ch(o, ')');
    o->need = 0;
}

/* An atom known to need no quoting (digits, keywords, floats). */
static inline void
sx_plain(Out *o, const char *s, size_t n)
{
    if (o->need)
        out_ch(o, ' ');
    out_put(o, s, n);
    o->need = 1;
}

static inline int
sx_must_escape(const uint8_t *s, size_t n)
{
    if (n == 0)
        return 1;
    for (size_t i = 0; i < n; i++)
        if (sexp_special[s[i]])
            return 1;
    for (size_t i = 0; i + 1 < n; i++)
        if ((s[i] == '#' && s[i + 1] == '|') || (s[i] == '|' && s[i + 1] == '#'))
            return 1;
    return 0;
}

static void
sx_quoted(Out *o, const uint8_t *s, size_t n)
{
    /* at most 4 output bytes per input byte, plus the quotes */
    if (n > (PY_SSIZE_T_MAX - 2) / 4) {
        o->failed = 1;
        return;
    }
    if (o->cap - o->len < 4 * n + 2 && out_grow(o, 4 * n + 2))
        return;
    char *d = o->p + o->len;
    *d++ = '"';
    for (size_t i = 0; i < n; i++) {
        const char *e = sexp_escape[s[i]];
        if (!e[1])
            *d++ = e[0];
        else {
            size_t k = strlen(e);
            memcpy(d, e, k);
            d += k;
        }
    }
    *d++ = '"';
    o->len = (size_t)(d - o->p);
    o->need = 0;
}

/* Any atom: a string value, a name. */
static inline void
sx_atom(Out *o, const uint8_t *s, size_t n)
{
    if (sx_must_escape(s, n))
        sx_quoted(o, s, n);
    else
        sx_plain(o, (const char *)s, n);
}

static inline void
sx_int(Out *o, int64_t v)
{
    char tmp[24];
    char *e = tmp + sizeof(tmp), *d = e;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        *--d = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--d = '-';
    sx_plain(o, d, (size_t)(e - d));
}

/* The fast path of sx_float, for the floats streams are full of (prices
 * like 332.32): x is a decimal D = m / 10^k with m < 10^15, tried for
 * k = 0, 1, ... while m stays below 10^15.  D is found exact when the
 * IEEE division m / 10^k (correctly rounded; both operands exact) gives x
 * back.  Then D is what %.15G prints: for a normal double, x is within
 * 2^-53 |x| of D, less than half a unit in the 15th significant digit
 * (at least 5e-16 |x|), so D is *the* nearest 15-digit decimal to x, and it
 * reads back to x, so sexp_of_float keeps %.15G.  With 1e-4 <= |x| < 1e15,
 * %G prints fixed-point (its exponent is in -4..14), trailing zeros and a
 * bare point removed.  Returns 0 when x is not such a decimal (the slow,
 * general path then runs). */
static const double pow10_table[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,
                                     1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17};

/* The decimal D of x as above, in fixed point, into `text` (48 bytes);
 * `dot_zero`: a whole number ends in ".0" (Python's repr) rather than
 * nothing (%G).  Its length, or 0 when x is not such a decimal.  Shared by
 * the sexp and JSON printers (jsonout.h). */
static int
float_decimal(double x, char *text, int dot_zero)
{
    double a = fabs(x);
    if (!(a >= 1e-4 && a < 1e15))
        return 0;
    for (int k = 0; k < (int)(sizeof(pow10_table) / sizeof(pow10_table[0])); k++) {
        double m = nearbyint(a * pow10_table[k]);
        if (m >= 1e15)
            return 0;
        if (m / pow10_table[k] != a)
            continue;
        uint64_t u = (uint64_t)m;
        while (k > 0 && u % 10 == 0) {
            u /= 10;
            k--;
        }
        char digits[20];
        int d = 0;
        do {
            digits[d++] = (char)('0' + u % 10);
            u /= 10;
        } while (u);
        /* digits are reversed: digits[d-1] is the first */
        char *t = text;
        if (signbit(x))
            *t++ = '-';
        if (d > k) {
            for (int i = d - 1; i >= k; i--)
                *t++ = digits[i];
            if (k) {
                *t++ = '.';
                for (int i = k - 1; i >= 0; i--)
                    *t++ = digits[i];
            }
            else if (dot_zero) {
                *t++ = '.';
                *t++ = '0';
            }
        }
        else {
            *t++ = '0';
            *t++ = '.';
            for (int i = 0; i < k - d; i++)
                *t++ = '0';
            for (int i = d - 1; i >= 0; i--)
                *t++ = digits[i];
        }
        return (int)(t - text);
    }
    return 0;
}

static int
sx_float_short(Out *o, double x)
{
    char text[48];
    int n = float_decimal(x, text, 0);
    if (n)
        sx_plain(o, text, (size_t)n);
    return n != 0;
}

/* sexp_of_float, as float_atom in ripple_cli/sexp/tree.py.  -1 with a
 * Python exception set on failure. */
static int
sx_float(Out *o, double x)
{
    if (sx_float_short(o, x))
        return 0;
    if (isnan(x)) {
        if (signbit(x))
            sx_plain(o, "-NAN", 4);
        else
            sx_plain(o, "NAN", 3);
        return 0;
    }
    char *s = PyOS_double_to_string(x, 'G', 15, 0, NULL);
    if (!s)
        return -1;
    double back = PyOS_string_to_double(s, NULL, NULL);
    if (back == -1.0 && PyErr_Occurred()) {
        PyMem_Free(s);
        return -1;
    }
    if (back != x) {
        PyMem_Free(s);
        s = PyOS_double_to_string(x, 'G', 17, 0, NULL);
        if (!s)
            return -1;
    }
    sx_plain(o, s, strlen(s));
    PyMem_Free(s);
    return 0;
}

#endif
