/*
 * Boot-package verifier for the payload (and any boot stage): walks a seedfw package
 * (seedfw/pkg.h) in memory, checks the header crc, every entry's sha256 and crc32, parses the
 * DVFS table (seedfw/dvfs.h) and prints one line per finding through a putc-like callback:
 *
 *   pkg: 4 entries, 12608 bytes, header crc ok
 *   firmware payload sha256 ok
 *   dvfs dvfs sha256 ok
 *   dvfs: 2 domains, 7 opps, profile=balanced, crc ok
 *   dvfs: 1 hints
 *   fdt opp sha256 ok
 *   model yolov8s sha256 ok
 *   pkg: ok                                  (or "pkg: FAILED, 1 errors")
 *
 * tools/seedfw/images/package.py: expected_boot_lines() computes the same lines on the host.
 * Freestanding: no libc; all reads are byte-wise (any alignment, any endianness of the CPU).
 */
#ifndef SEEDFW_PKG_VERIFY_H
#define SEEDFW_PKG_VERIFY_H

#include <stdint.h>

typedef void (*seedfw_putc_fn)(int c);

struct seedfw_pkg_result {
	uint32_t entries;          /* entries in the table (0 if the header is bad) */
	uint32_t entries_ok;       /* sha256 and crc32 both match */
	uint32_t dvfs_domains;
	uint32_t dvfs_opps;
	uint32_t dvfs_profiles;
	uint32_t dvfs_hints;
	int      dvfs_crc_ok;      /* 1 ok, 0 bad, -1 no DVFS entry */
	char     dvfs_profile[17]; /* default profile name, NUL-terminated */
	uint32_t errors;           /* == return value */
};

/*
 * Verify the package at `pkg`, which may span at most `max_size` bytes (the region the build
 * reserved for it). `out` may be NULL (no printing); `res` may be NULL.
 * Returns 0 when everything checks, otherwise the number of problems found (> 0).
 */
uint32_t seedfw_pkg_verify(const void *pkg, uint32_t max_size, struct seedfw_pkg_result *res,
                           seedfw_putc_fn out);

#endif
