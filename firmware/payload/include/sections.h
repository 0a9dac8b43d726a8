/* Section boundaries exported by payload.ld.S (addresses only: never read these as variables). */
#ifndef PAYLOAD_SECTIONS_H
#define PAYLOAD_SECTIONS_H

extern char __image_start[], __image_end[];
extern char __text_start[], __text_end[], __text_load[];
extern char __rodata_start[], __rodata_end[], __rodata_load[];
extern char __data_start[], __data_end[], __data_load[];
extern char __bss_start[], __bss_end[];
extern char __stack_bottom[], __stack_top[];

/*
 * Called from start.S with a stack and a zeroed .bss, before main() and before any code reads
 * .rodata or .data: the hook where sections stored compressed are expanded in place.
 */
void sections_early_init(void);

#include "seedfw/stats.h"

/* The payload's stats block (sections.c): decompression counts and timer stamps. */
extern struct seedfw_stats seedfw_stats;

#ifdef COMPRESS_RODATA
#include "seedfw/lz4blk.h"

/* .rodata's container: filled in by seedfw's build, status set by sections_early_init(). */
extern struct lz4blk_rodata_desc seedfw_payload_lz4;
#endif

#endif
