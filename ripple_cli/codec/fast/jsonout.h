/* The typed JSON form (ripple_cli/codec/jsonview.py, shape version 1), written
 * straight into the same growing buffer as the sexp printer: the bytes of
 * render/json.py's `dumps` (json.dumps with ensure_ascii=False and
 * separators (",", ":")), so that a fast lane's JSON lines and the Python
 * lane's are the same bytes.
 *
 *  - a byte string is a JSON string when it is valid UTF-8 (Python's strict
 *    decoder: no overlong forms, no surrogates, nothing past U+10FFFF), else
 *    {"base64": "..."} (values.bytes_to_json);
 *  - a string escapes `"`, `\` and the bytes below 0x20 as json's C encoder
 *    does (\b \t \n \f \r, else \u00xx in lowercase hex); every other byte,
 *    non-ASCII included, is copied;
 *  - a float is its repr (NaN and the infinities are the strings "NaN",
 *    "Infinity", "-Infinity": values.float_to_json);
 *  - a time is jsonview.iso_time: RFC 3339 UTC with all nine digits.
 */
#ifndef RIPPLE_JSONOUT_H
#define RIPPLE_JSONOUT_H

#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "sexpout.h"

static uint8_t json_special[256]; /* 1: the byte is escaped in a JSON string */

static void
jsonout_init(void)
{
    for (int b = 0; b < 256; b++)
        json_special[b] = b < 0x20 || b == '"' || b == '\\';
}

#define JS_LIT(o, s) out_put((o), (s), sizeof(s) - 1)

/* The length of the UTF-8 sequence Python's strict decoder accepts at s
 * (Unicode's table 3-7: no overlong form, no surrogate, nothing past
 * U+10FFFF), its code point in *cp; 0 when the byte there starts none. */
static inline size_t
utf8_seq(const uint8_t *s, size_t n, uint32_t *cp)
{
    uint8_t c = s[0];
    size_t k;
    uint8_t lo = 0x80, hi = 0xBF;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF)
        k = 1;
    else if (c >= 0xE0 && c <= 0xEF) {
        k = 2;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F; /* no surrogates */
    }
    else if (c >= 0xF0 && c <= 0xF4) {
        k = 3;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    }
    else
        return 0;
    if (n <= k || s[1] < lo || s[1] > hi)
        return 0;
    uint32_t v = c & (0x3F >> k);
    for (size_t j = 1; j <= k; j++) {
        if ((s[j] & 0xC0) != 0x80)
            return 0;
        v = v << 6 | (s[j] & 0x3F);
    }
    *cp = v;
    return k + 1;
}

/* Python's strict UTF-8 decoder accepts these bytes. */
static int
js_utf8_valid(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        /* ASCII eight bytes at a time: most names and values are ASCII */
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (w & 0x8080808080808080ull)
                break;
            i += 8;
        }
        if (i >= n)
            break;
        uint32_t cp;
        size_t k = utf8_seq(s + i, n - i, &cp);
        if (!k)
            return 0;
        i += k;
    }
    return 1;
}

/* A JSON string of bytes known to be valid UTF-8. */
static void
js_string(Out *o, const uint8_t *s, size_t n)
{
    /* at most 6 output bytes per input byte (\u00xx), plus the quotes */
    if (n > (PY_SSIZE_T_MAX - 2) / 6) {
        o->failed = 1;
        return;
    }
    if (o->cap - o->len < 6 * n + 2 && out_grow(o, 6 * n + 2))
        return;
    static const char hex[] = "0123456789abcdef";
    char *d = o->p + o->len;
    *d++ = '"';
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && !json_special[s[j]])
            j++;
        memcpy(d, s + i, j - i);
        d += j - i;
        if (j == n)
            break;
        uint8_t c = s[j];
        *d++ = '\\';
        switch (c) {
        case '"': *d++ = '"'; break;
        case '\\': *d++ = '\\'; break;
        case '\b': *d++ = 'b'; break;
        case '\t': *d++ = 't'; break;
        case '\n': *d++ = 'n'; break;
        case '\f': *d++ = 'f'; break;
        case '\r': *d++ = 'r'; break;
        default:
            *d++ = 'u';
            *d++ = '0';
            *d++ = '0';
            *d++ = hex[c >> 4];
            *d++ = hex[c & 15];
        }
        i = j + 1;
    }
    *d++ = '"';
    o->len = (size_t)(d - o->p);
}

