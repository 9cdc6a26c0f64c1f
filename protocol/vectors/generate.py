#!/usr/bin/env python3
"""Generates protocol/vectors/valid.jsonl, malformed.jsonl and goaway.jsonl with rsup.py, then self-checks.

Usage: python3 protocol/vectors/generate.py        (Python 3.11, standard library only)

Deterministic: no randomness, no clock; running it twice writes identical files.
Every expected message and every expected error (code, offset, field) below is written by hand (offsets are
computed by arithmetic on the hand-built byte layout), then checked against rsup.py. Generation fails if any
check fails.

Protocol document revision 1.1 (SPEC §15): the 1.1 vectors are appended after the 1.0.1 ones. Every vector is
checked against the stateless 1.1 codec; every 1.0.1 vector is also checked against the 1.0 codec and must give the
same result with both (so the 1.0.1 vectors use only types, tags and codes that 1.1 still leaves undefined where
they mean "undefined").

Protocol document revision 1.2.0 (SPEC §15.1, §15.3: extension ask_withdraw, frame FEATURE_WITHDRAW 0x21): the 1.2
vectors are appended after the 1.1 ones. Every earlier vector (1.0.1 and 1.1) must also give the same result with a
decoder of revision 1.1.x, which does not know 0x21 (so no earlier vector used 0x21; 0x20 stays undefined).
"""

from __future__ import annotations

import json
import os
import re
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True   # keep protocol/vectors/ free of __pycache__
sys.path.insert(0, HERE)

import rsup  # noqa: E402
from rsup import field, frame, header, DecodeError  # noqa: E402

T = rsup.TYPE_BY_NAME
HELLO, HELLO_ACK, PING, PONG, GOAWAY = 0x01, 0x02, 0x03, 0x04, 0x05
REGISTER, REGISTER_RESULT, CONNECTION_REQUEST, CONNECTION_RESPONSE = 0x10, 0x11, 0x12, 0x13
REQUEST_ABORT, SESSION_STARTED, SESSION_END, SESSION_ERROR, VOIP_STATE = 0x14, 0x15, 0x16, 0x17, 0x18
R = rsup.REASONS
F = rsup.FEATURES
U32_MAX = 0xFFFFFFFF
U64_MAX = 0xFFFFFFFFFFFFFFFF


def u8(v): return bytes([v])
def u16(v): return struct.pack(">H", v)
def u32(v): return struct.pack(">I", v)
def u64(v): return struct.pack(">Q", v)
def s(v): return v.encode("utf-8")
def feats(*pairs): return b"".join(struct.pack(">HH", i, v) for i, v in pairs)


def build(ftype, pairs, prefix=b"", flags=0):
    """Frame of `ftype` whose payload is the given (tag, value) fields in the given order (duplicates and
    disorder allowed; a tuple of 3 = (tag, value, declared length)). Returns (stream, frame_start,
    [stream offset of each field's tag byte])."""
    offs = []
    payload = b""
    base = len(prefix) + 8
    for p in pairs:
        offs.append(base + len(payload))
        payload += field(p[0], p[1], p[2] if len(p) > 2 else None)
    return prefix + frame(ftype, payload, flags=flags), len(prefix), offs


# Well-formed field sets used as bases for malformed vectors (tag -> raw value).
HELLO_OK = {1: u8(1), 2: u8(1), 3: u8(1), 4: s("iPhone"), 5: b"", 6: u32(30000), 7: u32(16384)}
HELLO_ACK_OK = {1: u8(1), 2: u8(2), 3: s("node-1"), 4: b"", 5: u32(30000), 6: u32(16384)}
REGISTER_OK = {1: s("123456"), 2: s("tok"), 3: b""}
CREQ_OK = {1: u32(1), 2: s("Sam"), 3: u8(1), 4: b""}
CRESP_OK = {1: u32(1), 2: u8(1), 3: u8(R["success"])}


def fields(base, **changes):
    """(tag, value) pairs of `base` in tag order; changes t<N>=bytes replaces, t<N>=None removes."""
    d = dict(base)
    for k, v in changes.items():
        tag = int(k[1:])
        if v is None:
            d.pop(tag, None)
        else:
            d[tag] = v
    return sorted(d.items())


# ------------------------------------------------------------------------------------------------------------
# Valid vectors
# ------------------------------------------------------------------------------------------------------------

valid = []


def V(name, description, message):
    """Canonical vector: one frame; hex = encode(message)."""
    valid.append({"name": name, "description": description, "canonical": True,
                  "hex": rsup.encode(message).hex(), "messages": [message]})


def NC(name, description, stream, messages):
    """Non-canonical (decode-only) vector."""
    valid.append({"name": name, "description": description, "canonical": False,
                  "hex": stream.hex(), "messages": messages})


def hello(**kw):
    m = {"type": "HELLO", "min_version": 1, "max_version": 1, "role": 1, "node_name": "Anna's iPhone",
         "features": [], "keepalive_ms": 30000, "max_frame_size": 16384}
    m.update(kw)
    return m


def hello_ack(**kw):
    m = {"type": "HELLO_ACK", "version": 1, "role": 2, "node_name": "support-node-1", "features": [],
         "keepalive_ms": 30000, "max_frame_size": 16384}
    m.update(kw)
    return m


JUERGEN = "J\u00fcrgen \U0001F6E0"          # "Jürgen 🛠": 1+2+4+1+4 = 12 bytes
assert len(s(JUERGEN)) == 12

# --- HELLO (no optional fields: the minimal vector is also the full one)
V("hello_minimal", "HELLO from a device, all (required) fields, empty features list; HELLO has no optional field",
  hello())
V("hello_supporter_role", "HELLO with role 2 (supporter)", hello(role=2, node_name="supporter-7"))
V("hello_full", "HELLO with every field and a non-empty features list (unknown extension ids are carried)",
  hello(min_version=1, max_version=3, features=[[0x0001, 1], [0x0100, 2]], keepalive_ms=15000,
        max_frame_size=65536))
V("hello_version_range_1_255", "HELLO offering protocol versions 1 to 255", hello(min_version=1, max_version=255))
V("hello_version_255_255", "HELLO with min_version = max_version = 255", hello(min_version=255, max_version=255))
V("hello_node_name_1_byte", "HELLO with a 1-byte node_name", hello(node_name="X"))
V("hello_node_name_64_bytes", "HELLO with a node_name of exactly 64 ASCII bytes (the maximum)",
  hello(node_name="N" * 64))
V("hello_node_name_64_bytes_multibyte", "HELLO with a node_name of 32 x U+00FC = 64 UTF-8 bytes (limit is bytes)",
  hello(node_name="\u00fc" * 32))
V("hello_node_name_utf8", "HELLO with node_name 'J\u00fcrgen \U0001F6E0' (2- and 4-byte UTF-8 sequences, 12 bytes)",
  hello(node_name=JUERGEN))
V("hello_keepalive_100", "HELLO with keepalive_ms 100 (minimum)", hello(keepalive_ms=100))
V("hello_keepalive_600000", "HELLO with keepalive_ms 600000 (maximum)", hello(keepalive_ms=600000))
V("hello_max_frame_size_1048576", "HELLO with max_frame_size 1048576 (maximum)", hello(max_frame_size=1048576))
V("hello_features_unknown_ids", "HELLO whose features hold ids not defined anywhere, kept as-is, incl. version 65535",
  hello(features=[[0x0005, 1], [0x1234, 7], [0xFEFF, 65535]]))

# --- HELLO_ACK (no optional fields in 1.0; the 1.1 ones are in the revision 1.1 block)
V("hello_ack_minimal", "HELLO_ACK from a supporter node with only the required fields (no resume_grace_ms, the "
  "optional field of revision 1.1)",
  hello_ack())
V("hello_ack_full", "HELLO_ACK with a non-empty features list", hello_ack(features=[[0x0001, 1], [0x0003, 1]],
                                                                            max_frame_size=262144))
V("hello_ack_role_device", "HELLO_ACK with role 1 (device): valid on the wire (role checks are §5.2 negotiation)",
  hello_ack(role=1))
V("hello_ack_version_255", "HELLO_ACK choosing version 255", hello_ack(version=255))
V("hello_ack_keepalive_100_max_frame_1048576", "HELLO_ACK with keepalive_ms 100 and max_frame_size 1048576",
  hello_ack(keepalive_ms=100, max_frame_size=1048576))
V("hello_ack_keepalive_600000", "HELLO_ACK with keepalive_ms 600000", hello_ack(keepalive_ms=600000))
V("hello_ack_node_name_64_bytes", "HELLO_ACK with a 64-byte node_name", hello_ack(node_name="s" * 64))
V("hello_ack_node_name_utf8", "HELLO_ACK with a multi-byte UTF-8 node_name", hello_ack(node_name=JUERGEN))

# --- PING / PONG
for mt in ("PING", "PONG"):
    lt = mt.lower()
    V(f"{lt}_nonce_0", f"{mt} with nonce 0", {"type": mt, "nonce": "0"})
    V(f"{lt}_nonce_max", f"{mt} with nonce 2^64-1", {"type": mt, "nonce": str(U64_MAX)})
    V(f"{lt}_nonce_0102030405060708", f"{mt} with nonce 0x0102030405060708 (shows byte order)",
      {"type": mt, "nonce": str(0x0102030405060708)})
    V(f"{lt}_nonce_high_bit", f"{mt} with nonce 2^63 (needs an unsigned 64-bit type)",
      {"type": mt, "nonce": str(1 << 63)})

# --- GOAWAY
V("goaway_minimal", "GOAWAY with only the reason (normal_close)", {"type": "GOAWAY", "reason": R["normal_close"]})
V("goaway_full", "GOAWAY with reason malformed_frame and a text",
  {"type": "GOAWAY", "reason": R["malformed_frame"], "text": "field_out_of_order offset 27 field 2"})
for rn in ("going_away", "unspecified_error", "protocol_error", "unsupported_version", "frame_too_large",
           "role_mismatch", "keepalive_timeout", "internal_error"):
    V(f"goaway_{rn}", f"GOAWAY with reason {rn} (0x{R[rn]:02x})", {"type": "GOAWAY", "reason": R[rn]})
V("goaway_text_1_byte", "GOAWAY with a 1-byte text", {"type": "GOAWAY", "reason": R["normal_close"], "text": "x"})
V("goaway_text_256_bytes", "GOAWAY with a text of exactly 256 bytes (maximum)",
  {"type": "GOAWAY", "reason": R["normal_close"], "text": "t" * 256})
V("goaway_text_256_bytes_multibyte", "GOAWAY with a text of 64 x U+1F6E0 = 256 bytes",
  {"type": "GOAWAY", "reason": R["going_away"], "text": "\U0001F6E0" * 64})
V("goaway_unknown_reason_0x0a", "GOAWAY with the undefined non-error reason 0x0a (0x08 and 0x09 are defined since "
  "1.1): kept", {"type": "GOAWAY", "reason": 0x0A})
V("goaway_unknown_reason_0x7f", "GOAWAY with the undefined non-error reason 0x7f: kept", {"type": "GOAWAY", "reason": 0x7F})
V("goaway_unknown_reason_0x93", "GOAWAY with the undefined error reason 0x93 (0x91 and 0x92 are defined since "
  "1.1): kept", {"type": "GOAWAY", "reason": 0x93})
V("goaway_unknown_reason_0xff", "GOAWAY with the undefined error reason 0xff and a text: kept",
  {"type": "GOAWAY", "reason": 0xFF, "text": "future"})
V("goaway_reason_connection_lost", "GOAWAY with reason 0x90 connection_lost: never sent, but any reason decodes",
  {"type": "GOAWAY", "reason": R["connection_lost"]})
V("goaway_text_with_nul_and_bom", "GOAWAY text containing U+0000 and U+FEFF (well-formed UTF-8, no terminator, no BOM handling)",
  {"type": "GOAWAY", "reason": R["normal_close"], "text": "\ufeffa\u0000b"})
V("goaway_text_noncharacters", "GOAWAY text with U+FFFF and U+10FFFF: well-formed per RFC 3629",
  {"type": "GOAWAY", "reason": R["normal_close"], "text": "\uffff\U0010FFFF"})

# --- REGISTER (no optional fields)
V("register_minimal", "REGISTER with an empty capabilities list; REGISTER has no optional field",
  {"type": "REGISTER", "session_code": "483920", "api_token": "tok_live_abc", "capabilities": []})
V("register_full", "REGISTER with all four defined capabilities, version 1",
  {"type": "REGISTER", "session_code": "483920", "api_token": "tok_live_abc",
   "capabilities": [[F["screen_share"], 1], [F["assist_ar"], 1], [F["voip"], 1], [F["remote_control"], 1]]})
V("register_session_code_64_bytes", "REGISTER with a 64-byte session_code (maximum)",
  {"type": "REGISTER", "session_code": "7" * 64, "api_token": "t", "capabilities": []})
V("register_api_token_256_bytes", "REGISTER with a 256-byte api_token (maximum)",
  {"type": "REGISTER", "session_code": "1", "api_token": "k" * 256, "capabilities": [[F["voip"], 1]]})
V("register_utf8_strings", "REGISTER with multi-byte UTF-8 session_code and api_token (any UTF-8 code is accepted)",
  {"type": "REGISTER", "session_code": JUERGEN, "api_token": "\u00e9\u00e9", "capabilities": []})
V("register_unknown_capabilities", "REGISTER with the undefined feature id 0x0009 (the first after the 1.1 "
  "features), the reserved ids 0x0000, 0xff00 and 0xffff, and versions other than 1: kept",
  {"type": "REGISTER", "session_code": "483920", "api_token": "tok",
   "capabilities": [[0x0000, 1], [F["screen_share"], 2], [0x0009, 1], [0xFF00, 3], [0xFFFF, 65535]]})
# A known message whose payload is exactly 16384 bytes: 3+1 + 3+2 + 3+4n = 16384 -> n = 4093.
big_caps = [[i, 1] for i in range(1, 4094)]
V("register_payload_16384_bytes", "REGISTER whose payload is exactly 16384 bytes (the default maximum): 4093 capabilities",
  {"type": "REGISTER", "session_code": "1", "api_token": "ab", "capabilities": big_caps})
assert len(rsup.encode(valid[-1]["messages"][0])) == 8 + 16384

# --- REGISTER_RESULT
V("register_result_minimal", "REGISTER_RESULT success with only the reason",
  {"type": "REGISTER_RESULT", "reason": R["success"]})
V("register_result_full", "REGISTER_RESULT with every optional field",
  {"type": "REGISTER_RESULT", "reason": R["rate_limited"], "text": "slow down", "retry_after_ms": 30000,
   "code_type": 1})
V("register_result_success_code_type_1", "REGISTER_RESULT success, code_type 1 (remote support)",
  {"type": "REGISTER_RESULT", "reason": R["success"], "code_type": 1})
V("register_result_success_code_type_2", "REGISTER_RESULT success, code_type 2 (Assist AR)",
  {"type": "REGISTER_RESULT", "reason": R["success"], "code_type": 2})
V("register_result_retry_after_0", "REGISTER_RESULT rate_limited with retry_after_ms 0 (any value)",
  {"type": "REGISTER_RESULT", "reason": R["rate_limited"], "retry_after_ms": 0})
V("register_result_retry_after_max", "REGISTER_RESULT rate_limited with retry_after_ms 4294967295",
  {"type": "REGISTER_RESULT", "reason": R["rate_limited"], "retry_after_ms": U32_MAX})
V("register_result_text_256_bytes", "REGISTER_RESULT with a 256-byte text",
  {"type": "REGISTER_RESULT", "reason": R["invalid_api_token"], "text": "e" * 256})
for rn in ("invalid_session_code", "invalid_api_token", "session_code_expired", "session_code_closed",
           "session_code_in_use", "internal_error"):
    V(f"register_result_{rn}", f"REGISTER_RESULT with reason {rn} (0x{R[rn]:02x})",
      {"type": "REGISTER_RESULT", "reason": R[rn]})
V("register_result_unknown_reason_0x9f", "REGISTER_RESULT with the undefined error reason 0x9f: kept",
  {"type": "REGISTER_RESULT", "reason": 0x9F, "text": "new"})

# --- CONNECTION_REQUEST (no optional fields in 1.0; the 1.1 ones are in the revision 1.1 block)
V("connection_request_minimal", "CONNECTION_REQUEST, request_id 1, screen share, no requested features",
  {"type": "CONNECTION_REQUEST", "request_id": 1, "supporter_name": "Sam", "connection_type": 1,
   "requested_features": []})
V("connection_request_full", "CONNECTION_REQUEST, Assist AR, with requested features",
  {"type": "CONNECTION_REQUEST", "request_id": 42, "supporter_name": "Sam Support", "connection_type": 2,
   "requested_features": [[F["assist_ar"], 1], [F["voip"], 1]]})
V("connection_request_request_id_max", "CONNECTION_REQUEST with request_id 4294967295",
  {"type": "CONNECTION_REQUEST", "request_id": U32_MAX, "supporter_name": "Sam", "connection_type": 1,
   "requested_features": [[F["screen_share"], 1]]})
