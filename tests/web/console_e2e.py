#!/usr/bin/env python3
"""The supporter's web console in a real browser, against a real supporter node and real devices.

Starts everything itself: development certificates (certs/make-dev-certs.sh), `rsup-supporter serve` with the REST
API and the console, accounts made with `rsup-supporter user add`, a device token, `rsup-device connect` processes,
headless Chromium through chromedriver (Selenium), a small HTTPS page on another port for the CSRF scenario, and
the webhook receiver (tests/webhooks/receiver.py) for the webhooks scenario.
Prints `PASS name` or `FAIL name: why` per scenario and exits 1 if any failed. Screenshots go to
.build/screenshots/ (console-active.png is the one docs/rest.md shows).

Usage: RSUP_BIN_DIR=.build/debug python3 tests/web/console_e2e.py [SCENARIO ...]
  With names (see SCENARIOS below, e.g. `webhooks`), runs only those, in the usual order; some scenarios build on
  earlier ones (bob-cannot-act-on-alices-code needs alice-connects-live).
Needs Debian's chromium and chromium-driver and Python's selenium (scripts/install-deps.sh installs them).
"""
import base64
import hashlib
import hmac
import http.client
import http.server
import json
import os
import queue
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from demo import Failure, Side, control, make_certs, stop  # noqa: E402  (the demo's process helpers)

BIN_DIR = os.path.abspath(os.environ.get("RSUP_BIN_DIR", os.path.join(ROOT, ".build", "debug")))
SCREENSHOTS = os.path.join(ROOT, ".build", "screenshots")
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
WHOLE_RUN_SECONDS = 400   # the script stops itself, whatever hangs (a deadline: a passing run takes far less)
WAIT = 60                 # one wait in the page: a deadline, generous for a CPU hog on both cores

try:
    from selenium import webdriver
    from selenium.common.exceptions import (
        NoAlertPresentException, NoSuchElementException, StaleElementReferenceException, TimeoutException,
        WebDriverException)
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select, WebDriverWait
except ImportError:
    webdriver = None

ACCOUNTS = {
    "alice": ("Alice Example", "supporter", "alice-correct-horse-7"),
    "bob": ("Bob Builder", "supporter", "bob-battery-staple-42"),
    "root": ("Rita Admin", "admin", "rita-admin-passphrase-9"),
}
XSS_NAME = "<img src=x onerror=alert(1)>"
XSS_DESCRIPTION = "<script>alert(2)</script> & <b>bold</b>"
# C1, bidi and isolate controls (issue 20, finding 12): escaped in the API's JSON, shown visibly escaped in the page.
CONTROLS_DESCRIPTION = "left\u202eright\u009bend\u2066x\u2028y"
CONTROLS_SHOWN = "left\\u{202E}right\\x9Bend\\u{2066}x\\u{2028}y"


