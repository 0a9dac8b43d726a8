// SPDX-License-Identifier: BSD-3-Clause
/*
 * Host harness for the freestanding decoder: the tests drive the very same C code that goes
 * into firmware through this tool (built plain, and with ASan/UBSan).
 *
 *   lz4blk_tool container IN OUT [DICT]        expand a container file
 *   lz4blk_tool block IN OUT CAPACITY [DICT]   expand one raw LZ4 block
 *   lz4blk_tool boot DICT|- C1 OUT1 [C2 OUT2 ...]
 *                                              expand several containers through the boot table
 *
 * Prints "ok <bytes>" or "error <code> <name>" on stdout; exit 0 on success, 2 on a decode
 * error, 1 on usage/IO problems. Inputs are copied into exactly-sized heap buffers so ASan
 * catches any read one byte past the end.
 */
#include <seedfw/lz4blk.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *err_name(long e)
{
	switch (e) {
	case LZ4BLK_E_TRUNCATED: return "truncated";
	case LZ4BLK_E_OFFSET: return "offset";
	case LZ4BLK_E_OUTPUT_OVERFLOW: return "output_overflow";
	case LZ4BLK_E_LAST_LITERALS: return "last_literals";
	case LZ4BLK_E_BAD_HEADER: return "bad_header";
	case LZ4BLK_E_BAD_TABLE: return "bad_table";
	case LZ4BLK_E_HEADER_CRC: return "header_crc";
	case LZ4BLK_E_DICT_MISMATCH: return "dict_mismatch";
	case LZ4BLK_E_BLOCK_SIZE: return "block_size";
	case LZ4BLK_E_CHECKSUM: return "checksum";
	case LZ4BLK_E_DEST_TOO_SMALL: return "dest_too_small";
	case LZ4BLK_E_CONTAINER_TRUNCATED: return "container_truncated";
	case LZ4BLK_E_OVERLAP: return "overlap";
	default: return "unknown";
	}
}

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf;
	long n;

	if (!f) {
		perror(path);
		exit(1);
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(n ? (size_t)n : 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		perror(path);
		exit(1);
	}
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void spill(const char *path, const unsigned char *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

static int report(long n)
{
	if (n < 0) {
		printf("error %ld %s\n", n, err_name(n));
		return 2;
	}
	printf("ok %ld\n", n);
	return 0;
}

/* Write what was decoded (if anything), release the buffers, report the result code. */
static int finish(const char *path, unsigned char *out, long n, unsigned char *in,
		  unsigned char *dict)
{
	if (n >= 0)
		spill(path, out, (size_t)n);
	free(in);
	free(dict);
	free(out);
	return report(n);
}

int main(int argc, char **argv)
{
	size_t in_len = 0, dict_len = 0;
	unsigned char *in, *dict = NULL, *out;
	long n;

	if (argc >= 4 && !strcmp(argv[1], "container")) {
		struct lz4blk_info info;
		size_t cap;

		in = slurp(argv[2], &in_len);
		if (argc > 4)
			dict = slurp(argv[4], &dict_len);
		/* size the output from the header when it parses, else 1 byte */
		cap = lz4blk_parse(in, in_len, &info) == 0 ? info.original_size : 0;
		out = malloc(cap ? cap : 1);
		n = lz4blk_decompress(in, in_len, out, cap, dict, dict_len);
		return finish(argv[3], out, n, in, dict);
	}
	if (argc >= 5 && !strcmp(argv[1], "block")) {
		size_t cap = strtoul(argv[4], NULL, 0);

		in = slurp(argv[2], &in_len);
		if (argc > 5)
			dict = slurp(argv[5], &dict_len);
		out = malloc(cap ? cap : 1);
		n = lz4blk_decompress_block(in, in_len, out, cap, dict, dict_len);
		return finish(argv[3], out, n, in, dict);
	}
	if (argc >= 5 && (argc - 3) % 2 == 0 && !strcmp(argv[1], "boot")) {
		size_t count = (size_t)(argc - 3) / 2, failed = 0;
		struct lz4blk_boot_entry *table = calloc(count, sizeof(*table));
		int rc;

		if (strcmp(argv[2], "-"))
			dict = slurp(argv[2], &dict_len);
		for (size_t i = 0; i < count; i++) {
			struct lz4blk_info info;
			unsigned char *c = slurp(argv[3 + 2 * i], &in_len);
			size_t cap = lz4blk_parse(c, in_len, &info) == 0 ? info.original_size : 0;

			table[i].container = (uintptr_t)c;
			table[i].container_len = in_len;
			table[i].dest = (uintptr_t)malloc(cap ? cap : 1);
			table[i].capacity = cap;
		}
		rc = lz4blk_boot_expand(table, count, dict, dict_len, &failed);
		if (rc < 0)
			printf("entry %zu: ", failed);
		for (size_t i = 0; i < count; i++) {
			if (rc == 0)
				spill(argv[4 + 2 * i], (unsigned char *)(uintptr_t)table[i].dest,
				      (size_t)table[i].capacity);
			free((void *)(uintptr_t)table[i].container);
			free((void *)(uintptr_t)table[i].dest);
		}
		free(table);
		free(dict);
		return report(rc < 0 ? rc : (long)count);
	}
	fprintf(stderr, "usage: %s container IN OUT [DICT] | block IN OUT CAPACITY [DICT] | "
		"boot DICT|- C1 OUT1 [C2 OUT2 ...]\n", argv[0]);
	return 1;
}
