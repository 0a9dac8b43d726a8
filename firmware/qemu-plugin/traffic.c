// SPDX-License-Identifier: MIT
/*
 * seedfw-traffic: a QEMU TCG plugin that counts the guest CPUs' data loads and stores (count and
 * bytes) and executed instructions, per memory region of the board and per boot phase, and writes
 * them as JSON when QEMU exits. Instruction fetches are not memory callbacks in TCG, so only data
 * accesses are counted (a load of 16 bytes that QEMU splits into two 8-byte accesses counts as
 * two loads, 16 bytes). Device DMA is invisible here: seedfw counts it from QEMU's trace events.
 *
 * Arguments (QEMU splits them at commas, so fields are separated by ':'; numbers in C syntax):
 *   out=FILE                       where the JSON goes (written to FILE.tmp, then renamed)
 *   region=NAME:KIND:BASE:SIZE     one region of the board's memory map (first match wins)
 *   phase=NAME:START:END[:pa]      a boot phase: the PC range [START, END) of its code; "pa":
 *                                  classify its accesses by physical address (else by virtual)
 *   reloc=NAME:FROM:LANDING        phase NAME is FROM's code copied elsewhere (U-Boot after
 *                                  relocation): its range is FROM's, shifted by the offset of the
 *                                  first PC outside every known range reached while in FROM,
 *                                  minus LANDING (the runtime address in FROM where that jump
 *                                  lands, e.g. U-Boot's relocation_return)
 *   exclude=PHASE:START:END        PCs inside PHASE (runtime addresses of FROM for a relocated
 *                                  phase) whose counts go to the phase's "excluded" bucket
 *   stop=ADDR                      once a block at ADDR runs (the power-off request) counting
 *                                  goes to "after_stop": the tail before QEMU exits varies
 *
 * Phase of a block: among the phases whose range holds its PC, those not beyond the next phase
 * in sequence (index <= reached + 1) are candidates, and the smallest range wins. U-Boot before
 * relocation and the payload share addresses (the payload is loaded over the old U-Boot), and
 * BL31 stays resident under everything; this rule puts each block where the boot order says.
 * When no phase is a candidate, a relocated copy of the current phase is looked for first, then
 * the smallest matching range wins (a phase that did not run, like the payload in an OS boot,
 * does not block the next one).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu/qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define MAX_REGIONS 16
#define MAX_PHASES 24
#define MAX_EXCLUDES 16
#define MAX_VCPUS 16
#define NAME_LEN 48
/* buckets: one per phase, then "other" (no phase), then "after_stop" */
#define OTHER (MAX_PHASES)
#define AFTER_STOP (MAX_PHASES + 1)
#define BUCKETS (MAX_PHASES + 2)
/* access targets: one per region, then "unmapped" */
#define UNMAPPED (MAX_REGIONS)
#define TARGETS (MAX_REGIONS + 1)

struct region {
	char name[NAME_LEN], kind[NAME_LEN];
	uint64_t base, size;
};

struct phase {
	char name[NAME_LEN];
	uint64_t start, end;
	bool pa;	/* classify accesses by physical address */
	int from;	/* relocated copy of this phase, or -1 */
	uint64_t landing;
	bool known;	/* range known (a relocated phase learns it at run time) */
	bool entered;
	uint64_t offset;	/* relocation offset, once learned */
};

struct exclude {
	int phase;
	uint64_t start, end;
};

struct access {
	uint64_t loads, load_bytes, stores, store_bytes;
};

struct bucket {
	uint64_t insns, blocks;
	struct access to[TARGETS];
	uint64_t x_insns;	/* the excluded part */
	struct access x_to[TARGETS];
};

struct block {
	uint64_t vaddr;
	uint64_t n_insns;
	/* The classification of this block, valid while `epoch` equals the global one: a block's
	 * phase depends only on `reached` and on which ranges are known, and both change a handful
	 * of times per boot, so the phase search runs once per block and epoch, not per execution. */
	uint64_t epoch;
	int phase;
	bool excluded;
};

