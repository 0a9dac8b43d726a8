/*
 * The .rknn container as rknn-toolkit2 2.5.0 writes it (no published specification; inferred
 * from files the toolkit writes, see tools/seedfw/rknn/rknn_file.py, which reads the same
 * layout and is checked against this header by tests/test_rknn_agent.py):
 *
 *   offset 0             struct rknn_header (64 bytes for format versions 2..6)
 *   offset 64            payload_size bytes: a FlatBuffer, file identifier "RKNN" at payload
 *                        offset RKNN_FLATBUFFER_ID_AT
 *   offset 64 + payload  uint64_t json_size, then json_size bytes of JSON with
 *                        "target_platform":["rk3588"], "version":"2.5.0", "norm_tensor":[...]
 * All integers little-endian.
 */
#ifndef SEEDFW_RKNN_H
#define SEEDFW_RKNN_H

#include <stdint.h>

#define RKNN_MAGIC             "RKNN"
#define RKNN_HEADER_SIZE       64u
#define RKNN_FORMAT_VERSION    6u      /* what rknn-toolkit2 2.5.0 writes */
#define RKNN_FLATBUFFER_ID_AT  4u
#define RKNN_TARGET_KEY        "\"target_platform\":[\""

struct rknn_header {
	char     magic[4];          /* RKNN_MAGIC */
	uint32_t pad;               /* 0 */
	uint64_t version;           /* container format version */
	uint64_t payload_size;      /* bytes of the FlatBuffer that follows the header */
	uint8_t  reserved[40];      /* to RKNN_HEADER_SIZE */
};

#endif
