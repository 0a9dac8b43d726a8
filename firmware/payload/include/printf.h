/*
 * printf-lite: %s %c %d %i %u %x %X %p %% with optional '0' flag, width and 'l'/'ll'/'z' length.
 * No floating point (the payload is built with -mgeneral-regs-only).
 */
#ifndef PAYLOAD_PRINTF_H
#define PAYLOAD_PRINTF_H

#include <stdarg.h>

int printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int vprintf(const char *fmt, va_list ap);

#endif
