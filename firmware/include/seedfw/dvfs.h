/*
 * seedfw DVFS table: the one definition of its binary layout (tools/seedfw/dvfs.py encodes it,
 * firmware/common/pkg_verify.c reads it, tests/test_dvfs.py checks the two agree).
 *
 * Layout, all little-endian, every part 8-byte aligned:
 *   struct dvfs_table_header
 *   struct dvfs_domain   [domain_count]   at domains_offset
 *   struct dvfs_opp      [opp_count]      at opps_offset     (grouped by domain, ascending Hz)
 *   struct dvfs_profile  [profile_count]  at profiles_offset
 *   struct dvfs_hint     [hint_count]     at hints_offset    (harvested from .dvfs_hint sections)
 *   char strings: none — names are fixed 16-byte, NUL-padded fields so a boot stage can print
 *   them without a string table.
 *
 * crc32 (IEEE 802.3, the zlib one) covers total_size bytes with the crc32 field read as zero.
 */
#ifndef SEEDFW_DVFS_H
#define SEEDFW_DVFS_H

#include <stdint.h>

#include "dvfs_hint.h" /* struct dvfs_hint: the embedded hints use the section record as is */

#define DVFS_MAGIC          0x53465644u /* "DVFS" as little-endian bytes */
#define DVFS_VERSION        1u
#define DVFS_NAME_LEN       16u
#define DVFS_MAX_DOMAINS    8u          /* one opp_mask word per domain in a profile */
#define DVFS_MAX_OPPS       32u         /* per domain: a profile's mask has one bit per OPP */

struct dvfs_table_header {
	uint32_t magic;            /* DVFS_MAGIC */
	uint16_t version;          /* DVFS_VERSION */
	uint16_t header_size;      /* sizeof(struct dvfs_table_header) */
	uint32_t total_size;       /* whole table, header included */
	uint32_t crc32;            /* see above */
	uint16_t domain_count;
	uint16_t opp_count;        /* all domains together */
	uint16_t profile_count;
	uint16_t hint_count;
	uint16_t default_profile;  /* index into the profiles (Kconfig POWER_PROFILE) */
	uint16_t reserved0;
	uint32_t domains_offset;   /* from the start of the header */
	uint32_t opps_offset;
	uint32_t profiles_offset;
	uint32_t hints_offset;
	uint32_t reserved1;
};

struct dvfs_domain {
	char     name[DVFS_NAME_LEN];       /* "cpu-little", "npu", ... */
	char     regulator[DVFS_NAME_LEN];  /* supply name, e.g. "vdd_cpu_lit_s0" */
	uint32_t regulator_min_uv;
	uint32_t regulator_max_uv;
	uint32_t clock_latency_ns;          /* 0 = not specified */
	uint16_t first_opp;                 /* index into the OPP array */
	uint16_t opp_count;
};

struct dvfs_opp {
	uint64_t hz;
	uint32_t microvolt_target;
	uint32_t microvolt_min;
	uint32_t microvolt_max;
	uint32_t reserved;
};

struct dvfs_profile {
	char     name[DVFS_NAME_LEN];            /* "ultra_low", "balanced", "performance" */
	uint32_t opp_mask[DVFS_MAX_DOMAINS];     /* bit i: domain's OPP i allowed */
};

#endif /* SEEDFW_DVFS_H */
