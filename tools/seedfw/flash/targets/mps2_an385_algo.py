"""Flash algo blob generated from firmware/mcu/flashalgo by seedfw.flash.targets.algo_blob. Do not edit."""

BLOB = bytes.fromhex(
    "00befee7002070470020704700234ff0ff3243f8042bb3f5802ffad100207047"
    "20f4ff4020f07f00b0f5603f09d84ff0ff3200f5004340f8042b9842fbd10020"
    "704701207047b1f5802f10b50ed8c1f5802398420ad81144801a914201d10020"
    "10bd831812f8014b1c70f6e70120f7e7"
)
OFFSETS = {
    "EraseChip": 0x000c,
    "EraseSector": 0x0020,
    "Init": 0x0004,
    "ProgramPage": 0x0046,
    "UnInit": 0x0008,
}
