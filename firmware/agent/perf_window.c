/*
 * Live counters for the agent: a perf PMU selected by name (sysfs), read with perf_event_open
 * over a sampling window. On an RK3588 under Linux >= 6.7 that PMU is the DDR monitor,
 * `rockchip_ddr` (read-bytes, write-bytes, cycles; drivers/devfreq/event/rockchip-dfi.c); in
 * QEMU it is the CPU's emulated PMUv3 (armv8_pmuv3: cpu_cycles, inst_retired) — same code.
 *
 * A spec is PMU/EVENT,EVENT/KCONFIG, e.g. rockchip_ddr/read-bytes,write-bytes,cycles/
 * CONFIG_DEVFREQ_EVENT_ROCKCHIP_DFI. PMU is a directory of /sys/bus/event_source/devices/, or
 * the first PMU_<n> (the arm_pmu driver numbers its instances: armv8_pmuv3_0). Each event's
 * encoding is read from the PMU's events/ directory ("event=0x11"), placed by format/<term>
 * ("config:0-15"). Lines printed:
 *
 *   agent: perf armv8_pmuv3_0 window=verify ns=1234567 cpu_cycles=... inst_retired=...
 *   agent: perf rockchip_ddr absent (no PMU of that name: the kernel needs
 *          CONFIG_DEVFREQ_EVENT_ROCKCHIP_DFI)
 *   agent: perf rockchip_ddr read-bytes unavailable (<why>)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "perf_window.h"

#define SYSFS "/sys/bus/event_source/devices"

static int read_text(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = 0;
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	return 0;
}

/* The PMU's sysfs name: exact, else the first "<name>_<digits>". */
static int find_pmu(const char *name, char *out, size_t len)
{
	char path[1024];
	DIR *d;
	struct dirent *e;
	size_t n = strlen(name);

	snprintf(path, sizeof(path), SYSFS "/%s", name);
	if (access(path, F_OK) == 0) {
		snprintf(out, len, "%s", name);
		return 0;
	}
	d = opendir(SYSFS);
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		const char *rest = e->d_name + n;

		if (strncmp(e->d_name, name, n) || rest[0] != '_' || !rest[1])
			continue;
		if (strspn(rest + 1, "0123456789") == strlen(rest + 1)) {
			snprintf(out, len, "%s", e->d_name);
			closedir(d);
			return 0;
		}
	}
	closedir(d);
	return -1;
}

/* config for one event from events/<ev> terms (term=value) and format/<term> (config:lo-hi). */
static int event_config(const char *pmu, const char *ev, uint64_t *config, char *why, size_t wl)
{
	char path[1024], text[256], fmt[64];

	snprintf(path, sizeof(path), SYSFS "/%s/events/%s", pmu, ev);
	if (read_text(path, text, sizeof(text))) {
		snprintf(why, wl, "no %s", path);
		return -1;
	}
	*config = 0;
	for (char *save = NULL, *term = strtok_r(text, ",", &save); term;
	     term = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(term, '=');
		unsigned lo = 0;
		uint64_t val = 1;

		if (eq) {
			*eq = 0;
			val = strtoull(eq + 1, NULL, 0);
		}
		snprintf(path, sizeof(path), SYSFS "/%s/format/%s", pmu, term);
		if (read_text(path, fmt, sizeof(fmt)) || strncmp(fmt, "config:", 7)) {
			snprintf(why, wl, "term '%s' of %s/%s is not in config", term, pmu, ev);
			return -1;
		}
		lo = (unsigned)strtoul(fmt + 7, NULL, 10);
		*config |= val << lo;
	}
	return 0;
}

static int first_cpu(const char *pmu)
{
	char path[1024], text[64];

	snprintf(path, sizeof(path), SYSFS "/%s/cpumask", pmu);
	if (read_text(path, text, sizeof(text)))
		return 0;
	return atoi(text);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int perf_window_open(struct perf_window *w, const char *spec)
{
	char copy[PERF_SPEC_MAX], path[1024], text[32], why[2048];
	char *events, *kconfig;

	memset(w, 0, sizeof(*w));
	snprintf(copy, sizeof(copy), "%s", spec);
	events = strchr(copy, '/');
	kconfig = events ? strchr(events + 1, '/') : NULL;
	if (!events || !kconfig) {
		printf("agent: perf bad spec '%s' (want PMU/EVENT,EVENT/KCONFIG)\n", spec);
		return -1;
	}
	*events++ = 0;
	*kconfig++ = 0;
	snprintf(w->want, sizeof(w->want), "%s", copy);
	if (find_pmu(copy, w->pmu, sizeof(w->pmu))) {
		printf("agent: perf %s absent (no PMU of that name: the kernel needs %s)\n", copy,
		       kconfig);
		return -1;
	}
	snprintf(path, sizeof(path), SYSFS "/%s/type", w->pmu);
	if (read_text(path, text, sizeof(text))) {
		printf("agent: perf %s absent (no %s)\n", w->pmu, path);
		return -1;
	}
	int type = atoi(text), cpu = first_cpu(w->pmu);

	for (char *save = NULL, *ev = strtok_r(events, ",", &save); ev && w->n < PERF_EVENTS_MAX;
	     ev = strtok_r(NULL, ",", &save)) {
		struct perf_event_attr attr;
		uint64_t config;

		if (event_config(w->pmu, ev, &config, why, sizeof(why))) {
			printf("agent: perf %s %s unavailable (%s)\n", w->pmu, ev, why);
			continue;
		}
		memset(&attr, 0, sizeof(attr));
		attr.size = sizeof(attr);
		attr.type = (uint32_t)type;
		attr.config = config;
		attr.disabled = 1;
		/* system-wide on one CPU: what the memory system did in the window, not this process */
		int fd = (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1, 0);

		if (fd < 0) {
			printf("agent: perf %s %s unavailable (perf_event_open: %s)\n", w->pmu, ev,
			       strerror(errno));
			continue;
		}
		snprintf(w->names[w->n], sizeof(w->names[0]), "%s", ev);
		w->fd[w->n++] = fd;
	}
	return w->n ? 0 : -1;
}

void perf_window_begin(struct perf_window *w)
{
	for (int i = 0; i < w->n; i++) {
		ioctl(w->fd[i], PERF_EVENT_IOC_RESET, 0);
		ioctl(w->fd[i], PERF_EVENT_IOC_ENABLE, 0);
	}
	w->start_ns = now_ns();
}

void perf_window_end(struct perf_window *w, const char *window)
{
	uint64_t ns = now_ns() - w->start_ns;

	for (int i = 0; i < w->n; i++)
		ioctl(w->fd[i], PERF_EVENT_IOC_DISABLE, 0);
	printf("agent: perf %s window=%s ns=%llu", w->pmu, window, (unsigned long long)ns);
	for (int i = 0; i < w->n; i++) {
		uint64_t v = 0;

		if (read(w->fd[i], &v, sizeof(v)) != sizeof(v))
			printf(" %s=unreadable", w->names[i]);
		else
			printf(" %s=%llu", w->names[i], (unsigned long long)v);
	}
	printf("\n");
	fflush(stdout);
}

void perf_window_close(struct perf_window *w)
{
	for (int i = 0; i < w->n; i++)
		close(w->fd[i]);
	w->n = 0;
}
