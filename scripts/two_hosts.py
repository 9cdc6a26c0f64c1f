#!/usr/bin/env python3
"""The two-hosts check, run by scripts/two-hosts.sh once it has made the namespaces (see there).

Usage: two_hosts.py BIN_DIR WORK SUP_NS SUP_IF SUP_ADDR DEV_NS DEV_IF

The supporter node serves on SUP_ADDR:7443 inside SUP_NS; each device node runs inside DEV_NS. Two cases:
  session      device online -> request -> allow -> connected -> VoIP -> supporter ends -> device ended
  link loss    a second session made active, then DEV_IF set down: both sides must report the loss within
               the bound (seconds, RSUP_LOSS_BOUND; default 2 x keepalive + 2 s close_notify grace + 2 s slack)
Prints a timeline per case and a PASS/FAIL summary with the measured detection times; exits 0 only if all passed.
"""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from demo import Failure, Side, binaries, control, fail, make_certs, print_timeline, stop  # noqa: E402

KEEPALIVE = 1.0  # seconds, --keepalive on both nodes
# The link declares the peer dead after 2 keepalive intervals of silence and aborts the connection at once (a dead
# peer answers no close_notify), so the session hears of it then.
CLOSE_GRACE = 0.0  # a keepalive timeout aborts at once: no close_notify wait
SLACK = 2.0
LOSS_BOUND = float(os.environ.get("RSUP_LOSS_BOUND", 2 * KEEPALIVE + CLOSE_GRACE + SLACK))
STEP_TIMEOUT = 15
PORT = 7443


class Interrupted(BaseException):
    pass


def on_signal(number, _frame):
    # Once: further signals are ignored so the clean-up below can finish (two-hosts.sh waits for it).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Interrupted(signal.Signals(number).name)


class TwoHosts:
    def __init__(self, bin_dir, work, sup_ns, sup_if, sup_addr, dev_ns, dev_if):
        self.supporter_bin, self.device_bin = binaries(bin_dir)
        self.work, self.sup_ns, self.sup_if, self.sup_addr = work, sup_ns, sup_if, sup_addr
        self.dev_ns, self.dev_if = dev_ns, dev_if
        self.data = os.path.join(work, "data")
        self.certs = None
        self.supporter = None
        self.token = None
        self.devices = []

    def in_sup(self):
        return ["ip", "netns", "exec", self.sup_ns]

    def in_dev(self):
        return ["ip", "netns", "exec", self.dev_ns]

    def control(self, *arguments):
        # The control socket lives in the data folder: same mount namespace, so it works from either network one.
        return control(self.supporter_bin, self.data, *arguments, prefix=self.in_sup())

    def start_supporter(self):
        self.certs = make_certs(os.path.join(self.work, "certs"), self.sup_addr)
        self.supporter = Side(
            "supporter",
            [*self.in_sup(), self.supporter_bin, "serve", "--listen", f"{self.sup_addr}:{PORT}",
             "--cert", f"{self.certs}/supporter.pem", "--key", f"{self.certs}/supporter.key", "--data", self.data,
             "--non-interactive", "--json", "--keepalive", f"{KEEPALIVE:g}s"],
        )
        listening = self.supporter.wait_for("listening", timeout=STEP_TIMEOUT)
        if listening.get("port") != PORT:
            fail(f"the supporter listens on {listening}, not port {PORT}")
        self.token = self.control("token")["token"]

    def code_state(self, code):
        for entry in self.control("list")["codes"]:
            if entry.get("code") == code:
                return entry.get("state")
        return None

    def active_session(self, name):
        """Creates a code, joins it from a device in the other namespace, and makes the session active with VoIP."""
        code = self.control("create", "--type", "remote", "--description", name)["code"]["code"]
        device = Side(
            f"device-{len(self.devices) + 1}",
            [*self.in_dev(), self.device_bin, "connect", f"{self.sup_addr}:{PORT}", "--code", code,
             "--token", self.token, "--ca", f"{self.certs}/ca.pem", "--auto-accept", "--json",
             "--keepalive", f"{KEEPALIVE:g}s", "--name", name],
        )
        self.devices.append(device)
        device.wait_for("online", timeout=STEP_TIMEOUT)
        self.supporter.wait_for("device_online", timeout=STEP_TIMEOUT, code=code)
        self.control("connect", "--code", code, "--as", "Alice", "--type", "screen", "--features", "voip")
        device.wait_for("request", timeout=STEP_TIMEOUT)
        device.wait_for("answer", timeout=STEP_TIMEOUT, decision="allow")
        device.wait_for("connected", timeout=STEP_TIMEOUT)
        self.supporter.wait_for("connected", timeout=STEP_TIMEOUT, code=code)
        device.wait_for("voip", timeout=STEP_TIMEOUT)
        self.supporter.wait_for("voip", timeout=STEP_TIMEOUT, code=code)
        state = self.code_state(code)
        if state != "active":
            fail(f"code {code} is '{state}' in 'rsup-supporter list', not 'active'")
        return code, device

    def case_session(self):
        code, device = self.active_session("ns-device-1")
        self.control("end", "--code", code)
        ended = device.wait_for(("disconnected", "error"), timeout=STEP_TIMEOUT)
        if ended.get("event") != "disconnected" or ended.get("reason") != "ended_by_supporter":
            fail(f"the device reported {ended.get('event')} reason={ended.get('reason')}, not disconnected "
                 "reason=ended_by_supporter")
        ended = self.supporter.wait_for("ended", timeout=STEP_TIMEOUT, code=code)
        if ended.get("reason") != "ended_by_supporter":
            fail(f"the supporter reported ended reason={ended.get('reason')}, not ended_by_supporter")
        try:
            status = device.process.wait(timeout=STEP_TIMEOUT)
        except subprocess.TimeoutExpired:
            fail("the device did not exit after the session ended")
        if status != 0:
            fail(f"the device exited with {status}")
        return f"session crossed the namespaces (code {code})"

    def case_link_loss(self, times):
        code, device = self.active_session("ns-device-2")
        time.sleep(KEEPALIVE / 2)  # a little steady state (keepalive traffic) before the cut
        cut = time.monotonic()
        down = subprocess.run([*self.in_dev(), "ip", "link", "set", self.dev_if, "down"], capture_output=True, text=True)
        if down.returncode != 0:
            fail(f"cutting the link: {down.stderr.strip()}")
        self.supporter.seen.append({"time": now_text(), "event": "(link cut)", "interface": f"{self.dev_ns}:{self.dev_if}"})
        wait = LOSS_BOUND + 5  # longer than the bound, to measure a late report too
        problems = []
        lost = ended = {}
        try:
            lost = device.wait_for(("disconnected", "error"), timeout=wait)
            times["device"] = lost["_received"] - cut
            if lost.get("reason") not in ("connection_lost", "keepalive_timeout"):
                problems.append(f"the device reported {lost.get('event')} reason={lost.get('reason')}, "
                                "not connection_lost/keepalive_timeout")
        except Failure as failure:
            problems.append(str(failure))
        try:
            ended = self.supporter.wait_for("ended", timeout=max(0.1, wait - (time.monotonic() - cut)), code=code)
            times["supporter"] = ended["_received"] - cut
            if ended.get("reason") != "connection_lost":
                problems.append(f"the supporter reported ended reason={ended.get('reason')}, not connection_lost")
        except Failure as failure:
            problems.append(str(failure))
        for side, seconds in list(times.items()):
            if seconds > LOSS_BOUND:
                problems.append(f"the {side} reported the loss after {seconds:.2f}s, over the {LOSS_BOUND:g}s bound")
        state = self.code_state(code)
        if state != "open":
            problems.append(f"code {code} is '{state}' in 'rsup-supporter list' after the loss, not 'open'")
        try:
            times["device exit status"] = device.process.wait(timeout=STEP_TIMEOUT)
        except subprocess.TimeoutExpired:
            problems.append("the device did not exit after losing the connection")
        if problems:
            fail("; ".join(problems))
        return (f"loss reported: device {lost.get('event')} reason={lost.get('reason')} after {times['device']:.2f}s, "
                f"supporter ended reason=connection_lost after {times['supporter']:.2f}s (code {code} open again; "
                f"device exit status {times['device exit status']})")


