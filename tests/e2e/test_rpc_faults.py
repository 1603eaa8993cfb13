"""Store faults (AGENTHUB_FAILPOINTS, compiled into the ASan build) answer
UNAVAILABLE, never "absent", and leak nothing."""
import re

import grpc

from rpc_harness import S, error_view, fail, start_hub, subscribe, text  # noqa

UNAVAILABLE = grpc.StatusCode.UNAVAILABLE
SUB = "SubscribeAgentSession"


def sub_req(sid):
    return S.SubscribeAgentSessionRequest(session_id=sid)


def no_secrets(h, err=None):
    text_ = h.stderr() + ((err.details() or "") if err is not None else "")
    assert not re.search(r"(?<![\w-])t-(admin|alice|bob|carol|agent-\d|runner-\d)\b", text_)
    assert not re.search(r"\b(SELECT|INSERT|UPDATE|FROM)\b", text_)
    assert not re.search(r"0x[0-9a-f]{8,}", text_)


def test_a_membership_fault_is_unavailable_on_the_public_door(start_hub):
    h = start_hub(env={"AGENTHUB_FAILPOINTS": "store.membership=fault"})
    h.runner("runner-1").publish("sess-1", text("live"))
    for token in ("t-bob", "t-carol"):
        # An unknown session answers exactly like a known one: the fault
        # must not reveal which sessions exist.
        for sid in ("sess-1", "sess-unknown"):
            err = fail(h.call, SUB, sub_req(sid), token=token)
            assert err.code() == UNAVAILABLE, (token, sid)
            assert err.details() == "ownership store unavailable"
            no_secrets(h, err)
    assert fail(h.call, "GetAgentStatus", S.GetAgentStatusRequest(session_id="sess-1"),
                token="t-bob").code() == UNAVAILABLE
    assert fail(h.call, "GetAgentStatus", S.GetAgentStatusRequest(),
                token="t-bob").code() == UNAVAILABLE
    assert fail(h.call, "StartAgentSession", S.StartAgentSessionRequest(container_name="ctr-1"),
                token="t-bob").code() == UNAVAILABLE
    # Admins need no membership read; control needs ownership only.
    subscribe(h, "sess-1", token="t-admin").cancel()
    r = h.runner("runner-1")
    r.open_sessions(["sess-1"])
    h.call("SkipBatchWindow", S.SkipBatchWindowRequest(session_id="sess-1"), token="t-alice")


def test_a_membership_fault_ends_a_members_event_stream_unavailable(start_hub):
    h = start_hub(env={"AGENTHUB_FAILPOINTS": "store.membership=fault"})
    from rpc_harness import subscribe_events
    bus = subscribe_events(h, token="t-bob")
    admin = subscribe_events(h, token="t-admin")
    h.runner("runner-1").publish("sess-1", text("x"))
    code, _ = bus.finish()
    assert code == UNAVAILABLE and bus.items == []
    assert admin.wait_count(1)[0].agent_message_chunk.text == "x"
    admin.cancel()


def test_a_binding_fault_is_unavailable_for_every_relay_and_publish(start_hub):
    h = start_hub(blob_dir=True, env={"AGENTHUB_FAILPOINTS": "store.binding=fault"})
    r = h.runner("runner-1")
    r.enroll()
    for sid in ("sess-1", "sess-2", "sess-unknown"):  # no FAILED_PRECONDITION either
        for name, req in (("UploadSessionBlob", S.UploadSessionBlobRequest(session_id=sid)),
                          ("FetchSessionBlob", S.FetchSessionBlobRequest(session_id=sid,
                                                                         blob_ref="x")),
                          ("ReportEvidence", S.ReportEvidenceRequest(session_id=sid, rank=1,
                                                                     state=3))):
            err = fail(r.call, name, req)
            assert err.code() == UNAVAILABLE, (name, sid)
            no_secrets(h, err)
    assert fail(r.publish, "sess-1", text("x")).code() == UNAVAILABLE
    # The frame was not accepted: Enroll still says nothing was.
    assert r.enroll().last_runner_seq == 0


def test_a_session_read_fault_is_unavailable_and_identical_for_every_id(start_hub):
    h = start_hub(env={"AGENTHUB_FAILPOINTS": "store.session=fault"})
    views = {error_view(fail(h.call, SUB, sub_req(sid), token=token))
             for sid in ("sess-1", "sess-2", "sess-unknown")
             for token in ("t-bob", "t-carol", "t-admin")}
    assert len(views) == 1 and next(iter(views))[0] == UNAVAILABLE
    err = fail(h.call, "SkipBatchWindow", S.SkipBatchWindowRequest(session_id="sess-1"),
               token="t-alice")
    assert err.code() == UNAVAILABLE
    no_secrets(h, err)


def test_a_token_read_fault_is_unavailable_not_unauthenticated(start_hub):
    h = start_hub(env={"AGENTHUB_FAILPOINTS": "store.token=fault"})
    err = fail(h.call, "WhoAmI", S.WhoAmIRequest(), token="t-alice")
    assert err.code() == UNAVAILABLE
    err = fail(h.call, SUB, sub_req("sess-1"), token="t-alice")
    assert err.code() == UNAVAILABLE
    err = fail(h.runner("runner-1").enroll)
    assert err.code() == UNAVAILABLE
    no_secrets(h, err)