static struct region regions[MAX_REGIONS];
static int n_regions;
static struct phase phases[MAX_PHASES];
static int n_phases;
static struct exclude excludes[MAX_EXCLUDES];
static int n_excludes;
static char out_path[4096];
static uint64_t stop_addr;
static bool have_stop;

/* current state per vCPU; counters per vCPU, summed at exit (no atomics on the hot path) */
static int cur_bucket[MAX_VCPUS];
static bool cur_excluded[MAX_VCPUS];
static int reached = -1;
static bool stopped;
/* Bumped whenever `reached` grows or a relocated range is learned (see struct block); starts at
 * 1 so a fresh block (epoch 0) is never taken for classified. */
static uint64_t epoch = 1;
/* Relocated phases whose range is not learned yet: while any is, a block that no candidate
 * claims may still be claimed by learn_relocation, which depends on the vCPU's current phase,
 * so such a result is not cached. */
static int unknown_relocs;
/* Whether regions overlap: only when none do can a vCPU's last hit be tried first (first match
 * wins otherwise). */
static bool regions_disjoint;
static int last_target[MAX_VCPUS];
static struct bucket counts[MAX_VCPUS][BUCKETS];

static bool parse_u64(const char *s, uint64_t *out)
{
	char *end;

	if (!*s)
		return false;
	*out = strtoull(s, &end, 0);
	return *end == '\0';
}

/* Split `s` at ':' into at most `max` fields (in place); returns the count. */
static int split(char *s, char **fields, int max)
{
	int n = 0;

	fields[n++] = s;
	for (char *p = s; *p && n < max; p++) {
		if (*p == ':') {
			*p = '\0';
			fields[n++] = p + 1;
		}
	}
	return n;
}

static int phase_index(const char *name)
{
	for (int i = 0; i < n_phases; i++)
		if (!strcmp(phases[i].name, name))
			return i;
	return -1;
}

static bool copy_name(char *dst, const char *src)
{
	if (strlen(src) >= NAME_LEN || !*src)
		return false;
	strcpy(dst, src);
	return true;
}

static bool parse_arg(char *arg)
{
	char *f[6];
	char *eq = strchr(arg, '=');
	int n;

	if (!eq)
		return false;
	*eq = '\0';
	char *key = arg, *val = eq + 1;

	if (!strcmp(key, "out")) {
		if (strlen(val) >= sizeof(out_path) - 8)
			return false;
		strcpy(out_path, val);
		return true;
	}
	if (!strcmp(key, "stop")) {
		have_stop = true;
		return parse_u64(val, &stop_addr);
	}
	n = split(val, f, 6);
	if (!strcmp(key, "region")) {
		struct region *r = &regions[n_regions];

		if (n != 4 || n_regions >= MAX_REGIONS)
			return false;
		if (!copy_name(r->name, f[0]) || !copy_name(r->kind, f[1]) ||
		    !parse_u64(f[2], &r->base) || !parse_u64(f[3], &r->size))
			return false;
		n_regions++;
		return true;
	}
	if (!strcmp(key, "phase")) {
		struct phase *p = &phases[n_phases];

		if ((n != 3 && n != 4) || n_phases >= MAX_PHASES || phase_index(f[0]) >= 0)
			return false;
		if (!copy_name(p->name, f[0]) || !parse_u64(f[1], &p->start) ||
		    !parse_u64(f[2], &p->end) || p->end <= p->start)
			return false;
		if (n == 4 && strcmp(f[3], "pa"))
			return false;
		p->pa = n == 4;
		p->from = -1;
		p->known = true;
		n_phases++;
		return true;
	}
	if (!strcmp(key, "reloc")) {
		struct phase *p = &phases[n_phases];

		if (n != 3 || n_phases >= MAX_PHASES || phase_index(f[0]) >= 0)
			return false;
		if (!copy_name(p->name, f[0]) || (p->from = phase_index(f[1])) < 0 ||
		    !parse_u64(f[2], &p->landing))
			return false;
		p->pa = phases[p->from].pa;
		unknown_relocs++;
		n_phases++;
		return true;
	}
	if (!strcmp(key, "exclude")) {
		struct exclude *x = &excludes[n_excludes];

		if (n != 3 || n_excludes >= MAX_EXCLUDES)
			return false;
		if ((x->phase = phase_index(f[0])) < 0 || !parse_u64(f[1], &x->start) ||
		    !parse_u64(f[2], &x->end) || x->end <= x->start)
			return false;
		n_excludes++;
		return true;
	}
	return false;
}

