/* Unit tests for a session's life through the hub (hub/hub_session.h and
 * hub.h): opening, binding, stopping, closing, the view GetAgentStatus
 * reads, panes and reported evidence, on a real SQLite store and the
 * memory log. */
#include "hub/hub_session.h"

#include <check.h>
#include <string.h>

#include "hub_fixture.h"

static struct hub_fixture h;

static void setup(void)
{
    hub_fixture_open(&h);
}

static void teardown(void)
{
    hub_fixture_close(&h);
}

static struct session *live(const char *id)
{
    return session_find(&h.sessions, id, strlen(id));
}

static Compass__V1__AgentSessionState view_state(const char *id, int closed)
{
    struct hub_session_view view;

    hub_session_view(&h.hub, id, closed, &view);
    return view.state;
}

static void on_wake(struct watcher *w)
{
    (void)w;
}

START_TEST(a_binding_made_stays_unless_the_caller_names_the_host)
{
    struct session *s = hub_session(&h.hub, "sess-1");

    ck_assert_ptr_nonnull(s);
    ck_assert_ptr_null(session_binding(s));
    hub_session_bind(s, "", HUB_BIND_ALWAYS);
    ck_assert_ptr_null(session_binding(s));
    hub_session_bind(s, "runner-1", HUB_BIND_IF_UNBOUND);
    ck_assert_str_eq(session_binding(s), "runner-1");
    hub_session_bind(s, "runner-2", HUB_BIND_IF_UNBOUND);
    ck_assert_str_eq(session_binding(s), "runner-1");
    hub_session_bind(s, "runner-2", HUB_BIND_ALWAYS);
    ck_assert_str_eq(session_binding(s), "runner-2");
    hub_session_bind(NULL, "runner-2", HUB_BIND_ALWAYS); /* nothing to bind */
}
END_TEST

START_TEST(a_producer_reopens_an_open_session_but_never_a_closed_one)
{
    struct session *s = NULL;

    ck_assert_int_eq(hub_live_session(&h.hub, "sess-1", &s), HUB_LIVE);
    ck_assert_ptr_nonnull(s);
    ck_assert_ptr_eq(live("sess-1"), s);
    ck_assert_int_eq(store_session_close(h.fx.s, "sess-2"), STORE_OK);
    ck_assert_int_eq(hub_live_session(&h.hub, "sess-2", &s), HUB_ENDED);
    ck_assert_ptr_null(live("sess-2"));
    ck_assert_int_eq(hub_live_session(&h.hub, "no-such-session", &s), HUB_ENDED);
}
END_TEST

START_TEST(a_pane_opens_an_open_session_bound_to_its_containers_runner)
{
    struct session *s = NULL;

    ck_assert_int_eq(hub_session_for_pane(&h.hub, "sess-1", 0, "runner-1", &s), HUB_PANE_OPEN);
    ck_assert_ptr_eq(live("sess-1"), s);
    ck_assert_str_eq(session_binding(s), "runner-1");
    /* A Runner's own binding is not overwritten by the default. */
    hub_session_bind(s, "runner-2", HUB_BIND_ALWAYS);
    ck_assert_int_eq(hub_session_for_pane(&h.hub, "sess-1", 0, "runner-1", &s), HUB_PANE_OPEN);
    ck_assert_str_eq(session_binding(s), "runner-2");
}
END_TEST

START_TEST(a_pane_of_a_closed_session_never_held_is_unretained)
{
    struct session *s = (struct session *)&h;

    ck_assert_int_eq(hub_session_for_pane(&h.hub, "sess-2", 1, "runner-2", &s),
                     HUB_PANE_UNRETAINED);
    ck_assert_ptr_null(s);
    ck_assert_ptr_null(live("sess-2"));
}
END_TEST

START_TEST(panes_are_counted_while_attached)
{
    struct watcher w = {0};
    struct session *s = hub_session(&h.hub, "sess-1");

    w.wake = on_wake;
    hub_pane_attach(&h.hub, s, &w);
    ck_assert_uint_eq(h.hub.counters.subscribers_open, 1);
    ck_assert_uint_eq(session_watcher_count(s), 1);
    hub_pane_detach(&h.hub, s, &w);
    ck_assert_uint_eq(h.hub.counters.subscribers_open, 0);
    ck_assert_uint_eq(session_watcher_count(s), 0);
    hub_pane_lagged(&h.hub);
    ck_assert_uint_eq(h.hub.counters.subscriber_lag_drops, 1);
    hub_bus_subscriber(&h.hub, 1);
    ck_assert_uint_eq(h.hub.counters.bus_subscribers_open, 1);
    hub_bus_subscriber(&h.hub, 0);
    ck_assert_uint_eq(h.hub.counters.bus_subscribers_open, 0);
}
END_TEST

START_TEST(runner_evidence_binds_the_live_session_and_derives_its_state)
{
    uint64_t before;

    ck_assert_int_eq(
        hub_report_evidence(&h.hub, "sess-1", "runner-1", ARBITER_RANK_PROCESS, ARBITER_WORKING, 1),
        HUB_LIVE);
    ck_assert_str_eq(session_binding(live("sess-1")), "runner-1");
    ck_assert_int_eq(view_state("sess-1", 0),
                     COMPASS__V1__AGENT_SESSION_STATE__AGENT_SESSION_STATE_WORKING);
    before = hub_fixture_newest(&h, "sess-1");
    ck_assert_uint_gt(before, 0); /* the change is a state frame */
    ck_assert_int_eq(store_session_close(h.fx.s, "sess-2"), STORE_OK);
    ck_assert_int_eq(
        hub_report_evidence(&h.hub, "sess-2", "runner-2", ARBITER_RANK_PROCESS, ARBITER_WORKING, 0),
        HUB_ENDED);
    ck_assert_ptr_null(live("sess-2"));
}
END_TEST