class RunTimeout(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


# ---------------------------------------------------------------- the world: node, devices, browsers

class World:
    def __init__(self):
        self.work = tempfile.mkdtemp(prefix="rsup-web-")
        self.data = os.path.join(self.work, "data")
        self.node = None
        self.devices = []
        self.browsers = []
        self.attacker = None
        self.proxy = None
        self.receiver = None     # the webhook receiver (tests/webhooks/receiver.py)
        self.supporter_bin = os.path.join(BIN_DIR, "rsup-supporter")
        self.device_bin = os.path.join(BIN_DIR, "rsup-device")
        self.codes = {}          # what scenarios leave for later ones
        self.alice = None        # alice's browser, shared by the scenarios that act as her
        self.log_lines = []

    # -- node
    def start_node(self):
        for path in (self.supporter_bin, self.device_bin):
            check(os.access(path, os.X_OK), f"{path} is not built (swift build, or set RSUP_BIN_DIR)")
        self.certs = make_certs(os.path.join(self.work, "certs"))
        self.node = Side("supporter", [
            self.supporter_bin, "serve", "--non-interactive", "--listen", "127.0.0.1:0", "--api-listen", "127.0.0.1:0",
            "--data", self.data, "--cert", f"{self.certs}/supporter.pem", "--key", f"{self.certs}/supporter.key",
            # Webhooks to the test receiver on 127.0.0.1 (its certificate is the supporter's, from the dev CA), retried
            # quickly: harmless for the scenarios that add no endpoint.
            "--webhook-trust", f"{self.certs}/ca.pem", "--webhook-allow-address", "127.0.0.0/8",
            "--webhook-retry-base", "200ms",
            "--json"])
        listening = self.node.wait_for("listening")
        self.port = listening["port"]
        check("api_port" in listening, f"the node's listening event has no api_port: {listening}")
        self.api_port = listening["api_port"]
        self.base = f"https://127.0.0.1:{self.api_port}"
        self.tls = ssl.create_default_context(cafile=f"{self.certs}/ca.pem")
        for login, (name, role, password) in ACCOUNTS.items():
            self.add_user(login, name, role, password)
        self.device_token = control(self.supporter_bin, self.data, "token")["token"]
        self.token_file = os.path.join(self.work, "device-token")
        with open(os.open(self.token_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as handle:
            handle.write(self.device_token + "\n")

    def add_user(self, login, name, role, password):
        password_file = os.path.join(self.work, f"{login}.password")
        with open(os.open(password_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as handle:
            handle.write(password + "\n")
        result = subprocess.run(
            [self.supporter_bin, "user", "add", login, "--display-name", name, "--role", role,
             "--password-file", password_file, "--data", self.data],
            capture_output=True, text=True, timeout=30)
        check(result.returncode == 0, f"rsup-supporter user add {login}: {(result.stderr or result.stdout).strip()}")

    def start_device(self, code, name, port=None, interactive=False, auto_accept=True):
        """`rsup-device connect` on `code`. With `auto_accept` it allows every request and grants every feature ask
        at once; without it (then `interactive`) it prompts for each, and the scenario answers with `send("y")`."""
        device = Side(f"device '{name}'", [
            self.device_bin, "connect", f"127.0.0.1:{port or self.port}", "--code", code, "--token-file",
            self.token_file, "--ca", f"{self.certs}/ca.pem", "--name", name,
            *(["--auto-accept"] if auto_accept else []), "--json"],
            interactive=interactive or not auto_accept)
        self.devices.append(device)
        device.wait_for("online")
        return device

    # -- plain HTTPS, for headers and replayed requests
    def request(self, method, path, body=None, headers=None):
        connection = http.client.HTTPSConnection("127.0.0.1", self.api_port, context=self.tls, timeout=15)
        try:
            payload = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
            all_headers = {"Accept": "application/json", **(headers or {})}
            if payload is not None and "Content-Type" not in all_headers:
                all_headers["Content-Type"] = "application/json"
            connection.request(method, path, body=payload, headers=all_headers)
            response = connection.getresponse()
            return response.status, response.headers, response.read().decode("utf-8", "replace")
        finally:
            connection.close()

    # -- browsers
    def browser(self, name, performance_log=False):
        profile = os.path.join(self.work, f"profile-{name}")
        os.makedirs(profile, exist_ok=True)
        options = Options()
        options.binary_location = CHROMIUM
        for argument in ("--headless=new", "--no-sandbox", "--ignore-certificate-errors", "--disable-gpu",
                         "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--window-size=1280,900",
                         "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                         "--disable-background-networking", "--disable-sync", "--password-store=basic",
                         "--disable-features=Translate,OptimizationHints,MediaRouter"):
            options.add_argument(argument)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL", **({"performance": "ALL"} if performance_log else {})})
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        driver.set_page_load_timeout(WAIT)
        driver.set_script_timeout(WAIT)
        self.browsers.append(driver)
        return driver

    def stop(self):
        for driver in self.browsers:
            try:
                driver.quit()
            except Exception:  # noqa: BLE001 — cleaning up whatever state the browser is in
                pass
        if self.proxy:
            self.proxy.close()
        if self.attacker:
            self.attacker.shutdown()
            self.attacker.server_close()
        stop(*self.devices, self.receiver, self.node)
        shutil.rmtree(self.work, ignore_errors=True)


# ---------------------------------------------------------------- page helpers

def wait(driver, condition, what, timeout=WAIT):
    try:
        # Rows are rebuilt on every event: an element found a moment ago may be gone; look again.
        return WebDriverWait(driver, timeout, poll_frequency=0.1,
                             ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)).until(condition)
    except TimeoutException:
        banner = ""
        try:
            if driver.find_element(By.ID, "banner").is_displayed():
                banner = f" (the page's banner says: {driver.find_element(By.ID, 'banner-text').text})"
        except WebDriverException:
            pass
        raise Failure(f"timed out after {timeout}s waiting for {what}{banner}") from None


def screenshot(driver, name):
    os.makedirs(SCREENSHOTS, exist_ok=True)
    driver.save_screenshot(os.path.join(SCREENSHOTS, name))


def sign_in(driver, world, login, password=None):
    driver.get(world.base + "/")
    field = wait(driver, lambda d: d.find_element(By.ID, "sign-in-login").is_displayed()
                 and d.find_element(By.ID, "sign-in-login"), "the sign-in form")
    field.clear()
    field.send_keys(login)
    secret = driver.find_element(By.ID, "sign-in-password")
    secret.clear()
    secret.send_keys(password or ACCOUNTS[login][2], Keys.ENTER)  # the form submits with Enter
    wait(driver, lambda d: d.find_element(By.ID, "account-display-name").text == ACCOUNTS[login][0],
         f"{login}'s display name in the header")
    wait(driver, lambda d: d.find_element(By.ID, "codes-panel").get_attribute("data-loaded") == "true",
         "the list of codes")


def row(driver, code):
    rows = driver.find_elements(By.CSS_SELECTOR, f'#codes-body tr[data-code="{code}"]')
    return rows[0] if rows else None


def row_state(driver, code):
    found = row(driver, code)
    return found.get_attribute("data-state") if found else None


def click(driver, selector, what):
    """Clicks the element `selector` finds, looking again if the list was rebuilt under it."""
    def attempt(d):
        d.find_element(By.CSS_SELECTOR, selector).click()
        return True
    wait(driver, attempt, what)


def click_action(driver, code, action):
    click(driver, f'#codes-body tr[data-code="{code}"] button[data-action="{action}"]', f"a '{action}' button on {code}")


def create_code(driver, description, customer, assign=True, minutes="30"):
    driver.find_element(By.ID, "new-code-toggle").click()
    wait(driver, lambda d: d.find_element(By.ID, "new-code-form").is_displayed(), "the new-code form")
    Select(driver.find_element(By.ID, "new-code-type")).select_by_value("remote_support")
    driver.find_element(By.ID, "new-code-description").send_keys(description)
    driver.find_element(By.ID, "new-code-customer").send_keys(customer)
    driver.find_element(By.ID, "new-code-waiting").send_keys("A supporter will be with you shortly")
    box = driver.find_element(By.ID, "new-code-assign")
    if box.is_selected() != assign:
        box.click()
    minutes_field = driver.find_element(By.ID, "new-code-minutes")
    minutes_field.send_keys(minutes, Keys.ENTER)
    code = wait(driver, lambda d: d.find_element(By.ID, "new-code-result").is_displayed()
                and d.find_element(By.ID, "new-code-value").text, "the new code")
    wait(driver, lambda d: row(d, code) is not None, f"the row of {code}")
    return code


def no_alert(driver):
    try:
        alert = driver.switch_to.alert
        return f"an alert is open: {alert.text!r}"
    except NoAlertPresentException:
        return None


def page_fetch(driver, method, path, body=None, csrf=True):
    """A fetch from inside the console's page (the signed-in cookie, the page's own Origin)."""
    return driver.execute_async_script("""
        const [method, path, body, csrf, done] = arguments;
        (async () => {
          const headers = {'Content-Type': 'application/json', 'Accept': 'application/json'};
          if (csrf) {
            const me = await (await fetch('/api/v1/me', {credentials: 'same-origin'})).json();
            headers['X-CSRF-Token'] = me.csrf_token;
          }
          const init = {method, headers, credentials: 'same-origin'};
          if (body !== null) init.body = JSON.stringify(body);
          const response = await fetch(path, init);
          done({status: response.status, body: await response.text()});
        })().catch((error) => done({status: -1, body: String(error)}));
    """, method, path, body, csrf)


def browser_problems(driver):
    """CSP violations and uncaught script errors the browser logged."""
    problems = []
    for entry in driver.get_log("browser"):
        message = entry.get("message", "")
        if "Content Security Policy" in message or "Uncaught" in message:
            problems.append(message)
    return problems


# ---------------------------------------------------------------- scenarios

def scenario_security_headers(world):
    status, headers, _ = world.request("GET", "/")
    check(status == 200, f"GET / answered {status}")
    csp = headers.get("Content-Security-Policy", "")
    for directive in ("default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'",
                      "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'"):
        check(directive in csp, f"CSP lacks {directive!r}: {csp!r}")
    check("max-age=" in headers.get("Strict-Transport-Security", ""), f"HSTS: {headers.get('Strict-Transport-Security')!r}")
    check(headers.get("X-Content-Type-Options", "").lower() == "nosniff", "no X-Content-Type-Options: nosniff")
    check(headers.get("X-Frame-Options", "").upper() == "DENY", f"X-Frame-Options: {headers.get('X-Frame-Options')!r}")
    check(headers.get("Referrer-Policy", "") == "no-referrer", f"Referrer-Policy: {headers.get('Referrer-Policy')!r}")
    check("text/html" in headers.get("Content-Type", ""), f"/ is {headers.get('Content-Type')!r}")
    for path, kind in (("/console.js", "javascript"), ("/console.css", "text/css")):
        status, headers, _ = world.request("GET", path)
        check(status == 200 and kind in headers.get("Content-Type", ""), f"GET {path}: {status} {headers.get('Content-Type')!r}")
        check("default-src 'none'" in headers.get("Content-Security-Policy", ""), f"{path} has no CSP")
    origin = {"Origin": world.base}
    status, _, body = world.request("POST", "/api/v1/login", {"login": "alice", "password": "wrong-password"}, origin)
    check(status == 401, f"a wrong password answered {status}: {body}")
    check(json.loads(body).get("error", {}).get("message"), f"the 401 has no error message: {body}")
    status, headers, body = world.request("POST", "/api/v1/login", {"login": "bob", "password": ACCOUNTS["bob"][2]}, origin)
    check(status == 200, f"login answered {status}: {body}")
    cookies = [value for key, value in headers.items() if key.lower() == "set-cookie"]
    session = [cookie for cookie in cookies if cookie.startswith("rsup_session=")]
    check(session, f"no rsup_session cookie: {cookies}")
    flags = [part.strip().lower() for part in session[0].split(";")[1:]]
    for flag in ("httponly", "secure", "samesite=strict"):
        check(flag in flags, f"the session cookie lacks {flag}: {session[0].split(';', 1)[1]!r}")
    check(json.loads(body).get("csrf_token"), "the login answer has no csrf_token")
    # The files themselves: nothing the CSP would have to allow.
    with open(os.path.join(ROOT, "Sources", "SupporterREST", "Console", "index.html"), encoding="utf-8") as handle:
        html = handle.read().lower()
    check("<script>" not in html and " style=" not in html and " onclick=" not in html and " onload=" not in html,
          "the console's index.html holds inline script, handlers or styles")


def scenario_alice_session(world):
    driver = world.alice
    # A wrong password first: the server's message shows under the form.
    driver.get(world.base + "/")
    field = wait(driver, lambda d: d.find_element(By.ID, "sign-in-login").is_displayed()
                 and d.find_element(By.ID, "sign-in-login"), "the sign-in form")
    field.send_keys("alice")
    driver.find_element(By.ID, "sign-in-password").send_keys("not-her-password", Keys.ENTER)
    error = wait(driver, lambda d: d.find_element(By.ID, "sign-in-error").is_displayed()
                 and d.find_element(By.ID, "sign-in-error").text, "the sign-in error")
    status, _, body = world.request("POST", "/api/v1/login", {"login": "alice", "password": "x"}, {"Origin": world.base})
    server_message = json.loads(body).get("error", {}).get("message", "")
    check(error.startswith(server_message), f"the page shows {error!r}, the server says {server_message!r}")
    screenshot(driver, "console-sign-in-error.png")

    sign_in(driver, world, "alice")
    check(driver.find_element(By.ID, "account-role").text.lower() == "supporter", "the header does not show the role")
    check(driver.find_element(By.ID, "codes-empty").is_displayed(), "no empty state on a node without codes")
    check(not driver.find_element(By.ID, "tab-users").is_displayed(), "a supporter sees the Users tab")
    driver.execute_script("window.__sameDocument = 42;")  # gone if the page ever reloads

    code = create_code(driver, "Printer shows error 0x42", "Ada Lovelace", assign=True)
    world.codes["alice"] = code
    # Rows are rebuilt on every event: read them inside a wait, which looks again when one went stale.
    wait(driver, lambda d: "alice" in row(d, code).find_element(By.CSS_SELECTOR, ".c-assigned").text,
         "the code assigned to alice")
    driver.execute_script("""
        const code = arguments[0];
        window.__states = [];
        const note = () => {
          const row = document.querySelector(`#codes-body tr[data-code="${code}"]`);
          const state = row && row.dataset.state;
          if (state && window.__states[window.__states.length - 1] !== state) window.__states.push(state);
        };
        note();
        new MutationObserver(note).observe(document.getElementById('codes-body'), {childList: true, subtree: true, attributes: true});
    """, code)

    device = world.start_device(code, "Ada's Pixel 8")
    wait(driver, lambda d: row_state(d, code) == "online"
         and "Ada's Pixel 8" in row(d, code).find_element(By.CSS_SELECTOR, ".c-state").text,
         "the row to show online with the device's name")
    screenshot(driver, "console-online.png")

    click_action(driver, code, "connect")
    wait(driver, lambda d: d.find_element(By.ID, "connect-dialog").is_displayed(), "the connect dialog")
    driver.find_element(By.ID, "connect-type-screen").click()
    for feature in ("voip", "chat", "file_share", "remote_control", "ar_pointer", "app_messages"):
        box = driver.find_element(By.ID, f"feature-{feature}")
        if box.is_selected() != (feature in ("voip", "chat")):
            box.click()
    driver.find_element(By.ID, "connect-submit").click()
    wait(driver, lambda d: row_state(d, code) == "active", "the row to show active", timeout=40)
    states = driver.execute_script("return window.__states;")
    # The row follows the session live: online, then active. The pending request in between lasts as long as the
    # device takes to answer — this one allows at once (--auto-accept), so the request and the start may reach the
    # console in one batch of the event stream and the row may go straight to active. Seen, it must come first.
    check("online" in states and "active" in states and states.index("online") < states.index("active"),
          f"the row did not go from online to active: {states}")
    if "request_pending" in states:
        check(states.index("request_pending") < states.index("active"),
              f"the row showed the pending request after active: {states}")
    check(driver.execute_script("return window.__sameDocument;") == 42, "the page reloaded")
    device.wait_for("connected")
    driver.execute_script("document.activeElement && document.activeElement.blur && document.activeElement.blur();")
    screenshot(driver, "console-active.png")

    click_action(driver, code, "end")
    wait(driver, lambda d: row_state(d, code) not in ("active", None), "the row to leave active")
    device.wait_for("disconnected")

    click_action(driver, code, "audit")
    wanted = ["code_created", "device_online", "request_sent", "request_allowed", "session_started", "session_ended"]

    def audit_kinds(d):
        return [r.get_attribute("data-kind") for r in d.find_elements(By.CSS_SELECTOR, "#audit-body tr")]

    wait(driver, lambda d: all(kind in audit_kinds(d) for kind in wanted),
         f"the audit panel to list {', '.join(wanted)}")
    actors = {}
    for audit_row in driver.find_elements(By.CSS_SELECTOR, "#audit-body tr"):
        actors.setdefault(audit_row.get_attribute("data-kind"), audit_row.find_element(By.CSS_SELECTOR, ".a-actor").text)
    for kind in ("code_created", "request_sent", "session_ended"):
        check("Alice Example" in actors.get(kind, "") or "alice" in actors.get(kind, ""),
              f"the actor of {kind} is {actors.get(kind)!r}, not alice")
    screenshot(driver, "console-audit.png")
    check(driver.execute_script("return window.__sameDocument;") == 42, "the page reloaded")
    problems = browser_problems(driver)
    check(not problems, f"the browser logged: {problems[:3]}")


def panel_feature_state(driver, feature):
    items = driver.find_elements(By.CSS_SELECTOR, f'#session-features li[data-feature="{feature}"]')
    return items[0].get_attribute("data-state") if items else None


def scenario_session_panel(world):
    """Issue 24: inside a live session the supporter chats both ways and sees delivery, asks for a feature and sees it
    granted then revoked, withdraws an ask the device's user has not answered (protocol 1.2, ask_withdraw), receives a
    file and downloads it byte-identical, sees markup as text, and follows the device through a resume.

    The device prompts (no --auto-accept): the scenario answers its request and the file_share ask with "y", and
    leaves the app_messages ask unanswered so that the supporter can withdraw it."""
    driver = world.alice
    driver.get(world.base + "/")
    wait(driver, lambda d: d.find_element(By.ID, "codes-panel").get_attribute("data-loaded") == "true", "the console")
    code = create_code(driver, "Crash on start", "Grace Hopper", assign=True)
    relay = CuttableProxy(world.port)  # the device's link, to cut for a resume
    try:
        device = world.start_device(code, "Grace's Galaxy", port=relay.port, auto_accept=False)
        wait(driver, lambda d: row_state(d, code) == "online", "the row to show online")
        click_action(driver, code, "connect")
        wait(driver, lambda d: d.find_element(By.ID, "connect-dialog").is_displayed(), "the connect dialog")
        driver.find_element(By.ID, "connect-type-screen").click()
        for feature in ("voip", "chat", "file_share", "remote_control", "ar_pointer", "app_messages"):
            box = driver.find_element(By.ID, f"feature-{feature}")
            if box.is_selected() != (feature == "chat"):
                box.click()
        driver.find_element(By.ID, "connect-submit").click()
        device.wait_for("hint", text="allow? [y/N] ")  # the request waits for the device's user
        device.send("y")
        wait(driver, lambda d: row_state(d, code) == "active", "the row to show active", timeout=40)
        device.wait_for("connected")
        click_action(driver, code, "session")
        wait(driver, lambda d: d.find_element(By.ID, "session-panel").get_attribute("data-loaded") == "true",
             "the session panel")

        # Chat from the console: the device gets it, the line shows delivered.
        field = driver.find_element(By.ID, "chat-text")
        field.send_keys("Hello <b>Grace</b>, can you open Settings?", Keys.ENTER)
        device.wait_for("chat", text="Hello <b>Grace</b>, can you open Settings?")
        wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, '#chat-log li.from-supporter[data-delivery="delivered"]'),
             "the supporter's line to show delivered")
        mine = driver.find_element(By.CSS_SELECTOR, "#chat-log li.from-supporter .chat-text").text
        check(mine == "Hello <b>Grace</b>, can you open Settings?", f"the sent line shows {mine!r}")

        # Chat from the device, carrying markup: shown as text, counted unread while the field has no focus.
        driver.find_element(By.ID, "session-close").send_keys(Keys.SHIFT)  # focus off the chat field
        driver.execute_script("document.getElementById('session-panel').focus();")
        device.send(f"say {XSS_NAME} done")
        line = wait(driver, lambda d: [x for x in d.find_elements(By.CSS_SELECTOR, "#chat-log li.from-device .chat-text")
                                       if XSS_NAME in x.text], "the device's line in the chat")
        check(not driver.find_elements(By.CSS_SELECTOR, "#chat-log img"), "the device's markup became an element")
        check(no_alert(driver) is None, "an alert opened")
        wait(driver, lambda d: d.find_element(By.ID, "chat-unread").is_displayed()
             and d.find_element(By.ID, "chat-unread").text == "1 unread", "one unread line")
        driver.find_element(By.ID, "chat-text").click()
        wait(driver, lambda d: not d.find_element(By.ID, "chat-unread").is_displayed(), "the unread count to clear")
        check(line[0].text.endswith("done"), f"the device's line reads {line[0].text!r}")

        # Ask for file sharing: the device's user grants it; the panel shows it granted.
        check(panel_feature_state(driver, "file_share") == "none", "file_share is not 'not granted' at first")
        click(driver, '#session-features li[data-feature="file_share"] button[data-action="ask"]', "the Ask button")
        device.wait_for("feature_ask", feature="file_share")
        device.send("y")
        device.wait_for("feature_granted", feature="file_share")
        wait(driver, lambda d: panel_feature_state(d, "file_share") == "granted", "file_share to show granted")

        # Ask for app messages and withdraw the ask before the device's user answers: the device drops it and
        # answers it refused (aborted_by_supporter); the panel shows "withdrawing…", then "withdrawn".
        click(driver, '#session-features li[data-feature="app_messages"] button[data-action="ask"]',
              "the Ask button of app_messages")
        device.wait_for("feature_ask", feature="app_messages")
        wait(driver, lambda d: panel_feature_state(d, "app_messages") == "pending", "app_messages to show asked")
        check(not driver.find_elements(
            By.CSS_SELECTOR, '#session-features li[data-feature="app_messages"] button[data-action="ask"]'),
              "a pending ask offers Ask again")
        # Every state the item shows from here on (the list is rebuilt on each event; the observer sees each one).
        driver.execute_script("""
            window.__appMessagesStates = [];
            const record = () => {
              const item = document.querySelector('#session-features li[data-feature="app_messages"]');
              const shown = item && item.querySelector('.feature-state');
              const last = window.__appMessagesStates[window.__appMessagesStates.length - 1];
              const now = item ? `${item.dataset.state}|${shown ? shown.textContent : ''}` : null;
              if (now && now !== last) window.__appMessagesStates.push(now);
            };
            new MutationObserver(record).observe(document.getElementById('session-features'),
              {subtree: true, childList: true, attributes: true, characterData: true});
        """)
        click(driver, '#session-features li[data-feature="app_messages"] button[data-action="withdraw"]',
              "the Withdraw button of app_messages")
        refused = device.wait_for("feature_refused", feature="app_messages")
        check(refused.get("reason") == "aborted_by_supporter", f"the device reported {refused}")
        check(not [x for x in device.seen if x.get("event") == "feature_granted" and x.get("feature") == "app_messages"],
              "the device granted the withdrawn ask")
        wait(driver, lambda d: panel_feature_state(d, "app_messages") == "withdrawn", "app_messages to show withdrawn")
        shown = driver.find_element(By.CSS_SELECTOR, '#session-features li[data-feature="app_messages"] .feature-state')
        check(shown.text == "withdrawn", f"the withdrawn ask reads {shown.text!r}")
        seen = driver.execute_script("return window.__appMessagesStates;")
        check("withdrawing|withdrawing…" in seen and seen[-1] == "withdrawn|withdrawn"
              and seen.index("withdrawing|withdrawing…") < len(seen) - 1,
              f"the item did not show withdrawing… before withdrawn: {seen}")
        wait(driver, lambda d: d.find_elements(
            By.CSS_SELECTOR, '#session-features li[data-feature="app_messages"] button[data-action="ask"]'),
             "the Ask button back on the withdrawn feature")
        withdrawn_row = wait(driver, lambda d: d.find_elements(
            By.CSS_SELECTOR, '#session-timeline li[data-kind="feature_ask_withdrawn"]'), "the withdrawal in the timeline")
        check("ask withdrawn by the supporter: app_messages" in withdrawn_row[0].text,
              f"the timeline's withdrawal reads {withdrawn_row[0].text!r}")
        trail = json.loads(page_fetch(driver, "GET", f"/api/v1/audit?code={code}&limit=50", csrf=False)["body"])
        rows = {row["kind"]: row for row in reversed(trail.get("events") or [])
                if row.get("details", {}).get("feature") == "app_messages"}
        withdrawal = rows.get("feature_ask_withdrawn") or {}
        asked_id = ((rows.get("feature_asked") or {}).get("details") or {}).get("ask_id")
        check(asked_id is not None and (withdrawal.get("details") or {}).get("ask_id") == asked_id
              and (withdrawal.get("actor") or {}).get("account") == "alice"
              and ((rows.get("feature_refused") or {}).get("details") or {}).get("reason") == "aborted_by_supporter",
              f"the audit rows of the withdrawal: {rows}")

        # A file from the device, its name carrying markup: listed as text, downloaded byte-identical.
        payload = bytes((index * 31 + 7) % 256 for index in range(150_000))
        name = "<b>crash<i>.log"
        path = os.path.join(world.work, name)
        with open(path, "wb") as handle:
            handle.write(payload)
        device.send(f"send {path}")
        # The href, read in the same step as the element is found: the panel redraws its file list as events arrive,
        # and an element found a moment earlier may be gone (stale) by the next call.
        def download_href(d):
            try:
                links = d.find_elements(By.CSS_SELECTOR, '#session-files li[data-state="received"] a')
                return links[0].get_attribute("href") if links else None
            except StaleElementReferenceException:
                return None
        href = wait(driver, download_href, "the received file's download link")
        shown = wait(driver, lambda d: d.find_element(
            By.CSS_SELECTOR, '#session-files li[data-state="received"] .file-name').text, "the received file's name")
        check(shown == name, f"the file's name shows {shown!r}")
        check(not driver.find_elements(By.CSS_SELECTOR, "#session-files b, #session-files i"), "the name became markup")
        fetched = driver.execute_async_script("""
            const done = arguments[arguments.length - 1];
            fetch(arguments[0], {credentials: 'same-origin'}).then(async (answer) => {
              const bytes = new Uint8Array(await answer.arrayBuffer());
              let text = '';
              for (const byte of bytes) text += String.fromCharCode(byte);
              done({status: answer.status, disposition: answer.headers.get('Content-Disposition'),
                    type: answer.headers.get('Content-Type'), nosniff: answer.headers.get('X-Content-Type-Options'),
                    body: btoa(text)});
            }).catch((error) => done({error: String(error)}));
        """, href)
        check(fetched.get("status") == 200, f"the download answered {fetched}")
        check(base64.b64decode(fetched["body"]) == payload, "the downloaded file differs from what the device sent")
        check(fetched.get("type") == "application/octet-stream" and fetched.get("nosniff") == "nosniff"
              and (fetched.get("disposition") or "").startswith("attachment;"), f"the download's headers: {fetched}")
        screenshot(driver, "console-session-panel.png")

        # A file from the supporter to the device, chosen in the panel.
        upload = os.path.join(world.work, "steps to try.txt")
        with open(upload, "wb") as handle:
            handle.write(b"1. restart\n2. update\n" * 8000)  # 168 KB: over the API's 64 KiB, an upload's slot
        driver.find_element(By.ID, "file-input").send_keys(upload)
        driver.find_element(By.ID, "file-send").click()
        got = device.wait_for("file", name="steps to try.txt")
        check(got.get("bytes") == os.path.getsize(upload), f"the device got {got}")
        wait(driver, lambda d: d.find_elements(
            By.CSS_SELECTOR, '#session-files li[data-direction="to_device"][data-state="delivered"]'),
             "the sent file in the list, delivered")

        # The device revokes the grant: the panel shows it as it happens.
        device.send("revoke file_share")
        wait(driver, lambda d: panel_feature_state(d, "file_share") == "revoked", "file_share to show revoked")

        # The device's link breaks: the panel says reconnecting, then follows the resumed session.
        relay.cut()
        wait(driver, lambda d: d.find_element(By.ID, "session-reconnecting").is_displayed(),
             "the panel to show the device reconnecting", timeout=30)
        relay.restore()
        device.wait_for("resumed", timeout=60)
        wait(driver, lambda d: not d.find_element(By.ID, "session-reconnecting").is_displayed(),
             "the panel to show the device back", timeout=30)
        field = driver.find_element(By.ID, "chat-text")
        field.send_keys("Welcome back", Keys.ENTER)
        device.wait_for("chat", text="Welcome back")
        wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, '#chat-log li.from-supporter[data-delivery="delivered"]')) == 2,
             "the line after the resume to show delivered")
        kinds = [x.get_attribute("data-kind") for x in driver.find_elements(By.CSS_SELECTOR, "#session-timeline li")]
        for kind in ("session_started", "feature_asked", "feature_granted", "feature_ask_withdrawn", "feature_refused",
                     "file_received", "feature_revoked", "device_reconnecting", "device_resumed"):
            check(kind in kinds, f"the timeline lacks {kind}: {kinds}")
        # A tablet's width: the panel stacks, nothing scrolls sideways.
        driver.set_window_size(800, 1100)
        overflow = driver.execute_script(
            "return document.documentElement.scrollWidth > document.documentElement.clientWidth;")
        check(not overflow, "the page scrolls sideways at 800 px")
        screenshot(driver, "console-session-panel-tablet.png")
        driver.set_window_size(1280, 900)
        problems = browser_problems(driver)
        check(not problems, f"the browser logged: {problems[:3]}")
    finally:
        relay.close()