/* "..." : the standard base64 alphabet with padding (base64.b64encode). */
static void
js_base64(Out *o, const uint8_t *s, size_t n)
{
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (n > (PY_SSIZE_T_MAX - 8) / 4 * 3) {
        o->failed = 1;
        return;
    }
    size_t need = (n + 2) / 3 * 4 + 2;
    if (o->cap - o->len < need && out_grow(o, need))
        return;
    char *d = o->p + o->len;
    *d++ = '"';
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
        *d++ = alphabet[v >> 18];
        *d++ = alphabet[v >> 12 & 63];
        *d++ = alphabet[v >> 6 & 63];
        *d++ = alphabet[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)s[i] << 16;
        *d++ = alphabet[v >> 18];
        *d++ = alphabet[v >> 12 & 63];
        *d++ = '=';
        *d++ = '=';
    }
    else if (n - i == 2) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8;
        *d++ = alphabet[v >> 18];
        *d++ = alphabet[v >> 12 & 63];
        *d++ = alphabet[v >> 6 & 63];
        *d++ = '=';
    }
    *d++ = '"';
    o->len = (size_t)(d - o->p);
}

/* values.bytes_to_json */
static void
js_bytes(Out *o, const uint8_t *s, size_t n)
{
    if (js_utf8_valid(s, n))
        js_string(o, s, n);
    else {
        JS_LIT(o, "{\"base64\":");
        js_base64(o, s, n);
        out_ch(o, '}');
    }
}

static inline void
js_int(Out *o, int64_t v)
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
    out_put(o, d, (size_t)(e - d));
}

/* The fast path of js_float: x is a decimal D = m / 10^k, m < 10^15, found
 * as for sexp (sexpout.h's float_decimal).  A decimal of at most 15
 * significant digits is the only one of so few digits that reads back to
 * its double (DBL_DIG), so D is also repr's shortest round-tripping digits;
 * with 1e-4 <= |x| < 1e15 repr writes it in fixed point, with ".0" when it
 * is whole.  0 when x is not such a decimal. */
static int
js_float_short(Out *o, double x)
{
    char text[48];
    int n = float_decimal(x, text, 1);
    if (n)
        out_put(o, text, (size_t)n);
    return n != 0;
}

/* values.float_to_json, as json.dumps prints it.  -1 with a Python
 * exception set on failure. */
static int
js_float(Out *o, double x)
{
    if (isnan(x)) {
        JS_LIT(o, "\"NaN\"");
        return 0;
    }
    if (isinf(x)) {
        if (x > 0)
            JS_LIT(o, "\"Infinity\"");
        else
            JS_LIT(o, "\"-Infinity\"");
        return 0;
    }
    if (js_float_short(o, x))
        return 0;
    char *s = PyOS_double_to_string(x, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (!s)
        return -1;
    out_put(o, s, strlen(s));
    PyMem_Free(s);
    return 0;
}

static inline void
js_digits(char *d, int64_t v, int n)
{
    for (int i = n - 1; i >= 0; i--, v /= 10)
        d[i] = (char)('0' + v % 10);
}

/* jsonview.iso_time, quoted: "YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ".  Every int64
 * of nanoseconds is a year 1677..2262, inside what datetime takes.  The
 * text up to the second is kept for the next call: a stream's event times
 * are close together, and formatting the date was a tenth of a JSON line's
 * time (measured with perf). */
static void
js_time(Out *o, int64_t ns)
{
    static int64_t last_secs = INT64_MIN;
    static char text[33] = "\"YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ\"";
    int64_t secs = ns / 1000000000, frac = ns % 1000000000;
    if (frac < 0) {
        frac += 1000000000;
        secs -= 1;
    }
    if (secs != last_secs) {
        time_t t = (time_t)secs;
        struct tm tm;
        if (!gmtime_r(&t, &tm)) {
            o->failed = 1;
            return;
        }
        js_digits(text + 1, tm.tm_year + 1900, 4);
        js_digits(text + 6, tm.tm_mon + 1, 2);
        js_digits(text + 9, tm.tm_mday, 2);
        js_digits(text + 12, tm.tm_hour, 2);
        js_digits(text + 15, tm.tm_min, 2);
        js_digits(text + 18, tm.tm_sec, 2);
        last_secs = secs;
    }
    js_digits(text + 21, frac, 9);
    out_put(o, text, 32);
}

#endif
