"""Token administration on the public door, as compass's UI and CLI call it.

IssueToken and RevokeToken are driven through messages this file defines by
hand from compass.v1's published names and numbers (a FileDescriptorProto in
a private descriptor pool, as test_compass_runner.py does for the Runner
door), over native gRPC and over the Connect protocol with curl (JSON and
binary) and gRPC-Web, against agenthubd on SQLite:

- an admin issues a token once; it authenticates calls; only its hash is
  kept and the audit line names the caller and the subject, never the text;
- anyone else is PERMISSION_DENIED, and no credential is UNAUTHENTICATED;
- revoking by value ends new calls and the open SubscribeEvents and
  SubscribeAgentSession streams that used the token, at once; revoking again
  succeeds and a token never issued is NOT_FOUND (compass's rule);
- every malformed request is INVALID_ARGUMENT with a message naming why.
"""
import json
import shutil
import struct
import subprocess

import grpc
import pytest
from google.protobuf import descriptor_pb2

import compass_schema
from harness import wait_for
from rpc_harness import auth, fail, start_hub, subscribe, subscribe_events  # noqa: F401

COMPASS = "/compass.v1.CompassService/"
FD = descriptor_pb2.FieldDescriptorProto
STRING = FD.TYPE_STRING

# compass.v1's numbering, from its published schema.
FACTS = {
    "IssueTokenRequest": [("account_id", 1)],
    "IssueTokenResponse": [("token", 1)],
    "RevokeTokenRequest": [("token", 1)],
    "RevokeTokenResponse": [],
    "WhoAmIRequest": [],
    "WhoAmIResponse": [("account_id", 1)],
}
# agenthub's documented addition: a Runner's token (compass mints account
# tokens only).
AGENTHUB_FIELDS = {"IssueTokenRequest": [("runner_id", 100)]}

UNAUTHENTICATED = grpc.StatusCode.UNAUTHENTICATED
PERMISSION_DENIED = grpc.StatusCode.PERMISSION_DENIED
INVALID_ARGUMENT = grpc.StatusCode.INVALID_ARGUMENT
NOT_FOUND = grpc.StatusCode.NOT_FOUND


def compass_messages(with_agenthub_fields):
    facts = {name: fields + (AGENTHUB_FIELDS.get(name, []) if with_agenthub_fields else [])
             for name, fields in FACTS.items()}
    return compass_schema.messages("compass_tokens_double_%d.proto" % with_agenthub_fields, facts)


C = compass_messages(False)  # exactly compass's
A = compass_messages(True)   # with agenthub's runner_id


def rpc(h, name, request, token, response):
    channel = h._compass_channel if hasattr(h, "_compass_channel") else None
    if channel is None:
        channel = h._compass_channel = h.channel()
    return channel.unary_unary(COMPASS + name, request_serializer=type(request).SerializeToString,
                               response_deserializer=response.FromString)(
        request, metadata=auth(token), timeout=10)


def issue(h, token="t-admin", **fields):
    cls = A if "runner_id" in fields else C
    return rpc(h, "IssueToken", cls.IssueTokenRequest(**fields), token, C.IssueTokenResponse)


def revoke(h, value, token="t-admin"):
    return rpc(h, "RevokeToken", C.RevokeTokenRequest(token=value), token, C.RevokeTokenResponse)


def whoami(h, token):
    return rpc(h, "WhoAmI", C.WhoAmIRequest(), token, C.WhoAmIResponse).account_id


def connect(h, name, body, token="t-admin", content_type="application/json"):
    """(HTTP status, body) of one POST made with curl (a Connect unary call,
    or a gRPC-Web one)."""
    assert shutil.which("curl"), "curl is missing: run make deps"
    args = ["curl", "-s", "--http2-prior-knowledge", "--max-time", "20", "--data-binary", "@-",
            "-o", "-", "-w", "\n%{http_code}", "-H", "Content-Type: " + content_type]
    if token:
        args += ["-H", "Authorization: Bearer " + token]
    args.append("http://%s%s%s" % (h.public, COMPASS, name))
    out = subprocess.run(args, input=body, capture_output=True, timeout=30).stdout
    payload, _, status = out.rpartition(b"\n")
    return int(status), payload


def connect_json(h, name, obj, token="t-admin"):
    status, payload = connect(h, name, json.dumps(obj).encode(), token)
    return status, json.loads(payload) if payload else {}


