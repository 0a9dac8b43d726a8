/*
 * seedfw-agent: the OS side of the boot chain (built by Buildroot as the BR2_EXTERNAL package
 * seedfw-agent, started by /etc/init.d/S99seedfw-agent).
 *
 * It reads the boot package the bootloader left in the board's "boot-package" memory region (a
 * no-map reserved-memory node, so /dev/mem may read it under STRICT_DEVMEM) — or a file, for
 * tests on the host — verifies it with the same code the payload links (firmware/common:
 * pkg_verify.c, sha256.c, crc32.c), applies the DVFS table's default power profile to cpufreq
 * where the kernel has a driver, reads what stats it can, and prints one line per fact:
 *
 *   agent: pkg: 4 entries, 12608 bytes, header crc ok
 *   agent: dvfs dvfs sha256 ok
 *   agent: dvfs: 2 domains, 7 opps, profile=balanced, crc ok
 *   agent: model digits sha256 ok
 *   agent: model digits rknn v6 target rk3588 ok       (models.c: RKNN header and target)
 *   agent: dt opp: cpu 4 opps match dvfs table          (with --dt-opp DIR)
 *   agent: cpufreq: ...
 *   agent: ok                        (or "agent: FAILED, N errors"; exit status 1)
 *
 * --dt-opp DIR compares the OPP tables in the live device tree (DIR = /proc/device-tree; the
 * bootloader applied seedfw's generated OPP overlay, seedfw.buildroot.osimage) with the DVFS
 * table of the verified boot package: the two come from one board file by two routes (the
 * overlay through the OS FIT, the table through the firmware FIT), so a difference means one
 * of them is not what this build made. A difference counts as an error, like a bad hash.
 *
 * --perf PMU/EVENTS/KCONFIG (repeatable, before the other options) reads a perf PMU over two
 * windows, idle (100 ms) and while the boot package is verified (perf_window.c).
 *
 * usage: seedfw-agent [--perf SPEC]... (--mem ADDR:SIZE | --file PATH) [--dt-opp DIR]
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "perf_window.h"
#include "models.h"
#include "pkg_verify.h"
#include "seedfw/dvfs.h"
#include "seedfw/pkg.h"

static char line[256];
static size_t line_len;

/* pkg_verify prints through a putc callback: collect a line, print it with our prefix. */
static void agent_putc(int c)
{
	if (c == '\n' || line_len == sizeof(line) - 1) {
		line[line_len] = 0;
		printf("agent: %s\n", line);
		fflush(stdout);
		line_len = 0;
		if (c == '\n')
			return;
	}
	line[line_len++] = (char)c;
}

/*
 * The region is not RAM to the kernel (no-map), so /dev/mem maps it as Device memory: unaligned
 * or paired loads fault there. Copy it out with aligned 64-bit volatile loads, then parse the copy.
 */
static uint8_t *read_mem(uint64_t addr, uint64_t size)
{
	int fd = open("/dev/mem", O_RDONLY | O_SYNC);
	if (fd < 0) {
		printf("agent: cannot open /dev/mem: %s\n", strerror(errno));
		return NULL;
	}
	void *map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, (off_t)addr);
	close(fd);
	if (map == MAP_FAILED) {
		printf("agent: cannot map 0x%llx+0x%llx: %s\n", (unsigned long long)addr,
		       (unsigned long long)size, strerror(errno));
		return NULL;
	}
	uint64_t *copy = malloc(size);
	if (!copy)
		return NULL;
	const volatile uint64_t *src = map;
	for (uint64_t i = 0; i < size / 8; i++)
		copy[i] = src[i];
	munmap(map, size);
	return (uint8_t *)copy;
}

static uint8_t *read_file(const char *path, uint64_t *size)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		printf("agent: cannot open %s: %s\n", path, strerror(errno));
		return NULL;
	}
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *buf = malloc(len > 0 ? (size_t)len : 1);
	if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	*size = (uint64_t)len;
	return buf;
}

/* The (verified) DVFS table inside the package; NULL if there is none. */
static const uint8_t *dvfs_table(const uint8_t *pkg, uint64_t size)
{
	struct seedfw_pkg_header h;
	memcpy(&h, pkg, sizeof(h));
	for (uint32_t i = 0; i < h.entry_count; i++) {
		struct seedfw_pkg_entry e;
		memcpy(&e, pkg + h.header_size + i * h.entry_size, sizeof(e));
		if (e.type == SEEDFW_PKG_T_DVFS && (uint64_t)e.offset + e.size <= size)
			return pkg + e.offset;
	}
	return NULL;
}

/* A big-endian DT property of exactly `n` cells (32-bit) into `out`; 0 on success. */
static int dt_cells(const char *path, uint32_t *out, size_t n)
{
	uint8_t buf[64];
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	size_t got = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	if (got != n * 4)
		return -1;
	for (size_t i = 0; i < n; i++)
		out[i] = (uint32_t)buf[4 * i] << 24 | (uint32_t)buf[4 * i + 1] << 16 |
			 (uint32_t)buf[4 * i + 2] << 8 | buf[4 * i + 3];
	return 0;
}

