/* The table's cells (render/table.py), written by the scanner: every cell
 * as render/columns.py's `escaped` shows the wire's bytes.
 *
 *  - bytes are read as codec/schema.py's `text` reads them (strict UTF-8,
 *    surrogateescape), and `escape_text` (sexp/atoms.py) applies: a
 *    printable character is kept (Python's own str.isprintable, through
 *    Py_UNICODE_ISPRINTABLE), an ASCII control is OCaml's String.escaped
 *    (`\n`, `\027`), a byte that is not UTF-8 `\ddd`, another character
 *    that does not print `\u{XXXX}`;
 *  - at most MAX_CELL characters (columns.py): the text's first MAX_CELL+1
 *    characters are escaped, and an escaped cell longer than MAX_CELL
 *    keeps MAX_CELL-1 characters and an ellipsis.
 * An escaped cell holds no tab and no newline: they separate the cells and
 * the rows of the scanner's text.
 */
#ifndef RIPPLE_TABLEOUT_H
#define RIPPLE_TABLEOUT_H

#include "jsonout.h" /* utf8_seq */
#include "sexpout.h"

#define TB_MAX_CELL 4096 /* columns.py's MAX_CELL */

static int tb_upper_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); }
static int tb_digit(char c) { return c >= '0' && c <= '9'; }

/* columns.py's _PARTIAL_ESCAPE: the start of an escape (`\228`, `\u{E4}`)
 * left at the end of b[start:p] by a cut, which would read as another
 * character (`\2` as byte 2), is cut off too: where the kept text ends. */
static size_t
tb_before_partial_escape(const char *b, size_t start, size_t p)
{
    size_t q = p, d = 0;
    while (q > start && d < 6 && tb_upper_hex(b[q - 1])) {
        q--;
        d++;
    }
    if (q - start >= 3 && b[q - 1] == '{' && b[q - 2] == 'u' && b[q - 3] == '\\')
        return q - 3; /* \u{ and up to 6 hex digits */
    size_t r = p, k = 0;
    while (r > start && k < 2 && tb_digit(b[r - 1])) {
        r--;
        k++;
    }
    if (r > start && b[r - 1] == '\\')
        return r - 1; /* \ and up to 2 digits */
    if (p - start >= 2 && b[p - 1] == 'u' && b[p - 2] == '\\')
        return p - 2; /* \u */
    return p;
}

/* One cell: `escaped(text(s))`, cut as columns.py's `cut`. */
static void
tb_cell(Out *o, const uint8_t *s, size_t n)
{
    size_t start = o->len, chars = 0, src = 0, i = 0;
    while (i < n && src <= TB_MAX_CELL) {
        uint8_t c = s[i];
        src++;
        if (c >= 0x20 && c < 0x7F) {
            out_ch(o, (char)c);
            chars++;
            i++;
            continue;
        }
        if (c < 0x80) {
            const char *e = sexp_escape[c];
            size_t k = strlen(e);
            out_put(o, e, k);
            chars += k;
            i++;
            continue;
        }
        uint32_t cp;
        size_t k = utf8_seq(s + i, n - i, &cp);
        if (!k) {
            char e[5] = {'\\', (char)('0' + c / 100), (char)('0' + c / 10 % 10), (char)('0' + c % 10), 0};
            out_put(o, e, 4);
            chars += 4;
            i++;
        }
        else if (Py_UNICODE_ISPRINTABLE(cp)) {
            out_put(o, s + i, k);
            chars++;
            i += k;
        }
        else {
            char e[16];
            int m = snprintf(e, sizeof e, "\\u{%04X}", (unsigned)cp);
            out_put(o, e, (size_t)m);
            chars += (size_t)m;
            i += k;
        }
    }
    if (chars > TB_MAX_CELL && !o->failed) {
        size_t p = start;
        for (size_t kept = 0; kept < TB_MAX_CELL - 1; kept++) {
            uint8_t c = (uint8_t)o->p[p];
            p += c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        }
        o->len = tb_before_partial_escape(o->p, start, p);
        out_put(o, "\xe2\x80\xa6", 3); /* … */
    }
}

/* A decimal integer. */
static inline void
tb_int(Out *o, long long v)
{
    char b[24];
    int m = snprintf(b, sizeof b, "%lld", v);
    out_put(o, b, (size_t)m);
}

/* render/table.py's time_of_day: HH:MM:SS.ffffff of the day, in UTC. */
static void
tb_time(Out *o, int64_t ns)
{
    int64_t secs = ns / 1000000000, frac = ns % 1000000000;
    if (frac < 0) { /* Python's divmod: the remainder takes the divisor's sign */
        frac += 1000000000;
        secs -= 1;
    }
    int64_t day = secs % 86400;
    if (day < 0)
        day += 86400;
    char b[32];
    int m = snprintf(b, sizeof b, "%02d:%02d:%02d.%06d", (int)(day / 3600), (int)(day % 3600 / 60), (int)(day % 60),
                     (int)(frac / 1000));
    out_put(o, b, (size_t)m);
}

#endif
