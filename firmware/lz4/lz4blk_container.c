// SPDX-License-Identifier: BSD-3-Clause
/*
 * seedfw LZ4 block container (see firmware/include/seedfw/lz4blk.h): CRC-32, header/table
 * validation, whole-container decompression and the boot-time expansion table.
 *
 * Everything here reads the container byte by byte as little-endian, so it works on any host
 * endianness and any container alignment. Like the block decoder it must not use .rodata:
 * the CRC table is built on the stack (16 entries, 64 bytes) rather than stored.
 */
#include <seedfw/lz4blk.h>

#include "lz4blk_copy.h"

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

/* Half-byte table: 16 words on the stack, two lookups per byte; no .rodata needed. */
static void crc32_table16(uint32_t t[16])
{
	for (uint32_t i = 0; i < 16; i++) {
		uint32_t c = i;
		for (int k = 0; k < 4; k++)
			c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
		t[i] = c;
	}
}

static uint32_t crc32_update(const uint32_t t[16], uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--) {
		crc ^= *p++;
		crc = (crc >> 4) ^ t[crc & 15];
		crc = (crc >> 4) ^ t[crc & 15];
	}
	return crc;
}

uint32_t lz4blk_crc32(uint32_t crc, const void *data, size_t len)
{
	uint32_t t[16];

	crc32_table16(t);
	return ~crc32_update(t, ~crc, (const uint8_t *)data, len);
}

static int is_pow2_in_range(uint32_t v)
{
	if (v == 0 || (v & (v - 1)) != 0)
		return 0;
	return v >= (1u << LZ4BLK_MIN_BLOCK_SHIFT) && v <= (1u << LZ4BLK_MAX_BLOCK_SHIFT);
}

static unsigned block_shift(uint32_t pow2)
{
	unsigned s = 0;

	while ((1u << s) < pow2)
		s++;
	return s;
}

static uint32_t block_raw_size(const struct lz4blk_info *info, uint32_t i)
{
	uint32_t start = i * info->block_size;
	uint32_t left = info->original_size - start;

	return left < info->block_size ? left : info->block_size;
}

int lz4blk_parse(const void *container, size_t len, struct lz4blk_info *out)
{
	const uint8_t *p = (const uint8_t *)container;
	struct lz4blk_info info;
	uint64_t want_blocks, sum = 0;
	size_t table_end;
	uint32_t t[16], crc;

	if (len < LZ4BLK_HEADER_SIZE)
		return LZ4BLK_E_CONTAINER_TRUNCATED;
	if (rd32(p) != LZ4BLK_MAGIC || rd16(p + 4) != LZ4BLK_VERSION ||
	    rd16(p + 6) != LZ4BLK_HEADER_SIZE)
		return LZ4BLK_E_BAD_HEADER;
	info.block_size = rd32(p + 8);
	info.block_count = rd32(p + 12);
	info.original_size = rd32(p + 16);
	info.dict_id = rd32(p + 20);
	info.dict_size = rd32(p + 24);
	info.crc32 = rd32(p + 28);
	info.payload_size = rd32(p + 32);
	if (!is_pow2_in_range(info.block_size))
		return LZ4BLK_E_BAD_HEADER;
	/* block_size is a power of two: shift instead of divide (no libgcc division on Cortex-M) */
	want_blocks = info.original_size >> block_shift(info.block_size);
	want_blocks += (info.original_size & (info.block_size - 1)) != 0;
	if (info.block_count != want_blocks)
		return LZ4BLK_E_BAD_HEADER;
	if (info.dict_size == 0 && info.dict_id != 0)
		return LZ4BLK_E_BAD_HEADER;

	/* block_count <= 2^32 / 2^10, so the table size fits in 32 bits */
	if ((len - LZ4BLK_HEADER_SIZE) / LZ4BLK_TABLE_ENTRY_SIZE < info.block_count)
		return LZ4BLK_E_CONTAINER_TRUNCATED;
	table_end = LZ4BLK_HEADER_SIZE + (size_t)info.block_count * LZ4BLK_TABLE_ENTRY_SIZE;

	crc32_table16(t);
	crc = crc32_update(t, 0xFFFFFFFFu, p, 36);
	crc = ~crc32_update(t, crc, p + LZ4BLK_HEADER_SIZE, table_end - LZ4BLK_HEADER_SIZE);
	if (crc != rd32(p + 36))
		return LZ4BLK_E_HEADER_CRC;

	for (uint32_t i = 0; i < info.block_count; i++) {
		uint32_t e = rd32(p + LZ4BLK_HEADER_SIZE + (size_t)i * LZ4BLK_TABLE_ENTRY_SIZE);
		uint32_t size = e & LZ4BLK_SIZE_MASK;
		uint32_t raw = block_raw_size(&info, i);

		if (e & LZ4BLK_STORED) {
			if (size != raw)
				return LZ4BLK_E_BAD_TABLE;
		} else if (size == 0 || size >= raw) {
			return LZ4BLK_E_BAD_TABLE;
		}
		sum += size;
	}
	if (sum != info.payload_size)
		return LZ4BLK_E_BAD_TABLE;
	if (len - table_end < info.payload_size)
		return LZ4BLK_E_CONTAINER_TRUNCATED;
	info.total_size = (uint32_t)(table_end + info.payload_size);
	if (out)
		*out = info;
	return LZ4BLK_OK;
}