/* One domain's DT OPP table (DIR/opp-table-<name>) against the DVFS table: one line, 0/1 error. */
static uint32_t dt_opp_domain(const char *dir, const uint8_t *t, const struct dvfs_table_header *th,
			      const struct dvfs_domain *dom)
{
	char name[DVFS_NAME_LEN + 1] = {0}, table[512], path[640];
	memcpy(name, dom->name, DVFS_NAME_LEN);
	snprintf(table, sizeof(table), "%.300s/opp-table-%s", dir, name);
	DIR *d = opendir(table);
	if (!d) {
		printf("agent: dt opp: %s mismatch: no %s in the device tree\n", name, table);
		return 1;
	}
	uint32_t nodes = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL)
		nodes += strncmp(de->d_name, "opp-", 4) == 0 && strcmp(de->d_name, "opp-shared") != 0;
	closedir(d);
	if (nodes != dom->opp_count) {
		printf("agent: dt opp: %s mismatch: %u opp nodes, dvfs table has %u\n", name, nodes,
		       dom->opp_count);
		return 1;
	}
	for (uint32_t k = 0; k < dom->opp_count; k++) {
		struct dvfs_opp o;
		memcpy(&o, t + th->opps_offset + (dom->first_opp + k) * sizeof(o), sizeof(o));
		uint32_t hz[2], uv[3];
		snprintf(path, sizeof(path), "%s/opp-%llu/opp-hz", table, (unsigned long long)o.hz);
		if (dt_cells(path, hz, 2) || ((uint64_t)hz[0] << 32 | hz[1]) != o.hz) {
			printf("agent: dt opp: %s mismatch: no opp-%llu with opp-hz %llu\n", name,
			       (unsigned long long)o.hz, (unsigned long long)o.hz);
			return 1;
		}
		snprintf(path, sizeof(path), "%s/opp-%llu/opp-microvolt", table,
			 (unsigned long long)o.hz);
		if (dt_cells(path, uv, 3) || uv[0] != o.microvolt_target ||
		    uv[1] != o.microvolt_min || uv[2] != o.microvolt_max) {
			printf("agent: dt opp: %s mismatch: opp-%llu opp-microvolt is not <%u %u %u>\n",
			       name, (unsigned long long)o.hz, o.microvolt_target, o.microvolt_min,
			       o.microvolt_max);
			return 1;
		}
	}
	printf("agent: dt opp: %s %u opps match dvfs table\n", name, dom->opp_count);
	return 0;
}

/* Every domain of the DVFS table against the device tree under `dir`; returns the errors. */
static uint32_t dt_opp_check(const char *dir, const uint8_t *pkg, uint64_t size)
{
	const uint8_t *t = dvfs_table(pkg, size);
	if (!t) {
		printf("agent: dt opp: mismatch: no dvfs table in the boot package\n");
		return 1;
	}
	struct dvfs_table_header th;
	memcpy(&th, t, sizeof(th));
	uint32_t errors = 0;
	for (uint32_t i = 0; i < th.domain_count && i < DVFS_MAX_DOMAINS; i++) {
		struct dvfs_domain dom;
		memcpy(&dom, t + th.domains_offset + i * sizeof(dom), sizeof(dom));
		errors += dt_opp_domain(dir, t, &th, &dom);
	}
	return errors;
}

/* The highest frequency the default profile allows in the first "cpu*" domain, in Hz; 0 if none. */
static uint64_t profile_cpu_cap(const uint8_t *pkg, uint64_t size)
{
	const uint8_t *t = dvfs_table(pkg, size);
	if (!t)
		return 0;
	struct dvfs_table_header th;
	memcpy(&th, t, sizeof(th));
	struct dvfs_profile prof;
	memcpy(&prof, t + th.profiles_offset + th.default_profile * sizeof(prof), sizeof(prof));
	for (uint32_t d = 0; d < th.domain_count && d < DVFS_MAX_DOMAINS; d++) {
		struct dvfs_domain dom;
		memcpy(&dom, t + th.domains_offset + d * sizeof(dom), sizeof(dom));
		if (strncmp(dom.name, "cpu", 3) != 0)
			continue;
		uint64_t cap = 0;
		for (uint32_t k = 0; k < dom.opp_count && k < DVFS_MAX_OPPS; k++) {
			struct dvfs_opp opp;
			memcpy(&opp, t + th.opps_offset + (dom.first_opp + k) * sizeof(opp), sizeof(opp));
			if (prof.opp_mask[d] & (1u << k) && opp.hz > cap)
				cap = opp.hz;
		}
		return cap;
	}
	return 0;
}

static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	int ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

