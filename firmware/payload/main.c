/* The payload's main: say who we are, then power the machine off through PSCI. */
#include <stdint.h>

#include "build_info.h"
#include "printf.h"
#include "psci.h"
#include "uart.h"
#include "pkg_verify.h"
#include "sections.h"
#include "seedfw/dvfs_hint.h"

/* Real needs of this program, harvested into the image's DVFS table by the build. */
SEEDFW_DVFS_HINT_DOMAIN(pkg_verify, "cpu", 0.5f, 5000000, 1000, 800);
SEEDFW_DVFS_HINT(console, 0.1f, 100000000, 500, 700);

#ifdef PKG_ADDR
static void pkg_putc(int c) { uart_putc((char)c); }

/* Semihosting SYS_EXIT with a status, so QEMU's exit code says whether the check passed
 * (PSCI SYSTEM_OFF carries no status). Needs -semihosting-config enable=on,target=native. */
static void semihost_exit(uint32_t code)
{
	volatile uint64_t block[2] = { 0x20026, code };  /* ADP_Stopped_ApplicationExit */
	register uint64_t x0 __asm__("x0") = 0x18;        /* SYS_EXIT */
	register uint64_t x1 __asm__("x1") = (uint64_t)block;
	__asm__ volatile("hlt #0xf000" : : "r"(x0), "r"(x1) : "memory");
}
#endif

/* The stats block as one UART line, in the MCU firmware's format (firmware/mcu/main.c), so one
 * parser (stats_block.parse_uart_line) reads both. The block was frozen by sections_early_init()
 * and nothing writes it afterwards, so a debugger reading `seedfw_stats` once the guest stopped
 * sees exactly these values (`invoke counters` and tests/test_counters.py compare the two). */
static void print_stats(void)
{
	const struct seedfw_stats *st = &seedfw_stats;

	printf("stats: addr=0x%lx version=%u bytes_decompressed=%lu bytes_read=%lu cycles=%lu "
	       "cycle_hz=%u milestones=", (unsigned long)(uintptr_t)st, st->version,
	       (unsigned long)st->bytes_decompressed, (unsigned long)st->bytes_read,
	       (unsigned long)st->cycles, st->cycle_hz);
	for (uint32_t i = 0; i < st->milestone_count && i < SEEDFW_STATS_MILESTONES; i++)
		printf("%s%lu", i ? "," : "", (unsigned long)st->milestones[i]);
	printf("\n");
}

int main(void)
{
	uart_init();
	/* The banner is a contract: tests and `invoke run` look for this exact line. */
	printf("seedfw payload %s build %s on %s\n", SEEDFW_VERSION, SEEDFW_BUILD_ID, SEEDFW_BOARD);
#ifdef COMPRESS_RODATA
	/* Checksum of .rodata as it is in memory now (expanded by sections_early_init): the test
	 * compares it with the crc32 of the section in the uncompressed ELF. This line is a contract. */
	{
		const struct lz4blk_rodata_desc *d = &seedfw_payload_lz4;
		size_t n = (size_t)(__rodata_end - __rodata_start);

		const struct seedfw_stats *st = &seedfw_stats;

		printf("lz4: .rodata %lu -> %lu bytes, crc32 0x%08x\n", (unsigned long)n,
		       (unsigned long)d->entry.container_len, lz4blk_crc32(0, __rodata_start, n));
		printf("lz4: expanded %lu bytes in %lu ticks of %u Hz\n",
		       (unsigned long)st->bytes_decompressed,
		       (unsigned long)(st->milestones[SEEDFW_MS_DECOMPRESS] -
				       st->milestones[SEEDFW_MS_DATA]), st->cycle_hz);
	}
#endif
#ifdef PKG_ADDR
	if (seedfw_pkg_verify((const void *)PKG_ADDR, PKG_MAX, 0, pkg_putc) != 0)
		semihost_exit(1);
	/* Generic-timer count once every image is verified: `invoke tune` reads this line (under
	 * QEMU's -icount the count follows the instruction count, so it is repeatable). */
	{
		uint64_t now;

		__asm__ volatile("isb\n\tmrs %0, cntvct_el0" : "=r"(now) : : "memory");
		printf("verified: all images at tick %lu\n", (unsigned long)now);
	}
#endif
	print_stats();
	uint64_t v = psci_call(PSCI_VERSION, 0, 0, 0);
	printf("psci %u.%u, powering off\n", (unsigned)(v >> 16) & 0xffffu, (unsigned)v & 0xffffu);
	return 0;
}