V("connection_request_supporter_name_64_bytes", "CONNECTION_REQUEST with a 64-byte supporter_name",
  {"type": "CONNECTION_REQUEST", "request_id": 7, "supporter_name": "S" * 64, "connection_type": 2,
   "requested_features": []})
V("connection_request_supporter_name_utf8", "CONNECTION_REQUEST with a multi-byte UTF-8 supporter_name",
  {"type": "CONNECTION_REQUEST", "request_id": 2, "supporter_name": JUERGEN, "connection_type": 1,
   "requested_features": [[F["screen_share"], 1], [F["voip"], 1], [F["remote_control"], 1], [0x0100, 1]]})

# --- CONNECTION_RESPONSE (no optional fields in 1.0; the 1.1 ones are in the revision 1.1 block)
V("connection_response_allow", "CONNECTION_RESPONSE allow with success",
  {"type": "CONNECTION_RESPONSE", "request_id": 1, "decision": 1, "reason": R["success"]})
V("connection_response_reject_by_user", "CONNECTION_RESPONSE reject with rejected_by_user",
  {"type": "CONNECTION_RESPONSE", "request_id": 3, "decision": 2, "reason": R["rejected_by_user"]})
V("connection_response_reject_timed_out", "CONNECTION_RESPONSE reject with request_timed_out, request_id max",
  {"type": "CONNECTION_RESPONSE", "request_id": U32_MAX, "decision": 2, "reason": R["request_timed_out"]})

# --- REQUEST_ABORT (no optional fields)
V("request_abort_by_supporter", "REQUEST_ABORT with aborted_by_supporter",
  {"type": "REQUEST_ABORT", "request_id": 1, "reason": R["aborted_by_supporter"]})
V("request_abort_timed_out", "REQUEST_ABORT with request_timed_out and request_id max",
  {"type": "REQUEST_ABORT", "request_id": U32_MAX, "reason": R["request_timed_out"]})

# --- SESSION_STARTED (no optional fields in 1.0; the 1.1 ones are in the revision 1.1 block)
V("session_started_request_id_1", "SESSION_STARTED for request 1", {"type": "SESSION_STARTED", "request_id": 1})
V("session_started_request_id_max", "SESSION_STARTED for request 4294967295",
  {"type": "SESSION_STARTED", "request_id": U32_MAX})

# --- SESSION_END
V("session_end_minimal", "SESSION_END with only the reason (ended_by_device)",
  {"type": "SESSION_END", "reason": R["ended_by_device"]})
V("session_end_full", "SESSION_END with reason and text",
  {"type": "SESSION_END", "reason": R["ended_by_supporter"], "text": "Thanks, bye"})
for rn in ("ended_by_supporter", "session_code_closed", "session_code_expired", "going_away", "internal_error"):
    V(f"session_end_{rn}", f"SESSION_END with reason {rn} (0x{R[rn]:02x})", {"type": "SESSION_END", "reason": R[rn]})
V("session_end_text_256_bytes", "SESSION_END with a 256-byte text",
  {"type": "SESSION_END", "reason": R["ended_by_device"], "text": "z" * 256})

# --- SESSION_ERROR
V("session_error_minimal", "SESSION_ERROR with only the reason",
  {"type": "SESSION_ERROR", "reason": R["unsupported_feature"]})
V("session_error_full", "SESSION_ERROR with reason, feature and text",
  {"type": "SESSION_ERROR", "reason": R["unsupported_feature"], "feature": F["voip"], "text": "no VoIP"})
V("session_error_feature_version_mismatch", "SESSION_ERROR feature_version_mismatch for screen_share",
  {"type": "SESSION_ERROR", "reason": R["feature_version_mismatch"], "feature": F["screen_share"]})
V("session_error_text_only", "SESSION_ERROR with reason and text, no feature (tags 1 and 3)",
  {"type": "SESSION_ERROR", "reason": R["internal_error"], "text": "x"})
V("session_error_feature_0", "SESSION_ERROR with feature 0 (reserved id; §5.12 sets no range for this u16)",
  {"type": "SESSION_ERROR", "reason": R["unsupported_feature"], "feature": 0})
V("session_error_feature_65535", "SESSION_ERROR with feature 0xffff (reserved id; §5.12 sets no range for this u16)",
  {"type": "SESSION_ERROR", "reason": R["unsupported_feature"], "feature": 0xFFFF})
V("session_error_non_error_reason", "SESSION_ERROR with a non-error, undefined reason 0x10 (informative)",
  {"type": "SESSION_ERROR", "reason": 0x10})

# --- VOIP_STATE
for st, what in ((1, "started"), (2, "not started, other call running"), (3, "ended"),
                 (4, "not started, VoIP unsupported")):
    V(f"voip_state_{st}", f"VOIP_STATE {st} ({what}), minimal", {"type": "VOIP_STATE", "state": st})
V("voip_state_full", "VOIP_STATE with state and text", {"type": "VOIP_STATE", "state": 2, "text": "GSM call active"})

# --- Non-canonical, decode-only streams
NC("empty_stream", "a stream of 0 bytes: no frame, no error", b"", [])
ping7 = {"type": "PING", "nonce": "7"}
pong7 = {"type": "PONG", "nonce": "7"}
NC("two_frames_ping_pong", "two frames back to back: PING then PONG",
   rsup.encode(ping7) + rsup.encode(pong7), [ping7, pong7])
h = hello()
se = {"type": "SESSION_END", "reason": R["ended_by_device"]}
NC("three_frames_hello_ping_session_end", "three frames back to back",
   rsup.encode(h) + rsup.encode(ping7) + rsup.encode(se), [h, ping7, se])
NC("ping_unknown_field_skipped", "PING with nonce then an unknown tag 2 (4-byte value): skipped",
   frame(PING, field(1, u64(7)) + field(2, b"\xde\xad\xbe\xef")), [ping7])
NC("hello_unknown_field_tag_8_skipped", "HELLO with an unknown tag 8 after tag 7: skipped",
   frame(HELLO, b"".join(field(t, v) for t, v in fields(HELLO_OK)) + field(8, b"future")),
   [{"type": "HELLO", "min_version": 1, "max_version": 1, "role": 1, "node_name": "iPhone", "features": [],
     "keepalive_ms": 30000, "max_frame_size": 16384}])
NC("goaway_unknown_fields_3_and_255_skipped", "GOAWAY reason, text, then unknown tags 3 (empty) and 255: skipped",
   frame(GOAWAY, field(1, u8(1)) + field(2, s("bye")) + field(3, b"") + field(255, b"\x00" * 10)),
   [{"type": "GOAWAY", "reason": 1, "text": "bye"}])
NC("register_result_unknown_field_not_inspected", "REGISTER_RESULT reason (1), code_type (4), then unknown tag 9 "
   "whose 3-byte value is not valid UTF-8: skipped, its value is not inspected",
   frame(REGISTER_RESULT, field(1, u8(0)) + field(4, u8(2)) + field(9, b"\xc0\xaf\xff")),
   [{"type": "REGISTER_RESULT", "reason": 0, "code_type": 2}])
NC("session_end_unknown_field_before_absent_optional", "SESSION_END reason (1) then unknown tag 9; optional text "
   "(tag 2) absent", frame(SESSION_END, field(1, u8(2)) + field(9, b"x")),
   [{"type": "SESSION_END", "reason": 2}])
NC("ping_unknown_tag_0_skipped", "PING whose first field has tag 0 (never defined, treated as unknown and skipped)"
   ", then nonce", frame(PING, field(0, b"") + field(1, u64(7))), [ping7])
NC("ping_unknown_field_16000_bytes", "PING with an unknown tag 200 carrying 16000 bytes: skipped",
   frame(PING, field(1, u64(7)) + field(200, b"\xff" * 16000)), [ping7])
NC("ignorable_unknown_type_then_ping", "undefined type 0x06 with IGNORABLE flag (discarded), then PING",
   frame(0x06, field(1, b"hi"), flags=0x01) + rsup.encode(ping7), [ping7])
NC("ignorable_unknown_type_only", "an undefined type 0x20 with IGNORABLE and empty payload: discarded, no message",
   frame(0x20, b"", flags=0x01), [])
NC("ignorable_reserved_type_0x00_then_ping", "reserved type 0x00 with IGNORABLE (discarded), then PING",
   frame(0x00, b"\x01\x02\x03", flags=0x01) + rsup.encode(ping7), [ping7])
NC("ignorable_reserved_type_0xf0_then_ping", "reserved type 0xf0 with IGNORABLE (discarded), then PING",
   frame(0xF0, b"", flags=0x01) + rsup.encode(ping7), [ping7])
NC("ignorable_reserved_type_0xff_then_ping", "reserved type 0xff with IGNORABLE (discarded), then PING",
   frame(0xFF, b"\x00", flags=0x01) + rsup.encode(ping7), [ping7])
NC("ignorable_unknown_type_garbage_payload", "undefined type 0x2a with IGNORABLE whose payload is no field "
   "sequence (not inspected), then PONG", frame(0x2A, b"\xff\xff", flags=0x01) + rsup.encode(pong7), [pong7])
NC("ignorable_unknown_type_payload_16384_then_ping", "undefined type 0x7f with IGNORABLE and a payload of exactly "
   "16384 bytes (the default maximum): discarded, then PING",
   frame(0x7F, bytes(range(256)) * 64, flags=0x01) + rsup.encode(ping7), [ping7])
NC("ping_between_ignorable_frames", "IGNORABLE 0x06, PING, IGNORABLE 0xef, PONG",
   frame(0x06, b"", flags=1) + rsup.encode(ping7) + frame(0xEF, b"abc", flags=1) + rsup.encode(pong7),
   [ping7, pong7])

# --- Errata 1.0.1 (SPEC §14): inputs whose handling the errata decided; appended so earlier lines stay identical
V("connection_response_allow_with_rejected_by_user", "CONNECTION_RESPONSE allow with reason rejected_by_user: "
  "decodes; `decision` alone decides, so the session starts (errata no. 7)",
  {"type": "CONNECTION_RESPONSE", "request_id": 1, "decision": 1, "reason": R["rejected_by_user"]})
V("connection_response_reject_with_success", "CONNECTION_RESPONSE reject with reason success: decodes; a "
  "rejection, reported as rejected_by_user (errata no. 7)",
  {"type": "CONNECTION_RESPONSE", "request_id": 1, "decision": 2, "reason": R["success"]})
V("hello_no_common_version_supporter_role", "HELLO offering versions 2 to 3 with role 2 (supporter): decodes; a "
  "version-1 supporter answers GOAWAY unsupported_version, version before role (errata no. 3)",
  hello(min_version=2, max_version=3, role=2, node_name="supporter-9"))
NC("ignorable_unknown_type_then_hello", "an undefined type 0x06 with IGNORABLE before HELLO: discarded in every "
   "connection state, awaiting_hello included; then HELLO (errata no. 2)",
   frame(0x06, b"v2 hint", flags=0x01) + rsup.encode(h), [h])
V("goaway_text_truncated_header", "GOAWAY malformed_frame with the SPEC §10.1 text for truncated_header at offset "
  "0 (no field)", {"type": "GOAWAY", "reason": R["malformed_frame"], "text": "truncated_header offset 0"})
V("goaway_text_frame_too_large", "GOAWAY frame_too_large with the SPEC §10.1 text",
  {"type": "GOAWAY", "reason": R["frame_too_large"], "text": "frame_too_large offset 4"})

# ------------------------------------------------------------------------------------------------------------
# Revision 1.1 (SPEC §15): valid vectors, appended so that every earlier line stays identical
# ------------------------------------------------------------------------------------------------------------
# Every vector above this line is a 1.0.1 vector; each decodes the same with the 1.0 and the 1.1 codec.
OLD_VALID_COUNT = len(valid)

FEATURE_REQUEST, FEATURE_ANSWER, FEATURE_REVOKE = 0x19, 0x1A, 0x1B
SESSION_MESSAGE, MESSAGE_ACK, RESUME, RESUME_RESULT = 0x1C, 0x1D, 0x1E, 0x1F
X = rsup.EXTENSIONS
ALL_EXT = [[X["access_control"], 1], [X["session_messages"], 1], [X["session_resume"], 1]]
# A resume secret as the reference node writes it: 43 characters of unpadded base64url (SPEC §15.2)
SECRET = "kV3pX9qL2mT8wR4nB7yC1dF6gH0jZ5sA-uE_oI2tYbM"
SECRET2 = "Qz8_Lm2Np4Rt6Vx0Bd3Fh5Jk7Mo9Pq1Su-Wy2Ac4Eg6"
assert len(SECRET) == 43 and len(SECRET2) == 43
MEDIA = b'{"room":"rs-7f3a","token":"eyJhbGciOi"}'


def hx(b):
    """A `bytes` value as written in the vector files: lowercase hex."""
    return b.hex()


# --- HELLO / HELLO_ACK: extension negotiation (§15.1) and resume_grace_ms (§15.2)
V("hello_offering_all_extensions", "HELLO offering the three 1.1 extensions (access_control 1, session_messages 2, "
  "session_resume 3, each version 1) in its features", hello(features=ALL_EXT))
V("hello_ack_with_resume_grace", "HELLO_ACK with session_resume in effect and resume_grace_ms 30000 (the reference "
  "default)", hello_ack(features=[[X["session_resume"], 1]], resume_grace_ms=30000))
V("hello_ack_full_1_1", "HELLO_ACK with every field of revision 1.1: all three extensions in effect and "
  "resume_grace_ms", hello_ack(features=ALL_EXT, keepalive_ms=15000, max_frame_size=65536, resume_grace_ms=45000))
V("hello_ack_resume_grace_1000", "HELLO_ACK resume_grace_ms 1000 (minimum)",
  hello_ack(features=[[X["session_resume"], 1]], resume_grace_ms=1000))
V("hello_ack_resume_grace_600000", "HELLO_ACK resume_grace_ms 600000 (maximum)",
  hello_ack(features=[[X["session_resume"], 1]], resume_grace_ms=600000))
V("hello_ack_resume_grace_without_extension_listed", "HELLO_ACK whose features do not list session_resume but "
  "that carries resume_grace_ms: the stateless codec decodes every field it knows (negotiation is the session "
  "layer's business)", hello_ack(resume_grace_ms=30000))

# --- REGISTER_RESULT resume_secret (§15.2)
V("register_result_success_with_resume_secret", "REGISTER_RESULT success with code_type and a 43-byte "
  "resume_secret", {"type": "REGISTER_RESULT", "reason": R["success"], "code_type": 1, "resume_secret": SECRET})
V("register_result_full_1_1", "REGISTER_RESULT with every field of revision 1.1",
  {"type": "REGISTER_RESULT", "reason": R["success"], "text": "Please wait for your supporter",
   "retry_after_ms": 1000, "code_type": 2, "resume_secret": SECRET})
V("register_result_resume_secret_1_byte", "REGISTER_RESULT resume_secret of 1 byte (the decoder's minimum; a "
  "sender sends 32-64)", {"type": "REGISTER_RESULT", "reason": R["success"], "resume_secret": "x"})
V("register_result_resume_secret_64_bytes", "REGISTER_RESULT resume_secret of 64 bytes (maximum)",
  {"type": "REGISTER_RESULT", "reason": R["success"], "resume_secret": "S" * 64})

# --- CONNECTION_REQUEST confirm_features (§15.2)
V("connection_request_with_confirm_features", "CONNECTION_REQUEST for file_share, chat and app_messages, "
  "file_share to be confirmed by the user",
  {"type": "CONNECTION_REQUEST", "request_id": 3, "supporter_name": "Sam", "connection_type": 1,
   "requested_features": [[F["file_share"], 1], [F["chat"], 1], [F["app_messages"], 1]],
   "confirm_features": [[F["file_share"], 1]]})
V("connection_request_full_1_1", "CONNECTION_REQUEST with every field of revision 1.1 and all eight features",
  {"type": "CONNECTION_REQUEST", "request_id": 42, "supporter_name": "Sam Support", "connection_type": 2,
   "requested_features": [[i, 1] for i in range(1, 9)],
   "confirm_features": [[F["remote_control"], 1], [F["file_share"], 1], [F["ar_pointer"], 1]]})
V("connection_request_confirm_features_empty", "CONNECTION_REQUEST with an empty confirm_features list: a present, "
  "empty features field decodes to [] (absent = none, so a sender omits it instead; see README)",
  {"type": "CONNECTION_REQUEST", "request_id": 1, "supporter_name": "Sam", "connection_type": 1,
   "requested_features": [[F["chat"], 1]], "confirm_features": []})
V("connection_request_confirm_features_not_subset", "CONNECTION_REQUEST whose confirm_features name a feature "
  "not requested: decodes (\"subset of requested_features\" is a sender rule, not checked by the decoder)",
  {"type": "CONNECTION_REQUEST", "request_id": 1, "supporter_name": "Sam", "connection_type": 1,
   "requested_features": [[F["chat"], 1]], "confirm_features": [[F["file_share"], 1]]})