def logged(h, text):
    """Waits for TEXT in the server's log (read on another thread); returns
    the log."""
    return wait_for(lambda: text in h.stderr() and h.stderr(), timeout=5,
                    what=lambda: "%r in the log:\n%s" % (text, h.log()))


def minted_shape(token):
    return len(token) == 43 and all(c.isalnum() or c in "-_" for c in token)


def test_an_admin_issues_a_token_over_grpc_that_authenticates_and_is_audited(start_hub):
    h = start_hub()
    token = issue(h, account_id="bob").token
    assert minted_shape(token)
    assert whoami(h, token) == "bob"
    # Each call mints another token; both work.
    second = issue(h, account_id="bob").token
    assert second != token and whoami(h, second) == "bob"
    log = wait_for(lambda: h.stderr().count("for account bob") == 2 and h.stderr(), timeout=5,
                   what="two audit lines")
    assert log.count("audit: IssueToken by account admin: issued token ") == 2
    assert token not in log and second not in log


def test_an_admin_issues_and_revokes_over_connect_json_as_curl_would(start_hub):
    h = start_hub()
    status, body = connect_json(h, "IssueToken", {"accountId": "carol"})
    assert status == 200, body
    token = body["token"]
    assert minted_shape(token) and whoami(h, token) == "carol"
    status, body = connect_json(h, "RevokeToken", {"token": token})
    assert (status, body) == (200, {})
    assert fail(whoami, h, token).code() == UNAUTHENTICATED
    # compass: revoking again succeeds; a token never issued is not_found.
    assert connect_json(h, "RevokeToken", {"token": token}) == (200, {})
    assert connect_json(h, "RevokeToken", {"token": "never-issued"}) == (
        404, {"code": "not_found", "message": "no such token"})
    assert token not in logged(h, "audit: RevokeToken by account admin: token ")


def test_connect_binary_messages_are_compass_s_bytes(start_hub):
    h = start_hub()
    status, payload = connect(h, "IssueToken", C.IssueTokenRequest(account_id="alice")
                              .SerializeToString(), content_type="application/proto")
    assert status == 200
    token = C.IssueTokenResponse.FromString(payload).token
    assert whoami(h, token) == "alice"
    status, payload = connect(h, "RevokeToken", C.RevokeTokenRequest(token=token)
                              .SerializeToString(), content_type="application/proto")
    assert (status, payload) == (200, b"")
    assert fail(whoami, h, token).code() == UNAUTHENTICATED


def test_only_an_admin_may_issue_or_revoke(start_hub):
    h = start_hub()
    victim = issue(h, account_id="bob").token
    for token in ("t-alice", "t-agent-1"):
        for call, args in ((issue, {"account_id": "alice"}), (revoke, {"value": victim}),
                           # a malformed request says nothing to a non-admin either
                           (issue, {}), (revoke, {"value": ""})):
            err = fail(call, h, token=token, **args)
            assert err.code() == PERMISSION_DENIED, (token, call, args)
            assert err.details() == "only an admin account may manage tokens"
    assert whoami(h, victim) == "bob"
    logged(h, "audit: IssueToken by account alice refused: not an admin")
    logged(h, "audit: RevokeToken by account agent-1 refused: not an admin")
    assert connect_json(h, "IssueToken", {"accountId": "alice"}, token="t-bob") == (
        403, {"code": "permission_denied", "message": "only an admin account may manage tokens"})


def test_no_or_a_bad_credential_is_unauthenticated(start_hub):
    h = start_hub()
    for token in (None, "t-wrong", "t-runner-1"):  # a Runner's token is no account's
        assert fail(issue, h, token=token, account_id="bob").code() == UNAUTHENTICATED
        assert fail(revoke, h, "t-bob", token=token).code() == UNAUTHENTICATED
    status, body = connect_json(h, "RevokeToken", {"token": "t-bob"}, token=None)
    assert (status, body["code"]) == (401, "unauthenticated")
    assert whoami(h, "t-bob") == "bob"


def test_revoking_ends_new_calls_and_the_open_streams_that_used_the_token(start_hub):
    h = start_hub()
    token = issue(h, account_id="alice").token
    pane = subscribe(h, "sess-1", token=token)
    bus = subscribe_events(h, token=token)
    keeps = subscribe_events(h, token="t-alice")  # alice's other token stays good
    revoke(h, token)
    fresh = fail(whoami, h, token)
    assert fresh.code() == UNAUTHENTICATED
    # This server's own write is seen at once, not at a later store poll.
    for reader in (pane, bus):
        assert reader.done.wait(3), "the stream outlived its revoked token"
        assert reader.error.code() == UNAUTHENTICATED
        assert reader.error.details() == fresh.details()
    assert h.metric('agenthub_streams_revoked_total{status="UNAUTHENTICATED"}') == 2
    assert not keeps.done.is_set()
    keeps.cancel()
    assert whoami(h, "t-alice") == "alice"
    log = logged(h, "audit: RevokeToken by account admin: revoked token ")
    assert " of account alice" in log and token not in log


