/* The payload's main: say who we are, then power the machine off through PSCI. */
#include <stdint.h>

#include "build_info.h"
#include "printf.h"
#include "psci.h"
#include "uart.h"

int main(void)
{
	uart_init();
	/* The banner is a contract: tests and `invoke run` look for this exact line. */
	printf("seedfw payload %s build %s on %s\n", SEEDFW_VERSION, SEEDFW_BUILD_ID, SEEDFW_BOARD);
	uint64_t v = psci_call(PSCI_VERSION, 0, 0, 0);
	printf("psci %u.%u, powering off\n", (unsigned)(v >> 16) & 0xffffu, (unsigned)v & 0xffffu);
	return 0;
}
