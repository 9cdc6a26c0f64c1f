#!/usr/bin/env python3
"""Checks a running supporter node's REST API against protocol/openapi.yaml, in both directions.

It drives a scenario through every operation and every documented response status it can provoke, and checks that
each status is one the spec lists for that operation, that each body validates against the documented schema
(OpenAPI 3.0 converted to JSON Schema: $ref inlined, `nullable: true` -> type [t, "null"]), and that documented headers
are present. Then it generates request bodies from the request schemas: invalid ones (unknown member, wrong type,
too short, too long, outside enum or range, bad format) must be refused with 422, valid ones (each optional member
present and absent, boundary lengths and values) must be accepted and reflected in the answer.

usage: check_openapi.py --base-url https://127.0.0.1:PORT/api/v1 --ca CA.pem --admin-token T --device-token T
                        [--online-code CODE] [--no-rate-limit] [--free-failures 5] [--spec protocol/openapi.yaml]

--online-code names a code with a device on it (for 409 on DELETE); without it that status is excused. The 429 phase
runs last and leaves the checker's address blocked for a few seconds (for requests without a valid admin token; the
admin token is still served, which the phase checks too); --no-rate-limit skips it.
Python 3 standard library plus PyYAML and jsonschema. Exit 0 when everything matches, 1 with a report otherwise.
"""

import argparse
import copy
import datetime
import http.client
import json
import os
import re
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


# MARK: the spec as JSON Schema

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

        # (path template, method) -> operation; operationId -> (path template, method, operation)
        self.operations = {}
        for template, item in self.document["paths"].items():
            for method, operation in item.items():
                if method in ("get", "put", "post", "delete", "patch", "head", "options"):
                    self.operations[operation["operationId"]] = (template, method.upper(), operation)

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
        return jsonschema.Draft7Validator(self.json_schema(schema), format_checker=self.format_checker)

    def responses(self, operation_id):
        return {int(status): self.resolve(response)
                for status, response in self.operations[operation_id][2]["responses"].items()}

    def request_schema(self, operation_id):
        body = self.operations[operation_id][2]["requestBody"]
        return self.resolve(body["content"]["application/json"]["schema"])


def parse_time(text):
    if not isinstance(text, str) or not RFC3339.match(text):
        return None
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


# MARK: HTTP

class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers  # lowercased name -> value
        self.body = body
        try:
            self.json = json.loads(body) if body else None
        except ValueError:
            self.json = ValueError("not JSON: %r" % body[:200])

    def header(self, name):
        return self.headers.get(name.lower())


