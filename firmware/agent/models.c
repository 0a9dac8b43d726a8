/*
 * The agent's check of the NPU models in the boot package, after pkg_verify has checked every
 * entry's sha256 (the same hashes the build recorded): each RKNN model must be a well-formed
 * container (seedfw/rknn.h) compiled for this board's NPU, or the NPU runtime would refuse it
 * later, at the first inference, far from the build that made it.
 *
 *   agent: model digits rknn v6 target rk3588 ok
 *   agent: model digits rknn: compiled for rk3566, board NPU is rk3588   (an error)
 *
 * Bounded: only the entry's own bytes are read; the JSON is searched within json_size.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "models.h"
#include "seedfw/pkg.h"
#include "seedfw/rknn.h"

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* 0 when `data` (size bytes) is an RKNN container for `target`; else prints why and returns 1. */
uint32_t agent_check_rknn(const char *name, const uint8_t *data, uint64_t size, const char *target)
{
	struct rknn_header h;
	if (size < RKNN_HEADER_SIZE + 8 || memcmp(data, RKNN_MAGIC, 4) != 0) {
		printf("agent: model %s rknn: bad magic or shorter than the header\n", name);
		return 1;
	}
	memcpy(&h, data, sizeof(h));
	uint64_t payload = le64(data + 16);
	if (le64(data + 8) != RKNN_FORMAT_VERSION || payload > size - RKNN_HEADER_SIZE - 8) {
		printf("agent: model %s rknn: version %llu, payload %llu bytes does not fit %llu\n", name,
		       (unsigned long long)le64(data + 8), (unsigned long long)payload,
		       (unsigned long long)size);
		return 1;
	}
	const uint8_t *json = data + RKNN_HEADER_SIZE + payload + 8;
	uint64_t json_size = le64(json - 8);
	if (json_size != size - RKNN_HEADER_SIZE - payload - 8) {
		printf("agent: model %s rknn: json_size %llu disagrees with the entry size\n", name,
		       (unsigned long long)json_size);
		return 1;
	}
	if (payload < RKNN_FLATBUFFER_ID_AT + 4 ||
	    memcmp(data + RKNN_HEADER_SIZE + RKNN_FLATBUFFER_ID_AT, RKNN_MAGIC, 4) != 0) {
		printf("agent: model %s rknn: payload has no RKNN FlatBuffer identifier\n", name);
		return 1;
	}
	const size_t klen = sizeof(RKNN_TARGET_KEY) - 1;
	for (uint64_t i = 0; i + klen < json_size; i++) {
		if (memcmp(json + i, RKNN_TARGET_KEY, klen) != 0)
			continue;
		const uint8_t *t = json + i + klen;
		uint64_t left = json_size - i - klen, n = 0;
		while (n < left && n < 32 && t[n] != '"')
			n++;
		if (n == strlen(target) && memcmp(t, target, n) == 0) {
			printf("agent: model %s rknn v%llu target %s ok\n", name,
			       (unsigned long long)h.version, target);
			return 0;
		}
		printf("agent: model %s rknn: compiled for %.*s, board NPU is %s\n", name, (int)n,
		       (const char *)t, target);
		return 1;
	}
	printf("agent: model %s rknn: no target_platform in its JSON\n", name);
	return 1;
}

uint32_t agent_check_models(const uint8_t *pkg, uint64_t size, const char *target)
{
	struct seedfw_pkg_header hd;
	if (size < sizeof(hd))
		return 0;
	memcpy(&hd, pkg, sizeof(hd));
	uint32_t errors = 0;
	for (uint32_t i = 0; i < hd.entry_count; i++) {
		struct seedfw_pkg_entry e;
		uint64_t at = (uint64_t)hd.header_size + (uint64_t)i * hd.entry_size;
		if (at + sizeof(e) > size)
			return errors + 1;
		memcpy(&e, pkg + at, sizeof(e));
		if (e.type != SEEDFW_PKG_T_MODEL || e.subtype != SEEDFW_PKG_M_RKNN ||
		    (e.flags & (SEEDFW_PKG_F_LZ4 | SEEDFW_PKG_F_ENCRYPTED)))
			continue;          /* compressed or encrypted models: their sha256 is the check */
		if ((uint64_t)e.offset + e.size > size)
			return errors + 1;
		char name[SEEDFW_PKG_NAME_LEN + 1] = {0};
		memcpy(name, e.name, SEEDFW_PKG_NAME_LEN);
		errors += agent_check_rknn(name, pkg + e.offset, e.size, target);
	}
	return errors;
}
