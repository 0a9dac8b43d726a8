/* printf-lite on top of uart_putc (see printf.h for what it understands). */
#include <stdarg.h>
#include <stdint.h>

#include "printf.h"
#include "uart.h"

struct spec {
	char pad;      /* ' ' or '0' */
	int width;
	int longs;     /* 0: int, 1: long, 2: long long (same width on AArch64) */
};

static int put_number(unsigned long long v, unsigned base, int upper, int negative,
		      const struct spec *sp)
{
	const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	char buf[24];
	int n = 0, out = 0;

	do {
		buf[n++] = digits[v % base];
		v /= base;
	} while (v);
	if (negative)
		buf[n++] = '-';
	for (int w = n; w < sp->width; w++, out++)
		uart_putc(sp->pad);
	while (n)
		uart_putc(buf[--n]), out++;
	return out;
}

int vprintf(const char *fmt, va_list ap)
{
	int out = 0;

	for (; *fmt; fmt++) {
		if (*fmt != '%') {
			uart_putc(*fmt);
			out++;
			continue;
		}
		struct spec sp = { .pad = ' ' };
		fmt++;
		if (*fmt == '0') {
			sp.pad = '0';
			fmt++;
		}
		while (*fmt >= '0' && *fmt <= '9')
			sp.width = sp.width * 10 + (*fmt++ - '0');
		while (*fmt == 'l' || *fmt == 'z') {
			sp.longs++;
			fmt++;
		}
		switch (*fmt) {
		case 'd':
		case 'i': {
			long long v = sp.longs ? va_arg(ap, long long) : va_arg(ap, int);
			unsigned long long mag = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
			out += put_number(mag, 10, 0, v < 0, &sp);
			break;
		}
		case 'u':
		case 'x':
		case 'X': {
			unsigned long long v = sp.longs ? va_arg(ap, unsigned long long)
						       : va_arg(ap, unsigned int);
			out += put_number(v, *fmt == 'u' ? 10 : 16, *fmt == 'X', 0, &sp);
			break;
		}
		case 'p':
			uart_puts("0x");
			sp.pad = '0';
			sp.width = 16;
			out += 2 + put_number((uintptr_t)va_arg(ap, void *), 16, 0, 0, &sp);
			break;
		case 's': {
			const char *s = va_arg(ap, const char *);
			for (s = s ? s : "(null)"; *s; s++, out++)
				uart_putc(*s);
			break;
		}
		case 'c':
			uart_putc((char)va_arg(ap, int));
			out++;
			break;
		case '%':
			uart_putc('%');
			out++;
			break;
		case '\0':
			return out;
		default:        /* unknown conversion: show it rather than guess */
			uart_putc('%');
			uart_putc(*fmt);
			out += 2;
		}
	}
	return out;
}

int printf(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vprintf(fmt, ap);
	va_end(ap);
	return n;
}
