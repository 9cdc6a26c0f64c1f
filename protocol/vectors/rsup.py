"""Independent reference codec for the RemoteSupport signalling protocol, version 1, document revision 1.2.0.

Written from protocol/SPEC.md alone (sections 3, 4, 5, 6, 10.1 and 15). Python 3.11, standard library only.

Public API
----------
encode(message) -> bytes
    Canonical encoding of one message dict as one frame (header + payload). Fields are written in
    ascending tag order, absent optional fields are omitted, flags and the reserved byte are 0.
    Raises ValueError if the message is not a valid version-1 message.

decode_stream(data, max_payload=16384, revision="1.2") -> list[dict]
    Decodes a complete byte stream (that ends after `data`) into message dicts. Frames of undefined
    types carrying the IGNORABLE flag are discarded. Raises DecodeError(code, offset, field) on the
    first decoding error (SPEC §10.1); offsets count from the first byte of `data`.

    revision="1.2" (the default) is the stateless codec of revision 1.2.0: it knows the frame types
    0x19-0x1F and 0x21 and every field of SPEC §15, and decodes and validates them on every connection,
    whatever extensions it negotiated (SPEC §15.1: negotiation, and ignoring a §15 field or refusing a §15
    frame whose extension is not in effect, are the session layer's business, not decoding errors).
    revision="1.1" is a node of revision 1.1.x (up to 1.1.2) written before 1.2.0: as "1.2", except
    that 0x21 (FEATURE_WITHDRAW) is an undefined type; 0x20 is undefined in every revision.
    revision="1.0" is a 1.0.1 node: §15 frame types are undefined and §15 fields are unknown tags.

Message dicts: {"type": "HELLO", "<field name>": value, ...}. u8/u16/u32 and reason values are ints,
u64 values (PING/PONG nonce, SESSION_MESSAGE file_size and offset) are strings of decimal digits,
strings are str, bytes values (SESSION_STARTED media_descriptor, SESSION_MESSAGE body) are strings of
lowercase hex digits, features are lists of [id, version] pairs. Absent optional fields are not in the
dict.

Low-level helpers used to build hand-made (non-canonical or malformed) streams: header(), frame(),
field().
"""

from __future__ import annotations

import re
import struct

__all__ = [
    "DecodeError", "encode", "decode_stream", "header", "frame", "field",
    "MESSAGES", "TYPE_BY_NAME", "REASONS", "FEATURES", "DEFAULT_MAX_PAYLOAD",
    "MIN_MAX_PAYLOAD", "MAX_MAX_PAYLOAD", "FLAG_IGNORABLE", "EXTENSIONS", "EXTENSION_TYPES",
    "EXTENSION_FIELDS", "REVISIONS", "REVISION_1_2_TYPES",
]

DEFAULT_MAX_PAYLOAD = 16384          # §3.2
MIN_MAX_PAYLOAD = 16384              # §5.1 max_frame_size lower bound
MAX_MAX_PAYLOAD = 1048576            # §5.1 max_frame_size upper bound
FRAME_VERSION = 0x01                 # §3.1
FLAG_IGNORABLE = 0x01                # §3.1
HEADER_SIZE = 8
FIELD_HEADER_SIZE = 3                # §4.1: tag u8 + length u16
U32_MAX = 0xFFFFFFFF
U64_MAX = 0xFFFFFFFFFFFFFFFF

# §10.1 error names
ERROR_NAMES = (
    "truncated_header", "truncated_payload", "unsupported_frame_version", "reserved_flags",
    "reserved_byte", "frame_too_large", "ignorable_known_type", "unknown_frame_type",
    "trailing_bytes", "truncated_field", "duplicate_field", "field_out_of_order", "missing_field",
    "invalid_field_length", "value_out_of_range", "string_empty", "string_too_long",
    "invalid_utf8", "duplicate_feature", "feature_out_of_order",
)

