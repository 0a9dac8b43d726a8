# seedfw boot counting for RAUC A/B slots (docs/updates.md; env: seedfw.update.env.default_env).
#
# Reads and writes what RAUC's uboot backend uses: BOOT_ORDER ("B A": try B first) and
# BOOT_A_LEFT / BOOT_B_LEFT (attempts left). Runs before the kernel: picks the first slot of
# BOOT_ORDER with attempts left, counts one attempt down, saves the environment, then adds
# root=PARTUUID=<slot> rauc.slot=<slot> to bootargs. `rauc status mark-good` (called by the
# agent's init script only after its checks pass) sets the slot's counter back to full.
#
# The power-cut rule (rauc/rauc#490, br2rauc#5): a slot that was marked good is never counted
# down again. seedfw_good names it (the agent's init script sets it right after mark-good), so a
# cut while booting a confirmed slot costs nothing, however often it happens. Only a slot on
# trial (installed, not yet confirmed) spends attempts: N cuts in a row before its mark-good make
# it fall back, exactly as N failed boots do. And if no slot has attempts left (every slot spent
# its attempts, e.g. the env was lost), the counters are reset rather than bricking the device.
#
# Variables from the default env: seedfw_attempts, seedfw_root_A, seedfw_root_B (PARTUUIDs).
# seedfw_bootcount_dry=1 stops after the decision (for tests: prints it, boots nothing).

test -n "${BOOT_ORDER}" || setenv BOOT_ORDER "A B"
test -n "${seedfw_attempts}" || setenv seedfw_attempts 3
test -n "${BOOT_A_LEFT}" || setenv BOOT_A_LEFT ${seedfw_attempts}
test -n "${BOOT_B_LEFT}" || setenv BOOT_B_LEFT ${seedfw_attempts}
setenv seedfw_slot
setenv seedfw_spent 0
for s in ${BOOT_ORDER}; do
	if test -z "${seedfw_slot}"; then
		if test "${s}" = A && test ${BOOT_A_LEFT} -gt 0; then
			setenv seedfw_slot A
			if test "${seedfw_good}" != A; then setexpr BOOT_A_LEFT ${BOOT_A_LEFT} - 1; setenv seedfw_spent 1; fi
		fi
		if test "${s}" = B && test ${BOOT_B_LEFT} -gt 0; then
			setenv seedfw_slot B
			if test "${seedfw_good}" != B; then setexpr BOOT_B_LEFT ${BOOT_B_LEFT} - 1; setenv seedfw_spent 1; fi
		fi
	fi
done
if test -z "${seedfw_slot}"; then
	echo "seedfw: bootcount: no slot has attempts left; counters reset to ${seedfw_attempts}"
	setenv BOOT_A_LEFT ${seedfw_attempts}
	setenv BOOT_B_LEFT ${seedfw_attempts}
	setenv seedfw_slot A
	setenv seedfw_spent 1
	if test -n "${seedfw_good}"; then setenv seedfw_slot ${seedfw_good}; fi
fi
if test ${seedfw_slot} = A; then setenv seedfw_root ${seedfw_root_A}; else setenv seedfw_root ${seedfw_root_B}; fi
echo "seedfw: bootcount: slot ${seedfw_slot} (order ${BOOT_ORDER}, A ${BOOT_A_LEFT} left, B ${BOOT_B_LEFT} left, good ${seedfw_good}, spent ${seedfw_spent})"
# Saved before the kernel starts: a cut from here on has already paid for this attempt.
setenv seedfw_slot_args "root=PARTUUID=${seedfw_root} rauc.slot=${seedfw_slot}"
if test "${seedfw_bootcount_dry}" = 1; then
	if test "${seedfw_spent}" = 1; then echo "seedfw: bootcount: saveenv (dry run: not written)"; fi
	echo "seedfw: bootcount: dry run, not booting"
else
	if test "${seedfw_spent}" = 1; then saveenv; fi
	setenv bootargs "${bootargs} ${seedfw_slot_args}"
fi
