/*
 * Linker script for the seedfw payload, preprocessed with LOAD_ADDR and STACK_SIZE from the board.
 *
 * Every output section exports its run address range (__<name>_start/_end) and its load address
 * (__<name>_load, from LOADADDR()). Load == run address (the raw image is copied by BL2 to
 * LOAD_ADDR as is). With RODATA_ADDR (section compression) .rodata moves to a region of its own
 * and is not in the raw image: the early boot hook (sections.c) expands it there from the LZ4
 * container seedfw appends at __image_end.
 */
OUTPUT_FORMAT("elf64-littleaarch64")
OUTPUT_ARCH(aarch64)
ENTRY(_start)

SECTIONS
{
	. = LOAD_ADDR;
	__image_start = .;

	.text : {
		__text_start = .;
		KEEP(*(.text.boot))
		*(.text .text.*)
		. = ALIGN(16);
		__text_end = .;
	}
	__text_load = LOADADDR(.text);

#ifndef RODATA_ADDR
	.rodata : ALIGN(16) {
		__rodata_start = .;
		*(.rodata .rodata.*)
		. = ALIGN(16);
		__rodata_end = .;
	}
	__rodata_load = LOADADDR(.rodata);
#endif

	.data : ALIGN(16) {
		__data_start = .;
		*(.data .data.*)
		. = ALIGN(16);
		__data_end = .;
	}
	__data_load = LOADADDR(.data);
	__image_end = .;

#ifdef RODATA_ADDR
	/*
	 * Section compression: the raw image ends at __image_end and seedfw appends .rodata's LZ4
	 * container there (plus a stored dictionary, if it pays). .rodata runs in a region of its own
	 * at RODATA_ADDR, so the decoder never writes over the container it reads; .bss and the
	 * stack follow .rodata, so zeroing .bss before the expansion cannot touch the container
	 * either. [__image_end, __lz4_area_end) is the room for the container.
	 */
	__lz4_area_end = RODATA_ADDR;
	.rodata RODATA_ADDR : ALIGN(16) {
		__rodata_start = .;
		*(.rodata .rodata.*)
		. = ALIGN(16);
		__rodata_end = .;
	}
	__rodata_load = LOADADDR(.rodata);
#endif

	.bss (NOLOAD) : ALIGN(16) {
		__bss_start = .;
		*(.bss .bss.* COMMON)
		. = ALIGN(16);
		__bss_end = .;
	}

	.stack (NOLOAD) : ALIGN(16) {
		__stack_bottom = .;
		. += STACK_SIZE;
		__stack_top = .;
	}

	/DISCARD/ : { *(.comment) *(.note*) *(.eh_frame*) }
}