# §6 reason codes (informative here: the codec accepts and keeps every byte value)
REASONS = {
    "success": 0x00, "normal_close": 0x01, "ended_by_supporter": 0x02, "ended_by_device": 0x03,
    "rejected_by_user": 0x04, "aborted_by_supporter": 0x05, "request_timed_out": 0x06,
    "going_away": 0x07, "unspecified_error": 0x80, "malformed_frame": 0x81,
    "protocol_error": 0x82, "unsupported_version": 0x83, "frame_too_large": 0x84,
    "role_mismatch": 0x85, "keepalive_timeout": 0x86, "internal_error": 0x87,
    "invalid_session_code": 0x88, "invalid_api_token": 0x89, "session_code_expired": 0x8A,
    "session_code_closed": 0x8B, "session_code_in_use": 0x8C, "rate_limited": 0x8D,
    "unsupported_feature": 0x8E, "feature_version_mismatch": 0x8F, "connection_lost": 0x90,
    # §15.2 (revision 1.1)
    "feature_denied": 0x08, "session_moved": 0x09, "resume_rejected": 0x91, "message_refused": 0x92,
}

# §4.3 features (device capabilities, the unit of access control); 0x0005-0x0008 added by §15.2
FEATURES = {"screen_share": 0x0001, "assist_ar": 0x0002, "voip": 0x0003, "remote_control": 0x0004,
            "file_share": 0x0005, "chat": 0x0006, "ar_pointer": 0x0007, "app_messages": 0x0008}

# §15.1 protocol extensions (the HELLO / HELLO_ACK `features` id space), all version 1; ask_withdraw since
# revision 1.2.0
EXTENSIONS = {"access_control": 0x0001, "session_messages": 0x0002, "session_resume": 0x0003,
              "ask_withdraw": 0x0004}
REVISIONS = ("1.0", "1.1", "1.2")
# frame types a decoder of each revision before 1.2.0 does not know, beyond those it never knew
REVISION_1_2_TYPES = {0x21}

# Field spec: (tag, name, type, required, limit)
#   limit for integer types: (lo, hi) inclusive range, or None = any value of the type
#   limit for strings and bytes: maximum byte length (minimum is always 1, §4.1/§4.2/§15.2)
#   limit for u64: (lo, hi) or None, as for the other integer types (§15.4 file_size is the only ranged u64)
U8, U16, U32, U64, STRING, REASON, FEATURES_T = "u8", "u16", "u32", "u64", "string", "reason", "features"
BYTES = "bytes"                      # §15.2
REQUEST_ID = (1, U32_MAX)
ID_1_MAX = (1, U32_MAX)