# --- CONNECTION_RESPONSE granted_features (§15.2)
V("connection_response_allow_with_granted_features", "CONNECTION_RESPONSE allow granting screen_share and chat",
  {"type": "CONNECTION_RESPONSE", "request_id": 3, "decision": 1, "reason": R["success"],
   "granted_features": [[F["screen_share"], 1], [F["chat"], 1]]})
V("connection_response_full_1_1", "CONNECTION_RESPONSE with every field of revision 1.1",
  {"type": "CONNECTION_RESPONSE", "request_id": U32_MAX, "decision": 1, "reason": R["success"],
   "granted_features": [[F["assist_ar"], 1], [F["voip"], 1], [F["file_share"], 1], [F["ar_pointer"], 1]]})
V("connection_response_allow_granted_features_empty", "CONNECTION_RESPONSE allow with an empty granted_features "
  "list (present with allow, may be empty)",
  {"type": "CONNECTION_RESPONSE", "request_id": 1, "decision": 1, "reason": R["success"], "granted_features": []})
V("connection_response_reject_with_granted_features", "CONNECTION_RESPONSE reject that carries granted_features: "
  "decodes (\"present with allow\" is a sender rule; decision alone decides)",
  {"type": "CONNECTION_RESPONSE", "request_id": 1, "decision": 2, "reason": R["rejected_by_user"],
   "granted_features": [[F["chat"], 1]]})

# --- SESSION_STARTED granted_features, media_descriptor, resume_secret (§15.2)
V("session_started_with_granted_features", "SESSION_STARTED with granted_features screen_share and voip",
  {"type": "SESSION_STARTED", "request_id": 1, "granted_features": [[F["screen_share"], 1], [F["voip"], 1]]})
V("session_started_granted_features_empty", "SESSION_STARTED with an empty granted_features list (no grant)",
  {"type": "SESSION_STARTED", "request_id": 1, "granted_features": []})
V("session_started_with_media_descriptor", "SESSION_STARTED with a media_descriptor (app-defined bytes, here JSON "
  "text; written as hex)", {"type": "SESSION_STARTED", "request_id": 2, "media_descriptor": hx(MEDIA)})
V("session_started_with_resume_secret", "SESSION_STARTED with a rotated resume_secret",
  {"type": "SESSION_STARTED", "request_id": 2, "resume_secret": SECRET2})
V("session_started_full_1_1", "SESSION_STARTED with every field of revision 1.1",
  {"type": "SESSION_STARTED", "request_id": 42,
   "granted_features": [[F["screen_share"], 1], [F["voip"], 1], [F["file_share"], 1], [F["chat"], 1],
                        [F["app_messages"], 1]],
   "media_descriptor": hx(MEDIA), "resume_secret": SECRET2})
V("session_started_media_descriptor_1_byte", "SESSION_STARTED media_descriptor of 1 byte 0xff (minimum; opaque "
  "octets, not UTF-8)", {"type": "SESSION_STARTED", "request_id": 1, "media_descriptor": "ff"})
V("session_started_media_descriptor_4096_bytes", "SESSION_STARTED media_descriptor of 4096 bytes (maximum): the "
  "byte values 0x00-0xff, 16 times", {"type": "SESSION_STARTED", "request_id": 1,
                                       "media_descriptor": hx(bytes(range(256)) * 16)})
V("session_started_resume_secret_64_bytes", "SESSION_STARTED resume_secret of 64 bytes (maximum)",
  {"type": "SESSION_STARTED", "request_id": 1, "resume_secret": "-" * 64})

# --- GOAWAY with the new reason session_moved (§15.2, §15.5)
V("goaway_session_moved", "GOAWAY session_moved (0x09): the registration was resumed on another connection",
  {"type": "GOAWAY", "reason": R["session_moved"]})

# --- GOAWAY resume_elsewhere (revision 1.1.2, §15.2, §15.5 "Drain")
V("goaway_going_away_resume_elsewhere", "GOAWAY going_away with resume_elsewhere = 1 (revision 1.1.2): the node "
  "drains; the session is kept for a resume", {"type": "GOAWAY", "reason": R["going_away"], "resume_elsewhere": 1})
V("goaway_full_1_1_2", "GOAWAY with every field of revision 1.1.2: going_away, a text, resume_elsewhere = 1",
  {"type": "GOAWAY", "reason": R["going_away"], "text": "the supporter node restarts; resume your session",
   "resume_elsewhere": 1})

# --- FEATURE_REQUEST (0x19, §15.3)
V("feature_request_minimal", "FEATURE_REQUEST with only the required fields: ask 1 for chat (code rule allow)",
  {"type": "FEATURE_REQUEST", "ask_id": 1, "feature": F["chat"]})
V("feature_request_full", "FEATURE_REQUEST with every field: ask 2 for file_share, confirm 1, a text",
  {"type": "FEATURE_REQUEST", "ask_id": 2, "feature": F["file_share"], "confirm": 1,
   "text": "May I send you the manual?"})
V("feature_request_ask_id_max", "FEATURE_REQUEST ask_id 4294967295 for app_messages, confirm 1",
  {"type": "FEATURE_REQUEST", "ask_id": U32_MAX, "feature": F["app_messages"], "confirm": 1})
V("feature_request_text_256_bytes", "FEATURE_REQUEST text of 256 bytes (maximum)",
  {"type": "FEATURE_REQUEST", "ask_id": 3, "feature": F["ar_pointer"], "text": "w" * 256})
V("feature_request_text_utf8", "FEATURE_REQUEST with a multi-byte UTF-8 text",
  {"type": "FEATURE_REQUEST", "ask_id": 4, "feature": F["remote_control"], "confirm": 1, "text": JUERGEN})
V("feature_request_feature_unknown_0x1234", "FEATURE_REQUEST for an undefined feature id: the table gives no "
  "range, any u16 decodes", {"type": "FEATURE_REQUEST", "ask_id": 5, "feature": 0x1234})
V("feature_request_feature_0", "FEATURE_REQUEST for feature 0 (reserved id): any u16 decodes",
  {"type": "FEATURE_REQUEST", "ask_id": 6, "feature": 0})

# --- FEATURE_ANSWER (0x1A, §15.3): every field is required, so minimal and full hold the same fields
V("feature_answer_minimal", "FEATURE_ANSWER grant (decision 1) with success for ask 1 (all fields are required)",
  {"type": "FEATURE_ANSWER", "ask_id": 1, "decision": 1, "reason": R["success"]})
V("feature_answer_full", "FEATURE_ANSWER refuse (decision 2) with rejected_by_user for ask 4294967295",
  {"type": "FEATURE_ANSWER", "ask_id": U32_MAX, "decision": 2, "reason": R["rejected_by_user"]})
for rn in ("request_timed_out", "feature_denied", "unsupported_feature"):
    V(f"feature_answer_refuse_{rn}", f"FEATURE_ANSWER refuse with reason {rn} (0x{R[rn]:02x})",
      {"type": "FEATURE_ANSWER", "ask_id": 2, "decision": 2, "reason": R[rn]})
V("feature_answer_grant_with_feature_denied", "FEATURE_ANSWER grant with reason feature_denied: decodes; as for "
  "CONNECTION_RESPONSE, decision alone decides",
  {"type": "FEATURE_ANSWER", "ask_id": 2, "decision": 1, "reason": R["feature_denied"]})

# --- FEATURE_REVOKE (0x1B, §15.3)
V("feature_revoke_minimal", "FEATURE_REVOKE of chat, no text", {"type": "FEATURE_REVOKE", "feature": F["chat"]})
V("feature_revoke_full", "FEATURE_REVOKE of file_share with a text",
  {"type": "FEATURE_REVOKE", "feature": F["file_share"], "text": "No more files, please"})
V("feature_revoke_feature_65535", "FEATURE_REVOKE of feature 0xffff (reserved id): any u16 decodes",
  {"type": "FEATURE_REVOKE", "feature": 0xFFFF, "text": "x"})
V("feature_revoke_text_256_bytes", "FEATURE_REVOKE text of 256 bytes (maximum)",
  {"type": "FEATURE_REVOKE", "feature": F["ar_pointer"], "text": "r" * 256})


def smsg(**kw):
    m = {"type": "SESSION_MESSAGE", "message_id": 1, "kind": 1}
    m.update(kw)
    return {k: m[k] for k in ("type", "message_id", "kind", "content_type", "body", "transfer_id", "file_name",
                              "file_size", "offset") if k in m}


# --- SESSION_MESSAGE (0x1C, §15.4)
V("session_message_minimal", "SESSION_MESSAGE chat (kind 1), message 1, body 'Hello'", smsg(body=hx(b"Hello")))
V("session_message_full", "SESSION_MESSAGE with every field: first part (offset 0) of a 12-byte PDF file",
  smsg(message_id=7, kind=3, content_type="application/pdf", body=hx(b"%PDF-1.7\n%\xe2\xe3"), transfer_id=1,
       file_name="manual.pdf", file_size="12", offset="0"))
V("session_message_chat_utf8", "SESSION_MESSAGE chat whose body is the UTF-8 text 'Gr\u00fc\u00dfe \U0001F6E0'",
  smsg(message_id=2, body=hx(s("Gr\u00fc\u00dfe \U0001F6E0"))))
V("session_message_application_json", "SESSION_MESSAGE application message (kind 2) with content_type "
  "application/json", smsg(message_id=3, kind=2, content_type="application/json", body=hx(b'{"step":4}')))
V("session_message_file_part_continuation", "SESSION_MESSAGE file part (kind 3) at offset 4096 of transfer 9: "
  "transfer_id and offset only", smsg(message_id=4, kind=3, body=hx(b"\x00\x01\x02\x03"), transfer_id=9,
                                      offset="4096"))
V("session_message_message_id_max", "SESSION_MESSAGE message_id 4294967295",
  smsg(message_id=U32_MAX, body=hx(b"!")))
V("session_message_content_type_128_bytes", "SESSION_MESSAGE content_type of 128 bytes (maximum)",
  smsg(kind=2, content_type="application/" + "x" * 116, body=hx(b"{}")))
V("session_message_file_name_255_bytes", "SESSION_MESSAGE file_name of 255 bytes (maximum)",
  smsg(kind=3, body=hx(b"a"), transfer_id=1, file_name="f" * 251 + ".txt", file_size="1", offset="0"))
V("session_message_file_name_utf8", "SESSION_MESSAGE file_name with multi-byte UTF-8",
  smsg(kind=3, body=hx(b"a"), transfer_id=2, file_name="Gr\u00fc\u00dfe \U0001F6E0.txt", file_size="1",
       offset="0"))
V("session_message_file_size_16777216", "SESSION_MESSAGE file_size 16777216 (16 MiB, the maximum)",
  smsg(kind=3, body=hx(b"a"), transfer_id=3, file_name="big.bin", file_size="16777216", offset="0"))
V("session_message_file_size_0", "SESSION_MESSAGE file_size 0: the table sets no minimum, so it decodes (the part "
  "lies past file_size: a rule of §15.4, message_refused)",
  smsg(kind=3, body=hx(b"a"), transfer_id=4, file_name="empty.bin", file_size="0", offset="0"))
V("session_message_offset_max", "SESSION_MESSAGE offset 2^64-1 (any u64; a part past file_size is a rule of "
  "§15.4, not a decoding error)", smsg(kind=3, body=hx(b"a"), transfer_id=5, offset=str(U64_MAX)))
V("session_message_transfer_id_0", "SESSION_MESSAGE transfer_id 0: the table gives no range, any u32 decodes",
  smsg(kind=3, body=hx(b"a"), transfer_id=0, file_name="a", file_size="1", offset="0"))
# kind-dependent requirements are not decoding errors (§15.4 Rules, first item)
V("session_message_chat_body_not_utf8", "SESSION_MESSAGE chat (kind 1) whose body C0 AF FF is not UTF-8: decodes "
  "(kind 1's UTF-8 rule is §15.4's, answered message_refused)", smsg(message_id=5, body="c0afff"))
V("session_message_chat_body_4097_bytes", "SESSION_MESSAGE chat with a 4097-byte body: decodes (kind 1's 4096-byte "
  "limit is §15.4's, answered message_refused)", smsg(message_id=6, body=hx(b"c" * 4097)))
V("session_message_application_without_content_type", "SESSION_MESSAGE application (kind 2) without content_type: "
  "decodes (a rule of §15.4, answered message_refused)", smsg(message_id=7, kind=2, body=hx(b"{}")))
V("session_message_file_part_without_file_fields", "SESSION_MESSAGE file part (kind 3) without transfer_id, "
  "file_name, file_size and offset: decodes (rules of §15.4)", smsg(message_id=8, kind=3, body=hx(b"data")))
V("session_message_chat_with_file_fields", "SESSION_MESSAGE chat (kind 1) that carries content_type and the file "
  "fields: decodes, every known field is decoded whatever the kind",
  smsg(message_id=9, kind=1, content_type="text/plain", body=hx(b"hi"), transfer_id=1, file_name="a.txt",
       file_size="2", offset="0"))
# Payload of exactly 16384 bytes: (3+4) + (3+1) + (3+n) = 16384 -> n = 16370
V("session_message_payload_16384_bytes", "SESSION_MESSAGE whose payload is exactly 16384 bytes (the default maximum "
  "frame size): a 16370-byte file part", smsg(message_id=10, kind=3, body=hx(bytes(range(256)) * 63 + b"\xaa" * 242)))
assert len(rsup.encode(valid[-1]["messages"][0])) == 8 + 16384

# --- MESSAGE_ACK (0x1D, §15.4)
V("message_ack_minimal", "MESSAGE_ACK success for message 1", {"type": "MESSAGE_ACK", "message_id": 1,
                                                                "reason": R["success"]})
V("message_ack_full", "MESSAGE_ACK message_refused with a text",
  {"type": "MESSAGE_ACK", "message_id": 2, "reason": R["message_refused"], "text": "kind 2 needs a content_type"})
V("message_ack_feature_denied", "MESSAGE_ACK feature_denied (0x08) for message 4294967295",
  {"type": "MESSAGE_ACK", "message_id": U32_MAX, "reason": R["feature_denied"]})
V("message_ack_message_id_0", "MESSAGE_ACK message_id 0: the table (\"the message acknowledged\") gives no range, "
  "any u32 decodes", {"type": "MESSAGE_ACK", "message_id": 0, "reason": R["success"]})
V("message_ack_text_256_bytes", "MESSAGE_ACK text of 256 bytes (maximum)",
  {"type": "MESSAGE_ACK", "message_id": 3, "reason": R["message_refused"], "text": "m" * 256})

# --- RESUME (0x1E, §15.5)
V("resume_minimal", "RESUME with the required fields: state 1 (online)",
  {"type": "RESUME", "session_code": "483920", "resume_secret": SECRET, "state": 1})
V("resume_full", "RESUME with every field: state 3 (awaiting_start) of request 3, last message 12 received, "
  "the lost allow's grant (screen_share, chat)",
  {"type": "RESUME", "session_code": "483920", "resume_secret": SECRET2, "state": 3, "request_id": 3,
   "last_message_id": 12, "granted_features": [[0x0001, 1], [0x0006, 1]]})
V("resume_active", "RESUME state 4 (active) of request 3, last message 12 received",
  {"type": "RESUME", "session_code": "483920", "resume_secret": SECRET2, "state": 4, "request_id": 3,
   "last_message_id": 12})
V("resume_online_with_rejected_request_id", "RESUME state 1 (online) with the request_id the device last rejected",
  {"type": "RESUME", "session_code": "483920", "resume_secret": SECRET, "state": 1, "request_id": 2})
V("resume_request_pending", "RESUME state 2 (request_pending) of request 5",
  {"type": "RESUME", "session_code": "483920", "resume_secret": SECRET, "state": 2, "request_id": 5})
V("resume_awaiting_start", "RESUME state 3 (awaiting_start) of request 4294967295",
  {"type": "RESUME", "session_code": "483920", "resume_secret": SECRET, "state": 3, "request_id": U32_MAX})
V("resume_request_pending_without_request_id", "RESUME state 2 without request_id: decodes (which fields go with "
  "which state is a rule of §15.5, not of the decoder)",
  {"type": "RESUME", "session_code": "483920", "resume_secret": SECRET, "state": 2})
V("resume_session_code_and_secret_64_bytes", "RESUME with a 64-byte session_code and a 64-byte resume_secret",
  {"type": "RESUME", "session_code": "7" * 64, "resume_secret": "s" * 64, "state": 1})
V("resume_utf8_session_code", "RESUME with a multi-byte UTF-8 session_code",
  {"type": "RESUME", "session_code": JUERGEN, "resume_secret": SECRET, "state": 4, "request_id": 1,
   "last_message_id": 1})

# --- RESUME_RESULT (0x1F, §15.5)
V("resume_result_minimal", "RESUME_RESULT with only the reason: resume_rejected (0x91)",
  {"type": "RESUME_RESULT", "reason": R["resume_rejected"]})
V("resume_result_full", "RESUME_RESULT with every field",
  {"type": "RESUME_RESULT", "reason": R["success"], "text": "resumed", "resume_secret": SECRET2,
   "last_message_id": 4, "retry_after_ms": 0})
V("resume_result_success", "RESUME_RESULT success with the new secret and the last message received",
  {"type": "RESUME_RESULT", "reason": R["success"], "resume_secret": SECRET2, "last_message_id": 17})
