"""The JSON codec (src/grpc/grpc_json.c) against protobuf's own JSON printer
and parser (google.protobuf.json_format), over every message type in proto/
with random contents, both ways:

- ours -> theirs: a random message's binary form goes through the codec's
  writer; json_format parses that JSON back to the same message, and the
  JSON equals json_format's own output for it (same names, same values,
  same fields left out).
- theirs -> ours: json_format's JSON for a random message (printed with the
  original names or json names, with or without defaults, enums by name or
  number, then varied: 64-bit integers as numbers, bytes URL-safe or
  unpadded, nulls for absent fields) goes through the codec's parser; the
  binary form it packs parses to the same message.

The codec runs in tests/drivers/json_codec_driver (built by the Makefile),
one process per message type, fed every message of that type at once.
AGENTHUB_JSON_MESSAGES sets the number of messages per type and direction.
"""
import base64
import json
import os
import random
import subprocess

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from google.protobuf.descriptor import FieldDescriptor as FD

import harness

COUNT = int(os.environ.get("AGENTHUB_JSON_MESSAGES", "10000"))
MAX_DEPTH = 4

INT_RANGES = {
    FD.TYPE_INT32: (-(2**31), 2**31 - 1),
    FD.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FD.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    FD.TYPE_UINT32: (0, 2**32 - 1),
    FD.TYPE_FIXED32: (0, 2**32 - 1),
    FD.TYPE_INT64: (-(2**63), 2**63 - 1),
    FD.TYPE_SINT64: (-(2**63), 2**63 - 1),
    FD.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    FD.TYPE_UINT64: (0, 2**64 - 1),
    FD.TYPE_FIXED64: (0, 2**64 - 1),
}
WIDE = {FD.TYPE_INT64, FD.TYPE_SINT64, FD.TYPE_SFIXED64, FD.TYPE_UINT64, FD.TYPE_FIXED64}
# Characters a string may hold: JSON's escapes, controls, multi-byte UTF-8
# and the line separators JavaScript treats specially.  Never NUL: a
# protobuf-c string is NUL-terminated.
CHARS = "aZ09 _-\"\\/\b\f\n\r\t\x01\x1f\x7f\u00e9\u4e2d\u2028\u2029\U0001f600<>&'"


def driver_path():
    return os.path.join(harness.build_dir(), "tests", "json_codec_driver")


def run_driver(lines):
    """Answers of the driver, one per request line: (ok, text)."""
    proc = subprocess.run([driver_path()], input="".join(l + "\n" for l in lines),
                          capture_output=True, text=True, timeout=600, check=True)
    answers = proc.stdout.split("\n")[:-1]
    assert len(answers) == len(lines), proc.stderr[-2000:]
    return [(a.startswith("OK "), a[3:] if a.startswith("OK ") else a[4:]) for a in answers]


@pytest.fixture(scope="module")
def pool():
    (ok, b64), = run_driver(["S"])
    assert ok
    fds = descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(b64))
    p = descriptor_pool.DescriptorPool()
    for f in fds.file:
        p.Add(f)
    return p, fds


def all_message_types(fds):
    names = []

    def walk(prefix, msgs):
        for m in msgs:
            full = prefix + "." + m.name
            names.append(full)
            walk(full, m.nested_type)

    for f in fds.file:
        walk(f.package, f.message_type)
    return sorted(names)


def message_class(p, name):
    return message_factory.MessageFactory(p).GetPrototype(p.FindMessageTypeByName(name))


