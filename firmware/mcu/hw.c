/* SysTick cycle counter and CMSDK APB UART0 of mps2-an385. */
#include "mcu.h"

#define REG(addr) (*(volatile uint32_t *)(addr))

/* SysTick is a 24-bit down-counter; the overflow interrupt extends it to 64 bits. */
#define SYST_CSR  REG(0xE000E010u)
#define SYST_RVR  REG(0xE000E014u)
#define SYST_CVR  REG(0xE000E018u)
#define SYST_RELOAD 0x00FFFFFFu

static volatile uint32_t systick_wraps;

void systick_handler(void)
{
	systick_wraps++;
}

void cycles_start(void)
{
	systick_wraps = 0;
	SYST_RVR = SYST_RELOAD;
	SYST_CVR = 0;
	SYST_CSR = 0x7; /* ENABLE | TICKINT | CLKSOURCE=processor clock */
}

uint64_t cycles_now(void)
{
	uint32_t wraps, val;
	/* Re-read when the counter wrapped between the two reads (wraps changed under us). */
	do {
		wraps = systick_wraps;
		val = SYST_CVR;
	} while (wraps != systick_wraps);
	return ((uint64_t)wraps << 24) + (SYST_RELOAD - val);
}

/* CMSDK APB UART: DATA 0x00, STATE 0x04 (bit 0 TX full), CTRL 0x08 (bit 0 TX enable), BAUDDIV 0x10. */
#define UART0_BASE 0x40004000u
#define UART_DATA    REG(UART0_BASE + 0x00)
#define UART_STATE   REG(UART0_BASE + 0x04)
#define UART_CTRL    REG(UART0_BASE + 0x08)
#define UART_BAUDDIV REG(UART0_BASE + 0x10)

void uart_init(void)
{
	UART_BAUDDIV = MCU_CPU_HZ / 115200u; /* must be >= 16 or the UART stays silent */
	UART_CTRL = 0x1;                     /* TX enable: without it QEMU drops every byte */
}

static void uart_putc(char c)
{
	while (UART_STATE & 0x1)
		;
	UART_DATA = (uint32_t)(unsigned char)c;
}

void uart_puts(const char *s)
{
	for (; *s; s++) {
		if (*s == '\n')
			uart_putc('\r');
		uart_putc(*s);
	}
}

void uart_put_dec(uint64_t v)
{
	char buf[21];
	int i = sizeof(buf) - 1;
	buf[i] = 0;
	do {
		buf[--i] = (char)('0' + v % 10u);
		v /= 10u;
	} while (v);
	uart_puts(&buf[i]);
}

void uart_put_hex(uint32_t v)
{
	char buf[11] = "0x";
	for (int i = 0; i < 8; i++)
		buf[2 + i] = "0123456789abcdef"[(v >> (28 - 4 * i)) & 0xf];
	buf[10] = 0;
	uart_puts(buf);
}