V("resume_result_rejected_state_mismatch", "RESUME_RESULT resume_rejected with the text 'state mismatch'",
  {"type": "RESUME_RESULT", "reason": R["resume_rejected"], "text": "state mismatch"})
V("resume_result_rate_limited", "RESUME_RESULT rate_limited with retry_after_ms 2000",
  {"type": "RESUME_RESULT", "reason": R["rate_limited"], "retry_after_ms": 2000})
V("resume_result_internal_error", "RESUME_RESULT internal_error with a 256-byte text",
  {"type": "RESUME_RESULT", "reason": R["internal_error"], "text": "i" * 256})
V("resume_result_success_without_secret", "RESUME_RESULT success without resume_secret: decodes (\"present with "
  "success\" is a sender rule)", {"type": "RESUME_RESULT", "reason": R["success"]})
V("resume_result_resume_secret_64_bytes", "RESUME_RESULT resume_secret of 64 bytes (maximum)",
  {"type": "RESUME_RESULT", "reason": R["success"], "resume_secret": "_" * 64})

# --- Non-canonical, decode-only streams (revision 1.1)
rr_code_type_2 = {"type": "REGISTER_RESULT", "reason": 0, "code_type": 2}
NC("register_result_unknown_tag_6_not_inspected", "REGISTER_RESULT reason (1), code_type (4), then unknown tag 6 "
   "whose value C0 AF FF is not UTF-8: skipped unread (tag 5 is resume_secret since 1.1; tag 6 is still unknown)",
   frame(REGISTER_RESULT, field(1, u8(0)) + field(4, u8(2)) + field(6, b"\xc0\xaf\xff")), [rr_code_type_2])
NC("ignorable_unknown_type_0x20_garbage_payload", "undefined type 0x20 (the first after the 1.1 types 0x19-0x1f) "
   "with IGNORABLE whose payload is no field sequence (not inspected), then PONG",
   frame(0x20, b"\xff\xff", flags=0x01) + rsup.encode(pong7), [pong7])
sm_hi = smsg(message_id=1, body=hx(b"hi"))
NC("session_message_unknown_tag_9_skipped", "SESSION_MESSAGE chat then an unknown tag 9: skipped",
   frame(SESSION_MESSAGE, field(1, u32(1)) + field(2, u8(1)) + field(4, b"hi") + field(9, b"\x00\x01")), [sm_hi])
fr_chat = {"type": "FEATURE_REQUEST", "ask_id": 1, "feature": F["chat"]}
NC("feature_request_unknown_tag_0_first", "FEATURE_REQUEST whose first field has tag 0 (unknown, skipped)",
   frame(FEATURE_REQUEST, field(0, b"?") + field(1, u32(1)) + field(2, u16(F["chat"]))), [fr_chat])
h11 = hello(features=ALL_EXT)
ha11 = hello_ack(features=ALL_EXT, resume_grace_ms=30000)
rr11 = {"type": "REGISTER_RESULT", "reason": R["success"], "code_type": 1, "resume_secret": SECRET}
cr11 = {"type": "CONNECTION_REQUEST", "request_id": 1, "supporter_name": "Sam", "connection_type": 1,
        "requested_features": [[F["screen_share"], 1], [F["chat"], 1]], "confirm_features": [[F["chat"], 1]]}
ss11 = {"type": "SESSION_STARTED", "request_id": 1, "granted_features": [[F["screen_share"], 1], [F["chat"], 1]],
        "resume_secret": SECRET2}
NC("stream_1_1_responder_to_device", "what a device reads from a 1.1 supporter node, back to back: HELLO_ACK with "
   "all extensions, REGISTER_RESULT with a secret, CONNECTION_REQUEST with confirm_features, SESSION_STARTED with "
   "the grant, SESSION_MESSAGE, MESSAGE_ACK",
   b"".join(rsup.encode(m) for m in (ha11, rr11, cr11, ss11, sm_hi, {"type": "MESSAGE_ACK", "message_id": 1,
                                                                     "reason": 0})),
   [ha11, rr11, cr11, ss11, sm_hi, {"type": "MESSAGE_ACK", "message_id": 1, "reason": 0}])

NEW_VALID_START = OLD_VALID_COUNT

# ------------------------------------------------------------------------------------------------------------
# Revision 1.2.0 (SPEC §15.1, §15.3: ask_withdraw, FEATURE_WITHDRAW 0x21): valid vectors, appended so that every
# earlier line stays identical
# ------------------------------------------------------------------------------------------------------------
# Every vector above this line holds for a decoder of revision 1.1.x too (which does not know 0x21).
VALID_1_1_COUNT = len(valid)

FEATURE_WITHDRAW = 0x21
ALL_EXT_1_2 = ALL_EXT + [[X["ask_withdraw"], 1]]

# --- HELLO / HELLO_ACK with ask_withdraw (§15.1: extension 0x0004, requires access_control)
V("hello_offering_all_extensions_1_2", "HELLO offering the four extensions of revision 1.2.0 (access_control 1, "
  "session_messages 2, session_resume 3, ask_withdraw 4, each version 1) in its features", hello(features=ALL_EXT_1_2))
V("hello_ack_with_ask_withdraw", "HELLO_ACK with access_control and ask_withdraw in effect",
  hello_ack(features=[[X["access_control"], 1], [X["ask_withdraw"], 1]]))

# --- FEATURE_WITHDRAW (0x21, §15.3): its one field is required, so the minimal vector is also the full one
V("feature_withdraw_minimal", "FEATURE_WITHDRAW of ask 1 (its only field, required: minimal and full at once)",
  {"type": "FEATURE_WITHDRAW", "ask_id": 1})
V("feature_withdraw_ask_id_max", "FEATURE_WITHDRAW of ask 4294967295 (the maximum)",
  {"type": "FEATURE_WITHDRAW", "ask_id": U32_MAX})
V("feature_withdraw_ask_id_0x01020304", "FEATURE_WITHDRAW of ask 0x01020304 (shows byte order)",
  {"type": "FEATURE_WITHDRAW", "ask_id": 0x01020304})

# --- FEATURE_ANSWER refuse aborted_by_supporter: the device's answer to a withdrawn ask (§15.3)
V("feature_answer_refuse_aborted_by_supporter", "FEATURE_ANSWER refuse with reason aborted_by_supporter (0x05): "
  "the answer to an ask the supporter withdrew (revision 1.2.0)",
  {"type": "FEATURE_ANSWER", "ask_id": 3, "decision": 2, "reason": R["aborted_by_supporter"]})

# --- Non-canonical, decode-only streams (revision 1.2.0)
fw7 = {"type": "FEATURE_WITHDRAW", "ask_id": 7}
NC("feature_withdraw_unknown_tag_2_skipped", "FEATURE_WITHDRAW ask_id 7, then an unknown tag 2 whose value is "
   "not inspected: skipped", frame(FEATURE_WITHDRAW, field(1, u32(7)) + field(2, b"\xc0\xaf\xff")), [fw7])
NC("feature_withdraw_unknown_tag_0_first", "FEATURE_WITHDRAW whose first field has tag 0 (unknown, skipped), then "
   "ask_id 7", frame(FEATURE_WITHDRAW, field(0, b"?") + field(1, u32(7))), [fw7])
NC("ignorable_unknown_type_0x20_then_feature_withdraw", "undefined type 0x20 with IGNORABLE (0x20 stays undefined "
   "in revision 1.2.0: discarded), then FEATURE_WITHDRAW (0x21)",
   frame(0x20, b"\x01\x02", flags=0x01) + rsup.encode(fw7), [fw7])
fr_file = {"type": "FEATURE_REQUEST", "ask_id": 1, "feature": F["file_share"], "confirm": 1}
fw1 = {"type": "FEATURE_WITHDRAW", "ask_id": 1}
NC("stream_1_2_ask_then_withdraw", "what a device reads from a supporter node of revision 1.2.0, back to back: "
   "FEATURE_REQUEST ask 1 for file_share (confirm), then FEATURE_WITHDRAW of ask 1",
   rsup.encode(fr_file) + rsup.encode(fw1), [fr_file, fw1])

# ------------------------------------------------------------------------------------------------------------
# Malformed vectors
# ------------------------------------------------------------------------------------------------------------

malformed = []


def M(name, description, stream, code, offset, fld=None):
    err = {"code": code, "offset": offset}
    if fld is not None:
        err["field"] = fld
    malformed.append({"name": name, "description": description, "hex": stream.hex(), "error": err})


PING_OK = rsup.encode(ping7)             # 19 bytes
assert len(PING_OK) == 19

# --- Stream end (§3.4)
M("truncated_header_1_byte", "1 header byte, then the stream ends", b"\x01", "truncated_header", 0)
M("truncated_header_4_bytes", "4 header bytes of a PING", PING_OK[:4], "truncated_header", 0)
M("truncated_header_7_bytes", "7 header bytes of a PING", PING_OK[:7], "truncated_header", 0)
M("truncated_header_after_valid_frame", "a complete PING then 3 bytes of a next header",
  PING_OK + PING_OK[:3], "truncated_header", 19)
M("truncated_header_bad_version_byte", "2 bytes whose version byte is 2: the header is incomplete, so "
  "truncated_header (header checks need all 8 bytes)", b"\x02\x03", "truncated_header", 0)
M("truncated_payload_empty", "a PING header announcing 11 payload bytes, none present",
  PING_OK[:8], "truncated_payload", 0)
M("truncated_payload_short", "a PING with 10 of its 11 payload bytes", PING_OK[:18], "truncated_payload", 0)
M("truncated_payload_second_frame", "a complete PING, then a PONG missing its last payload byte",
  PING_OK + rsup.encode(pong7)[:-1], "truncated_payload", 19)
M("truncated_payload_ignorable_frame", "an undefined IGNORABLE frame announcing 4 bytes with only 2 present",
  header(0x06, 4, flags=1) + b"ab", "truncated_payload", 0)

# --- Header (§3.3)
M("frame_too_large_16385", "a PING header with length 16385 (payload absent)", header(PING, 16385),
  "frame_too_large", 4)
M("frame_too_large_16385_with_payload", "an IGNORABLE undefined frame of 16385 payload bytes (all present)",
  frame(0x06, b"\x00" * 16385, flags=1), "frame_too_large", 4)
M("frame_too_large_ffffffff", "length 0xffffffff", header(REGISTER, 0xFFFFFFFF), "frame_too_large", 4)
M("frame_too_large_second_frame", "a valid PING then a header with length 16385",
  PING_OK + header(PONG, 16385), "frame_too_large", 23)
M("unsupported_frame_version_0", "version byte 0", frame(PING, field(1, u64(7)), version=0),
  "unsupported_frame_version", 0)
M("unsupported_frame_version_2", "version byte 2", frame(PING, field(1, u64(7)), version=2),
  "unsupported_frame_version", 0)
M("unsupported_frame_version_ff_second_frame", "valid PING, then a frame with version 0xff",
  PING_OK + frame(PONG, field(1, u64(7)), version=0xFF), "unsupported_frame_version", 19)
for bit in range(1, 8):
    M(f"reserved_flags_bit_{bit}", f"flags 0x{1 << bit:02x} (reserved bit {bit}) on a PING",
      frame(PING, field(1, u64(7)), flags=1 << bit), "reserved_flags", 2)
M("reserved_flags_with_ignorable", "flags 0x03 on an undefined type: reserved bit 1 reported",
  frame(0x06, b"", flags=0x03), "reserved_flags", 2)
M("reserved_byte_01", "reserved header byte 0x01", frame(PING, field(1, u64(7)), reserved=0x01), "reserved_byte", 3)
M("reserved_byte_80_second_frame", "valid PING, then a frame with reserved byte 0x80",
  PING_OK + frame(PING, field(1, u64(7)), reserved=0x80), "reserved_byte", 22)
M("unknown_frame_type_0x06", "undefined type 0x06 without IGNORABLE", frame(0x06, b""), "unknown_frame_type", 1)
M("unknown_frame_type_0x2a", "undefined type 0x2a without IGNORABLE", frame(0x2A, field(1, u8(1))),
  "unknown_frame_type", 1)
M("unknown_frame_type_reserved_0x00", "reserved type 0x00 without IGNORABLE", frame(0x00, b""),
  "unknown_frame_type", 1)
M("unknown_frame_type_reserved_0xff", "reserved type 0xff without IGNORABLE", frame(0xFF, b""),
  "unknown_frame_type", 1)
M("unknown_frame_type_reserved_0xf0_after_ping", "valid PING, then reserved type 0xf0 without IGNORABLE",
  PING_OK + frame(0xF0, b""), "unknown_frame_type", 20)
M("ignorable_known_type_ping", "PING with the IGNORABLE flag", frame(PING, field(1, u64(7)), flags=1),
  "ignorable_known_type", 1)
M("ignorable_known_type_hello", "HELLO with the IGNORABLE flag",
  frame(HELLO, b"".join(field(t, v) for t, v in fields(HELLO_OK)), flags=1), "ignorable_known_type", 1)
M("ignorable_known_type_voip_state", "VOIP_STATE (0x18) with the IGNORABLE flag",
  frame(VOIP_STATE, field(1, u8(1)), flags=1), "ignorable_known_type", 1)

# --- Header check order (§3.3): two errors, the earlier check wins
M("order_version_before_reserved_flags", "version 2 and flags 0x80: version is checked first",
  frame(PING, field(1, u64(7)), version=2, flags=0x80), "unsupported_frame_version", 0)
M("order_reserved_flags_before_reserved_byte", "flags 0x02 and reserved byte 1: flags checked first",
  frame(PING, field(1, u64(7)), flags=0x02, reserved=1), "reserved_flags", 2)
M("order_reserved_byte_before_length", "reserved byte 1 and length 16385: reserved byte checked first",
  header(PING, 16385, reserved=1), "reserved_byte", 3)
M("order_length_before_type", "undefined type 0x06 without IGNORABLE and length 16385: length checked first",
  header(0x06, 16385), "frame_too_large", 4)
M("order_header_before_truncated_payload", "PING with IGNORABLE whose payload is cut short: the header error "
  "is reported, not truncated_payload", header(PING, 11, flags=1) + b"\x01", "ignorable_known_type", 1)
M("order_unknown_type_before_truncated_payload", "undefined type 0x06 without IGNORABLE, payload absent",
  header(0x06, 5), "unknown_frame_type", 1)

# --- Field layout (§4.1)
M("trailing_bytes_1", "PING nonce field then 1 stray byte", frame(PING, field(1, u64(7)) + b"\x02"),
  "trailing_bytes", 19)
M("trailing_bytes_2", "GOAWAY reason field then 2 stray bytes", frame(GOAWAY, field(1, u8(1)) + b"\x02\x00"),
  "trailing_bytes", 12)
M("trailing_bytes_only", "PING payload of 2 bytes and no complete field", frame(PING, b"\x01\x00"),
  "trailing_bytes", 8)
M("trailing_bytes_second_frame", "valid PING, then a PONG with 1 trailing byte",
  PING_OK + frame(PONG, field(1, u64(7)) + b"\x00"), "trailing_bytes", 19 + 19)
M("truncated_field_u64", "PING nonce field declares 8 bytes but the payload holds 5",
  frame(PING, field(1, u64(7)[:5], length=8)), "truncated_field", 8, 1)
M("truncated_field_length_ffff", "GOAWAY text field declares 65535 bytes",
  frame(GOAWAY, field(1, u8(1)) + field(2, b"bye", length=0xFFFF)), "truncated_field", 12, 2)
M("truncated_field_unknown_tag", "PING nonce then unknown tag 7 declaring 4 bytes with 3 present",
  frame(PING, field(1, u64(7)) + field(7, b"abc", length=4)), "truncated_field", 19, 7)
st, f0, offs = build(GOAWAY, [(1, u8(1)), (1, u8(2))])
M("duplicate_field_goaway_reason", "GOAWAY with tag 1 twice", st, "duplicate_field", offs[1], 1)
st, f0, offs = build(PING, [(1, u64(7)), (9, b"a"), (9, b"b")])
M("duplicate_field_unknown_tag", "PING with unknown tag 9 twice (unknown tags take part in ordering)",
  st, "duplicate_field", offs[2], 9)
st, f0, offs = build(HELLO, [(2, u8(1)), (1, u8(1))] + fields(HELLO_OK, t1=None, t2=None))
M("field_out_of_order_hello", "HELLO starting with tag 2 then tag 1", st, "field_out_of_order", offs[1], 1)
st, f0, offs = build(GOAWAY, [(1, u8(1)), (5, b"x"), (2, s("bye"))])
M("field_out_of_order_after_unknown_tag", "GOAWAY reason, unknown tag 5, then text (tag 2): out of order",
  st, "field_out_of_order", offs[2], 2)
st, f0, offs = build(SESSION_ERROR, [(1, u8(0x8E)), (0, b"")])
M("field_out_of_order_tag_0", "SESSION_ERROR reason then a tag 0", st, "field_out_of_order", offs[1], 0)

