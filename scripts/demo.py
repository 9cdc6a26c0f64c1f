#!/usr/bin/env python3
"""Runs a whole RemoteSupport session between the two CLIs and prints both sides' events as one timeline.

code created -> device online -> request -> allow -> connected -> VoIP state -> supporter ends.
Usage: demo.py BIN_DIR   (the folder holding rsup-supporter and rsup-device)

Also a module: scripts/two_hosts.py imports Side, control, make_certs, stop and print_timeline from here.
"""
import json
import secrets
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT = 30


class Failure(Exception):
    """A step did not happen; the message says which."""


def fail(message):
    raise Failure(message)


def binaries(bin_dir):
    """The paths of (rsup-supporter, rsup-device) in `bin_dir`."""
    return os.path.join(bin_dir, "rsup-supporter"), os.path.join(bin_dir, "rsup-device")


class Side:
    """A running node whose JSON events are collected, with the side's name.

    Each event gets a `_received` key: time.monotonic() when its line was read (keys starting with '_' are ours).
    """

    def __init__(self, name, arguments, interactive=False):
        self.name = name
        self.events = queue.Queue()
        self.seen = []
        self.process = subprocess.Popen(
            arguments, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            stdin=subprocess.PIPE if interactive else subprocess.DEVNULL, text=True
        )
        self.errors = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_errors, daemon=True).start()

    def send(self, line):
        """Writes one line to the side's standard input (a side started `interactive`)."""
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def _read(self):
        for line in self.process.stdout:
            received = time.monotonic()
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(event, dict):
                event["_received"] = received
                self.events.put(event)
        self.events.put(None)

    def _read_errors(self):
        for line in self.process.stderr:
            self.errors.append(line.rstrip())

    def wait_for(self, kind, timeout=TIMEOUT, **fields):
        """Returns the first event of `kind` (a name or a tuple of names) whose fields include `fields`,
        collecting every event on the way."""
        kinds = (kind,) if isinstance(kind, str) else tuple(kind)

        def matches(event):
            return event.get("event") in kinds and all(event.get(key) == value for key, value in fields.items())

        for event in self.seen:
            if matches(event):
                return event
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                event = self.events.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            if event is None:
                self.events.put(None)  # keep the end marker for later waits
                break
            self.seen.append(event)
            if matches(event):
                return event
        details = "\n".join(self.errors[-5:])
        wanted = "' or '".join(kinds) + "".join(f" {key}={value}" for key, value in fields.items())
        fail(f"the {self.name} never reported '{wanted}' within {timeout:g}s" + (f":\n{details}" if details else ""))


def control(supporter, data, *arguments, prefix=()):
    """Runs `rsup-supporter ARGUMENTS --data DATA --json` (after `prefix`, e.g. ip netns exec NS) and returns its JSON."""
    result = subprocess.run([*prefix, supporter, *arguments, "--data", data, "--json"], capture_output=True, text=True)
    if result.returncode != 0:
        fail(f"rsup-supporter {arguments[0]}: {(result.stderr or result.stdout).strip()}")
    return json.loads(result.stdout)


def make_certs(directory, *extra_sans):
    """Development certificates in `directory` (certs/make-dev-certs.sh), the supporter's with `extra_sans` too."""
    made = subprocess.run(
        ["bash", os.path.join(ROOT, "certs", "make-dev-certs.sh"), "--out", directory, *extra_sans],
        capture_output=True, text=True,
    )
    if made.returncode != 0:
        fail(f"making certificates: {made.stderr.strip()}")
    return directory


def stop(*sides):
    """Ends every side still running: SIGTERM, then SIGKILL after 10 s."""
    for side in sides:
        if side and side.process.poll() is None:
            side.process.terminate()
    for side in sides:
        if side and side.process.poll() is None:
            try:
                side.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                side.process.kill()
                side.process.wait()