/* Apply the cap to every cpufreq policy the kernel offers; say so when there is none. */
static void apply_profile(uint64_t cap_hz, const char *profile)
{
	const char *base = "/sys/devices/system/cpu/cpufreq";
	DIR *dir = opendir(base);
	int policies = 0;
	struct dirent *de;
	while (dir && (de = readdir(dir)) != NULL) {
		if (strncmp(de->d_name, "policy", 6) != 0)
			continue;
		policies++;
		char path[512], cur[64] = "?";
		snprintf(path, sizeof(path), "%s/%.200s/scaling_cur_freq", base, de->d_name);
		read_line(path, cur, sizeof(cur));
		snprintf(path, sizeof(path), "%s/%.200s/scaling_max_freq", base, de->d_name);
		FILE *f = cap_hz ? fopen(path, "w") : NULL;
		int applied = f && fprintf(f, "%llu\n", (unsigned long long)(cap_hz / 1000)) > 0;
		if (f)
			applied &= fclose(f) == 0;
		printf("agent: cpufreq %s: cur %s kHz, profile %s cap %llu kHz %s\n", de->d_name, cur,
		       profile, (unsigned long long)(cap_hz / 1000), applied ? "applied" : "not applied");
	}
	if (dir)
		closedir(dir);
	if (!policies)
		printf("agent: cpufreq: no policy (no cpufreq driver on this machine); profile %s "
		       "not applied\n", profile);
}

static void stats(void)
{
	char buf[128];
	if (read_line("/proc/uptime", buf, sizeof(buf)) == 0)
		printf("agent: uptime %.*s s\n", (int)strcspn(buf, " "), buf);
	FILE *f = fopen("/proc/meminfo", "r");
	while (f && fgets(buf, sizeof(buf), f)) {
		unsigned long kb;
		if (sscanf(buf, "MemTotal: %lu kB", &kb) == 1)
			printf("agent: memory %lu kB\n", kb);
	}
	if (f)
		fclose(f);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	printf("agent: cpus %ld online\n", cpus);
}

int main(int argc, char **argv)
{
	uint8_t *pkg = NULL;
	uint64_t size = 0;
	const char *dt_dir = NULL;
	struct perf_window perf[4];
	int n_perf = 0;
	/* --perf SPEC pairs first: take them off argv, open what is there */
	while (argc >= 3 && strcmp(argv[1], "--perf") == 0) {
		if (n_perf < 4 && perf_window_open(&perf[n_perf], argv[2]) == 0)
			n_perf++;
		argv[2] = argv[0];
		argv += 2;
		argc -= 2;
	}
	for (int i = 0; i < n_perf; i++) {
		perf_window_begin(&perf[i]);
		usleep(100000);
		perf_window_end(&perf[i], "idle");
	}
	if (argc == 5 && strcmp(argv[3], "--dt-opp") == 0) {
		dt_dir = argv[4];
		argc = 3;
	}
	if (argc == 3 && strcmp(argv[1], "--mem") == 0) {
		unsigned long long addr, len;
		if (sscanf(argv[2], "%lli:%lli", &addr, &len) != 2 || len == 0 || len % 8 || addr % 4096) {
			printf("agent: bad --mem '%s' (want ADDR:SIZE, page-aligned)\n", argv[2]);
			return 2;
		}
		size = len;
		pkg = read_mem(addr, len);
		if (pkg)
			printf("agent: boot package at 0x%llx (%llu bytes reserved)\n", addr, len);
	} else if (argc == 3 && strcmp(argv[1], "--file") == 0) {
		pkg = read_file(argv[2], &size);
	} else {
		fprintf(stderr, "usage: %s (--mem ADDR:SIZE | --file PATH) [--dt-opp DIR]\n", argv[0]);
		return 2;
	}
	if (!pkg) {
		printf("agent: FAILED, no boot package\n");
		return 1;
	}
	struct seedfw_pkg_result res;
	for (int i = 0; i < n_perf; i++)
		perf_window_begin(&perf[i]);
	uint32_t errors = seedfw_pkg_verify(pkg, size > UINT32_MAX ? UINT32_MAX : (uint32_t)size,
	                                    &res, agent_putc);
	if (!errors)
		errors += agent_check_models(pkg, size, SEEDFW_NPU_TARGET);
	for (int i = 0; i < n_perf; i++) {
		perf_window_end(&perf[i], "verify");
		perf_window_close(&perf[i]);
	}
	if (!errors && res.dvfs_crc_ok == 1 && dt_dir)
		errors += dt_opp_check(dt_dir, pkg, size);
	if (!errors && res.dvfs_crc_ok == 1)
		apply_profile(profile_cpu_cap(pkg, size), res.dvfs_profile);
	stats();
	free(pkg);
	if (errors) {
		printf("agent: FAILED, %u errors\n", errors);
		return 1;
	}
	printf("agent: ok\n");
	return 0;
}
