#!/usr/bin/env python3
"""Builds the seed corpus for the SupportWire fuzz targets.

Reads protocol/vectors/valid.jsonl and malformed.jsonl (one JSON object per line, the byte stream in "hex") and
writes one file per vector into FuzzTesting/corpus-work/seed/ (scratch, gitignored), plus a few multi-frame streams
made by concatenating valid vectors. Both fuzz targets read raw wire streams, so one seed folder serves both.

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