def test_revocation_by_value_takes_any_token_and_runner_tokens_are_agenthubs(start_hub):
    h = start_hub()
    # A token imported into the store is revoked by its text like a minted one.
    revoke(h, "t-carol")
    assert fail(whoami, h, "t-carol").code() == UNAUTHENTICATED
    revoke(h, "t-carol")  # already revoked: still OK
    logged(h, "was revoked already")
    # runner_id (100) mints a Runner's token: good on the Runner door only.
    token = issue(h, runner_id="runner-2").token
    assert fail(whoami, h, token).code() == UNAUTHENTICATED
    r = h.runner("runner-2", token=token)
    assert r.enroll().runner_id == "runner-2"
    r.close()
    revoke(h, token)
    logged(h, "of runner runner-2")


@pytest.mark.parametrize("fields, message", [
    ({}, "account_id is required"),
    ({"account_id": "bob", "runner_id": "runner-1"}, "set account_id or runner_id, not both"),
    ({"account_id": "x" * 128},
     "account_id must be 1 to 127 printable ASCII characters without spaces"),
    ({"account_id": "has space"},
     "account_id must be 1 to 127 printable ASCII characters without spaces"),
    ({"runner_id": "r\u00e9"},
     "runner_id must be 1 to 127 printable ASCII characters without spaces"),
])
def test_a_malformed_issue_is_invalid_argument(start_hub, fields, message):
    h = start_hub()
    err = fail(issue, h, **fields)
    assert (err.code(), err.details()) == (INVALID_ARGUMENT, message)
    logged(h, "audit: IssueToken by account admin refused: " + message)


@pytest.mark.parametrize("value, message", [
    ("", "token is required"),
    ("x" * 1025, "token is longer than 1024 characters"),
    ("t-bob ", "token must be visible ASCII characters without spaces"),
    ("t-b\u00f6b", "token must be visible ASCII characters without spaces"),
])
def test_a_malformed_revoke_is_invalid_argument(start_hub, value, message):
    h = start_hub()
    err = fail(revoke, h, value)
    assert (err.code(), err.details()) == (INVALID_ARGUMENT, message)
    assert whoami(h, "t-bob") == "bob"


def test_unknown_subjects_and_json_mistakes(start_hub):
    h = start_hub()
    err = fail(issue, h, account_id="ghost")
    assert (err.code(), err.details()) == (NOT_FOUND, "no account with id ghost")
    err = fail(issue, h, runner_id="runner-9")
    assert (err.code(), err.details()) == (NOT_FOUND, "no runner with id runner-9")
    # The JSON codec refuses what compass's messages do not have.
    status, body = connect_json(h, "IssueToken", {"accountId": "bob", "subjectKind": "runner"})
    assert (status, body["code"]) == (400, "invalid_argument")
    status, body = connect_json(h, "RevokeToken", {"token": 7})
    assert (status, body["code"]) == (400, "invalid_argument")
    # A missing account is audited, with whom the admin asked for.
    logged(h, "audit: IssueToken by account admin for account ghost refused: no such account")


def grpc_web_frames(body):
    """[(flags, payload)] of a gRPC-Web response body."""
    out = []
    while body:
        flags, length = struct.unpack(">BI", body[:5])
        out.append((flags, body[5:5 + length]))
        body = body[5 + length:]
    return out


def test_grpc_web_issues_a_token_as_a_browser_would(start_hub):
    h = start_hub()
    request = C.IssueTokenRequest(account_id="bob").SerializeToString()
    status, body = connect(h, "IssueToken", struct.pack(">BI", 0, len(request)) + request,
                           content_type="application/grpc-web+proto")
    assert status == 200
    frames = grpc_web_frames(body)
    assert [flags for flags, _ in frames] == [0, 0x80]
    assert b"grpc-status:0" in frames[1][1].replace(b" ", b"")
    token = C.IssueTokenResponse.FromString(frames[0][1]).token
    assert whoami(h, token) == "bob"