def scenario_xss(world):
    driver = world.alice
    code = create_code(driver, XSS_DESCRIPTION, "<i>Mallory</i>", assign=False)
    world.codes["xss"] = code
    world.start_device(code, XSS_NAME)
    wait(driver, lambda d: row_state(d, code) == "online", "the XSS device online")
    shown = row(driver, code).find_element(By.CSS_SELECTOR, ".c-state .device-name").text
    check(shown == XSS_NAME, f"the device name shows as {shown!r}")
    description = row(driver, code).find_element(By.CSS_SELECTOR, ".c-description").text
    check(description == XSS_DESCRIPTION, f"the description shows as {description!r}")
    wait(driver, lambda d: row(d, code).find_element(By.CSS_SELECTOR, ".c-customer").text == "<i>Mallory</i>",
         "the customer name shown as text")
    click_action(driver, code, "audit")
    wait(driver, lambda d: any(XSS_NAME in r.text for r in d.find_elements(By.CSS_SELECTOR, "#audit-body tr")),
         "the device name in the audit trail")
    time.sleep(0.5)  # an onerror handler would have run by now
    alert = no_alert(driver)
    check(alert is None, alert)
    images = driver.find_elements(By.CSS_SELECTOR, "#codes-table img, #audit-table img, main img")
    check(not images, f"{len(images)} <img> element(s) in the page")
    check(not driver.find_elements(By.CSS_SELECTOR, "main script, main b, main i"), "markup from data became elements")
    screenshot(driver, "console-xss.png")


