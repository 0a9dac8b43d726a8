/* PSCI through SMC #0 (SMCCC: function id in x0, arguments x1..x3, result in x0). */
#include <stdint.h>

#include "psci.h"

uint64_t psci_call(uint64_t fid, uint64_t a1, uint64_t a2, uint64_t a3)
{
	register uint64_t x0 __asm__("x0") = fid;
	register uint64_t x1 __asm__("x1") = a1;
	register uint64_t x2 __asm__("x2") = a2;
	register uint64_t x3 __asm__("x3") = a3;

	__asm__ volatile("smc #0"
			 : "+r"(x0), "+r"(x1), "+r"(x2), "+r"(x3)
			 :
			 : "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13",
			   "x14", "x15", "x16", "x17", "memory");
	return x0;
}

void psci_system_off(void)
{
	psci_call(PSCI_SYSTEM_OFF, 0, 0, 0);
	for (;;)        /* SYSTEM_OFF does not return; if firmware refuses, park the core */
		__asm__ volatile("wfi");
}
