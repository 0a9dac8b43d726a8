/* Flash algorithm for the RAM-backed "flash" of QEMU mps2-an385, run on the emulated CPU by pyOCD.
 *
 * mps2-an385 has no flash controller: the board's flash region (0x0-0x40000, 4 KiB sectors) is SSRAM
 * in QEMU. Programming it through an algorithm anyway keeps the flashing path identical to real
 * silicon (pyOCD loads the blob, calls the entry points with the CMSIS flash-algo calling convention:
 * arguments in r0-r2, result in r0 (0 = success), return to a BKPT at the blob's start via LR).
 *
 * Position independent by construction: no globals, no literal addresses of code or data (the build
 * links the blob at two addresses and checks the bytes are identical).
 * BROKEN_PROGRAM builds the negative control: ProgramPage reports success and writes nothing.
 * FLIP_AT=<address> builds the subtler one (tests only, not in `all`): every byte lands except the
 * one at that address, which is written with its lowest bit flipped.
 */
#include <stdint.h>

#define FLASH_BASE   0x00000000u
#define FLASH_SIZE   0x00040000u
#define SECTOR_SIZE  0x00008000u /* = page size; why 32 KiB: targets/mps2_an385.py */
#define ERASED_WORD  0xFFFFFFFFu

/* Entry points keep the CMSIS names so the symbol table maps them to pyOCD's pc_* keys. */
int Init(uint32_t adr, uint32_t clk, uint32_t fnc);
int UnInit(uint32_t fnc);
int EraseChip(void);
int EraseSector(uint32_t adr);
int ProgramPage(uint32_t adr, uint32_t sz, const uint8_t *buf);

static int in_flash(uint32_t adr, uint32_t len)
{
	/* FLASH_BASE is 0, so only the upper bound needs checking (written overflow-safe). */
	return len <= FLASH_SIZE && adr - FLASH_BASE <= FLASH_SIZE - len;
}

static void fill_erased(uint32_t adr, uint32_t len)
{
	volatile uint32_t *p = (volatile uint32_t *)adr;
	for (uint32_t i = 0; i < len / 4u; i++)
		p[i] = ERASED_WORD;
}

int Init(uint32_t adr, uint32_t clk, uint32_t fnc)
{
	(void)adr; (void)clk; (void)fnc;
	return 0; /* nothing to clock or unlock on SSRAM */
}

int UnInit(uint32_t fnc)
{
	(void)fnc;
	return 0;
}

int EraseChip(void)
{
	fill_erased(FLASH_BASE, FLASH_SIZE);
	return 0;
}

int EraseSector(uint32_t adr)
{
	adr &= ~(SECTOR_SIZE - 1u);
	if (!in_flash(adr, SECTOR_SIZE))
		return 1;
	fill_erased(adr, SECTOR_SIZE);
	return 0;
}

int ProgramPage(uint32_t adr, uint32_t sz, const uint8_t *buf)
{
	if (!in_flash(adr, sz))
		return 1;
#ifdef BROKEN_PROGRAM
	(void)buf;
#else
	volatile uint8_t *dst = (volatile uint8_t *)adr;
	uint32_t i = 0;
	/* Word stores when everything is aligned (pyOCD's page buffers and pages always are): a quarter
	 * of the emulated instructions of a byte loop, ~1 ms less per 32 KiB page in QEMU (issue 33). */
	if (((adr | (uint32_t)buf | sz) & 3u) == 0) {
		volatile uint32_t *dw = (volatile uint32_t *)adr;
		const uint32_t *sw = (const uint32_t *)buf;
		for (; i < sz / 4u; i++)
			dw[i] = sw[i];
		i *= 4u;
	}
	for (; i < sz; i++)
		dst[i] = buf[i];
#ifdef FLIP_AT
	if (FLIP_AT - adr < sz)
		dst[FLIP_AT - adr] ^= 1u;
#endif
#endif
	return 0;
}
