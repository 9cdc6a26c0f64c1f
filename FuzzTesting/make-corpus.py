#!/usr/bin/env python3
"""Builds the seed corpus for the fuzz targets.

Reads protocol/vectors/valid.jsonl and malformed.jsonl (one JSON object per line, the byte stream in "hex") and
writes one file per vector into FuzzTesting/corpus-work/seed/ (scratch, gitignored), plus a few multi-frame streams
made by concatenating valid vectors, and a few event sequences for FuzzSessionMachines (session_*). The wire
targets read raw wire streams, the session target reads frames (which start with 0x01) and local events, so one seed
folder serves all three.

Usage: make-corpus.py [--wait SECONDS] [--out DIR]
  --wait SECONDS  poll this long for the .jsonl files if they do not exist yet (default 0: do not wait)
  --out DIR       output folder (default: FuzzTesting/corpus-work/seed)

Robust either way: if a file is missing (after waiting) or has bad lines, it says so on stderr and goes on; if no
vector at all could be read, it writes a handful of built-in seeds so that fuzzing can still start. Exit status 0
unless the output folder cannot be written.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
VECTORS = HERE.parent / "protocol" / "vectors"
FILES = ("valid.jsonl", "malformed.jsonl")

# Used only when no vector file can be read: a PING, a GOAWAY with text, an IGNORABLE unknown frame, a REGISTER.
BUILTIN = {
    "builtin_ping": "010300000000000b0100080000000000000007",
    "builtin_goaway_text": "0105000000000009010001810200026f6b",
    "builtin_ignorable_then_ping": "0120010000000002aaaa" "010300000000000b0100080000000000000001",
    "builtin_register": "011000000000001301000341424302000374" "6f6b03000400010001",
}


# Seeds for FuzzSessionMachines: event sequences (see FuzzTesting/Sources/SessionFuzzing/SessionDriver.swift). A byte
# 0x01 starts a frame; any other byte is a local event chosen by its value modulo 25, followed by its argument bytes.
def _field(tag: int, value: bytes) -> bytes:
    return bytes([tag]) + len(value).to_bytes(2, "big") + value


def _frame(frame_type: int, *fields: bytes) -> bytes:
    payload = b"".join(fields)
    return bytes([1, frame_type, 0, 0]) + len(payload).to_bytes(4, "big") + payload


def _u32(value: int) -> bytes:
    return value.to_bytes(4, "big")


def _features(*ids: int) -> bytes:
    return b"".join(i.to_bytes(2, "big") + (1).to_bytes(2, "big") for i in ids)


REGISTER = _frame(0x10, _field(1, b"s12-345"), _field(2, b"tok"), _field(3, _features(3)))
RESULT_OK = _frame(0x11, _field(1, b"\x00"), _field(4, b"\x01"))
RESULT_RATE = _frame(0x11, _field(1, b"\x8d"), _field(3, _u32(4000)))
REQUEST_1 = _frame(0x12, _field(1, _u32(1)), _field(2, b"Alice"), _field(3, b"\x01"), _field(4, _features(3)))
ALLOW_1 = _frame(0x13, _field(1, _u32(1)), _field(2, b"\x01"), _field(3, b"\x00"))
REJECT_1 = _frame(0x13, _field(1, _u32(1)), _field(2, b"\x02"), _field(3, b"\x04"))
ABORT_1 = _frame(0x14, _field(1, _u32(1)), _field(2, b"\x05"))
STARTED_1 = _frame(0x15, _field(1, _u32(1)))
END = _frame(0x16, _field(1, b"\x02"))
ERROR = _frame(0x17, _field(1, b"\x8e"), _field(2, (2).to_bytes(2, "big")))
VOIP = _frame(0x18, _field(1, b"\x01"))
PING = _frame(0x03, _field(1, bytes(8)))
# Protocol 1.1 (SPEC §15): the §15.2 fields on the 1.0 frames, and the frames of §15.3-§15.5.
SECRET = b"hJ3_x-Qe8rT2mZ9vW1yU4oP6sA0dF5gK"
RESULT_OK_SECRET = _frame(0x11, _field(1, b"\x00"), _field(4, b"\x01"), _field(5, SECRET))
REQUEST_1_CONFIRM = _frame(0x12, _field(1, _u32(1)), _field(2, b"Alice"), _field(3, b"\x01"),
                           _field(4, _features(3, 6)), _field(5, _features(6)))
ALLOW_1_GRANTED = _frame(0x13, _field(1, _u32(1)), _field(2, b"\x01"), _field(3, b"\x00"), _field(4, _features(1, 6)))
STARTED_1_GRANTED = _frame(0x15, _field(1, _u32(1)), _field(2, _features(1, 6)), _field(3, b"{}"))
FEATURE_REQUEST_1 = _frame(0x19, _field(1, _u32(1)), _field(2, (5).to_bytes(2, "big")), _field(3, b"\x01"))
FEATURE_ANSWER_1 = _frame(0x1A, _field(1, _u32(1)), _field(2, b"\x01"), _field(3, b"\x00"))
FEATURE_REVOKE = _frame(0x1B, _field(1, (6).to_bytes(2, "big")))
MESSAGE_1 = _frame(0x1C, _field(1, _u32(1)), _field(2, b"\x01"), _field(4, b"hi"))
MESSAGE_ACK_1 = _frame(0x1D, _field(1, _u32(1)), _field(2, b"\x00"))

# Local events (selector byte, then arguments).
D_REGISTER = bytes([0x00, 0, 0])
D_ALLOW = bytes([0x1A, 0x03])  # 26 % 25 = 1: answer; pending id, allow
D_REJECT = bytes([0x1A, 0x01])
D_LEAVE = bytes([0x02])
D_TICK_60S = bytes([0x03, 120])
D_SET_CALL = bytes([0x04, 0])
D_CLEAR_CALL = bytes([0x05])
D_LINK_CLOSED = bytes([0x06])
S_REQUEST = bytes([0x07, 0, 0x08])  # name "Alice", screen share, wants voip
S_ABORT = bytes([0x08])
S_END = bytes([0x09, 2, 1])
S_TICK_90S = bytes([0x0A, 180])
S_LINK_CLOSED = bytes([0x0B])
S_REFUSE_NEXT = bytes([0x0C, 0x06, 0x8D])
CALL_FOREIGN = bytes([0x0D, 0x0B])  # running, id "other"
# Protocol 1.1 events (14-24): the machines are the two ends of one link; 21 delivers the frames in flight.
LINK_ALL = bytes([14, 0x07])  # a new link with access_control, session_messages, session_resume
LINK_ACCESS = bytes([14, 0x01])
LINK_RESUME = bytes([14, 0x04])
LINK_10 = bytes([14, 0x00])
TO_SUPPORTER = bytes([21, 0x01])  # every frame in flight to the supporter
TO_DEVICE = bytes([21, 0x00])
TO_DEVICE_ONE = bytes([21, 0x02])
S_REQUEST_11 = bytes([24, 0, 0x58, 1])  # "Alice", screen share + file_share, chat, app_messages; media descriptor
S_REQUEST_11_ALL = bytes([24, 0, 0xFE, 0])
CODE_RULES_CONFIRM_CHAT = bytes([22, 1])
CODE_RULES_DENY_RC = bytes([22, 2])
S_ASK_RC = bytes([15, 3])  # remote_control
S_ASK_AR_POINTER_CONFIRM = bytes([15, 6 | 16])
D_ANSWER_FEATURE_GRANT = bytes([16, 3])  # the oldest ask shown, grant
D_ANSWER_FEATURE_REFUSE = bytes([16, 1])
D_REVOKE_CHAT = bytes([17, 5])
D_CHAT = bytes([18, 0])
S_CHAT = bytes([19, 0])
D_APP = bytes([18, 1 | 2 << 2])  # application/json, 100 bytes
S_FILE_3_PARTS = bytes([19, 2 | 6 << 2])  # "a.txt", 40 000 bytes
D_FILE_1_PART = bytes([18, 2 | 2 << 2])
LINK_LOST = bytes([20])
RESUME = bytes([23, 0])
RESUME_WRONG_SECRET = bytes([23, 1])
F_TICK_30S = bytes([0x03, 60])
# An active 1.1 session between the two ends: register, request, allow, start.
ACTIVE_11 = (D_REGISTER + TO_SUPPORTER + TO_DEVICE + S_REQUEST_11 + TO_DEVICE + D_ALLOW + TO_SUPPORTER + TO_DEVICE
             + TO_SUPPORTER)

SESSION_SEEDS = {
    "session_device_happy": D_REGISTER + RESULT_OK + REQUEST_1 + D_ALLOW + STARTED_1 + D_CLEAR_CALL + END,
    "session_device_reject_timeout_leave": D_REGISTER + RESULT_OK + REQUEST_1 + D_REJECT + REQUEST_1 + D_TICK_60S
    + D_ALLOW + D_LEAVE + REGISTER,
    "session_device_abort_error_voip": D_REGISTER + RESULT_OK + ERROR + REQUEST_1 + D_ALLOW + ABORT_1 + REQUEST_1
    + D_SET_CALL + CALL_FOREIGN + D_ALLOW + STARTED_1 + ABORT_1 + PING + D_LINK_CLOSED,
    "session_device_refused_then_online": D_REGISTER + RESULT_RATE + D_REGISTER + RESULT_OK + END,
    "session_supporter_happy": REGISTER + S_REQUEST + ALLOW_1 + VOIP + ERROR + S_END,
    "session_supporter_timeout_abort": REGISTER + S_REQUEST + S_TICK_90S + REJECT_1 + S_REQUEST + S_ABORT
    + S_REQUEST + REJECT_1 + END + S_REFUSE_NEXT + REGISTER + S_LINK_CLOSED,
    "session_both_full_flow": D_REGISTER + REGISTER + RESULT_OK + S_REQUEST + REQUEST_1 + D_ALLOW + ALLOW_1
    + STARTED_1 + VOIP + S_END + END,
    # protocol 1.1 frames in a session (the driver decides what a machine without the extension makes of them)
    "session_device_1_1_frames": D_REGISTER + RESULT_OK_SECRET + REQUEST_1_CONFIRM + D_ALLOW + STARTED_1_GRANTED
    + FEATURE_REQUEST_1 + MESSAGE_1 + MESSAGE_ACK_1 + END,
    "session_supporter_1_1_frames": REGISTER + S_REQUEST + ALLOW_1_GRANTED + FEATURE_ANSWER_1 + MESSAGE_1
    + MESSAGE_ACK_1 + FEATURE_REVOKE + S_END,
    # protocol 1.1 between the two ends (events 14-24)
    "session_11_messages_asks_revoke": LINK_ALL + ACTIVE_11 + D_CHAT + S_CHAT + TO_SUPPORTER + TO_DEVICE + D_APP
    + S_FILE_3_PARTS + TO_DEVICE + TO_SUPPORTER + TO_DEVICE + TO_SUPPORTER + S_ASK_RC + TO_DEVICE
    + D_ANSWER_FEATURE_GRANT + TO_SUPPORTER + S_ASK_AR_POINTER_CONFIRM + TO_DEVICE + F_TICK_30S + TO_SUPPORTER
    + D_REVOKE_CHAT + S_CHAT + TO_SUPPORTER + TO_DEVICE + S_END + TO_DEVICE,
    "session_11_resume_active_with_messages": LINK_ALL + ACTIVE_11 + D_CHAT + S_CHAT + TO_DEVICE + LINK_LOST + RESUME
    + TO_SUPPORTER + TO_DEVICE + D_FILE_1_PART + TO_SUPPORTER + TO_DEVICE,
    "session_11_resume_answer_while_reconnecting": LINK_ALL + D_REGISTER + TO_SUPPORTER + TO_DEVICE + S_REQUEST_11
    + TO_DEVICE + LINK_LOST + D_ALLOW + RESUME + TO_SUPPORTER + TO_DEVICE,
    "session_11_resume_lost_request_and_wrong_secret": LINK_RESUME + D_REGISTER + TO_SUPPORTER + TO_DEVICE + S_REQUEST
    + LINK_LOST + RESUME + TO_DEVICE + D_REJECT + LINK_LOST + RESUME_WRONG_SECRET + D_REGISTER + TO_SUPPORTER,
    "session_11_access_control_code_rules": LINK_ACCESS + CODE_RULES_DENY_RC + D_REGISTER + TO_SUPPORTER + TO_DEVICE
    + S_REQUEST_11_ALL + TO_DEVICE + D_ALLOW + TO_SUPPORTER + TO_DEVICE + S_ASK_RC + S_ASK_AR_POINTER_CONFIRM
    + TO_DEVICE + D_ANSWER_FEATURE_REFUSE + TO_SUPPORTER + LINK_ACCESS + CODE_RULES_CONFIRM_CHAT + ACTIVE_11,
    "session_11_frames_on_10_link": LINK_10 + ACTIVE_11 + FEATURE_REQUEST_1 + LINK_10 + ACTIVE_11 + MESSAGE_1,
    "session_11_injected_frames": LINK_ALL + ACTIVE_11 + FEATURE_REQUEST_1 + MESSAGE_1 + MESSAGE_ACK_1
    + STARTED_1_GRANTED + FEATURE_ANSWER_1 + FEATURE_REVOKE + LINK_LOST + RESUME,
}


def log(message: str) -> None:
    print(f"make-corpus: {message}", file=sys.stderr)


def wait_for(paths: list[Path], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while True:
        missing = [p for p in paths if not p.is_file()]
        if not missing or time.monotonic() >= deadline:
            return
        log(f"waiting for {', '.join(p.name for p in missing)} ({int(deadline - time.monotonic())} s left)")
        time.sleep(min(15.0, max(0.1, deadline - time.monotonic())))


def read_vectors(path: Path) -> list[tuple[str, bytes]]:
    if not path.is_file():
        log(f"{path} does not exist; skipped")
        return []
    vectors = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            line = line.strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
                data = bytes.fromhex(obj["hex"])
            except (ValueError, KeyError, TypeError) as error:  # a file being written: a partial last line
                log(f"{path.name}:{number}: unreadable line skipped ({error})")
                continue
            name = str(obj.get("name") or hashlib.sha1(data).hexdigest()[:12])
            safe = "".join(c if c.isalnum() or c in "_-" else "_" for c in name)
            vectors.append((f"{path.stem}_{safe}", data))
    return vectors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wait", type=float, default=0.0)
    parser.add_argument("--out", type=Path, default=HERE / "corpus-work" / "seed")
    args = parser.parse_args()

    paths = [VECTORS / name for name in FILES]
    if args.wait > 0:
        wait_for(paths, args.wait)

    seeds: dict[str, bytes] = {}
    valid: list[bytes] = []
    for path in paths:
        for name, data in read_vectors(path):
            seeds[name] = data
            if path.name == "valid.jsonl":
                valid.append(data)
    if not seeds:
        log("no vectors found: writing built-in seeds only")
        seeds = {name: bytes.fromhex(h) for name, h in BUILTIN.items()}
        valid = list(seeds.values())

    # Multi-frame streams: what a connection really carries, and where chunking across frames matters.
    if len(valid) > 1:
        seeds["multi_all_valid"] = b"".join(valid)[:65536]
        for index in range(0, len(valid) - 1, 7):
            seeds[f"multi_pair_{index:03d}"] = valid[index] + valid[index + 1]

    seeds.update(SESSION_SEEDS)

    args.out.mkdir(parents=True, exist_ok=True)
    for old in args.out.iterdir():
        if old.is_file():
            old.unlink()
    for name, data in sorted(seeds.items()):
        (args.out / name).write_bytes(data)
    log(f"wrote {len(seeds)} seed file(s) to {os.path.relpath(args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
