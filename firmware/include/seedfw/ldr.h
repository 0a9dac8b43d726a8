/*
 * The Rockchip maskrom loader container ("LDR " tag, what `rkdeveloptool db` sends to a board in
 * maskrom mode): the one definition of its layout in seedfw. Written and read back by
 * tools/seedfw/images/loader.py; tests/test_loader.py checks that module against this header.
 * Written from the public descriptions of the format (rkdeveloptool's and boot_merger's
 * documentation of the RKBOOT header); no code of theirs is used.
 *
 *   offset 0                 struct ldr_header (102 bytes, packed)
 *   code471_offset           struct ldr_entry [code471_num]   DDR init: run first, from SRAM
 *   code472_offset           struct ldr_entry [code472_num]   USB plug: talks rockusb to the host
 *   loader_offset            struct ldr_entry [loader_num]    what `ul` writes (FlashData = DDR
 *                                                             init, FlashBoot = SPL)
 *   each entry's data        at data_offset, data_size bytes (seedfw: 2 KiB aligned, zero-padded)
 *   end of file - 4          CRC32 of every byte before it (Rockchip's CRC: polynomial 0x04c10db7,
 *                            MSB first, initial value 0, no final xor), little-endian
 *
 * All integers little-endian. version is BCD major.minor (0x0111 = 1.11, the .ini's [VERSION]);
 * chip_type is the four characters after "RK" in the chip name, first character in the most
 * significant byte ("3588" -> 0x33353838). rc4_flag 1: data are stored plain (the .ini's
 * RC4_OFF); seedfw writes only plain loaders.
 */
#ifndef SEEDFW_LDR_H
#define SEEDFW_LDR_H

#include <stdint.h>

#define LDR_TAG            0x2052444cu  /* "LDR " as little-endian bytes */
#define LDR_HEADER_SIZE    102u
#define LDR_ENTRY_SIZE     57u
#define LDR_NAME_CHARS     20u          /* UTF-16LE code units, NUL-padded */
#define LDR_ENTRY_471      1u
#define LDR_ENTRY_472      2u
#define LDR_ENTRY_LOADER   4u
#define LDR_DATA_ALIGN     2048u

struct __attribute__((packed)) ldr_time {
	uint16_t year;
	uint8_t month, day, hour, minute, second;
};

struct __attribute__((packed)) ldr_header {
	uint32_t tag;              /* LDR_TAG */
	uint16_t size;             /* LDR_HEADER_SIZE */
	uint32_t version;          /* BCD major.minor */
	uint32_t merger_version;   /* the writer's version; seedfw: 0x01030000 */
	struct ldr_time release;   /* SOURCE_DATE_EPOCH, UTC */
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
	uint8_t rc4_flag;          /* 1: plain data */
	uint8_t reserved[57];
};

struct __attribute__((packed)) ldr_entry {
	uint8_t size;              /* LDR_ENTRY_SIZE */
	uint32_t type;             /* LDR_ENTRY_471 / _472 / _LOADER */
	uint16_t name[LDR_NAME_CHARS];
	uint32_t data_offset;
	uint32_t data_size;
	uint32_t data_delay;       /* ms to wait after running it (the .ini's Sleep=) */
};

#endif