def scenario_controls_escaped(world):
    driver = world.alice
    answer = page_fetch(driver, "POST", "/api/v1/sessions", {"description": CONTROLS_DESCRIPTION})
    check(answer["status"] == 201, f"creating the code: {answer}")
    raw = answer["body"]
    check(not any(c in raw for c in "\u202e\u009b\u2066\u2028"), f"a raw control in the JSON body: {raw!r}")
    check("\\u202e" in raw and "\\u009b" in raw, f"the JSON body does not escape the controls: {raw!r}")
    code = json.loads(raw)["code"]
    wait(driver, lambda d: row(d, code) is not None, f"the row of {code} from the event stream")
    cell = row(driver, code).find_element(By.CSS_SELECTOR, ".c-description")
    shown = driver.execute_script("return arguments[0].textContent;", cell)
    check(shown == CONTROLS_SHOWN, f"the description shows as {shown!r}, not {CONTROLS_SHOWN!r}")
    screenshot(driver, "console-controls.png")


def scenario_bob_isolated(world):
    code = world.codes.get("alice")
    check(code, "needs the code of the alice scenario")
    driver = world.browser("bob")
    sign_in(driver, world, "bob")
    found = row(driver, code)
    if found is not None:
        buttons = [b.get_attribute("data-action") for b in found.find_elements(By.CSS_SELECTOR, "button")]
        check(not set(buttons) - {"audit"}, f"bob sees alice's code with actions {buttons}")
    if world.codes.get("xss"):
        check(row(driver, world.codes["xss"]) is not None, "bob does not see the unassigned code")
    answer = page_fetch(driver, "POST", f"/api/v1/sessions/{code}/connect",
                        {"connection_type": "screen_share", "features": ["voip"]})
    check(answer["status"] == 403, f"bob's connect on alice's code answered {answer['status']}: {answer['body']}")
    for action in ("end", "cancel"):
        answer = page_fetch(driver, "POST", f"/api/v1/sessions/{code}/{action}")
        check(answer["status"] == 403, f"bob's {action} on alice's code answered {answer['status']}: {answer['body']}")
    screenshot(driver, "console-bob.png")
    driver.find_element(By.ID, "sign-out").click()
    wait(driver, lambda d: d.find_element(By.ID, "sign-in-login").is_displayed(), "the sign-in form after signing out")
    check(not driver.find_element(By.ID, "app").is_displayed(), "the codes still show after signing out")
    answer = page_fetch(driver, "GET", "/api/v1/me", csrf=False)
    check(answer["status"] == 401, f"after signing out /api/v1/me answered {answer['status']}")