def random_scalar(rng, f):
    t = f.type
    if t in INT_RANGES:
        lo, hi = INT_RANGES[t]
        return rng.choice([0, 1, lo, hi, max(lo, -1), rng.randint(lo, hi), rng.randint(0, 300)])
    if t == FD.TYPE_BOOL:
        return rng.random() < 0.5
    if t == FD.TYPE_STRING:
        return "".join(rng.choice(CHARS) for _ in range(rng.choice([0, 1, 3, 12])))
    if t == FD.TYPE_BYTES:
        return bytes(rng.getrandbits(8) for _ in range(rng.choice([0, 1, 2, 3, 4, 17])))
    if t == FD.TYPE_ENUM:
        values = [v.number for v in f.enum_type.values]
        # proto3 enums are open: a number without a name travels too.
        return rng.choice(values + [max(values) + 1 + rng.randint(0, 1000)])
    if t in (FD.TYPE_FLOAT, FD.TYPE_DOUBLE):
        return rng.choice([0.0, 1.5, -2.25, 1e10, rng.uniform(-1e6, 1e6)])
    raise AssertionError(f"no generator for field type {t}")


def fill(rng, msg, depth):
    """Random contents for MSG: about half its fields set, lists of 0 to 3,
    at most one member per oneof, nesting up to MAX_DEPTH."""
    desc = msg.DESCRIPTOR
    chosen = {}
    for oneof in desc.oneofs:
        if rng.random() < 0.7:
            chosen[oneof.name] = rng.choice(oneof.fields).name
    for f in desc.fields:
        if f.containing_oneof is not None:
            if chosen.get(f.containing_oneof.name) != f.name:
                continue
        elif rng.random() < 0.4:
            continue
        is_msg = f.type == FD.TYPE_MESSAGE
        if is_msg and depth >= MAX_DEPTH:
            continue
        if f.label == FD.LABEL_REPEATED:
            n = rng.choice([0, 1, 2, 3])
            if is_msg:
                for _ in range(n):
                    fill(rng, getattr(msg, f.name).add(), depth + 1)
            else:
                getattr(msg, f.name).extend(random_scalar(rng, f) for _ in range(n))
        elif is_msg:
            sub = getattr(msg, f.name)
            sub.SetInParent()
            fill(rng, sub, depth + 1)
        else:
            setattr(msg, f.name, random_scalar(rng, f))


def vary(rng, obj, desc):
    """Rewrites json_format's output for DESC into other forms it accepts
    too: 64-bit integers as numbers, enum names as numbers, bytes URL-safe
    or unpadded, null for absent fields."""
    for key in list(obj):
        f = desc.fields_by_name.get(key) or desc.fields_by_camelcase_name[key]
        v = obj[key]
        if v is None:
            continue
        many = f.label == FD.LABEL_REPEATED
        vals = v if many else [v]
        if f.type == FD.TYPE_MESSAGE:
            for x in vals:
                vary(rng, x, f.message_type)
            continue
        out = []
        for x in vals:
            if f.type in WIDE and rng.random() < 0.4 and -(2**63) <= int(x) < 2**63:
                x = int(x)
            elif f.type == FD.TYPE_BYTES and rng.random() < 0.5:
                raw = base64.b64decode(x)
                x = base64.urlsafe_b64encode(raw).decode() if rng.random() < 0.5 else x
                x = x.rstrip("=") if rng.random() < 0.5 else x
            elif f.type == FD.TYPE_ENUM and isinstance(x, str) and rng.random() < 0.3:
                x = f.enum_type.values_by_name[x].number
            out.append(x)
        obj[key] = out if many else out[0]
    absent = [f for f in desc.fields
              if f.name not in obj and f.camelcase_name not in obj and f.json_name not in obj]
    if absent and rng.random() < 0.2:
        f = rng.choice(absent)
        obj[f.name if rng.random() < 0.5 else f.json_name] = None


def test_driver_knows_every_message_type(pool):
    p, fds = pool
    (ok, names), = run_driver(["L"])
    assert ok
    assert sorted(names.split()) == all_message_types(fds)


