/* CRC-32C (Castagnoli), as the envelope uses it (reference section 1).
 *
 * Two implementations with the same result: the SSE4.2 `crc32` instruction
 * (8 bytes per instruction), chosen at run time when the CPU has it, and a
 * slicing-by-8 table everywhere else.  Nothing is linked: this header is
 * the whole of it.
 */
#ifndef RIPPLE_CRC32C_H
#define RIPPLE_CRC32C_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CRC32C_POLY 0x82F63B78u /* 0x1EDC6F41 reflected */

static uint32_t crc32c_table[8][256];

static void
crc32c_init_table(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
        crc32c_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc32c_table[t][i] = (crc32c_table[t - 1][i] >> 8) ^ crc32c_table[0][crc32c_table[t - 1][i] & 0xFF];
}

/* `crc` is the running register (already inverted); no final xor here. */
static uint32_t
crc32c_update_table(uint32_t crc, const uint8_t *p, size_t n)
{
    while (n && ((uintptr_t)p & 7)) {
        crc = (crc >> 8) ^ crc32c_table[0][(crc ^ *p++) & 0xFF];
        n--;
    }
    while (n >= 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + 4, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        lo = __builtin_bswap32(lo);
        hi = __builtin_bswap32(hi);
#endif
        lo ^= crc;
        crc = crc32c_table[7][lo & 0xFF] ^ crc32c_table[6][(lo >> 8) & 0xFF] ^ crc32c_table[5][(lo >> 16) & 0xFF] ^
              crc32c_table[4][lo >> 24] ^ crc32c_table[3][hi & 0xFF] ^ crc32c_table[2][(hi >> 8) & 0xFF] ^
              crc32c_table[1][(hi >> 16) & 0xFF] ^ crc32c_table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = (crc >> 8) ^ crc32c_table[0][(crc ^ *p++) & 0xFF];
    return crc;
}

/* Appending n zero bytes to a message is a linear map of the CRC register:
 * 32x32 bits over GF(2), kept as four 256-entry tables so that applying it
 * costs four lookups.  The three-stream loop below uses it to join the
 * CRCs of three adjacent blocks computed side by side. */
static uint32_t
gf2_times(const uint32_t *mat, uint32_t vec)
{
    uint32_t sum = 0;
    for (; vec; vec >>= 1, mat++)
        if (vec & 1)
            sum ^= *mat;
    return sum;
}

static void
gf2_square(uint32_t *square, const uint32_t *mat)
{
    for (int n = 0; n < 32; n++)
        square[n] = gf2_times(mat, mat[n]);
}

/* The tables of "shift the register past `len` zero bytes" (len > 0). */
static void
crc32c_zeros(uint32_t zeros[4][256], size_t len)
{
    uint32_t odd[32], even[32];
    /* one zero bit */
    odd[0] = CRC32C_POLY;
    for (int n = 1; n < 32; n++)
        odd[n] = 1u << (n - 1);
    gf2_square(even, odd); /* two bits */
    gf2_square(odd, even); /* four bits */
    /* then square per bit of len (in bytes, so starting from eight bits) */
    uint32_t *op = odd;
    int have = 0; /* op holds the result so far */
    uint32_t result[32];
    do {
        gf2_square(op == odd ? even : odd, op);
        op = op == odd ? even : odd;
        if (len & 1) {
            if (!have) {
                memcpy(result, op, sizeof(result));
                have = 1;
            }
            else {
                uint32_t tmp[32];
                for (int n = 0; n < 32; n++)
                    tmp[n] = gf2_times(op, result[n]);
                memcpy(result, tmp, sizeof(result));
            }
        }
        len >>= 1;
    } while (len);
    for (uint32_t n = 0; n < 256; n++) {
        zeros[0][n] = gf2_times(result, n);
        zeros[1][n] = gf2_times(result, n << 8);
        zeros[2][n] = gf2_times(result, n << 16);
        zeros[3][n] = gf2_times(result, n << 24);
    }
}

static inline uint32_t
crc32c_shift(const uint32_t zeros[4][256], uint32_t crc)
{
    return zeros[0][crc & 0xFF] ^ zeros[1][(crc >> 8) & 0xFF] ^ zeros[2][(crc >> 16) & 0xFF] ^ zeros[3][crc >> 24];
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RIPPLE_CRC32C_HW 1

/* The instruction's latency is three cycles and it can start one every
 * cycle: one dependent chain runs at a third of its speed.  Blocks of 3 x
 * LONG (then 3 x SHORT) bytes are done as three chains at once, joined by
 * the zero-shift tables; a 4 KiB envelope takes five SHORT rounds. */
#define CRC32C_LONG 8192
#define CRC32C_SHORT 256
static uint32_t crc32c_long[4][256];
static uint32_t crc32c_short[4][256];

__attribute__((target("sse4.2"))) static uint32_t
crc32c_update_sse42(uint32_t crc, const uint8_t *p, size_t n)
{
    uint64_t c0 = crc;
    while (n && ((uintptr_t)p & 7)) {
        c0 = __builtin_ia32_crc32qi((uint32_t)c0, *p++);
        n--;
    }
    while (n >= 3 * CRC32C_LONG) {
        uint64_t c1 = 0, c2 = 0, v;
        const uint8_t *end = p + CRC32C_LONG;
        do {
            memcpy(&v, p, 8);
            c0 = __builtin_ia32_crc32di(c0, v);
            memcpy(&v, p + CRC32C_LONG, 8);
            c1 = __builtin_ia32_crc32di(c1, v);
            memcpy(&v, p + 2 * CRC32C_LONG, 8);
            c2 = __builtin_ia32_crc32di(c2, v);
            p += 8;
        } while (p < end);
        c0 = crc32c_shift(crc32c_long, (uint32_t)c0) ^ (uint32_t)c1;
        c0 = crc32c_shift(crc32c_long, (uint32_t)c0) ^ (uint32_t)c2;
        p += 2 * CRC32C_LONG;
        n -= 3 * CRC32C_LONG;
    }
    while (n >= 3 * CRC32C_SHORT) {
        uint64_t c1 = 0, c2 = 0, v;
        const uint8_t *end = p + CRC32C_SHORT;
        do {
            memcpy(&v, p, 8);
            c0 = __builtin_ia32_crc32di(c0, v);
            memcpy(&v, p + CRC32C_SHORT, 8);
            c1 = __builtin_ia32_crc32di(c1, v);
            memcpy(&v, p + 2 * CRC32C_SHORT, 8);
            c2 = __builtin_ia32_crc32di(c2, v);
            p += 8;
        } while (p < end);
        c0 = crc32c_shift(crc32c_short, (uint32_t)c0) ^ (uint32_t)c1;
        c0 = crc32c_shift(crc32c_short, (uint32_t)c0) ^ (uint32_t)c2;
        p += 2 * CRC32C_SHORT;
        n -= 3 * CRC32C_SHORT;
    }
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c0 = __builtin_ia32_crc32di(c0, v);
        p += 8;
        n -= 8;
    }
    while (n--)
        c0 = __builtin_ia32_crc32qi((uint32_t)c0, *p++);
    return (uint32_t)c0;
}
#endif

static uint32_t (*crc32c_update)(uint32_t, const uint8_t *, size_t) = crc32c_update_table;

/* Call once (module init): fills the table, picks the instruction if any. */
static const char *
crc32c_init(void)
{
    crc32c_init_table();
#ifdef RIPPLE_CRC32C_HW
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2")) {
        crc32c_zeros(crc32c_long, CRC32C_LONG);
        crc32c_zeros(crc32c_short, CRC32C_SHORT);
        crc32c_update = crc32c_update_sse42;
        return "sse4.2";
    }
#endif
    return "table";
}

static inline uint32_t
crc32c(const uint8_t *p, size_t n)
{
    return crc32c_update(0xFFFFFFFFu, p, n) ^ 0xFFFFFFFFu;
}

#endif
