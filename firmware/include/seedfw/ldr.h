/*
 * The Rockchip maskrom loader container (what `rkdeveloptool db` sends to a board in maskrom
 * mode, what rkbin's boot_merger writes): the one definition of its layout in seedfw. Written and
 * read back by tools/seedfw/images/ldr_format.py; tests/test_loader.py checks that module against
 * this header. Worked out from the bytes boot_merger 1.35 writes (docs/loader.md); no code of
 * Rockchip's is used.
 *
 *   offset 0                 struct ldr_header (102 bytes, packed)
 *   code471_offset           struct ldr_entry [code471_num]   run by the boot ROM from SRAM
 *   code472_offset           struct ldr_entry [code472_num]   (tables follow each other)
 *   loader_offset            struct ldr_entry [loader_num]    what `ul` writes to storage
 *   entry data               right after the last table (no alignment of the start), in table
 *                            order, each zero-padded to LDR_DATA_ALIGN (data_size is the padded
 *                            size)
 *   end of file - 4          CRC32 of every byte before it (Rockchip's CRC: polynomial 0x04c10db7,
 *                            MSB first, initial value 0, no final xor), little-endian
 *
 * tag: "LDR " when the recipe says [SYSTEM] NEWIDB=true, and then the first 471 entry is
 * "UsbHead" and the first loader entry "FlashHead": 2 KiB RKNS headers (seedfw/rkns.h) that
 * describe the entries after them as images (UsbHead: the other 471 entries then the 472 ones;
 * FlashHead: the other loader entries). "BOOT" without NEWIDB.
 *
 * Scrambling (RC4, Rockchip's public key LDR_RC4_KEY): loader entries always, the stream
 * restarted every LDR_RC4_SECTOR bytes; 471 and 472 entries only when rc4_471_off is 0, each
 * entry as one stream.
 *
 * All integers little-endian. version is (MAJOR << 8) | MINOR in binary (0x010b = 1.11);
 * chip_type holds the four characters after "RK" in reverse order ("RK3588" -> "8853").
 */
#ifndef SEEDFW_LDR_H
#define SEEDFW_LDR_H

#include <stdint.h>

#define LDR_TAG            0x2052444cu  /* "LDR " as little-endian bytes (NEWIDB) */
#define LDR_TAG_OLD        0x544f4f42u  /* "BOOT" (no NEWIDB) */
#define LDR_HEADER_SIZE    102u
#define LDR_ENTRY_SIZE     57u
#define LDR_NAME_CHARS     20u          /* UTF-16LE code units, NUL-padded, no terminator needed */
#define LDR_ENTRY_471      1u
#define LDR_ENTRY_472      2u
#define LDR_ENTRY_LOADER   4u
#define LDR_DATA_ALIGN     2048u
#define LDR_RC4_SECTOR     512u
#define LDR_MERGE_VERSION  0x01000000u  /* what boot_merger 1.35 writes */
#define LDR_RC4_KEY        { 0x7c, 0x4e, 0x03, 0x04, 0x55, 0x05, 0x09, 0x07, \
                             0x2d, 0x2c, 0x7b, 0x38, 0x17, 0x0d, 0x17, 0x11 }

struct __attribute__((packed)) ldr_time {
	uint16_t year;             /* binary, not BCD */
	uint8_t month, day, hour, minute, second;
};

struct __attribute__((packed)) ldr_header {
	uint32_t tag;              /* LDR_TAG or LDR_TAG_OLD */
	uint16_t size;             /* LDR_HEADER_SIZE */
	uint32_t version;          /* (MAJOR << 8) | MINOR */
	uint32_t merger_version;   /* LDR_MERGE_VERSION */
	struct ldr_time release;   /* seedfw: SOURCE_DATE_EPOCH, UTC */
	uint32_t chip_type;
	uint8_t code471_num;
	uint32_t code471_offset;
	uint8_t code471_size;      /* LDR_ENTRY_SIZE */
	uint8_t code472_num;
	uint32_t code472_offset;
	uint8_t code472_size;
	uint8_t loader_num;
	uint32_t loader_offset;
	uint8_t loader_size;
	uint8_t sign_flag;         /* 0: unsigned */
	uint8_t rc4_flag;          /* 1: the recipe's [FLAG] RC4_OFF=true */
	uint8_t rc4_471_off;       /* 1: [FLAG] 471_RC4_OFF=true, 471/472 data stored plain */
	uint8_t reserved[56];
};

struct __attribute__((packed)) ldr_entry {
	uint8_t size;              /* LDR_ENTRY_SIZE */
	uint32_t type;             /* LDR_ENTRY_471 / _472 / _LOADER */
	uint16_t name[LDR_NAME_CHARS];
	uint32_t data_offset;
	uint32_t data_size;        /* padded to LDR_DATA_ALIGN */
	uint32_t data_delay;       /* ms to wait after running it (the section's Sleep=) */
};

#endif
