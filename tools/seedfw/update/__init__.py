"""Field updates with RAUC: A/B root slots, signed bundles, U-Boot boot counting (issue 29).

The target runs RAUC from the pinned Buildroot; the host signs bundles with Debian's rauc. seedfw
owns what joins the two, each in one module:

  slots.py    the slot plan (rootfs.0/rootfs.1 by PARTUUID, data, where U-Boot keeps its
              environment) → /etc/rauc/system.conf and /etc/fw_env.config, rendered as text
  env.py      U-Boot environment images: the default env written into the disk (valid CRC, so a
              good boot never prints "bad CRC") and a bounded reader `invoke inspect` uses
  keys.py     the development CA and signing key of this checkout, made on first use under the
              seedfw cache (never in the tree, an output or a log)
  hosttool.py Debian bookworm's rauc 1.8 and squashfs-tools, pinned .debs unpacked privately
              (no system package, no systemd pulled in): `invoke setup` fetches, doctor checks
  bundle.py   `invoke bundle`: manifest (build id, compatible, verity, adaptive
              block-hash-index), `rauc bundle`, then `rauc info --keyring` on the result
  (the Buildroot sources RAUC needs are seedfw.buildroot.rauc: Buildroot is a library of the parts)

Why RAUC and U-Boot's own environment rather than a seedfw updater: the anchors (Buildroot,
Yocto) ship exactly this pair, so a product team finds the documented tools; seedfw adds the
pinning, the keys discipline and the proofs.
"""
