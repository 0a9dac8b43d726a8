/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Word-at-a-time copies for the freestanding LZ4 decoder (no libc memcpy).
 *
 * Unaligned access goes through a packed, may_alias struct: the compiler emits a single
 * unaligned load/store where the target allows it (AArch64, x86, ARMv7-M for 32-bit words)
 * and byte accesses where it does not, and never a call to memcpy. may_alias keeps the
 * accesses legal under strict aliasing.
 */
#ifndef SEEDFW_LZ4BLK_COPY_H
#define SEEDFW_LZ4BLK_COPY_H

#include <stddef.h>
#include <stdint.h>

/* Bytes a "wild" copy may write past the requested end; callers check the room first. */
#define LZ4BLK_SLACK 32u

struct lz4blk_una64 { uint64_t v; } __attribute__((packed, may_alias));
struct lz4blk_una32 { uint32_t v; } __attribute__((packed, may_alias));

static inline uint64_t lz4blk_load64(const void *p)
{
	return ((const struct lz4blk_una64 *)p)->v;
}

static inline void lz4blk_store64(void *p, uint64_t v)
{
	((struct lz4blk_una64 *)p)->v = v;
}

static inline uint32_t lz4blk_load32(const void *p)
{
	return ((const struct lz4blk_una32 *)p)->v;
}

static inline void lz4blk_copy8(void *d, const void *s)
{
	lz4blk_store64(d, lz4blk_load64(s));
}

/* Both words are loaded before either is stored: correct when d - s >= 16 or d < s. */
static inline void lz4blk_copy16(void *d, const void *s)
{
	uint64_t a = lz4blk_load64(s);
	uint64_t b = lz4blk_load64((const uint8_t *)s + 8);

	lz4blk_store64(d, a);
	lz4blk_store64((uint8_t *)d + 8, b);
}

#ifdef LZ4BLK_SMALL
/*
 * Size over speed: plain byte loops. For code that runs once on a few KiB (TF-A BL31's early
 * .rodata hook): with -mstrict-align every unaligned word access above expands into 8 byte
 * accesses inline, and the fast paths cost ~4 KiB of code for no benefit there.
 */
static inline void lz4blk_copy_wild(uint8_t *d, const uint8_t *s, size_t len)
{
	while (len--)
		*d++ = *s++;
}

static inline void lz4blk_copy_exact(uint8_t *d, const uint8_t *s, size_t len)
{
	while (len--)
		*d++ = *s++;
}
#else
/* Copy len bytes in 16-byte steps; may read and write up to 15 bytes past the end. */
static inline void lz4blk_copy_wild(uint8_t *d, const uint8_t *s, size_t len)
{
	uint8_t *end = d + len;

	do {
		lz4blk_copy16(d, s);
		d += 16;
		s += 16;
	} while (d < end);
}

/* Copy exactly len bytes (non-overlapping or d < s), 8 bytes at a time, then the tail. */
static inline void lz4blk_copy_exact(uint8_t *d, const uint8_t *s, size_t len)
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
