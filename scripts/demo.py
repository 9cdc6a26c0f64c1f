#!/usr/bin/env python3
"""Runs a whole RemoteSupport session between the two CLIs and prints both sides' events as one timeline.

code created -> device online -> request -> allow -> connected -> VoIP state -> supporter ends.
Usage: demo.py BIN_DIR   (the folder holding rsup-supporter and rsup-device)
"""
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time

BIN = sys.argv[1] if len(sys.argv) > 1 else ".build/debug"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUPPORTER = os.path.join(BIN, "rsup-supporter")
DEVICE = os.path.join(BIN, "rsup-device")
TIMEOUT = 30


def fail(message):
    print(f"demo failed: {message}", file=sys.stderr)
    sys.exit(1)


class Side:
    """A running node whose JSON events are collected, with the side's name."""

    def __init__(self, name, arguments):
        self.name = name
        self.events = queue.Queue()
        self.seen = []
        self.process = subprocess.Popen(
            arguments, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True
        )
        self.errors = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_errors, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            try:
                self.events.put(json.loads(line))
            except json.JSONDecodeError:
                pass
        self.events.put(None)

    def _read_errors(self):
        for line in self.process.stderr:
            self.errors.append(line.rstrip())

    def wait_for(self, kind, timeout=TIMEOUT):
        """Returns the first event of `kind`, collecting every event on the way."""
        for event in self.seen:
            if event.get("event") == kind:
                return event
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                event = self.events.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            if event is None:
                break
            self.seen.append(event)
            if event.get("event") == kind:
                return event
        details = "\n".join(self.errors[-5:])
        fail(f"the {self.name} never reported '{kind}'" + (f":\n{details}" if details else ""))


def control(data, *arguments):
    result = subprocess.run([SUPPORTER, *arguments, "--data", data, "--json"], capture_output=True, text=True)
    if result.returncode != 0:
        fail(f"rsup-supporter {arguments[0]}: {result.stderr.strip()}")
    return json.loads(result.stdout)


def main():
    work = tempfile.mkdtemp(prefix="rsup-demo-")
    supporter = device = None
    try:
        certs = os.path.join(work, "certs")
        made = subprocess.run(
            ["bash", os.path.join(ROOT, "certs", "make-dev-certs.sh"), "--out", certs], capture_output=True, text=True
        )
        if made.returncode != 0:
            fail(f"making certificates: {made.stderr.strip()}")
        data = os.path.join(work, "data")
        supporter = Side(
            "supporter",
            [SUPPORTER, "serve", "--listen", "127.0.0.1:0", "--cert", f"{certs}/supporter.pem",
             "--key", f"{certs}/supporter.key", "--data", data, "--non-interactive", "--json"],
        )
        port = supporter.wait_for("listening")["port"]
        token = control(data, "token")["token"]
        code = control(data, "create", "--type", "remote", "--description", "demo")["code"]["code"]
        supporter.seen.append({"time": now(), "event": "code_created", "code": code})
        device = Side(
            "device",
            [DEVICE, "connect", f"127.0.0.1:{port}", "--code", code, "--token", token, "--ca", f"{certs}/ca.pem",
             "--name", "demo-phone", "--auto-accept", "--json"],
        )
        device.wait_for("online")
        supporter.wait_for("device_online")
        control(data, "connect", "--code", code, "--as", "Alice", "--type", "screen", "--features", "voip")
        device.wait_for("request")
        device.wait_for("connected")
        supporter.wait_for("connected")
        device.wait_for("voip")
        supporter.wait_for("voip")
        control(data, "end", "--code", code)
        device.wait_for("disconnected")
        supporter.wait_for("ended")
        if device.process.wait(timeout=TIMEOUT) != 0:
            fail(f"the device exited with {device.process.returncode}")
        print_timeline(supporter, device)
        print(f"\nwhole session completed: code {code}, supporter 'Alice', device 'demo-phone'")
        return 0
    finally:
        for side in (device, supporter):
            if side and side.process.poll() is None:
                side.process.terminate()
                try:
                    side.process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    side.process.kill()
        shutil.rmtree(work, ignore_errors=True)


def now():
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + ".%03dZ" % (int(time.time() * 1000) % 1000)


def describe(event):
    kind = event.get("event")
    details = {key: value for key, value in event.items() if key not in ("time", "event")}
    text = " ".join(f"{key}={value}" for key, value in sorted(details.items()))
    return f"{kind:<20} {text}"


def print_timeline(*sides):
    rows = [(event["time"], side.name, event) for side in sides for event in side.seen if "time" in event]
    rows.sort(key=lambda row: row[0])
    print("time                      side       event")
    for time_text, name, event in rows:
        print(f"{time_text}  {name:<9}  {describe(event)}")


if __name__ == "__main__":
    sys.exit(main())
