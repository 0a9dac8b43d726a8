// SPDX-License-Identifier: MIT
/*
 * The floor for bench/counter_overhead.py: a QEMU TCG plugin that registers a translation hook
 * and an empty per-block callback, nothing per memory access. What it costs over plain -icount
 * is what any plugin that sees every executed block pays in QEMU 7.2 (the helper call per block
 * execution), so seedfw-traffic cannot get below it without giving up per-block phases.
 * Argument "none=1": register nothing at all (the cost of loading a plugin).
 */
#include <string.h>

#include <qemu/qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

static void block_exec(unsigned int vcpu, void *udata)
{
	(void)vcpu;
	(void)udata;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	(void)id;
	qemu_plugin_register_vcpu_tb_exec_cb(tb, block_exec, QEMU_PLUGIN_CB_NO_REGS, NULL);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
					   int argc, char **argv)
{
	(void)info;
	for (int i = 0; i < argc; i++)
		if (!strcmp(argv[i], "none=1"))
			return 0;
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	return 0;
}
