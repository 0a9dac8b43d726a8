#ifndef SEEDFW_AGENT_MODELS_H
#define SEEDFW_AGENT_MODELS_H
#include <stdint.h>

/* The board's NPU, which every RKNN model must be compiled for (override with -D). */
#ifndef SEEDFW_NPU_TARGET
#define SEEDFW_NPU_TARGET "rk3588"
#endif

uint32_t agent_check_rknn(const char *name, const uint8_t *data, uint64_t size, const char *target);
uint32_t agent_check_models(const uint8_t *pkg, uint64_t size, const char *target);
#endif
