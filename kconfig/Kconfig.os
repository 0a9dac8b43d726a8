# The OS's root file system on the ext4 "rootfs" partition (tools/seedfw/os_root.py,
# os_modules.py, initramfs.py; docs/os.md).

config OS_ROOT_EXT4
	bool "Root on the ext4 rootfs partition (a small initramfs loads the modules it needs)"
	depends on BUILDROOT && KERNEL && BUILDROOT_ROOTFS_EXT4
	help
	  The kernel mounts the disk's ext4 "rootfs" partition (found by its GPT PARTUUID) as
	  its root, instead of running from the Buildroot initramfs. Debian's generic kernel has
	  the SD/eMMC host drivers and ext4 as modules, so the boot partition gets a small
	  initramfs (images/initramfs.cpio: BusyBox from the Buildroot rootfs, an /init script and
	  the modules of OS_MODULES + OS_MODULES_EMULATION with everything they depend on, from
	  the pinned kernel package's modules.dep and softdeps) that loads them, waits for the
	  partition, mounts it and switch_roots to it. The same modules go into the rootfs under
	  /lib/modules/<release>/, indexed by the host's depmod, so modprobe works there.
	  Default on rk3588 (extlinux boot); the qemu board keeps its OS FIT + initramfs.

if OS_ROOT_EXT4

config OS_MODULES
	string "Kernel modules the root mount needs (names; dependencies are added)"
	default "ext4"
	help
	  Module names as modinfo knows them (- and _ are the same). rk3588 (ROCK 5B DT):
	  sdhci_of_dwcmshc (eMMC host), dw_mmc_rockchip (SD host), gpio_rockchip (the SD card's
	  card-detect GPIO), spi_rockchip + rk808_regulator (the SD supplies are RK806 PMIC
	  regulators on SPI2), ext4 (the root file system). Their modules.dep dependencies
	  (sdhci, sdhci-pltfm, cqhci, dw_mmc, dw_mmc-pltfm, jbd2, mbcache, crc16) and softdeps
	  (ext4: crc32c → crc32c_generic) are added by the build. A name the pinned kernel does
	  not have as a module is an error naming this option; one built into it is listed as
	  built in and skipped.

	  Grammar: module-list

config OS_MODULES_EMULATION
	string "Storage modules for the QEMU proof of this OS (virtio disk)"
	default "virtio_blk"
	help
	  Added to the initramfs and the rootfs like OS_MODULES. With them the same image's
	  kernel, initramfs and rootfs partition boot on QEMU virt from a virtio disk
	  (tests/test_os_root.py; docs/os.md), so what is flashed is byte for byte what the
	  emulated boot proved. On the board virtio_blk loads and binds to nothing (its bus,
	  virtio-pci, is built into the kernel). Empty: left out (the QEMU proof then fails with
	  the initramfs's line naming the missing module).

	  Grammar: module-list

config OS_MODULES_AGENT
	string "Kernel modules the agent loads before its perf windows (rootfs only)"
	default ""
	help
	  Module names (dependencies added from the kernel's modules.dep, like OS_MODULES) that
	  go into the rootfs, not the initramfs: the root mount does not need them. The agent's
	  init script (firmware/agent/S99seedfw-agent) modprobes each before the agent opens the
	  PMUs of board.yaml `perf`. rk3588: rockchip_dfi, the DDR monitor whose perf PMU
	  `rockchip_ddr` the agent reads (Debian builds CONFIG_DEVFREQ_EVENT_ROCKCHIP_DFI=m; it
	  binds to the DT's rockchip,rk3588-dfi node, so on QEMU virt it loads and binds to
	  nothing and the agent prints the PMU absent).

	  Grammar: module-list

config OS_MODULES_ALL
	bool "Install the kernel's full module set into the rootfs"
	default n
	help
	  Every module of the kernel package (about 88 MB, 4,350 modules) into the rootfs under
	  /lib/modules/<release>/, not only the closure above; raise BUILDROOT_ROOTFS_EXT4_SIZE
	  to at least 256M. The initramfs still carries only the closure.

config OS_ROOT_WAIT
	int "Seconds the initramfs waits for the root partition"
	default 15
	range 1 600
	help
	  How long the initramfs's /init looks for the partition named by root=PARTUUID=
	  before it gives up, naming the storage modules its initramfs lacks. 15 s is a guess
	  for real SD/eMMC (untested on a board); the QEMU proof finds it at once.

endif
