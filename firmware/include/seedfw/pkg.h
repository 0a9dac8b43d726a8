/*
 * seedfw flat boot package: the one definition of its layout. Written by
 * tools/seedfw/images/package.py, read back by images/inspect.py and verified at boot by
 * firmware/common/pkg_verify.c. For firmware that does not parse FDT (the FIT carries the same
 * entries for U-Boot boards).
 *
 *   offset 0                 struct seedfw_pkg_header
 *   offset header_size       struct seedfw_pkg_entry [entry_count]
 *   each entry's data        at entry.offset (a multiple of the header's alignment, and of the
 *                            entry's own alignment for models), entry.size bytes
 *   total_size               end of the last entry, rounded up to the alignment
 *
 * All fields little-endian. header_crc is crc32 (IEEE, zlib's) over the header and the entry
 * table with the header_crc field read as zero, so a reader can trust offsets before hashing
 * megabytes. Each entry carries sha256 and crc32 of its STORED bytes (compressed ones when
 * flags has SEEDFW_PKG_F_LZ4): a boot stage can check integrity without a decompressor.
 */
#ifndef SEEDFW_PKG_H
#define SEEDFW_PKG_H

#include <stdint.h>

#define SEEDFW_PKG_MAGIC      0x474b5053u /* "SPKG" as little-endian bytes */
#define SEEDFW_PKG_VERSION    1u
#define SEEDFW_PKG_NAME_LEN   16u
#define SEEDFW_PKG_ALIGN      64u         /* minimum data alignment */

/* entry.type */
#define SEEDFW_PKG_T_FIRMWARE 1u          /* BL31 / payload / MCU image */
#define SEEDFW_PKG_T_DVFS     2u          /* struct dvfs_table_header ... (dvfs.h) */
#define SEEDFW_PKG_T_FDT      3u          /* DT fragment (operating-points-v2 tables), a DTB */
#define SEEDFW_PKG_T_MODEL    4u          /* NPU model blob; subtype says which format */

/* entry.subtype for SEEDFW_PKG_T_MODEL */
#define SEEDFW_PKG_M_RAW      0u
#define SEEDFW_PKG_M_RKNN     1u
#define SEEDFW_PKG_M_ONNX     2u

/* entry.flags */
#define SEEDFW_PKG_F_LZ4        (1u << 0) /* stored as a seedfw LZ4 block container */
#define SEEDFW_PKG_F_ENCRYPTED  (1u << 1) /* RKNN "CYPTRKNN": content not inspectable */

struct seedfw_pkg_header {
	uint32_t magic;        /* SEEDFW_PKG_MAGIC */
	uint16_t version;      /* SEEDFW_PKG_VERSION */
	uint16_t header_size;  /* sizeof(struct seedfw_pkg_header) */
	uint16_t entry_size;   /* sizeof(struct seedfw_pkg_entry) */
	uint16_t entry_count;
	uint32_t total_size;   /* whole package */
	uint32_t alignment;    /* every entry's offset is a multiple of this */
	uint32_t flags;        /* none defined; 0 */
	uint32_t header_crc;   /* see above */
	uint32_t reserved;
};

struct seedfw_pkg_entry {
	uint16_t type;               /* SEEDFW_PKG_T_* */
	uint16_t subtype;            /* SEEDFW_PKG_M_* for models, else 0 */
	uint32_t flags;              /* SEEDFW_PKG_F_* */
	char     name[SEEDFW_PKG_NAME_LEN]; /* NUL-padded; no NUL when exactly 16 bytes */
	uint32_t offset;             /* from the start of the package */
	uint32_t size;               /* stored bytes */
	uint32_t uncompressed_size;  /* == size unless SEEDFW_PKG_F_LZ4 */
	uint32_t crc32;              /* of the stored bytes */
	uint8_t  sha256[32];         /* of the stored bytes */
};

#endif /* SEEDFW_PKG_H */