MESSAGES = {
    0x01: ("HELLO", [
        (1, "min_version", U8, True, (1, 255)),
        (2, "max_version", U8, True, (1, 255)),        # and >= min_version, checked specially
        (3, "role", U8, True, (1, 2)),
        (4, "node_name", STRING, True, 64),
        (5, "features", FEATURES_T, True, None),
        (6, "keepalive_ms", U32, True, (100, 600000)),
        (7, "max_frame_size", U32, True, (MIN_MAX_PAYLOAD, MAX_MAX_PAYLOAD)),
    ]),
    0x02: ("HELLO_ACK", [
        (1, "version", U8, True, (1, 255)),
        (2, "role", U8, True, (1, 2)),
        (3, "node_name", STRING, True, 64),
        (4, "features", FEATURES_T, True, None),
        (5, "keepalive_ms", U32, True, (100, 600000)),
        (6, "max_frame_size", U32, True, (MIN_MAX_PAYLOAD, MAX_MAX_PAYLOAD)),
        (7, "resume_grace_ms", U32, False, (1000, 600000)),                 # §15.2
    ]),
    0x03: ("PING", [(1, "nonce", U64, True, None)]),
    0x04: ("PONG", [(1, "nonce", U64, True, None)]),
    0x05: ("GOAWAY", [
        (1, "reason", REASON, True, None),
        (2, "text", STRING, False, 256),
        (4, "resume_elsewhere", U8, False, (1, 1)),                         # §15.5 drain
    ]),
    0x10: ("REGISTER", [
        (1, "session_code", STRING, True, 64),
        (2, "api_token", STRING, True, 256),
        (3, "capabilities", FEATURES_T, True, None),
    ]),
    0x11: ("REGISTER_RESULT", [
        (1, "reason", REASON, True, None),
        (2, "text", STRING, False, 256),
        (3, "retry_after_ms", U32, False, None),
        (4, "code_type", U8, False, (1, 2)),
        (5, "resume_secret", STRING, False, 64),                            # §15.2
    ]),
    0x12: ("CONNECTION_REQUEST", [
        (1, "request_id", U32, True, REQUEST_ID),
        (2, "supporter_name", STRING, True, 64),
        (3, "connection_type", U8, True, (1, 2)),
        (4, "requested_features", FEATURES_T, True, None),
        (5, "confirm_features", FEATURES_T, False, None),                   # §15.2
    ]),
    0x13: ("CONNECTION_RESPONSE", [
        (1, "request_id", U32, True, REQUEST_ID),
        (2, "decision", U8, True, (1, 2)),
        (3, "reason", REASON, True, None),
        (4, "granted_features", FEATURES_T, False, None),                   # §15.2
    ]),
    0x14: ("REQUEST_ABORT", [
        (1, "request_id", U32, True, REQUEST_ID),
        (2, "reason", REASON, True, None),
    ]),
    # §5.10 gives no numeric range ("the allowed request"); this codec uses the request_id range of
    # §5.7-§5.9 (1..4294967295). See the ambiguity list in README.md.
    0x15: ("SESSION_STARTED", [
        (1, "request_id", U32, True, REQUEST_ID),
        (2, "granted_features", FEATURES_T, False, None),                   # §15.2
        (3, "media_descriptor", BYTES, False, 4096),                        # §15.2
        (4, "resume_secret", STRING, False, 64),                            # §15.2
    ]),
    0x16: ("SESSION_END", [
        (1, "reason", REASON, True, None),
        (2, "text", STRING, False, 256),
    ]),
    0x17: ("SESSION_ERROR", [
        (1, "reason", REASON, True, None),
        (2, "feature", U16, False, None),             # §5.12 gives no range: any u16
        (3, "text", STRING, False, 256),
    ]),
    0x18: ("VOIP_STATE", [
        (1, "state", U8, True, (1, 4)),
        (2, "text", STRING, False, 256),
    ]),
    # ---- §15 (revision 1.1). Where a table gives no numeric limit, any value of the type is valid (the
    # decoder enforces only the tables' types, limits and required tags; see README.md, readings for §15).
    0x19: ("FEATURE_REQUEST", [                                             # §15.3
        (1, "ask_id", U32, True, ID_1_MAX),
        (2, "feature", U16, True, None),
        (3, "confirm", U8, False, (1, 1)),
        (4, "text", STRING, False, 256),
    ]),
    0x1A: ("FEATURE_ANSWER", [                                              # §15.3
        (1, "ask_id", U32, True, ID_1_MAX),
        (2, "decision", U8, True, (1, 2)),
        (3, "reason", REASON, True, None),
    ]),
    0x1B: ("FEATURE_REVOKE", [                                              # §15.3
        (1, "feature", U16, True, None),
        (2, "text", STRING, False, 256),
    ]),
    0x1C: ("SESSION_MESSAGE", [                                             # §15.4
        (1, "message_id", U32, True, ID_1_MAX),
        (2, "kind", U8, True, (1, 3)),
        (3, "content_type", STRING, False, 128),
        (4, "body", BYTES, True, 65535),
        (5, "transfer_id", U32, False, None),
        (6, "file_name", STRING, False, 255),
        (7, "file_size", U64, False, (0, 16777216)),
        (8, "offset", U64, False, None),
    ]),
    0x1D: ("MESSAGE_ACK", [                                                 # §15.4
        (1, "message_id", U32, True, None),
        (2, "reason", REASON, True, None),
        (3, "text", STRING, False, 256),
    ]),
    0x1E: ("RESUME", [                                                      # §15.5
        (1, "session_code", STRING, True, 64),
        (2, "resume_secret", STRING, True, 64),
        (3, "state", U8, True, (1, 4)),
        (4, "request_id", U32, False, None),
        (5, "last_message_id", U32, False, None),
        (6, "granted_features", FEATURES_T, False, None),
    ]),
    0x1F: ("RESUME_RESULT", [                                               # §15.5
        (1, "reason", REASON, True, None),
        (2, "text", STRING, False, 256),
        (3, "resume_secret", STRING, False, 64),
        (4, "last_message_id", U32, False, None),
        (5, "retry_after_ms", U32, False, None),
    ]),
    # ---- revision 1.2.0: extension ask_withdraw. 0x20 stays undefined.
    0x21: ("FEATURE_WITHDRAW", [                                            # §15.3
        (1, "ask_id", U32, True, ID_1_MAX),
    ]),
}
TYPE_BY_NAME = {name: t for t, (name, _) in MESSAGES.items()}
_INT_WIDTH = {U8: 1, U16: 2, U32: 4, U64: 8, REASON: 1}
_HEX_RE = re.compile(r"(?:[0-9a-f]{2})*")

