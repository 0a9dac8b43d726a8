/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Word-at-a-time copies for the freestanding LZ4 decoder (no libc memcpy).
 *
 * Why byte-wise source: an 8-byte copy is written as 8 byte loads into locals, then 8 byte
 * stores. GCC's store merging turns that into one 64-bit load and store wherever the target
 * allows unaligned access (x86-64, AArch64 without -mstrict-align), and under -mstrict-align
 * (TF-A BL31, the payload: MMU off, SCTLR.A set, unaligned accesses fault) it stays 8 LDRB +
 * 8 STRB: never an unaligned word access, and 16 instructions where a packed-struct uint64_t
 * access costs 28 (byte loads, ORR-merges, shifts, byte stores). Checked in the aarch64
 * disassembly; tests/test_lz4_c.py checks the strict object has no unaligned LDR/STR.
 * Byte accesses never violate strict aliasing either.
 *
 * Accesses the code can prove aligned (pattern fills, see lz4blk_decode.c) go through
 * lz4blk_load64_aligned/lz4blk_store64_aligned: one LDR/STR even under -mstrict-align.
 *
 * always_inline: TF-A compiles everything with -Os, where GCC would otherwise keep these
 * as out-of-line calls in the hot loop (measured: 0.68x liblz4 at -Os without it).
 */
#ifndef SEEDFW_LZ4BLK_COPY_H
#define SEEDFW_LZ4BLK_COPY_H

#include <stddef.h>
#include <stdint.h>

#define LZ4BLK_INLINE static inline __attribute__((always_inline))

/* Bytes a "wild" copy may write past the requested end; callers check the room first. */
#define LZ4BLK_SLACK 32u

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "lz4blk_copy.h: pattern words assume a little-endian target"
#endif

/* Little-endian 64-bit load from any address (merged into one load where that is allowed). */
LZ4BLK_INLINE uint64_t lz4blk_load64(const void *p)
{
	const uint8_t *b = (const uint8_t *)p;

	return (uint64_t)b[0] | ((uint64_t)b[1] << 8) | ((uint64_t)b[2] << 16) |
	       ((uint64_t)b[3] << 24) | ((uint64_t)b[4] << 32) | ((uint64_t)b[5] << 40) |
	       ((uint64_t)b[6] << 48) | ((uint64_t)b[7] << 56);
}

LZ4BLK_INLINE void lz4blk_store64(void *p, uint64_t v)
{
	uint8_t *b = (uint8_t *)p;

	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
	b[2] = (uint8_t)(v >> 16);
	b[3] = (uint8_t)(v >> 24);
	b[4] = (uint8_t)(v >> 32);
	b[5] = (uint8_t)(v >> 40);
	b[6] = (uint8_t)(v >> 48);
	b[7] = (uint8_t)(v >> 56);
}

/* Only for addresses that are multiples of 8 (the caller proves it). may_alias: the buffer is
 * bytes. */
typedef uint64_t __attribute__((may_alias, aligned(8))) lz4blk_word64;

LZ4BLK_INLINE uint64_t lz4blk_load64_aligned(const void *p)
{
	return *(const lz4blk_word64 *)__builtin_assume_aligned(p, 8);
}

LZ4BLK_INLINE void lz4blk_store64_aligned(void *p, uint64_t v)
{
	*(lz4blk_word64 *)__builtin_assume_aligned(p, 8) = v;
}

/* All 8 loads before the first store: correct when d - s >= 8 or d < s. */
LZ4BLK_INLINE void lz4blk_copy8(void *d, const void *s)
{
	const uint8_t *sb = (const uint8_t *)s;
	uint8_t *db = (uint8_t *)d;
	uint8_t b0 = sb[0], b1 = sb[1], b2 = sb[2], b3 = sb[3];
	uint8_t b4 = sb[4], b5 = sb[5], b6 = sb[6], b7 = sb[7];

	db[0] = b0; db[1] = b1; db[2] = b2; db[3] = b3;
	db[4] = b4; db[5] = b5; db[6] = b6; db[7] = b7;
}

/* All 16 loads before the first store: correct when d - s >= 16 or d < s. */
LZ4BLK_INLINE void lz4blk_copy16(void *d, const void *s)
{
	const uint8_t *sb = (const uint8_t *)s;
	uint8_t *db = (uint8_t *)d;
	uint8_t b0 = sb[0], b1 = sb[1], b2 = sb[2], b3 = sb[3];
	uint8_t b4 = sb[4], b5 = sb[5], b6 = sb[6], b7 = sb[7];
	uint8_t b8 = sb[8], b9 = sb[9], b10 = sb[10], b11 = sb[11];
	uint8_t b12 = sb[12], b13 = sb[13], b14 = sb[14], b15 = sb[15];

	db[0] = b0; db[1] = b1; db[2] = b2; db[3] = b3;
	db[4] = b4; db[5] = b5; db[6] = b6; db[7] = b7;
	db[8] = b8; db[9] = b9; db[10] = b10; db[11] = b11;
	db[12] = b12; db[13] = b13; db[14] = b14; db[15] = b15;
}

#ifdef LZ4BLK_SMALL
/*
 * Size over speed: plain byte loops (kconfig LZ4_DECODER_SMALL; the trade-off is measured in
 * kconfig/Kconfig.compress).
 */
LZ4BLK_INLINE void lz4blk_copy_wild(uint8_t *d, const uint8_t *s, size_t len)
{
	while (len--)
		*d++ = *s++;
}

LZ4BLK_INLINE void lz4blk_copy_exact(uint8_t *d, const uint8_t *s, size_t len)
{
	while (len--)
		*d++ = *s++;
}
#else
/* Copy len bytes in 16-byte steps; may read and write up to 15 bytes past the end. */
LZ4BLK_INLINE void lz4blk_copy_wild(uint8_t *d, const uint8_t *s, size_t len)
{
	uint8_t *end = d + len;

	do {
		lz4blk_copy16(d, s);
		d += 16;
		s += 16;
	} while (d < end);
}

/* Copy exactly len bytes (non-overlapping or d < s), 8 bytes at a time, then the tail. */
LZ4BLK_INLINE void lz4blk_copy_exact(uint8_t *d, const uint8_t *s, size_t len)
{
	while (len >= 8) {
		lz4blk_copy8(d, s);
		d += 8;
		s += 8;
		len -= 8;
	}
	while (len--)
		*d++ = *s++;
}

#endif /* LZ4BLK_SMALL */

#endif /* SEEDFW_LZ4BLK_COPY_H */
