"""agenthubd on a PostgreSQL store (--db postgres://...): the same gate as
on SQLite, provisioned with `agenthub admin`; a change made through another
process is refused on every node's next call and ends open streams; a
stopped server makes calls UNAVAILABLE (never NOT_FOUND) and health
NOT_SERVING, and both recover by themselves; /metrics shows the pool."""
import subprocess

import grpc
import pytest

from harness import AGENTHUB, AGENTHUBD, postgres, provision, wait_for  # noqa: F401 (fixture)
from helpers import Health
from rpc_harness import Hub, S, error_view, fail, subscribe, text

SUB = "SubscribeAgentSession"
NOT_FOUND = grpc.StatusCode.NOT_FOUND
UNAVAILABLE = grpc.StatusCode.UNAVAILABLE


def admin(db, *args, check=True):
    return subprocess.run([str(AGENTHUB), "admin", "--db", db] + list(args), check=check,
                          capture_output=True, text=True, timeout=60)


@pytest.fixture
def hubs():
    """hubs(db, n=1) -> [Hub]; every one is stopped (exit 0) at teardown."""
    started = []

    def start(db, n=1, **kwargs):
        new = [Hub(db=db, **kwargs) for _ in range(n)]
        started.extend(new)
        return new

    yield start
    for h in started:
        h.stop()


def status_of(h, sid, token="t-alice"):
    return h.call("GetAgentStatus", S.GetAgentStatusRequest(session_id=sid), token=token)


def health(h, pb):
    return Health(h.channel(), pb).status()


def test_a_node_on_postgres_serves_the_gate_like_sqlite(postgres, hubs):
    db = postgres.database()
    provision(db)
    assert "alice" in admin(db, "accounts", "list").stdout
    (h,) = hubs(db)
    assert status_of(h, "sess-1").statuses[0].session_id == "sess-1"
    r = h.runner("runner-2")
    r.publish("sess-2", text("live"))
    views = {error_view(fail(h.call, SUB, S.SubscribeAgentSessionRequest(session_id=sid),
                             token="t-alice"))
             for sid in ("sess-2", "sess-unknown", "", "SESS-1")}
    assert len(views) == 1
    assert next(iter(views))[:2] == (NOT_FOUND, "session not found")
    for token in ("t-admin", "t-agent-1"):
        subscribe(h, "sess-1", token=token).cancel()
    pane = subscribe(h, "sess-2", token="t-carol", tail=5)
    assert pane.wait_count(1)[0].event.assistant_text.text == "live"
    pane.cancel()


def test_a_membership_removed_elsewhere_is_refused_on_every_nodes_next_call(postgres, hubs):
    db = postgres.database()
    provision(db)
    a, b = hubs(db, n=2)
    # Both nodes have answered bob (and cached the answer).
    for h in (a, b):
        assert status_of(h, "sess-1", token="t-bob").statuses
    a.runner("runner-1").publish("sess-1", text("before"))
    pane = subscribe(a, "sess-1", token="t-bob", tail=5)
    pane.wait_count(1)
    other = subscribe(b, "sess-1", token="t-alice")
    admin(db, "members", "remove", "bob", "chan-a")
    unknown = fail(a.call, SUB, S.SubscribeAgentSessionRequest(session_id="sess-nope"),
                   token="t-bob")
    for h in (a, b):
        fresh = fail(h.call, SUB, S.SubscribeAgentSessionRequest(session_id="sess-1"),
                     token="t-bob")
        assert error_view(fresh) == error_view(unknown)
        assert fresh.code() == NOT_FOUND
    code, _ = pane.finish()
    assert code == NOT_FOUND
    assert a.metric('agenthub_streams_revoked_total{status="NOT_FOUND"}') == 1
    # alice is still a member, on the other node too.
    assert not other.done.is_set()
    other.cancel()