# §15: which extension each 1.1 frame type and each 1.1 field on an existing message belongs to
EXTENSION_TYPES = {
    0x19: "access_control", 0x1A: "access_control", 0x1B: "access_control",
    0x1C: "session_messages", 0x1D: "session_messages",
    0x1E: "session_resume", 0x1F: "session_resume",
    0x21: "ask_withdraw",
}
EXTENSION_FIELDS = {
    (0x02, 7): "session_resume",       # HELLO_ACK resume_grace_ms
    (0x11, 5): "session_resume",       # REGISTER_RESULT resume_secret
    (0x12, 5): "access_control",       # CONNECTION_REQUEST confirm_features
    (0x13, 4): "access_control",       # CONNECTION_RESPONSE granted_features
    (0x15, 2): "access_control",       # SESSION_STARTED granted_features
    (0x15, 3): "session_messages",     # SESSION_STARTED media_descriptor
    (0x15, 4): "session_resume",       # SESSION_STARTED resume_secret
    (0x05, 4): "session_resume",       # GOAWAY resume_elsewhere (drain)
}


class DecodeError(Exception):
    """A decoding error of SPEC §10.1: code (error name), offset (stream offset), field (tag or None)."""

    def __init__(self, code: str, offset: int, field: int | None = None):
        assert code in ERROR_NAMES, code
        self.code, self.offset, self.field = code, offset, field
        super().__init__(f"{code} at offset {offset}" + (f" (field {field})" if field is not None else ""))

    def as_dict(self) -> dict:
        d = {"code": self.code, "offset": self.offset}
        if self.field is not None:
            d["field"] = self.field
        return d


# ---------------------------------------------------------------------------------------------
# Low-level builders (no validation: they serve to craft arbitrary, even malformed, streams)
# ---------------------------------------------------------------------------------------------

def header(ftype: int, length: int, flags: int = 0, version: int = FRAME_VERSION, reserved: int = 0) -> bytes:
    """An 8-byte frame header (§3.1)."""
    return bytes([version, ftype, flags, reserved]) + struct.pack(">I", length)


def frame(ftype: int, payload: bytes, flags: int = 0, version: int = FRAME_VERSION, reserved: int = 0) -> bytes:
    """A header whose length is len(payload), followed by the payload."""
    return header(ftype, len(payload), flags, version, reserved) + payload


def field(tag: int, value: bytes, length: int | None = None) -> bytes:
    """A field (§4.1); `length` overrides the length prefix (to build truncated fields)."""
    return bytes([tag]) + struct.pack(">H", len(value) if length is None else length) + value


# ---------------------------------------------------------------------------------------------
# Decoder
# ---------------------------------------------------------------------------------------------

def _known(revision: str) -> tuple[set[int], set[tuple[int, int]]]:
    """(frame types defined, (type, tag) pairs of §15 fields that are *not* known) for a decoder profile."""
    if revision not in REVISIONS:
        raise ValueError(f"revision must be one of {REVISIONS}")
    if revision == "1.0":
        return set(MESSAGES) - set(EXTENSION_TYPES), set(EXTENSION_FIELDS)
    if revision == "1.1":
        return set(MESSAGES) - REVISION_1_2_TYPES, set()
    return set(MESSAGES), set()


