/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * seedfw LZ4 block container: THE layout of a compressed ELF section (or any blob).
 *
 * Why blocks: each block is an independent LZ4 *block* (no frame), so a decoder can expand
 * any block alone and the table gives random access. Why a dictionary: small sections and
 * small blocks have too little history of their own; a few KiB of typical content (trained
 * from other images, or bytes already resident in memory) gives matches from byte 0.
 *
 * Layout (all integers little-endian, no padding anywhere):
 *
 *   struct lz4blk_header        (LZ4BLK_HEADER_SIZE bytes)
 *   uint32_t table[block_count]  (LZ4BLK_STORED | stored size of block i)
 *   block 0, block 1, ...        (concatenated, no alignment)
 *
 * Block i holds original bytes [i * block_size, min((i + 1) * block_size, original_size)).
 * A table entry with LZ4BLK_STORED set holds the block's bytes verbatim (used when LZ4 does
 * not make it smaller); its size must equal the block's original size. Otherwise the entry is
 * the LZ4 block size, which must be smaller than the block's original size (else the writer
 * would have stored it) and non-zero.
 *
 * Checksums are CRC-32 as in zlib/PNG/Ethernet (reflected polynomial 0xEDB88320, initial
 * value and final xor 0xFFFFFFFF; crc32("123456789") == 0xCBF43926):
 *   crc32        - of the original (uncompressed) bytes;
 *   dict_id      - crc32 of the dictionary bytes (0 when dict_size == 0), so the decoder can
 *                  tell a wrong dictionary from corrupt data without hashing anything heavier;
 *   header_crc   - of header bytes [0, offsetof(header_crc)) followed by the block table.
 *
 * This header is shared by the host build (tests, fuzzers, benchmarks) and freestanding
 * firmware (aarch64 BL31/BL33, Cortex-M): it uses only <stdint.h> and <stddef.h>.
 */
#ifndef SEEDFW_LZ4BLK_H
#define SEEDFW_LZ4BLK_H

#include <stddef.h>
#include <stdint.h>

#define LZ4BLK_MAGIC            0x345A4C53u /* bytes "SLZ4" */
#define LZ4BLK_VERSION          1u
#define LZ4BLK_HEADER_SIZE      40u
#define LZ4BLK_TABLE_ENTRY_SIZE 4u
#define LZ4BLK_STORED           0x80000000u /* table flag: block stored uncompressed */
#define LZ4BLK_SIZE_MASK        0x7FFFFFFFu
#define LZ4BLK_MIN_BLOCK_SHIFT  10u /* 1 KiB */
#define LZ4BLK_MAX_BLOCK_SHIFT  22u /* 4 MiB */

/* LZ4 block format constants the decoder enforces (from the LZ4 block format description). */
#define LZ4BLK_MIN_MATCH        4u
#define LZ4BLK_LAST_LITERALS    5u  /* the last 5 bytes of a block are always literals */
#define LZ4BLK_MAX_OFFSET       65535u

struct lz4blk_header {
	uint32_t magic;         /* LZ4BLK_MAGIC */
	uint16_t version;       /* LZ4BLK_VERSION */
	uint16_t header_size;   /* LZ4BLK_HEADER_SIZE (lets a later version append fields) */
	uint32_t block_size;    /* power of two, 2^LZ4BLK_MIN_BLOCK_SHIFT .. 2^LZ4BLK_MAX_BLOCK_SHIFT */
	uint32_t block_count;   /* == ceil(original_size / block_size) */
	uint32_t original_size; /* bytes after decompression */
	uint32_t dict_id;       /* crc32 of the dictionary, 0 when none */
	uint32_t dict_size;     /* bytes of dictionary the blocks were compressed against */
	uint32_t crc32;         /* crc32 of the original bytes */
	uint32_t payload_size;  /* sum of the table's stored sizes: bytes of blocks after the table */
	uint32_t header_crc;    /* crc32 of bytes [0, 36) of this header, then the block table */
};

_Static_assert(sizeof(struct lz4blk_header) == LZ4BLK_HEADER_SIZE, "lz4blk header size");
_Static_assert(offsetof(struct lz4blk_header, header_crc) == 36, "lz4blk header_crc offset");

/*
 * Phase-2 boot table: one entry per container a boot stage expands before first use.
 * 64-bit fields so the same table serves AArch64 and 32-bit cores (upper halves 0 there).
 */
struct lz4blk_boot_entry {
	uint64_t container;     /* address of the container */
	uint64_t container_len; /* bytes available at `container` */
	uint64_t dest;          /* where the original bytes go (link address of the section) */
	uint64_t capacity;      /* bytes available at `dest` */
};