def test_a_token_issued_and_revoked_over_rpc_ends_its_streams_on_every_node(postgres, hubs):
    from rpc_harness import method, subscribe_events
    db = postgres.database()
    provision(db)
    a, b = hubs(db, n=2)
    token = method(a.channel(), "IssueToken")(S.IssueTokenRequest(account_id="bob"),
                                              metadata=(("authorization", "Bearer t-admin"),),
                                              timeout=10).token
    # Both nodes read the same store: the token works on either.
    assert b.call("WhoAmI", S.WhoAmIRequest(), token=token).account_id == "bob"
    here = subscribe(a, "sess-1", token=token)
    there = subscribe_events(b, token=token)
    method(a.channel(), "RevokeToken")(S.RevokeTokenRequest(token=token),
                                       metadata=(("authorization", "Bearer t-admin"),), timeout=10)
    # The node that wrote ends its stream itself; the other hears the
    # store's change notification.
    for reader in (here, there):
        code, _ = reader.finish(timeout=15)
        assert code == grpc.StatusCode.UNAUTHENTICATED
    for h in (a, b):
        assert fail(h.call, "WhoAmI", S.WhoAmIRequest(), token=token).code() == \
            grpc.StatusCode.UNAUTHENTICATED
    assert token not in a.stderr() and "issued token" in a.stderr()


def test_a_stopped_postgres_is_unavailable_and_not_serving_until_it_returns(postgres, hubs, pb):
    db = postgres.database()
    provision(db)
    (h,) = hubs(db)
    assert status_of(h, "sess-1").statuses
    assert health(h, pb) == Health.SERVING
    watch = Health(h.channel(), pb).watch(timeout=60)
    assert next(watch).status == Health.SERVING
    pane = subscribe(h, "sess-1", token="t-bob")
    postgres.stop()
    for sid in ("sess-1", "sess-2", "sess-unknown"):
        for token in ("t-alice", "t-carol", "t-admin"):
            err = fail(h.call, SUB, S.SubscribeAgentSessionRequest(session_id=sid), token=token)
            assert err.code() == UNAVAILABLE, (sid, token)
    err = fail(h.call, "GetAgentStatus", S.GetAgentStatusRequest(session_id="sess-1"),
               token="t-alice")
    assert err.code() == UNAVAILABLE
    assert fail(h.call, "WhoAmI", S.WhoAmIRequest(), token="t-alice").code() == UNAVAILABLE
    assert health(h, pb) == Health.NOT_SERVING
    assert next(watch).status == Health.NOT_SERVING
    # The open stream is decided again and ends the way a fresh call would.
    code, _ = pane.finish(timeout=15)
    assert code == UNAVAILABLE
    assert h.metric("agenthub_pg_up") == 0
    postgres.start()
    wait_for(lambda: health(h, pb) == Health.SERVING, timeout=20, what="SERVING again")
    assert next(watch).status == Health.SERVING
    watch.cancel()
    assert status_of(h, "sess-1").statuses[0].session_id == "sess-1"
    subscribe(h, "sess-1", token="t-bob").cancel()
    assert h.metric("agenthub_pg_up") == 1


def test_metrics_show_the_postgres_pool(postgres, hubs, pb):
    db = postgres.database()
    provision(db)
    (h,) = hubs(db)
    assert status_of(h, "sess-1").statuses
    assert health(h, pb) == Health.SERVING  # also fills the spare connection
    m = h.metrics()
    assert m["agenthub_pg_up"] == 1
    assert m["agenthub_pg_pool_size"] == 2
    assert m["agenthub_pg_pool_open"] == 2
    assert m["agenthub_pg_listening"] == 1
    assert m["agenthub_pg_connects_total"] >= 3
    assert m["agenthub_pg_queries_total"] > 0
    assert m["agenthub_pg_query_faults_total"] == 0
    before = m["agenthub_pg_notifications_total"]
    admin(db, "channels", "add", "chan-z")
    h.wait_metric("agenthub_pg_notifications_total", lambda v: v > before)


def test_a_newer_schema_is_refused_by_the_server_and_by_admin(postgres):
    db = postgres.database()
    provision(db)
    postgres.sql("UPDATE agenthub_schema SET version = 99", database=db.rsplit("/", 1)[1])
    out = admin(db, "accounts", "list", check=False)
    assert out.returncode == 1
    assert "newer" in out.stderr and "99" in out.stderr
    out = subprocess.run([str(AGENTHUBD), "--db", db, "--listen", "127.0.0.1:0"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "newer" in out.stderr
    assert "postgres://" not in out.stderr  # a URI may carry a password


def test_an_unreachable_server_at_start_is_a_clear_error():
    out = subprocess.run([str(AGENTHUBD), "--db", "postgres://agenthub:secret@127.0.0.1:1/x",
                          "--listen", "127.0.0.1:0"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "cannot connect to PostgreSQL" in out.stderr
    assert "secret" not in out.stderr
