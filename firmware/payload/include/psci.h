/* PSCI calls to EL3 firmware (TF-A's BL31) through SMC, SMC Calling Convention function ids. */
#ifndef PAYLOAD_PSCI_H
#define PAYLOAD_PSCI_H

#include <stdint.h>

#define PSCI_VERSION      0x84000000u
#define PSCI_SYSTEM_OFF   0x84000008u

uint64_t psci_call(uint64_t fid, uint64_t a1, uint64_t a2, uint64_t a3);
void psci_system_off(void) __attribute__((noreturn));

#endif