class AttackerHandler(http.server.BaseHTTPRequestHandler):
    page = b""

    def do_GET(self):  # noqa: N802 — http.server's name
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(self.page)))
        self.end_headers()
        self.wfile.write(self.page)

    def log_message(self, *arguments):
        pass


def attacker_page(target):
    # A same-site, cross-origin page (another port on 127.0.0.1, HTTPS too): SameSite=Strict does not keep the
    # cookie out, so only the node's Origin and CSRF-token checks stand in the way.
    return f"""<!doctype html><html><body><p id="result">running</p>
<form id="attack" method="POST" action="{target}/api/v1/sessions" enctype="text/plain">
<input type="hidden" name='{{"type":"remote_support","description":"csrf-form' value='"}}'>
</form>
<script>
fetch("{target}/api/v1/sessions", {{method: "POST", credentials: "include", headers: {{"Content-Type": "text/plain"}},
  body: JSON.stringify({{type: "remote_support", description: "csrf-fetch"}})}})
  .then((r) => {{ document.getElementById("result").textContent = "fetch answered " + r.status; }},
        (e) => {{ document.getElementById("result").textContent = "fetch failed " + e; }})
  .finally(() => setTimeout(() => document.getElementById("attack").submit(), 200));
</script></body></html>""".encode()


def scenario_csrf(world):
    driver = world.alice
    # The console is signed in (alice's cookie is in this browser).
    driver.get(world.base + "/")
    wait(driver, lambda d: d.find_element(By.ID, "account-display-name").text == ACCOUNTS["alice"][0], "alice signed in")
    driver.get_log("performance")  # drop what came before
    AttackerHandler.page = attacker_page(world.base)
    world.attacker = http.server.ThreadingHTTPServer(("127.0.0.1", 0), AttackerHandler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(f"{world.certs}/supporter.pem", f"{world.certs}/supporter.key")
    world.attacker.socket = context.wrap_socket(world.attacker.socket, server_side=True)
    threading.Thread(target=world.attacker.serve_forever, daemon=True).start()
    attacker_origin = f"https://127.0.0.1:{world.attacker.server_address[1]}"
    driver.get(attacker_origin + "/")
    # The form navigates the tab to the node's answer.
    wait(driver, lambda d: d.current_url.startswith(world.base + "/api/v1/sessions"), "the form POST to reach the node")
    form_answer = wait(driver, lambda d: d.find_element(By.TAG_NAME, "body").text, "the node's answer to the form")
    check('"status":403' in form_answer.replace(" ", "") or "403" in form_answer,
          f"the node answered the cross-origin form with: {form_answer[:200]}")

    # Chrome's network log: the status of each POST to the create-code endpoint, the cross-origin fetch's too
    # (its answer is kept from the page by CORS, but the browser saw it: responseReceivedExtraInfo).
    posts, seen = {}, {}
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        params = message.get("params", {})
        if message.get("method") == "Network.requestWillBeSent":
            request = params["request"]
            if request["method"] == "POST" and request["url"] == world.base + "/api/v1/sessions":
                posts[params["requestId"]] = params.get("initiator", {}).get("type", "?")
        elif message.get("method") == "Network.responseReceivedExtraInfo":
            seen[params.get("requestId")] = params.get("statusCode")
        elif message.get("method") == "Network.responseReceived":
            seen[params.get("requestId")] = params["response"]["status"]
    statuses = [seen.get(request) for request in posts]
    check(statuses and all(status == 403 for status in statuses),
          f"the node's answers to the cross-origin POSTs: {statuses or 'none seen'}")
    check(len(statuses) >= 2, f"saw {len(statuses)} of the 2 cross-origin POSTs (fetch and form): {statuses}")

    # Replayed with alice's real cookie and CSRF token, from the attacker's origin: still refused.
    driver.get(world.base + "/")
    wait(driver, lambda d: d.find_element(By.ID, "codes-panel").get_attribute("data-loaded") == "true", "the console")
    cookie = driver.get_cookie("rsup_session")
    check(cookie, "no rsup_session cookie in the browser")
    check(cookie.get("httpOnly") and cookie.get("secure") and cookie.get("sameSite") == "Strict",
          f"the browser holds the cookie as {cookie}")
    csrf = driver.execute_async_script(
        "const done = arguments[0]; fetch('/api/v1/me').then((r) => r.json()).then((m) => done(m.csrf_token), () => done(null));")
    jar = {"Cookie": f"rsup_session={cookie['value']}"}
    create = {"type": "remote_support", "description": "csrf-replay"}
    status, _, body = world.request("POST", "/api/v1/sessions", create, {**jar, "X-CSRF-Token": csrf, "Origin": attacker_origin})
    check(status == 403, f"cookie + CSRF token from another origin answered {status}: {body}")
    status, _, body = world.request("POST", "/api/v1/sessions", create, {**jar, "Origin": world.base})
    check(status == 403, f"cookie without the CSRF token answered {status}: {body}")
    status, _, body = world.request("POST", "/api/v1/sessions", create, {**jar, "X-CSRF-Token": "0" * 43, "Origin": world.base})
    check(status == 403, f"cookie with a wrong CSRF token answered {status}: {body}")

    listing = page_fetch(driver, "GET", "/api/v1/sessions?offset=0&limit=500", csrf=False)
    check(listing["status"] == 200, f"listing answered {listing['status']}")
    descriptions = [s.get("description") for s in json.loads(listing["body"])["sessions"]]
    made = [d for d in descriptions if d and d.startswith("csrf-")]
    check(not made, f"the attack created codes: {made}")
    check(not any("csrf-" in r.text for r in driver.find_elements(By.CSS_SELECTOR, "#codes-body tr")),
          "a csrf code shows in the console")


def scenario_admin(world):
    driver = world.browser("admin")
    sign_in(driver, world, "root")
    check(driver.find_element(By.ID, "account-role").text.lower() == "admin", "the header does not show the admin role")
    for code in world.codes.values():
        check(row(driver, code) is not None, f"the admin does not see {code}")
    driver.find_element(By.ID, "tab-users").click()
    wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#users-body tr")) >= len(ACCOUNTS), "the users list")
    driver.find_element(By.ID, "new-user-login").send_keys("carol")
    driver.find_element(By.ID, "new-user-display-name").send_keys("Carol <Contractor>")
    Select(driver.find_element(By.ID, "new-user-role")).select_by_value("supporter")
    driver.find_element(By.ID, "new-user-password").send_keys("carol-long-passphrase-5", Keys.ENTER)
    carol = '#users-body tr[data-login="carol"]'
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, carol), "carol in the users list")
    wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, f"{carol} .u-name").text == "Carol <Contractor>",
         "carol's display name shown as text")
    click(driver, f'{carol} button[data-action="disable"]', "carol's disable button")
    wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, f"{carol} .u-state").text == "disabled", "carol disabled")
    status, _, body = world.request("POST", "/api/v1/login", {"login": "carol", "password": "carol-long-passphrase-5"},
                                    {"Origin": world.base})
    check(status in (401, 403), f"a disabled account signed in: {status} {body}")
    click(driver, f'{carol} button[data-action="enable"]', "carol's enable button")
    wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, f"{carol} .u-state").text == "active", "carol enabled")
    click(driver, f'{carol} button[data-action="role-admin"]', "carol's role-admin button")
    wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, f"{carol} .u-role").text == "admin", "carol made admin")
    click(driver, f'{carol} button[data-action="password"]', "carol's password button")
    wait(driver, lambda d: d.find_element(By.ID, "password-dialog").is_displayed(), "the password dialog")
    driver.find_element(By.ID, "password-value").send_keys("carol-new-passphrase-6", Keys.ENTER)
    wait(driver, lambda d: not d.find_element(By.ID, "password-dialog").is_displayed(), "the password dialog to close")
    status, _, body = world.request("POST", "/api/v1/login", {"login": "carol", "password": "carol-new-passphrase-6"},
                                    {"Origin": world.base})
    check(status == 200, f"carol's new password answered {status}: {body}")
    screenshot(driver, "console-users.png")

    driver.find_element(By.ID, "tab-tokens").click()
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#tokens-body tr") or d.find_element(By.ID, "tokens-empty").is_displayed(),
         "the tokens list")
    Select(driver.find_element(By.ID, "new-token-scope")).select_by_value("device")
    driver.find_element(By.ID, "new-token-label").send_keys("field tablet 7", Keys.ENTER)
    token = wait(driver, lambda d: d.find_element(By.ID, "new-token-result").is_displayed()
                 and d.find_element(By.ID, "new-token-value").text, "the new token")
    check(len(token) >= 24, f"the token shown is {len(token)} characters")
    label_rows = lambda d: [r for r in d.find_elements(By.CSS_SELECTOR, "#tokens-body tr")  # noqa: E731
                            if r.find_element(By.CSS_SELECTOR, ".t-label").text == "field tablet 7"]
    wait(driver, label_rows, "the new token in the list")
    check(token not in driver.find_element(By.ID, "tokens-table").text, "the token itself is in the list")
    screenshot(driver, "console-tokens.png")

    def revoke(d):  # the first click asks for confirmation, the second revokes
        button = label_rows(d)[0].find_element(By.CSS_SELECTOR, 'button[data-action="revoke"]')
        confirming = "confirming" in (button.get_attribute("class") or "")
        button.click()
        return confirming

    wait(driver, revoke, "the revoke button to be confirmed")
    wait(driver, lambda d: label_rows(d) and label_rows(d)[0].find_element(By.CSS_SELECTOR, ".t-state").text.startswith("revoked"),
         "the token revoked")
    problems = browser_problems(driver)
    check(not problems, f"the browser logged: {problems[:3]}")


