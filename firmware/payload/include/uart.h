/* The console UART (a PL011 on QEMU virt; its base address comes from board.yaml as UART_BASE). */
#ifndef PAYLOAD_UART_H
#define PAYLOAD_UART_H

void uart_init(void);
void uart_putc(char c);
void uart_puts(const char *s);

#endif
