// SPDX-License-Identifier: BSD-3-Clause
/*
 * Freestanding LZ4 block decoder with an external dictionary, written for seedfw.
 *
 * Rules (from the LZ4 block format description): a sequence is a token (4 bits literal length,
 * 4 bits match length - 4), optional length bytes (255 = "more follows"), literals, a 2-byte
 * little-endian offset, optional match length bytes. The block ends after a sequence that has
 * literals only. Matches are at least 4 bytes, may overlap their own output (offset < length),
 * and may reach back past the start of the output into the dictionary, which logically
 * precedes it. The last 5 bytes of a block are always literals.
 *
 * Safety: every length is compared against the remaining input / output *before* it is used,
 * by subtraction (end - ptr), never by forming a pointer past the end, so no pointer overflow
 * either. Speed comes from copying 8/16 bytes at a time ("wild" copies that may write up to
 * 16 bytes past the sequence's end) only when the remaining output has room for that slack;
 * near the end of the output the exact, byte-precise path runs instead.
 *
 * Early-boot constraint: this file must not use .rodata (it runs in BL31 before BL31's own
 * .rodata is expanded): no lookup tables, no switch statements (jump tables); the Makefile
 * builds with -fno-jump-tables and a test checks the object has no .rodata.
 */
#include <seedfw/lz4blk.h>

#include "lz4blk_copy.h"

#ifdef LZ4BLK_SMALL
#define FAST_PATHS 0	/* compact build: no fast loop, byte copies (see lz4blk_copy.h) */
#else
#define FAST_PATHS 1
#endif

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/*
 * Read the 255-continued extension of a length. Returns 0 on success, else an error; *len is
 * increased. Limit: a length can never exceed the remaining output, so stop as soon as it
 * does (this also bounds the loop and prevents size_t overflow on 32-bit targets).
 */
LZ4BLK_INLINE int read_length(const uint8_t **ipp, const uint8_t *iend, size_t *len, size_t limit)
{
	const uint8_t *ip = *ipp;
	size_t l = *len;
	unsigned b;

	do {
		if (unlikely(ip >= iend))
			return LZ4BLK_E_TRUNCATED;
		b = *ip++;
		l += b;
		if (unlikely(l > limit))
			return LZ4BLK_E_OUTPUT_OVERFLOW;
	} while (b == 255);
	*ipp = ip;
	*len = l;
	return 0;
}

/*
 * Continue the period-8 pattern that ends at op (op[-8..-1] hold it) up to end. Bytes until
 * op is a multiple of 8, then the word at op - 8 (aligned now, too) is stored with aligned
 * 64-bit stores: one STR per 8 bytes even under -mstrict-align, where an unaligned 8-byte
 * store would be 8 STRBs (and BL31 runs with the caches off: each is a bus transaction).
 * wild: may store up to 7 bytes past end (caller has LZ4BLK_SLACK); else exact: stops at the
 * last whole word and returns op for the caller's byte tail. The caller guarantees
 * op - 8 >= start of the pattern.
 */
LZ4BLK_INLINE uint8_t *fill_period8(uint8_t *op, uint8_t *end, int wild)
{
	uint64_t v;

	while (((uintptr_t)op & 7u) != 0) {
		if (!wild && op == end)
			return op;	/* never an aligned load from an unaligned op */
		*op = op[-8];
		op++;
	}
	v = lz4blk_load64_aligned(op - 8);
	if (wild) {
		while (op < end) {
			lz4blk_store64_aligned(op, v);
			op += 8;
		}
	} else {
		while ((size_t)(end - op) >= 8) {
			lz4blk_store64_aligned(op, v);
			op += 8;
		}
	}
	return op;
}

/*
 * Copy a match of `len` bytes at distance `offset` (< len allowed), exact: no byte past
 * op + len is written. Short distances are widened to a multiple >= 8 first (see below), so
 * long runs near the end of a block (zero padding!) still go 8 bytes at a time.
 */
LZ4BLK_INLINE void copy_match_exact(uint8_t *op, size_t offset, size_t len)
{
	const uint8_t *m = op - offset;
	uint8_t *end = op + len;

	if (!FAST_PATHS) {
		while (op < end)
			*op++ = *m++;
		return;
	}
	if (offset < 8) {
		size_t dist = offset;
		uint8_t *stop;

		while (dist < 8)
			dist += offset;
		stop = op + (dist - offset);
		if (stop > end)
			stop = end;
		while (op < stop)
			*op++ = *m++;
		m = op - dist;
		if (dist == 8) {
			/* period 1, 2, 4 or 8 (zero padding!): aligned word stores */
			op = fill_period8(op, end, 0);
			m = op - 8;
		}
	}
	while ((size_t)(end - op) >= 8) {
		lz4blk_copy8(op, m);
		op += 8;
		m += 8;
	}
	while (op < end)
		*op++ = *m++;
}