def decode_stream(data: bytes, max_payload: int = DEFAULT_MAX_PAYLOAD, revision: str = "1.2") -> list[dict]:
    defined, unknown_fields = _known(revision)
    data = bytes(data)
    messages: list[dict] = []
    pos = 0
    end = len(data)
    while pos < end:
        start = pos
        # §3.4: fewer than 8 bytes left at stream end -> truncated_header. Header checks (§3.3) run
        # only once all 8 header bytes are present.
        if end - pos < HEADER_SIZE:
            raise DecodeError("truncated_header", start)
        version, ftype, flags, reserved = data[pos], data[pos + 1], data[pos + 2], data[pos + 3]
        (length,) = struct.unpack_from(">I", data, pos + 4)
        # §3.3 header validation order
        if version != FRAME_VERSION:
            raise DecodeError("unsupported_frame_version", start)
        if flags & 0xFE:
            raise DecodeError("reserved_flags", start + 2)
        if reserved != 0:
            raise DecodeError("reserved_byte", start + 3)
        if length > max_payload:
            raise DecodeError("frame_too_large", start + 4)
        known = ftype in defined
        ignorable = bool(flags & FLAG_IGNORABLE)
        if known and ignorable:
            raise DecodeError("ignorable_known_type", start + 1)
        if not known and not ignorable:
            raise DecodeError("unknown_frame_type", start + 1)
        # §3.4: header complete, payload short -> truncated_payload (also for frames to discard)
        if end - (pos + HEADER_SIZE) < length:
            raise DecodeError("truncated_payload", start)
        payload_start = pos + HEADER_SIZE
        pos = payload_start + length
        if not known:
            continue  # undefined type with IGNORABLE: discard header and payload
        specs = [s for s in MESSAGES[ftype][1] if (ftype, s[0]) not in unknown_fields]
        messages.append(_decode_payload(MESSAGES[ftype][0], specs, data[payload_start:pos], start, payload_start))
    return messages


def _decode_payload(name: str, specs, payload: bytes, frame_offset: int, base: int) -> dict:
    by_tag = {s[0]: s for s in specs}
    # 1. layout of all fields, in the order they appear (§4.1)
    present: dict[int, tuple[int, bytes]] = {}   # known tag -> (stream offset of tag byte, value)
    p = 0
    n = len(payload)
    prev_tag = None
    while p < n:
        if n - p < FIELD_HEADER_SIZE:
            raise DecodeError("trailing_bytes", base + p)
        tag = payload[p]
        if prev_tag is not None:
            if tag == prev_tag:
                raise DecodeError("duplicate_field", base + p, tag)
            if tag < prev_tag:
                raise DecodeError("field_out_of_order", base + p, tag)
        (vlen,) = struct.unpack_from(">H", payload, p + 1)
        vstart = p + FIELD_HEADER_SIZE
        if vstart + vlen > n:
            raise DecodeError("truncated_field", base + p, tag)
        if tag in by_tag:
            present[tag] = (base + p, payload[vstart:vstart + vlen])
        # unknown tags (including tag 0) are skipped without inspecting their value
        prev_tag = tag
        p = vstart + vlen
    # 2. required fields
    missing = [s[0] for s in specs if s[3] and s[0] not in present]
    if missing:
        raise DecodeError("missing_field", frame_offset, min(missing))
    # 3. values, in ascending tag order
    msg: dict = {"type": name}
    for tag, fname, ftype_, _req, limit in specs:
        if tag not in present:
            continue
        off, value = present[tag]
        msg[fname] = _decode_value(ftype_, limit, value, off, tag, name, fname, msg)
    return msg


def _decode_value(vtype, limit, value: bytes, off: int, tag: int, mname: str, fname: str, msg: dict):
    if vtype in _INT_WIDTH:
        if len(value) != _INT_WIDTH[vtype]:
            raise DecodeError("invalid_field_length", off, tag)
        v = int.from_bytes(value, "big")
        if vtype == REASON:
            return v                      # any code accepted and kept (§4.2, §6)
        if limit is not None and not (limit[0] <= v <= limit[1]):
            raise DecodeError("value_out_of_range", off, tag)
        if mname == "HELLO" and fname == "max_version" and v < msg["min_version"]:
            raise DecodeError("value_out_of_range", off, tag)
        return str(v) if vtype == U64 else v
    if vtype == BYTES:
        # §15.2: opaque octets; the string error names are reused
        if len(value) > limit:
            raise DecodeError("string_too_long", off, tag)
        if len(value) == 0:
            raise DecodeError("string_empty", off, tag)
        return value.hex()
    if vtype == STRING:
        # length before UTF-8 (§4.2)
        if len(value) > limit:
            raise DecodeError("string_too_long", off, tag)
        if len(value) == 0:
            raise DecodeError("string_empty", off, tag)
        try:
            return value.decode("utf-8", errors="strict")   # RFC 3629 well-formedness
        except UnicodeDecodeError:
            raise DecodeError("invalid_utf8", off, tag) from None
    if vtype == FEATURES_T:
        if len(value) % 4:
            raise DecodeError("invalid_field_length", off, tag)
        entries = []
        entry_base = off + FIELD_HEADER_SIZE
        prev_id = None
        for i in range(0, len(value), 4):
            fid, fver = struct.unpack_from(">HH", value, i)
            if prev_id is not None:
                if fid == prev_id:
                    raise DecodeError("duplicate_feature", entry_base + i, tag)
                if fid < prev_id:
                    raise DecodeError("feature_out_of_order", entry_base + i, tag)
            if fver == 0:
                raise DecodeError("value_out_of_range", entry_base + i, tag)
            entries.append([fid, fver])
            prev_id = fid
        return entries
    raise AssertionError(vtype)