# --- Layout before required fields before values (§4.1 "order of checks for a payload")
st, f0, offs = build(GOAWAY, [(1, u8(1) + u8(1)), (1, u8(1))])
M("order_layout_before_value", "GOAWAY: reason of invalid length 2, then a duplicate tag 1: duplicate_field wins",
  st, "duplicate_field", offs[1], 1)
M("order_trailing_before_value", "VOIP_STATE with state 9 (out of range) and 1 trailing byte: trailing_bytes wins",
  frame(VOIP_STATE, field(1, u8(9)) + b"\x00"), "trailing_bytes", 12)
st, f0, offs = build(REGISTER_RESULT, [(2, b"")])
M("order_missing_before_value", "REGISTER_RESULT with an empty text (tag 2) and no reason (tag 1): missing_field wins",
  st, "missing_field", 0, 1)
st, f0, offs = build(HELLO, fields(HELLO_OK, t3=u8(0), t4=b""))
M("order_values_in_tag_order", "HELLO with role 0 (tag 3) and an empty node_name (tag 4): tag 3 reported",
  st, "value_out_of_range", offs[2], 3)
M("order_duplicate_before_truncated", "GOAWAY reason, then a tag 1 field whose value runs past the end: "
  "the tag-order check of that field comes before its truncation check",
  frame(GOAWAY, field(1, u8(1)) + field(1, b"a", length=5)), "duplicate_field", 12, 1)

# --- Required fields
M("missing_field_ping_empty_payload", "PING with an empty payload", frame(PING, b""), "missing_field", 0, 1)
st, f0, offs = build(HELLO, fields(HELLO_OK, t3=None, t4=None, t6=None, t7=None))
M("missing_field_hello_lowest_of_several", "HELLO with only tags 1, 2, 5: lowest missing tag 3", st,
  "missing_field", 0, 3)
st, f0, offs = build(HELLO_ACK, fields(HELLO_ACK_OK, t6=None))
M("missing_field_hello_ack_last", "HELLO_ACK without max_frame_size (tag 6)", st, "missing_field", 0, 6)
st, f0, offs = build(REGISTER, fields(REGISTER_OK, t3=None))
M("missing_field_register_capabilities", "REGISTER without capabilities (required even when empty)", st,
  "missing_field", 0, 3)
st, f0, offs = build(CONNECTION_RESPONSE, [(4, u8(1))], prefix=PING_OK)
M("missing_field_second_frame_only_unknown", "valid PING, then a CONNECTION_RESPONSE with only an unknown tag 4: "
  "offset is the second frame's first byte", st, "missing_field", 19, 1)

# --- Fixed-width lengths (§4.2)
st, f0, offs = build(HELLO, fields(HELLO_OK, t1=b""))
M("invalid_field_length_u8_0_bytes", "HELLO min_version of 0 bytes", st, "invalid_field_length", offs[0], 1)
st, f0, offs = build(HELLO, fields(HELLO_OK, t3=b"\x00\x01"))
M("invalid_field_length_u8_2_bytes", "HELLO role of 2 bytes", st, "invalid_field_length", offs[2], 3)
st, f0, offs = build(HELLO, fields(HELLO_OK, t6=u32(30000)[1:]))
M("invalid_field_length_u32_3_bytes", "HELLO keepalive_ms of 3 bytes", st, "invalid_field_length", offs[5], 6)
st, f0, offs = build(PING, [(1, b"\x00" + u64(7))])
M("invalid_field_length_u64_9_bytes", "PING nonce of 9 bytes", st, "invalid_field_length", offs[0], 1)
st, f0, offs = build(PONG, [(1, u64(7)[1:])])
M("invalid_field_length_u64_7_bytes", "PONG nonce of 7 bytes", st, "invalid_field_length", offs[0], 1)
st, f0, offs = build(SESSION_ERROR, [(1, u8(0x8E)), (2, u8(3))])
M("invalid_field_length_u16_1_byte", "SESSION_ERROR feature of 1 byte", st, "invalid_field_length", offs[1], 2)
st, f0, offs = build(SESSION_END, [(1, b"")])
M("invalid_field_length_reason_0_bytes", "SESSION_END reason of 0 bytes", st, "invalid_field_length", offs[0], 1)
st, f0, offs = build(CONNECTION_RESPONSE, fields(CRESP_OK, t3=b"\x00\x00"))
M("invalid_field_length_reason_2_bytes", "CONNECTION_RESPONSE reason of 2 bytes", st, "invalid_field_length",
  offs[2], 3)
st, f0, offs = build(SESSION_STARTED, [(1, u32(1) + b"\x00")])
M("invalid_field_length_u32_5_bytes", "SESSION_STARTED request_id of 5 bytes", st, "invalid_field_length",
  offs[0], 1)

# --- Ranges and enumerations
def rng(name, desc, ftype, base, tag, raw):
    st, f0, offs = build(ftype, fields(base, **{f"t{tag}": raw}))
    pos = [t for t, _ in fields(base, **{f"t{tag}": raw})].index(tag)
    M(name, desc, st, "value_out_of_range", offs[pos], tag)


rng("value_out_of_range_hello_min_version_0", "HELLO min_version 0", HELLO, HELLO_OK, 1, u8(0))
st, f0, offs = build(HELLO, fields(HELLO_OK, t1=u8(3), t2=u8(2)))
M("value_out_of_range_hello_max_below_min", "HELLO max_version 2 < min_version 3 (reported on tag 2)",
  st, "value_out_of_range", offs[1], 2)
rng("value_out_of_range_hello_role_0", "HELLO role 0", HELLO, HELLO_OK, 3, u8(0))
rng("value_out_of_range_hello_role_3", "HELLO role 3", HELLO, HELLO_OK, 3, u8(3))
rng("value_out_of_range_hello_keepalive_99", "HELLO keepalive_ms 99", HELLO, HELLO_OK, 6, u32(99))
rng("value_out_of_range_hello_keepalive_600001", "HELLO keepalive_ms 600001", HELLO, HELLO_OK, 6, u32(600001))
rng("value_out_of_range_hello_max_frame_16383", "HELLO max_frame_size 16383", HELLO, HELLO_OK, 7, u32(16383))
rng("value_out_of_range_hello_max_frame_1048577", "HELLO max_frame_size 1048577", HELLO, HELLO_OK, 7,
    u32(1048577))
rng("value_out_of_range_hello_ack_version_0", "HELLO_ACK version 0", HELLO_ACK, HELLO_ACK_OK, 1, u8(0))
rng("value_out_of_range_hello_ack_role_3", "HELLO_ACK role 3", HELLO_ACK, HELLO_ACK_OK, 2, u8(3))
rng("value_out_of_range_hello_ack_keepalive_99", "HELLO_ACK keepalive_ms 99", HELLO_ACK, HELLO_ACK_OK, 5, u32(99))
rng("value_out_of_range_hello_ack_max_frame_ffffffff", "HELLO_ACK max_frame_size 0xffffffff", HELLO_ACK,
    HELLO_ACK_OK, 6, u32(U32_MAX))
st, f0, offs = build(REGISTER_RESULT, [(1, u8(0)), (4, u8(0))])
M("value_out_of_range_code_type_0", "REGISTER_RESULT code_type 0", st, "value_out_of_range", offs[1], 4)
st, f0, offs = build(REGISTER_RESULT, [(1, u8(0)), (2, s("ok")), (4, u8(3))])
M("value_out_of_range_code_type_3", "REGISTER_RESULT code_type 3", st, "value_out_of_range", offs[2], 4)
rng("value_out_of_range_connection_request_id_0", "CONNECTION_REQUEST request_id 0", CONNECTION_REQUEST,
    CREQ_OK, 1, u32(0))
rng("value_out_of_range_connection_type_0", "CONNECTION_REQUEST connection_type 0", CONNECTION_REQUEST,
    CREQ_OK, 3, u8(0))
rng("value_out_of_range_connection_type_3", "CONNECTION_REQUEST connection_type 3", CONNECTION_REQUEST,
    CREQ_OK, 3, u8(3))
rng("value_out_of_range_connection_response_id_0", "CONNECTION_RESPONSE request_id 0", CONNECTION_RESPONSE,
    CRESP_OK, 1, u32(0))
rng("value_out_of_range_decision_0", "CONNECTION_RESPONSE decision 0", CONNECTION_RESPONSE, CRESP_OK, 2, u8(0))
rng("value_out_of_range_decision_3", "CONNECTION_RESPONSE decision 3", CONNECTION_RESPONSE, CRESP_OK, 2, u8(3))
st, f0, offs = build(REQUEST_ABORT, [(1, u32(0)), (2, u8(R["aborted_by_supporter"]))])
M("value_out_of_range_request_abort_id_0", "REQUEST_ABORT request_id 0", st, "value_out_of_range", offs[0], 1)
st, f0, offs = build(SESSION_STARTED, [(1, u32(0))])
M("value_out_of_range_session_started_id_0", "SESSION_STARTED request_id 0 (range taken from §5.7's request_id)",
  st, "value_out_of_range", offs[0], 1)
st, f0, offs = build(VOIP_STATE, [(1, u8(0))])
M("value_out_of_range_voip_state_0", "VOIP_STATE state 0", st, "value_out_of_range", offs[0], 1)
st, f0, offs = build(VOIP_STATE, [(1, u8(5)), (2, s("x"))])
M("value_out_of_range_voip_state_5", "VOIP_STATE state 5", st, "value_out_of_range", offs[0], 1)

# --- Strings
def strerr(name, desc, ftype, base, tag, raw, code):
    pairs = fields(base, **{f"t{tag}": raw})
    st, f0, offs = build(ftype, pairs)
    M(name, desc, st, code, offs[[t for t, _ in pairs].index(tag)], tag)


strerr("invalid_utf8_lone_continuation", "HELLO node_name with a lone continuation byte 0x80", HELLO, HELLO_OK, 4,
       b"ab\x80cd", "invalid_utf8")
strerr("invalid_utf8_overlong_c0_af", "REGISTER session_code with overlong C0 AF", REGISTER, REGISTER_OK, 1,
       b"12\xc0\xaf", "invalid_utf8")
strerr("invalid_utf8_overlong_e0_80_af", "REGISTER api_token with 3-byte overlong E0 80 AF", REGISTER,
       REGISTER_OK, 2, b"\xe0\x80\xaf", "invalid_utf8")
st, f0, offs = build(GOAWAY, [(1, u8(1)), (2, b"x\xed\xa0\x80")])
M("invalid_utf8_surrogate_ed_a0_80", "GOAWAY text with the encoded surrogate U+D800 (ED A0 80)", st,
  "invalid_utf8", offs[1], 2)
strerr("invalid_utf8_truncated_sequence", "CONNECTION_REQUEST supporter_name ending in E2 82 (incomplete 3-byte "
       "sequence)", CONNECTION_REQUEST, CREQ_OK, 2, b"Sam\xe2\x82", "invalid_utf8")
st, f0, offs = build(SESSION_END, [(1, u8(2)), (2, b"\xf5\x80\x80\x80")])
M("invalid_utf8_f5_byte", "SESSION_END text starting with byte F5", st, "invalid_utf8", offs[1], 2)
st, f0, offs = build(VOIP_STATE, [(1, u8(1)), (2, b"\xf4\x90\x80\x80")])
M("invalid_utf8_above_10ffff", "VOIP_STATE text F4 90 80 80 (U+110000)", st, "invalid_utf8", offs[1], 2)
st, f0, offs = build(SESSION_ERROR, [(1, u8(0x8E)), (3, b"\xff")])
M("invalid_utf8_ff_byte", "SESSION_ERROR text 0xFF", st, "invalid_utf8", offs[1], 3)
strerr("invalid_utf8_overlong_c1_bf", "HELLO_ACK node_name C1 BF (overlong encoding of U+007F)", HELLO_ACK, HELLO_ACK_OK, 3, b"\xc1\xbf", "invalid_utf8")
strerr("string_too_long_node_name_65", "HELLO node_name of 65 bytes", HELLO, HELLO_OK, 4, b"n" * 65,
       "string_too_long")
strerr("string_too_long_node_name_65_multibyte", "HELLO_ACK node_name of 65 bytes (21 x 3-byte char + 2 bytes)",
       HELLO_ACK, HELLO_ACK_OK, 3, s("\u20ac" * 21 + "ab"), "string_too_long")
strerr("string_too_long_session_code_65", "REGISTER session_code of 65 bytes", REGISTER, REGISTER_OK, 1,
       b"1" * 65, "string_too_long")
strerr("string_too_long_api_token_257", "REGISTER api_token of 257 bytes", REGISTER, REGISTER_OK, 2, b"k" * 257,
       "string_too_long")
strerr("string_too_long_supporter_name_65", "CONNECTION_REQUEST supporter_name of 65 bytes", CONNECTION_REQUEST,
       CREQ_OK, 2, b"S" * 65, "string_too_long")
st, f0, offs = build(GOAWAY, [(1, u8(1)), (2, b"t" * 257)])
M("string_too_long_goaway_text_257", "GOAWAY text of 257 bytes", st, "string_too_long", offs[1], 2)
st, f0, offs = build(REGISTER_RESULT, [(1, u8(0x8D)), (2, b"t" * 257), (3, u32(1000))])
M("string_too_long_register_result_text_257", "REGISTER_RESULT text of 257 bytes", st, "string_too_long",
  offs[1], 2)
st, f0, offs = build(SESSION_END, [(1, u8(2)), (2, b"\x80" * 257)])
M("order_length_before_utf8", "SESSION_END text of 257 bytes that is also not UTF-8: length is checked first",
  st, "string_too_long", offs[1], 2)
strerr("string_empty_node_name", "HELLO node_name empty (required string)", HELLO, HELLO_OK, 4, b"",
       "string_empty")
strerr("string_empty_session_code", "REGISTER session_code empty", REGISTER, REGISTER_OK, 1, b"", "string_empty")
strerr("string_empty_api_token", "REGISTER api_token empty", REGISTER, REGISTER_OK, 2, b"", "string_empty")
st, f0, offs = build(GOAWAY, [(1, u8(1)), (2, b"")])
M("string_empty_goaway_text", "GOAWAY with an empty optional text (absent must be encoded by omission)", st,
  "string_empty", offs[1], 2)
st, f0, offs = build(SESSION_ERROR, [(1, u8(0x8E)), (2, u16(3)), (3, b"")])
M("string_empty_session_error_text", "SESSION_ERROR with an empty optional text", st, "string_empty", offs[2], 3)

# --- Features
strerr("invalid_field_length_features_5_bytes", "HELLO features of 5 bytes", HELLO, HELLO_OK, 5,
       feats((1, 1)) + b"\x00", "invalid_field_length")
strerr("invalid_field_length_features_2_bytes", "REGISTER capabilities of 2 bytes", REGISTER, REGISTER_OK, 3,
       b"\x00\x01", "invalid_field_length")
pairs = fields(REGISTER_OK, t3=feats((1, 1), (3, 1), (3, 1)))
st, f0, offs = build(REGISTER, pairs)
M("duplicate_feature", "REGISTER capabilities with id 3 twice: offset of the third entry", st,
  "duplicate_feature", offs[2] + 3 + 8, 3)
pairs = fields(CREQ_OK, t4=feats((2, 1), (1, 1)))
st, f0, offs = build(CONNECTION_REQUEST, pairs)
M("feature_out_of_order", "CONNECTION_REQUEST requested_features 2 then 1: offset of the second entry", st,
  "feature_out_of_order", offs[3] + 3 + 4, 4)
pairs = fields(HELLO_ACK_OK, t4=feats((0x0100, 1), (0x00FF, 1)))
st, f0, offs = build(HELLO_ACK, pairs)
M("feature_out_of_order_hello_ack", "HELLO_ACK features 0x0100 then 0x00ff", st, "feature_out_of_order",
  offs[3] + 3 + 4, 4)
pairs = fields(REGISTER_OK, t3=feats((1, 1), (2, 1), (4, 0)))
st, f0, offs = build(REGISTER, pairs)
M("value_out_of_range_feature_version_0", "REGISTER capabilities: third entry has version 0 (offset of that entry)",
  st, "value_out_of_range", offs[2] + 3 + 8, 3)
pairs = fields(HELLO_OK, t5=feats((0, 0)))
st, f0, offs = build(HELLO, pairs)
M("value_out_of_range_feature_version_0_first_entry", "HELLO features: single entry (0, 0)", st,
  "value_out_of_range", offs[4] + 3, 5)
pairs = fields(HELLO_OK, t5=feats((1, 1), (1, 0)))
st, f0, offs = build(HELLO, pairs)
M("order_duplicate_feature_before_version_0", "HELLO features (1,1),(1,0): the entry is both a duplicate and "
  "version 0; the id check is listed first", st, "duplicate_feature", offs[4] + 3 + 4, 5)
pairs = fields(REGISTER_OK, t2=b"", t3=feats((2, 1), (1, 1)))
st, f0, offs = build(REGISTER, pairs)
M("order_string_before_features", "REGISTER with an empty api_token (tag 2) and out-of-order capabilities "
  "(tag 3): tag 2 reported", st, "string_empty", offs[1], 2)

