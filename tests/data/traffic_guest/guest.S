/*
 * A guest with known data traffic for the QEMU traffic plugin's test (QEMU virt, secure=off,
 * -bios: it runs from flash at 0, at EL1). It reads DRAM_BYTES from DRAM with 8-byte loads,
 * FLASH_BYTES from flash with 1-byte loads, writes STORE_BYTES to DRAM with 4-byte stores,
 * then asks QEMU's PSCI for SYSTEM_OFF. Constants are built with movz/movk, never loaded from
 * a literal pool, and no stack is used: the loops are the only data accesses.
 */
	.text
	.global _start
_start:
	movz	x1, #0x4000, lsl #16		/* DRAM base 0x40000000 */
	movz	x2, #(DRAM_BYTES / 8) & 0xffff
	movk	x2, #(DRAM_BYTES / 8) >> 16, lsl #16
1:	ldr	x3, [x1], #8
	subs	x2, x2, #1
	b.ne	1b

	movz	x1, #0x1000			/* in flash, past this code */
	movz	x2, #FLASH_BYTES
2:	ldrb	w3, [x1], #1
	subs	x2, x2, #1
	b.ne	2b

	movz	x1, #0x4010, lsl #16		/* DRAM 0x40100000 */
	movz	x2, #(STORE_BYTES / 4)
3:	str	w2, [x1], #4
	subs	x2, x2, #1
	b.ne	3b

	movz	x0, #0x0008
	movk	x0, #0x8400, lsl #16		/* PSCI SYSTEM_OFF */
	hvc	#0
4:	b	4b