class Client:
    def __init__(self, base_url, ca):
        parsed = urllib.parse.urlparse(base_url)
        self.host = parsed.hostname
        self.port = parsed.port or 443
        self.prefix = parsed.path.rstrip("/")
        self.context = ssl.create_default_context(cafile=ca)

    def connection(self):
        return http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=60)

    def send(self, method, path, body=None, token=None, headers=None, raw=None, connection=None):
        """`path` is below the base URL (`/sessions`); `raw` is bytes sent as is; else `body` is sent as JSON."""
        fields = {"Accept": "application/json"}
        if token is not None:
            fields["Authorization"] = "Bearer " + token
        payload = raw
        if payload is None and body is not None:
            payload = json.dumps(body).encode("utf-8")
        if payload is not None:
            fields["Content-Type"] = "application/json"
        fields.update(headers or {})
        own = connection is None
        connection = connection or self.connection()
        try:
            connection.request(method, self.prefix + path, body=payload, headers=fields)
            answer = connection.getresponse()
            data = answer.read()
            return Response(answer.status, {k.lower(): v for k, v in answer.getheaders()}, data)
        finally:
            if own:
                connection.close()


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

    def call(self, operation_id, expected, path_args=None, body=None, raw=None, token="admin", query="",
             headers=None, connection=None, label=""):
        """Sends one request of `operation_id`, checks it against the spec and `expected`; returns the Response."""
        template, method, _ = self.spec.operations[operation_id]
        path = template.format(**(path_args or {})) + query
        token_value = {"admin": self.admin, "device": self.device}.get(token, token)
        what = "%s %s %s%s" % (operation_id, method, path, (" [" + label + "]") if label else "")
        if body is not None and raw is None:
            what += " body=" + shorten(json.dumps(body))
        response = self.client.send(method, path, body=body, token=token_value, headers=headers, raw=raw,
                                    connection=connection)
        self.requests += 1
        if self.verbose:
            print("%d %s" % (response.status, what), flush=True)
        self.check_response(operation_id, what, response)
        if response.status != expected:
            self.fail(what, "expected %d, got %d: %s" % (expected, response.status, shorten(response.body)))
        return response

    def check_response(self, operation_id, what, response):
        documented = self.spec.responses(operation_id)
        if response.status not in documented:
            self.fail(what, "status %d is not documented for %s (documented: %s)"
                      % (response.status, operation_id, sorted(documented)))
            if response.status >= 400:
                self.check_error_body(what, response)
            return
        self.covered.add((operation_id, response.status))
        self.check_against(documented[response.status], what, response)

    def check_against(self, documented, what, response):
        for name, header in (documented.get("headers") or {}).items():
            header = self.spec.resolve(header)
            value = response.header(name)
            if value is None:
                self.fail(what, "%d without the documented header %s" % (response.status, name))
            elif header.get("schema", {}).get("type") == "integer" and not re.match(r"^\d+$", value):
                self.fail(what, "%s: %r is not an integer" % (name, value))
        content = documented.get("content")
        if not content:
            if response.body:
                self.fail(what, "%d must have no body, got %s" % (response.status, shorten(response.body)))
            return
        media = (response.header("Content-Type") or "").split(";")[0].strip()
        if media not in content:
            self.fail(what, "Content-Type %r is not one of %s" % (media, list(content)))
        if isinstance(response.json, ValueError) or response.json is None:
            self.fail(what, "body is not JSON: %s" % shorten(response.body))
            return
        schema = content.get("application/json", {}).get("schema")
        if schema is not None:
            for error in self.spec.validator(schema).iter_errors(response.json):
                self.fail(what, "%d body does not match the schema at %s: %s"
                          % (response.status, "/".join(map(str, error.absolute_path)) or "(root)", error.message))
        if response.status >= 400:
            self.check_error_body(what, response)
        self.check_times(what, response.json)

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
                if key in ("created_at", "valid_until", "closed_at") and sub is not None:
                    if not isinstance(sub, str) or not NODE_TIME.match(sub):
                        self.fail(what, "%s %r is not UTC with milliseconds" % (key, sub))
                else:
                    self.check_times(what, sub)
        elif isinstance(value, list):
            for sub in value:
                self.check_times(what, sub)

    def plain(self, method, path, expected, token="admin", what=None, raw=None, headers=None):
        """A request outside the documented operations (unknown path, other method): error shape only."""
        response = self.client.send(method, path, token={"admin": self.admin}.get(token, token), raw=raw,
                                    headers=headers)
        self.requests += 1
        what = what or "%s %s" % (method, path)
        if response.status != expected:
            self.fail(what, "expected %d, got %d: %s" % (expected, response.status, shorten(response.body)))
        if response.status >= 400:
            self.check_error_body(what, response)
            schema = self.spec.document["components"]["schemas"]["Error"]
            if not isinstance(response.json, ValueError):
                for error in self.spec.validator(schema).iter_errors(response.json):
                    self.fail(what, "error body does not match Error: %s" % error.message)
        return response


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


def json_types(schema):
    kind = schema.get("type")
    if kind is None:
        return None
    return set(kind if isinstance(kind, list) else [kind])


