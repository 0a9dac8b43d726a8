/* SHA-256 (FIPS 180-4), freestanding: no libc, no allocation, byte-wise so any alignment works. */
#ifndef SEEDFW_SHA256_H
#define SEEDFW_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct seedfw_sha256 {
	uint32_t state[8];
	uint64_t length;       /* bytes hashed so far */
	uint8_t  block[64];
	uint32_t used;         /* bytes waiting in block */
};

void seedfw_sha256_init(struct seedfw_sha256 *ctx);
void seedfw_sha256_update(struct seedfw_sha256 *ctx, const void *data, size_t len);
void seedfw_sha256_final(struct seedfw_sha256 *ctx, uint8_t digest[32]);
void seedfw_sha256(const void *data, size_t len, uint8_t digest[32]);
/* Which block function this build has: "armv8-sha2" or "portable" (see sha256.c). */
extern const char seedfw_sha256_impl[];

#endif
