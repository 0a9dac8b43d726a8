"""Linux on the target: the kernel modules the root needs and the initramfs that loads them."""