def run_demo(bin_dir, keep_running=False):
    supporter_bin, device_bin = binaries(bin_dir)
    work = tempfile.mkdtemp(prefix="rsup-demo-")
    supporter = device = None
    try:
        certs = make_certs(os.path.join(work, "certs"))
        data = os.path.join(work, "data")
        supporter = Side(
            "supporter",
            [supporter_bin, "serve", "--listen", "127.0.0.1:0", "--cert", f"{certs}/supporter.pem",
             "--key", f"{certs}/supporter.key", "--data", data, "--non-interactive", "--json",
             "--api-listen", "127.0.0.1:0"],
        )
        listening = supporter.wait_for("listening")
        port, api_port = listening["port"], listening["api_port"]
        token = control(supporter_bin, data, "token")["token"]
        # A demo supporter account with a one-time password: the name the device's user sees comes from it.
        password = secrets.token_urlsafe(12)
        password_file = os.path.join(work, "alice.password")
        with open(os.open(password_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as handle:
            handle.write(password + "\n")
        control(supporter_bin, data, "user", "add", "alice", "--display-name", "Alice Martin", "--role", "admin",
                "--password-file", password_file)
        # The team's rule for this code: view yes, control no (protocol 1.1 access control).
        code = control(supporter_bin, data, "create", "--type", "remote", "--description", "demo",
                       "--waiting-message", "A supporter will be with you shortly",
                       "--feature-rule", "remote_control=deny")["code"]["code"]
        supporter.seen.append({"time": now(), "event": "code_created", "code": code})
        device = Side(
            "device",
            [device_bin, "connect", f"127.0.0.1:{port}", "--code", code, "--token", token, "--ca", f"{certs}/ca.pem",
             "--name", "demo-phone", "--auto-accept", "--json"],
        )
        device.wait_for("online")
        supporter.wait_for("device_online")
        control(supporter_bin, data, "connect", "--code", code, "--as", "alice", "--type", "screen",
                "--features", "voip,chat,remote_control")
        supporter.wait_for("features_denied")  # remote_control: the code's rule denies it
        device.wait_for("request")
        device.wait_for("connected")
        supporter.wait_for("connected")
        supporter.wait_for("granted")
        device.wait_for("voip")
        supporter.wait_for("voip")
        control(supporter_bin, data, "say", "--code", code, "--text", "Hello, I'm Alice. Can you see the settings screen?")
        device.wait_for("chat")
        supporter.wait_for("delivered")
        control(supporter_bin, data, "end", "--code", code)
        device.wait_for("disconnected")
        supporter.wait_for("ended")
        if device.process.wait(timeout=TIMEOUT) != 0:
            fail(f"the device exited with {device.process.returncode}")
        print_timeline(supporter, device)
        print(f"\nwhole session completed: code {code}, supporter 'Alice Martin' (account alice), device 'demo-phone'")
        print(f"\nweb console: https://127.0.0.1:{api_port}/  (development certificate: your browser will warn)")
        print(f"sign in as: alice / {password}  (a one-time password for this demo run)")
        if keep_running:
            print("the supporter node keeps running for the browser; press Enter (or Ctrl-C) to stop it")
            try:
                sys.stdin.readline()
            except KeyboardInterrupt:
                pass
    finally:
        stop(device, supporter)
        shutil.rmtree(work, ignore_errors=True)


def now():
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + ".%03dZ" % (int(time.time() * 1000) % 1000)


def describe(event):
    kind = event.get("event")
    details = {key: value for key, value in event.items() if key not in ("time", "event") and not key.startswith("_")}
    text = " ".join(f"{key}={value}" for key, value in sorted(details.items()))
    return f"{kind:<20} {text}"


def print_timeline(*sides):
    rows = [(event["time"], side.name, event) for side in sides if side for event in side.seen if "time" in event]
    rows.sort(key=lambda row: row[0])
    print("time                      side       event")
    for time_text, name, event in rows:
        print(f"{time_text}  {name:<9}  {describe(event)}")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    keep_running = "--keep-running" in argv
    paths = [argument for argument in argv if argument != "--keep-running"]
    try:
        run_demo(paths[0] if paths else ".build/debug", keep_running=keep_running)
    except Failure as failure:
        print(f"demo failed: {failure}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