# ---------------------------------------------------------------------------------------------
# Encoder
# ---------------------------------------------------------------------------------------------

def encode(message: dict) -> bytes:
    if not isinstance(message, dict) or "type" not in message:
        raise ValueError("message must be a dict with a 'type'")
    tname = message["type"]
    if tname not in TYPE_BY_NAME:
        raise ValueError(f"unknown message type {tname!r}")
    ftype = TYPE_BY_NAME[tname]
    specs = MESSAGES[ftype][1]
    names = {s[1] for s in specs}
    extra = set(message) - names - {"type"}
    if extra:
        raise ValueError(f"{tname}: unknown fields {sorted(extra)}")
    payload = bytearray()
    for tag, fname, vtype, required, _limit in specs:      # ascending tag order
        if fname not in message:
            if required:
                raise ValueError(f"{tname}: missing required field {fname}")
            continue
        v = message[fname]
        if vtype == U64:
            if not (isinstance(v, str) and v.isascii() and v.isdigit()):
                raise ValueError(f"{tname}.{fname}: u64 must be a string of decimal digits")
            n = int(v)
            if n > U64_MAX or str(n) != v:
                raise ValueError(f"{tname}.{fname}: not a canonical u64 decimal string")
            raw = n.to_bytes(8, "big")
        elif vtype in _INT_WIDTH:
            if not isinstance(v, int) or isinstance(v, bool):
                raise ValueError(f"{tname}.{fname}: must be an integer")
            width = _INT_WIDTH[vtype]
            if not 0 <= v < 1 << (8 * width):
                raise ValueError(f"{tname}.{fname}: does not fit {vtype}")
            raw = v.to_bytes(width, "big")
        elif vtype == STRING:
            if not isinstance(v, str):
                raise ValueError(f"{tname}.{fname}: must be a string")
            raw = v.encode("utf-8")           # raises on lone surrogates
        elif vtype == BYTES:
            if not (isinstance(v, str) and _HEX_RE.fullmatch(v)):
                raise ValueError(f"{tname}.{fname}: bytes must be a string of lowercase hex digit pairs")
            raw = bytes.fromhex(v)
        elif vtype == FEATURES_T:
            if not isinstance(v, list):
                raise ValueError(f"{tname}.{fname}: must be a list of [id, version] pairs")
            raw = b""
            for e in v:
                if (not isinstance(e, (list, tuple)) or len(e) != 2
                        or not all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= 0xFFFF for x in e)):
                    raise ValueError(f"{tname}.{fname}: bad entry {e!r}")
                raw += struct.pack(">HH", e[0], e[1])
        else:
            raise AssertionError(vtype)
        if len(raw) > 0xFFFF:
            raise ValueError(f"{tname}.{fname}: value longer than 65535 bytes")
        payload += field(tag, raw)
    if len(payload) > MAX_MAX_PAYLOAD:
        raise ValueError(f"{tname}: payload over {MAX_MAX_PAYLOAD} bytes")
    out = frame(ftype, bytes(payload))
    # Validate by decoding: the encoder only produces what a conforming decoder accepts unchanged.
    try:
        decoded = decode_stream(out, max_payload=max(DEFAULT_MAX_PAYLOAD, len(payload)))
    except DecodeError as e:
        raise ValueError(f"{tname}: invalid message: {e}") from None
    if decoded != [_normalize(message, specs)]:
        raise ValueError(f"{tname}: message does not round-trip: {decoded!r}")
    return out


def _normalize(message: dict, specs) -> dict:
    out = {"type": message["type"]}
    for _tag, fname, vtype, _req, _lim in specs:
        if fname in message:
            v = message[fname]
            out[fname] = [list(e) for e in v] if vtype == FEATURES_T else v
    return out
