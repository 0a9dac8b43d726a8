"""The rootfs overlay UPDATE_RAUC adds (BR2_ROOTFS_OVERLAY of the generated external tree).

    etc/rauc/system.conf         slots, keyring, data-directory (seedfw.update.slots)
    etc/rauc/keyring.pem         the CA the device trusts: CONFIG_UPDATE_KEYRING, else this
                                 checkout's development CA (seedfw.update.keys; certificate only)
    etc/fw_env.config            where U-Boot keeps its environment
    etc/init.d/S05seedfw-slots   /dev/disk/by-partuuid links, /data and the env partition mounted
    etc/default/seedfw-update    SEEDFW_MARK_GOOD=y: S99seedfw-agent calls `rauc status
                                 mark-good` only when the agent's checks passed (exit 0)
"""

from __future__ import annotations

from pathlib import Path

from ..errors import SeedfwError
from ..paths import ROOT
from . import keys, slots


def keyring_text(cfg) -> str:
    given = cfg.values.get("UPDATE_KEYRING") or ""
    path = (ROOT / given) if given and not Path(given).is_absolute() else Path(given)
    if not given:
        path = keys.development().keyring
    try:
        text = path.read_text()
    except OSError as exc:
        raise SeedfwError(f"cannot read the update keyring: {exc.strerror}", path) from None
    if "-----BEGIN CERTIFICATE-----" not in text or "PRIVATE KEY" in text:
        # a private key here would be copied into every rootfs: refused, whatever else it holds
        raise SeedfwError("the update keyring must hold PEM certificates only", path,
                          "CONFIG_UPDATE_KEYRING")
    return text


def files(cfg) -> dict[str, str]:
    p = slots.plan(cfg.board, cfg.values, Path(cfg.outdir))
    return {"etc/rauc/system.conf": slots.system_conf(p),
            "etc/rauc/keyring.pem": keyring_text(cfg),
            "etc/fw_env.config": slots.fw_env_config(p),
            "etc/init.d/S05seedfw-slots": slots.partuuid_links(p),
            "etc/default/seedfw-update": "SEEDFW_MARK_GOOD=y\n"}
