/* seedfw wake-controller firmware: banner, image self-check, stats block, then idle.
 *
 * The stats block is frozen before it is printed, so the values on the UART are exactly what a
 * debugger reads from `seedfw_stats` afterwards (tests compare the two).
 */
#include "mcu.h"

#ifndef MCU_VERSION
#define MCU_VERSION "0.0.0"
#endif
#ifndef BUILD_ID
#define BUILD_ID "dev"
#endif

extern uint8_t __image_end[];

/* In .data on purpose: the reset handler's copy must run before anything writes here. */
struct seedfw_stats seedfw_stats = {
	.magic = 0, /* becomes SEEDFW_STATS_MAGIC when the block is complete */
	.version = SEEDFW_STATS_VERSION,
	.cycle_hz = MCU_CPU_HZ,
};

/* Exported for the host: milestone slots are written in boot order. */
void milestone(unsigned id, uint64_t cycles)
{
	if (id < SEEDFW_STATS_MILESTONES) {
		seedfw_stats.milestones[id] = cycles;
		if (seedfw_stats.milestone_count < id + 1)
			seedfw_stats.milestone_count = id + 1;
	}
}

void stats_add_read(uint32_t bytes)
{
	seedfw_stats.bytes_read += bytes;
}

/* CRC-32 (IEEE, reflected) over the image as stored in flash: proves the programmed bytes are the
 * ones the image was linked with, and counts as the storage read of this boot. */
static uint32_t image_crc32(const uint8_t *p, uint32_t len)
{
	uint32_t crc = 0xFFFFFFFFu;
	for (uint32_t i = 0; i < len; i++) {
		crc ^= p[i];
		for (int b = 0; b < 8; b++)
			crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
	}
	return ~crc;
}

static void print_field(const char *name, uint64_t v)
{
	uart_puts(" ");
	uart_puts(name);
	uart_puts("=");
	uart_put_dec(v);
}

int main(void)
{
	uart_init();
	milestone(SEEDFW_MS_CONSOLE, cycles_now());
	uart_puts("seedfw mcu " MCU_VERSION " build " BUILD_ID " on mps2-an385\n");

	/* The vector table sits at address 0, so the image starts at a null pointer: go through an
	 * integer so the compiler does not treat the read as undefined. */
	uintptr_t base = 0;
	uint32_t len = (uint32_t)(uintptr_t)__image_end;
	uint32_t crc = image_crc32((const uint8_t *)base, len);
	stats_add_read(len);
	milestone(SEEDFW_MS_STORAGE, cycles_now());
	uart_puts("image: bytes=");
	uart_put_dec(len);
	uart_puts(" crc32=");
	uart_put_hex(crc);
	uart_puts("\n");

	milestone(SEEDFW_MS_MAIN, cycles_now());
	seedfw_stats.cycles = cycles_now();
	seedfw_stats.magic = SEEDFW_STATS_MAGIC;

	uart_puts("stats:");
	uart_puts(" addr=");
	uart_put_hex((uint32_t)(uintptr_t)&seedfw_stats);
	print_field("version", seedfw_stats.version);
	print_field("bytes_decompressed", seedfw_stats.bytes_decompressed);
	print_field("bytes_read", seedfw_stats.bytes_read);
	print_field("cycles", seedfw_stats.cycles);
	print_field("cycle_hz", seedfw_stats.cycle_hz);
	uart_puts(" milestones=");
	for (uint32_t i = 0; i < seedfw_stats.milestone_count; i++) {
		if (i)
			uart_puts(",");
		uart_put_dec(seedfw_stats.milestones[i]);
	}
	uart_puts("\n");
	uart_puts("mcu: idle\n");

	for (;;)
		__asm__ volatile("wfi");
}
