"""Flash algo blob generated from firmware/mcu/flashalgo by seedfw.flash.targets.algo_blob. Do not edit."""

BLOB = bytes.fromhex(
    "00befee7002070470020704700234ff0ff3243f8042bb3f5802ffad100207047"
    "20f4ff4020f07f00b0f5603f09d84ff0ff3200f5004340f8042b9842fbd10020"
    "704701207047b1f5802ff0b51fd8c1f5802398421bd842ea010303439b0710d1"
    "144621f00303d518861aa54203d18b4209d30020f0bd371954f804cbc7f800c0"
    "f3e70023f3e7d45c1c540133efe70120f0e70000"
)
OFFSETS = {
    "EraseChip": 0x000c,
    "EraseSector": 0x0020,
    "Init": 0x0004,
    "ProgramPage": 0x0046,
    "UnInit": 0x0008,
}
