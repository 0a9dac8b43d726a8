// SPDX-License-Identifier: BSD-3-Clause
/*
 * libFuzzer target for the raw block decoder. The first byte picks a dictionary length
 * (0..255 bytes taken from the input's tail) and the second an output capacity, so the fuzzer
 * explores dictionary reach-back and tight outputs; input, dictionary and output are separate,
 * exactly-sized heap buffers so ASan sees any stray access.
 */
#include <seedfw/lz4blk.h>

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t dict_len, cap;
	uint8_t *src, *dict, *dst;

	if (size < 2)
		return 0;
	dict_len = data[0];
	cap = (size_t)data[1] * 64;
	data += 2;
	size -= 2;
	if (dict_len > size)
		dict_len = size;
	dict = malloc(dict_len ? dict_len : 1);
	memcpy(dict, data + size - dict_len, dict_len);
	size -= dict_len;
	src = malloc(size ? size : 1);
	memcpy(src, data, size);
	dst = malloc(cap ? cap : 1);
	(void)lz4blk_decompress_block(src, size, dst, cap, dict_len ? dict : NULL, dict_len);
	free(src);
	free(dict);
	free(dst);
	return 0;
}
