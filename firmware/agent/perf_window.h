/* The agent's live counters: one perf PMU, chosen by name, over sampling windows (perf_window.c). */
#ifndef SEEDFW_AGENT_PERF_WINDOW_H
#define SEEDFW_AGENT_PERF_WINDOW_H

#include <stdint.h>

#define PERF_EVENTS_MAX 8
#define PERF_SPEC_MAX 256

struct perf_window {
	char want[PERF_SPEC_MAX];		/* the PMU name asked for */
	char pmu[PERF_SPEC_MAX];		/* its sysfs name (e.g. armv8_pmuv3_0) */
	int fd[PERF_EVENTS_MAX];
	char names[PERF_EVENTS_MAX][48];
	int n;
	uint64_t start_ns;
};

/* spec: PMU/EVENT,EVENT/KCONFIG. Prints why when it fails (absent PMU: names KCONFIG). */
int perf_window_open(struct perf_window *w, const char *spec);
void perf_window_begin(struct perf_window *w);
/* Stops the counters and prints "agent: perf PMU window=NAME ns=N EVENT=V ...". */
void perf_window_end(struct perf_window *w, const char *window);
void perf_window_close(struct perf_window *w);

#endif
