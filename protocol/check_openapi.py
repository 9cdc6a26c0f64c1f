#!/usr/bin/env python3
"""Checks a running supporter node's REST API against protocol/openapi.yaml, in both directions.

It drives a scenario through every operation and every documented response status it can provoke, and checks that
each status is one the spec lists for that operation, that each body validates against the documented schema
(OpenAPI 3.0 converted to JSON Schema: $ref inlined, `nullable: true` -> type [t, "null"], the byte limits
`x-minBytes`/`x-maxBytes` enforced), that documented headers are present (and match their schema), and that every
answer carries the security headers. Then it generates request bodies from the request schemas: invalid ones (unknown
member, missing required member, wrong type, too short, too long in code points or bytes, outside enum, range or
pattern, repeated item, bad format) must be refused with 422, valid ones (each optional member present and absent,
boundary lengths and values) must be accepted and reflected in the answer. Members marked `x-account-login` take the
logins of accounts that exist. Event streams (`text/event-stream`) are read: their preamble, each event's `id`,
`event` and `data` (validated against the schema named by the media type's `x-event-data`), and resuming after
`Last-Event-ID`. At the end, every documented (operation, status) pair must have been seen or be excused with a reason.

usage: check_openapi.py --base-url https://127.0.0.1:PORT/api/v1 --ca CA.pem --admin-token T --device-token T
                        --admin-login L --admin-password P --supporter-login L --supporter-password P
                        [--other-supporter-login L --other-supporter-password P]
                        [--online-code CODE] [--pending-code CODE] [--no-rate-limit] [--free-failures 5]
                        [--spec protocol/openapi.yaml]

The accounts must exist and be active: an admin (best the only active one, for 409 on demoting the last admin) and
a supporter (and, optionally, a second supporter). The checker signs them in (and some of its own sign-ins out) and
leaves them as they were; it adds accounts (`chk-…` and boundary-length logins), codes and API tokens of its own, and
changes, disables and revokes only those.
--online-code names an unassigned code with a device on it that allows every connection request at once
(`rsup-device --auto-accept`): DELETE is 409 there, then a supporter connects (202, the session becomes active),
connecting again and cancelling are 409, and ending is 202 (the device leaves). --pending-code names another
unassigned code with a device on it that leaves requests unanswered (no --auto-accept): connect is 202 and stays
pending, cancel is 202. Without them those statuses are excused.
The rate-limit phase runs last: unknown tokens until 429 (the address then stays blocked a few seconds for requests
with neither a valid admin token nor a login cookie; the admin token and the cookie are still served, which the phase
checks too), then wrong passwords until the sign-in limit answers 429; --no-rate-limit skips it.
Python 3 standard library plus PyYAML and jsonschema. Exit 0 when everything matches, 1 with a report otherwise.
"""

import base64
import argparse
import copy
import datetime
import http.client
import json
import os
import re
import socket
import ssl
import sys
import time
import urllib.parse

import jsonschema
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ERROR_CODES = {
    400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed",
    408: "request_timeout", 409: "conflict", 413: "payload_too_large", 414: "uri_too_long", 417: "expectation_failed",
    422: "unprocessable", 429: "too_many_requests", 431: "header_fields_too_large", 500: "internal_error",
    501: "not_implemented", 503: "service_unavailable", 505: "http_version_not_supported",
}
NODE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
EMAIL = re.compile(r"^[^@\s]+@(?!\.)[^@\s]*\.[^@\s]*(?<!\.)$")
TIME_MEMBERS = ("created_at", "updated_at", "valid_until", "closed_at", "revoked_at", "time", "previous_secret_until",
                "next_attempt_at", "last_attempt_at", "finished_at")
# The security headers of every answer the API routes (info.description, "Security headers").
SECURITY_HEADERS = {
    "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                               "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    "strict-transport-security": "max-age=31536000",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
}
# Answers the HTTP layer gives on its own, before routing: only the error body (info.description).
HTTP_LAYER_STATUSES = {408, 413, 414, 417, 431, 501, 505}


# MARK: the spec as JSON Schema

def _byte_length(value):
    return len(value.encode("utf-8", "surrogatepass"))


def _min_bytes(validator, limit, instance, schema):
    if isinstance(instance, str) and _byte_length(instance) < limit:
        yield jsonschema.ValidationError("%r has fewer than %d bytes of UTF-8" % (shorten(instance, 40), limit))


def _max_bytes(validator, limit, instance, schema):
    if isinstance(instance, str) and _byte_length(instance) > limit:
        yield jsonschema.ValidationError("%r has more than %d bytes of UTF-8" % (shorten(instance, 40), limit))


# Draft 7 plus the spec's byte limits on strings.
SpecValidator = jsonschema.validators.extend(
    jsonschema.Draft7Validator, {"x-minBytes": _min_bytes, "x-maxBytes": _max_bytes})


class Spec:
    def __init__(self, path):
        with open(path, encoding="utf-8") as handle:
            self.document = yaml.safe_load(handle)
        self.base_path = urllib.parse.urlparse(self.document["servers"][0]["url"]).path.rstrip("/")
        self.format_checker = jsonschema.FormatChecker(formats=())

        @self.format_checker.checks("email")
        def is_email(value):
            return not isinstance(value, str) or bool(EMAIL.match(value))

        @self.format_checker.checks("date-time")
        def is_date_time(value):
            return not isinstance(value, str) or parse_time(value) is not None

        # operationId -> (path template, method, operation, base path of the operation's server)
        self.operations = {}
        for template, item in self.document["paths"].items():
            base = self.base_path
            if item.get("servers"):
                base = urllib.parse.urlparse(item["servers"][0]["url"]).path.rstrip("/")
            for method, operation in item.items():
                if method in ("get", "put", "post", "delete", "patch", "head", "options"):
                    self.operations[operation["operationId"]] = (template, method.upper(), operation, base)

    def resolve(self, node):
        while isinstance(node, dict) and "$ref" in node:
            target = self.document
            for part in node["$ref"].lstrip("#/").split("/"):
                target = target[part]
            node = target
        return node

    def json_schema(self, node):
        """OpenAPI 3.0 schema object -> JSON Schema (draft 7)."""
        node = self.resolve(node)
        if isinstance(node, list):
            return [self.json_schema(item) for item in node]
        if not isinstance(node, dict):
            return node
        if node.get("nullable") and "allOf" in node:
            # `{type: object, nullable: true, allOf: [$ref]}`: the referenced schema, or null.
            inner = {key: value for key, value in node.items() if key not in ("nullable", "type")}
            return {"anyOf": [self.json_schema(inner), {"type": "null"}]}
        out = {}
        for key, value in node.items():
            if key in ("nullable", "example", "readOnly", "writeOnly", "deprecated", "xml", "externalDocs"):
                continue
            if key == "properties":
                out[key] = {name: self.json_schema(sub) for name, sub in value.items()}
            elif key in ("items", "not", "additionalProperties") and isinstance(value, dict):
                out[key] = self.json_schema(value)
            elif key in ("allOf", "anyOf", "oneOf"):
                out[key] = [self.json_schema(sub) for sub in value]
            else:
                out[key] = value
        if node.get("nullable"):
            if "type" in out:
                out["type"] = [out["type"], "null"]
            if "enum" in out:
                out["enum"] = list(out["enum"]) + [None]
        return out

    def validator(self, schema):
        return SpecValidator(self.json_schema(schema), format_checker=self.format_checker)

    def responses(self, operation_id):
        return {int(status): self.resolve(response)
                for status, response in self.operations[operation_id][2]["responses"].items()}

    def request_schema(self, operation_id):
        body = self.operations[operation_id][2]["requestBody"]
        return self.resolve(body["content"]["application/json"]["schema"])

    def schema(self, name):
        return self.document["components"]["schemas"][name]


def parse_time(text):
    if not isinstance(text, str) or not RFC3339.match(text):
        return None
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


# MARK: HTTP

class Response:
    def __init__(self, status, headers, body, all_headers=None):
        self.status = status
        self.headers = headers  # lowercased name -> value (the last, for repeated fields)
        self.all_headers = all_headers or []  # [(lowercased name, value)]
        self.body = body
        try:
            self.json = json.loads(body) if body else None
        except ValueError:
            self.json = ValueError("not JSON: %r" % body[:200])

    def header(self, name):
        return self.headers.get(name.lower())

    def header_values(self, name):
        return [value for key, value in self.all_headers if key == name.lower()]


class SignedIn:
    """A login session: the cookie's secret and the CSRF token, as a browser of the node's own page would hold them."""

    def __init__(self, login, password, secret=None, csrf=None, account=None):
        self.login = login
        self.password = password
        self.secret = secret
        self.csrf = csrf
        self.account = account

    def __repr__(self):
        return "<signed in as %s>" % self.login


class Client:
    def __init__(self, base_url, ca):
        parsed = urllib.parse.urlparse(base_url)
        self.host = parsed.hostname
        self.port = parsed.port or 443
        self.prefix = parsed.path.rstrip("/")
        self.origin = "https://%s:%d" % (self.host, self.port) if parsed.port else "https://%s" % self.host
        self.context = ssl.create_default_context(cafile=ca)

    def connection(self, timeout=60):
        return http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=timeout)

    def fields(self, method, token=None, session=None, csrf=True, origin=True, headers=None, json_body=False):
        fields = {"Accept": "application/json"}
        if token is not None:
            fields["Authorization"] = "Bearer " + token
        if session is not None:
            if session.secret is not None:
                fields["Cookie"] = "rsup_session=" + session.secret
            if method not in ("GET", "HEAD"):
                # What the node's own page sends with a state-changing request.
                if origin:
                    fields["Origin"] = self.origin
                if csrf and session.csrf is not None:
                    fields["X-CSRF-Token"] = session.csrf
        if json_body:
            fields["Content-Type"] = "application/json"
        fields.update(headers or {})
        return {name: value for name, value in fields.items() if value is not None}

    def send(self, method, path, body=None, token=None, headers=None, raw=None, connection=None, session=None,
             csrf=True, origin=True, prefix=None):
        """`path` is below the base URL (`/sessions`), or below `prefix` when given; `raw` is bytes sent as is; else
        `body` is sent as JSON. `session` (a SignedIn) sends its cookie, and with a state-changing method its CSRF
        token and the node's origin (unless `csrf`/`origin` say not to)."""
        payload = raw
        if payload is None and body is not None:
            payload = json.dumps(body).encode("utf-8")
        fields = self.fields(method, token, session, csrf, origin, headers, json_body=payload is not None)
        own = connection is None
        connection = connection or self.connection()
        try:
            connection.request(method, (self.prefix if prefix is None else prefix) + path, body=payload,
                               headers=fields)
            answer = connection.getresponse()
            data = answer.read()
            pairs = [(k.lower(), v) for k, v in answer.getheaders()]
            return Response(answer.status, dict(pairs), data, pairs)
        finally:
            if own:
                connection.close()


class EventStream:
    """An open `GET /events`: its status and headers, then its lines, read with a timeout."""

    def __init__(self, client, path, token=None, session=None, headers=None, prefix=None):
        self.connection = client.connection(timeout=30)
        fields = client.fields("GET", token, session, headers=headers)
        fields["Accept"] = "text/event-stream"
        self.connection.request("GET", (client.prefix if prefix is None else prefix) + path, headers=fields)
        self.sock = self.connection.sock  # the connection lets go of it once the answer says Connection: close
        self.response = self.connection.getresponse()
        pairs = [(k.lower(), v) for k, v in self.response.getheaders()]
        self.status = self.response.status
        self.headers = dict(pairs)
        self.all_headers = pairs
        self.closed = False
        self.transcript = []
        if self.status != 200:
            body = self.response.read()
            self.connection.close()
            self.closed = True
            self.error = Response(self.status, self.headers, body, pairs)

    def readline(self, timeout):
        """One line without its end, or None at the end of the stream; raises socket.timeout after `timeout` s."""
        if self.closed:
            return None
        self.sock.settimeout(timeout)
        try:
            line = self.response.readline()
        except (ssl.SSLError, ConnectionError, http.client.IncompleteRead):
            line = b""
        if not line:
            self.closed = True
            return None
        text = line.decode("utf-8", "replace").rstrip("\n").rstrip("\r")
        self.transcript.append(text)
        return text

    def next_block(self, timeout):
        """The lines up to the next blank line (one event or comment block); None when the stream ended first."""
        deadline = time.monotonic() + timeout
        lines = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("no complete event within %.0f s" % timeout)
            line = self.readline(left)
            if line is None:
                return None
            if line == "":
                if lines:
                    return lines
                continue
            lines.append(line)

    def next_event(self, timeout):
        """The next event (a dict of `id`, `event`, `data`, `retry`), skipping comment blocks; None at the end."""
        deadline = time.monotonic() + timeout
        while True:
            block = self.next_block(max(0.1, deadline - time.monotonic()))
            if block is None:
                return None
            event = parse_event(block)
            if set(event) & {"id", "event", "data"}:
                return event

    def close(self):
        self.closed = True
        try:
            self.response.close()
            self.connection.close()
            self.sock.close()
        except OSError:
            pass


def parse_event(lines):
    """A Server-Sent Events block -> {"id", "event", "data" (joined), "retry", "comments": [...]}."""
    event = {"comments": []}
    data = []
    for line in lines:
        if line.startswith(":"):
            event["comments"].append(line[1:].strip())
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
        else:
            event[name] = value
    if data:
        event["data"] = "\n".join(data)
        event["data_lines"] = len(data)
    return event


# MARK: the checker