# --- Errors behind valid frames
pairs = fields(HELLO_ACK_OK, t5=u32(600001))
st, f0, offs = build(HELLO_ACK, pairs, prefix=PING_OK + rsup.encode(pong7))
M("value_out_of_range_third_frame", "PING, PONG, then HELLO_ACK with keepalive_ms 600001: offset counts from "
  "the stream start", st, "value_out_of_range", offs[4], 5)
pairs = fields(REGISTER_OK, t3=feats((1, 1), (1, 1)))
st, f0, offs = build(REGISTER, pairs, prefix=frame(0x06, b"skip me", flags=1))
M("duplicate_feature_after_ignorable_frame", "an IGNORABLE undefined frame (discarded), then REGISTER with a "
  "duplicate capability: offset counts the discarded frame", st, "duplicate_feature", offs[2] + 3 + 4, 3)
M("malformed_after_valid_frames", "HELLO then a GOAWAY whose text is invalid UTF-8",
  rsup.encode(hello()) + frame(GOAWAY, field(1, u8(0x81)) + field(2, b"\xc0")), "invalid_utf8",
  len(rsup.encode(hello())) + 8 + 4, 2)

# --- Errata 1.0.1 no. 1: a device's stream cut short after HELLO, as a peer's close_notify leaves it
HELLO_DEVICE = rsup.encode(hello())
M("truncated_header_after_hello", "HELLO, then 5 bytes of a REGISTER header, then the stream ends (close_notify): "
  "truncated_header at the REGISTER's first byte", HELLO_DEVICE + header(REGISTER, 20)[:5], "truncated_header",
  len(HELLO_DEVICE))
M("truncated_payload_after_hello", "HELLO, then a REGISTER header announcing 20 payload bytes and 6 of them: "
  "truncated_payload at the REGISTER's first byte", HELLO_DEVICE + header(REGISTER, 20) + field(1, s("123")),
  "truncated_payload", len(HELLO_DEVICE))

# ------------------------------------------------------------------------------------------------------------
# Revision 1.1 (SPEC §15): malformed vectors, appended so that every earlier line stays identical
# ------------------------------------------------------------------------------------------------------------
OLD_MALFORMED_COUNT = len(malformed)

RR_OK = {1: u8(R["success"]), 2: s("wait"), 3: u32(0), 4: u8(1), 5: s(SECRET)}
CREQ11_OK = {1: u32(1), 2: s("Sam"), 3: u8(1), 4: feats((5, 1), (6, 1)), 5: feats((5, 1))}
CRESP11_OK = {1: u32(1), 2: u8(1), 3: u8(R["success"]), 4: feats((1, 1), (6, 1))}
SS_OK = {1: u32(1), 2: feats((1, 1), (6, 1)), 3: MEDIA, 4: s(SECRET2)}
FREQ_OK = {1: u32(1), 2: u16(F["chat"]), 3: u8(1), 4: s("May I chat?")}
FANS_OK = {1: u32(1), 2: u8(1), 3: u8(R["success"])}
FREV_OK = {1: u16(F["chat"]), 2: s("enough")}
SMSG_OK = {1: u32(1), 2: u8(3), 3: s("application/pdf"), 4: b"%PDF", 5: u32(1), 6: s("a.pdf"), 7: u64(4),
           8: u64(0)}
MACK_OK = {1: u32(1), 2: u8(R["success"]), 3: s("ok")}
RES_OK = {1: s("483920"), 2: s(SECRET), 3: u8(4), 4: u32(1), 5: u32(3)}
RES3_OK = {1: s("483920"), 2: s(SECRET), 3: u8(3), 4: u32(1), 5: u32(3), 6: feats((1, 1), (6, 1))}
RRES_OK = {1: u8(R["success"]), 2: s("resumed"), 3: s(SECRET2), 4: u32(2), 5: u32(1000)}
assert rsup.decode_stream(b"".join(frame(t, b"".join(field(k, v) for k, v in fields(base))) for t, base in (
    (HELLO_ACK, {**HELLO_ACK_OK, 7: u32(30000)}), (REGISTER_RESULT, RR_OK), (CONNECTION_REQUEST, CREQ11_OK),
    (CONNECTION_RESPONSE, CRESP11_OK), (SESSION_STARTED, SS_OK), (FEATURE_REQUEST, FREQ_OK),
    (FEATURE_ANSWER, FANS_OK), (FEATURE_REVOKE, FREV_OK), (SESSION_MESSAGE, SMSG_OK), (MESSAGE_ACK, MACK_OK),
    (RESUME, RES_OK), (RESUME_RESULT, RRES_OK))))      # the bases themselves are well-formed


def bad(name, desc, ftype, base, code, tag, **changes):
    """Malformed vector: `base` with `changes` (t<N>=bytes / None), error `code` at the tag byte of field `tag`
    (or, for missing_field, at the frame's first byte)."""
    pairs = fields(base, **changes)
    st, f0, offs = build(ftype, pairs)
    if code == "missing_field":
        M(name, desc, st, code, f0, tag)
    else:
        M(name, desc, st, code, offs[[t for t, _ in pairs].index(tag)], tag)


# --- Bytes a 1.0 decoder reads as an undefined type or an unknown tag, which 1.1 defines
M("ignorable_known_type_feature_request_garbage_payload", "type 0x19 (undefined in 1.0, FEATURE_REQUEST since 1.1) "
  "with IGNORABLE and a payload that is no field sequence, then PONG: ignorable_known_type (header check, payload "
  "not read)",
  frame(0x19, b"\xff\xff", flags=0x01) + rsup.encode(pong7), "ignorable_known_type", 1)
M("missing_field_feature_request_ask_id_only", "type 0x19 without IGNORABLE (undefined in 1.0, FEATURE_REQUEST "
  "since 1.1) holding only tag 1 (a 1-byte ask_id): feature (tag 2) is missing, reported before the value of tag 1", frame(0x19, field(1, u8(1))), "missing_field", 0, 2)
M("invalid_utf8_register_result_resume_secret_c0_af_ff", "REGISTER_RESULT reason, code_type, then tag 5 (unknown "
  "in 1.0, resume_secret since 1.1) holding C0 AF FF: validated on every connection, and not UTF-8",
  frame(REGISTER_RESULT, field(1, u8(0)) + field(4, u8(2)) + field(5, b"\xc0\xaf\xff")), "invalid_utf8",
  8 + 4 + 4, 5)
M("value_out_of_range_goaway_resume_elsewhere_0", "GOAWAY going_away, then tag 4 (unknown in 1.0, resume_elsewhere "
  "since revision 1.1.2) holding 0: the field's only value is 1", frame(GOAWAY, field(1, u8(R["going_away"])) +
  field(4, u8(0))), "value_out_of_range", 8 + 4, 4)
M("invalid_field_length_goaway_resume_elsewhere_2_bytes", "GOAWAY going_away, then tag 4 resume_elsewhere of 2 "
  "bytes (a u8)", frame(GOAWAY, field(1, u8(R["going_away"])) + field(4, b"\x01\x00")), "invalid_field_length",
  8 + 4, 4)

# --- Header (§3.3) with the 1.1 types
M("unknown_frame_type_0x20", "type 0x20 without IGNORABLE: undefined (1.1 defines 0x19-0x1f only)",
  frame(0x20, b""), "unknown_frame_type", 1)
M("ignorable_known_type_resume_result", "RESUME_RESULT (0x1f) with the IGNORABLE flag",
  frame(RESUME_RESULT, field(1, u8(0)), flags=1), "ignorable_known_type", 1)
M("ignorable_known_type_session_message", "SESSION_MESSAGE (0x1c) with the IGNORABLE flag, after a valid PING",
  PING_OK + frame(SESSION_MESSAGE, field(1, u32(1)) + field(2, u8(1)) + field(4, b"hi"), flags=1),
  "ignorable_known_type", 19 + 1)
M("truncated_payload_session_message", "a SESSION_MESSAGE header announcing 100 payload bytes, 14 present",
  header(SESSION_MESSAGE, 100) + field(1, u32(1)) + field(2, u8(1)) + field(4, b"h", length=93)[:3],
  "truncated_payload", 0)
M("frame_too_large_session_message_16385", "a SESSION_MESSAGE whose body makes the payload 16385 bytes (over the "
  "receiver's maximum: the body's 65535 is the field limit, the frame limit comes first)",
  frame(SESSION_MESSAGE, field(1, u32(1)) + field(2, u8(3)) + field(4, b"\x00" * 16371)), "frame_too_large", 4)

# --- Field layout (§4.1) in the 1.1 messages
st, f0, offs = build(SESSION_MESSAGE, [(1, u32(1)), (2, u8(1)), (4, b"a"), (4, b"b")])
M("duplicate_field_session_message_body", "SESSION_MESSAGE with tag 4 (body) twice", st, "duplicate_field",
  offs[3], 4)
st, f0, offs = build(SESSION_MESSAGE, [(1, u32(1)), (2, u8(2)), (4, b"{}"), (3, s("application/json"))])
M("field_out_of_order_session_message", "SESSION_MESSAGE with content_type (tag 3) after body (tag 4)", st,
  "field_out_of_order", offs[3], 3)
st, f0, offs = build(SESSION_STARTED, [(1, u32(1)), (4, s(SECRET)), (2, b"")])
M("field_out_of_order_session_started_1_1", "SESSION_STARTED with granted_features (tag 2) after resume_secret "
  "(tag 4)", st, "field_out_of_order", offs[2], 2)
M("truncated_field_session_message_body", "SESSION_MESSAGE body declaring 100 bytes with 10 present",
  frame(SESSION_MESSAGE, field(1, u32(1)) + field(2, u8(1)) + field(4, b"0123456789", length=100)),
  "truncated_field", 8 + 7 + 4, 4)
M("trailing_bytes_message_ack", "MESSAGE_ACK message_id and reason, then 2 stray bytes",
  frame(MESSAGE_ACK, field(1, u32(1)) + field(2, u8(0)) + b"\x03\x00"), "trailing_bytes", 8 + 7 + 4)

# --- Required fields of the 1.1 messages
M("missing_field_feature_request_empty", "FEATURE_REQUEST with an empty payload: lowest missing tag 1",
  frame(FEATURE_REQUEST, b""), "missing_field", 0, 1)
bad("missing_field_feature_request_feature", "FEATURE_REQUEST without feature (tag 2)", FEATURE_REQUEST, FREQ_OK,
    "missing_field", 2, t2=None)
bad("missing_field_feature_answer_reason", "FEATURE_ANSWER without reason (tag 3)", FEATURE_ANSWER, FANS_OK,
    "missing_field", 3, t3=None)
bad("missing_field_feature_answer_decision", "FEATURE_ANSWER without decision (tag 2)", FEATURE_ANSWER, FANS_OK,
    "missing_field", 2, t2=None)
bad("missing_field_feature_revoke_only_text", "FEATURE_REVOKE with only a text: feature (tag 1) missing",
    FEATURE_REVOKE, FREV_OK, "missing_field", 1, t1=None)
bad("missing_field_session_message_body", "SESSION_MESSAGE with every field but body (tag 4)", SESSION_MESSAGE,
    SMSG_OK, "missing_field", 4, t4=None)
bad("missing_field_session_message_kind_and_body", "SESSION_MESSAGE without kind (2) and body (4): lowest tag 2",
    SESSION_MESSAGE, SMSG_OK, "missing_field", 2, t2=None, t4=None)
bad("missing_field_session_message_id", "SESSION_MESSAGE without message_id (tag 1)", SESSION_MESSAGE, SMSG_OK,
    "missing_field", 1, t1=None)
bad("missing_field_message_ack_reason", "MESSAGE_ACK without reason (tag 2)", MESSAGE_ACK, MACK_OK,
    "missing_field", 2, t2=None)
bad("missing_field_message_ack_id", "MESSAGE_ACK without message_id (tag 1)", MESSAGE_ACK, MACK_OK,
    "missing_field", 1, t1=None)
bad("missing_field_resume_state", "RESUME without state (tag 3)", RESUME, RES_OK, "missing_field", 3, t3=None)
bad("missing_field_resume_secret", "RESUME without resume_secret (tag 2)", RESUME, RES_OK, "missing_field", 2,
    t2=None)
bad("missing_field_resume_session_code", "RESUME without session_code (tag 1)", RESUME, RES_OK, "missing_field", 1,
    t1=None)
bad("missing_field_resume_result_only_text", "RESUME_RESULT without reason (tag 1)", RESUME_RESULT, RRES_OK,
    "missing_field", 1, t1=None)
st, f0, offs = build(SESSION_MESSAGE, [(1, u32(1)), (2, u8(0))], prefix=PING_OK)
M("order_missing_before_value_session_message", "valid PING, then SESSION_MESSAGE with kind 0 and no body: "
  "missing_field (tag 4) at the second frame's first byte wins over the kind's range", st, "missing_field", 19, 4)

# --- Enumerations and ranges of the 1.1 fields
bad("value_out_of_range_feature_answer_decision_0", "FEATURE_ANSWER decision 0", FEATURE_ANSWER, FANS_OK,
    "value_out_of_range", 2, t2=u8(0))
bad("value_out_of_range_feature_answer_decision_3", "FEATURE_ANSWER decision 3", FEATURE_ANSWER, FANS_OK,
    "value_out_of_range", 2, t2=u8(3))
bad("value_out_of_range_session_message_kind_0", "SESSION_MESSAGE kind 0", SESSION_MESSAGE, SMSG_OK,
    "value_out_of_range", 2, t2=u8(0))
bad("value_out_of_range_session_message_kind_4", "SESSION_MESSAGE kind 4", SESSION_MESSAGE, SMSG_OK,
    "value_out_of_range", 2, t2=u8(4))
bad("value_out_of_range_resume_state_0", "RESUME state 0", RESUME, RES_OK, "value_out_of_range", 3, t3=u8(0))
bad("value_out_of_range_resume_state_5", "RESUME state 5", RESUME, RES_OK, "value_out_of_range", 3, t3=u8(5))
bad("value_out_of_range_feature_request_confirm_0", "FEATURE_REQUEST confirm 0 (absent means allow; present is "
    "exactly 1)", FEATURE_REQUEST, FREQ_OK, "value_out_of_range", 3, t3=u8(0))
bad("value_out_of_range_feature_request_confirm_2", "FEATURE_REQUEST confirm 2", FEATURE_REQUEST, FREQ_OK,
    "value_out_of_range", 3, t3=u8(2))
bad("value_out_of_range_feature_request_ask_id_0", "FEATURE_REQUEST ask_id 0", FEATURE_REQUEST, FREQ_OK,
    "value_out_of_range", 1, t1=u32(0))
bad("value_out_of_range_feature_answer_ask_id_0", "FEATURE_ANSWER ask_id 0", FEATURE_ANSWER, FANS_OK,
    "value_out_of_range", 1, t1=u32(0))
bad("value_out_of_range_session_message_id_0", "SESSION_MESSAGE message_id 0", SESSION_MESSAGE, SMSG_OK,
    "value_out_of_range", 1, t1=u32(0))
bad("value_out_of_range_session_message_file_size_16777217", "SESSION_MESSAGE file_size 16777217 (over the table's "
    "16 MiB; see README, readings for §15)", SESSION_MESSAGE, SMSG_OK, "value_out_of_range", 7,
    t7=u64(16777217))
bad("value_out_of_range_session_message_file_size_max", "SESSION_MESSAGE file_size 2^64-1", SESSION_MESSAGE,
    SMSG_OK, "value_out_of_range", 7, t7=u64(U64_MAX))
bad("value_out_of_range_hello_ack_resume_grace_999", "HELLO_ACK resume_grace_ms 999", HELLO_ACK,
    {**HELLO_ACK_OK, 7: u32(30000)}, "value_out_of_range", 7, t7=u32(999))
bad("value_out_of_range_hello_ack_resume_grace_600001", "HELLO_ACK resume_grace_ms 600001", HELLO_ACK,
    {**HELLO_ACK_OK, 7: u32(30000)}, "value_out_of_range", 7, t7=u32(600001))
bad("value_out_of_range_hello_ack_resume_grace_0", "HELLO_ACK resume_grace_ms 0", HELLO_ACK,
    {**HELLO_ACK_OK, 7: u32(30000)}, "value_out_of_range", 7, t7=u32(0))

# --- Integer lengths of the 1.1 fields
bad("invalid_field_length_hello_ack_resume_grace_2_bytes", "HELLO_ACK resume_grace_ms of 2 bytes", HELLO_ACK,
    {**HELLO_ACK_OK, 7: u32(30000)}, "invalid_field_length", 7, t7=u16(30000))
bad("invalid_field_length_feature_request_ask_id_3_bytes", "FEATURE_REQUEST ask_id of 3 bytes", FEATURE_REQUEST,
    FREQ_OK, "invalid_field_length", 1, t1=u32(1)[1:])
bad("invalid_field_length_feature_request_feature_1_byte", "FEATURE_REQUEST feature (u16) of 1 byte",
    FEATURE_REQUEST, FREQ_OK, "invalid_field_length", 2, t2=u8(6))
bad("invalid_field_length_feature_request_feature_4_bytes", "FEATURE_REQUEST feature (u16) of 4 bytes (a features "
    "entry is not a feature id)", FEATURE_REQUEST, FREQ_OK, "invalid_field_length", 2, t2=feats((6, 1)))