class CuttableProxy:
    """A TCP relay to the node's API port (TLS passes through untouched) whose connections can be cut: the browser's
    event stream breaks the way a lost network breaks it."""

    def __init__(self, target_port):
        self.target_port = target_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.up = True
        self.lock = threading.Lock()
        self.open = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if not self.up:
                client.close()
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.open += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pipe(source, sink):
        try:
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        except OSError:
            pass
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self):
        """Drops every relayed connection and refuses new ones until `restore()`."""
        self.up = False
        with self.lock:
            dropped, self.open = self.open, []
        for connection in dropped:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            connection.close()

    def restore(self):
        self.up = True

    def close(self):
        self.cut()
        self.listener.close()


def scenario_stream_reconnects(world):
    driver = world.alice
    world.proxy = CuttableProxy(world.api_port)
    through_proxy = f"https://127.0.0.1:{world.proxy.port}"
    driver.get(through_proxy + "/")  # alice's cookie is for 127.0.0.1, any port: still signed in
    wait(driver, lambda d: d.find_element(By.ID, "codes-panel").get_attribute("data-loaded") == "true", "the console")
    time.sleep(1)  # the event stream is open
    driver.execute_script("window.__sameDocument = 7;")
    world.proxy.cut()
    try:
        wait(driver, lambda d: d.find_element(By.ID, "stream-status").is_displayed(), "the Reconnecting… bar", timeout=15)
        check(driver.find_element(By.ID, "stream-status").text == "Reconnecting…", "the bar does not say Reconnecting…")
        screenshot(driver, "console-reconnecting.png")
        # Something happens while the page is cut off.
        code = control(world.supporter_bin, world.data, "create", "--description", "made while offline")["code"]["code"]
        time.sleep(1.5)  # the browser's retries fail meanwhile
    finally:
        world.proxy.restore()
    wait(driver, lambda d: not d.find_element(By.ID, "stream-status").is_displayed(), "the stream to come back", timeout=30)
    wait(driver, lambda d: row(d, code) is not None, "the code made while the stream was down, without a reload")
    check(driver.execute_script("return window.__sameDocument;") == 7, "the page reloaded")


# ---------------------------------------------------------------- webhooks

def receiver_request(receiver, what, predicate, timeout=WAIT):
    """The first request the webhook receiver reported (now or within `timeout`) for which `predicate` holds."""
    deadline = time.monotonic() + timeout
    index = 0
    while True:
        while index < len(receiver.seen):
            event = receiver.seen[index]
            index += 1
            if event.get("event") == "request" and predicate(event):
                return event
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise Failure(f"the webhook receiver never got {what} within {timeout}s")
        try:
            event = receiver.events.get(timeout=min(remaining, 1))
        except queue.Empty:
            continue
        if event is None:
            receiver.events.put(None)
            raise Failure(f"the webhook receiver ended before it got {what}: {receiver.errors[-5:]}")
        receiver.seen.append(event)


def signed_with(request, secret):
    """Whether the request's RemoteSupport-Signature (t=…,v1=…) carries an HMAC-SHA256 of `t.body` under `secret`."""
    header = request["headers"].get("remotesupport-signature", "")
    parts = [part.split("=", 1) for part in header.split(",") if "=" in part]
    timestamp = next((value for key, value in parts if key == "t"), None)
    if timestamp is None:
        return False
    body = base64.b64decode(request["body_base64"])
    expected = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return any(key == "v1" and hmac.compare_digest(value, expected) for key, value in parts)


def delivery_rows(driver):
    """The delivery log's rows as the page shows them (read in one go: the log is rebuilt as it refreshes)."""
    return driver.execute_script("""
        const text = (row, selector) => { const node = row.querySelector(selector); return node ? node.textContent : ''; };
        return [...document.querySelectorAll('#deliveries-body tr')].map((row) => ({
          id: Number(row.dataset.id), state: row.dataset.state, shownState: text(row, '.d-state .state-badge'),
          event: text(row, '.d-event'), kind: text(row, '.d-kind'), code: text(row, '.d-code'),
          attempts: text(row, '.d-attempts'), status: text(row, '.d-status'), error: text(row, '.d-error'),
          again: text(row, '.d-id .device-name'), next: text(row, '.d-next')}));
    """)


def webhook_row(driver, url):
    """What the endpoints list's row of `url` shows (read in one go: the list is rebuilt as it refreshes), or None."""
    return driver.execute_script("""
        const text = (row, selector) => { const node = row.querySelector(selector); return node ? node.textContent : ''; };
        for (const row of document.querySelectorAll('#webhooks-body tr')) {
          if (text(row, '.w-url .url-value') !== arguments[0]) continue;
          return {id: row.dataset.id, enabled: row.dataset.enabled, description: text(row, '.w-description'),
                  kinds: text(row, '.w-kinds'), state: text(row, '.w-state'), pending: text(row, '.w-pending')};
        }
        return null;
    """, url)


def add_webhook(driver, url, description, kinds=None, enabled=True):
    """Adds an endpoint with the console's form (Enter in the last field submits); returns the secret it shows."""
    driver.find_element(By.ID, "new-webhook-url").send_keys(url)
    if kinds is not None:
        field = driver.find_element(By.ID, "new-webhook-kinds")
        field.clear()
        field.send_keys(kinds)
    box = driver.find_element(By.ID, "new-webhook-enabled")
    if box.is_selected() != enabled:
        box.click()
    driver.find_element(By.ID, "new-webhook-description").send_keys(description, Keys.ENTER)
    wait(driver, lambda d: d.find_element(By.ID, "webhook-secret-result").is_displayed()
         and d.find_element(By.ID, "webhook-secret-url").text == url, f"the secret of {url}")
    secret = driver.find_element(By.ID, "webhook-secret-value").text
    notice = driver.find_element(By.ID, "webhook-secret-result").text
    check(secret.startswith("whsec_") and len(secret) > 20, f"the secret shown is {secret!r}")
    check("will not be shown again" in notice, f"the secret's notice does not say it is shown once: {notice!r}")
    wait(driver, lambda d: webhook_row(d, url) is not None, f"{url} in the endpoints list")
    return secret