class Checker:
    def __init__(self, spec, client, admin, device, verbose=False):
        self.spec = spec
        self.client = client
        self.admin = admin
        self.device = device
        self.verbose = verbose
        self.failures = []
        self.covered = set()  # (operationId, status)
        self.requests = 0
        self.unknown_token_failures = 0

    def fail(self, what, detail):
        self.failures.append("%s: %s" % (what, detail))
        print("FAIL %s: %s" % (what, detail), flush=True)

    def token_value(self, token):
        return {"admin": self.admin, "device": self.device}.get(token, token)

    def call(self, operation_id, expected, path_args=None, body=None, raw=None, token="admin", query="",
             headers=None, connection=None, label="", session=None, csrf=True, origin=True):
        """Sends one request of `operation_id`, checks it against the spec and `expected` (a status or a set of
        them); returns the Response. With `session` (a SignedIn) the login cookie is sent instead of a token."""
        template, method, _, base = self.spec.operations[operation_id]
        path = template.format(**(path_args or {})) + query
        if session is not None:
            token = None
        token_value = self.token_value(token)
        who = (" as " + session.login) if session is not None else ""
        what = "%s %s %s%s%s" % (operation_id, method, path, who, (" [" + label + "]") if label else "")
        if body is not None and raw is None:
            what += " body=" + shorten(json.dumps(body))
        response = self.client.send(method, path, body=body, token=token_value, headers=headers, raw=raw,
                                    connection=connection, session=session, csrf=csrf, origin=origin, prefix=base)
        self.requests += 1
        if self.verbose:
            print("%d %s" % (response.status, what), flush=True)
        self.check_response(operation_id, what, response)
        wanted = expected if isinstance(expected, (set, frozenset, tuple, list)) else {expected}
        if response.status not in wanted:
            self.fail(what, "expected %s, got %d: %s"
                      % ("/".join(map(str, sorted(wanted))), response.status, shorten(response.body)))
        return response

    def check_response(self, operation_id, what, response):
        self.check_security_headers(operation_id, what, response)
        documented = self.spec.responses(operation_id)
        if response.status not in documented:
            self.fail(what, "status %d is not documented for %s (documented: %s)"
                      % (response.status, operation_id, sorted(documented)))
            if response.status >= 400:
                self.check_error_body(what, response)
            return
        self.covered.add((operation_id, response.status))
        self.check_against(documented[response.status], what, response)

    def check_security_headers(self, operation_id, what, response, base=None):
        """Every routed answer carries the security headers; below /api/ also `Cache-Control: no-store`."""
        if response.status in HTTP_LAYER_STATUSES:
            return
        for name, value in SECURITY_HEADERS.items():
            if response.header(name) != value:
                self.fail(what, "%d: security header %s is %r, not %r" % (response.status, name,
                                                                           response.header(name), value))
        if base is None:
            base = self.spec.operations[operation_id][3] if operation_id else self.spec.base_path
        if base.startswith("/api/") and response.header("Cache-Control") != "no-store":
            self.fail(what, "Cache-Control %r, not no-store" % response.header("Cache-Control"))

    def check_headers(self, documented, what, status, lookup):
        for name, header in (documented.get("headers") or {}).items():
            header = self.spec.resolve(header)
            value = lookup(name)
            schema = header.get("schema") or {}
            if value is None:
                if header.get("required"):
                    self.fail(what, "%d without the documented header %s" % (status, name))
                continue
            if schema.get("type") == "integer":
                if not re.match(r"^\d+$", value):
                    self.fail(what, "%s: %r is not an integer" % (name, value))
                elif "minimum" in schema and int(value) < schema["minimum"]:
                    self.fail(what, "%s: %r is below %d" % (name, value, schema["minimum"]))
            if "pattern" in schema and not re.search(schema["pattern"], value):
                self.fail(what, "%s: %r does not match %s" % (name, value, schema["pattern"]))
            if "enum" in schema and value not in schema["enum"]:
                self.fail(what, "%s: %r is not one of %s" % (name, value, schema["enum"]))

    def check_against(self, documented, what, response):
        self.check_headers(documented, what, response.status, response.header)
        content = documented.get("content")
        if not content:
            if response.body:
                self.fail(what, "%d must have no body, got %s" % (response.status, shorten(response.body)))
            return
        media = (response.header("Content-Type") or "").split(";")[0].strip()
        if media not in content:
            self.fail(what, "Content-Type %r is not one of %s" % (media, list(content)))
        if media != "application/json":
            return  # the console's files: type and headers only
        if isinstance(response.json, ValueError) or response.json is None:
            self.fail(what, "body is not JSON: %s" % shorten(response.body))
            return
        schema = content.get("application/json", {}).get("schema")
        if schema is not None:
            self.validate(what, "%d body" % response.status, schema, response.json)
        if response.status >= 400:
            self.check_error_body(what, response)
        self.check_times(what, response.json)

    def validate(self, what, name, schema, value):
        for error in self.spec.validator(schema).iter_errors(value):
            self.fail(what, "%s does not match the schema at %s: %s"
                      % (name, "/".join(map(str, error.absolute_path)) or "(root)", error.message))

    def check_error_body(self, what, response):
        body = response.json
        inner = body.get("error") if isinstance(body, dict) else None
        if not isinstance(body, dict) or set(body) != {"error"} or not isinstance(inner, dict) \
                or set(inner) != {"status", "code", "message"}:
            self.fail(what, "error body is not {\"error\": {status, code, message}}: %s" % shorten(response.body))
            return
        if inner["status"] != response.status:
            self.fail(what, "error.status %r differs from the HTTP status %d" % (inner["status"], response.status))
        if inner["code"] != ERROR_CODES.get(response.status):
            self.fail(what, "error.code %r for %d; expected %r"
                      % (inner["code"], response.status, ERROR_CODES.get(response.status)))
        if not isinstance(inner["message"], str) or not inner["message"]:
            self.fail(what, "error.message is empty")

    def check_times(self, what, value):
        """The node sends times in UTC with milliseconds (info.description)."""
        if isinstance(value, dict):
            for key, sub in value.items():
                if key in TIME_MEMBERS and sub is not None and not isinstance(sub, dict):
                    if not isinstance(sub, str) or not NODE_TIME.match(sub):
                        self.fail(what, "%s %r is not UTC with milliseconds" % (key, sub))
                else:
                    self.check_times(what, sub)
        elif isinstance(value, list):
            for sub in value:
                self.check_times(what, sub)

    def plain(self, method, path, expected, token="admin", what=None, raw=None, headers=None, session=None,
              prefix=None):
        """A request outside the documented operations (unknown path, other method): error shape only."""
        response = self.client.send(method, path, token=self.token_value(token) if session is None else None,
                                    raw=raw, headers=headers, session=session, prefix=prefix)
        self.requests += 1
        what = what or "%s %s%s" % (method, "" if prefix is None else prefix, path)
        full = (self.client.prefix if prefix is None else prefix) + path
        self.check_security_headers(None, what, response, base="/api/" if full.startswith("/api/") else "")
        if response.status != expected:
            self.fail(what, "expected %d, got %d: %s" % (expected, response.status, shorten(response.body)))
        if response.status >= 400:
            self.check_error_body(what, response)
            if not isinstance(response.json, ValueError):
                self.validate(what, "error body", self.spec.schema("Error"), response.json)
        return response

    def open_stream(self, operation_id, expected, query="", token="admin", session=None, headers=None, label=""):
        """Opens an event stream of `operation_id`; checks its status, headers and (when not 200) its error body.
        Returns the EventStream (closed unless 200)."""
        template, method, _, base = self.spec.operations[operation_id]
        path = template + query
        if session is not None:
            token = None
        who = (" as " + session.login) if session is not None else ""
        what = "%s %s %s%s%s" % (operation_id, method, path, who, (" [" + label + "]") if label else "")
        stream = EventStream(self.client, path, token=self.token_value(token), session=session, headers=headers,
                             prefix=base)
        self.requests += 1
        if self.verbose:
            print("%d %s" % (stream.status, what), flush=True)
        if stream.status != 200:
            self.check_response(operation_id, what, stream.error)
        else:
            response = Response(200, stream.headers, b"", stream.all_headers)
            self.check_security_headers(operation_id, what, response)
            documented = self.spec.responses(operation_id)
            if 200 not in documented:
                self.fail(what, "status 200 is not documented")
            else:
                self.covered.add((operation_id, 200))
                self.check_headers(documented[200], what, 200, response.header)
                media = (stream.headers.get("content-type") or "").split(";")[0].strip()
                if media not in (documented[200].get("content") or {}):
                    self.fail(what, "Content-Type %r is not documented" % media)
        if stream.status != expected:
            self.fail(what, "expected %d, got %d" % (expected, stream.status))
        stream.what = what
        return stream

    def event_data_schema(self, operation_id):
        content = self.spec.responses(operation_id)[200]["content"]["text/event-stream"]
        return content.get("x-event-data")

    def check_event(self, operation_id, stream, event):
        """One event: `id` and `event` lines, one `data` line of JSON matching x-event-data, id and kind agreeing."""
        what = stream.what
        if "id" not in event or not re.match(r"^\d+$", event.get("id", "")):
            self.fail(what, "event without a numeric id: %s" % event)
        if "event" not in event:
            self.fail(what, "event without an event name: %s" % event)
        if event.get("data_lines") != 1:
            self.fail(what, "event data is not exactly one line: %s" % event)
        try:
            data = json.loads(event.get("data", ""))
        except ValueError:
            self.fail(what, "event data is not JSON: %s" % shorten(event.get("data", "")))
            return None
        self.validate(what, "event data", self.event_data_schema(operation_id), data)
        self.check_times(what, data)
        if isinstance(data, dict):
            if str(data.get("id")) != event.get("id"):
                self.fail(what, "event id %s but data.id %r" % (event.get("id"), data.get("id")))
            if data.get("kind") != event.get("event"):
                self.fail(what, "event %s but data.kind %r" % (event.get("event"), data.get("kind")))
        return data


def shorten(value, limit=300):
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return value if len(value) <= limit else value[:limit] + "…(%d chars)" % len(value)


def future(seconds=3 * 24 * 3600, form="millis"):
    moment = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0) + datetime.timedelta(seconds=seconds)
    if form == "millis":
        return moment.strftime("%Y-%m-%dT%H:%M:%S") + ".250Z"
    if form == "plain":
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    return moment.astimezone(datetime.timezone(datetime.timedelta(hours=2))).strftime("%Y-%m-%dT%H:%M:%S+02:00")


# MARK: generated bodies

TYPE_SAMPLES = {"string": "x", "integer": 7, "number": 1.5, "boolean": True, "null": None, "array": [], "object": {}}
# Logins of active accounts, for members marked `x-account-login` (set by the scenario once the accounts exist).
ACCOUNT_LOGINS = []
# Strings that break common patterns (each used only where it is within the member's lengths but not its pattern).
PATTERN_BREAKERS = ["", " ", "   ", "\u00a0\u00a0", "a\u0001b", "tab\there", "line\nbreak", "del\u007f", "c1\u0085",
                    "Upper", "-lead", ".lead", "_lead", "a b", "a/b", "\u00fc", "a@b"]


def json_types(schema):
    kind = schema.get("type")
    if kind is None:
        return None
    return set(kind if isinstance(kind, list) else [kind])