_Static_assert(sizeof(struct lz4blk_boot_entry) == 32, "lz4blk boot entry size");

/*
 * Descriptor of one section expanded by an early boot hook (TF-A BL31 .rodata patch): lives in
 * the image's .data with container == 0; seedfw's build fills it in after placing the container.
 * The hook writes status: LZ4BLK_DESC_EXPANDED on success, a negative lz4blk_error on failure.
 */
#define LZ4BLK_DESC_MAGIC       0x445A4C53u /* bytes "SLZD" */
#define LZ4BLK_DESC_EXPANDED    1

struct lz4blk_rodata_desc {
	uint32_t magic;         /* LZ4BLK_DESC_MAGIC */
	int32_t status;         /* 0 until the hook ran */
	struct lz4blk_boot_entry entry;
	uint64_t dict;          /* address of the dictionary, 0 = none */
	uint64_t dict_len;
};

_Static_assert(sizeof(struct lz4blk_rodata_desc) == 56, "lz4blk rodata descriptor size");
_Static_assert(offsetof(struct lz4blk_rodata_desc, entry) == 8, "lz4blk descriptor entry");

/* Error codes: every function returns >= 0 on success, one of these on failure. */
enum lz4blk_error {
	LZ4BLK_OK = 0,
	LZ4BLK_E_TRUNCATED = -1,       /* input ends inside a sequence (token, length, literals, offset) */
	LZ4BLK_E_OFFSET = -2,          /* match offset 0 or reaching before output start + dictionary */
	LZ4BLK_E_OUTPUT_OVERFLOW = -3, /* literals or match would write past the output capacity */
	LZ4BLK_E_LAST_LITERALS = -4,   /* a match covers the last 5 bytes of the output (end rule) */
	LZ4BLK_E_BAD_HEADER = -5,      /* magic, version, header size, block size, counts, sizes */
	LZ4BLK_E_BAD_TABLE = -6,       /* table entry sizes inconsistent with the block or payload */
	LZ4BLK_E_HEADER_CRC = -7,      /* header/table checksum mismatch */
	LZ4BLK_E_DICT_MISMATCH = -8,   /* dictionary missing, wrong size or wrong crc32 */
	LZ4BLK_E_BLOCK_SIZE = -9,      /* a block decoded to a size other than its original size */
	LZ4BLK_E_CHECKSUM = -10,       /* crc32 of the decompressed data differs */
	LZ4BLK_E_DEST_TOO_SMALL = -11, /* destination capacity < original size */
	LZ4BLK_E_CONTAINER_TRUNCATED = -12, /* container shorter than header + table + payload */
	LZ4BLK_E_OVERLAP = -13,        /* destination overlaps the container or the dictionary */
};

/* Parsed, validated header (host-endian copy). */
struct lz4blk_info {
	uint32_t block_size;
	uint32_t block_count;
	uint32_t original_size;
	uint32_t dict_id;
	uint32_t dict_size;
	uint32_t crc32;
	uint32_t payload_size;
	uint32_t total_size;    /* header + table + payload */
};

/* CRC-32 (see above); continue a running value by passing the previous result as `crc`. */
uint32_t lz4blk_crc32(uint32_t crc, const void *data, size_t len);

/*
 * Decompress one raw LZ4 block `src[0..src_len)` into `dst[0..dst_cap)`. Matches may reach
 * back into `dict[0..dict_len)`, which logically precedes dst (dict may be NULL when
 * dict_len == 0). Never reads outside src/dict or writes outside dst, whatever the input.
 * Returns the number of bytes written, or a negative enum lz4blk_error.
 */
long lz4blk_decompress_block(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_cap,
			     const uint8_t *dict, size_t dict_len);

/* Validate header and table of a container of `len` bytes; fill `info` (may be NULL). */
int lz4blk_parse(const void *container, size_t len, struct lz4blk_info *info);

/*
 * Validate, decompress every block into dst, verify the crc32. The dictionary must match
 * the header's dict_size and dict_id. Returns original_size or a negative error; on error
 * dst may hold partial output.
 */
long lz4blk_decompress(const void *container, size_t len, void *dst, size_t dst_cap,
		       const void *dict, size_t dict_len);

/*
 * Expand `count` boot-table entries in order (phase 2: the payload and the BL31 hook call
 * this). Returns 0, or the negative error of the first failing entry; *failed (if non-NULL)
 * gets that entry's index.
 */
int lz4blk_boot_expand(const struct lz4blk_boot_entry *table, size_t count,
		       const void *dict, size_t dict_len, size_t *failed);

#endif /* SEEDFW_LZ4BLK_H */
