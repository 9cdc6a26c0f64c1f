#!/usr/bin/env python3
"""The two-hosts check, run by scripts/two-hosts.sh once it has made the namespaces (see there).

Usage: two_hosts.py BIN_DIR WORK SUP_NS SUP_IF SUP_ADDR DEV_NS DEV_IF
       two_hosts.py --cluster BIN_DIR WORK STORE A_NS A_ADDR B_NS B_ADDR DEV_NS   (scripts/two-hosts.sh --cluster)

The supporter node serves on SUP_ADDR:7443 inside SUP_NS; each device node runs inside DEV_NS. Three cases:
  session      device online -> request -> allow -> connected -> VoIP -> supporter ends -> device ended
  resume       a second session made active, then DEV_IF set down: both sides must report the loss
               ("reconnecting", protocol 1.1) within the bound (seconds, RSUP_LOSS_BOUND; default 2 x keepalive +
               2 s slack); DEV_IF set up again within the grace period: both report "resumed", the code is still
               active, and the session ends normally. Measures link restored -> resumed.
  past grace   a third session, DEV_IF set down and left down past the grace period (GRACE): both sides end the
               session with connection_lost, the code is open again.
Prints a timeline per case and a PASS/FAIL summary with the measured times; exits 0 only if all passed.

With --cluster: supporter nodes A (A_ADDR:7443, in A_NS) and B (B_ADDR:7443, in B_NS) share the PostgreSQL database
STORE (a libpq connection string); the device runs in DEV_NS. Steps, each a PASS/FAIL line:
  device on A          a code made on node B, joined by a device on node A; node B lists it online on node A
  routed request       `rsup-supporter connect` on node B's control socket reaches the device on A, which allows
  active on B          node A reports connected; node B lists the code active (measured from the connect command)
  end from B           `rsup-supporter end` on node B: the device hears ended_by_supporter, A reports the end,
                       node B lists the code open again with no node
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


class ClusterHosts:
    """Two supporter nodes on one PostgreSQL database in two namespaces, the device in a third (--cluster)."""

    def __init__(self, bin_dir, work, store, a_ns, a_addr, b_ns, b_addr, dev_ns):
        self.supporter_bin, self.device_bin = binaries(bin_dir)
        self.work, self.store = work, store
        self.a_ns, self.a_addr, self.b_ns, self.b_addr, self.dev_ns = a_ns, a_addr, b_ns, b_addr, dev_ns
        self.certs = None
        self.nodes = {}  # "A"/"B" -> Side
        self.node_ids = {}
        self.device = None
        self.token = None
        self.code = None
        self.notes = []

    def data(self, name):
        return os.path.join(self.work, f"data-{name.lower()}")

    def control(self, name, *arguments):
        namespace = self.a_ns if name == "A" else self.b_ns
        return control(self.supporter_bin, self.data(name), *arguments, prefix=["ip", "netns", "exec", namespace])

    def entry(self, name, code):
        for entry in self.control(name, "list")["codes"]:
            if entry.get("code") == code:
                return entry
        return None

    def wait_entry(self, name, code, predicate, timeout=STEP_TIMEOUT):
        """Polls node `name`'s `list` until the code's entry satisfies `predicate`; returns it, or fails."""
        deadline = time.monotonic() + timeout
        entry = None
        while time.monotonic() < deadline:
            entry = self.entry(name, code)
            if entry is not None and predicate(entry):
                return entry
            time.sleep(0.05)
        fail(f"node {name} lists code {code} as {entry}")

    def start_nodes(self):
        self.certs = make_certs(os.path.join(self.work, "certs"), self.a_addr, self.b_addr)
        for name, namespace, address in (("A", self.a_ns, self.a_addr), ("B", self.b_ns, self.b_addr)):
            self.nodes[name] = Side(
                f"node {name}",
                ["ip", "netns", "exec", namespace, self.supporter_bin, "serve", "--listen", f"{address}:{PORT}",
                 "--cert", f"{self.certs}/supporter.pem", "--key", f"{self.certs}/supporter.key",
                 "--data", self.data(name), "--store", self.store, "--presence-lease", "10s",
                 "--non-interactive", "--json"],
            )
        for name, side in self.nodes.items():
            listening = side.wait_for("listening", timeout=STEP_TIMEOUT)
            if not listening.get("node_id"):
                fail(f"node {name} did not say its node id (is it on PostgreSQL?): {listening}")
            self.node_ids[name] = listening["node_id"]
        if self.node_ids["A"] == self.node_ids["B"]:
            fail(f"both nodes have the id {self.node_ids['A']}")
        self.token = self.control("A", "token")["token"]
        password_file = os.path.join(self.work, "alice.password")
        with open(os.open(password_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as handle:
            handle.write("three hosts password\n")
        self.control("B", "user", "add", "alice", "--display-name", "Alice", "--password-file", password_file)
        return (f"node A {self.node_ids['A']} on {self.a_addr}:{PORT}, node B {self.node_ids['B']} on "
                f"{self.b_addr}:{PORT}, one database")

    def case_device_on_a(self):
        # A node reads the database at start and LISTENs a moment later; a change committed in between would not
        # reach it, so a code node A never hears of is made again (and said so).
        for attempt in range(5):
            code = self.control("B", "create", "--type", "remote", "--description", "three hosts")["code"]["code"]
            try:
                self.wait_entry("A", code, lambda entry: True, timeout=3)
                break
            except Failure:
                self.notes.append(f"node A never heard of code {code}, made on node B (attempt {attempt + 1})")
        else:
            fail("node A never heard of the codes made on node B")
        self.code = code
        self.device = Side(
            "device",
            ["ip", "netns", "exec", self.dev_ns, self.device_bin, "connect", f"{self.a_addr}:{PORT}", "--code", code,
             "--token", self.token, "--ca", f"{self.certs}/ca.pem", "--auto-accept", "--json",
             "--name", "ns-cluster-device"],
        )
        self.device.wait_for("online", timeout=STEP_TIMEOUT)
        self.nodes["A"].wait_for("device_online", timeout=STEP_TIMEOUT, code=code)
        seen = self.wait_entry("B", code, lambda entry: entry.get("state") == "online")
        if seen.get("node") != self.node_ids["A"]:
            fail(f"node B lists code {code} online on node {seen.get('node')}, not node A ({self.node_ids['A']})")
        return f"code {code} made on node B, device online on node A; node B lists it online on node {seen['node']}"

    def case_routed_request(self, times):
        started = time.monotonic()
        self.control("B", "connect", "--code", self.code, "--as", "alice", "--type", "screen")
        times["connect"] = started
        request = self.device.wait_for("request", timeout=STEP_TIMEOUT)
        self.device.wait_for("answer", timeout=STEP_TIMEOUT, decision="allow")
        times["request"] = request["_received"] - started
        return (f"'rsup-supporter connect' on node B reached the device on node A after {times['request']:.2f}s; "
                "the device allowed")

    def case_active_on_b(self, times):
        self.device.wait_for("connected", timeout=STEP_TIMEOUT)
        self.nodes["A"].wait_for("connected", timeout=STEP_TIMEOUT, code=self.code)
        self.wait_entry("B", self.code, lambda entry: entry.get("state") == "active")
        times["active"] = time.monotonic() - times["connect"]
        return f"node A reported connected; node B lists the code active {times['active']:.2f}s after its connect"

    def case_end_from_b(self):
        self.control("B", "end", "--code", self.code)
        ended = self.device.wait_for(("disconnected", "error"), timeout=STEP_TIMEOUT)
        if ended.get("event") != "disconnected" or ended.get("reason") != "ended_by_supporter":
            fail(f"the device reported {ended.get('event')} reason={ended.get('reason')}, not disconnected "
                 "reason=ended_by_supporter")
        ended = self.nodes["A"].wait_for("ended", timeout=STEP_TIMEOUT, code=self.code)
        if ended.get("reason") != "ended_by_supporter":
            fail(f"node A reported ended reason={ended.get('reason')}, not ended_by_supporter")
        self.wait_entry("B", self.code, lambda entry: entry.get("state") == "open" and entry.get("node") is None)
        try:
            status = self.device.process.wait(timeout=STEP_TIMEOUT)
        except subprocess.TimeoutExpired:
            fail("the device did not exit after the session ended")
        if status != 0:
            fail(f"the device exited with {status}")
        return "'rsup-supporter end' on node B ended the session on node A; node B lists the code open again"


def main_cluster(argv):
    if len(argv) != 8:
        print(__doc__, file=sys.stderr)
        return 2
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    run = ClusterHosts(*argv)
    steps = (("two nodes on one PostgreSQL", run.start_nodes),
             ("device on node A, seen from node B", run.case_device_on_a),
             ("request from node B routed to the device on node A", lambda: run.case_routed_request(times)),
             ("session active, seen from node B", lambda: run.case_active_on_b(times)),
             ("end from node B", run.case_end_from_b))
    results = []
    times = {}
    started = time.monotonic()
    try:
        for name, step in steps:
            if results and not results[-1][1]:
                results.append((name, False, "not run (an earlier step failed)"))
                continue
            try:
                results.append((name, True, step()))
            except Failure as failure:
                results.append((name, False, str(failure)))
        print_timeline(*run.nodes.values(), *([run.device] if run.device else []))
    except Interrupted as interrupted:
        results.append(("interrupted", False, f"by {interrupted}"))
    finally:
        stop(*([run.device] if run.device else []), *run.nodes.values())
    print()
    for name, passed, text in results:
        print(f"{'PASS' if passed else 'FAIL'}  {name}: {text}")
    for note in run.notes:
        print(f"note: {note}")
    passed = len(results) == len(steps) and all(ok for _, ok, _ in results)
    print(f"three hosts (cluster): {'PASS' if passed else 'FAIL'} ({time.monotonic() - started:.1f}s)")
    if not passed:
        for side in (*run.nodes.values(), run.device):
            if side and side.errors:
                print(f"--- last stderr lines of the {side.name}:\n" + "\n".join(side.errors[-10:]))
    return 0 if passed else 1


def now_text():
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + ".%03dZ" % (int(time.time() * 1000) % 1000)


def main(argv):
    if argv[:1] == ["--cluster"]:
        return main_cluster(argv[1:])
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