static bool in_range(const struct phase *p, uint64_t pc)
{
	return p->known && pc >= p->start && pc < p->end;
}

/* The phase of a block starting at `pc` among the candidates (see the rule at the top), or -1;
 * `*any` gets the smallest matching range of all, candidate or not (-1: none). */
static int phase_of(uint64_t pc, int *any)
{
	int best = -1;

	*any = -1;
	for (int i = 0; i < n_phases; i++) {
		const struct phase *p = &phases[i];

		if (!in_range(p, pc))
			continue;
		if (*any < 0 || p->end - p->start < phases[*any].end - phases[*any].start)
			*any = i;
		if (i <= reached + 1 &&
		    (best < 0 || p->end - p->start < phases[best].end - phases[best].start))
			best = i;
	}
	return best;
}

/* A block outside every known range while in phase `cur`: the first block of cur's relocated
 * copy if one is declared and not known yet. Relocation moves by whole pages (U-Boot: 64 KiB on
 * arm64), so a jump whose offset is not page-aligned is not taken for it. */
static int learn_relocation(int cur, uint64_t pc)
{
	for (int i = 0; i < n_phases; i++) {
		struct phase *p = &phases[i];

		if (p->from != cur || p->known)
			continue;
		uint64_t off = pc - p->landing;

		if (off & 0xfff)
			continue;
		p->offset = off;
		p->start = phases[cur].start + off;
		p->end = phases[cur].end + off;
		p->known = true;
		unknown_relocs--;
		epoch++;
		return i;
	}
	return -1;
}

static bool excluded(int phase, uint64_t pc)
{
	for (int i = 0; i < n_excludes; i++) {
		const struct exclude *x = &excludes[i];
		uint64_t off = 0;
		int owner = x->phase;

		if (phases[phase].from == owner)
			off = phases[phase].offset;	/* the source's exclusions, moved along */
		else if (owner != phase)
			continue;
		if (pc >= x->start + off && pc < x->end + off)
			return true;
	}
	return false;
}

/* The phase of a block and whether it is excluded, by the rule at the top (the slow path). */
static int classify(int prev, uint64_t pc, bool *excl, bool *cacheable)
{
	int any;
	int ph = phase_of(pc, &any);

	*cacheable = ph >= 0 || unknown_relocs == 0;
	/* A relocated copy is learned before a later phase's wide range (user space) may claim
	 * the block; only then does a phase that is not next in sequence win. */
	if (ph < 0 && prev < n_phases)
		ph = learn_relocation(prev, pc);
	if (ph < 0)
		ph = any;
	if (ph >= 0) {
		phases[ph].entered = true;
		if (ph > reached) {
			reached = ph;
			epoch++;
		}
	}
	*excl = ph >= 0 && excluded(ph, pc);
	return ph >= 0 ? ph : OTHER;
}

static void block_exec(unsigned int vcpu, void *udata)
{
	struct block *b = udata;
	int v = vcpu % MAX_VCPUS;

	if (have_stop && b->vaddr == stop_addr)
		stopped = true;
	if (stopped) {
		cur_bucket[v] = AFTER_STOP;
		cur_excluded[v] = false;
	} else if (b->epoch == epoch) {
		cur_bucket[v] = b->phase;
		cur_excluded[v] = b->excluded;
	} else {
		bool excl, cacheable;
		int ph = classify(cur_bucket[v], b->vaddr, &excl, &cacheable);

		cur_bucket[v] = ph;
		cur_excluded[v] = excl;
		/* Cached under the epoch after classify: if it moved the epoch, the result already
		 * reflects the new state. */
		if (cacheable) {
			b->phase = ph;
			b->excluded = excl;
			b->epoch = epoch;
		}
	}
	struct bucket *bk = &counts[v][cur_bucket[v]];

	if (cur_excluded[v])
		bk->x_insns += b->n_insns;
	else
		bk->insns += b->n_insns;
	bk->blocks++;
}

