#!/usr/bin/env python3
"""The two-hosts check, run by scripts/two-hosts.sh once it has made the namespaces (see there).

Usage: two_hosts.py BIN_DIR WORK SUP_NS SUP_IF SUP_ADDR DEV_NS DEV_IF

The supporter node serves on SUP_ADDR:7443 inside SUP_NS; each device node runs inside DEV_NS. Three cases:
  session      device online -> request -> allow -> connected -> VoIP -> supporter ends -> device ended
  resume       a second session made active, then DEV_IF set down: both sides must report the loss
               ("reconnecting", protocol 1.1) within the bound (seconds, RSUP_LOSS_BOUND; default 2 x keepalive +
               2 s slack); DEV_IF set up again within the grace period: both report "resumed", the code is still
               active, and the session ends normally. Measures link restored -> resumed.
  past grace   a third session, DEV_IF set down and left down past the grace period (GRACE): both sides end the
               session with connection_lost, the code is open again.
Prints a timeline per case and a PASS/FAIL summary with the measured times; exits 0 only if all passed.
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
GRACE = 5.0  # seconds, --resume-grace on the supporter node
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
             "--non-interactive", "--json", "--keepalive", f"{KEEPALIVE:g}s", "--resume-grace", f"{GRACE:g}s"],
        )
        listening = self.supporter.wait_for("listening", timeout=STEP_TIMEOUT)
        if listening.get("port") != PORT:
            fail(f"the supporter listens on {listening}, not port {PORT}")
        self.token = self.control("token")["token"]
        password_file = os.path.join(self.work, "alice.password")
        with open(os.open(password_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as handle:
            handle.write("two hosts password\n")
        self.control("user", "add", "alice", "--display-name", "Alice", "--password-file", password_file)

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
        self.control("connect", "--code", code, "--as", "alice", "--type", "screen", "--features", "voip")
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

    def set_link(self, state):
        result = subprocess.run([*self.in_dev(), "ip", "link", "set", self.dev_if, state], capture_output=True, text=True)
        if result.returncode != 0:
            fail(f"setting {self.dev_if} {state}: {result.stderr.strip()}")
        self.supporter.seen.append({"time": now_text(), "event": f"(link {state})", "interface": f"{self.dev_ns}:{self.dev_if}"})

    def cut_and_detect(self, code, device, times):
        """Cuts the link under an active session; both sides must report "reconnecting" within the bound."""
        time.sleep(KEEPALIVE / 2)  # a little steady state (keepalive traffic) before the cut
        cut = time.monotonic()
        self.set_link("down")
        problems = []
        for side, waiter in (("device", lambda timeout: device.wait_for("reconnecting", timeout=timeout)),
                             ("supporter", lambda timeout: self.supporter.wait_for("reconnecting", timeout=timeout, code=code))):
            try:
                event = waiter(max(0.1, LOSS_BOUND + 5 - (time.monotonic() - cut)))
                times[side] = event["_received"] - cut
                if times[side] > LOSS_BOUND:
                    problems.append(f"the {side} reported the loss after {times[side]:.2f}s, over the {LOSS_BOUND:g}s bound")
            except Failure as failure:
                problems.append(str(failure))
        return cut, problems

    def case_resume(self, times):
        code, device = self.active_session("ns-device-2")
        _, problems = self.cut_and_detect(code, device, times)
        if problems:
            self.set_link("up")
            fail("; ".join(problems))
        time.sleep(1.0)  # down a while: the device's redials fail meanwhile
        restored = time.monotonic()
        self.set_link("up")
        try:
            resumed = device.wait_for("resumed", timeout=GRACE + 5)
            times["resume"] = resumed["_received"] - restored
            self.supporter.wait_for("resumed", timeout=STEP_TIMEOUT, code=code)
        except Failure as failure:
            fail(f"no resume after the link came back: {failure}")
        state = self.code_state(code)
        if state != "active":
            fail(f"code {code} is '{state}' after the resume, not 'active'")
        self.control("end", "--code", code)
        ended = device.wait_for(("disconnected", "error"), timeout=STEP_TIMEOUT)
        if ended.get("reason") != "ended_by_supporter":
            fail(f"after the resume the device reported {ended.get('event')} reason={ended.get('reason')}")
        return (f"loss reported as reconnecting: device after {times['device']:.2f}s, supporter after "
                f"{times['supporter']:.2f}s; link restored -> resumed in {times['resume']:.2f}s; the session went on "
                f"and ended normally (code {code})")

    def case_past_grace(self, times):
        code, device = self.active_session("ns-device-3")
        cut, problems = self.cut_and_detect(code, device, {})
        problems = list(problems)
        try:
            lost = device.wait_for(("disconnected", "error"), timeout=GRACE + LOSS_BOUND + 5)
            times["device gave up"] = lost["_received"] - cut
            if lost.get("reason") not in ("connection_lost",) and "lost" not in str(lost):
                problems.append(f"the device reported {lost.get('event')} {lost.get('reason')}, not connection_lost")
        except Failure as failure:
            problems.append(str(failure))
        try:
            ended = self.supporter.wait_for("ended", timeout=GRACE + LOSS_BOUND + 5, code=code)
            times["supporter gave up"] = ended["_received"] - cut
            if ended.get("reason") != "connection_lost":
                problems.append(f"the supporter reported ended reason={ended.get('reason')}, not connection_lost")
        except Failure as failure:
            problems.append(str(failure))
        self.set_link("up")
        state = self.code_state(code)
        if state != "open":
            problems.append(f"code {code} is '{state}' after the grace period, not 'open'")
        try:
            device.process.wait(timeout=STEP_TIMEOUT)
        except subprocess.TimeoutExpired:
            problems.append("the device did not exit after the grace period")
        if problems:
            fail("; ".join(problems))
        return (f"link down past the {GRACE:g}s grace period: the device gave up after {times['device gave up']:.2f}s, "
                f"the supporter ended the session (connection_lost) after {times['supporter gave up']:.2f}s; code "
                f"{code} open again")


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
                               ("link cut and restored within the grace period", lambda: run.case_resume(times)),
                               ("link cut past the grace period", lambda: run.case_past_grace(times))):
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
    if "resume" in times:
        print(f"resume: link restored -> resumed in {times['resume']:.2f}s (device redial back-off: 250 ms doubling "
              "to 4 s, +/-20 % jitter)")
    passed = len(results) == 3 and all(ok for _, ok, _ in results)
    print(f"two hosts: {'PASS' if passed else 'FAIL'} ({time.monotonic() - started:.1f}s)")
    if not passed:
        for side in (run.supporter, *run.devices):
            if side and side.errors:
                print(f"--- last stderr lines of the {side.name}:\n" + "\n".join(side.errors[-10:]))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
