/*
 * Runs the boot-package verifier exactly as the payload will: the package sits at
 * PKG_ADDR (QEMU `-device loader,file=pkg.bin,addr=PKG_ADDR`), lines go to the PL011 UART, and
 * the exit code (semihosting SYS_EXIT, so QEMU's own exit status) is the verifier's error count.
 * MMU off: everything is Device memory, hence -mstrict-align for all of firmware/common.
 */
#include <stdint.h>

#include "pkg_verify.h"
#include "sha256.h"

#ifndef PKG_ADDR
#define PKG_ADDR 0x60400000UL
#endif
#ifndef PKG_MAX
#define PKG_MAX 0x00400000UL
#endif
#define PL011_DR 0x09000000UL

static void uart_putc(int c)
{
	volatile uint32_t *dr = (volatile uint32_t *)PL011_DR;
	if (c == '\n')
		*dr = '\r';
	*dr = (uint32_t)c;
}

void qemu_exit(uint32_t code)
{
	/* ADP_Stopped_ApplicationExit with a subcode: QEMU exits with that status. */
	volatile uint64_t block[2] = { 0x20026, code };
	register uint64_t x0 __asm__("x0") = 0x18;  /* SYS_EXIT */
	register uint64_t x1 __asm__("x1") = (uint64_t)block;
	__asm__ volatile("hlt #0xf000" : : "r"(x0), "r"(x1) : "memory");
	for (;;)
		;
}

#ifdef HASH_ONLY
/* sha256 of the bytes at PKG_ADDR + 64, their count a little-endian u64 at PKG_ADDR: prints
 * "<impl> <hex digest>" (tests check it against hashlib; bench/pkg_verify_speed.py counts the
 * instructions it takes). */
int main(void)
{
	static const char hex[] = "0123456789abcdef";
	const volatile uint64_t *len = (const volatile uint64_t *)PKG_ADDR;
	uint8_t d[32];

	seedfw_sha256((const void *)(PKG_ADDR + 64), (size_t)*len, d);
	for (const char *p = seedfw_sha256_impl; *p; p++)
		uart_putc(*p);
	uart_putc(' ');
	for (int i = 0; i < 32; i++) {
		uart_putc(hex[d[i] >> 4]);
		uart_putc(hex[d[i] & 15]);
	}
	uart_putc('\n');
	return 0;
}
#else
int main(void)
{
	return (int)seedfw_pkg_verify((const void *)PKG_ADDR, PKG_MAX, 0, uart_putc);
}
#endif
