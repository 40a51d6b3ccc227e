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

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RIPPLE_CRC32C_HW 1
__attribute__((target("sse4.2"))) static uint32_t
crc32c_update_sse42(uint32_t crc, const uint8_t *p, size_t n)
{
    uint64_t c = crc;
    while (n && ((uintptr_t)p & 7)) {
        c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
        n--;
    }
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = __builtin_ia32_crc32di(c, v);
        p += 8;
        n -= 8;
    }
    while (n--)
        c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
    return (uint32_t)c;
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