bad("invalid_field_length_feature_request_confirm_2_bytes", "FEATURE_REQUEST confirm of 2 bytes", FEATURE_REQUEST,
    FREQ_OK, "invalid_field_length", 3, t3=u16(1))
bad("invalid_field_length_feature_answer_ask_id_2_bytes", "FEATURE_ANSWER ask_id of 2 bytes", FEATURE_ANSWER,
    FANS_OK, "invalid_field_length", 1, t1=u16(1))
bad("invalid_field_length_feature_answer_decision_0_bytes", "FEATURE_ANSWER decision of 0 bytes", FEATURE_ANSWER,
    FANS_OK, "invalid_field_length", 2, t2=b"")
bad("invalid_field_length_feature_answer_reason_2_bytes", "FEATURE_ANSWER reason of 2 bytes", FEATURE_ANSWER,
    FANS_OK, "invalid_field_length", 3, t3=b"\x00\x08")
bad("invalid_field_length_feature_revoke_feature_3_bytes", "FEATURE_REVOKE feature (u16) of 3 bytes",
    FEATURE_REVOKE, FREV_OK, "invalid_field_length", 1, t1=b"\x00\x00\x06")
bad("invalid_field_length_session_message_id_5_bytes", "SESSION_MESSAGE message_id of 5 bytes", SESSION_MESSAGE,
    SMSG_OK, "invalid_field_length", 1, t1=u32(1) + b"\x00")
bad("invalid_field_length_session_message_kind_2_bytes", "SESSION_MESSAGE kind of 2 bytes", SESSION_MESSAGE,
    SMSG_OK, "invalid_field_length", 2, t2=u16(3))
bad("invalid_field_length_session_message_transfer_id_2_bytes", "SESSION_MESSAGE transfer_id of 2 bytes",
    SESSION_MESSAGE, SMSG_OK, "invalid_field_length", 5, t5=u16(1))
bad("invalid_field_length_session_message_file_size_7_bytes", "SESSION_MESSAGE file_size (u64) of 7 bytes",
    SESSION_MESSAGE, SMSG_OK, "invalid_field_length", 7, t7=u64(4)[1:])
bad("invalid_field_length_session_message_offset_9_bytes", "SESSION_MESSAGE offset (u64) of 9 bytes",
    SESSION_MESSAGE, SMSG_OK, "invalid_field_length", 8, t8=b"\x00" + u64(0))
bad("invalid_field_length_session_message_offset_4_bytes", "SESSION_MESSAGE offset (u64) of 4 bytes",
    SESSION_MESSAGE, SMSG_OK, "invalid_field_length", 8, t8=u32(0))
bad("invalid_field_length_message_ack_id_8_bytes", "MESSAGE_ACK message_id of 8 bytes", MESSAGE_ACK, MACK_OK,
    "invalid_field_length", 1, t1=u64(1))
bad("invalid_field_length_message_ack_reason_0_bytes", "MESSAGE_ACK reason of 0 bytes", MESSAGE_ACK, MACK_OK,
    "invalid_field_length", 2, t2=b"")
bad("invalid_field_length_resume_state_2_bytes", "RESUME state of 2 bytes", RESUME, RES_OK,
    "invalid_field_length", 3, t3=u16(4))
bad("invalid_field_length_resume_request_id_3_bytes", "RESUME request_id of 3 bytes", RESUME, RES_OK,
    "invalid_field_length", 4, t4=u32(1)[1:])
bad("invalid_field_length_resume_last_message_id_8_bytes", "RESUME last_message_id of 8 bytes", RESUME, RES_OK,
    "invalid_field_length", 5, t5=u64(3))
bad("invalid_field_length_resume_result_reason_2_bytes", "RESUME_RESULT reason of 2 bytes", RESUME_RESULT,
    RRES_OK, "invalid_field_length", 1, t1=b"\x00\x91")
bad("invalid_field_length_resume_result_last_message_id_1_byte", "RESUME_RESULT last_message_id of 1 byte",
    RESUME_RESULT, RRES_OK, "invalid_field_length", 4, t4=u8(2))
bad("invalid_field_length_resume_result_retry_after_3_bytes", "RESUME_RESULT retry_after_ms of 3 bytes",
    RESUME_RESULT, RRES_OK, "invalid_field_length", 5, t5=u32(1000)[1:])

# --- bytes values (§15.2): empty -> string_empty, over the maximum -> string_too_long
bad("string_empty_session_started_media_descriptor", "SESSION_STARTED with an empty media_descriptor (bytes)",
    SESSION_STARTED, SS_OK, "string_empty", 3, t3=b"")
bad("string_too_long_session_started_media_descriptor_4097", "SESSION_STARTED media_descriptor of 4097 bytes",
    SESSION_STARTED, SS_OK, "string_too_long", 3, t3=b"\x00" * 4097)
bad("string_empty_session_message_body", "SESSION_MESSAGE with an empty body (bytes, required)", SESSION_MESSAGE,
    SMSG_OK, "string_empty", 4, t4=b"")
st, f0, offs = build(SESSION_MESSAGE, [(1, u32(1)), (2, u8(1)), (4, b"")])
M("string_empty_session_message_chat_body", "SESSION_MESSAGE chat with only message_id, kind and an empty body", st,
  "string_empty", offs[2], 4)

# --- Strings of the 1.1 fields: empty
bad("string_empty_register_result_resume_secret", "REGISTER_RESULT with an empty resume_secret", REGISTER_RESULT,
    RR_OK, "string_empty", 5, t5=b"")
bad("string_empty_session_started_resume_secret", "SESSION_STARTED with an empty resume_secret", SESSION_STARTED,
    SS_OK, "string_empty", 4, t4=b"")
bad("string_empty_feature_request_text", "FEATURE_REQUEST with an empty text", FEATURE_REQUEST, FREQ_OK,
    "string_empty", 4, t4=b"")
bad("string_empty_feature_revoke_text", "FEATURE_REVOKE with an empty text", FEATURE_REVOKE, FREV_OK,
    "string_empty", 2, t2=b"")
bad("string_empty_session_message_content_type", "SESSION_MESSAGE with an empty content_type", SESSION_MESSAGE,
    SMSG_OK, "string_empty", 3, t3=b"")
bad("string_empty_session_message_file_name", "SESSION_MESSAGE with an empty file_name", SESSION_MESSAGE, SMSG_OK,
    "string_empty", 6, t6=b"")
bad("string_empty_message_ack_text", "MESSAGE_ACK with an empty text", MESSAGE_ACK, MACK_OK, "string_empty", 3,
    t3=b"")
bad("string_empty_resume_session_code", "RESUME with an empty session_code", RESUME, RES_OK, "string_empty", 1,
    t1=b"")
bad("string_empty_resume_resume_secret", "RESUME with an empty resume_secret", RESUME, RES_OK, "string_empty", 2,
    t2=b"")
bad("string_empty_resume_result_text", "RESUME_RESULT with an empty text", RESUME_RESULT, RRES_OK, "string_empty",
    2, t2=b"")
bad("string_empty_resume_result_resume_secret", "RESUME_RESULT with an empty resume_secret", RESUME_RESULT, RRES_OK,
    "string_empty", 3, t3=b"")

# --- Strings of the 1.1 fields: over the maximum
bad("string_too_long_register_result_resume_secret_65", "REGISTER_RESULT resume_secret of 65 bytes",
    REGISTER_RESULT, RR_OK, "string_too_long", 5, t5=b"s" * 65)
bad("string_too_long_session_started_resume_secret_65", "SESSION_STARTED resume_secret of 65 bytes",
    SESSION_STARTED, SS_OK, "string_too_long", 4, t4=b"s" * 65)
bad("string_too_long_feature_request_text_257", "FEATURE_REQUEST text of 257 bytes", FEATURE_REQUEST, FREQ_OK,
    "string_too_long", 4, t4=b"t" * 257)
bad("string_too_long_feature_revoke_text_257", "FEATURE_REVOKE text of 257 bytes", FEATURE_REVOKE, FREV_OK,
    "string_too_long", 2, t2=b"t" * 257)
bad("string_too_long_session_message_content_type_129", "SESSION_MESSAGE content_type of 129 bytes",
    SESSION_MESSAGE, SMSG_OK, "string_too_long", 3, t3=b"application/" + b"x" * 117)
bad("string_too_long_session_message_file_name_256", "SESSION_MESSAGE file_name of 256 bytes", SESSION_MESSAGE,
    SMSG_OK, "string_too_long", 6, t6=b"f" * 252 + b".pdf")
bad("string_too_long_message_ack_text_257", "MESSAGE_ACK text of 257 bytes", MESSAGE_ACK, MACK_OK,
    "string_too_long", 3, t3=b"t" * 257)
bad("string_too_long_resume_session_code_65", "RESUME session_code of 65 bytes", RESUME, RES_OK, "string_too_long",
    1, t1=b"1" * 65)
bad("string_too_long_resume_resume_secret_65", "RESUME resume_secret of 65 bytes", RESUME, RES_OK,
    "string_too_long", 2, t2=b"s" * 65)
bad("string_too_long_resume_result_text_257", "RESUME_RESULT text of 257 bytes", RESUME_RESULT, RRES_OK,
    "string_too_long", 2, t2=b"t" * 257)
bad("string_too_long_resume_result_resume_secret_65", "RESUME_RESULT resume_secret of 65 bytes (21 x 3-byte "
    "character + 2 bytes: the limit is in bytes)", RESUME_RESULT, RRES_OK, "string_too_long", 3,
    t3=s("\u20ac" * 21 + "ab"))
bad("order_length_before_utf8_file_name", "SESSION_MESSAGE file_name of 256 bytes that are also not UTF-8: length "
    "is checked first", SESSION_MESSAGE, SMSG_OK, "string_too_long", 6, t6=b"\xff" * 256)

# --- Strings of the 1.1 fields: not UTF-8
bad("invalid_utf8_session_message_content_type", "SESSION_MESSAGE content_type with overlong C0 AF",
    SESSION_MESSAGE, SMSG_OK, "invalid_utf8", 3, t3=b"text\xc0\xafplain")
bad("invalid_utf8_session_message_file_name", "SESSION_MESSAGE file_name with the encoded surrogate U+DC00 "
    "(ED B0 80)", SESSION_MESSAGE, SMSG_OK, "invalid_utf8", 6, t6=b"a\xed\xb0\x80.pdf")
bad("invalid_utf8_session_message_file_name_truncated", "SESSION_MESSAGE file_name ending in F0 9F 9B (an "
    "incomplete 4-byte sequence)", SESSION_MESSAGE, SMSG_OK, "invalid_utf8", 6, t6=b"tool\xf0\x9f\x9b")
bad("invalid_utf8_session_started_resume_secret", "SESSION_STARTED resume_secret with byte 0x80",
    SESSION_STARTED, SS_OK, "invalid_utf8", 4, t4=b"\x80" + s(SECRET)[1:])
bad("invalid_utf8_register_result_resume_secret_ff", "REGISTER_RESULT resume_secret with byte 0xFF",
    REGISTER_RESULT, RR_OK, "invalid_utf8", 5, t5=s(SECRET)[:-1] + b"\xff")
bad("invalid_utf8_resume_session_code", "RESUME session_code with F4 90 80 80 (U+110000)", RESUME, RES_OK,
    "invalid_utf8", 1, t1=b"48\xf4\x90\x80\x80")
bad("invalid_utf8_resume_resume_secret", "RESUME resume_secret with overlong E0 80 AF", RESUME, RES_OK,
    "invalid_utf8", 2, t2=b"\xe0\x80\xaf" + s(SECRET)[3:])
bad("invalid_utf8_resume_result_resume_secret", "RESUME_RESULT resume_secret with byte F5", RESUME_RESULT, RRES_OK,
    "invalid_utf8", 3, t3=b"\xf5" + s(SECRET2)[1:])
bad("invalid_utf8_resume_result_text", "RESUME_RESULT text with a lone continuation byte", RESUME_RESULT, RRES_OK,
    "invalid_utf8", 2, t2=b"re\x80sumed")
bad("invalid_utf8_feature_request_text", "FEATURE_REQUEST text with C1 BF", FEATURE_REQUEST, FREQ_OK,
    "invalid_utf8", 4, t4=b"\xc1\xbf")
bad("invalid_utf8_feature_revoke_text", "FEATURE_REVOKE text with the encoded surrogate U+D800", FEATURE_REVOKE,
    FREV_OK, "invalid_utf8", 2, t2=b"\xed\xa0\x80")
bad("invalid_utf8_message_ack_text", "MESSAGE_ACK text with byte 0xFE", MESSAGE_ACK, MACK_OK, "invalid_utf8", 3,
    t3=b"\xfe")

# --- features values of the 1.1 fields
bad("invalid_field_length_confirm_features_6_bytes", "CONNECTION_REQUEST confirm_features of 6 bytes",
    CONNECTION_REQUEST, CREQ11_OK, "invalid_field_length", 5, t5=feats((5, 1)) + b"\x00\x06")
pairs = fields(CREQ11_OK, t5=feats((5, 1), (5, 1)))
st, f0, offs = build(CONNECTION_REQUEST, pairs)
M("duplicate_feature_confirm_features", "CONNECTION_REQUEST confirm_features with id 5 twice: offset of the second "
  "entry", st, "duplicate_feature", offs[4] + 3 + 4, 5)
pairs = fields(CREQ11_OK, t5=feats((6, 1), (5, 1)))
st, f0, offs = build(CONNECTION_REQUEST, pairs)
M("feature_out_of_order_confirm_features", "CONNECTION_REQUEST confirm_features 6 then 5", st,
  "feature_out_of_order", offs[4] + 3 + 4, 5)
pairs = fields(CREQ11_OK, t5=feats((5, 0)))
st, f0, offs = build(CONNECTION_REQUEST, pairs)
M("value_out_of_range_confirm_features_version_0", "CONNECTION_REQUEST confirm_features entry (5, version 0)", st,
  "value_out_of_range", offs[4] + 3, 5)
pairs = fields(CREQ11_OK, t4=feats((6, 1), (5, 1)), t5=feats((5, 1), (5, 1)))
st, f0, offs = build(CONNECTION_REQUEST, pairs)
M("order_requested_features_before_confirm_features", "CONNECTION_REQUEST with out-of-order requested_features "
  "(tag 4) and a duplicate in confirm_features (tag 5): tag 4 reported", st, "feature_out_of_order",
  offs[3] + 3 + 4, 4)
bad("invalid_field_length_connection_response_granted_features_3_bytes", "CONNECTION_RESPONSE granted_features of "
    "3 bytes", CONNECTION_RESPONSE, CRESP11_OK, "invalid_field_length", 4, t4=b"\x00\x01\x00")
pairs = fields(CRESP11_OK, t4=feats((1, 1), (6, 1), (6, 2)))
st, f0, offs = build(CONNECTION_RESPONSE, pairs)
M("duplicate_feature_connection_response_granted_features", "CONNECTION_RESPONSE granted_features (1,1),(6,1),(6,2):"
  " offset of the third entry", st, "duplicate_feature", offs[3] + 3 + 8, 4)
bad("invalid_field_length_session_started_granted_features_2_bytes", "SESSION_STARTED granted_features of 2 bytes",
    SESSION_STARTED, SS_OK, "invalid_field_length", 2, t2=b"\x00\x06")
pairs = fields(SS_OK, t2=feats((6, 1), (1, 1)))
st, f0, offs = build(SESSION_STARTED, pairs)
M("feature_out_of_order_session_started_granted_features", "SESSION_STARTED granted_features 6 then 1", st,
  "feature_out_of_order", offs[1] + 3 + 4, 2)
bad("invalid_field_length_resume_granted_features_5_bytes", "RESUME granted_features of 5 bytes",
    RESUME, RES3_OK, "invalid_field_length", 6, t6=b"\x00\x01\x00\x01\x00")
pairs = fields(RES3_OK, t6=feats((6, 1), (1, 1)))
st, f0, offs = build(RESUME, pairs)
M("feature_out_of_order_resume_granted_features", "RESUME granted_features 6 then 1", st,
  "feature_out_of_order", offs[5] + 3 + 4, 6)
pairs = fields(SS_OK, t2=feats((1, 1), (6, 0)))
st, f0, offs = build(SESSION_STARTED, pairs)
M("value_out_of_range_session_started_granted_features_version_0", "SESSION_STARTED granted_features: second entry "
  "has version 0", st, "value_out_of_range", offs[1] + 3 + 4, 2)

# --- Values in ascending tag order (§4.1) within the 1.1 messages
bad("order_values_session_started_media_before_secret", "SESSION_STARTED with an empty media_descriptor (tag 3) and "
    "a 65-byte resume_secret (tag 4): tag 3 reported", SESSION_STARTED, SS_OK, "string_empty", 3, t3=b"",
    t4=b"s" * 65)
bad("order_values_session_message_kind_before_content_type", "SESSION_MESSAGE with kind 4 (tag 2) and an empty "
    "content_type (tag 3): tag 2 reported", SESSION_MESSAGE, SMSG_OK, "value_out_of_range", 2, t2=u8(4), t3=b"")