def test_json_names_follow_protocs_rule(pool):
    """The codec derives json names from field names; a json_name option
    in proto/ would break that, so there must be none."""
    p, fds = pool

    def camel(name):
        parts = name.split("_")
        return parts[0] + "".join(x[:1].upper() + x[1:] for x in parts[1:])

    for name in all_message_types(fds):
        for f in p.FindMessageTypeByName(name).fields:
            assert f.json_name == camel(f.name), (name, f.name)


def check_type(p, name, seed):
    cls = message_class(p, name)
    rng = random.Random(seed)
    msgs = []
    for _ in range(COUNT):
        m = cls()
        fill(rng, m, 0)
        msgs.append(m)

    # ours -> theirs
    answers = run_driver([f"E {name} " + base64.b64encode(m.SerializeToString()).decode()
                          for m in msgs])
    for m, (ok, text) in zip(msgs, answers):
        assert ok, (name, text)
        back = json_format.Parse(text, cls())
        assert back == m, (name, text)
        assert json.loads(text) == json.loads(json_format.MessageToJson(m, indent=None)), text

    # theirs -> ours
    docs = []
    for m in msgs:
        obj = json_format.MessageToDict(
            m, including_default_value_fields=rng.random() < 0.3,
            preserving_proto_field_name=rng.random() < 0.5,
            use_integers_for_enums=rng.random() < 0.2)
        vary(rng, obj, cls.DESCRIPTOR)
        docs.append(json.dumps(obj, ensure_ascii=rng.random() < 0.5))
    answers = run_driver([f"D {name} {d}" for d in docs])
    for m, d, (ok, text) in zip(msgs, docs, answers):
        assert ok, (name, d, text)
        assert cls.FromString(base64.b64decode(text)) == m, (name, d)


def test_every_message_both_ways(pool):
    p, fds = pool
    for i, name in enumerate(all_message_types(fds)):
        check_type(p, name, 1000 + i)


# Documents both parsers must refuse, for the message type they name.  The
# codec refuses a few more, as Go's protojson does, where json_format is
# lenient (a field under both its names, true for an enum, base64 with
# stray characters, a list as the document); the unit suite covers those.
REFUSED = [
    ("compass.v1.GetAgentStatusRequest", '{"sessionIdx": "a"}'),
    ("compass.v1.GetAgentStatusRequest", '{"sessionId": 5}'),
    ("compass.v1.GetAgentStatusRequest", '{"sessionId": "a"'),
    ("compass.v1.SessionsResponse", '{"start": {}, "stop": {}}'),
    ("compass.v1.SessionsResponse", '{"start": 1}'),
    ("compass.v1.SubscribeEventsRequest", '{"sinceSeq": -1}'),
    ("compass.v1.SubscribeEventsRequest", '{"sinceSeq": "18446744073709551616"}'),
    ("compass.v1.SubscribeEventsRequest", '{"sinceSeq": 1.5}'),
    ("compass.v1.SubscribeEventsRequest", '{"sinceSeq": true}'),
    ("compass.v1.SubscribeAgentSessionRequest", '{"tail": 4294967296}'),
    ("compass.v1.SubscribeAgentSessionRequest", '{"tail": "x"}'),
    ("compass.v1.AgentSessionStatus", '{"state": "AGENT_SESSION_STATE_NOPE"}'),
    ("compass.v1.GetAgentStatusResponse", '{"statuses": [null]}'),
    ("compass.v1.GetAgentStatusResponse", '{"statuses": {}}'),
    ("compass.v1.TranscriptEntry", '{"checkpoint": "true"}'),
    ("compass.v1.TranscriptEntry", '{"checkpoint": 1}'),
    ("compass.v1.UploadSessionBlobRequest", '{"data": 12}'),
]


@pytest.mark.parametrize("name,doc", REFUSED)
def test_both_refuse(pool, name, doc):
    p, _ = pool
    with pytest.raises(json_format.ParseError):
        json_format.Parse(doc, message_class(p, name)())
    (ok, text), = run_driver([f"D {name} {doc}"])
    assert not ok and text, text
