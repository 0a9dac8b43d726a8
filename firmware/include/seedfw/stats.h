/* seedfw stats block: boot counters a firmware keeps in RAM for the host to read back.
 *
 * One definition shared by the MCU firmware, the A-class payload and the Python reader
 * (tools/seedfw/counters/stats_block.py, checked against this header by tests/test_counters.py).
 * The host finds the block through the ELF symbol `seedfw_stats`; every field is fixed width and
 * naturally aligned so the layout is the same on Cortex-M (AAPCS), AArch64 and the host.
 */
#ifndef SEEDFW_STATS_H
#define SEEDFW_STATS_H

#include <stdint.h>

#define SEEDFW_STATS_MAGIC      0x54415453u /* "STAT" in memory order (little endian) */
#define SEEDFW_STATS_VERSION    1u
#define SEEDFW_STATS_MILESTONES 8u          /* boot milestones recorded at most */

/* Milestone ids: index into seedfw_stats.milestones[]; value = cycle counter at that point. */
#define SEEDFW_MS_RESET     0u /* first instruction of the reset handler */
#define SEEDFW_MS_DATA      1u /* .data copied from storage, .bss zeroed */
#define SEEDFW_MS_CONSOLE   2u /* UART ready */
#define SEEDFW_MS_STORAGE   3u /* image read back from storage (self-check done) */
#define SEEDFW_MS_DECOMPRESS 4u /* decompression done (A-class payload) */
#define SEEDFW_MS_MAIN      5u /* entering the main/idle loop */

struct seedfw_stats {
	uint32_t magic;              /* SEEDFW_STATS_MAGIC once the block is valid */
	uint32_t version;            /* SEEDFW_STATS_VERSION */
	uint64_t bytes_decompressed; /* output bytes produced by decompression */
	uint64_t bytes_read;         /* bytes read from storage (flash) */
	uint64_t cycles;             /* cycle counter when the block was frozen (SysTick / CNTVCT) */
	uint32_t cycle_hz;           /* cycle counter frequency, 0 if unknown */
	uint32_t milestone_count;    /* valid entries in milestones[] */
	uint64_t milestones[SEEDFW_STATS_MILESTONES]; /* cycle stamps, see SEEDFW_MS_*; 0 = not reached */
};

#endif /* SEEDFW_STATS_H */
