/*
 * SHA-256 per FIPS 180-4, written for seedfw's boot-package check.
 *
 * Two block functions, one chosen at build time: with the ARMv8 SHA2 instructions available to
 * the compiler (-march=armv8-a+crypto or +sha2: the ACLE macro __ARM_FEATURE_SHA2), the
 * SHA256H/H2/SU0/SU1 one; otherwise portable C. Build time, not run time, because the payload
 * runs before anything could probe ID_AA64ISAR0_EL1 safely and the target's CPU is known from
 * its configuration. The SIMD build needs FP/SIMD access enabled (CPACR_EL1.FPEN) and must not
 * be compiled with -mgeneral-regs-only.
 */
#include "sha256.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_SHA2)
#include <arm_neon.h>
#define SEEDFW_SHA256_CE 1
#endif

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#ifdef SEEDFW_SHA256_CE
const char seedfw_sha256_impl[] = "armv8-sha2";

/* One block with the SHA2 instructions: four rounds per SHA256H/SHA256H2 pair, the message
 * schedule four words at a time with SHA256SU0/SU1. vld1q_u8 loads bytes, so any alignment works
 * under -mstrict-align as the portable code does. */
static void compress(uint32_t s[8], const uint8_t *p)
{
	uint32x4_t abcd = vld1q_u32(&s[0]), efgh = vld1q_u32(&s[4]);
	const uint32x4_t abcd0 = abcd, efgh0 = efgh;
	uint32x4_t m[4];

	for (int i = 0; i < 4; i++)	/* the message is big-endian words */
		m[i] = vreinterpretq_u32_u8(vrev32q_u8(vld1q_u8(p + 16 * i)));
#pragma GCC unroll 16
	for (int i = 0; i < 16; i++) {
		uint32x4_t wk = vaddq_u32(m[i & 3], vld1q_u32(&K[4 * i]));
		uint32x4_t prev = abcd;

		abcd = vsha256hq_u32(abcd, efgh, wk);
		efgh = vsha256h2q_u32(efgh, prev, wk);
		if (i < 12)	/* W[4i+16..] from W[4i..], W[4i+4..], W[4i+8..], W[4i+12..] */
			m[i & 3] = vsha256su1q_u32(vsha256su0q_u32(m[i & 3], m[(i + 1) & 3]),
			                           m[(i + 2) & 3], m[(i + 3) & 3]);
	}
	vst1q_u32(&s[0], vaddq_u32(abcd, abcd0));
	vst1q_u32(&s[4], vaddq_u32(efgh, efgh0));
}
#else
const char seedfw_sha256_impl[] = "portable";

static uint32_t ror(uint32_t x, unsigned n) { return (x >> n) | (x << (32 - n)); }

static void compress(uint32_t s[8], const uint8_t *p)
{
	uint32_t w[64];
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	uint32_t a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
		uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		h = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
	}
	s[0] += a; s[1] += b; s[2] += c; s[3] += d; s[4] += e; s[5] += f; s[6] += g; s[7] += h;
}
#endif

void seedfw_sha256_init(struct seedfw_sha256 *ctx)
{
	static const uint32_t iv[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
	                                0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
	for (int i = 0; i < 8; i++)
		ctx->state[i] = iv[i];
	ctx->length = 0;
	ctx->used = 0;
}

void seedfw_sha256_update(struct seedfw_sha256 *ctx, const void *data, size_t len)
{
	const uint8_t *p = data;
	ctx->length += len;
	while (len) {
		if (ctx->used == 0 && len >= 64) {  /* whole blocks straight from the input */
			compress(ctx->state, p);
			p += 64;
			len -= 64;
			continue;
		}
		ctx->block[ctx->used++] = *p++;
		len--;
		if (ctx->used == 64) {
			compress(ctx->state, ctx->block);
			ctx->used = 0;
		}
	}
}

void seedfw_sha256_final(struct seedfw_sha256 *ctx, uint8_t digest[32])
{
	uint64_t bits = ctx->length * 8;
	uint8_t pad = 0x80;
	seedfw_sha256_update(ctx, &pad, 1);
	pad = 0;
	while (ctx->used != 56)
		seedfw_sha256_update(ctx, &pad, 1);
	uint8_t len_be[8];
	for (int i = 0; i < 8; i++)
		len_be[i] = (uint8_t)(bits >> (56 - 8 * i));
	seedfw_sha256_update(ctx, len_be, 8);
	for (int i = 0; i < 8; i++) {
		digest[4 * i] = (uint8_t)(ctx->state[i] >> 24);
		digest[4 * i + 1] = (uint8_t)(ctx->state[i] >> 16);
		digest[4 * i + 2] = (uint8_t)(ctx->state[i] >> 8);
		digest[4 * i + 3] = (uint8_t)ctx->state[i];
	}
}

void seedfw_sha256(const void *data, size_t len, uint8_t digest[32])
{
	struct seedfw_sha256 ctx;
	seedfw_sha256_init(&ctx);
	seedfw_sha256_update(&ctx, data, len);
	seedfw_sha256_final(&ctx, digest);
}