def text_of_length(count, style):
    """`count` code points: ASCII, 2-byte, or e + combining acute (two code points, one grapheme)."""
    if style == "ascii":
        return "x" * count
    if style == "latin":
        return "\u00e9" * count
    return ("e\u0301" * (count // 2)) + ("e" if count % 2 else "")


def email_of_length(count):
    """A valid address of exactly `count` code points (count >= 5)."""
    domain_tail = ".com"
    local = "a" * min(64, max(1, count - 1 - 1 - len(domain_tail)))
    middle = count - len(local) - 1 - len(domain_tail)
    if middle < 1:
        return "a@b.c" + "o" * (count - 5)
    return local + "@" + "b" * middle + domain_tail


def valid_values(name, schema):
    """Values the member's schema allows (boundaries, every enum value, every nullable null)."""
    values = []
    kinds = json_types(schema) or set()
    if "enum" in schema:
        values += [value for value in schema["enum"]]
    elif "string" in kinds:
        low, high = schema.get("minLength", 0), schema.get("maxLength", 64)
        if schema.get("format") == "email":
            values += ["ann@example.com", email_of_length(max(low, 5)), email_of_length(high)]
        elif schema.get("format") == "date-time":
            values += [future(form="millis"), future(7200, form="plain"), future(90000, form="offset")]
        else:
            values += [text_of_length(max(low, 1), "ascii"), text_of_length(high, "ascii"),
                       text_of_length(high, "latin"), text_of_length(high, "combining"), "Grüße, 東京 👋"[:high]]
    elif "integer" in kinds:
        low, high = schema.get("minimum", 0), schema.get("maximum", 1000)
        values += [low, high, (low + high) // 2]
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
    return values


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
    if "object" in kinds and isinstance(schema.get("properties"), dict):
        # One broken member at a time, one level down (and further, recursively), then an unknown member.
        for sub_name, sub in schema["properties"].items():
            for label, value in invalid_values(sub_name, sub):
                out.append(("%s: %s" % (sub_name, label), {sub_name: value}))
        if schema.get("additionalProperties") is False:
            out.append(("unknown member", {"bogus": "allow"}))
            out.append(("member in other case", {next(iter(schema["properties"])).upper(): {}}))
    return out


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
        elif session.get(key) != value:
            checker.fail(what, "%s is %r, not %r" % (key, session.get(key), value))
    if "type" not in body and before is None and session.get("type") != "remote_support":
        checker.fail(what, "type defaults to %r, not remote_support" % session.get("type"))
    if before is not None:
        for key, value in before.items():
            if key not in body and key not in ("live_state", "online", "device_name", "state", "closed_at"):
                if session.get(key) != value:
                    checker.fail(what, "%s changed from %r to %r although absent" % (key, value, session.get(key)))


# MARK: the scenario

def run(args):
    spec = Spec(args.spec)
    client = Client(args.base_url, args.ca)
    checker = Checker(spec, client, args.admin_token, args.device_token, args.verbose)
    excused = set()
    create_schema = spec.request_schema("createSession")
    update_schema = spec.request_schema("updateSession")
    create_validator = spec.validator(create_schema)
    update_validator = spec.validator(update_schema)

    # A code to work on, and the sanity of the spec's own example shapes.
    first = checker.call("createSession", 201, body={"description": "check_openapi"}).json or {}
    code = first.get("code", "000-000-000")
    location = checker.call("createSession", 201, body={}).header("Location")

    # Authentication on every operation: no token and a wrong scheme (401, not counted), a device token (403).
    missing_code = "999-999-999"
    codes = {"listSessions": {}, "createSession": {}, "getSession": {"code": code},
             "updateSession": {"code": code}, "deleteSession": {"code": code}}
    bodies = {"createSession": {}, "updateSession": {"description": "x"}}
    for operation_id, path_args in codes.items():
        body = bodies.get(operation_id)
        checker.call(operation_id, 401, path_args, body=body, token=None, label="no token")
        checker.call(operation_id, 401, path_args, body=body, token=None, headers={"Authorization": "Basic YTpi"},
                     label="Basic scheme")
        checker.call(operation_id, 403, path_args, body=body, token="device", label="device token")
    checker.call("listSessions", 401, token="rsk_unknown-token-from-check-openapi", label="unknown token")
    checker.unknown_token_failures += 1
    checker.call("getSession", 200, {"code": code})

    # createSession: Location, the answer reflects the body, GET shows the same.
    response = checker.call("createSession", 201, body={"type": "assist_ar", "description": "loc"})
    created = response.json or {}
    if response.header("Location") != spec.base_path + "/sessions/" + str(created.get("code")):
        checker.fail("createSession", "Location %r does not name %r" % (response.header("Location"),
                                                                         created.get("code")))
    if location is None or not re.match(r"^%s/sessions/\d{3}-\d{3}-\d{3}$" % re.escape(spec.base_path), location):
        checker.fail("createSession", "Location %r is not %s/sessions/{code}" % (location, spec.base_path))
    fetched = checker.call("getSession", 200, {"code": created.get("code")}).json
    if fetched != created:
        checker.fail("getSession", "GET differs from the 201 body: %s vs %s" % (fetched, created))
    for key, expected in (("state", "open"), ("live_state", "open"), ("online", False), ("closed_at", None),
                          ("device_name", None), ("assigned_supporter", None)):
        if created.get(key) != expected:
            checker.fail("createSession", "a new code has %s %r, not %r" % (key, created.get(key), expected))

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
    valid_bodies = [body for body in valid_bodies if not list(create_validator.iter_errors(body))]
    for body in valid_bodies:
        response = checker.call("createSession", 201, body=body, label="valid body")
        if response.status == 201:
            session_matches(checker, "createSession body=" + shorten(json.dumps(body)), response.json or {}, body,
                            schema=spec.json_schema(create_schema))

    # Invalid create bodies: every one must be 422.
    for label, body in invalid_bodies(spec, create_schema, {}):
        if not list(create_validator.iter_errors(body)):
            checker.fail("checker", "generated 'invalid' create body %s is valid by the spec" % shorten(json.dumps(body)))
            continue
        checker.call("createSession", 422, body=body, label=label)
    checker.call("createSession", 422, body={"valid_until": "2001-01-01T00:00:00.000Z"}, label="valid_until in the past")

    # 400: not JSON, not an object.
    for label, raw in (("empty body", b""), ("not JSON", b"{"), ("array", b"[]"), ("string", b'"x"'),
                       ("number", b"1"), ("null", b"null"), ("not UTF-8", b"\xff\xfe")):
        checker.call("createSession", 400, raw=raw, label=label)
        checker.call("updateSession", 400, {"code": code}, raw=raw, label=label)

    # listSessions: paging, order, bad parameters.
    whole = checker.call("listSessions", 200, query="?limit=500").json or {}
    total = whole.get("total", 0)
    sessions = whole.get("sessions", [])
    if total != len(sessions) or total < len(valid_bodies):
        checker.fail("listSessions", "total %r, %d sessions listed, at least %d created"
                     % (total, len(sessions), len(valid_bodies)))
    stamps = [(s.get("created_at"), s.get("code")) for s in sessions]
    if stamps != sorted(stamps):
        checker.fail("listSessions", "not oldest first")
    default = checker.call("listSessions", 200).json or {}
    if default.get("offset") != 0 or default.get("limit") != 50 or default.get("sessions") != sessions[:50]:
        checker.fail("listSessions", "defaults are not offset 0, limit 50, the first 50")
    for offset, limit in ((0, 1), (1, 2), (2, 3), (total - 1, 5), (total, 5), (total + 10, 1)):
        page = checker.call("listSessions", 200, query="?offset=%d&limit=%d" % (offset, limit)).json or {}
        if page.get("sessions") != sessions[offset:offset + limit] or page.get("total") != total \
                or page.get("offset") != offset or page.get("limit") != limit:
            checker.fail("listSessions ?offset=%d&limit=%d" % (offset, limit), "wrong page: %s" % shorten(json.dumps(page)))
    for query in ("?limit=0", "?limit=501", "?limit=abc", "?limit=-1", "?limit=", "?limit=1.5", "?offset=-1",
                  "?offset=abc", "?offset=99999999999999999999999"):
        checker.call("listSessions", 400, query=query, label="bad parameter")

    # getSession: 404.
    if missing_code in {s.get("code") for s in sessions}:
        missing_code = "999-999-998"
    checker.call("getSession", 404, {"code": missing_code})
    checker.call("getSession", 404, {"code": "not-a-code"})

    # updateSession: each member alone (and null), absent members stay.
    target = checker.call("createSession", 201, body={"description": "update me", "customer_name": "Ann"}).json or {}
    target_code = target.get("code")
    before = target
    update_properties = {k: v for k, v in create_schema_properties(spec, update_schema).items() if k != "state"}
    for name, schema in update_properties.items():
        for value in valid_values(name, schema):
            body = {name: value}
            response = checker.call("updateSession", 200, {"code": target_code}, body=body, label="valid body")
            if response.status == 200:
                session_matches(checker, "updateSession body=" + shorten(json.dumps(body)), response.json or {}, body,
                                before, schema=spec.json_schema(update_schema))
                before = response.json
    everything = {name: valid_values(name, schema)[0] for name, schema in update_properties.items()}
    response = checker.call("updateSession", 200, {"code": target_code}, body=everything, label="all members")
    session_matches(checker, "updateSession all members", response.json or {}, everything, before,
                    schema=spec.json_schema(update_schema))
    before = response.json or before
    # Invalid update bodies: 422, and nothing changes.
    for label, body in invalid_bodies(spec, update_schema, {}):
        if not list(update_validator.iter_errors(body)):
            checker.fail("checker", "generated 'invalid' update body %s is valid by the spec" % shorten(json.dumps(body)))
            continue
        checker.call("updateSession", 422, {"code": target_code}, body=body, label=label)
    checker.call("updateSession", 422, {"code": target_code}, body={"valid_until": "2001-01-01T00:00:00Z"},
                 label="valid_until in the past")
    after = checker.call("getSession", 200, {"code": target_code}).json
    if after != before:
        checker.fail("updateSession", "refused changes altered the code: %s -> %s" % (before, after))
    checker.call("updateSession", 404, {"code": missing_code}, body={"description": "x"})

    # state: open on an open code changes nothing; closed closes; open on a closed code is 409; closed again is 200.
    if "state" in (update_schema.get("properties") or {}):
        unchanged = checker.call("updateSession", 200, {"code": target_code}, body={"state": "open"}).json
        if unchanged != before:
            checker.fail("updateSession state open", "an open code changed: %s" % unchanged)
        closed = checker.call("updateSession", 200, {"code": target_code}, body={"state": "closed"}).json or {}
        if closed.get("state") != "closed" or closed.get("live_state") != "closed" or closed.get("closed_at") is None:
            checker.fail("updateSession state closed", "not closed: %s" % closed)
        checker.call("updateSession", 409, {"code": target_code}, body={"state": "open"}, label="reopen")
        checker.call("updateSession", 409, {"code": target_code}, body={"state": "open", "description": "no"},
                     label="reopen with a change")
        again = checker.call("updateSession", 200, {"code": target_code}, body={"state": "closed"}).json or {}
        if again.get("closed_at") != closed.get("closed_at") or again.get("description") == "no":
            checker.fail("updateSession", "closing twice or a refused reopen changed the code: %s" % again)

    # deleteSession: 204, then 404; 409 with a device on the code.
    checker.call("deleteSession", 204, {"code": target_code})
    checker.call("getSession", 404, {"code": target_code}, label="after delete")
    checker.call("deleteSession", 404, {"code": target_code}, label="twice")
    if args.online_code:
        online = checker.call("getSession", 200, {"code": args.online_code}, label="device online").json or {}
        if online.get("online") is not True or online.get("live_state") != "online" or not online.get("device_name"):
            checker.fail("getSession online code", "not shown online: %s" % online)
        checker.call("deleteSession", 409, {"code": args.online_code}, label="device online")
        if checker.call("getSession", 200, {"code": args.online_code}).status != 200:
            checker.fail("deleteSession", "a refused delete removed the code")
    else:
        excused.add(("deleteSession", 409))

    # Outside the operations: unknown paths, other methods, keep-alive, 413.
    for path in ("/nope", "/sessions/%s/extra" % code):
        checker.plain("GET", path, 404)
    checker.plain("GET", "/../v2/sessions", 404, what="GET /api/v2/sessions")
    for path, allowed in (("/sessions", {"GET", "POST"}), ("/sessions/" + code, {"GET", "PUT", "DELETE"})):
        for method in ("PATCH", "OPTIONS"):
            response = checker.plain(method, path, 405)
            methods = {m.strip() for m in (response.header("Allow") or "").split(",") if m.strip()}
            if methods != allowed:
                checker.fail("%s %s" % (method, path), "Allow %r, expected %s" % (response.header("Allow"), sorted(allowed)))
        spec_methods = {m.upper() for m in spec.document["paths"][path.replace(code, "{code}")]
                        if m in ("get", "put", "post", "delete", "patch")}
        if spec_methods != allowed:
            checker.fail("spec", "%s has %s in the spec but Allow lists %s" % (path, sorted(spec_methods), sorted(allowed)))
    connection = client.connection()
    try:
        one = checker.call("listSessions", 200, query="?limit=1", connection=connection, label="keep-alive 1")
        two = checker.call("getSession", 200, {"code": code}, connection=connection, label="keep-alive 2")
        if "close" in (one.header("Connection") or "").lower():
            checker.fail("keep-alive", "the first answer closes the connection")
        del two
    except (OSError, http.client.HTTPException) as error:
        checker.fail("keep-alive", "second request on one connection failed: %r" % error)
    finally:
        connection.close()
    big = b'{"description": "' + b"x" * (64 * 1024 - 18) + b'"}'  # one byte over 64 KiB
    assert len(big) == 64 * 1024 + 1
    checker.call("createSession", 413, raw=big, label="body over 64 KiB")
    checker.call("updateSession", 413, {"code": code}, raw=big, label="body over 64 KiB")
    exact = b'{"description": "' + b"x" * (64 * 1024 - 19) + b'"}'  # exactly 64 KiB: read, then refused
    assert len(exact) == 64 * 1024
    checker.call("createSession", 422, raw=exact, label="64 KiB body, too long description")

    # Last: 429 after repeated unknown tokens, on every operation.
    if args.no_rate_limit:
        excused.update((operation_id, 429) for operation_id in spec.operations)
    else:
        provoke_rate_limit(checker, codes, bodies, args.free_failures)

    # Coverage: every documented status of every operation was seen.
    missing = []
    for operation_id in spec.operations:
        for status in spec.responses(operation_id):
            if (operation_id, status) not in checker.covered and (operation_id, status) not in excused:
                missing.append("%s %d" % (operation_id, status))
    if missing:
        checker.fail("coverage", "documented statuses never provoked: %s" % ", ".join(missing))
    print("check_openapi: %d requests, %d (operation, status) pairs covered, %d excused, %d failures"
          % (checker.requests, len(checker.covered), len(excused), len(checker.failures)))
    if excused:
        print("excused: %s" % ", ".join("%s %d" % pair for pair in sorted(excused)))
    if checker.failures:
        print("\nMISMATCHES between %s and the node:" % os.path.relpath(args.spec))
        for failure in checker.failures:
            print("  - " + failure)
        return 1
    print("OK: the node matches %s" % os.path.relpath(args.spec))
    return 0


def create_schema_properties(spec, schema):
    return {name: spec.json_schema(sub) for name, sub in (schema.get("properties") or {}).items()}


def invalid_bodies(spec, schema, base):
    """(label, body) pairs the request schema forbids: one broken member each, plus object-level rules."""
    out = []
    properties = create_schema_properties(spec, schema)
    for name, sub in properties.items():
        for label, value in invalid_values(name, sub):
            body = copy.deepcopy(base)
            body[name] = value
            out.append(("%s: %s" % (name, label), body))
    if schema.get("additionalProperties") is False:
        some = next(iter(properties))
        out += [("unknown member", {"bogus": 1}),
                ("unknown member beside a valid one", {"bogus": 1, some: valid_values(some, properties[some])[0]}),
                ("member in other case", {some.upper(): "x"}), ("camelCase member", {"customerName": "x"})]
    if schema.get("minProperties"):
        out.append(("fewer than minProperties", {}))
    forbidden = (schema.get("not") or {}).get("required")
    if forbidden:
        body = {name: valid_values(name, properties[name])[0] for name in forbidden}
        out.append(("all of %s together" % forbidden, body))
    return out


def provoke_rate_limit(checker, codes, bodies, free_failures):
    """Unknown tokens until 429, then every operation without a valid token while the address is blocked (429), and
    with the admin token (never refused for its address's failures)."""
    bad = "rsk_unknown-token-from-check-openapi"
    statuses = []
    retry = 0
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
    parser.add_argument("--online-code", help="a code with a device on it (for DELETE 409)")
    parser.add_argument("--spec", default=os.path.join(HERE, "openapi.yaml"))
    parser.add_argument("--no-rate-limit", action="store_true", help="skip the 429 phase")
    parser.add_argument("--free-failures", type=int, default=5, help="unknown tokens per address before 429")
    parser.add_argument("--verbose", action="store_true", help="print every request")
    args = parser.parse_args()
    try:
        return run(args)
    except (OSError, http.client.HTTPException) as error:
        print("check_openapi: the node did not answer: %r" % error, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
