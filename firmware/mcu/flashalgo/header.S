/* First word of every CMSIS-style flash algo blob: pyOCD sets LR to blob start + 1, so an entry
 * point returns onto this BKPT and the debugger sees the core halt. */
	.syntax unified
	.thumb
	.section .text.header, "ax"
	.global algo_return
algo_return:
	bkpt #0
	b .
