// SPDX-License-Identifier: BSD-3-Clause
/*
 * libFuzzer target for the boot-package verifier the payload links (../pkg_verify.c).
 *
 * The input is a package (seed the corpus with real ones from images/package.py). It is copied
 * into an exactly-sized heap buffer and verified with max_size == its length, so ASan sees any
 * read past the region the build reserved. Why the fix-ups: a random mutation almost never
 * keeps the header crc32 and the entries' sha256/crc32 right, and the verifier stops at the
 * first of them; for every input of odd length the harness recomputes each in-bounds entry's
 * hashes and then the header crc first, so mutated offsets, sizes and DVFS tables reach the
 * code behind the checks. Even-length inputs go in untouched (the checks themselves get fuzzed).
 *
 * SEEDFW_FUZZ_PLANTED_OOB (negative control only, never in a real build): before verifying,
 * read the last byte of the entry table without checking it against the input length — the
 * bound check `table_end > total` that pkg_verify.c has, removed. The fuzzer must report a
 * heap-buffer-overflow within seconds, which shows the harness and sanitizers can see a bug.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "crc32.h"
#include "pkg_verify.h"
#include "seedfw/pkg.h"
#include "sha256.h"

#define H(f) offsetof(struct seedfw_pkg_header, f)
#define E(f) offsetof(struct seedfw_pkg_entry, f)

static uint32_t rd16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t rd32(const uint8_t *p) { return rd16(p) | rd16(p + 2) << 16; }

static void wr32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static volatile unsigned sink;
static void putc_sink(int c) { sink += (unsigned)c; }   /* exercises the printing paths */

static void fix_up(uint8_t *p, size_t size)
{
	const size_t hsize = sizeof(struct seedfw_pkg_header);
	const size_t esize = sizeof(struct seedfw_pkg_entry);

	if (size < hsize)
		return;
	size_t count = rd16(p + H(entry_count));
	size_t table_end = hsize + count * esize;
	if (table_end > size)
		return;
	for (size_t i = 0; i < count; i++) {
		uint8_t *e = p + hsize + i * esize;
		size_t off = rd32(e + E(offset)), len = rd32(e + E(size));
		if (off < table_end || off > size || len > size - off)
			continue;
		seedfw_sha256(p + off, len, e + E(sha256));
		wr32(e + E(crc32), seedfw_crc32(0, p + off, len));
	}
	static const uint8_t zero[4];
	uint32_t crc = seedfw_crc32(0, p, H(header_crc));
	crc = seedfw_crc32(crc, zero, 4);
	crc = seedfw_crc32(crc, p + H(header_crc) + 4, table_end - H(header_crc) - 4);
	wr32(p + H(header_crc), crc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seedfw_pkg_result res;
	uint8_t *buf = malloc(size ? size : 1);

	memcpy(buf, data, size);
	if (size & 1)
		fix_up(buf, size);
#ifdef SEEDFW_FUZZ_PLANTED_OOB
	if (size >= sizeof(struct seedfw_pkg_header) && rd32(buf) == SEEDFW_PKG_MAGIC) {
		size_t end = sizeof(struct seedfw_pkg_header) +
			     rd16(buf + H(entry_count)) * sizeof(struct seedfw_pkg_entry);
		sink += buf[end - 1];   /* planted: no check of end against size */
	}
#endif
	(void)seedfw_pkg_verify(buf, (uint32_t)size, &res, putc_sink);
	free(buf);
	return 0;
}