static int target_of(int v, uint64_t addr)
{
	int last = last_target[v];

	/* Most accesses hit the region the previous one did (code runs from one place, its data
	 * and stack sit in one DRAM range); with disjoint regions that hit is the first match. */
	if (regions_disjoint && last < n_regions && addr - regions[last].base < regions[last].size &&
	    addr >= regions[last].base)
		return last;
	for (int i = 0; i < n_regions; i++)
		if (addr >= regions[i].base && addr - regions[i].base < regions[i].size)
			return last_target[v] = i;
	return UNMAPPED;
}

static void mem_access(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr,
		       void *udata)
{
	int v = vcpu % MAX_VCPUS;
	int b = cur_bucket[v];
	uint64_t addr = vaddr;
	(void)udata;

	/*
	 * Which address to classify. QEMU 7.2's qemu_plugin_hwaddr_phys_addr() returns, for RAM,
	 * the RAMBlock's offset in QEMU's ram_addr space plus the region's guest address (fixed
	 * upstream in 2023): only the first RAM block (mach-virt.ram, ram_addr offset 0) comes out
	 * right, flash0/flash1/secure RAM come out shifted by the RAM size before them and land in
	 * DRAM's range — so the error cannot be undone from the value alone. Firmware phases run
	 * with the MMU off or an identity map (TF-A, U-Boot, the payload on QEMU virt), so for them
	 * the virtual address *is* the physical one and is used. Phases marked "pa" (Linux, user
	 * space) use the physical address: there only DRAM (right, offset 0) and MMIO (I/O
	 * addresses are computed from the memory section, also right) are reachable.
	 */
	if (b < n_phases && phases[b].pa) {
		struct qemu_plugin_hwaddr *hw = qemu_plugin_get_hwaddr(info, vaddr);

		addr = hw ? qemu_plugin_hwaddr_phys_addr(hw) : UINT64_MAX;
	}
	struct bucket *bk = &counts[v][b];
	int t = target_of(v, addr);
	struct access *a = cur_excluded[v] ? &bk->x_to[t] : &bk->to[t];
	uint64_t size = 1ull << qemu_plugin_mem_size_shift(info);

	if (qemu_plugin_mem_is_store(info)) {
		a->stores++;
		a->store_bytes += size;
	} else {
		a->loads++;
		a->load_bytes += size;
	}
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);
	/* One small record per translation; QEMU keeps the pointer for the block's lifetime and
	 * offers no free hook, so a retranslated block leaks 40 bytes (bounded by the boot). */
	struct block *b = malloc(sizeof(*b));
	(void)id;

	if (!b)
		abort();
	b->vaddr = qemu_plugin_tb_vaddr(tb);
	b->n_insns = n;
	b->epoch = 0;
	qemu_plugin_register_vcpu_tb_exec_cb(tb, block_exec, QEMU_PLUGIN_CB_NO_REGS, b);
	for (size_t i = 0; i < n; i++)
		qemu_plugin_register_vcpu_mem_cb(qemu_plugin_tb_get_insn(tb, i), mem_access,
						 QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, NULL);
}

static void json_access(FILE *f, const struct access *a)
{
	fprintf(f, "{\"loads\": %" PRIu64 ", \"load_bytes\": %" PRIu64 ", \"stores\": %" PRIu64
		", \"store_bytes\": %" PRIu64 "}", a->loads, a->load_bytes, a->stores, a->store_bytes);
}

static void json_targets(FILE *f, const struct access *to)
{
	fputc('{', f);
	for (int t = 0; t <= n_regions; t++) {
		int i = t < n_regions ? t : UNMAPPED;

		fprintf(f, "%s\"%s\": ", t ? ", " : "", t < n_regions ? regions[t].name : "unmapped");
		json_access(f, &to[i]);
	}
	fputc('}', f);
}

