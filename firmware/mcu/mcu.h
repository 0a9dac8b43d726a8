/* Internal interface of the wake-controller firmware. */
#ifndef SEEDFW_MCU_H
#define SEEDFW_MCU_H

#include <stdint.h>
#include "seedfw/stats.h"

/* mps2-an385 system clock, which also drives SysTick with CLKSOURCE=1 (AN385 spec: 25 MHz). */
#define MCU_CPU_HZ 25000000u

void systick_handler(void);
void cycles_start(void);
uint64_t cycles_now(void);

void uart_init(void);
void uart_puts(const char *s);
void uart_put_dec(uint64_t v);
void uart_put_hex(uint32_t v);

extern struct seedfw_stats seedfw_stats;
void milestone(unsigned id, uint64_t cycles);
void stats_add_read(uint32_t bytes);

#endif