/*
 * Copy a match with slack: may write up to LZ4BLK_SLACK bytes past op + len; caller checked.
 * For short offsets the pattern repeats with period `offset`, so any multiple of it is also a
 * valid distance: byte-copy until a multiple >= 8 is available, then copy 8 bytes at a time.
 */
LZ4BLK_INLINE void copy_match_wild(uint8_t *op, size_t offset, size_t len)
{
	const uint8_t *m = op - offset;
	uint8_t *end = op + len;

	if (likely(offset >= 16)) {
		lz4blk_copy16(op, m);
		if (len > 16) {
			op += 16;
			m += 16;
			do {
				lz4blk_copy16(op, m);
				op += 16;
				m += 16;
			} while (op < end);
		}
		return;
	}
	if (offset >= 8) {
		do {
			lz4blk_copy8(op, m);
			op += 8;
			m += 8;
		} while (op < end);
		return;
	}
	{
		size_t dist = offset;
		while (dist < 8)
			dist += offset;
		/* bytes [op - offset, op) are the pattern; extend it so that op - dist >= m */
		uint8_t *stop = op + (dist - offset);
		while (op < stop)
			*op++ = *m++;
		m = op - dist;
		if (dist == 8) {
			/* period 1, 2 or 4: aligned word stores (run-length fills, mostly zeros) */
			fill_period8(op, end, 1);
			return;
		}
		while (op < end) {
			lz4blk_copy8(op, m);
			op += 8;
			m += 8;
		}
	}
}

/*
 * A match that starts `back` bytes before dst, i.e. in the dictionary: the dictionary's tail,
 * then (if longer) continued from the start of dst, possibly overlapping its own output.
 * Returns the new op, or NULL when the offset reaches before the dictionary.
 */
static uint8_t *copy_dict_match(uint8_t *op, uint8_t *dst, size_t back, size_t len,
				const uint8_t *dict_end, size_t dict_len)
{
	const uint8_t *m;

	if (unlikely(back > dict_len))
		return (uint8_t *)0;
	m = dict_end - back;
	if (len <= back) {
		lz4blk_copy_exact(op, m, len);
		return op + len;
	}
	lz4blk_copy_exact(op, m, back);
	op += back;
	len -= back;
	m = dst;
	if (len <= (size_t)(op - dst)) {
		lz4blk_copy_exact(op, m, len);
		return op + len;
	}
	while (len--)
		*op++ = *m++;
	return op;
}

/*
 * Fast loop margins: while at least FAST_IN input bytes and FAST_OUT output bytes remain at
 * the start of a sequence, short literal runs (< 15) and short matches (< 19) are copied with
 * fixed-size blind copies and no further bounds checks. Long runs are checked individually.
 */
#define FAST_IN  32
#define FAST_OUT 64

static long decode(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_cap,
		   const uint8_t *dict, size_t dict_len);

long lz4blk_decompress_block(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_cap,
			     const uint8_t *dict, size_t dict_len)
{
	/* NULL buffers: no pointer arithmetic on them at all (even + 0 is undefined) */
	if (src == (const uint8_t *)0 || src_len == 0)
		return LZ4BLK_E_TRUNCATED;
	if (dst == (uint8_t *)0)
		return (src_len == 1 && src[0] == 0) ? 0 : LZ4BLK_E_OUTPUT_OVERFLOW;
	if (dict == (const uint8_t *)0) {
		dict = dst;	/* never read: dict_len 0 rejects every reach before dst */
		dict_len = 0;
	}
	return decode(src, src_len, dst, dst_cap, dict, dict_len);
}

