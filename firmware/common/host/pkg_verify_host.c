/*
 * Host harness for firmware/common (tests/test_pkg_verify_c.py): runs the same verifier the
 * payload links, on packages the Python writer made.
 *   pkg_verify_host verify FILE [MAX_SIZE]   prints the boot lines; exit 0 ok, 1 failed
 *   pkg_verify_host sha256 FILE              prints the digest (checks sha256.c against hashlib)
 *   pkg_verify_host crc32 FILE               prints the crc (checks crc32.c against zlib)
 *   pkg_verify_host bench FILE N             verifies N times silently, prints seconds per run
 */
#define _POSIX_C_SOURCE 199309L /* clock_gettime under -std=c11 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crc32.h"
#include "pkg_verify.h"
#include "sha256.h"

static void out(int c) { putchar(c); }

static unsigned char *slurp(const char *path, long *len)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		exit(2);
	}
	fseek(f, 0, SEEK_END);
	*len = ftell(f);
	fseek(f, 0, SEEK_SET);
	/* 64-byte aligned like the payload's load address; +1 so an empty file still allocates */
	unsigned char *buf = aligned_alloc(64, ((size_t)*len + 64) & ~(size_t)63);
	if (!buf || fread(buf, 1, (size_t)*len, f) != (size_t)*len)
		exit(2);
	fclose(f);
	return buf;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	long len;
	unsigned char *buf = slurp(argv[2], &len);
	if (!strcmp(argv[1], "sha256")) {
		unsigned char d[32];
		seedfw_sha256(buf, (size_t)len, d);
		for (int i = 0; i < 32; i++)
			printf("%02x", d[i]);
		printf("\n");
		free(buf);
		return 0;
	}
	if (!strcmp(argv[1], "crc32")) {
		printf("%08x\n", seedfw_crc32(0, buf, (size_t)len));
		free(buf);
		return 0;
	}
	if (!strcmp(argv[1], "bench") && argc > 3) {
		long n = strtol(argv[3], NULL, 0);
		struct timespec t0, t1;
		uint32_t bad = 0;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (long i = 0; i < n; i++)
			bad |= seedfw_pkg_verify(buf, (uint32_t)len, NULL, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		printf("%.9f %u\n", ((t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9) / n, bad);
		free(buf);
		return bad ? 1 : 0;
	}
	uint32_t max = argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 0) : (uint32_t)len;
	struct seedfw_pkg_result r;
	uint32_t errors = seedfw_pkg_verify(buf, max, &r, out);
	fprintf(stderr, "entries=%u ok=%u domains=%u opps=%u profiles=%u hints=%u crc=%d profile=%s\n",
	        r.entries, r.entries_ok, r.dvfs_domains, r.dvfs_opps, r.dvfs_profiles, r.dvfs_hints,
	        r.dvfs_crc_ok, r.dvfs_profile);
	free(buf);
	return errors ? 1 : 0;
}
