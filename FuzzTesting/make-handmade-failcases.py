#!/usr/bin/env python3
"""Writes the hand-made hostile inputs of FailCases/FuzzWireDecode/handmade-*.bin (raw wire streams).

They give the regression run and Tests/SupportWireTests/FailCasesTests.swift inputs even when fuzzing has found
nothing: huge and boundary lengths, floods of IGNORABLE frames, garbage, maximal messages, UTF-8 edge cases.
Byte-for-byte deterministic; rerun after editing. Each input's expected outcome (per the Python reference codec
protocol/vectors/rsup.py) is printed, for information only.
"""
import random
import struct
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "protocol" / "vectors"))
import rsup  # noqa: E402  (the independent reference codec)

H, F, fld = rsup.header, rsup.frame, rsup.field
u8 = lambda v: bytes([v])
u16 = lambda v: struct.pack(">H", v)
u32 = lambda v: struct.pack(">I", v)
u64 = lambda v: struct.pack(">Q", v)
PING = F(0x03, fld(1, u64(7)))
rng = random.Random(20261130)


def hello(name=b"n", features=b"", extra=b"", minv=1, maxv=1):
    return F(0x01, fld(1, u8(minv)) + fld(2, u8(maxv)) + fld(3, u8(1)) + fld(4, name) + fld(5, features)
             + fld(6, u32(100)) + fld(7, u32(1048576)) + extra)


CASES = {
    # lengths
    "len-ffffffff": H(0x03, 0xFFFFFFFF) + b"\x01\x00\x08" + bytes(8),
    "len-80000000-ignorable": H(0x40, 0x80000000, flags=1) + bytes(64),
    "len-16385": H(0x03, 16385) + bytes(16385),
    "len-16384-ignorable-garbage-then-ping": H(0xF0, 16384, flags=1) + bytes([0xFF]) * 16384 + PING,
    "len-16384-ping-unknown-fields": F(0x03, fld(1, u64(1)) + fld(9, bytes(16384 - 11 - 3))),
    "len-field-ffff-short-payload": F(0x05, fld(1, b"\x81") + b"\x02\xff\xff" + b"ab"),
    "len-truncated-huge-payload": H(0x10, 16384) + bytes(100),
    # floods and garbage
    "flood-5000-empty-ignorable-then-ping": H(0x7F, 0, flags=1) * 5000 + PING,
    "flood-1000-pings": PING * 1000,
    "garbage-4096-random": bytes(rng.randrange(256) for _ in range(4096)),
    "garbage-valid-header-random-payload": H(0x01, 3000) + bytes(rng.randrange(256) for _ in range(3000)),
    "garbage-all-ff": bytes([0xFF]) * 1024,
    "garbage-all-01": bytes([0x01]) * 1024,
    "trailing-2-bytes": F(0x03, fld(1, u64(1)) + b"\x02\x00"),
    "header-7-bytes-after-pings": PING * 3 + H(0x03, 11)[:7],
    # maximal messages
    "register-4092-capabilities": F(0x10, fld(1, b"C" * 64) + fld(2, b"T" * 256)
                                    + fld(3, b"".join(u16(i) + u16(0xFFFF) for i in range(1, 4000)))),
    "hello-max-name-and-unknown-tags": hello(b"\xf4\x8f\xbf\xbf" * 16, b"".join(u16(i) + u16(1) for i in range(1, 50)),
                                             b"".join(fld(t, bytes(t % 40)) for t in range(8, 256)), 255, 255),
    "hello-33k-over-default-max": hello(b"\xf4\x8f\xbf\xbf" * 16, b"".join(u16(i) + u16(1) for i in range(1, 50)),
                                        b"".join(fld(t, bytes(t)) for t in range(8, 256)), 255, 255),
    "capabilities-out-of-order-late": F(0x10, fld(1, b"c") + fld(2, b"t")
                                        + fld(3, b"".join(u16(i) + u16(1) for i in range(1, 3000)) + u16(5) + u16(1))),
    # UTF-8 edges
    "utf8-surrogate-d800": F(0x05, fld(1, b"\x81") + fld(2, b"ok\xed\xa0\x80")),
    "utf8-overlong-nul": F(0x16, fld(1, b"\x02") + fld(2, b"\xc0\x80")),
    "utf8-above-10ffff": F(0x18, fld(1, b"\x01") + fld(2, b"\xf4\x90\x80\x80")),
    "utf8-truncated-at-end": F(0x11, fld(1, b"\x00") + fld(2, b"abc\xe2\x82")),
    "utf8-nfc-vs-nfd-texts": F(0x05, fld(1, b"\x01") + fld(2, b"caf\xc3\xa9")) + F(0x05, fld(1, b"\x01") + fld(2, b"cafe\xcc\x81")),
    "utf8-nul-bom-nonchar": F(0x17, fld(1, b"\x8e") + fld(2, u16(0xFFFF)) + fld(3, b"\x00\xef\xbb\xbf\xef\xbf\xbf")),
    "string-65-bytes-name": hello(b"x" * 65),
    "u64-nonce-max": F(0x04, fld(1, u64(2**64 - 1))),
}


def main():
    out = HERE / "FailCases" / "FuzzWireDecode"
    out.mkdir(parents=True, exist_ok=True)
    for name, data in CASES.items():
        (out / f"handmade-{name}.bin").write_bytes(data)
        try:
            result = f"{len(rsup.decode_stream(data))} message(s)"
        except rsup.DecodeError as error:
            result = f"error {error.as_dict()}"
        print(f"handmade-{name}.bin  {len(data):6d} bytes  reference: {result}")


if __name__ == "__main__":
    main()
