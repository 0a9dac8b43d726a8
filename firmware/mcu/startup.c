/* Vector table and reset handler for the Cortex-M3 wake controller.
 *
 * The reset handler does what a C runtime would: copy .data from flash to SRAM and zero .bss, so
 * main() can rely on initialised globals. It stamps the first boot milestone before touching
 * memory so the stats show how long the runtime setup took.
 */
#include <stdint.h>
#include "mcu.h"

extern uint32_t __data_start[], __data_end[], __data_load[], __bss_start[], __bss_end[];
extern uint32_t __stack_top[];

void reset_handler(void);
void default_handler(void);
int main(void);

/* A fault stops here, visibly (a debugger sees the PC), instead of locking up QEMU. */
void default_handler(void)
{
	for (;;)
		__asm__ volatile("bkpt #1");
}

typedef void (*vector_t)(void);

__attribute__((section(".vectors"), used))
const vector_t vector_table[16 + 8] = {
	(vector_t)__stack_top,
	reset_handler,
	default_handler, /* NMI */
	default_handler, /* HardFault */
	default_handler, /* MemManage */
	default_handler, /* BusFault */
	default_handler, /* UsageFault */
	0, 0, 0, 0,
	default_handler, /* SVCall */
	default_handler, /* DebugMonitor */
	0,
	default_handler, /* PendSV */
	systick_handler,
	/* external interrupts 0..7 are unused but must not vector into nowhere */
	default_handler, default_handler, default_handler, default_handler,
	default_handler, default_handler, default_handler, default_handler,
};

__attribute__((noreturn)) void reset_handler(void)
{
	/* SysTick first: every later milestone is measured from here. */
	cycles_start();
	uint64_t t0 = cycles_now();

	uint32_t *src = __data_load, *dst = __data_start;
	while (dst < __data_end)
		*dst++ = *src++;
	for (dst = __bss_start; dst < __bss_end; dst++)
		*dst = 0;

	/* Only now is the stats block (in .bss/.data) writable without being wiped. */
	milestone(SEEDFW_MS_RESET, t0);
	stats_add_read((uint32_t)((uintptr_t)__data_end - (uintptr_t)__data_start));
	milestone(SEEDFW_MS_DATA, cycles_now());
	main();
	for (;;)
		__asm__ volatile("wfi");
}
