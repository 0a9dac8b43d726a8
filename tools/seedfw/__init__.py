"""seedfw: firmware build system and board manager for the RK3588 edge-AI platform."""

__version__ = "0.1.0"