bad("order_values_session_message_body_before_file_size", "SESSION_MESSAGE with an empty body (tag 4) and a 7-byte "
    "file_size (tag 7): tag 4 reported", SESSION_MESSAGE, SMSG_OK, "string_empty", 4, t4=b"", t7=u64(4)[1:])
bad("order_values_resume_state_before_request_id", "RESUME with state 0 (tag 3) and a 3-byte request_id (tag 4): "
    "tag 3 reported", RESUME, RES_OK, "value_out_of_range", 3, t3=u8(0), t4=u32(1)[1:])
bad("order_values_hello_ack_old_field_before_resume_grace", "HELLO_ACK with keepalive_ms 99 (tag 5) and "
    "resume_grace_ms 999 (tag 7): tag 5 reported", HELLO_ACK, {**HELLO_ACK_OK, 7: u32(30000)},
    "value_out_of_range", 5, t5=u32(99), t7=u32(999))

# --- Errors behind valid 1.1 frames
SM1 = rsup.encode(smsg(message_id=1, body=hx(b"hi")))
st, f0, offs = build(MESSAGE_ACK, [(1, u32(1)[1:]), (2, u8(0))], prefix=SM1)
M("invalid_field_length_message_ack_after_session_message", "a valid SESSION_MESSAGE, then a MESSAGE_ACK whose "
  "message_id has 3 bytes: offset counts from the stream start", st, "invalid_field_length", len(SM1) + 8, 1)
assert offs[0] == len(SM1) + 8
RES1 = rsup.encode({"type": "RESUME", "session_code": "483920", "resume_secret": SECRET, "state": 1})
st, f0, offs = build(RESUME_RESULT, [(1, u8(R["success"])), (3, b"")], prefix=rsup.encode(hello(features=ALL_EXT))
                     + RES1)
M("string_empty_resume_result_after_hello_and_resume", "HELLO and RESUME, then a RESUME_RESULT success with an "
  "empty resume_secret", st, "string_empty", offs[1], 3)

# ------------------------------------------------------------------------------------------------------------
# Revision 1.2.0 (SPEC §15.3: FEATURE_WITHDRAW 0x21): malformed vectors, appended so that every earlier line stays
# identical
# ------------------------------------------------------------------------------------------------------------
MALFORMED_1_1_COUNT = len(malformed)

FWD_OK = {1: u32(1)}
assert rsup.decode_stream(frame(FEATURE_WITHDRAW, field(1, u32(1)))) == [{"type": "FEATURE_WITHDRAW", "ask_id": 1}]

# --- Header (§3.3): 0x21 is defined since 1.2.0, 0x20 and 0x22 are not
M("ignorable_known_type_feature_withdraw", "FEATURE_WITHDRAW (0x21, defined since revision 1.2.0) with the "
  "IGNORABLE flag: ignorable_known_type (a decoder of revision 1.1.x, to which 0x21 is undefined, discards it)",
  frame(FEATURE_WITHDRAW, field(1, u32(1)), flags=0x01), "ignorable_known_type", 1)
M("ignorable_known_type_feature_withdraw_after_ping", "a valid PING, then FEATURE_WITHDRAW with the IGNORABLE "
  "flag and a payload that is no field sequence (not read: the header check comes first)",
  PING_OK + frame(FEATURE_WITHDRAW, b"\xff\xff", flags=0x01), "ignorable_known_type", 19 + 1)
M("unknown_frame_type_0x22", "type 0x22 without IGNORABLE: undefined (revision 1.2.0 defines 0x21; 0x20 and 0x22 "
  "stay undefined)", frame(0x22, field(1, u32(1))), "unknown_frame_type", 1)

# --- Required field, range, length, layout
M("missing_field_feature_withdraw_empty", "FEATURE_WITHDRAW with an empty payload: ask_id (tag 1) missing",
  frame(FEATURE_WITHDRAW, b""), "missing_field", 0, 1)
st, f0, offs = build(FEATURE_WITHDRAW, [(2, u32(1))], prefix=PING_OK)
M("missing_field_feature_withdraw_only_unknown_tag", "a valid PING, then FEATURE_WITHDRAW holding only an unknown "
  "tag 2: ask_id (tag 1) missing, at the second frame's first byte", st, "missing_field", 19, 1)
bad("value_out_of_range_feature_withdraw_ask_id_0", "FEATURE_WITHDRAW ask_id 0 (the range is 1-4294967295)",
    FEATURE_WITHDRAW, FWD_OK, "value_out_of_range", 1, t1=u32(0))
bad("invalid_field_length_feature_withdraw_ask_id_2_bytes", "FEATURE_WITHDRAW ask_id (u32) of 2 bytes",
    FEATURE_WITHDRAW, FWD_OK, "invalid_field_length", 1, t1=u16(1))
bad("invalid_field_length_feature_withdraw_ask_id_8_bytes", "FEATURE_WITHDRAW ask_id (u32) of 8 bytes",
    FEATURE_WITHDRAW, FWD_OK, "invalid_field_length", 1, t1=u64(1))
st, f0, offs = build(FEATURE_WITHDRAW, [(1, u32(1)), (1, u32(2))])
M("duplicate_field_feature_withdraw_ask_id", "FEATURE_WITHDRAW with tag 1 (ask_id) twice", st, "duplicate_field",
  offs[1], 1)
st, f0, offs = build(FEATURE_WITHDRAW, [(2, b"x"), (1, u32(1))])
M("field_out_of_order_feature_withdraw", "FEATURE_WITHDRAW with an unknown tag 2, then ask_id (tag 1)", st,
  "field_out_of_order", offs[1], 1)
M("truncated_field_feature_withdraw_ask_id", "FEATURE_WITHDRAW ask_id declaring 4 bytes with 2 present",
  frame(FEATURE_WITHDRAW, field(1, b"\x00\x01", length=4)), "truncated_field", 8, 1)
M("trailing_bytes_feature_withdraw", "FEATURE_WITHDRAW ask_id, then 1 stray byte",
  frame(FEATURE_WITHDRAW, field(1, u32(1)) + b"\x02"), "trailing_bytes", 8 + 7)
FR1 = rsup.encode({"type": "FEATURE_REQUEST", "ask_id": 1, "feature": F["chat"]})
st, f0, offs = build(FEATURE_WITHDRAW, [(1, u32(0))], prefix=FR1)
M("value_out_of_range_feature_withdraw_after_feature_request", "a valid FEATURE_REQUEST (ask 1), then a "
  "FEATURE_WITHDRAW with ask_id 0: offset counts from the stream start", st, "value_out_of_range", len(FR1) + 8, 1)
assert offs[0] == len(FR1) + 8

# ------------------------------------------------------------------------------------------------------------
# GOAWAY answers (SPEC §10.1): for every malformed vector, the one GOAWAY frame a receiver sends
# ------------------------------------------------------------------------------------------------------------

goaways = []


def goaway_for(error):
    """The GOAWAY of SPEC §10.1 for an error object of malformed.jsonl: reason frame_too_large for that error and
    malformed_frame for every other; text `<name> offset <offset>`, then ` field <tag>` for the errors with a tag."""
    reason = R["frame_too_large"] if error["code"] == "frame_too_large" else R["malformed_frame"]
    text = f"{error['code']} offset {error['offset']}"
    if "field" in error:
        text += f" field {error['field']}"
    return {"type": "GOAWAY", "reason": reason, "text": text}


for m in malformed:
    g = goaway_for(m["error"])
    goaways.append({"name": f"goaway_for_{m['name']}", "description": f"the GOAWAY a receiver sends after "
                    f"malformed vector {m['name']}", "malformed": m["name"], "hex": rsup.encode(g).hex(),
                    "message": g})

# ------------------------------------------------------------------------------------------------------------
# Self-check
# ------------------------------------------------------------------------------------------------------------

def _outcome(data, **kw):
    try:
        return ("messages", json.loads(json.dumps(rsup.decode_stream(data, **kw))))
    except DecodeError as e:
        return ("error", e.as_dict())


def _tag_order_ok(msg):
    """Keys of a message object: `type`, then field names in ascending tag order."""
    specs = rsup.MESSAGES[rsup.TYPE_BY_NAME[msg["type"]]][1]
    order = {s[1]: s[0] for s in specs}
    keys = list(msg)
    return keys[0] == "type" and all(k in order for k in keys[1:]) and \
        [order[k] for k in keys[1:]] == sorted(order[k] for k in keys[1:])


def self_check():
    problems = []
    # --- every 1.0.1 vector gives its result with the 1.0 codec too (the 1.1 codec is checked below)
    for r in valid[:OLD_VALID_COUNT] + malformed[:OLD_MALFORMED_COUNT]:
        data = bytes.fromhex(r["hex"])
        want = ("messages", r["messages"]) if "messages" in r else ("error", r["error"])
        if _outcome(data, revision="1.0") != want:
            problems.append(f"1.0 vector {r['name']}: the 1.0 codec gives {_outcome(data, revision='1.0')}")
    # --- every vector before revision 1.2.0 gives its result with a 1.1.x codec too (0x21 undefined there)
    for r in valid[:VALID_1_1_COUNT] + malformed[:MALFORMED_1_1_COUNT]:
        data = bytes.fromhex(r["hex"])
        want = ("messages", r["messages"]) if "messages" in r else ("error", r["error"])
        if _outcome(data, revision="1.1") != want:
            problems.append(f"1.1 vector {r['name']}: the 1.1 codec gives {_outcome(data, revision='1.1')}")
    # message objects: keys in tag order
    for v in valid:
        for msg in v["messages"]:
            if not _tag_order_ok(msg):
                problems.append(f"valid {v['name']}: keys not in tag order: {list(msg)}")
    names = [v["name"] for v in valid] + [m["name"] for m in malformed] + [g["name"] for g in goaways]
    for n in names:
        if not re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+)*", n):
            problems.append(f"name not snake_case: {n}")
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        problems.append(f"duplicate names: {sorted(dup)}")
    for v in valid:
        data = bytes.fromhex(v["hex"])
        try:
            got = rsup.decode_stream(data)
        except DecodeError as e:
            problems.append(f"valid {v['name']}: decode failed: {e}")
            continue
        # compare through JSON so that the file content is what is checked
        if json.loads(json.dumps(got)) != json.loads(json.dumps(v["messages"])):
            problems.append(f"valid {v['name']}: decoded {got!r} != {v['messages']!r}")
        if v["canonical"]:
            if len(v["messages"]) != 1:
                problems.append(f"valid {v['name']}: canonical vector must hold one message")
            elif rsup.encode(v["messages"][0]).hex() != v["hex"]:
                problems.append(f"valid {v['name']}: encode does not give hex")
        else:
            # a decode-only stream must really differ from the canonical encoding of its messages
            canon = b"".join(rsup.encode(m) for m in v["messages"])
            if canon == data and len(v["messages"]) == 1:
                problems.append(f"valid {v['name']}: is canonical; mark it so")
    for m in malformed:
        data = bytes.fromhex(m["hex"])
        try:
            got = rsup.decode_stream(data, max_payload=16384)
            problems.append(f"malformed {m['name']}: decoded without error: {got!r}")
        except DecodeError as e:
            if e.as_dict() != m["error"]:
                problems.append(f"malformed {m['name']}: got {e.as_dict()} expected {m['error']}")
    by_name = {m["name"]: m for m in malformed}
    if [g["malformed"] for g in goaways] != [m["name"] for m in malformed]:
        problems.append("goaway.jsonl does not follow malformed.jsonl one to one")
    for g in goaways:
        data = bytes.fromhex(g["hex"])
        text = g["message"]["text"]
        if not (text.isascii() and 1 <= len(text.encode()) <= 256):
            problems.append(f"goaway {g['name']}: text not 1-256 ASCII bytes")
        if not re.fullmatch(r"[a-z0-9_]+ offset (0|[1-9][0-9]*)( field (0|[1-9][0-9]*))?", text):
            problems.append(f"goaway {g['name']}: text does not follow SPEC §10.1: {text!r}")
        err = by_name.get(g["malformed"], {}).get("error", {})
        if text.split(" ")[0] != err.get("code"):
            problems.append(f"goaway {g['name']}: text names another error")
        try:
            if rsup.decode_stream(data) != [g["message"]]:
                problems.append(f"goaway {g['name']}: hex does not decode to its message")
        except DecodeError as e:
            problems.append(f"goaway {g['name']}: does not decode: {e}")
    covered = {m["error"]["code"] for m in malformed}
    missing = set(rsup.ERROR_NAMES) - covered
    if missing:
        problems.append(f"error codes without a malformed vector: {sorted(missing)}")
    msg_types = {msg["type"] for v in valid for msg in v["messages"]}
    if msg_types != set(rsup.TYPE_BY_NAME):
        problems.append(f"message types without a valid vector: {sorted(set(rsup.TYPE_BY_NAME) - msg_types)}")
    # every optional field appears in some canonical vector; some vector per type has only required fields
    for t, (tname, specs) in rsup.MESSAGES.items():
        canon = [v["messages"][0] for v in valid if v["canonical"] and v["messages"][0]["type"] == tname]
        req = {s[1] for s in specs if s[3]}
        if not any(set(mm) - {"type"} == req for mm in canon):
            problems.append(f"{tname}: no minimal canonical vector")
        if not any(set(mm) - {"type"} == {s[1] for s in specs} for mm in canon):
            problems.append(f"{tname}: no full canonical vector")
    if len(malformed) < 45:
        problems.append("fewer than 45 malformed vectors")
    # the encoder refuses invalid messages
    for bad in ({"type": "PING"}, {"type": "PING", "nonce": 7}, {"type": "PING", "nonce": str(1 << 64)},
                {"type": "GOAWAY", "reason": 1, "text": ""}, {"type": "VOIP_STATE", "state": 5},
                {"type": "HELLO", **{k: v for k, v in hello(min_version=2, max_version=1).items() if k != "type"}},
                {"type": "NOPE"}, {"type": "PING", "nonce": "1", "extra": 1},
                # revision 1.1
                {"type": "SESSION_STARTED", "request_id": 1, "media_descriptor": "FF"},
                {"type": "SESSION_STARTED", "request_id": 1, "media_descriptor": "f"},
                {"type": "SESSION_STARTED", "request_id": 1, "media_descriptor": ""},
                {"type": "SESSION_STARTED", "request_id": 1, "media_descriptor": "00" * 4097},
                {"type": "SESSION_STARTED", "request_id": 1, "media_descriptor": b"\x00"},
                {"type": "SESSION_STARTED", "request_id": 1, "resume_secret": "s" * 65},
                {"type": "SESSION_MESSAGE", "message_id": 1, "kind": 1},
                {"type": "SESSION_MESSAGE", "message_id": 1, "kind": 4, "body": "00"},
                {"type": "SESSION_MESSAGE", "message_id": 1, "kind": 3, "body": "00", "file_size": "16777217"},
                {"type": "SESSION_MESSAGE", "message_id": 1, "kind": 3, "body": "00", "offset": 0},
                {"type": "FEATURE_REQUEST", "ask_id": 1, "feature": 6, "confirm": 2},
                {"type": "FEATURE_ANSWER", "ask_id": 1, "decision": 3, "reason": 0},
                {"type": "RESUME", "session_code": "1", "resume_secret": "s", "state": 5},
                {"type": "HELLO_ACK", **{k: v for k, v in hello_ack(resume_grace_ms=999).items() if k != "type"}},
                {"type": "CONNECTION_REQUEST", "request_id": 1, "supporter_name": "S", "connection_type": 1,
                 "requested_features": [], "confirm_features": [[5, 1], [5, 1]]},
                # revision 1.2.0
                {"type": "FEATURE_WITHDRAW"}, {"type": "FEATURE_WITHDRAW", "ask_id": 0},
                {"type": "FEATURE_WITHDRAW", "ask_id": 1 << 32}, {"type": "FEATURE_WITHDRAW", "ask_id": "1"},
                {"type": "FEATURE_WITHDRAW", "ask_id": 1, "feature": 6}):
        try:
            rsup.encode(bad)
            problems.append(f"encode accepted an invalid message: {bad!r}")
        except ValueError:
            pass
    return problems


def dump(path, rows):
    text = "".join(json.dumps(r, ensure_ascii=True) + "\n" for r in rows)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def main():
    problems = self_check()
    if problems:
        for p in problems:
            print("SELF-CHECK FAILED:", p, file=sys.stderr)
        return 1
    dump(os.path.join(HERE, "valid.jsonl"), valid)
    dump(os.path.join(HERE, "malformed.jsonl"), malformed)
    dump(os.path.join(HERE, "goaway.jsonl"), goaways)
    codes = sorted({m["error"]["code"] for m in malformed})
    print(f"valid.jsonl: {len(valid)} vectors ({sum(v['canonical'] for v in valid)} canonical, "
          f"{sum(not v['canonical'] for v in valid)} decode-only)")
    print(f"malformed.jsonl: {len(malformed)} vectors covering {len(codes)} error codes")
    print(f"goaway.jsonl: {len(goaways)} GOAWAY answers")
    print("self-check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
