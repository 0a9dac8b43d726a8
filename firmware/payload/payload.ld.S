/*
 * Linker script for the seedfw payload, preprocessed with LOAD_ADDR and STACK_SIZE from the board.
 *
 * Every output section exports its run address range (__<name>_start/_end) and its load address
 * (__<name>_load, from LOADADDR()). Today load == run address (the raw image is copied by BL2 to
 * LOAD_ADDR as is); the symbols exist so the early boot hook (sections.c) can expand sections that
 * are stored compressed at a different load address without any change to start.S.
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

	.rodata : ALIGN(16) {
		__rodata_start = .;
		*(.rodata .rodata.*)
		. = ALIGN(16);
		__rodata_end = .;
	}
	__rodata_load = LOADADDR(.rodata);

	.data : ALIGN(16) {
		__data_start = .;
		*(.data .data.*)
		. = ALIGN(16);
		__data_end = .;
	}
	__data_load = LOADADDR(.data);
	__image_end = .;

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
