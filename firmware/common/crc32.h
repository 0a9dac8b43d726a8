/* CRC-32 (IEEE 802.3, reflected, poly 0xEDB88320: the zlib/PNG one), freestanding. */
#ifndef SEEDFW_CRC32_H
#define SEEDFW_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* crc = seedfw_crc32(0, p, n) for a whole buffer; pass the previous result to continue. */
uint32_t seedfw_crc32(uint32_t crc, const void *data, size_t len);

#endif