static void json_bucket(FILE *f, int b)
{
	struct bucket sum;

	memset(&sum, 0, sizeof(sum));
	for (int v = 0; v < MAX_VCPUS; v++) {
		const struct bucket *c = &counts[v][b];

		sum.insns += c->insns;
		sum.blocks += c->blocks;
		sum.x_insns += c->x_insns;
		for (int t = 0; t < TARGETS; t++) {
			struct access *s = &sum.to[t], *x = &sum.x_to[t];

			s->loads += c->to[t].loads;
			s->load_bytes += c->to[t].load_bytes;
			s->stores += c->to[t].stores;
			s->store_bytes += c->to[t].store_bytes;
			x->loads += c->x_to[t].loads;
			x->load_bytes += c->x_to[t].load_bytes;
			x->stores += c->x_to[t].stores;
			x->store_bytes += c->x_to[t].store_bytes;
		}
	}
	fprintf(f, "\"insns\": %" PRIu64 ", \"blocks\": %" PRIu64 ", \"regions\": ", sum.insns,
		sum.blocks);
	json_targets(f, sum.to);
	fprintf(f, ", \"excluded\": {\"insns\": %" PRIu64 ", \"regions\": ", sum.x_insns);
	json_targets(f, sum.x_to);
	fputc('}', f);
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
	char tmp[sizeof(out_path) + 8];
	FILE *f;
	(void)id;
	(void)p;

	snprintf(tmp, sizeof(tmp), "%s.tmp", out_path);
	f = fopen(tmp, "w");
	if (!f) {
		qemu_plugin_outs("seedfw-traffic: cannot write the output file\n");
		return;
	}
	fprintf(f, "{\"plugin\": \"seedfw-traffic\", \"format\": 1, \"api\": %d, \"stopped\": %s,\n",
		QEMU_PLUGIN_VERSION, stopped ? "true" : "false");
	fputs(" \"regions\": [", f);
	for (int i = 0; i < n_regions; i++)
		fprintf(f, "%s{\"name\": \"%s\", \"kind\": \"%s\", \"base\": %" PRIu64
			", \"size\": %" PRIu64 "}", i ? ", " : "", regions[i].name, regions[i].kind,
			regions[i].base, regions[i].size);
	fputs("],\n \"phases\": [\n", f);
	for (int i = 0; i < n_phases; i++) {
		const struct phase *ph = &phases[i];

		fprintf(f, "  {\"name\": \"%s\", \"entered\": %s, \"by\": \"%s\"", ph->name,
			ph->entered ? "true" : "false", ph->pa ? "physical" : "virtual");
		if (ph->known)
			fprintf(f, ", \"start\": %" PRIu64 ", \"end\": %" PRIu64, ph->start, ph->end);
		if (ph->from >= 0)
			fprintf(f, ", \"relocated_from\": \"%s\", \"offset\": %s%" PRIu64,
				phases[ph->from].name, ph->known ? "" : "null", ph->known ? ph->offset : 0);
		fputs(", ", f);
		json_bucket(f, i);
		fprintf(f, "}%s\n", i + 1 < n_phases ? "," : "");
	}
	fputs(" ],\n \"other\": {", f);
	json_bucket(f, OTHER);
	fputs("},\n \"after_stop\": {", f);
	json_bucket(f, AFTER_STOP);
	fputs("}\n}\n", f);
	if (fclose(f) != 0 || rename(tmp, out_path) != 0)
		qemu_plugin_outs("seedfw-traffic: cannot write the output file\n");
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
					   int argc, char **argv)
{
	(void)info;
	for (int i = 0; i < argc; i++) {
		char copy[4200];

		/* parse_arg splits in place: keep the argument as given for the message */
		snprintf(copy, sizeof(copy), "%s", argv[i]);
		if (!parse_arg(copy)) {
			fprintf(stderr, "seedfw-traffic: bad argument '%s'\n", argv[i]);
			return -1;
		}
	}
	if (!out_path[0]) {
		fprintf(stderr, "seedfw-traffic: no out=FILE argument\n");
		return -1;
	}
	for (int v = 0; v < MAX_VCPUS; v++)
		cur_bucket[v] = OTHER;
	regions_disjoint = true;
	for (int i = 0; i < n_regions; i++)
		for (int j = i + 1; j < n_regions; j++)
			if (regions[i].base < regions[j].base + regions[j].size &&
			    regions[j].base < regions[i].base + regions[i].size)
				regions_disjoint = false;
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