static long decode(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_cap,
		   const uint8_t *dict, size_t dict_len)
{
	const uint8_t *ip = src;
	const uint8_t *const iend = src + src_len;
	uint8_t *op = dst;
	uint8_t *const oend = dst + dst_cap;
	const uint8_t *const dict_end = dict + dict_len;
	unsigned token;
	size_t len, offset;

	/* the fast loop's limits, as pointers inside the buffers (or the loop never runs) */
	const int fast_ok = FAST_PATHS && src_len >= FAST_IN && dst_cap >= FAST_OUT;
	const uint8_t *const ilimit = fast_ok ? iend - FAST_IN : src;
	uint8_t *const olimit = fast_ok ? oend - FAST_OUT : dst;

	if (!fast_ok)
		goto careful;

	/* ---------------- fast loop ---------------- */
fast:
	while (likely(ip <= ilimit && op <= olimit)) {
		token = *ip++;
		len = token >> 4;
		if (likely(len != 15)) {
			lz4blk_copy16(op, ip); /* iend - ip >= 31, oend - op >= 64 */
		} else {
			int err = read_length(&ip, iend, &len, (size_t)(oend - op));
			if (unlikely(err))
				return err;
			/* room for the run plus wild slack, and the offset after it? else: careful path */
			if (unlikely(len > (size_t)(iend - ip) || (size_t)(iend - ip) - len < 16 ||
				     (size_t)(oend - op) - len < FAST_OUT))
				goto literals_checked_length;
			lz4blk_copy_wild(op, ip, len);
		}
		op += len;
		ip += len;

		/* >= 16 input bytes remain (offset + length bytes fit); >= 50 output bytes remain */
		offset = (size_t)ip[0] | ((size_t)ip[1] << 8);
		ip += 2;
		len = token & 15;
		if (unlikely(offset > (size_t)(op - dst)))
			goto match_checked_offset;
		if (likely(len != 15)) {
			const uint8_t *m = op - offset;
			/* len + 4 <= 18 and >= 50 bytes of room: no checks needed */
			if (likely(offset >= 8)) {
				lz4blk_copy8(op, m);
				lz4blk_copy8(op + 8, m + 8);
				lz4blk_copy8(op + 16, m + 16);
				op += len + LZ4BLK_MIN_MATCH;
				continue;
			}
			if (unlikely(offset == 0))
				return LZ4BLK_E_OFFSET;
			len += LZ4BLK_MIN_MATCH;
			copy_match_wild(op, offset, len);
			op += len;
			continue;
		}
		/* long match: stay in the fast loop when it ends well before the output end */
		{
			int err = read_length(&ip, iend, &len, (size_t)(oend - op));
			if (unlikely(err))
				return err;
			len += LZ4BLK_MIN_MATCH;
			if (unlikely(offset == 0))
				return LZ4BLK_E_OFFSET;
			if (unlikely(len > (size_t)(oend - op) || (size_t)(oend - op) - len < FAST_OUT))
				goto match_checked_length;
			copy_match_wild(op, offset, len);
			op += len;
		}
	}

	/* ---------------- careful loop (near the ends) ---------------- */
careful:
	for (;;) {
		if (unlikely(ip >= iend))
			return LZ4BLK_E_TRUNCATED;
		token = *ip++;
		len = token >> 4;

		if (len == 15) {
			int err = read_length(&ip, iend, &len, (size_t)(oend - op));
			if (unlikely(err))
				return err;
		}
literals_checked_length:
		if (unlikely(len > (size_t)(iend - ip)))
			return LZ4BLK_E_TRUNCATED;
		if (unlikely(len > (size_t)(oend - op)))
			return LZ4BLK_E_OUTPUT_OVERFLOW;
		if ((size_t)(iend - ip) - len >= 16 && (size_t)(oend - op) - len >= LZ4BLK_SLACK)
			lz4blk_copy_wild(op, ip, len);
		else
			lz4blk_copy_exact(op, ip, len);
		op += len;
		ip += len;
		if (ip == iend)
			break; /* the last sequence: literals only */

		if (unlikely((size_t)(iend - ip) < 2))
			return LZ4BLK_E_TRUNCATED;
		offset = (size_t)ip[0] | ((size_t)ip[1] << 8);
		ip += 2;
		len = token & 15;
match_checked_offset:
		if (unlikely(len == 15)) {
			int err = read_length(&ip, iend, &len, (size_t)(oend - op));
			if (unlikely(err))
				return err;
		}
		len += LZ4BLK_MIN_MATCH;
match_checked_length:

		if (unlikely(offset == 0))
			return LZ4BLK_E_OFFSET;
		if (unlikely(len > (size_t)(oend - op)))
			return LZ4BLK_E_OUTPUT_OVERFLOW;
		if (unlikely((size_t)(oend - op) - len < LZ4BLK_LAST_LITERALS))
			return LZ4BLK_E_LAST_LITERALS;

		if (likely(offset <= (size_t)(op - dst))) {
			if (FAST_PATHS && likely((size_t)(oend - op) - len >= LZ4BLK_SLACK))
				copy_match_wild(op, offset, len);
			else
				copy_match_exact(op, offset, len);
			op += len;
		} else {
			op = copy_dict_match(op, dst, offset - (size_t)(op - dst), len, dict_end,
					     dict_len);
			if (unlikely(op == (uint8_t *)0))
				return LZ4BLK_E_OFFSET;
		}
		/* back to the fast loop when there is room again */
		if (fast_ok && ip <= ilimit && op <= olimit)
			goto fast;
	}
	return (long)(op - dst);
}
