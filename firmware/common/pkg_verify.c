/* seedfw boot-package verifier; see pkg_verify.h. Layouts: seedfw/pkg.h, seedfw/dvfs.h. */
#include "pkg_verify.h"

#include <stddef.h>

#include "crc32.h"
#include "seedfw/dvfs.h"
#include "seedfw/pkg.h"
#include "sha256.h"

/* Field offsets, taken from the headers so there is one definition of the layout. */
#define H(f) offsetof(struct seedfw_pkg_header, f)
#define E(f) offsetof(struct seedfw_pkg_entry, f)
#define D(f) offsetof(struct dvfs_table_header, f)
#define P(f) offsetof(struct dvfs_profile, f)

static uint32_t rd16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t rd32(const uint8_t *p) { return rd16(p) | rd16(p + 2) << 16; }

static void puts_(seedfw_putc_fn out, const char *s)
{
	if (out)
		while (*s)
			out(*s++);
}

static void putn(seedfw_putc_fn out, const char *s, uint32_t max)  /* NUL-padded field */
{
	for (uint32_t i = 0; out && i < max && s[i]; i++)
		out(s[i]);
}

static void putu(seedfw_putc_fn out, uint32_t v)
{
	char buf[11];
	int i = 10;
	buf[i] = 0;
	do {
		buf[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	puts_(out, buf + i);
}

static const char *kind(uint32_t type)
{
	switch (type) {
	case SEEDFW_PKG_T_FIRMWARE: return "firmware";
	case SEEDFW_PKG_T_DVFS: return "dvfs";
	case SEEDFW_PKG_T_FDT: return "fdt";
	case SEEDFW_PKG_T_MODEL: return "model";
	default: return "entry";
	}
}

/* crc32 of [p, p+len) with the 4 bytes at crc_at read as zero. */
static uint32_t crc_skipping(const uint8_t *p, uint32_t len, uint32_t crc_at)
{
	static const uint8_t zero[4] = { 0, 0, 0, 0 };
	uint32_t c = seedfw_crc32(0, p, crc_at);
	c = seedfw_crc32(c, zero, 4);
	return seedfw_crc32(c, p + crc_at + 4, len - crc_at - 4);
}

static uint32_t check_dvfs(const uint8_t *t, uint32_t size, struct seedfw_pkg_result *r,
                           seedfw_putc_fn out)
{
	r->dvfs_crc_ok = 0;
	if (size < sizeof(struct dvfs_table_header) || rd32(t + D(magic)) != DVFS_MAGIC ||
	    rd16(t + D(version)) != DVFS_VERSION || rd32(t + D(total_size)) > size ||
	    rd32(t + D(total_size)) < sizeof(struct dvfs_table_header)) {
		puts_(out, "dvfs: bad table header\n");
		return 1;
	}
	uint32_t total = rd32(t + D(total_size));
	r->dvfs_domains = rd16(t + D(domain_count));
	r->dvfs_opps = rd16(t + D(opp_count));
	r->dvfs_profiles = rd16(t + D(profile_count));
	r->dvfs_hints = rd16(t + D(hint_count));
	uint32_t def = rd16(t + D(default_profile));
	uint32_t profiles = rd32(t + D(profiles_offset));
	r->dvfs_profile[0] = 0;
	if (def < r->dvfs_profiles &&
	    profiles + (def + 1) * sizeof(struct dvfs_profile) <= total) {
		const uint8_t *name = t + profiles + def * sizeof(struct dvfs_profile) + P(name);
		for (uint32_t i = 0; i < DVFS_NAME_LEN; i++)
			r->dvfs_profile[i] = (char)name[i];
		r->dvfs_profile[DVFS_NAME_LEN] = 0;
	}
	r->dvfs_crc_ok = crc_skipping(t, total, D(crc32)) == rd32(t + D(crc32));
	puts_(out, "dvfs: ");
	putu(out, r->dvfs_domains);
	puts_(out, " domains, ");
	putu(out, r->dvfs_opps);
	puts_(out, " opps, profile=");
	puts_(out, r->dvfs_profile[0] ? r->dvfs_profile : "?");
	puts_(out, r->dvfs_crc_ok ? ", crc ok\n" : ", crc BAD\n");
	puts_(out, "dvfs: ");
	putu(out, r->dvfs_hints);
	puts_(out, " hints\n");
	return r->dvfs_crc_ok ? 0 : 1;
}

uint32_t seedfw_pkg_verify(const void *pkg, uint32_t max_size, struct seedfw_pkg_result *res,
                           seedfw_putc_fn out)
{
	struct seedfw_pkg_result local;
	struct seedfw_pkg_result *r = res ? res : &local;
	const uint8_t *p = pkg;
	uint32_t errors = 0;

	r->entries = r->entries_ok = r->dvfs_domains = r->dvfs_opps = 0;
	r->dvfs_profiles = r->dvfs_hints = 0;
	r->dvfs_crc_ok = -1;
	r->dvfs_profile[0] = 0;

	const uint32_t hsize = sizeof(struct seedfw_pkg_header);
	const uint32_t esize = sizeof(struct seedfw_pkg_entry);
	if (max_size < hsize || rd32(p + H(magic)) != SEEDFW_PKG_MAGIC) {
		puts_(out, "pkg: bad magic\npkg: FAILED\n");
		return r->errors = 1;
	}
	uint32_t count = rd16(p + H(entry_count));
	uint32_t total = rd32(p + H(total_size));
	uint32_t table_end = hsize + count * esize;
	if (rd16(p + H(version)) != SEEDFW_PKG_VERSION || rd16(p + H(header_size)) != hsize ||
	    rd16(p + H(entry_size)) != esize || total > max_size || table_end > total) {
		puts_(out, "pkg: unsupported header\npkg: FAILED\n");
		return r->errors = 1;
	}
	if (crc_skipping(p, table_end, H(header_crc)) != rd32(p + H(header_crc))) {
		puts_(out, "pkg: header crc BAD\npkg: FAILED\n");
		return r->errors = 1;
	}
	r->entries = count;
	puts_(out, "pkg: ");
	putu(out, count);
	puts_(out, " entries, ");
	putu(out, total);
	puts_(out, " bytes, header crc ok\n");

	for (uint32_t i = 0; i < count; i++) {
		const uint8_t *e = p + hsize + i * esize;
		uint32_t type = rd16(e + E(type));
		uint32_t off = rd32(e + E(offset));
		uint32_t size = rd32(e + E(size));
		puts_(out, kind(type));
		puts_(out, " ");
		putn(out, (const char *)e + E(name), SEEDFW_PKG_NAME_LEN);
		if (off < table_end || off > total || size > total - off) {
			puts_(out, " out of bounds\n");
			errors++;
			continue;
		}
		uint8_t digest[32];
		seedfw_sha256(p + off, size, digest);
		int ok = 1;
		for (int k = 0; k < 32; k++)
			ok &= digest[k] == e[E(sha256) + k];
		ok &= seedfw_crc32(0, p + off, size) == rd32(e + E(crc32));
		puts_(out, ok ? " sha256 ok\n" : " sha256 BAD\n");
		if (!ok) {
			errors++;
			continue;
		}
		r->entries_ok++;
		if (type == SEEDFW_PKG_T_DVFS)
			errors += check_dvfs(p + off, size, r, out);
	}
	if (errors) {
		puts_(out, "pkg: FAILED, ");
		putu(out, errors);
		puts_(out, " errors\n");
	} else {
		puts_(out, "pkg: ok\n");
	}
	return r->errors = errors;
}