START_TEST(a_hook_state_is_evidence_or_with_a_live_child_a_record)
{
    struct session *s = hub_session(&h.hub, "sess-1");
    uint64_t records;

    hub_report_hook_state(&h.hub, s, ARBITER_BLOCKED);
    ck_assert_int_eq(view_state("sess-1", 0),
                     COMPASS__V1__AGENT_SESSION_STATE__AGENT_SESSION_STATE_BLOCKED);
    ck_assert_uint_eq(h.hub.counters.records_appended, 0);
    /* A live child (process evidence) turns the hook's fallback state into
     * a record of the parent's log. */
    hub_observe(&h.hub, s, ARBITER_RANK_PROCESS, ARBITER_WORKING, 1);
    records = h.hub.counters.records_appended;
    hub_report_hook_state(&h.hub, s, ARBITER_READY);
    ck_assert_uint_eq(h.hub.counters.records_appended, records + 1);
}
END_TEST

START_TEST(a_stopped_session_says_stopped_and_takes_no_more_frames)
{
    struct session *s = hub_session(&h.hub, "sess-1");
    struct session *again = NULL;

    hub_observe(&h.hub, s, ARBITER_RANK_STREAM, ARBITER_WORKING, ARBITER_LIVE_UNCHANGED);
    ck_assert_int_eq(store_session_close(h.fx.s, "sess-1"), STORE_OK);
    hub_session_stop(&h.hub, "sess-1");
    ck_assert_ptr_null(live("sess-1"));
    ck_assert_int_eq(view_state("sess-1", 1),
                     COMPASS__V1__AGENT_SESSION_STATE__AGENT_SESSION_STATE_STOPPED);
    ck_assert_int_eq(hub_live_session(&h.hub, "sess-1", &again), HUB_ENDED);
    /* Stopping what the registry does not hold changes nothing. */
    hub_session_stop(&h.hub, "sess-2");
    ck_assert_ptr_null(live("sess-2"));
}
END_TEST

START_TEST(a_closed_resource_ends_its_live_session)
{
    hub_session(&h.hub, "sess-1");
    ck_assert_int_eq(view_state("sess-1", 0),
                     COMPASS__V1__AGENT_SESSION_STATE__AGENT_SESSION_STATE_STARTING);
    hub_session_close(&h.hub, "sess-1");
    ck_assert_ptr_null(live("sess-1"));
    ck_assert_int_eq(view_state("sess-1", 0),
                     COMPASS__V1__AGENT_SESSION_STATE__AGENT_SESSION_STATE_UNSPECIFIED);
    ck_assert_int_eq(view_state("sess-1", 1),
                     COMPASS__V1__AGENT_SESSION_STATE__AGENT_SESSION_STATE_STOPPED);
}
END_TEST

START_TEST(the_view_of_a_session_never_held_is_unspecified_with_no_seq)
{
    struct hub_session_view view;

    hub_session_view(&h.hub, "sess-2", 0, &view);
    ck_assert_int_eq(view.state, COMPASS__V1__AGENT_SESSION_STATE__AGENT_SESSION_STATE_UNSPECIFIED);
    ck_assert_uint_eq(view.last_seq, 0);
    ck_assert_ptr_null(live("sess-2")); /* reading opens nothing */
}
END_TEST

START_TEST(an_account_at_its_cap_opens_no_more_sessions)
{
    struct fake_call call;

    fake_call_init(&call, "t-alice");
    ck_assert_int_eq(hub_session_quota(&h.hub, fake_stream(&call), "agent-1"), 0);
    h.hub.config.max_account_sessions = 1;
    ck_assert_int_eq(hub_session_quota(&h.hub, fake_stream(&call), "agent-1"), -1);
    ck_assert_int_eq(call.finished, 1);
    ck_assert_int_eq(call.status, GRPC_STATUS_RESOURCE_EXHAUSTED);
    ck_assert_str_eq(call.message,
                     "the agent account has 1 open sessions, the most allowed; close one first");
    ck_assert_uint_eq(h.hub.counters.session_quota_refusals, 1);
}
END_TEST

Suite *hub_session_suite(void)
{
    Suite *s = suite_create("hub_session");
    TCase *tc = tcase_create("lifecycle");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, a_binding_made_stays_unless_the_caller_names_the_host);
    tcase_add_test(tc, a_producer_reopens_an_open_session_but_never_a_closed_one);
    tcase_add_test(tc, a_pane_opens_an_open_session_bound_to_its_containers_runner);
    tcase_add_test(tc, a_pane_of_a_closed_session_never_held_is_unretained);
    tcase_add_test(tc, panes_are_counted_while_attached);
    tcase_add_test(tc, runner_evidence_binds_the_live_session_and_derives_its_state);
    tcase_add_test(tc, a_hook_state_is_evidence_or_with_a_live_child_a_record);
    tcase_add_test(tc, a_stopped_session_says_stopped_and_takes_no_more_frames);
    tcase_add_test(tc, a_closed_resource_ends_its_live_session);
    tcase_add_test(tc, the_view_of_a_session_never_held_is_unspecified_with_no_seq);
    tcase_add_test(tc, an_account_at_its_cap_opens_no_more_sessions);
    suite_add_tcase(s, tc);
    return s;
}
