/*
 * The RK3588 boot ROM's idblock header ("RKNS", header v2): the one definition of its layout in
 * seedfw. Read by tools/seedfw/images/idblock.py (inspect, and the build's check of what binman
 * wrote); tests/test_uboot.py checks that module against this header with the C compiler.
 * Written by U-Boot's mkimage (-T rksd / rkspi) for storage, and by us (tools/seedfw/images/
 * ldr_format.py) as the UsbHead / FlashHead entries of a NEWIDB maskrom loader, where the images
 * are the loader entries that follow the header (tests/test_loader.py checks that module).
 *
 * Layout as the boot ROM reads it at storage sector 64 (eMMC/SD; 0x8000 in SPI NOR), from
 * Rockchip's public description and U-Boot's documentation of the format:
 *
 *   offset 0      struct rkns_header (2048 bytes = 4 sectors)
 *   image[i]      at (size_and_off & 0xffff) sectors from the header, (size_and_off >> 16)
 *                 sectors long: image 0 is the DDR init blob ("TPL"), image 1 U-Boot SPL
 *
 * All fields little-endian. boot_flag bits [3:0] name the hash: 0 none, 1 sha256, 2 sha512;
 * each image entry's `hash` holds that digest of the image's sectors (zero-padded), and the
 * header's own `hash` the digest of every byte before it (offset 0 .. hash_offset_words * 4).
 */
#ifndef SEEDFW_RKNS_H
#define SEEDFW_RKNS_H

#include <stdint.h>

#define RKNS_MAGIC          0x534e4b52u  /* "RKNS" as little-endian bytes */
#define RKNS_SECTOR         512u
#define RKNS_MAX_IMAGES     4u
#define RKNS_HASH_NONE      0u
#define RKNS_HASH_SHA256    1u
#define RKNS_HASH_SHA512    2u
#define RKNS_HEADER_SECTORS 4u           /* images start after the 2 KiB header */
#define RKNS_BOOT1_WORDS    8u
#define RKNS_HASH_WORDS     0x180u       /* hash at byte 0x600: what boot_merger 1.35 writes */

struct rkns_image {
	uint32_t size_and_off;   /* [31:16] size in sectors, [15:0] offset in sectors */
	uint32_t address;        /* 0xffffffff: the boot ROM's default */
	uint32_t flag;
	uint32_t counter;        /* 1-based image number */
	uint8_t reserved[8];
	uint8_t hash[64];        /* sha256 uses the first 32 bytes */
};

struct rkns_header {
	uint32_t magic;            /* RKNS_MAGIC */
	uint8_t reserved[4];
	uint32_t size_and_nimage;  /* [31:16] image count, [15:0] offset of `hash` in 32-bit words */
	uint32_t boot_flag;        /* [3:0] hash algorithm */
	uint8_t reserved1[72];
	uint32_t boot1_param[RKNS_BOOT1_WORDS]; /* a loader recipe's [BOOT1_PARAM] WORD_0..WORD_7 */
	struct rkns_image images[RKNS_MAX_IMAGES];
	uint8_t reserved2[1064];
	uint8_t hash[512];         /* digest (or signature) of the header before this field */
};

#endif
