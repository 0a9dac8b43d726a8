// SPDX-License-Identifier: BSD-3-Clause
/*
 * libFuzzer target for the container parser + decompressor. Inputs are containers (seed the
 * corpus with real ones); the dictionary is a fixed 64-byte pattern, so containers written
 * against it (see tests) exercise the dictionary path too. Output capacity follows the header
 * but is capped at 1 MiB to keep each run fast. Every other input gets its header_crc fixed up
 * first, so mutations of the table and blocks get past the checksum and reach the decoder.
 */
#include <seedfw/lz4blk.h>

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lz4blk_info info;
	uint8_t dict[64];
	uint8_t *src, *dst;
	size_t cap = 0;

	for (size_t i = 0; i < sizeof(dict); i++)
		dict[i] = (uint8_t)(i * 7 + 1);
	src = malloc(size ? size : 1);
	memcpy(src, data, size);
	if (size >= LZ4BLK_HEADER_SIZE && (size & 1)) {
		uint32_t count = (uint32_t)src[12] | (uint32_t)src[13] << 8 |
				 (uint32_t)src[14] << 16 | (uint32_t)src[15] << 24;
		if (count <= (size - LZ4BLK_HEADER_SIZE) / 4) {
			uint32_t crc = lz4blk_crc32(0, src, 36);
			crc = lz4blk_crc32(crc, src + LZ4BLK_HEADER_SIZE, (size_t)count * 4);
			src[36] = (uint8_t)crc;
			src[37] = (uint8_t)(crc >> 8);
			src[38] = (uint8_t)(crc >> 16);
			src[39] = (uint8_t)(crc >> 24);
		}
	}
	if (lz4blk_parse(src, size, &info) == 0)
		cap = info.original_size <= (1u << 20) ? info.original_size : 0;
	dst = malloc(cap ? cap : 1);
	(void)lz4blk_decompress(src, size, dst, cap, dict, sizeof(dict));
	free(src);
	free(dst);
	return 0;
}