def now_text():
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + ".%03dZ" % (int(time.time() * 1000) % 1000)


def main(argv):
    if len(argv) != 7:
        print(__doc__, file=sys.stderr)
        return 2
    signal.signal(signal.SIGINT, on_signal)  # a background job of two-hosts.sh starts with SIGINT ignored
    signal.signal(signal.SIGTERM, on_signal)
    run = TwoHosts(*argv)
    results = []  # (name, passed, text)
    times = {}
    started = time.monotonic()
    try:
        try:
            run.start_supporter()
        except Failure as failure:
            results.append(("start the supporter node", False, str(failure)))
        else:
            for name, case in (("whole session across the namespaces", run.case_session),
                               ("link cut mid-session", lambda: run.case_link_loss(times))):
                try:
                    results.append((name, True, case()))
                except Failure as failure:
                    results.append((name, False, str(failure)))
        print_timeline(run.supporter, *run.devices)
    except Interrupted as interrupted:
        results.append(("interrupted", False, f"by {interrupted}"))
    finally:
        stop(*run.devices, run.supporter)
    print()
    for name, passed, text in results:
        print(f"{'PASS' if passed else 'FAIL'}  {name}: {text}")
    for side in ("device", "supporter"):
        if side in times:
            print(f"loss detection ({side}): {times[side]:.2f}s after the cut (bound {LOSS_BOUND:g}s = "
                  + ("RSUP_LOSS_BOUND" if "RSUP_LOSS_BOUND" in os.environ else
                     f"2 x keepalive {KEEPALIVE:g}s + close grace {CLOSE_GRACE:g}s + slack {SLACK:g}s") + ")")
    passed = len(results) == 2 and all(ok for _, ok, _ in results)
    print(f"two hosts: {'PASS' if passed else 'FAIL'} ({time.monotonic() - started:.1f}s)")
    if not passed:
        for side in (run.supporter, *run.devices):
            if side and side.errors:
                print(f"--- last stderr lines of the {side.name}:\n" + "\n".join(side.errors[-10:]))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
