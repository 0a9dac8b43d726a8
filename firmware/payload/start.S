/*
 * Entry point. BL31 enters here at EL2 or EL1 (MMU and caches off) with x0..x3 from BL2.
 * The order matters: stack first, then a zeroed .bss, then the section hook (which may expand
 * compressed .rodata/.data before anything reads them), then main, then power off.
 */
	.section .text.boot, "ax"
	.global _start
	.type _start, %function
_start:
#ifdef PAYLOAD_FP_SIMD
	/* The SHA2 build of sha256.c uses SIMD registers: no FP/SIMD trap at EL1 (CPACR_EL1.FPEN
	 * = 0b11) and, entered at EL2, none to EL2 either (CPTR_EL2.TFP = 0). */
	mrs	x9, CurrentEL
	cmp	x9, #(2 << 2)
	b.ne	4f
	mrs	x9, cptr_el2
	bic	x9, x9, #(1 << 10)
	msr	cptr_el2, x9
4:	mrs	x9, cpacr_el1
	orr	x9, x9, #(3 << 20)
	msr	cpacr_el1, x9
	isb
#endif
	ldr	x9, =__stack_top
	mov	sp, x9

	/* zero .bss (16-byte aligned by the linker script) */
	ldr	x9, =__bss_start
	ldr	x10, =__bss_end
1:	cmp	x9, x10
	b.hs	2f
	stp	xzr, xzr, [x9], #16
	b	1b
2:
	bl	sections_early_init
	bl	main
	/* main's return value is ignored: PSCI SYSTEM_OFF has no status; it does not return */
	bl	psci_system_off
3:	wfi
	b	3b
	.size _start, . - _start
