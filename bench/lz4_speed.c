// SPDX-License-Identifier: BSD-3-Clause
/*
 * Decompression speed: seedfw's lz4blk_decompress_block vs liblz4's
 * LZ4_decompress_safe_usingDict on the very same blocks, in the same process.
 *
 *   lz4_speed CONTAINER [DICT] [SECONDS]
 *
 * The container (written by seedfw.compress) supplies the blocks; stored-raw blocks are
 * skipped (neither decoder sees them). Passes over all blocks alternate between the two
 * decoders for SECONDS; the fastest pass of each counts (robust against other
 * load on the machine). Both outputs are compared with the original
 * before timing. Prints one line:
 *   "<MB/s ours> <MB/s liblz4> ratio <ours/liblz4>"
 */
#define _POSIX_C_SOURCE 199309L
#include <seedfw/lz4blk.h>

#include <lz4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct blk { const unsigned char *src; int len; int raw; size_t off; };

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf;
	long n;

	if (!f) { perror(path); exit(1); }
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (fread(buf, 1, (size_t)n, f) != (size_t)n) { perror(path); exit(1); }
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static struct blk *blocks;
static int nblocks;
static unsigned char *out, *dict;
static size_t dict_len;

static int run_ours(void)
{
	int bad = 0;
	for (int i = 0; i < nblocks; i++)
		bad |= lz4blk_decompress_block(blocks[i].src, (size_t)blocks[i].len, out + blocks[i].off,
					       (size_t)blocks[i].raw, dict, dict_len) != blocks[i].raw;
	return bad;
}

static int run_liblz4(void)
{
	int bad = 0;
	for (int i = 0; i < nblocks; i++)
		bad |= LZ4_decompress_safe_usingDict((const char *)blocks[i].src, (char *)out + blocks[i].off,
						     blocks[i].len, blocks[i].raw, (const char *)dict,
						     (int)dict_len) != blocks[i].raw;
	return bad;
}

/*
 * One timed pass of fn over all blocks; the fastest pass counts. Passes of the two decoders
 * alternate, so both see the same machine state (caches, clock, neighbours' load).
 */
static double one_pass(int (*fn)(void))
{
	double t0 = now(), t;

	if (fn()) { fprintf(stderr, "decode failed during timing\n"); exit(1); }
	t = now() - t0;
	return t;
}

int main(int argc, char **argv)
{
	size_t clen, total = 0;
	struct lz4blk_info info;
	unsigned char *c, *ref;
	double secs = argc > 3 ? atof(argv[3]) : 2.0, ours = 0, lib = 0;
	const unsigned char *p;

	if (argc < 2) {
		fprintf(stderr, "usage: %s CONTAINER [DICT|-] [SECONDS]\n", argv[0]);
		return 1;
	}
	c = slurp(argv[1], &clen);
	if (argc > 2 && strcmp(argv[2], "-"))
		dict = slurp(argv[2], &dict_len);
	if (lz4blk_parse(c, clen, &info) != 0) { fprintf(stderr, "bad container\n"); return 1; }
	if (info.dict_size == 0) { dict = NULL; dict_len = 0; }
	out = malloc(info.original_size + 64);
	ref = malloc(info.original_size + 64);
	if (lz4blk_decompress(c, clen, ref, info.original_size, dict, dict_len) < 0) {
		fprintf(stderr, "container does not decode (dictionary?)\n");
		return 1;
	}
	blocks = calloc(info.block_count, sizeof(*blocks));
	p = c + LZ4BLK_HEADER_SIZE + 4 * (size_t)info.block_count;
	for (uint32_t i = 0; i < info.block_count; i++) {
		const unsigned char *e = c + LZ4BLK_HEADER_SIZE + 4 * i;
		uint32_t v = e[0] | e[1] << 8 | e[2] << 16 | (uint32_t)e[3] << 24;
		uint32_t size = v & LZ4BLK_SIZE_MASK;
		uint32_t raw = info.original_size - i * info.block_size;

		if (raw > info.block_size)
			raw = info.block_size;
		if (!(v & LZ4BLK_STORED)) {
			blocks[nblocks++] = (struct blk){ p, (int)size, (int)raw, (size_t)i * info.block_size };
			total += raw;
		}
		p += size;
	}
	if (!nblocks) { fprintf(stderr, "no compressed blocks\n"); return 1; }
	/* correctness of both, against the container-level decode */
	for (int k = 0; k < 2; k++) {
		memset(out, 0, info.original_size);
		if ((k ? run_liblz4() : run_ours())) { fprintf(stderr, "decode %d failed\n", k); return 1; }
		for (int i = 0; i < nblocks; i++)
			if (memcmp(out + blocks[i].off, ref + blocks[i].off, (size_t)blocks[i].raw)) {
				fprintf(stderr, "decoder %d: block %d differs\n", k, i);
				return 1;
			}
	}
	{
		double t_ours = 1e9, t_lib = 1e9, start = now(), t;

		while (now() - start < secs) {
			t = one_pass(run_ours);
			if (t < t_ours) t_ours = t;
			t = one_pass(run_liblz4);
			if (t < t_lib) t_lib = t;
		}
		ours = (double)total / t_ours / 1e6;
		lib = (double)total / t_lib / 1e6;
	}
	printf("%.1f %.1f ratio %.3f\n", ours, lib, ours / lib);
	return 0;
}
