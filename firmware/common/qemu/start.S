/* Bare-metal entry for the QEMU check of pkg_verify.c (tests/test_pkg_verify_c.py, slow). */
	.section .text.start, "ax"
	.global _start
_start:
	ldr	x0, =__stack_top
	mov	sp, x0
	bl	main
	b	qemu_exit		/* w0 = exit code */
