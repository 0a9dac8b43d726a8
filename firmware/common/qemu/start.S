/* Bare-metal entry for the QEMU check of pkg_verify.c (tests/test_pkg_verify_c.py, slow). */
	.section .text.start, "ax"
	.global _start
_start:
	/* FP/SIMD on (CPACR_EL1.FPEN = 0b11; QEMU resets it to trap): the SHA2 build of sha256.c
	 * uses SIMD registers. At EL1, where QEMU's -kernel starts a bare ELF on virt. */
	mrs	x0, cpacr_el1
	orr	x0, x0, #(3 << 20)
	msr	cpacr_el1, x0
	isb
	ldr	x0, =__stack_top
	mov	sp, x0
	bl	main
	b	qemu_exit		/* w0 = exit code */