def scenario_webhooks(world):
    """An admin adds a webhook endpoint in the console, sees its secret once, and follows its delivery log: delivered,
    failing (503), retried now once the receiver is back, redelivered; an endpoint's markup shows as text; one is
    deleted after a confirmation."""
    world.receiver = Side("webhook receiver", [
        sys.executable, os.path.join(ROOT, "tests", "webhooks", "receiver.py"),
        "--cert", f"{world.certs}/supporter.pem", "--key", f"{world.certs}/supporter.key"], interactive=True)
    receiver = world.receiver
    port = receiver.wait_for("listening")["port"]
    url = f"https://127.0.0.1:{port}/hooks/rsup?team=7"
    other_url = f"https://127.0.0.1:{port}/other"

    driver = world.browser("webhooks")
    sign_in(driver, world, "root")
    driver.find_element(By.ID, "tab-webhooks").click()
    wait(driver, lambda d: d.find_element(By.ID, "webhooks-panel").get_attribute("data-loaded") == "true",
         "the webhooks panel")
    check(driver.find_element(By.ID, "webhooks-empty").is_displayed(), "no empty state on a node without endpoints")

    # The kinds: a box from the list, then one more typed; the field and the boxes follow each other.
    driver.find_element(By.CSS_SELECTOR, ".kind-picker summary").click()
    check(driver.find_element(By.ID, "new-webhook-kind-all").is_selected(), "* is not ticked for the default kinds")
    driver.find_element(By.CSS_SELECTOR, 'label[for="new-webhook-kind-code_created"]').click()
    kinds = driver.find_element(By.ID, "new-webhook-kinds")
    check(kinds.get_attribute("value") == "code_created", f"ticking code_created made the kinds {kinds.get_attribute('value')!r}")
    check(not driver.find_element(By.ID, "new-webhook-kind-all").is_selected(), "* stays ticked beside code_created")
    kinds.send_keys(", code_closed")
    check(driver.find_element(By.ID, "new-webhook-kind-code_closed").is_selected(), "typing code_closed did not tick its box")
    secret = add_webhook(driver, url, "helpdesk sync")
    shown = webhook_row(driver, url)
    endpoint = shown["id"]
    check(shown["kinds"] == "code_created, code_closed", f"the endpoint's kinds show as {shown['kinds']!r}")
    check(secret not in driver.find_element(By.ID, "webhooks-table").text, "the secret is in the endpoints list")
    listing = page_fetch(driver, "GET", "/api/v1/webhooks", csrf=False)
    check(listing["status"] == 200 and secret not in listing["body"] and '"secret"' not in listing["body"],
          f"the endpoints listing: {listing}")
    driver.find_element(By.ID, "webhook-secret-hide").click()
    wait(driver, lambda d: not d.find_element(By.ID, "webhook-secret-result").is_displayed(), "the secret to go")
    check(driver.find_element(By.ID, "webhook-secret-value").text == "", "the secret stays in the page after Done")

    # Disable and enable again; then a new secret, shown once, different.
    selector = f'#webhooks-body tr[data-id="{endpoint}"]'
    click(driver, f'{selector} button[data-action="disable"]', "the endpoint's Disable button")
    wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, selector).get_attribute("data-enabled") == "false"
         and d.find_element(By.CSS_SELECTOR, f"{selector} .w-state .state-badge").text == "disabled", "the endpoint disabled")
    click(driver, f'{selector} button[data-action="enable"]', "the endpoint's Enable button")
    wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, selector).get_attribute("data-enabled") == "true",
         "the endpoint enabled again")
    click(driver, f'{selector} button[data-action="rotate"]', "the endpoint's Rotate secret button")
    rotated = wait(driver, lambda d: d.find_element(By.ID, "webhook-secret-result").is_displayed()
                   and d.find_element(By.ID, "webhook-secret-value").text, "the rotated secret")
    check(rotated.startswith("whsec_") and rotated != secret, f"the rotated secret is {rotated!r} (was {secret!r})")
    check("will not be shown again" in driver.find_element(By.ID, "webhook-secret-result").text, "no shown-once note")
    wait(driver, lambda d: "previous secret" in d.find_element(By.CSS_SELECTOR, f"{selector} .w-state").text,
         "the endpoint to say the previous secret still signs")

    # An endpoint whose description carries markup, added disabled: text, nothing runs.
    add_webhook(driver, other_url, XSS_NAME, enabled=False)
    other = webhook_row(driver, other_url)
    check(other["description"] == XSS_NAME, f"the description shows as {other['description']!r}")
    check(other["kinds"] == "every kind (*)", f"the default kinds show as {other['kinds']!r}")
    check(other["enabled"] == "false", "the endpoint added disabled is enabled")
    other_id = other["id"]
    driver.find_element(By.ID, "webhook-secret-hide").click()

    # A code: its code_created goes to the receiver, signed with the secret shown, and shows delivered in the log.
    made = page_fetch(driver, "POST", "/api/v1/sessions", {"description": "webhook one"})
    check(made["status"] == 201, f"creating a code: {made}")
    first_code = json.loads(made["body"])["code"]
    got = receiver_request(receiver, f"the code_created of {first_code}",
                           lambda r: r["status"] == 200 and first_code in r["body"])
    check(got["headers"].get("remotesupport-event-kind") == "code_created", f"the delivery's headers: {got['headers']}")
    check(got["target"] == "/hooks/rsup?team=7" and got["method"] == "POST", f"the request went to {got['method']} {got['target']}")
    check(signed_with(got, rotated), "the delivery is not signed with the secret the console showed")
    click(driver, f'{selector} button[data-action="deliveries"]', "the endpoint's Deliveries button")
    wait(driver, lambda d: d.find_element(By.ID, "deliveries-panel").get_attribute("data-endpoint") == endpoint,
         "the delivery log")

    def first_delivered(d):
        rows = [r for r in delivery_rows(d) if r["code"] == first_code]
        return rows and rows[0]["state"] == "delivered" and rows[0]["status"] == "200" and rows[0]

    first = wait(driver, first_delivered, "the first delivery to show delivered with status 200")
    check(first["kind"] == "code_created" and first["event"] == got["headers"].get("remotesupport-event-id"),
          f"the delivered row: {first}, the receiver got event {got['headers'].get('remotesupport-event-id')}")
    check(first["shownState"] == "delivered" and first["error"] == "—" and first["next"] == "—", f"the delivered row: {first}")

    # The receiver fails: the next event's delivery shows pending with the receiver's 503 and its answer, as text.
    receiver.send("mode fail")
    receiver.wait_for("mode", mode="fail")
    made = page_fetch(driver, "POST", "/api/v1/sessions", {"description": "webhook two"})
    check(made["status"] == 201, f"creating a code: {made}")
    second_code = json.loads(made["body"])["code"]
    receiver_request(receiver, f"the code_created of {second_code}", lambda r: r["status"] == 503 and second_code in r["body"])

    def second_failing(d):
        rows = [r for r in delivery_rows(d) if r["code"] == second_code]
        return rows and rows[0]["state"] == "pending" and rows[0]["status"] == "503" and rows[0]["error"] and rows[0]

    failing = wait(driver, second_failing, "the second delivery to show pending with status 503")
    check("503" in failing["error"] and "come back <b" in failing["error"], f"the error shows as {failing['error']!r}")
    check(failing["next"] != "—", f"a pending delivery shows no next attempt: {failing}")
    check(not driver.find_elements(By.CSS_SELECTOR, "#deliveries-table b, #webhooks-panel img"),
          "markup from the receiver or a description became elements")
    wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, f"{selector} .w-pending").text != "0",
         "the endpoint's pending count")
    driver.execute_script("document.getElementById('deliveries-panel').scrollIntoView();")
    screenshot(driver, "console-webhooks-failing.png")
    # The log's filter: only the pending one, then all again.
    Select(driver.find_element(By.ID, "deliveries-state")).select_by_value("pending")
    wait(driver, lambda d: [r["id"] for r in delivery_rows(d)] == [failing["id"]], "only the pending delivery")
    Select(driver.find_element(By.ID, "deliveries-state")).select_by_value("")
    wait(driver, lambda d: [r["id"] for r in delivery_rows(d)] == [failing["id"], first["id"]], "every delivery again")

    # The receiver is back: Retry now sends the pending delivery without waiting out its back-off. (The node here
    # retries after 200 ms, doubling, so it may get there first: then nothing was waiting and the count is 0.)
    receiver.send("mode ok")
    receiver.wait_for("mode", mode="ok")
    check(driver.find_element(By.CSS_SELECTOR, f'{selector} button[data-action="retry"]').text == "Retry now",
          "the endpoint has no Retry now button")
    check(driver.find_elements(By.CSS_SELECTOR, f'#webhooks-body tr[data-id="{other_id}"] button[data-action="retry"]'),
          "the disabled endpoint has no Retry now button")
    click(driver, f'{selector} button[data-action="retry"]', "the endpoint's Retry now button")
    note = wait(driver, lambda d: re.fullmatch(
        r"(.*): (\d+) pending deliveries are due now\.", d.find_element(By.ID, "webhooks-note").text),
        "the status line to say how many pending deliveries are due now")
    check(note.group(1) == url and note.group(2) in ("0", "1"), f"the status line reads {note.group(0)!r}")
    rows = json.loads(page_fetch(driver, "GET", "/api/v1/audit?kind=webhook_changed&limit=1", csrf=False)["body"])
    retry_row = (rows.get("events") or [{}])[0]
    check(retry_row.get("details", {}).get("changed") == "retry"
          and retry_row["details"].get("endpoint") == endpoint
          and retry_row["details"].get("retried") == note.group(2)
          and (retry_row.get("actor") or {}).get("account") == "root", f"the retry's audit row: {retry_row}")
    receiver_request(receiver, f"the code_created of {second_code} once it is back",
                     lambda r: r["status"] == 200 and second_code in r["body"])

    def second_delivered(d):
        rows = [r for r in delivery_rows(d) if r["id"] == failing["id"]]
        return rows and rows[0]["state"] == "delivered" and rows[0]["status"] == "200" and rows[0]

    retried = wait(driver, second_delivered, "the retried delivery to show delivered with status 200")
    check(retried["next"] == "—" and int(retried["attempts"]) >= 2, f"the retried row: {retried}")

    # Redeliver on the delivered row, from the keyboard, makes a new row; it goes through too.
    redeliver = f'#deliveries-body tr[data-id="{first["id"]}"] button[data-action="redeliver"]'

    def press_redeliver(d):
        d.find_element(By.CSS_SELECTOR, redeliver).send_keys(Keys.ENTER)
        return True

    wait(driver, press_redeliver, "the Redeliver button of the delivered row")
    again = wait(driver, lambda d: [r for r in delivery_rows(d) if r["again"] == f"again of {first['id']}"],
                 "a new row redelivering the first")[0]
    check(again["id"] > first["id"] and again["code"] == first_code and again["kind"] == "code_created", f"the new row: {again}")
    repeated = receiver_request(receiver, "the redelivery",
                                lambda r: r["status"] == 200 and r["headers"].get("remotesupport-delivery-id") == str(again["id"]))
    check(repeated["headers"].get("remotesupport-event-id") == first["event"], f"the redelivery's headers: {repeated['headers']}")
    wait(driver, lambda d: all(r["state"] == "delivered" for r in delivery_rows(d))
         and len(delivery_rows(d)) == 3, "every delivery in the log to show delivered")
    wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, f"{selector} .w-pending").text == "0",
         "the endpoint's pending count back to 0")
    check(no_alert(driver) is None, "an alert opened")
    check(not driver.find_elements(By.CSS_SELECTOR, "main img, main b"), "markup became elements")
    driver.find_element(By.CSS_SELECTOR, ".kind-picker summary").click()  # the list of kinds closes
    driver.execute_script("document.activeElement && document.activeElement.blur && document.activeElement.blur();")
    driver.set_window_size(1280, 1700)  # the whole panel: endpoints, their secret's notice gone, the log
    driver.execute_script("document.getElementById('webhooks-panel').scrollIntoView();")
    screenshot(driver, "console-webhooks.png")

    # A tablet's width: the tables stack, nothing scrolls sideways.
    driver.set_window_size(800, 1100)
    overflow = driver.execute_script("return document.documentElement.scrollWidth > document.documentElement.clientWidth;")
    check(not overflow, "the webhooks panel scrolls sideways at 800 px")
    screenshot(driver, "console-webhooks-tablet.png")
    driver.set_window_size(1280, 900)

    # Paging: 50 more codes, so the log reopened shows its newest page of 50 and "Older deliveries" the rest.
    made = driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        (async () => {
          const me = await (await fetch('/api/v1/me', {credentials: 'same-origin'})).json();
          const statuses = [];
          for (let index = 0; index < 50; index++) {
            const answer = await fetch('/api/v1/sessions', {method: 'POST', credentials: 'same-origin',
              headers: {'Content-Type': 'application/json', 'X-CSRF-Token': me.csrf_token},
              body: JSON.stringify({description: `webhook paging ${index}`})});
            statuses.push(answer.status);
          }
          done(statuses);
        })().catch((error) => done([String(error)]));
    """)
    check(made == [201] * 50, f"creating 50 codes answered {sorted(set(map(str, made)))}")
    log_path = f"/api/v1/webhooks/{endpoint}/deliveries?limit=500"

    def all_ids(d):
        ids = [entry["id"] for entry in json.loads(page_fetch(d, "GET", log_path, csrf=False)["body"])["deliveries"]]
        return len(ids) == 53 and ids

    ids = wait(driver, all_ids, "53 deliveries in the endpoint's log")  # newest first
    click(driver, "#deliveries-close", "the Close log button")
    click(driver, f'{selector} button[data-action="deliveries"]', "the endpoint's Deliveries button")
    wait(driver, lambda d: d.find_element(By.ID, "deliveries-panel").get_attribute("data-loaded") == "true"
         and len(delivery_rows(d)) == 50 and d.find_element(By.ID, "deliveries-more").is_displayed(),
         "the newest 50 deliveries and an Older deliveries button")
    check([r["id"] for r in delivery_rows(driver)] == ids[:50], f"the first page shows {[r['id'] for r in delivery_rows(driver)]}")
    driver.find_element(By.ID, "deliveries-more").send_keys(Keys.ENTER)
    wait(driver, lambda d: [r["id"] for r in delivery_rows(d)] == ids
         and not d.find_element(By.ID, "deliveries-more").is_displayed(), "all 53 deliveries after Older deliveries")
    wait(driver, lambda d: all(r["state"] == "delivered" for r in delivery_rows(d)) and len(delivery_rows(d)) == 53,
         "all 53 deliveries delivered, the older page kept as the log refreshes")

    # Delete asks for a confirmation first.
    other_selector = f'#webhooks-body tr[data-id="{other_id}"]'
    click(driver, f'{other_selector} button[data-action="delete"]', "the Delete button")
    check(driver.find_element(By.CSS_SELECTOR, f'{other_selector} button[data-action="delete"]').text == "Confirm delete",
          "Delete did not ask for a confirmation")
    check(webhook_row(driver, other_url) is not None, "the first click on Delete deleted")
    click(driver, f'{other_selector} button[data-action="delete"]', "the Confirm delete button")
    wait(driver, lambda d: not d.find_elements(By.CSS_SELECTOR, other_selector), "the deleted endpoint to leave the list")
    answer = page_fetch(driver, "GET", f"/api/v1/webhooks/{other_id}", csrf=False)
    check(answer["status"] == 404, f"the deleted endpoint answered {answer['status']}")
    check(webhook_row(driver, url) is not None, "the other endpoint went too")
    problems = browser_problems(driver)
    check(not problems, f"the browser logged: {problems[:3]}")


SCENARIOS = [
    ("security-headers", scenario_security_headers),
    ("alice-connects-live", scenario_alice_session),
    ("session-panel", scenario_session_panel),
    ("xss-device-name", scenario_xss),
    ("controls-shown-escaped", scenario_controls_escaped),
    ("bob-cannot-act-on-alices-code", scenario_bob_isolated),
    ("csrf-cross-origin", scenario_csrf),
    ("admin-users-and-tokens", scenario_admin),
    ("event-stream-reconnects", scenario_stream_reconnects),
    ("webhooks", scenario_webhooks),
]


def missing_tools():
    missing = []
    if not os.access(CHROMIUM, os.X_OK):
        missing.append(f"{CHROMIUM} (Debian package chromium)")
    if not os.access(CHROMEDRIVER, os.X_OK):
        missing.append(f"{CHROMEDRIVER} (Debian package chromium-driver)")
    if webdriver is None:
        missing.append("the Python package selenium")
    return missing


def main(names):
    unknown = [name for name in names if name not in dict(SCENARIOS)]
    if unknown:
        print(f"FAIL setup: no scenario {', '.join(unknown)}; the scenarios are {', '.join(n for n, _ in SCENARIOS)}")
        return 1
    scenarios = [(name, scenario) for name, scenario in SCENARIOS if not names or name in names]
    missing = missing_tools()
    if missing:
        print(f"FAIL setup: missing {', '.join(missing)}; run scripts/install-deps.sh")
        return 1

    def out_of_time(*_):
        raise RunTimeout(f"the whole run took over {WHOLE_RUN_SECONDS}s")

    signal.signal(signal.SIGALRM, out_of_time)
    signal.alarm(WHOLE_RUN_SECONDS)
    world = World()
    results = {}
    started = time.monotonic()
    try:
        try:
            world.start_node()
            world.alice = world.browser("alice", performance_log=True)
        except (Failure, WebDriverException, OSError, subprocess.SubprocessError) as error:
            print(f"FAIL setup: {error}")
            if world.node:
                print("\n".join(world.node.errors[-10:]), file=sys.stderr)
            return 1
        for name, scenario in scenarios:
            began = time.monotonic()
            try:
                scenario(world)
                results[name] = True
                print(f"PASS {name} ({time.monotonic() - began:.1f}s)", flush=True)
            except RunTimeout:
                raise
            except Exception as error:  # noqa: BLE001 — a scenario's unexpected error is that scenario's failure
                results[name] = False
                why = str(error) if isinstance(error, Failure) else f"{type(error).__name__}: {error}"
                print(f"FAIL {name}: {why}", flush=True)
                if not isinstance(error, Failure):
                    traceback.print_exc(file=sys.stderr)
                for index, driver in enumerate(world.browsers):
                    try:
                        screenshot(driver, f"failed-{name}-{index}.png")
                    except WebDriverException:
                        pass
    except RunTimeout as error:
        for name, _ in scenarios:
            if name not in results:
                results[name] = False
                print(f"FAIL {name}: {error}", flush=True)
    finally:
        signal.alarm(0)
        world.stop()
    failed = sum(1 for ok in results.values() if not ok)
    print(f"console end-to-end: {time.monotonic() - started:.0f}s; screenshots in {SCREENSHOTS}")
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
