/*
 * Early section handling. Runs before main() (see start.S), with a stack and a zeroed .bss.
 *
 * .data is stored at its run address (copied only if the linker ever gives it another load
 * address). With section compression (COMPRESS_RODATA, RODATA_ADDR: see payload.ld.S) .rodata is
 * not in the image at all: seedfw's build appended an LZ4 block container after the image and
 * filled in the descriptor below, and this hook expands the container to .rodata's link address
 * before any code reads .rodata. So everything this file calls (the decoder, the UART, PSCI) is
 * built without jump tables and checked by the Makefile to have no .rodata of its own.
 */
#include <stddef.h>
#include <stdint.h>

#include "psci.h"
#include "sections.h"
#include "seedfw/stats.h"
#include "uart.h"

/*
 * The payload's stats block (firmware/include/seedfw/stats.h; the host finds it by this symbol).
 * In .bss: filled in at run time. With section compression it records the bytes read (container)
 * and produced (.rodata) and the generic-timer count before and after the expansion.
 */
struct seedfw_stats seedfw_stats;

static inline uint64_t counter_now(void)
{
	uint64_t v;

	__asm__ volatile("isb\n\tmrs %0, cntvct_el0" : "=r"(v) : : "memory");
	return v;
}

static inline uint32_t counter_hz(void)
{
	uint64_t v;

	__asm__ volatile("mrs %0, cntfrq_el0" : "=r"(v));
	return (uint32_t)v;
}

static void copy_section(char *dst, const char *src, const char *dst_end)
{
	if (dst == src)
		return;
	while (dst < dst_end)
		*dst++ = *src++;
}

#ifdef COMPRESS_RODATA
/*
 * In .data (stored uncompressed). container == 0 until seedfw's build (packages/payload.py)
 * placed the container and wrote its address here; status is what the expansion returned.
 */
struct lz4blk_rodata_desc seedfw_payload_lz4 = { .magic = LZ4BLK_DESC_MAGIC };

/* Up to 8 characters packed little-endian into an immediate: a string literal would live in
 * .rodata, which is exactly what is not there yet. */
static void say8(uint64_t packed)
{
	for (; packed; packed >>= 8)
		uart_putc((char)(packed & 0xff));
}

static void say_hex(uint32_t v)
{
	for (int shift = 28; shift >= 0; shift -= 4) {
		uint32_t d = (v >> shift) & 0xfu;
		uart_putc((char)(d < 10 ? '0' + d : 'a' + d - 10));
	}
}

/* Nothing that follows can print (its format strings are in .rodata): say why and power off. */
static void expand_failed(int err)
{
	uart_init();
	say8(0x722e203a347a6cull);      /* "lz4: .r" */
	say8(0x6520617461646full);      /* "odata e" */
	say8(0x6620646e617078ull);    /* "xpand f" */
	say8(0x206572756c6961ull);      /* "ailure " */
	say_hex((uint32_t)err);
	uart_putc('\n');
	psci_system_off();
}
#endif

void sections_early_init(void)
{
	struct seedfw_stats *st = &seedfw_stats;

	copy_section(__data_start, __data_load, __data_end);
	st->cycle_hz = counter_hz();
	st->milestones[SEEDFW_MS_DATA] = counter_now();
	st->milestone_count = SEEDFW_MS_DATA + 1;
#ifdef COMPRESS_RODATA
	struct lz4blk_rodata_desc *d = &seedfw_payload_lz4;
	int rc = LZ4BLK_E_BAD_HEADER;           /* descriptor never filled in: nothing to expand */

	if (d->magic == LZ4BLK_DESC_MAGIC && d->entry.container != 0)
		rc = lz4blk_boot_expand(&d->entry, 1, (const void *)(uintptr_t)d->dict,
					(size_t)d->dict_len, NULL);
	d->status = rc == LZ4BLK_OK ? LZ4BLK_DESC_EXPANDED : rc;
	if (rc != LZ4BLK_OK)
		expand_failed(rc);
	st->milestones[SEEDFW_MS_DECOMPRESS] = counter_now();
	st->milestone_count = SEEDFW_MS_DECOMPRESS + 1;
	st->bytes_read += d->entry.container_len + d->dict_len;
	st->bytes_decompressed += (uint64_t)(__rodata_end - __rodata_start);
#endif
	st->cycles = counter_now();
	st->version = SEEDFW_STATS_VERSION;
	st->magic = SEEDFW_STATS_MAGIC;
}
