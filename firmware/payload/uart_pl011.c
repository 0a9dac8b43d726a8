/* ARM PL011 UART, transmit only. BL31 already programmed the baud rate; we only make sure TX is on. */
#include <stdint.h>

#include "uart.h"

#define UART_DR   0x00u
#define UART_FR   0x18u
#define UART_CR   0x30u
#define FR_TXFF   (1u << 5)
#define CR_UARTEN (1u << 0)
#define CR_TXE    (1u << 8)

static inline volatile uint32_t *reg(uint32_t off)
{
	return (volatile uint32_t *)((uintptr_t)UART_BASE + off);
}

void uart_init(void)
{
	uint32_t cr = *reg(UART_CR);

	if ((cr & (CR_UARTEN | CR_TXE)) != (CR_UARTEN | CR_TXE))
		*reg(UART_CR) = cr | CR_UARTEN | CR_TXE;
}

void uart_putc(char c)
{
	if (c == '\n')
		uart_putc('\r');
	while (*reg(UART_FR) & FR_TXFF)
		;
	*reg(UART_DR) = (uint32_t)(unsigned char)c;
}

void uart_puts(const char *s)
{
	while (*s)
		uart_putc(*s++);
}
