/*
 * Early section handling. Runs before main() (see start.S).
 *
 * Today every section is stored uncompressed at its run address, so there is nothing to do except
 * copy .data if the linker ever gives it a load address different from its run address. Section
 * decompression plugs in here: it reads the container at __<name>_load and expands it to
 * __<name>_start .. __<name>_end.
 */
#include <stddef.h>

#include "sections.h"

static void copy_section(char *dst, const char *src, const char *dst_end)
{
	if (dst == src)
		return;
	while (dst < dst_end)
		*dst++ = *src++;
}

void sections_early_init(void)
{
	copy_section(__data_start, __data_load, __data_end);
}
