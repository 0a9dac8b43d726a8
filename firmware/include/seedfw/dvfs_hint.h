/*
 * .dvfs_hint records (seed §4.3): firmware states what a piece of code needs, the build harvests
 * the records from the ELF (tools/seedfw/dvfs.py, harvest_hints), checks them against the board's
 * DVFS table and embeds them with it.
 *
 * The first four fields are the seed's struct. Two fields are added:
 *  - domain: the seed's record does not say WHICH clock a frequency is for, and on RK3588 the same
 *    1200 MHz exists in cpu-little, cpu-big0 and cpu-big1 with different voltages, so a hint
 *    without a domain cannot be checked against "that OPP's" voltage. Empty = "any domain": the
 *    build resolves it to the first domain (table order) whose default profile allows the OPP, and
 *    writes the resolved name into the embedded copy.
 *  - name: so build errors and the boot log can say which hint is wrong.
 *
 * Placement: records carry `retain` so --gc-sections keeps them; a linker script that lists
 * output sections should still keep the section explicitly, e.g.
 *     .dvfs_hint : { KEEP(*(.dvfs_hint)) }
 * (it is not needed at run time; an objcopy may strip it from the .bin after the harvest).
 */
#ifndef SEEDFW_DVFS_HINT_H
#define SEEDFW_DVFS_HINT_H

#include <stdint.h>

#define DVFS_HINT_NAME_LEN 16

struct dvfs_hint {
	float    criticality;        /* 0.0 (can wait) .. 1.0 (hard deadline) */
	uint32_t latency_slack_ns;   /* how late the work may finish */
	uint32_t freq_min_mhz;       /* lowest acceptable OPP of the domain, in MHz */
	uint32_t voltage_mv;         /* voltage the code was qualified at (>= that OPP's target) */
	char     domain[DVFS_HINT_NAME_LEN];  /* "" = any domain */
	char     name[DVFS_HINT_NAME_LEN];
};

/*
 * `retain` (GCC 11+, binutils 2.36+) keeps an unreferenced record through --gc-sections. Where the
 * toolchain was configured without SHF_GNU_RETAIN support (Debian's arm-none-eabi-gcc 12) the
 * attribute is ignored with a -Wattributes warning, which the pragmas silence so -Werror builds
 * pass; there the linker script's KEEP(*(.dvfs_hint)) is what keeps the records.
 */
#if defined(__has_attribute)
#if __has_attribute(retain)
#define SEEDFW_DVFS_HINT_RETAIN retain,
#endif
#endif
#ifndef SEEDFW_DVFS_HINT_RETAIN
#define SEEDFW_DVFS_HINT_RETAIN
#endif

#define SEEDFW_DVFS_HINT_DOMAIN(ident, dom, crit, slack_ns, fmin_mhz, mv)                    \
	_Pragma("GCC diagnostic push")                                                        \
	_Pragma("GCC diagnostic ignored \"-Wattributes\"")                                    \
	static const struct dvfs_hint seedfw_dvfs_hint_##ident                                \
	__attribute__((used, SEEDFW_DVFS_HINT_RETAIN section(".dvfs_hint"), aligned(4))) = { \
		(crit), (slack_ns), (fmin_mhz), (mv), dom, #ident };                          \
	_Pragma("GCC diagnostic pop")                                                         \
	/* consumes the caller's ';' (same object, internal linkage kept) */                  \
	extern const struct dvfs_hint seedfw_dvfs_hint_##ident

#define SEEDFW_DVFS_HINT(ident, crit, slack_ns, fmin_mhz, mv)                                \
	SEEDFW_DVFS_HINT_DOMAIN(ident, "", crit, slack_ns, fmin_mhz, mv)

#endif /* SEEDFW_DVFS_HINT_H */