def text_of_length(count, style):
    """`count` code points: ASCII, 2-byte, e + combining acute (two code points, one grapheme), or 4-byte emoji."""
    if style == "ascii":
        return "x" * count
    if style == "latin":
        return "\u00e9" * count
    if style == "emoji":
        return "\U0001F44B" * count
    return ("e\u0301" * (count // 2)) + ("e" if count % 2 else "")


def email_of_length(count):
    """A valid address of exactly `count` code points (count >= 5)."""
    domain_tail = ".com"
    local = "a" * min(64, max(1, count - 1 - 1 - len(domain_tail)))
    middle = count - len(local) - 1 - len(domain_tail)
    if middle < 1:
        return "a@b.c" + "o" * (count - 5)
    return local + "@" + "b" * middle + domain_tail


def allowed_by(schema, value):
    """Whether `value` satisfies the member's (JSON) schema, byte limits and pattern included."""
    return not list(SpecValidator(schema, format_checker=jsonschema.FormatChecker(formats=())).iter_errors(value))


def unique(values):
    out = []
    for value in values:
        if not any(value == seen and type(value) is type(seen) for seen in out):
            out.append(value)
    return out


def valid_values(name, schema):
    """Values the member's schema allows (boundaries, every enum value, every nullable null)."""
    values = []
    kinds = json_types(schema) or set()
    if "enum" in schema:
        values += [value for value in schema["enum"]]
    elif "string" in kinds and schema.get("x-account-login"):
        values += list(ACCOUNT_LOGINS)
    elif "string" in kinds:
        low, high = schema.get("minLength", 0), schema.get("maxLength", 64)
        if schema.get("format") == "byte":
            values += [base64.b64encode(b"r").decode(), base64.b64encode(bytes(range(256)) * 16).decode()]
        elif schema.get("format") == "email":
            values += ["ann@example.com", email_of_length(max(low, 5)), email_of_length(high)]
        elif schema.get("format") == "date-time":
            values += [future(form="millis"), future(7200, form="plain"), future(90000, form="offset")]
        else:
            candidates = [text_of_length(max(low, 1), "ascii"), text_of_length(high, "ascii"),
                          text_of_length(high, "latin"), text_of_length(high, "combining"),
                          "Grüße, 東京 👋"[:high]]
            least, most = schema.get("x-minBytes"), schema.get("x-maxBytes")
            if least is not None:
                # The fewest bytes, and the fewest code points (4-byte characters) that still have enough bytes.
                candidates += ["x" * least, text_of_length(max(low, -(-least // 4)), "emoji")]
            if most is not None:
                candidates += ["x" * min(high, most), text_of_length(most // 2, "latin"),
                               text_of_length(most // 4, "emoji"), text_of_length((most // 3) * 2, "combining")]
            if "pattern" in schema:
                candidates += ["0", "a.b_c-d", "z" + "9" * (high - 1), " leading space"]
            values += [value for value in candidates if allowed_by(schema, value)]
    elif "integer" in kinds:
        low, high = schema.get("minimum", 0), schema.get("maximum", 1000)
        values += [low, high, (low + high) // 2]
    elif "array" in kinds:
        items = schema.get("items") or {}
        choices = list(items.get("enum") or [])
        values += [[]] + [[choice] for choice in choices]
        if choices:
            values.append(choices[:schema.get("maxItems", len(choices))])
    elif "object" in kinds and isinstance(schema.get("properties"), dict):
        # Every member with its first value first (so that "all members" bodies are rich), then none (unless some
        # are required), then each member alone with each of its values.
        members = schema["properties"]
        everything = {}
        for sub_name, sub in members.items():
            sub_values = valid_values(sub_name, sub)
            if sub_values:
                everything[sub_name] = sub_values[0]
        values.append(everything)
        if not schema.get("required"):
            values.append({})
        for sub_name, sub in members.items():
            for value in valid_values(sub_name, sub):
                values.append({sub_name: value})
    if "null" in kinds:
        values.append(None)
    return unique(values)


def with_defaults(value, schema):
    """`value` with the `default`s of its object schema's absent members filled in, recursively: what an answer
    shows for a request member whose left-out members take their defaults."""
    if not isinstance(value, dict) or not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return value
    out = dict(value)
    for sub_name, sub in schema["properties"].items():
        if sub_name in out:
            out[sub_name] = with_defaults(out[sub_name], sub)
        elif "default" in sub:
            out[sub_name] = copy.deepcopy(sub["default"])
    return out


def invalid_values(name, schema):
    """(label, value) pairs the member's schema forbids."""
    out = []
    kinds = json_types(schema) or set()
    for kind, sample in TYPE_SAMPLES.items():
        allowed = kind in kinds or (kind == "integer" and "number" in kinds)
        if kind == "number" and "integer" in kinds:
            allowed = False  # 1.5 is not an integer
        if not allowed and not ("enum" in schema and sample in schema["enum"]):
            out.append(("wrong type %s" % kind, sample))
    if "enum" in schema:
        first = next(value for value in schema["enum"] if value is not None)
        out += [("not in enum", "bogus"), ("enum in other case", first.upper()), ("empty enum", "")]
    if "string" in kinds:
        low, high = schema.get("minLength"), schema.get("maxLength")
        if low:
            out.append(("shorter than minLength %d" % low, "@" * (low - 1)))
        if high is not None:
            if schema.get("format") == "email":
                out.append(("longer than maxLength %d" % high, email_of_length(high + 1)))
            else:
                for style in ("ascii", "latin", "combining"):
                    out.append(("longer than maxLength %d (%s)" % (high, style), text_of_length(high + 1, style)))
        least, most = schema.get("x-minBytes"), schema.get("x-maxBytes")
        if least is not None and least - 1 >= (low or 0):
            out.append(("fewer than x-minBytes %d" % least, "x" * (least - 1)))
        if most is not None:
            for style in ("latin", "combining", "emoji"):
                count = 1
                while _byte_length(text_of_length(count, style)) <= most:
                    count += 1
                if high is None or count <= high:
                    out.append(("more than x-maxBytes %d (%s)" % (most, style), text_of_length(count, style)))
        if "pattern" in schema:
            pattern = re.compile(schema["pattern"])
            for value in PATTERN_BREAKERS:
                if (low or 0) <= len(value) <= (high if high is not None else len(value)) \
                        and not pattern.search(value):
                    out.append(("not matching the pattern: %r" % value, value))
        if schema.get("format") == "email":
            out += [("bad email %r" % bad, bad) for bad in
                    ["not-an-email", "ann@example", "@example.com", "ann@.com", "ann@example.com.", "an n@example.com",
                     "ann@@example.com"]]
        if schema.get("format") == "date-time":
            out += [("bad date-time %r" % bad, bad) for bad in
                    ["tomorrow", "2030-01-01", "2030-01-01 10:00:00Z", "2030-13-01T00:00:00Z", "2030-01-01T10:00:00"]]
    if "integer" in kinds:
        if "minimum" in schema:
            out.append(("below minimum", schema["minimum"] - 1))
        if "maximum" in schema:
            out.append(("above maximum", schema["maximum"] + 1))
        out.append(("fraction", (schema.get("minimum", 0) + 0.5)))
    if "array" in kinds:
        items = schema.get("items") or {}
        choices = list(items.get("enum") or [])
        for label, value in invalid_values("%s[]" % name, items):
            out.append(("item: %s" % label, [value]))
        if schema.get("uniqueItems") and choices:
            out.append(("repeated item", [choices[0], choices[0]]))
    if "object" in kinds and isinstance(schema.get("properties"), dict):
        # One broken member at a time, one level down (and further, recursively), then an unknown member.
        for sub_name, sub in schema["properties"].items():
            for label, value in invalid_values(sub_name, sub):
                out.append(("%s: %s" % (sub_name, label), {sub_name: value}))
        if schema.get("additionalProperties") is False:
            out.append(("unknown member", {"bogus": "allow"}))
            out.append(("member in other case", {next(iter(schema["properties"])).upper(): {}}))
    return out


def create_schema_properties(spec, schema):
    return {name: spec.json_schema(sub) for name, sub in (schema.get("properties") or {}).items()}


def invalid_bodies(spec, schema, base):
    """(label, body) pairs the request schema forbids: `base` (a valid body) with one broken member each, plus
    object-level rules."""
    out = []
    properties = create_schema_properties(spec, schema)
    for name, sub in properties.items():
        for label, value in invalid_values(name, sub):
            body = copy.deepcopy(base)
            body[name] = value
            out.append(("%s: %s" % (name, label), body))
    for name in schema.get("required") or []:
        out.append(("without required %s" % name, {k: v for k, v in base.items() if k != name}))
    if schema.get("additionalProperties") is False:
        some = next(iter(properties))
        values = valid_values(some, properties[some])
        out += [("unknown member", dict(base, bogus=1)),
                ("member in other case", dict(base, **{some.upper(): "x"})), ("camelCase member",
                                                                               dict(base, customerName="x"))]
        if values:
            out.append(("unknown member beside a valid one", dict(base, bogus=1, **{some: values[0]})))
    if schema.get("minProperties") and not base:
        out.append(("fewer than minProperties", {}))
    forbidden = (schema.get("not") or {}).get("required")
    if forbidden:
        body = dict(base, **{name: valid_values(name, properties[name])[0] for name in forbidden})
        out.append(("all of %s together" % forbidden, body))
    return out


def check_invalid(checker, spec, schema, label, body):
    """Whether a generated 'invalid' body really is invalid by the spec (else it is the checker's fault)."""
    if not list(spec.validator(schema).iter_errors(body)):
        checker.fail("checker", "generated 'invalid' body (%s) %s is valid by the spec"
                     % (label, shorten(json.dumps(body))))
        return False
    return True


def session_matches(checker, what, session, body, before=None, schema=None):
    """The answer shows what `body` set; members absent from `body` are as `before`. `schema`, the request body's
    schema (as JSON Schema), gives the defaults of members left out of object values."""
    for key, value in body.items():
        if schema is not None:
            value = with_defaults(value, (schema.get("properties") or {}).get(key))
        if key in ("valid_for_seconds",):
            created = parse_time(session.get("created_at"))
            until = parse_time(session.get("valid_until"))
            if created is None or until is None or abs((until - created).total_seconds() - value) > 5:
                checker.fail(what, "valid_until %s is not created_at + %ds" % (session.get("valid_until"), value))
        elif key == "valid_until":
            given, shown = parse_time(value), parse_time(session.get("valid_until"))
            if given is None or shown is None or abs((given - shown).total_seconds()) > 0.001:
                checker.fail(what, "valid_until %r shown as %r" % (value, session.get("valid_until")))
        elif key == "state":
            pass
        elif key == "media_descriptor":
            # Write-only (a secret): never shown, only whether the code holds one.
            if key in session:
                checker.fail(what, "the answer shows the media descriptor")
            if session.get("has_media_descriptor") is not (value is not None):
                checker.fail(what, "has_media_descriptor is %r after media_descriptor %s"
                             % (session.get("has_media_descriptor"), "null" if value is None else "set"))
        elif session.get(key) != value:
            checker.fail(what, "%s is %r, not %r" % (key, session.get(key), value))
    if "type" not in body and before is None and session.get("type") != "remote_support":
        checker.fail(what, "type defaults to %r, not remote_support" % session.get("type"))
    if before is not None:
        for key, value in before.items():
            if key == "has_media_descriptor" and "media_descriptor" in body:
                continue  # what the body's media_descriptor set, checked above
            if key not in body and key not in ("live_state", "online", "device_name", "state", "closed_at"):
                if session.get(key) != value:
                    checker.fail(what, "%s changed from %r to %r although absent" % (key, value, session.get(key)))


def account_matches(checker, what, account, body, before=None):
    """The answer shows what `body` set (never the password); absent members are as `before`."""
    if not isinstance(account, dict):
        return
    if "password" in account:
        checker.fail(what, "an account shows its password")
    for key, value in body.items():
        if key != "password" and account.get(key) != value:
            checker.fail(what, "%s is %r, not %r" % (key, account.get(key), value))
    if before is None:
        if "role" not in body and account.get("role") != "supporter":
            checker.fail(what, "role defaults to %r, not supporter" % account.get("role"))
        if account.get("state") != "active":
            checker.fail(what, "a new account is %r, not active" % account.get("state"))
    else:
        for key in ("login", "display_name", "role", "state", "created_at"):
            if key not in body and account.get(key) != before.get(key):
                checker.fail(what, "%s changed from %r to %r although absent"
                             % (key, before.get(key), account.get(key)))


# MARK: the scenario

RAW_BODIES = (("empty body", b""), ("not JSON", b"{"), ("array", b"[]"), ("string", b'"x"'), ("number", b"1"),
              ("null", b"null"), ("not UTF-8", b"\xff\xfe"))
BIG_BODY = b'{"description": "' + b"x" * (64 * 1024 - 18) + b'"}'  # one byte over 64 KiB
MISSING_TOKEN_ID = "000000000000"
MISSING_WEBHOOK_ID = "wh_0000000000000000"
# Where the checker's webhook endpoints point: TEST-NET-1 (RFC 5737), which no host answers on. Deliveries to it stay
# pending (each attempt fails, or waits out the node's timeout) and reach no one.
NO_ANSWER_URL = "https://192.0.2.1/"
WEBHOOK_LIMIT = 50  # endpoints a node keeps (createWebhook's 409)
WEBHOOK_OPERATIONS = ("listWebhooks", "createWebhook", "getWebhook", "updateWebhook", "deleteWebhook",
                      "rotateWebhookSecret", "listWebhookDeliveries", "redeliverWebhook", "retryWebhookDeliveries")


class Scenario:
    def __init__(self, args):
        self.args = args
        self.spec = Spec(args.spec)
        self.client = Client(args.base_url, args.ca)
        self.checker = Checker(self.spec, self.client, args.admin_token, args.device_token, args.verbose)
        self.excused = {}  # (operationId, status) -> why it cannot be provoked here
        self.admin_account = SignedIn(args.admin_login, args.admin_password)
        self.supporter = SignedIn(args.supporter_login, args.supporter_password)
        self.other = (SignedIn(args.other_supporter_login, args.other_supporter_password)
                      if args.other_supporter_login else None)
        # A second login session of the supporter, signed in to reset the address's failed sign-ins.
        self.resetter = SignedIn(args.supporter_login, args.supporter_password)
        self.ended = SignedIn(args.supporter_login, args.supporter_password)  # signed out: its cookie gets 401
        self.sign_in_failures = 0
        self.serial = 0
        self.missing_code = "999-999-999"

    def excuse(self, operation_id, status, reason):
        self.excused[(operation_id, status)] = reason

    def fresh(self, stem="chk"):
        """A login no account has (unique within this run and, with the time, across runs)."""
        self.serial += 1
        return "%s-%x-%d" % (stem, int(time.time() * 1000) & 0xffffffff, self.serial)

    # MARK: signing in

    def sign_in(self, who, expected=200, label="", headers=None):
        """`POST /login` as `who` (with the node's own Origin, as its page sends); on 200 `who` holds the cookie."""
        fields = {"Origin": self.client.origin}
        fields.update(headers or {})
        response = self.checker.call("signIn", expected, body={"login": who.login, "password": who.password},
                                     token=None, headers=fields, label=label)
        if response.status == 200:
            cookie = response.header("Set-Cookie") or ""
            first = cookie.split(";")[0]
            who.secret = first.split("=", 1)[1] if first.startswith("rsup_session=") else None
            body = response.json if isinstance(response.json, dict) else {}
            who.csrf = body.get("csrf_token")
            who.account = body.get("account")
            if (who.account or {}).get("login") != who.login:
                self.checker.fail("signIn as %s" % who.login, "the answer names %r" % who.account)
            self.sign_in_failures = 0
        elif response.status == 401:
            self.sign_in_failures += 1
            if response.header("Set-Cookie"):
                self.checker.fail("signIn as %s" % who.login, "a refused sign-in set a cookie")
        return response

    def failed_sign_in(self, body, label, expected=401):
        """A sign-in that must fail with `expected`; at most 4 failures in a row from this address (the 5 free ones
        per address, SPEC), then a right password resets the count."""
        if self.sign_in_failures >= 4:
            self.sign_in(self.resetter, label="reset the address's failed sign-ins")
        response = self.checker.call("signIn", expected, body=body, token=None, headers={"Origin": self.client.origin},
                                     label=label)
        if response.status == 401:
            self.sign_in_failures += 1
        if response.header("Set-Cookie"):
            self.checker.fail("signIn [%s]" % label, "a refused sign-in set a cookie")
        return response

    def phase_sign_in(self):
        c = self.checker
        for who, role in ((self.admin_account, "admin"), (self.supporter, "supporter"), (self.other, "supporter"),
                          (self.resetter, "supporter"), (self.ended, "supporter")):
            if who is None:
                continue
            response = self.sign_in(who)
            if response.status == 200 and (who.account or {}).get("role") != role:
                c.fail("signIn as %s" % who.login, "the account's role is %r; the checker needs a %s"
                       % ((who.account or {}).get("role"), role))
            if who.csrf == who.secret:
                c.fail("signIn as %s" % who.login, "the CSRF token is the cookie's secret")
        if self.other is None:
            print("note: no --other-supporter-login: a second supporter's view is not checked", flush=True)
        me = c.call("getMe", 200, session=self.supporter).json or {}
        if me.get("csrf_token") != self.supporter.csrf or me.get("account") != self.supporter.account:
            c.fail("getMe", "differs from the sign-in's answer: %s" % me)
        c.call("getMe", 404, label="admin token has no account")
        c.call("getMe", 401, session=SignedIn("nobody", "-", secret="not-a-session-secret"), label="unknown cookie")
        # A bearer token is judged alone: a valid cookie beside a device token does not help, nor a bad one hurt.
        c.call("getMe", 403, token="device", headers={"Cookie": "rsup_session=" + str(self.supporter.secret)},
               label="device token beside a valid cookie")
        c.call("listSessions", 200, headers={"Cookie": "rsup_session=garbage"}, label="admin token beside a bad cookie")

        # Another site may not sign a browser in (login CSRF); the origin check comes first.
        for label, headers in (("foreign Origin", {"Origin": "https://evil.example"}),
                               ("Origin of another port", {"Origin": "https://%s:1" % self.client.host}),
                               ("http Origin", {"Origin": self.client.origin.replace("https:", "http:")}),
                               ("Sec-Fetch-Site cross-site", {"Sec-Fetch-Site": "cross-site"}),
                               ("Sec-Fetch-Site same-site", {"Sec-Fetch-Site": "same-site"})):
            response = self.sign_in(SignedIn(self.supporter.login, self.supporter.password), 403, label=label,
                                    headers=headers)
            if response.header("Set-Cookie"):
                c.fail("signIn [%s]" % label, "a refused sign-in set a cookie")
        for label, headers in (("no Origin", {"Origin": None}), ("Sec-Fetch-Site same-origin",
                                                                {"Sec-Fetch-Site": "same-origin"}),
                               ("Sec-Fetch-Site none", {"Sec-Fetch-Site": "none"})):
            self.sign_in(SignedIn(self.supporter.login, self.supporter.password), 200, label=label, headers=headers)

        # 401: a wrong password and an unknown login look the same.
        wrong = self.failed_sign_in({"login": self.supporter.login, "password": "not the password"}, "wrong password")
        unknown = self.failed_sign_in({"login": self.fresh("nobody"), "password": "not the password"}, "unknown login")
        if wrong.body != unknown.body:
            c.fail("signIn", "a wrong password and an unknown login differ: %s vs %s" % (wrong.body, unknown.body))

        # Bodies: 400, 413, generated invalid ones (422, nothing counted), generated valid ones (401: no such account).
        for label, raw in RAW_BODIES:
            c.call("signIn", 400, raw=raw, token=None, label=label)
        c.call("signIn", 413, raw=BIG_BODY, token=None, label="body over 64 KiB")
        schema = self.spec.request_schema("signIn")
        base = {"login": self.fresh("nobody"), "password": "not the password"}
        for label, body in invalid_bodies(self.spec, schema, base):
            if check_invalid(c, self.spec, schema, label, body):
                c.call("signIn", 422, body=body, token=None, label=label)
        properties = create_schema_properties(self.spec, schema)
        for name, sub in properties.items():
            for value in valid_values(name, sub):
                body = {"login": self.fresh("nobody"), "password": "not the password", name: value}
                self.failed_sign_in(body, "valid body, no such account")

    # MARK: CSRF

    def phase_csrf(self):
        c = self.checker
        s = self.supporter
        before = (c.call("listSessions", 200, query="?limit=1").json or {}).get("total")
        body = {"description": "csrf"}
        c.call("createSession", 403, body=body, session=s, csrf=False, label="no X-CSRF-Token")
        c.call("createSession", 403, body=body, session=s, csrf=False, headers={"X-CSRF-Token": "wrong"},
               label="wrong X-CSRF-Token")
        c.call("createSession", 403, body=body, session=s, csrf=False,
               headers={"X-CSRF-Token": str(self.resetter.csrf)}, label="another sign-in's X-CSRF-Token")
        for label, headers in (("foreign Origin", {"Origin": "https://evil.example"}),
                               ("Origin of another port", {"Origin": "https://%s:1" % self.client.host}),
                               ("Sec-Fetch-Site cross-site", {"Sec-Fetch-Site": "cross-site"}),
                               ("Sec-Fetch-Site same-site", {"Sec-Fetch-Site": "same-site"})):
            c.call("createSession", 403, body=body, session=s, headers=headers, label=label)
        after = (c.call("listSessions", 200, query="?limit=1").json or {}).get("total")
        if after != before:
            c.fail("CSRF", "refused requests created codes (%r -> %r)" % (before, after))
        own = None
        for label, headers in (("own Origin", {}), ("no Origin", {"Origin": None}),
                               ("Sec-Fetch-Site same-origin", {"Sec-Fetch-Site": "same-origin"}),
                               ("Sec-Fetch-Site none", {"Sec-Fetch-Site": "none"})):
            response = c.call("createSession", 201, body=body, session=s, headers=headers, label=label)
            own = own or (response.json or {}).get("code")
            if response.status == 201 and (response.json or {}).get("assigned_supporter") is not None:
                c.fail("createSession as supporter", "a new code without assigned_supporter is assigned: %s"
                       % response.body)
        own = own or self.missing_code
        c.call("listSessions", 200, session=s, label="GET needs no X-CSRF-Token")
        c.call("updateSession", 403, {"code": own}, body={"description": "x"}, session=s, csrf=False,
               label="no X-CSRF-Token")
        c.call("deleteSession", 403, {"code": own}, session=s, csrf=False, label="no X-CSRF-Token")
        c.call("connectSession", 403, {"code": own}, body={}, session=s, csrf=False, label="no X-CSRF-Token")
        c.call("cancelRequest", 403, {"code": own}, session=s, headers={"Origin": "https://evil.example"},
               label="foreign Origin")
        c.call("endSession", 403, {"code": own}, session=s, csrf=False, label="no X-CSRF-Token")
        c.call("signOut", 403, session=s, csrf=False, label="no X-CSRF-Token")
        c.call("getMe", 200, session=s, label="still signed in after a refused sign-out")
        if self.admin_account.secret:
            c.call("createUser", 403, body={"login": self.fresh(), "display_name": "X", "password": "0123456789"},
                   session=self.admin_account, csrf=False, label="admin without X-CSRF-Token")
            c.call("createToken", 403, body={}, session=self.admin_account, headers={"Sec-Fetch-Site": "cross-site"},
                   label="admin, cross-site")

    # MARK: authentication on every operation

    def auth_targets(self, code):
        """Every operation needing credentials, with path arguments and a body that would be accepted."""
        return {
            "signOut": ({}, None), "getMe": ({}, None),
            "listSessions": ({}, None), "createSession": ({}, {}),
            "getSession": ({"code": code}, None), "updateSession": ({"code": code}, {"description": "x"}),
            "deleteSession": ({"code": code}, None),
            "connectSession": ({"code": code}, {}), "cancelRequest": ({"code": code}, None),
            "endSession": ({"code": code}, None),
            "askFeature": ({"code": code}, {"feature": "chat"}),
            "withdrawFeatureAsk": ({"code": code}, {"feature": "chat"}), "sendChat": ({"code": code}, {"text": "hi"}),
            "sendApplicationMessage": ({"code": code}, {"content_type": "application/json", "body": "e30="}),
            "getSessionReport": ({"code": code}, None), "listSessionReports": ({}, None),
            "listSessionMessages": ({"code": code}, None), "listSessionFiles": ({"code": code}, None),
            "downloadSessionFile": ({"code": code, "file": "1"}, None), "uploadSessionFile": ({"code": code}, None),
            "listAudit": ({}, None), "streamEvents": ({}, None),
            "listUsers": ({}, None), "createUser": ({}, {"login": self.fresh(), "display_name": "X",
                                                         "password": "0123456789"}),
            "getUser": ({"login": self.args.admin_login}, None),
            "updateUser": ({"login": self.args.admin_login}, {}),
            "listTokens": ({}, None), "createToken": ({}, {}), "revokeToken": ({"id": MISSING_TOKEN_ID}, None),
            "listWebhooks": ({}, None),
            "createWebhook": ({}, {"url": NO_ANSWER_URL + "auth", "event_kinds": ["code_created"], "enabled": False}),
            "getWebhook": ({"id": MISSING_WEBHOOK_ID}, None), "updateWebhook": ({"id": MISSING_WEBHOOK_ID}, {"enabled": False}),
            "deleteWebhook": ({"id": MISSING_WEBHOOK_ID}, None),
            "rotateWebhookSecret": ({"id": MISSING_WEBHOOK_ID}, None),
            "listWebhookDeliveries": ({"id": MISSING_WEBHOOK_ID}, None),
            "redeliverWebhook": ({"id": MISSING_WEBHOOK_ID, "delivery": "1"}, None),
            "retryWebhookDeliveries": ({"id": MISSING_WEBHOOK_ID}, None),
        }

    def phase_authentication(self, code):
        c = self.checker
        if self.ended.secret:
            c.call("signOut", 204, session=self.ended, label="to have an ended sign-in")
        for operation_id, (path_args, body) in self.auth_targets(code).items():
            c.call(operation_id, 401, path_args, body=body, token=None, label="no token")
            c.call(operation_id, 401, path_args, body=body, token=None, headers={"Authorization": "Basic YTpi"},
                   label="Basic scheme")
            c.call(operation_id, 403, path_args, body=body, token="device", label="device token")
            c.call(operation_id, 401, path_args, body=body, session=self.ended, label="ended sign-in")
        c.call("listSessions", 401, token="rsk_unknown-token-from-check-openapi", label="unknown token")
        c.unknown_token_failures += 1
        c.call("getSession", 200, {"code": code})

    # MARK: accounts and tokens

    def phase_users(self):
        c = self.checker
        s = self.supporter
        # Supporters may not; admins (accounts and tokens) may.
        for operation_id, (path_args, body) in self.auth_targets(self.missing_code).items():
            if operation_id in ("listUsers", "createUser", "getUser", "updateUser", "listTokens", "createToken",
                                "revokeToken") + WEBHOOK_OPERATIONS:
                c.call(operation_id, 403, path_args, body=body, session=s, label="supporter")
        users = (c.call("listUsers", 200).json or {}).get("users") or []
        logins = [user.get("login") for user in users]
        if logins != sorted(logins):
            c.fail("listUsers", "not by login: %s" % logins)
        for who in (self.admin_account, self.supporter, self.other):
            if who is not None and who.login not in logins:
                c.fail("listUsers", "%s is not listed" % who.login)
        if self.admin_account.secret:
            listed = c.call("listUsers", 200, session=self.admin_account, label="admin account").json or {}
            if [u.get("login") for u in listed.get("users") or []] != logins:
                c.fail("listUsers", "an admin account sees other accounts than the admin token")

        # 409: the last active admin cannot be disabled or made a supporter.
        admins = [u["login"] for u in users if u.get("role") == "admin" and u.get("state") == "active"]
        if admins == [self.args.admin_login]:
            for body in ({"role": "supporter"}, {"state": "disabled"}, {"role": "supporter", "display_name": "X"}):
                c.call("updateUser", 409, {"login": self.args.admin_login}, body=body, label="last active admin")
            still = c.call("getUser", 200, {"login": self.args.admin_login}).json or {}
            if still.get("role") != "admin" or still.get("state") != "active" or still.get("display_name") == "X":
                c.fail("updateUser", "a refused change to the last admin was applied: %s" % still)
        else:
            self.excuse("updateUser", 409, "the node has other active admins than --admin-login (%s), so none is the "
                        "last" % ", ".join(admins))

        # createUser: generated valid bodies (201, Location, the answer and GET agree), a duplicate (409).
        schema = self.spec.request_schema("createUser")
        properties = create_schema_properties(self.spec, schema)
        base = lambda: {"login": self.fresh(), "display_name": "Checker", "password": "checker password"}
        bodies = []
        for name, sub in properties.items():
            for value in valid_values(name, sub):
                if name == "login" and value in logins:
                    continue  # from an earlier run against this node
                bodies.append(dict(base(), **{name: value}))
        full = {name: valid_values(name, sub)[0] for name, sub in properties.items()}
        full["login"] = self.fresh()
        bodies.append(full)
        created = []
        for body in bodies:
            if list(self.spec.validator(schema).iter_errors(body)):
                c.fail("checker", "generated 'valid' account %s is invalid by the spec" % shorten(json.dumps(body)))
                continue
            response = c.call("createUser", 201, body=body, label="valid body")
            if response.status != 201:
                continue
            account = response.json or {}
            account_matches(c, "createUser body=" + shorten(json.dumps(body)), account, body)
            if response.header("Location") != "%s/users/%s" % (self.spec.base_path, body["login"]):
                c.fail("createUser", "Location %r does not name %r" % (response.header("Location"), body["login"]))
            if c.call("getUser", 200, {"login": body["login"]}).json != account:
                c.fail("getUser", "GET differs from the 201 body of %s" % body["login"])
            created.append(body)
        c.call("createUser", 409, body=dict(base(), login=self.args.supporter_login), label="login taken")
        # Accounts of boundary logins serve as assignees later.
        boundary = [b["login"] for b in created if len(b["login"]) in (1, 64) or not b["login"].startswith("chk-")]
        # Invalid bodies: 422, nothing created.
        invalid_login = self.fresh("chk-invalid")
        for label, body in invalid_bodies(self.spec, schema, dict(base(), login=invalid_login)):
            if check_invalid(c, self.spec, schema, label, body):
                c.call("createUser", 422, body=body, label=label)
        c.call("getUser", 404, {"login": invalid_login}, label="after refused creations")
        for label, raw in RAW_BODIES:
            c.call("createUser", 400, raw=raw, label=label)
        c.call("createUser", 413, raw=BIG_BODY, label="body over 64 KiB")
        c.call("getUser", 404, {"login": "no-such-account"})
        c.call("getUser", 404, {"login": "Not%20A%20Login"})
        if self.admin_account.secret:
            c.call("getUser", 200, {"login": self.supporter.login}, session=self.admin_account, label="admin account")

        # updateUser on an account of the checker's: disabling and a new password end its sign-ins.
        scratch = SignedIn(self.fresh("chk-scratch"), "scratch password 1")
        c.call("createUser", 201,
               body={"login": scratch.login, "display_name": "Scratch", "password": scratch.password})
        self.sign_in(scratch)
        c.call("getMe", 200, session=scratch)
        c.call("updateUser", 200, {"login": scratch.login}, body={"state": "disabled"})
        c.call("getMe", 401, session=scratch, label="account disabled")
        self.sign_in(scratch, 403, label="disabled account, right password")
        self.failed_sign_in({"login": scratch.login, "password": "wrong password"}, "disabled account, wrong password")
        c.call("updateUser", 200, {"login": scratch.login}, body={"state": "active"})
        self.sign_in(scratch)
        scratch.password = "scratch password 2"
        c.call("updateUser", 200, {"login": scratch.login}, body={"password": scratch.password})
        c.call("getMe", 401, session=scratch, label="password changed")
        self.sign_in(scratch)
        c.call("updateUser", 200, {"login": scratch.login}, body={"role": "admin"})
        c.call("listUsers", 200, session=scratch, label="made admin: at once")
        c.call("updateUser", 200, {"login": scratch.login}, body={"role": "supporter"})
        c.call("listUsers", 403, session=scratch, label="made supporter: at once")

        update_schema = self.spec.request_schema("updateUser")
        before = c.call("getUser", 200, {"login": scratch.login}).json or {}
        for name, sub in create_schema_properties(self.spec, update_schema).items():
            for value in valid_values(name, sub):
                body = {name: value}
                response = c.call("updateUser", 200, {"login": scratch.login}, body=body, label="valid body")
                if response.status == 200:
                    account_matches(c, "updateUser body=" + shorten(json.dumps(body)), response.json, body, before)
                    before = response.json
        response = c.call("updateUser", 200, {"login": scratch.login}, body={}, label="empty change")
        account_matches(c, "updateUser {}", response.json, {}, before)
        before = c.call("updateUser", 200, {"login": scratch.login}, body={"state": "active", "role": "supporter"}).json
        for label, body in invalid_bodies(self.spec, update_schema, {}):
            if check_invalid(c, self.spec, update_schema, label, body):
                c.call("updateUser", 422, {"login": scratch.login}, body=body, label=label)
        after = c.call("getUser", 200, {"login": scratch.login}).json
        if after != before:
            c.fail("updateUser", "refused changes altered the account: %s -> %s" % (before, after))
        c.call("updateUser", 404, {"login": "no-such-account"}, body={"display_name": "x"})
        for label, raw in RAW_BODIES:
            c.call("updateUser", 400, {"login": scratch.login}, raw=raw, label=label)
        c.call("updateUser", 413, {"login": scratch.login}, raw=BIG_BODY, label="body over 64 KiB")

        # A disabled account, for assignments that must be refused.
        self.disabled_login = self.fresh("chk-disabled")
        c.call("createUser", 201, body={"login": self.disabled_login, "display_name": "Gone", "password": "0123456789"})
        c.call("updateUser", 200, {"login": self.disabled_login}, body={"state": "disabled"})

        ACCOUNT_LOGINS[:] = unique([self.args.admin_login, self.args.supporter_login]
                                   + ([self.other.login] if self.other else []) + boundary)

    def phase_tokens(self):
        c = self.checker
        listed = (c.call("listTokens", 200).json or {}).get("tokens") or []
        if any("token" in record for record in listed):
            c.fail("listTokens", "a listed record shows its token")
        schema = self.spec.request_schema("createToken")
        issued = []
        for name, sub in create_schema_properties(self.spec, schema).items():
            for value in valid_values(name, sub):
                body = {name: value}
                response = c.call("createToken", 201, body=body, label="valid body")
                if response.status == 201:
                    issued.append((body, response.json or {}))
        response = c.call("createToken", 201, body={}, label="defaults")
        if response.status == 201:
            issued.append(({}, response.json or {}))
        if self.admin_account.secret:
            response = c.call("createToken", 201, body={"scope": "device", "label": "by an admin account"},
                              session=self.admin_account)
            if response.status == 201:
                issued.append(({"scope": "device", "label": "by an admin account"}, response.json or {}))
        for body, token in issued:
            what = "createToken body=" + shorten(json.dumps(body))
            scope = body.get("scope", "device")
            if token.get("scope") != scope or token.get("label") != body.get("label") \
                    or token.get("revoked_at") is not None:
                c.fail(what, "the answer does not reflect the body: %s" % token)
            if not str(token.get("token", "")).startswith("rsa_" if scope == "admin" else "rsk_"):
                c.fail(what, "token %r does not start as its scope's do" % token.get("token"))
        now = {t.get("id"): t for t in (c.call("listTokens", 200).json or {}).get("tokens") or []}
        for body, token in issued:
            shown = now.get(token.get("id"))
            expected = {k: v for k, v in token.items() if k != "token"}
            if shown != expected:
                c.fail("listTokens", "issued token %s is listed as %s" % (expected, shown))
        admin_issued = next((t for b, t in issued if t.get("scope") == "admin"), None)
        device_issued = next((t for b, t in issued if t.get("scope") == "device"), None)
        if admin_issued:
            c.call("listSessions", 200, token=admin_issued.get("token"), label="an issued admin token")
        if device_issued:
            c.call("listSessions", 403, token=device_issued.get("token"), label="an issued device token")
        for label, body in invalid_bodies(self.spec, schema, {}):
            if check_invalid(c, self.spec, schema, label, body):
                c.call("createToken", 422, body=body, label=label)
        if len((c.call("listTokens", 200).json or {}).get("tokens") or []) != len(now):
            c.fail("createToken", "refused bodies issued tokens")
        for label, raw in RAW_BODIES:
            c.call("createToken", 400, raw=raw, label=label)
        c.call("createToken", 413, raw=BIG_BODY, label="body over 64 KiB")
        # Revoke every token issued here (never the checker's own): 204, then 404; listed with revoked_at.
        for body, token in issued:
            c.call("revokeToken", 204, {"id": token.get("id")})
        if issued:
            c.call("revokeToken", 404, {"id": issued[0][1].get("id")}, label="twice")
        c.call("revokeToken", 404, {"id": MISSING_TOKEN_ID})
        c.call("revokeToken", 404, {"id": "not-an-id"})
        now = {t.get("id"): t for t in (c.call("listTokens", 200).json or {}).get("tokens") or []}
        for body, token in issued:
            if (now.get(token.get("id")) or {}).get("revoked_at") is None:
                c.fail("revokeToken", "token %s is not listed as revoked" % token.get("id"))
        if device_issued:
            c.call("listSessions", 401, token=device_issued.get("token"), label="a revoked device token")
            c.unknown_token_failures += 1

    # MARK: webhook endpoints

    def webhook_matches(self, what, hook, body, before=None, secret=False):
        """The answer shows what `body` set (a list naming `*` as `["*"]`, a description `""` as null) and, when
        `before` is given, the rest as before (else the defaults); `secret` only where it is expected."""
        c = self.checker
        if not isinstance(hook, dict):
            return
        if ("secret" in hook) != secret:
            c.fail(what, "the answer %s the secret" % ("shows" if "secret" in hook else "does not show"))
        for key, value in body.items():
            if key == "event_kinds":
                value = ["*"] if "*" in value else unique(value)
            elif key == "description" and value == "":
                value = None
            if hook.get(key) != value:
                c.fail(what, "%s is %r, not %r" % (key, hook.get(key), value))
        if before is None:
            for key, value in (("enabled", True), ("description", None), ("previous_secret_until", None)):
                if key not in body and hook.get(key) != value:
                    c.fail(what, "%s defaults to %r, not %r" % (key, hook.get(key), value))
        else:
            for key in ("id", "url", "event_kinds", "enabled", "description", "created_at", "previous_secret_until"):
                if key not in body and hook.get(key) != before.get(key):
                    c.fail(what, "%s changed from %r to %r although absent" % (key, before.get(key), hook.get(key)))

    def phase_webhooks(self):
        c = self.checker
        spec = self.spec
        create_schema = spec.request_schema("createWebhook")
        update_schema = spec.request_schema("updateWebhook")
        kinds = [kind for kind in spec.json_schema(spec.schema("WebhookEventKind"))["enum"] if kind != "*"]
        counted = lambda hook: {k: v for k, v in (hook or {}).items() if k not in ("pending", "failed", "secret")}
        listed = (c.call("listWebhooks", 200).json or {}).get("webhooks") or []
        if any("secret" in hook for hook in listed):
            c.fail("listWebhooks", "a listed endpoint shows its secret")
        if self.admin_account.secret:
            c.call("listWebhooks", 200, session=self.admin_account, label="admin account")
        made = []  # the ids of the endpoints made here: every one is deleted at the end

        def create(body, label="valid body", expected=201):
            if expected == 201 and list(spec.validator(create_schema).iter_errors(body)):
                c.fail("checker", "'valid' webhook %s is invalid by the spec" % shorten(json.dumps(body)))
            response = c.call("createWebhook", expected, body=body, label=label)
            if response.status != 201 or not isinstance(response.json, dict):
                return None
            hook = response.json
            made.append(hook.get("id"))
            return hook

        # createWebhook: valid bodies (defaults, every member, boundaries); the secret once, GET without it.
        bodies = [
            {"url": NO_ANSWER_URL + "defaults", "event_kinds": ["code_created"]},
            {"url": NO_ANSWER_URL + "full?from=check_openapi", "event_kinds": ["session_started", "session_ended"],
             "description": "x" * 200, "enabled": False},
            {"url": "https://hooks.example.invalid:8443/a/b?c=d", "event_kinds": kinds[:64], "enabled": False,
             "description": "Grüße, 東京 👋"},
            {"url": "https://[2001:db8::1]/", "event_kinds": ["*", "code_created"], "description": "", "enabled": False},
            {"url": NO_ANSWER_URL + "one", "event_kinds": ["webhook_deleted"], "enabled": False,
             "description": text_of_length(200, "combining")},
        ]
        hooks = []
        for body in bodies:
            hook = create(body)
            if hook is None:
                continue
            what = "createWebhook body=" + shorten(json.dumps(body))
            self.webhook_matches(what, hook, body, secret=True)
            if hook.get("pending") != 0 and not hook.get("enabled"):
                c.fail(what, "a new disabled endpoint has %r pending deliveries" % hook.get("pending"))
            fetched = c.call("getWebhook", 200, {"id": hook.get("id")}).json or {}
            if counted(fetched) != counted(hook) or "secret" in fetched:
                c.fail("getWebhook", "GET differs from the 201 body (less the secret): %s vs %s" % (fetched, hook))
            hooks.append(hook)
        if len({hook.get("secret") for hook in hooks}) != len(hooks):
            c.fail("createWebhook", "two endpoints got the same secret")
        now = {hook.get("id"): hook for hook in (c.call("listWebhooks", 200).json or {}).get("webhooks") or []}
        for hook in hooks:
            if counted(now.get(hook.get("id"))) != counted(hook) or "secret" in (now.get(hook.get("id")) or {}):
                c.fail("listWebhooks", "endpoint %s is listed as %s" % (hook.get("id"), now.get(hook.get("id"))))
        count = len(now)

        # Refused bodies: 422 (generated from the schema, and what the schema cannot say), 400, 413; none registered.
        base = {"url": NO_ANSWER_URL + "refused", "event_kinds": ["code_created"], "enabled": False}
        for label, body in invalid_bodies(spec, create_schema, base):
            if check_invalid(c, spec, create_schema, label, body):
                create(body, label, 422)
        for label, body in (("plain http:// URL", dict(base, url="http://192.0.2.1/hook")),
                            ("URL with a user and password", dict(base, url="https://user:pw@192.0.2.1/")),
                            ("URL with a fragment", dict(base, url="https://192.0.2.1/#frag")),
                            ("URL without a host", dict(base, url="https:///path")),
                            ("URL with port 0", dict(base, url="https://192.0.2.1:0/")),
                            ("no kinds", dict(base, event_kinds=[])),
                            ("description of 201 characters", dict(base, description="x" * 201)),
                            ("description with a control character", dict(base, description="a\u0085b")),
                            ("unknown member", dict(base, secret="whsec_mine"))):
            create(body, label, 422)
        refusal = create(dict(base, event_kinds=["code_created", "no_such_kind"]), "unknown kind", 422)
        answer = c.call("createWebhook", 422, body=dict(base, event_kinds=["telepathy"]), label="unknown kind, listed")
        message = str(((answer.json if isinstance(answer.json, dict) else {}).get("error") or {}).get("message"))
        marker = 'the kinds are "*" and '
        if marker in message:
            named = set(message.split(marker, 1)[1].split(", "))
            if named != set(kinds):
                c.fail("createWebhook unknown kind", "the node's kinds differ from WebhookEventKind: only the node's "
                       "%s, only the spec's %s" % (sorted(named - set(kinds)), sorted(set(kinds) - named)))
        for label, raw in RAW_BODIES:
            c.call("createWebhook", 400, raw=raw, label=label)
        c.call("createWebhook", 413, raw=BIG_BODY, label="body over 64 KiB")
        after = (c.call("listWebhooks", 200).json or {}).get("webhooks") or []
        if len(after) != count or refusal is not None:
            c.fail("createWebhook", "refused bodies registered endpoints (%d -> %d)" % (count, len(after)))

        # updateWebhook: each member alone with each value it may take, absent members stay; refusals change nothing.
        target = hooks[1] if len(hooks) > 1 else create(dict(base, url=NO_ANSWER_URL + "target"))
        tid = {"id": (target or {}).get("id", MISSING_WEBHOOK_ID)}
        before = c.call("getWebhook", 200, tid).json or {}
        sweep = [{"url": NO_ANSWER_URL + "moved?x=1"}, {"url": "https://hooks.example.invalid/back"},
                 {"enabled": True}, {"enabled": False}, {"description": None}, {"description": ""}]
        for name, sub in create_schema_properties(spec, update_schema).items():
            sweep += [{name: value} for value in valid_values(name, sub) if allowed_by(sub, value)]
        for body in sweep:
            response = c.call("updateWebhook", 200, tid, body=body, label="valid body")
            if response.status == 200:
                self.webhook_matches("updateWebhook body=" + shorten(json.dumps(body)), response.json, body, before)
                before = response.json or before
        everything = {"url": NO_ANSWER_URL + "all", "event_kinds": ["code_deleted", "token_issued"],
                      "description": "every member", "enabled": False}
        response = c.call("updateWebhook", 200, tid, body=everything, label="every member")
        self.webhook_matches("updateWebhook every member", response.json, everything, before)
        before = response.json or before
        for label, body in invalid_bodies(spec, update_schema, {}):
            if check_invalid(c, spec, update_schema, label, body):
                c.call("updateWebhook", 422, tid, body=body, label=label)
        c.call("updateWebhook", 422, {"id": MISSING_WEBHOOK_ID}, body={}, label="nothing to change, before the id")
        for label, body in (("plain http:// URL", {"url": "http://192.0.2.1/hook"}), ("no kinds", {"event_kinds": []}),
                            ("unknown kind", {"event_kinds": ["no_such_kind"]}),
                            ("description of 201 characters", {"description": "x" * 201}),
                            ("unknown member", {"secret": "whsec_mine"}), ("null url", {"url": None}),
                            ("null enabled", {"enabled": None})):
            c.call("updateWebhook", 422, tid, body=body, label=label)
        for label, raw in RAW_BODIES:
            c.call("updateWebhook", 400, tid, raw=raw, label=label)
            c.call("updateWebhook", 400, {"id": MISSING_WEBHOOK_ID}, raw=raw, label=label + ", before the id")
        c.call("updateWebhook", 413, tid, raw=BIG_BODY, label="body over 64 KiB")
        if counted(c.call("getWebhook", 200, tid).json) != counted(before):
            c.fail("updateWebhook", "refused changes altered the endpoint")
        c.call("updateWebhook", 404, {"id": MISSING_WEBHOOK_ID}, body={"enabled": False})
        c.call("updateWebhook", 404, {"id": "not-an-id"}, body={"description": None})
        c.call("getWebhook", 404, {"id": MISSING_WEBHOOK_ID})
        c.call("getWebhook", 404, {"id": "not-an-id"})

        # rotateWebhookSecret: a new secret, once; the old one signs for 24 h more.
        old = (hooks[1] if len(hooks) > 1 else {}).get("secret")
        rotated = c.call("rotateWebhookSecret", 200, tid).json or {}
        self.webhook_matches("rotateWebhookSecret", rotated, {},
                             dict(before, previous_secret_until=rotated.get("previous_secret_until")), secret=True)
        until = parse_time(rotated.get("previous_secret_until"))
        expected = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=24)
        if until is None or abs((until - expected).total_seconds()) > 600:
            c.fail("rotateWebhookSecret", "previous_secret_until %r is not 24 h from now"
                   % rotated.get("previous_secret_until"))
        if rotated.get("secret") in (None, old):
            c.fail("rotateWebhookSecret", "the secret did not change")
        again = c.call("rotateWebhookSecret", 200, tid, raw=b"{}", label="body {}").json or {}
        if again.get("secret") in (None, rotated.get("secret")):
            c.fail("rotateWebhookSecret", "a second rotation kept the secret")
        fetched = c.call("getWebhook", 200, tid).json or {}
        if "secret" in fetched or fetched.get("previous_secret_until") != again.get("previous_secret_until"):
            c.fail("getWebhook", "after a rotation: %s" % fetched)
        for label, raw in (("a member", b'{"secret": "whsec_mine"}'), ("an array", b"[]"), ("not JSON", b"{")):
            c.call("rotateWebhookSecret", 422, tid, raw=raw, label=label)
        c.call("rotateWebhookSecret", 404, {"id": MISSING_WEBHOOK_ID})

        # Deliveries: an enabled endpoint of every kind gets one for its own webhook_created row at once.
        watch = create({"url": NO_ANSWER_URL + "hook/path-secret-of-check-openapi", "event_kinds": ["*"],
                        "description": "check_openapi: never answered"}) or {}
        wid = {"id": watch.get("id", MISSING_WEBHOOK_ID)}
        c.call("updateWebhook", 200, wid, body={"description": "check_openapi: an audited change"})
        page = c.call("listWebhookDeliveries", 200, wid).json or {}
        deliveries = page.get("deliveries") or []
        ids = [d.get("id") for d in deliveries]
        if ids != sorted(ids, reverse=True) or len(deliveries) < 2 or page.get("next_before_id") is not None:
            c.fail("listWebhookDeliveries", "not the endpoint's deliveries newest first: %s" % shorten(json.dumps(page)))
        rows = (c.call("listAudit", 200, query="?kind=webhook_created&limit=1").json or {}).get("events") or []
        first = next((d for d in deliveries if d.get("event_kind") == "webhook_created"), None)
        if not rows or first is None or first.get("event_id") != rows[0].get("id") or first.get("code") is not None:
            c.fail("listWebhookDeliveries", "no delivery of the endpoint's webhook_created row %s: %s"
                   % (rows[:1], deliveries))
        if rows:
            c.validate("listAudit webhook_created", "the row as WebhookEvent", spec.schema("WebhookEvent"), rows[0])
            details = rows[0].get("details") or {}
            if details.get("endpoint") != watch.get("id") or details.get("host") != "192.0.2.1":
                c.fail("listAudit webhook_created", "details %s do not name the endpoint and host" % details)
            if any("path-secret" in str(v) or "whsec_" in str(v) for v in details.values()):
                c.fail("listAudit webhook_created", "the row shows the URL's path or the secret: %s" % details)
        if deliveries:
            # (The node may audit something of its own meanwhile, e.g. a count of failed tokens: a newer delivery.)
            one = c.call("listWebhookDeliveries", 200, wid, query="?limit=1").json or {}
            newest = [d.get("id") for d in one.get("deliveries") or []]
            if len(newest) != 1 or newest[0] < ids[0] or one.get("next_before_id") != newest[0]:
                c.fail("listWebhookDeliveries ?limit=1", "not the newest with next_before_id: %s" % one)
            older = c.call("listWebhookDeliveries", 200, wid, query="?before_id=%d" % ids[0]).json or {}
            if [d.get("id") for d in older.get("deliveries") or []] != ids[1:]:
                c.fail("listWebhookDeliveries ?before_id", "not the older deliveries: %s" % older)
        for state in ("pending", "delivered", "failed"):
            got = (c.call("listWebhookDeliveries", 200, wid, query="?state=" + state).json or {}).get("deliveries")
            if any(d.get("state") != state for d in got or []):
                c.fail("listWebhookDeliveries ?state=" + state, "lists other states: %s" % got)
        for query in ("?limit=0", "?limit=501", "?limit=abc", "?limit=-1", "?limit=", "?limit=1.5", "?before_id=abc",
                      "?before_id=-1", "?before_id=1.5", "?state=bogus", "?state=PENDING", "?state=",
                      "?limit=99999999999999999999999"):
            c.call("listWebhookDeliveries", 400, wid, query=query, label="bad parameter")
        c.call("listWebhookDeliveries", 400, {"id": MISSING_WEBHOOK_ID}, query="?limit=0", label="before the id")
        c.call("listWebhookDeliveries", 404, {"id": MISSING_WEBHOOK_ID})
        c.call("listWebhookDeliveries", 404, {"id": MISSING_WEBHOOK_ID}, query="?state=pending&limit=5")

        # redeliverWebhook: a new pending delivery of the same event (202), audited; 404 for any other delivery.
        if first is not None:
            d = {"id": wid["id"], "delivery": first.get("id")}
            again = c.call("redeliverWebhook", 202, d).json or {}
            if again.get("redelivery_of") != first.get("id") or again.get("event_id") != first.get("event_id") \
                    or again.get("state") != "pending" or not again.get("id") or again.get("id") <= max(ids):
                c.fail("redeliverWebhook", "the new delivery is %s" % again)
            logged = (c.call("listWebhookDeliveries", 200, wid).json or {}).get("deliveries") or []
            if again.get("id") not in [x.get("id") for x in logged[:3]]:
                c.fail("redeliverWebhook", "the new delivery is not among the newest of the log: %s" % logged[:3])
            rows = (c.call("listAudit", 200, query="?kind=webhook_redelivered&limit=1").json or {}).get("events") or []
            details = (rows[0] if rows else {}).get("details") or {}
            if details.get("endpoint") != wid["id"] or details.get("redelivery_of") != str(first.get("id")) \
                    or details.get("delivery") != str(again.get("id")):
                c.fail("redeliverWebhook", "not audited as webhook_redelivered: %s" % rows[:1])
            c.call("redeliverWebhook", 404, {"id": tid["id"], "delivery": first.get("id")},
                   label="another endpoint's delivery")
            c.call("redeliverWebhook", 404, {"id": MISSING_WEBHOOK_ID, "delivery": first.get("id")},
                   label="no such endpoint")
            c.call("redeliverWebhook", 404, {"id": wid["id"], "delivery": max(ids + [again.get("id") or 0]) + 10 ** 9})
        else:
            self.excuse("redeliverWebhook", 202, "no delivery was made (see the failures above)")
        for delivery in ("x", "0", "-1", "1.5"):
            c.call("redeliverWebhook", 404, {"id": wid["id"], "delivery": delivery}, label="not a delivery id")

        # retryWebhookDeliveries: the endpoint's pending deliveries due now (202, how many), audited with the count.
        self.check_webhook_retry(wid)
        c.call("retryWebhookDeliveries", 202, tid, raw=b"{}", label="body {}")
        for label, raw in (("a member", b'{"retried": 1}'), ("an array", b"[]"), ("not JSON", b"{"),
                           ("a string", b'"x"')):
            c.call("retryWebhookDeliveries", 422, wid, raw=raw, label=label)
        c.call("retryWebhookDeliveries", 422, {"id": MISSING_WEBHOOK_ID}, raw=b"[]", label="before the id")
        c.call("retryWebhookDeliveries", 404, {"id": MISSING_WEBHOOK_ID})
        c.call("retryWebhookDeliveries", 404, {"id": "not-an-id"})

        # 409: the 51st endpoint (disabled fillers up to the limit, deleted at once after).
        present = len((c.call("listWebhooks", 200).json or {}).get("webhooks") or [])
        fillers = []
        for index in range(max(0, WEBHOOK_LIMIT - present)):
            filler = create({"url": NO_ANSWER_URL + "filler-%d" % index, "event_kinds": ["code_created"],
                             "enabled": False}, "filling up to %d endpoints" % WEBHOOK_LIMIT)
            if filler is None:
                break
            fillers.append(filler.get("id"))
        create(dict(base, url=NO_ANSWER_URL + "one-too-many"), "endpoint %d" % (WEBHOOK_LIMIT + 1), 409)
        for hook_id in fillers:
            c.call("deleteWebhook", 204, {"id": hook_id}, label="a filler")
            made.remove(hook_id)

        # deleteWebhook: every endpoint made here; then 404, and gone from the list.
        for hook_id in made:
            c.call("deleteWebhook", 204, {"id": hook_id})
        if made:
            c.call("deleteWebhook", 404, {"id": made[0]}, label="twice")
            c.call("getWebhook", 404, {"id": made[0]}, label="after delete")
            c.call("listWebhookDeliveries", 404, {"id": wid["id"]}, label="after delete")
            c.call("rotateWebhookSecret", 404, {"id": made[0]}, label="after delete")
            c.call("retryWebhookDeliveries", 404, {"id": wid["id"]}, label="after delete")
        c.call("deleteWebhook", 404, {"id": MISSING_WEBHOOK_ID})
        c.call("deleteWebhook", 404, {"id": "not-an-id"})
        left = {hook.get("id") for hook in (c.call("listWebhooks", 200).json or {}).get("webhooks") or []}
        if left & set(made) or len(left) != len(listed):
            c.fail("deleteWebhook", "endpoints left after deleting the checker's: %s" % sorted(left))

    def check_webhook_retry(self, wid):
        """`POST /webhooks/{id}/retry` on endpoint `wid` (its deliveries go to TEST-NET-1: they fail, or are under
        way, or wait out a back-off): 202 with `retried`, the `webhook_changed` row saying `changed: retry` and the
        count, and afterwards no pending delivery waiting past the retry's time unless it was tried since (the row's
        time is the node's own: no clock of this host is compared)."""
        c = self.checker
        answer = c.call("retryWebhookDeliveries", 202, wid).json or {}
        retried = answer.get("retried")
        if not isinstance(retried, int) or isinstance(retried, bool) or retried < 0:
            c.fail("retryWebhookDeliveries", "retried is %r, not a count" % (retried,))
        rows = (c.call("listAudit", 200, query="?kind=webhook_changed&limit=1").json or {}).get("events") or []
        row = rows[0] if rows else {}
        details = row.get("details") or {}
        if details.get("endpoint") != wid["id"] or details.get("changed") != "retry" \
                or details.get("retried") != str(retried):
            c.fail("retryWebhookDeliveries", "not audited as webhook_changed (changed: retry, retried: %r): %s"
                   % (retried, rows[:1]))
        at = parse_time(row.get("time"))
        if at is None:
            return
        slack = datetime.timedelta(seconds=1)  # the row's time and the log's times are each rounded to milliseconds
        page = c.call("listWebhookDeliveries", 200, wid, query="?state=pending&limit=500",
                      label="after a retry").json or {}
        for delivery in page.get("deliveries") or []:
            due = parse_time(delivery.get("next_attempt_at"))
            tried = parse_time(delivery.get("last_attempt_at"))
            if due is not None and due > at + slack and (tried is None or tried < at - slack):
                c.fail("retryWebhookDeliveries", "pending delivery %s still waits until %s after the retry at %s "
                       "and was not tried since: %s" % (delivery.get("id"), delivery.get("next_attempt_at"),
                                                        row.get("time"), delivery))

    # MARK: session codes

    def phase_sessions(self, code, location):
        c = self.checker
        spec = self.spec
        create_schema = spec.request_schema("createSession")
        update_schema = spec.request_schema("updateSession")

        # createSession: Location, the answer reflects the body, GET shows the same.
        response = c.call("createSession", 201, body={"type": "assist_ar", "description": "loc"})
        created = response.json or {}
        if response.header("Location") != spec.base_path + "/sessions/" + str(created.get("code")):
            c.fail("createSession", "Location %r does not name %r" % (response.header("Location"), created.get("code")))
        if location is None or not re.match(r"^%s/sessions/\d{3}-\d{3}-\d{3}$" % re.escape(spec.base_path), location):
            c.fail("createSession", "Location %r is not %s/sessions/{code}" % (location, spec.base_path))
        fetched = c.call("getSession", 200, {"code": created.get("code")}).json
        if fetched != created:
            c.fail("getSession", "GET differs from the 201 body: %s vs %s" % (fetched, created))
        for key, expected in (("state", "open"), ("live_state", "open"), ("online", False), ("closed_at", None),
                              ("device_name", None), ("assigned_supporter", None)):
            if created.get(key) != expected:
                c.fail("createSession", "a new code has %s %r, not %r" % (key, created.get(key), expected))

        # Valid create bodies: each member alone with each boundary value, all members, none.
        properties = create_schema_properties(spec, create_schema)
        valid_bodies = [{}]
        for name, schema in properties.items():
            for value in valid_values(name, schema):
                valid_bodies.append({name: value})
        full = {name: valid_values(name, schema)[0] for name, schema in properties.items()}
        for left_out in properties:
            valid_bodies.append({k: v for k, v in full.items() if k != left_out})
        valid_bodies.append(full)
        valid_bodies = [body for body in valid_bodies if not list(spec.validator(create_schema).iter_errors(body))]
        for body in valid_bodies:
            response = c.call("createSession", 201, body=body, label="valid body")
            if response.status == 201:
                session_matches(c, "createSession body=" + shorten(json.dumps(body)), response.json or {}, body,
                                schema=spec.json_schema(create_schema))

        # Invalid create bodies: every one must be 422; so must an assignee that is no active account's login.
        for label, body in invalid_bodies(spec, create_schema, {}):
            if check_invalid(c, spec, create_schema, label, body):
                c.call("createSession", 422, body=body, label=label)
        c.call("createSession", 422, body={"valid_until": "2001-01-01T00:00:00.000Z"}, label="valid_until in the past")
        for login, why in (("no-such-account", "no such account"), (self.disabled_login, "a disabled account")):
            c.call("createSession", 422, body={"assigned_supporter": login}, label=why)

        # 400: not JSON, not an object.
        for label, raw in RAW_BODIES:
            c.call("createSession", 400, raw=raw, label=label)
            c.call("updateSession", 400, {"code": code}, raw=raw, label=label)

        # listSessions: paging, order, bad parameters.
        whole = c.call("listSessions", 200, query="?limit=500").json or {}
        total = whole.get("total", 0)
        sessions = whole.get("sessions", [])
        if total != len(sessions) or total < len(valid_bodies):
            c.fail("listSessions", "total %r, %d sessions listed, at least %d created"
                   % (total, len(sessions), len(valid_bodies)))
        stamps = [(s.get("created_at"), s.get("code")) for s in sessions]
        if stamps != sorted(stamps):
            c.fail("listSessions", "not oldest first")
        default = c.call("listSessions", 200).json or {}
        if default.get("offset") != 0 or default.get("limit") != 50 or default.get("sessions") != sessions[:50]:
            c.fail("listSessions", "defaults are not offset 0, limit 50, the first 50")
        for offset, limit in ((0, 1), (1, 2), (2, 3), (total - 1, 5), (total, 5), (total + 10, 1)):
            page = c.call("listSessions", 200, query="?offset=%d&limit=%d" % (offset, limit)).json or {}
            if page.get("sessions") != sessions[offset:offset + limit] or page.get("total") != total \
                    or page.get("offset") != offset or page.get("limit") != limit:
                c.fail("listSessions ?offset=%d&limit=%d" % (offset, limit),
                       "wrong page: %s" % shorten(json.dumps(page)))
        for query in ("?limit=0", "?limit=501", "?limit=abc", "?limit=-1", "?limit=", "?limit=1.5", "?offset=-1",
                      "?offset=abc", "?offset=99999999999999999999999"):
            c.call("listSessions", 400, query=query, label="bad parameter")

        # getSession: 404.
        if self.missing_code in {s.get("code") for s in sessions}:
            self.missing_code = "999-999-998"
        c.call("getSession", 404, {"code": self.missing_code})
        c.call("getSession", 404, {"code": "not-a-code"})

        # updateSession: each member alone (and null), absent members stay.
        target = c.call("createSession", 201, body={"description": "update me", "customer_name": "Ann"}).json or {}
        target_code = target.get("code")
        before = target
        update_properties = {k: v for k, v in create_schema_properties(spec, update_schema).items() if k != "state"}
        for name, schema in update_properties.items():
            for value in valid_values(name, schema):
                body = {name: value}
                response = c.call("updateSession", 200, {"code": target_code}, body=body, label="valid body")
                if response.status == 200:
                    session_matches(c, "updateSession body=" + shorten(json.dumps(body)), response.json or {}, body,
                                    before, schema=spec.json_schema(update_schema))
                    before = response.json
        everything = {name: valid_values(name, schema)[0] for name, schema in update_properties.items()}
        response = c.call("updateSession", 200, {"code": target_code}, body=everything, label="all members")
        session_matches(c, "updateSession all members", response.json or {}, everything, before,
                        schema=spec.json_schema(update_schema))
        before = response.json or before
        # Invalid update bodies: 422, and nothing changes.
        for label, body in invalid_bodies(spec, update_schema, {}):
            if check_invalid(c, spec, update_schema, label, body):
                c.call("updateSession", 422, {"code": target_code}, body=body, label=label)
        c.call("updateSession", 422, {"code": target_code}, body={"valid_until": "2001-01-01T00:00:00Z"},
               label="valid_until in the past")
        for login, why in (("no-such-account", "no such account"), (self.disabled_login, "a disabled account")):
            c.call("updateSession", 422, {"code": target_code}, body={"assigned_supporter": login}, label=why)
        after = c.call("getSession", 200, {"code": target_code}).json
        if after != before:
            c.fail("updateSession", "refused changes altered the code: %s -> %s" % (before, after))
        c.call("updateSession", 404, {"code": self.missing_code}, body={"description": "x"})

        # state: open on an open code changes nothing; closed closes; open on a closed code is 409; closed again is 200.
        if "state" in (update_schema.get("properties") or {}):
            unchanged = c.call("updateSession", 200, {"code": target_code}, body={"state": "open"}).json
            if unchanged != before:
                c.fail("updateSession state open", "an open code changed: %s" % unchanged)
            closed = c.call("updateSession", 200, {"code": target_code}, body={"state": "closed"}).json or {}
            if closed.get("state") != "closed" or closed.get("live_state") != "closed" \
                    or closed.get("closed_at") is None:
                c.fail("updateSession state closed", "not closed: %s" % closed)
            c.call("updateSession", 409, {"code": target_code}, body={"state": "open"}, label="reopen")
            c.call("updateSession", 409, {"code": target_code}, body={"state": "open", "description": "no"},
                   label="reopen with a change")
            again = c.call("updateSession", 200, {"code": target_code}, body={"state": "closed"}).json or {}
            if again.get("closed_at") != closed.get("closed_at") or again.get("description") == "no":
                c.fail("updateSession", "closing twice or a refused reopen changed the code: %s" % again)

        # deleteSession: 204, then 404; 409 with a device on the code.
        c.call("deleteSession", 204, {"code": target_code})
        c.call("getSession", 404, {"code": target_code}, label="after delete")
        c.call("deleteSession", 404, {"code": target_code}, label="twice")
        if self.args.online_code:
            online = c.call("getSession", 200, {"code": self.args.online_code}, label="device online").json or {}
            if online.get("online") is not True or online.get("live_state") != "online" \
                    or not online.get("device_name"):
                c.fail("getSession online code", "not shown online: %s" % online)
            c.call("deleteSession", 409, {"code": self.args.online_code}, label="device online")
            if c.call("getSession", 200, {"code": self.args.online_code}).status != 200:
                c.fail("deleteSession", "a refused delete removed the code")
        else:
            self.excuse("deleteSession", 409, "no --online-code: no code has a device on it")

        # 413.
        c.call("createSession", 413, raw=BIG_BODY, label="body over 64 KiB")
        c.call("updateSession", 413, {"code": code}, raw=BIG_BODY, label="body over 64 KiB")
        exact = b'{"description": "' + b"x" * (64 * 1024 - 19) + b'"}'  # exactly 64 KiB: read, then refused
        assert len(exact) == 64 * 1024
        c.call("createSession", 422, raw=exact, label="64 KiB body, too long description")

    # MARK: who sees which code

    def all_codes(self, session=None):
        """Every code the caller sees, through the pages."""
        out, offset = [], 0
        while True:
            page = self.checker.call("listSessions", 200, query="?offset=%d&limit=500" % offset, session=session,
                                     label="all pages").json or {}
            out += page.get("sessions") or []
            offset += 500
            if offset >= (page.get("total") or 0) or not page.get("sessions"):
                return out, page.get("total")

    def phase_visibility(self):
        c = self.checker
        s = self.supporter
        unassigned = c.call("createSession", 201, body={"description": "anyone's"}, session=s).json or {}
        if unassigned.get("assigned_supporter") is not None:
            c.fail("createSession as supporter", "assigned without being asked: %s" % unassigned)
        mine = c.call("createSession", 201, body={"description": "mine", "assigned_supporter": s.login},
                      session=s).json or {}
        if mine.get("assigned_supporter") != s.login:
            c.fail("createSession as supporter", "not assigned to %s: %s" % (s.login, mine))
        someone = self.other.login if self.other else self.args.admin_login
        c.call("createSession", 403, body={"assigned_supporter": someone}, session=s, label="assigned to another")
        c.call("createSession", 422, body={"assigned_supporter": "no-such-account"}, session=s, label="no such account")
        theirs = c.call("createSession", 201, body={"description": "theirs", "assigned_supporter": someone}).json or {}
        self.mine, self.theirs, self.unassigned = mine.get("code"), theirs.get("code"), unassigned.get("code")
        t = {"code": self.theirs}
        c.call("getSession", 403, t, session=s, label="another supporter's code")
        c.call("updateSession", 403, t, body={"description": "x"}, session=s, label="another supporter's code")
        c.call("updateSession", 403, t, body={"assigned_supporter": s.login}, session=s,
               label="taking another supporter's code")
        c.call("deleteSession", 403, t, session=s, label="another supporter's code")
        c.call("connectSession", 403, t, body={}, session=s, label="another supporter's code")
        c.call("cancelRequest", 403, t, session=s, label="another supporter's code")
        c.call("endSession", 403, t, session=s, label="another supporter's code")
        c.call("askFeature", 403, t, body={"feature": "chat"}, session=s, label="another supporter's code")
        c.call("withdrawFeatureAsk", 403, t, body={"feature": "chat"}, session=s, label="another supporter's code")
        c.call("listAudit", 403, query="?code=" + self.theirs, session=s, label="another supporter's code")
        for operation_id in ("getSessionReport", "listSessionMessages", "listSessionFiles"):
            c.call(operation_id, 403, t, session=s, label="another supporter's code")
        c.call("downloadSessionFile", 403, {"code": self.theirs, "file": "1"}, session=s,
               label="another supporter's code")
        c.call("uploadSessionFile", 403, t, raw=b"hello", query="?name=a.txt", session=s,
               headers={"Content-Type": "text/plain"}, label="another supporter's code")
        if c.call("getSession", 200, t).json != theirs:
            c.fail("getSession", "refused changes altered another supporter's code")
        # The list: own and unassigned codes only; total counts them.
        everything, _ = self.all_codes()
        visible, total = self.all_codes(session=s)
        expected = [x.get("code") for x in everything if x.get("assigned_supporter") in (None, s.login)]
        if [x.get("code") for x in visible] != expected or total != len(expected):
            c.fail("listSessions as supporter", "lists %d codes (total %r), not the %d own and unassigned ones"
                   % (len(visible), total, len(expected)))
        if self.admin_account.secret:
            seen, _ = self.all_codes(session=self.admin_account)
            if [x.get("code") for x in seen] != [x.get("code") for x in everything]:
                c.fail("listSessions as admin account", "does not list every code")
            c.call("getSession", 200, {"code": self.mine}, session=self.admin_account, label="admin account")
        if self.other and self.other.secret:
            c.call("getSession", 403, {"code": self.mine}, session=self.other, label="another supporter's code")
            c.call("getSession", 200, {"code": self.theirs}, session=self.other, label="own code")
        # Assignment by a supporter: to themselves, or nobody; never to someone else.
        m = {"code": self.mine}
        c.call("updateSession", 403, m, body={"assigned_supporter": someone}, session=s, label="assign to another")
        c.call("updateSession", 422, m, body={"assigned_supporter": self.disabled_login}, session=s,
               label="a disabled account")
        if (c.call("updateSession", 200, m, body={"assigned_supporter": None}, session=s).json or {}) \
                .get("assigned_supporter") is not None:
            c.fail("updateSession", "null did not unassign")
        c.call("updateSession", 200, m, body={"assigned_supporter": s.login}, session=s)
        c.call("getSession", 200, m, session=s)

    # MARK: connect, cancel, end

    def wait_for(self, code, session, accept, seconds=20):
        deadline = time.monotonic() + seconds
        state = {}
        while time.monotonic() < deadline:
            state = self.checker.call("getSession", 200, {"code": code}, session=session, label="waiting").json or {}
            if accept(state):
                return state
            time.sleep(0.2)
        return state

    def phase_actions(self):
        c = self.checker
        s = self.supporter
        spec = self.spec
        idle = c.call("createSession", 201, body={"description": "no device"}).json or {}
        n = {"code": idle.get("code")}
        # Without a device: 409 once the body is read; the admin token has no account to send as (403).
        c.call("connectSession", 409, n, body={}, session=s, label="no device")
        c.call("cancelRequest", 409, n, session=s, label="no device")
        c.call("endSession", 409, n, session=s, label="no device")
        c.call("cancelRequest", 409, n, label="admin token, no device")
        c.call("endSession", 409, n, label="admin token, no device")
        c.call("connectSession", 403, n, body={}, label="admin token")
        for operation_id in ("connectSession", "cancelRequest", "endSession"):
            body = {} if operation_id == "connectSession" else None
            c.call(operation_id, 404, {"code": self.missing_code}, body=body, session=s)
            c.call(operation_id, 404, {"code": self.missing_code}, body=body)
        c.call("connectSession", 404, {"code": self.missing_code}, raw=b"[]", session=s, label="code first, body later")
        schema = spec.request_schema("connectSession")
        properties = create_schema_properties(spec, schema)
        for name, sub in properties.items():
            for value in valid_values(name, sub):
                c.call("connectSession", 409, n, body={name: value}, session=s, label="valid body, no device")
        c.call("connectSession", 409, n, body={name: valid_values(name, sub)[0] for name, sub in properties.items()},
               session=s, label="all members, no device")
        for label, body in invalid_bodies(spec, schema, {}):
            if check_invalid(c, spec, schema, label, body):
                c.call("connectSession", 422, n, body=body, session=s, label=label)
        for label, raw in RAW_BODIES:
            c.call("connectSession", 400, n, raw=raw, session=s, label=label)
        c.call("connectSession", 413, n, raw=BIG_BODY, session=s, label="body over 64 KiB")
        if (c.call("getSession", 200, n).json or {}).get("assigned_supporter") is not None:
            c.fail("connectSession", "a refused connection request assigned the code")
        # Acting in a session (issue 24): without a device 409 once the body is valid, 422 for a body the schema
        # refuses, 404 for no such code; the admin token may act too.
        bases = {"askFeature": {"feature": "chat"}, "withdrawFeatureAsk": {"feature": "chat"},
                 "sendChat": {"text": "hello"},
                 "sendApplicationMessage": {"content_type": "application/json", "body": "e30="}}
        for operation_id, base in bases.items():
            schema = spec.request_schema(operation_id)
            properties = create_schema_properties(spec, schema)
            for name, sub in properties.items():
                for value in valid_values(name, sub):
                    body = dict(base)
                    body[name] = value
                    c.call(operation_id, 409, n, body=body, session=s, label="valid body, no device")
            c.call(operation_id, 409, n, body=base, label="admin token, no device")
            c.call(operation_id, 404, {"code": self.missing_code}, body=base, session=s)
            for label, body in invalid_bodies(spec, schema, base):
                if check_invalid(c, spec, schema, label, body):
                    # A body over the server's 64 KiB is refused before it is read (413), whatever it holds.
                    status = 413 if len(json.dumps(body).encode()) > 65536 else 422
                    c.call(operation_id, status, n, body=body, session=s, label=label)
            for label, raw in RAW_BODIES:
                c.call(operation_id, 400, n, raw=raw, session=s, label=label)
            c.call(operation_id, 413, n, raw=BIG_BODY, session=s, label="body over 64 KiB")
            if operation_id == "withdrawFeatureAsk":
                self.excuse(operation_id, 202, "needs a session with an ask its device's user leaves unanswered (the "
                            "--online-code device answers asks at once, the --pending-code device never starts a "
                            "session): Protocol11Tests and AskWithdrawalTests withdraw one, the console's end-to-end "
                            "session-panel scenario through this route, RouterEndpointTests checks the bodies")
            else:
                self.excuse(operation_id, 202, "needs a session with the feature granted by the device's user: "
                            "SupporterNodeClusterTests asks and chats across nodes, RouterEndpointTests checks the "
                            "bodies")
        self.excuse("withdrawFeatureAsk", 503, "needs another node of a cluster, holding the device, that does not "
                    "take the command in time")

        report = c.call("getSessionReport", 200, n, session=s, label="no sessions").json or {}
        if report.get("sessions") != [] or report.get("code") != n["code"]:
            c.fail("getSessionReport", "a code without requests reports %s" % report)
        c.call("getSessionReport", 404, {"code": self.missing_code}, session=s)
        day = "from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z"
        csv_text = c.call("listSessionReports", 200, query="?" + day).body or b""
        if not csv_text.startswith(b"code,device,request_id,"):
            c.fail("listSessionReports", "no CSV header: %r" % csv_text[:80])
        c.call("listSessionReports", 400, query="?from=2000-01-01T00:00:00Z", label="no to")
        c.call("listSessionReports", 403, query="?" + day, session=s, label="a supporter")
        # A session's messages and files (issue 24): a code that never had a session lists none.
        page = c.call("listSessionMessages", 200, n, session=s, label="no messages").json or {}
        if page.get("events") != [] or page.get("next_after_id") is not None:
            c.fail("listSessionMessages", "a code without messages lists %s" % page)
        c.call("listSessionMessages", 200, n, query="?after_id=0&limit=500", session=s, label="every parameter")
        c.call("listSessionMessages", 400, n, query="?limit=0", session=s, label="limit 0")
        c.call("listSessionMessages", 400, n, query="?limit=501", session=s, label="limit 501")
        c.call("listSessionMessages", 400, n, query="?after_id=-1", session=s, label="after_id negative")
        c.call("listSessionMessages", 404, {"code": self.missing_code}, session=s)
        files = c.call("listSessionFiles", 200, n, session=s, label="no files").json or {}
        if files.get("files") != []:
            c.fail("listSessionFiles", "a code without sessions lists files: %s" % files)
        c.call("listSessionFiles", 404, {"code": self.missing_code}, session=s)
        c.call("downloadSessionFile", 404, {"code": n["code"], "file": "1"}, session=s, label="no such file")
        c.call("downloadSessionFile", 404, {"code": n["code"], "file": "x"}, session=s, label="an id that is no number")
        c.call("downloadSessionFile", 404, {"code": self.missing_code, "file": "1"}, session=s)
        self.excuse("downloadSessionFile", 200, "needs a file a device sent: RouterEndpointTests downloads one and "
                    "checks its headers, SupporterNodeClusterTests reads one on another node of a cluster")
        self.excuse("downloadSessionFile", 410, "needs a file past its retention: RouterEndpointTests")
        for operation_id in ("sendChat", "sendApplicationMessage"):
            self.excuse(operation_id, 503, "needs 16 messages a device has not acknowledged")
        # A file to the device: raw bytes, its name in the query, its type in Content-Type.
        up = "?name=report%20%3Cv2%3E.txt"
        octets = {"Content-Type": "text/plain"}
        c.call("uploadSessionFile", 409, n, raw=b"hello", query=up, headers=octets, session=s, label="no device")
        c.call("uploadSessionFile", 409, n, raw=b"x" * 100_000, query=up, headers=octets, session=s,
               label="over the API's 64 KiB, under 16 MiB: read, then no device")
        c.call("uploadSessionFile", 409, n, raw=b"hello", query=up, headers=octets, label="admin token, no device")
        c.call("uploadSessionFile", 422, n, raw=b"hello", headers=octets, session=s, label="no name")
        c.call("uploadSessionFile", 422, n, raw=b"hello", query="?name=a%0Ab", headers=octets, session=s,
               label="a line break in the name")
        c.call("uploadSessionFile", 422, n, raw=b"hello", query="?name=" + "x" * 256, headers=octets, session=s,
               label="a name of 256 bytes")
        c.call("uploadSessionFile", 422, n, raw=b"", query=up, headers=octets, session=s, label="an empty file")
        c.call("uploadSessionFile", 404, {"code": self.missing_code}, raw=b"hello", query=up, headers=octets, session=s)
        self.excuse("uploadSessionFile", 202, "needs a session with file_share granted: Protocol11Tests and "
                    "SupporterNodeClusterTests send files to a device, RouterEndpointTests checks the answers")
        self.excuse("uploadSessionFile", 413, "a body over 16 MiB: answered before it is read and the connection "
                    "closed, which an http.client upload sees as a broken pipe; HTTPRequestParserTests prove the limit")
        self.excuse("uploadSessionFile", 503, "needs 4 uploads arriving at once (HTTPServerTests) or 4 files being "
                    "sent on one session")
        if self.args.online_code:
            o = {"code": self.args.online_code}
            c.call("connectSession", 403, o, body={}, label="admin token")
            c.call("withdrawFeatureAsk", 409, o, body={"feature": "chat"}, session=s,
                   label="a device online, no session")
            sent = c.call("connectSession", 202, o,
                          body={"connection_type": "screen_share", "features": ["voip", "chat"]}, session=s).json or {}
            if sent.get("live_state") not in ("request_pending", "active") or sent.get("online") is not True \
                    or sent.get("assigned_supporter") != s.login:
                c.fail("connectSession", "after 202 the code is %s" % sent)
            if self.other and self.other.secret:
                c.call("connectSession", 403, o, body={}, session=self.other, label="now another supporter's code")
            active = self.wait_for(self.args.online_code, s, lambda x: x.get("live_state") == "active")
            if active.get("live_state") != "active":
                c.fail("connectSession", "the device (--auto-accept) did not start the session: %s" % active)
            c.call("connectSession", 409, o, body={}, session=s, label="session active")
            c.call("cancelRequest", 409, o, session=s, label="no request pending")
            # Nothing is asked for file_share (chat was granted with the connection): nothing to withdraw.
            refused = c.call("withdrawFeatureAsk", 409, o, body={"feature": "file_share"}, session=s,
                             label="session active, nothing asked").json or {}
            if "no pending ask" not in str((refused.get("error") or {}).get("message")):
                c.fail("withdrawFeatureAsk", "the refusal does not say nothing is asked: %s" % refused)
            c.call("endSession", 202, o, session=s)
            gone = self.wait_for(self.args.online_code, s, lambda x: x.get("live_state") != "active")
            if gone.get("live_state") == "active":
                c.fail("endSession", "the session is still active: %s" % gone)
            if gone.get("online") is False:
                c.call("endSession", 409, o, session=s, label="the device left")
            trail = (c.call("listAudit", 200, query="?code=%s&limit=100" % self.args.online_code, session=s).json
                     or {}).get("events") or []
            kinds = {row.get("kind") for row in trail}
            for kind in ("request_sent", "request_allowed", "session_started", "session_ended"):
                if kind not in kinds:
                    c.fail("listAudit", "no %s row for the online code: %s" % (kind, sorted(kinds)))
            report = c.call("getSessionReport", 200, o, session=s, label="after a session").json or {}
            ran = [x for x in report.get("sessions") or [] if x.get("outcome") == "allowed"]
            if not ran or not ran[-1].get("started_at") or not ran[-1].get("ended_at") \
                    or ran[-1].get("account") != s.login or ran[-1].get("active_ms") is None:
                c.fail("getSessionReport", "the session that ran is not reported: %s" % report)
            sent_row = next((row for row in trail if row.get("kind") == "request_sent"), {})
            actor = sent_row.get("actor") or {}
            if actor.get("account") != s.login or not actor.get("login_session") or actor.get("kind") != "rest":
                c.fail("listAudit", "request_sent does not name the account: %s" % sent_row)
        else:
            reason = "no --online-code: no device to answer"
            self.excuse("connectSession", 202, reason)
            self.excuse("endSession", 202, reason)

        if self.args.pending_code:
            p = {"code": self.args.pending_code}
            sent = c.call("connectSession", 202, p, body={}, session=s, label="device asks its user").json or {}
            if sent.get("live_state") != "request_pending":
                c.fail("connectSession", "a request the device has not answered is %s" % sent.get("live_state"))
            c.call("connectSession", 409, p, body={}, session=s, label="request pending")
            back = c.call("cancelRequest", 202, p, session=s).json or {}
            if back.get("live_state") != "online":
                c.fail("cancelRequest", "after 202 the code is %s" % back.get("live_state"))
            c.call("cancelRequest", 409, p, session=s, label="twice")
        else:
            self.excuse("cancelRequest", 202, "no --pending-code: no device leaves a request pending "
                        "(an --auto-accept device answers at once)")

    # MARK: the audit trail

    def audit_pages(self, query, start=None, session=None, limit=1000):
        """Every row of `query` older than `start` through the pages (next_before_id), checking each page."""
        c = self.checker
        rows, cursor, pages = [], start, 0
        while True:
            extra = "" if cursor is None else "&before_id=%d" % cursor
            page = c.call("listAudit", 200, query="?limit=%d%s%s" % (limit, query, extra), session=session,
                          label="paging").json or {}
            events = page.get("events") or []
            pages += 1
            ids = [row.get("id") for row in events]
            if ids != sorted(ids, reverse=True) or len(set(ids)) != len(ids):
                c.fail("listAudit %s" % query, "a page is not newest first: %s" % ids)
            if len(events) == limit and page.get("next_before_id") != ids[-1]:
                c.fail("listAudit %s" % query, "a full page's next_before_id is %r, not %r"
                       % (page.get("next_before_id"), ids[-1]))
            rows += events
            cursor = page.get("next_before_id")
            if cursor is None or pages > 5000:
                return rows

    def phase_audit(self):
        c = self.checker
        s = self.supporter
        first = c.call("listAudit", 200).json or {}
        events = first.get("events") or []
        if len(events) > 100 or (len(events) == 100) != (first.get("next_before_id") is not None):
            c.fail("listAudit", "default page: %d rows, next_before_id %r" % (len(events), first.get("next_before_id")))
        start = (events[0].get("id") if events else 0) + 1
        trail = self.audit_pages("", start)
        ids = [row.get("id") for row in trail]
        if ids != sorted(ids, reverse=True) or len(ids) != len(set(ids)):
            c.fail("listAudit", "the whole trail is not newest first without repeats")
        if events and ids[:len(events)] != [row.get("id") for row in events]:
            c.fail("listAudit", "the default page is not the newest 100 rows")
        stitched = []
        cursor = start
        while cursor is not None and len(stitched) < 60:
            page = c.call("listAudit", 200, query="?limit=7&before_id=%d" % cursor).json or {}
            stitched += page.get("events") or []
            cursor = page.get("next_before_id")
        if [row.get("id") for row in stitched] != ids[:len(stitched)]:
            c.fail("listAudit", "pages of 7 joined by next_before_id differ from the trail")
        by_code = self.audit_pages("&code=" + self.mine, start)
        if by_code != [row for row in trail if row.get("code") == self.mine]:
            c.fail("listAudit code=", "not the code's rows of the trail")
        for kind, limit in (("code_created", 1000), ("account_created", 1), ("no_such_kind", 5)):
            got = self.audit_pages("&kind=" + kind, start, limit=limit)
            want = [row for row in trail if row.get("kind") == kind]
            if got != want:
                c.fail("listAudit kind=%s limit=%d" % (kind, limit), "%d rows through the pages, the trail has %d"
                       % (len(got), len(want)))
        # Who acted, in the rows a supporter made.
        created = next((row for row in by_code if row.get("kind") == "code_created"), {})
        actor = created.get("actor") or {}
        expected = {"kind": "rest", "account": s.login, "display_name": (s.account or {}).get("display_name"),
                    "token": None}
        if {key: actor.get(key) for key in expected} != expected or not actor.get("login_session") \
                or not actor.get("address"):
            c.fail("listAudit", "code_created by %s names %s" % (s.login, actor))
        # A supporter: one visible code at a time.
        c.call("listAudit", 403, session=s, label="supporter without code=")
        c.call("listAudit", 200, query="?code=" + self.mine, session=s)
        c.call("listAudit", 200, query="?code=" + self.unassigned, session=s, label="unassigned code")
        c.call("listAudit", 404, query="?code=" + self.missing_code, session=s)
        c.call("listAudit", 404, query="?code=" + self.missing_code)
        if self.admin_account.secret:
            c.call("listAudit", 200, query="?limit=5", session=self.admin_account, label="admin account")
        for query in ("?limit=0", "?limit=1001", "?limit=abc", "?limit=-1", "?limit=", "?before_id=abc",
                      "?before_id=-1", "?before_id=1.5", "?limit=99999999999999999999999"):
            c.call("listAudit", 400, query=query, label="bad parameter")
        self.trail_top = ids[0] if ids else 0

    # MARK: the event stream

    def phase_events(self):
        c = self.checker
        s = self.supporter
        op = "streamEvents"
        # A stream whose sign-in ends must end too (checked at the end of this phase).
        leaving = SignedIn(s.login, s.password)
        self.sign_in(leaving)
        ending = c.open_stream(op, 200, session=leaving, label="sign-in about to end")
        c.call("signOut", 204, session=leaving)
        ended_at = time.monotonic()

        stream = c.open_stream(op, 200, session=s)
        if stream.status == 200:
            try:
                preamble = stream.next_block(10)
            except socket.timeout:
                preamble = None
            if preamble != ["retry: 1000", ": connected"]:
                c.fail(stream.what, "the stream does not open with 'retry: 1000' and ': connected': %r" % preamble)
        hidden = c.call("createSession", 201, body={"description": "hidden", "assigned_supporter":
                                                     self.other.login if self.other else self.args.admin_login}).json
        shown = c.call("createSession", 201, body={"description": "shown"}).json or {}
        hidden = (hidden or {}).get("code")
        seen = []
        if stream.status == 200:
            deadline = time.monotonic() + 15
            try:
                while time.monotonic() < deadline:
                    event = stream.next_event(deadline - time.monotonic())
                    if event is None:
                        c.fail(stream.what, "the stream ended")
                        break
                    data = c.check_event(op, stream, event) or {}
                    seen.append(data)
                    if data.get("code") == shown.get("code") and data.get("kind") == "code_created":
                        session = data.get("session") or {}
                        if session.get("code") != shown.get("code") or session.get("description") != "shown":
                            c.fail(stream.what, "the event's session is not the code: %s" % session)
                        break
                else:
                    c.fail(stream.what, "no code_created event of %s within 15 s" % shown.get("code"))
            except socket.timeout:
                c.fail(stream.what, "no code_created event of %s within 15 s; got %s"
                       % (shown.get("code"), stream.transcript[-10:]))
            if any(data.get("code") == hidden for data in seen):
                c.fail(stream.what, "a supporter was sent another supporter's code %s" % hidden)
        # Resuming: after Last-Event-ID (header or query) every row after it the caller may see, in order.
        rows = (c.call("listAudit", 200, query="?limit=6").json or {}).get("events") or []
        ids = [row.get("id") for row in rows]
        if len(ids) == 6:
            for label, query, headers in (("Last-Event-ID", "", {"Last-Event-ID": str(ids[5])}),
                                          ("last_event_id", "?last_event_id=%d" % ids[5], None)):
                resumed = c.open_stream(op, 200, query=query, headers=headers, label=label)
                got = []
                try:
                    while len(got) < 5:
                        event = resumed.next_event(10)
                        if event is None:
                            break
                        data = c.check_event(op, resumed, event) or {}
                        got.append(data.get("id"))
                except socket.timeout:
                    pass
                resumed.close()
                if got[:5] != list(reversed(ids[:5])):
                    c.fail(resumed.what, "resumed after %d with ids %s, not %s"
                           % (ids[5], got, list(reversed(ids[:5]))))
        created_rows = (c.call("listAudit", 200, query="?kind=code_created&limit=5").json or {}).get("events") or []
        hidden_row = next((row for row in created_rows if row.get("code") == hidden), None)
        if hidden_row:
            resumed = c.open_stream(op, 200, session=s, headers={"Last-Event-ID": str(hidden_row["id"] - 1)},
                                    label="supporter resuming before another supporter's row")
            got = []
            try:
                while True:
                    event = resumed.next_event(10)
                    if event is None:
                        break
                    data = c.check_event(op, resumed, event) or {}
                    got.append(data)
                    if data.get("code") == shown.get("code") and data.get("kind") == "code_created":
                        break
            except socket.timeout:
                c.fail(resumed.what, "the shown code's row did not come again")
            resumed.close()
            if any(data.get("code") == hidden for data in got):
                c.fail(resumed.what, "the catch-up sent another supporter's row")
        for label, query, headers in (("Last-Event-ID not a number", "", {"Last-Event-ID": "abc"}),
                                      ("Last-Event-ID negative", "", {"Last-Event-ID": "-1"}),
                                      ("last_event_id not a number", "?last_event_id=x", None)):
            c.open_stream(op, 400, query=query, headers=headers, label=label)
        self.excuse(op, 503, "the 257th stream needs more connections than the 32 one address may open")
        # Keep-alive comments, and the stream of the ended sign-in closing (both within 15 s).
        if ending.status == 200:
            try:
                while ending.readline(max(0.1, ended_at + 20 - time.monotonic())) is not None:
                    pass
            except socket.timeout:
                c.fail(ending.what, "still open 20 s after its sign-in ended")
            ending.close()
        if stream.status == 200:
            deadline = time.monotonic() + 17
            keepalive = False
            try:
                while time.monotonic() < deadline and not keepalive:
                    block = stream.next_block(deadline - time.monotonic())
                    if block is None:
                        break
                    keepalive = ": keepalive" in block
            except socket.timeout:
                pass
            if not keepalive:
                c.fail(stream.what, "no ': keepalive' within 17 s")
            stream.close()

    # MARK: the web console

    def phase_console(self):
        c = self.checker
        page = c.call("getConsole", 200, token=None)
        same = c.call("getConsoleFile", 200, {"file": "index.html"}, token=None)
        if page.body != same.body:
            c.fail("getConsoleFile index.html", "differs from /")
        if page.header("Cache-Control") == "no-store":
            c.fail("getConsole", "the page is Cache-Control: no-store")
        html = page.body.decode("utf-8", "replace")
        types = {".js": "text/javascript", ".css": "text/css", ".html": "text/html", ".png": "image/png",
                 ".svg": "image/svg+xml"}
        for name in sorted(set(re.findall(r'(?:src|href)="/([^"/?#]+)"', html))):
            response = c.call("getConsoleFile", 200, {"file": name}, token=None, label="named by the page")
            media = (response.header("Content-Type") or "").split(";")[0].strip()
            if media != types.get(os.path.splitext(name)[1]):
                c.fail("getConsoleFile " + name, "Content-Type %r" % media)
        c.call("getConsoleFile", 404, {"file": "no-such-file.js"}, token=None)
        c.call("getConsoleFile", 404, {"file": "console.js"}, query="/extra", token=None, label="more segments")
        for path in ("/a/b", "/../etc/passwd", "/..%2f..%2fetc%2fpasswd", "/api", "/api/v1"):
            c.plain("GET", path, 404, token=None, prefix="")
        self.excuse("getConsole", 404, "only a node built without the console's files answers / with 404")

    # MARK: health probes

    def phase_health(self):
        c = self.checker
        live = c.call("getLiveness", 200, token=None)
        if live.body != b"ok\n":
            c.fail("getLiveness", "body %r, not 'ok'" % live.body)
        ready = c.call("getReadiness", 200, token=None)
        if ready.body != b"ready\n":
            c.fail("getReadiness", "body %r, not 'ready'" % ready.body)
        metrics = c.call("getMetrics", 200, token=None, label="from loopback")
        for family in (b"# TYPE rsup_devices_online gauge", b"# TYPE rsup_http_requests_total counter",
                       b"# TYPE rsup_store_commit_seconds histogram", b"# TYPE process_open_fds gauge"):
            if family not in metrics.body:
                c.fail("getMetrics", "no %r in the exposition" % family)
        if not (metrics.header("Content-Type") or "").startswith("text/plain; version=0.0.4"):
            c.fail("getMetrics", "Content-Type %r" % metrics.header("Content-Type"))
        c.call("getMetrics", 200, token="admin", label="with an admin API token")
        c.call("getMetrics", 401, token="rsup_not-a-token", label="with a token that is neither")
        for path in ("/livez", "/readyz", "/metrics"):
            c.plain("POST", path, 405, token=None, prefix="")
        self.excuse("getMetrics", 403, "needs a client outside --metrics-allow (MetricsEndpointTests proves it)")
        self.excuse("getMetrics", 429, "the API's back-off for guessed tokens, proved for every bearer route by the "
                    "authentication phase and RESTAPITests")
        self.excuse("getLiveness", 503, "needs an event loop of the node stuck in a callback")
        self.excuse("getReadiness", 503, "needs the node draining or its store unreachable (HealthProbeTests proves both)")

    # MARK: signing out

    def phase_sign_out(self):
        c = self.checker
        leaving = SignedIn(self.supporter.login, self.supporter.password)
        self.sign_in(leaving)
        c.call("signOut", 401, session=SignedIn("nobody", "-", secret="not-a-session-secret"), label="unknown cookie")
        c.call("signOut", 204, session=leaving)
        c.call("getMe", 401, session=leaving, label="after sign-out")
        c.call("signOut", 401, session=leaving, label="twice")
        c.call("signOut", 204, label="admin token: nothing to end")
        c.call("getMe", 200, session=self.supporter, label="another sign-in of the account goes on")

    # MARK: outside the operations

    def phase_outside(self, code):
        c = self.checker
        for path in ("/nope", "/sessions/%s/extra" % code, "/sessions/%s/connect/x" % code, "/users/a/b", "/tokens/a/b",
                     "/me/x", "/login/x", "/webhooks/a/b", "/webhooks/a/deliveries/1",
                     "/webhooks/a/deliveries/1/redeliver/x"):
            c.plain("GET", path, 404)
        c.plain("GET", "/../v2/sessions", 404, what="GET /api/v2/sessions")
        arguments = {"code": code, "login": self.args.admin_login, "id": MISSING_TOKEN_ID, "file": "index.html",
                     "delivery": "1"}
        for template, item in self.spec.document["paths"].items():
            methods = {m.upper() for m in item if m in ("get", "put", "post", "delete", "patch")}
            base = self.spec.base_path
            if item.get("servers"):
                base = urllib.parse.urlparse(item["servers"][0]["url"]).path.rstrip("/")
                methods.add("HEAD")  # the console's files: GET and HEAD
            path = template.format(**arguments)
            for method in ("PATCH", "OPTIONS"):
                if method in methods:
                    continue  # a method of the path (PATCH /webhooks/{id})
                response = c.plain(method, path, 405, prefix=base)
                allowed = {m.strip() for m in (response.header("Allow") or "").split(",") if m.strip()}
                if allowed != methods:
                    c.fail("%s %s%s" % (method, base, path), "Allow %r; the spec has %s"
                           % (response.header("Allow"), sorted(methods)))
        connection = self.client.connection()
        try:
            one = c.call("listSessions", 200, query="?limit=1", connection=connection, label="keep-alive 1")
            c.call("getSession", 200, {"code": code}, connection=connection, label="keep-alive 2")
            c.call("getMe", 200, connection=connection, session=self.supporter, label="keep-alive 3")
            if "close" in (one.header("Connection") or "").lower():
                c.fail("keep-alive", "the first answer closes the connection")
        except (OSError, http.client.HTTPException) as error:
            c.fail("keep-alive", "a later request on one connection failed: %r" % error)
        finally:
            connection.close()

    # MARK: rate limits (last)

    def phase_rate_limits(self, code):
        c = self.checker
        targets = self.auth_targets(code)
        provoke_rate_limit(c, {op: args for op, (args, body) in targets.items()},
                           {op: body for op, (args, body) in targets.items() if body is not None},
                           self.args.free_failures)
        # A login cookie is no guessed token: still served from the blocked address.
        c.call("getMe", 200, session=self.supporter, label="cookie from an address blocked for tokens")
        # Sign-in: wrong passwords from this address until 429; then the right password is refused too.
        self.sign_in(self.resetter, label="reset the address's failed sign-ins")
        statuses = []
        for _ in range(20):
            response = c.call("signIn", {401, 429}, body={"login": self.supporter.login, "password": "wrong guess"},
                              token=None, headers={"Origin": self.client.origin}, label="guessing")
            statuses.append(response.status)
            if response.status == 429:
                break
        if 429 not in statuses:
            c.fail("signIn", "no 429 after %d wrong passwords" % len(statuses))
            return
        if statuses.index(429) < 5:
            c.fail("signIn", "429 after %d wrong passwords; 5 are free" % statuses.index(429))
        # Once the block is over, one more failure doubles it (2 s): the right password is then refused unchecked.
        time.sleep(int(response.header("Retry-After") or "1") + 0.2)
        c.call("signIn", 401, body={"login": self.supporter.login, "password": "wrong guess"}, token=None,
               headers={"Origin": self.client.origin}, label="after the block, one more failure")
        c.call("signIn", 429, body={"login": self.supporter.login, "password": self.supporter.password}, token=None,
               headers={"Origin": self.client.origin}, label="right password from a blocked address")

    # MARK: all of it

    def run(self):
        c = self.checker
        first = c.call("createSession", 201, body={"description": "check_openapi"}).json or {}
        code = first.get("code", "000-000-000")
        location = c.call("createSession", 201, body={}).header("Location")
        self.phase_sign_in()
        self.phase_authentication(code)
        self.phase_csrf()
        self.phase_users()
        self.phase_tokens()
        self.phase_webhooks()
        self.phase_sessions(code, location)
        self.phase_visibility()
        self.phase_actions()
        self.phase_audit()
        self.phase_events()
        self.phase_console()
        self.phase_health()
        self.phase_sign_out()
        self.phase_outside(code)
        # Statuses no client can provoke on demand.
        for operation_id in ("createUser", "updateUser", "createToken", "revokeToken") + WEBHOOK_OPERATIONS:
            self.excuse(operation_id, 503, "the node's worker must be saturated (too many password hashes or store "
                        "writes waiting at once)")
        self.excuse("signIn", 503, "needs more sign-ins checked at once than the node's hashing queue holds")
        self.excuse("signOut", 503, "needs the node's store to fail the sign-out's write (the fault-injecting store "
                    "test of the node proves it)")
        # Last: 429 after repeated unknown tokens on every operation, and after repeated wrong passwords.
        if self.args.no_rate_limit:
            for operation_id in self.spec.operations:
                if 429 in self.spec.responses(operation_id):
                    self.excuse(operation_id, 429, "--no-rate-limit")
        else:
            self.phase_rate_limits(code)
        return self.report()

    def report(self):
        c = self.checker
        missing = []
        for operation_id in self.spec.operations:
            for status in self.spec.responses(operation_id):
                if (operation_id, status) not in c.covered and (operation_id, status) not in self.excused:
                    missing.append("%s %d" % (operation_id, status))
        if missing:
            c.fail("coverage", "documented statuses never provoked: %s" % ", ".join(missing))
        print("check_openapi: %d requests, %d (operation, status) pairs covered, %d excused, %d failures"
              % (c.requests, len(c.covered), len(self.excused), len(c.failures)))
        for (operation_id, status), reason in sorted(self.excused.items()):
            print("excused: %s %d: %s" % (operation_id, status, reason))
        if c.failures:
            print("\nMISMATCHES between %s and the node:" % os.path.relpath(self.args.spec))
            for failure in c.failures:
                print("  - " + failure)
            return 1
        print("OK: the node matches %s" % os.path.relpath(self.args.spec))
        return 0


def provoke_rate_limit(checker, codes, bodies, free_failures):
    """Unknown tokens until 429, then every operation without a valid token while the address is blocked (429), and
    with the admin token (never refused for its address's failures)."""
    bad = "rsk_unknown-token-from-check-openapi"
    statuses = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        response = checker.client.send("GET", "/sessions", token=bad)
        checker.requests += 1
        checker.check_response("listSessions", "listSessions GET /sessions [unknown token]", response)
        statuses.append(response.status)
        if response.status == 401:
            checker.unknown_token_failures += 1
            continue
        if response.status != 429:
            checker.fail("rate limit", "an unknown token got %d" % response.status)
            return
        retry = int(response.header("Retry-After") or "0")
        if retry >= 4:
            break
        time.sleep(retry + 0.1)
    first_429 = statuses.index(429) if 429 in statuses else None
    if first_429 is None:
        checker.fail("rate limit", "no 429 after %d unknown tokens" % len(statuses))
        return
    expected_free = free_failures - (checker.unknown_token_failures - statuses.count(401))
    # Exactly `expected_free` on an idle machine; later when a slow request arrives after the first short block.
    if first_429 < expected_free:
        checker.fail("rate limit", "the first 429 came after %d unknown tokens in this phase; expected at least %d "
                     "(%d free failures per address)" % (first_429, expected_free, free_failures))
    for operation_id, path_args in codes.items():
        checker.call(operation_id, 429, path_args, body=bodies.get(operation_id), token=bad, label="blocked address")
    checker.call("listSessions", 429, token=None, label="blocked address, no token")
    checker.call("listSessions", 200, label="admin token from a blocked address")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True, help="https://HOST:PORT/api/v1")
    parser.add_argument("--ca", required=True, help="CA file that signed the node's certificate")
    parser.add_argument("--admin-token", required=True)
    parser.add_argument("--device-token", required=True)
    parser.add_argument("--admin-login", required=True, help="an active account with role admin")
    parser.add_argument("--admin-password", required=True)
    parser.add_argument("--supporter-login", required=True, help="an active account with role supporter")
    parser.add_argument("--supporter-password", required=True)
    parser.add_argument("--other-supporter-login", help="a second active supporter (optional)")
    parser.add_argument("--other-supporter-password")
    parser.add_argument("--online-code", help="an unassigned code with an --auto-accept device on it")
    parser.add_argument("--pending-code", help="an unassigned code with a device on it that does not answer requests")
    parser.add_argument("--spec", default=os.path.join(HERE, "openapi.yaml"))
    parser.add_argument("--no-rate-limit", action="store_true", help="skip the 429 phase")
    parser.add_argument("--free-failures", type=int, default=5, help="unknown tokens per address before 429")
    parser.add_argument("--verbose", action="store_true", help="print every request")
    args = parser.parse_args()
    if bool(args.other_supporter_login) != bool(args.other_supporter_password):
        parser.error("--other-supporter-login and --other-supporter-password go together")
    try:
        return Scenario(args).run()
    except (OSError, http.client.HTTPException) as error:
        print("check_openapi: the node did not answer: %r" % error, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