/* Do [a, a + alen) and [b, b + blen) share a byte? Compared as integers: no pointer UB. */
static int overlaps(const void *a, size_t alen, const void *b, size_t blen)
{
	uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;

	if (alen == 0 || blen == 0)
		return 0;
	return x < y + blen && y < x + alen;
}

long lz4blk_decompress(const void *container, size_t len, void *dst, size_t dst_cap,
		       const void *dict, size_t dict_len)
{
	const uint8_t *p = (const uint8_t *)container;
	uint8_t *out = (uint8_t *)dst;
	struct lz4blk_info info;
	const uint8_t *blk;
	int err = lz4blk_parse(container, len, &info);

	if (err)
		return err;
	if (dst_cap < info.original_size)
		return LZ4BLK_E_DEST_TOO_SMALL;
	if (info.dict_size == 0) {
		dict = (const void *)0;
		dict_len = 0;
	} else if (dict == (const void *)0 || dict_len != info.dict_size ||
		   lz4blk_crc32(0, dict, dict_len) != info.dict_id) {
		return LZ4BLK_E_DICT_MISMATCH;
	}
	if (overlaps(dst, info.original_size, container, info.total_size) ||
	    overlaps(dst, dst_cap, dict, dict_len))
		return LZ4BLK_E_OVERLAP;

	blk = p + LZ4BLK_HEADER_SIZE + (size_t)info.block_count * LZ4BLK_TABLE_ENTRY_SIZE;
	for (uint32_t i = 0; i < info.block_count; i++) {
		uint32_t e = rd32(p + LZ4BLK_HEADER_SIZE + (size_t)i * LZ4BLK_TABLE_ENTRY_SIZE);
		uint32_t size = e & LZ4BLK_SIZE_MASK;
		uint32_t raw = block_raw_size(&info, i);
		uint8_t *bdst = out + (size_t)i * info.block_size;

		if (e & LZ4BLK_STORED) {
			lz4blk_copy_exact(bdst, blk, size);
		} else {
			/*
			 * Capacity is exactly this block's size: the end-of-block rule (last 5 bytes are
			 * literals) is relative to it, and a block must fill it exactly.
			 */
			long n = lz4blk_decompress_block(blk, size, bdst, raw, (const uint8_t *)dict,
							 dict_len);
			if (n < 0)
				return n;
			if ((uint32_t)n != raw)
				return LZ4BLK_E_BLOCK_SIZE;
		}
		blk += size;
	}
	if (lz4blk_crc32(0, out, info.original_size) != info.crc32)
		return LZ4BLK_E_CHECKSUM;
	return (long)info.original_size;
}

int lz4blk_boot_expand(const struct lz4blk_boot_entry *table, size_t count,
		       const void *dict, size_t dict_len, size_t *failed)
{
	for (size_t i = 0; i < count; i++) {
		const struct lz4blk_boot_entry *e = &table[i];
		long n;

		if (e->container > (uintptr_t)-1 || e->dest > (uintptr_t)-1 ||
		    e->container_len > (size_t)-1 || e->capacity > (size_t)-1) {
			n = LZ4BLK_E_BAD_TABLE;
		} else {
			n = lz4blk_decompress((const void *)(uintptr_t)e->container,
					      (size_t)e->container_len, (void *)(uintptr_t)e->dest,
					      (size_t)e->capacity, dict, dict_len);
		}
		if (n < 0) {
			if (failed)
				*failed = i;
			return (int)n;
		}
	}
	return LZ4BLK_OK;
}
