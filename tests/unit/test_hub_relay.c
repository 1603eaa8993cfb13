/* Unit tests for the hub's relay of a Runner's frames (hub/hub_relay.h),
 * driven through a fake call on a real SQLite store and the memory log. */
#include "hub/hub_relay.h"

#include <check.h>
#include <stdint.h>
#include <string.h>

#include "hub/runner_seq.h"
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

/* One frame and everything it points to. */
struct frame {
    Compass__V1__PublishEventsRequest request;
    Compass__V1__AgentFrame agent;
    Compass__V1__SessionFrame session;
    Compass__V1__SessionEvent event;
    Compass__V1__SessionAssistantText text;
    Compass__V1__AgentRecord record;
    Compass__V1__ReplayCompleteAck ack;
    Compass__V1__TranscriptEntry transcript;
};

/* An assistant text at SEQ for SESSION_ID, keyed KEY (NULL: none). */
static const Compass__V1__PublishEventsRequest *text_frame(struct frame *f, uint64_t seq,
                                                           const char *session_id, const char *key)
{
    static const Compass__V1__PublishEventsRequest request_init =
        COMPASS__V1__PUBLISH_EVENTS_REQUEST__INIT;
    static const Compass__V1__AgentFrame agent_init = COMPASS__V1__AGENT_FRAME__INIT;
    static const Compass__V1__SessionFrame session_init = COMPASS__V1__SESSION_FRAME__INIT;
    static const Compass__V1__SessionEvent event_init = COMPASS__V1__SESSION_EVENT__INIT;
    static const Compass__V1__SessionAssistantText text_init =
        COMPASS__V1__SESSION_ASSISTANT_TEXT__INIT;

    f->request = request_init;
    f->agent = agent_init;
    f->session = session_init;
    f->event = event_init;
    f->text = text_init;
    f->text.text = "hello";
    f->event.event_case = COMPASS__V1__SESSION_EVENT__EVENT_ASSISTANT_TEXT;
    f->event.assistant_text = &f->text;
    f->session.typed_event = &f->event;
    f->agent.frame_case = COMPASS__V1__AGENT_FRAME__FRAME_SESSION;
    f->agent.session = &f->session;
    f->request.runner_seq = seq;
    f->request.session_id = (char *)session_id;
    f->request.frame = &f->agent;
    if (key)
        f->request.idempotency_key = (char *)key;
    return &f->request;
}

/* A relay for Runner RUNNER_ID on CALL; aborts the test when it cannot open. */
static void open_relay(struct hub_relay *relay, struct fake_call *call, const char *runner_id)
{
    struct store_subject subject = hub_fixture_runner(runner_id);
    char token[64];

    snprintf(token, sizeof(token), "t-%s", runner_id);
    fake_call_init(call, token);
    ck_assert_int_eq(hub_relay_open(&h.hub, relay, fake_stream(call), &subject), 0);
}

static enum hub_relay_verdict relay_text(struct hub_relay *relay, uint64_t seq,
                                         const char *session_id, const char *key, uint64_t *skipped)
{
    struct frame f;

    return hub_relay_frame(relay, text_frame(&f, seq, session_id, key), skipped);
}

START_TEST(accepted_frame_reaches_the_session_log)
{
    struct hub_relay relay;
    struct fake_call call;
    uint64_t skipped = 99;

    open_relay(&relay, &call, "runner-1");
    ck_assert_int_eq(relay_text(&relay, 1, "sess-1", NULL, &skipped), HUB_RELAY_ACCEPTED);
    ck_assert_uint_eq(skipped, 0);
    ck_assert_uint_gt(hub_fixture_newest(&h, "sess-1"), 0);
    ck_assert_uint_eq(h.hub.counters.frames_accepted, 1);
    ck_assert_int_eq(call.finished, 0);
    hub_relay_close(&relay);
}
END_TEST

START_TEST(a_resent_runner_seq_is_a_retry_and_stores_nothing)
{
    struct hub_relay relay;
    struct fake_call call;
    uint64_t newest;

    open_relay(&relay, &call, "runner-1");
    ck_assert_int_eq(relay_text(&relay, 1, "sess-1", NULL, NULL), HUB_RELAY_ACCEPTED);
    ck_assert_int_eq(relay_text(&relay, 2, "sess-1", NULL, NULL), HUB_RELAY_ACCEPTED);
    newest = hub_fixture_newest(&h, "sess-1");
    ck_assert_int_eq(relay_text(&relay, 2, "sess-1", NULL, NULL), HUB_RELAY_RETRY);
    ck_assert_int_eq(relay_text(&relay, 1, "sess-1", NULL, NULL), HUB_RELAY_RETRY);
    ck_assert_uint_eq(hub_fixture_newest(&h, "sess-1"), newest);
    ck_assert_uint_eq(h.hub.counters.relay_retries, 2);
    ck_assert_uint_eq(h.hub.counters.frames_accepted, 2);
    ck_assert_int_eq(hub_relay_verdict_ends_stream(HUB_RELAY_RETRY), 0);
    hub_relay_close(&relay);
}
END_TEST

START_TEST(a_gap_is_counted_and_the_frame_after_it_is_kept)
{
    struct hub_relay relay;
    struct fake_call call;
    uint64_t skipped = 0;

    open_relay(&relay, &call, "runner-1");
    ck_assert_int_eq(relay_text(&relay, 1, "sess-1", NULL, &skipped), HUB_RELAY_ACCEPTED);
    ck_assert_int_eq(relay_text(&relay, 5, "sess-1", NULL, &skipped), HUB_RELAY_ACCEPTED);
    ck_assert_uint_eq(skipped, 3);
    ck_assert_uint_eq(h.hub.counters.relay_gaps, 1);
    ck_assert_uint_eq(h.hub.counters.frames_accepted, 2);
    /* The skipped values are behind the mark now: a late one is a retry. */
    ck_assert_int_eq(relay_text(&relay, 3, "sess-1", NULL, &skipped), HUB_RELAY_RETRY);
    ck_assert_uint_eq(skipped, 0);
    hub_relay_close(&relay);
}
END_TEST

START_TEST(a_key_seen_before_is_a_duplicate_even_at_a_new_runner_seq)
{
    struct hub_relay relay;
    struct fake_call call;
    uint64_t newest;

    open_relay(&relay, &call, "runner-1");
    ck_assert_int_eq(relay_text(&relay, 1, "sess-1", "k-1", NULL), HUB_RELAY_ACCEPTED);
    newest = hub_fixture_newest(&h, "sess-1");
    ck_assert_int_eq(relay_text(&relay, 2, "sess-1", "k-1", NULL), HUB_RELAY_DUPLICATE);
    ck_assert_uint_eq(hub_fixture_newest(&h, "sess-1"), newest);
    ck_assert_uint_eq(h.hub.counters.relay_duplicates, 1);
    /* The duplicate was dealt with: its runner_seq is behind the mark. */
    ck_assert_int_eq(relay_text(&relay, 2, "sess-1", NULL, NULL), HUB_RELAY_RETRY);
    /* The same key for another session is another frame. */
    ck_assert_int_eq(relay_text(&relay, 3, "sess-1", "k-2", NULL), HUB_RELAY_ACCEPTED);
    hub_relay_close(&relay);
}
END_TEST

START_TEST(a_frame_for_another_runners_session_is_dropped_unbound)
{
    struct hub_relay relay;
    struct fake_call call;

    open_relay(&relay, &call, "runner-2");
    ck_assert_int_eq(relay_text(&relay, 1, "sess-1", NULL, NULL), HUB_RELAY_UNBOUND);
    ck_assert_int_eq(relay_text(&relay, 2, "no-such-session", NULL, NULL), HUB_RELAY_UNBOUND);
    ck_assert_uint_eq(h.hub.counters.relay_unbound_frames, 2);
    ck_assert_uint_eq(h.hub.counters.frames_accepted, 0);
    /* Nothing was opened for the foreign session. */
    ck_assert_ptr_null(session_find(&h.sessions, "sess-1", 6));
    ck_assert_int_eq(call.finished, 0);
    /* Its own session is relayed. */
    ck_assert_int_eq(relay_text(&relay, 3, "sess-2", NULL, NULL), HUB_RELAY_ACCEPTED);
    ck_assert_str_eq(session_binding(session_find(&h.sessions, "sess-2", 6)), "runner-2");
    hub_relay_close(&relay);
}
END_TEST

START_TEST(runner_seq_out_of_range_ends_the_stream)
{
    struct hub_relay relay;
    struct fake_call call;

    open_relay(&relay, &call, "runner-1");
    ck_assert_int_eq(relay_text(&relay, 0, "sess-1", NULL, NULL), HUB_RELAY_SEQ_RANGE);
    ck_assert_int_eq(relay_text(&relay, (uint64_t)INT64_MAX + 1, "sess-1", NULL, NULL),
                     HUB_RELAY_SEQ_RANGE);
    ck_assert_int_eq(hub_relay_verdict_ends_stream(HUB_RELAY_SEQ_RANGE), 1);
    ck_assert_int_eq(relay_text(&relay, (uint64_t)INT64_MAX, "sess-1", NULL, NULL),
                     HUB_RELAY_ACCEPTED);
    hub_relay_close(&relay);
}
END_TEST

START_TEST(a_stream_of_the_runners_previous_run_is_stale)
{
    struct hub_relay relay;
    struct fake_call call;
    uint64_t last = 99;

    open_relay(&relay, &call, "runner-1");
    ck_assert_int_eq(relay_text(&relay, 1, "sess-1", NULL, NULL), HUB_RELAY_ACCEPTED);
    ck_assert_int_eq(runner_run_enroll(&h.hub, "runner-1", 0, &last, NULL), RUNNER_ENROLL_DONE);
    ck_assert_uint_eq(last, 0);
    ck_assert_int_eq(relay_text(&relay, 2, "sess-1", NULL, NULL), HUB_RELAY_STALE);
    ck_assert_uint_eq(h.hub.counters.relay_stale_streams, 1);
    ck_assert_int_eq(hub_relay_verdict_ends_stream(HUB_RELAY_STALE), 1);
    hub_relay_close(&relay);
}
END_TEST

START_TEST(a_frame_for_a_closed_session_is_dropped_and_reopens_nothing)
{
    struct hub_relay relay;
    struct fake_call call;

    ck_assert_int_eq(store_session_close(h.fx.s, "sess-1"), STORE_OK);
    open_relay(&relay, &call, "runner-1");
    ck_assert_int_eq(relay_text(&relay, 1, "sess-1", NULL, NULL), HUB_RELAY_ENDED);
    ck_assert_uint_eq(h.hub.counters.relay_ended_frames, 1);
    ck_assert_ptr_null(session_find(&h.sessions, "sess-1", 6));
    hub_relay_close(&relay);
}
END_TEST

START_TEST(frames_that_are_not_for_the_pane_are_counted_only)
{
    struct hub_relay relay;
    struct fake_call call;
    struct frame f;
    const Compass__V1__PublishEventsRequest *r;

    open_relay(&relay, &call, "runner-1");
    r = text_frame(&f, 1, "sess-1", NULL);
    f.request.frame = NULL;
    ck_assert_int_eq(hub_relay_frame(&relay, r, NULL), HUB_RELAY_UNKNOWN);
    r = text_frame(&f, 2, "sess-1", NULL);
    f.agent.frame_case = COMPASS__V1__AGENT_FRAME__FRAME_REPLAY_COMPLETE_ACK;
    f.agent.replay_complete_ack = &f.ack;
    ck_assert_int_eq(hub_relay_frame(&relay, r, NULL), HUB_RELAY_ACK);
    r = text_frame(&f, 3, "sess-1", NULL);
    f.agent.frame_case = COMPASS__V1__AGENT_FRAME__FRAME_TRANSCRIPT_ENTRY;
    f.agent.transcript_entry = &f.transcript;
    ck_assert_int_eq(hub_relay_frame(&relay, r, NULL), HUB_RELAY_TRANSCRIPT);
    r = text_frame(&f, 4, "sess-1", NULL);
    f.event.event_case = COMPASS__V1__SESSION_EVENT__EVENT_RECORD;
    f.record.type = "no_such_type";
    f.record.data_json = "{";
    f.event.record = &f.record;
    ck_assert_int_eq(hub_relay_frame(&relay, r, NULL), HUB_RELAY_BAD_RECORD);
    ck_assert_uint_eq(h.hub.counters.relay_unknown_frames, 1);
    ck_assert_uint_eq(h.hub.counters.relay_acks[HUB_ACK_REPLAY_COMPLETE], 1);
    ck_assert_uint_eq(h.hub.counters.transcript_entries, 1);
    ck_assert_uint_eq(h.hub.counters.relay_invalid_records, 1);
    ck_assert_uint_eq(h.hub.counters.frames_accepted, 0);
    ck_assert_uint_eq(hub_fixture_newest(&h, "sess-1"), 0);
    /* Each was dealt with: no gap at the next. */
    ck_assert_int_eq(relay_text(&relay, 5, "sess-1", NULL, NULL), HUB_RELAY_ACCEPTED);
    ck_assert_uint_eq(h.hub.counters.relay_gaps, 0);
    hub_relay_close(&relay);
}
END_TEST

/* --- re-checks after store changes --------------------------------------- */

START_TEST(a_moved_container_is_noticed_by_the_next_frame_after_a_recheck)
{
    struct store *admin = store_fixture_second_handle(&h.fx);
    struct store_container c = {"ctr-1", "agent-1", "runner-2"};
    struct hub_relay relay;
    struct fake_call call;

    open_relay(&relay, &call, "runner-1");
    ck_assert_int_eq(relay_text(&relay, 1, "sess-1", NULL, NULL), HUB_RELAY_ACCEPTED);
    ck_assert_int_eq(admin->ops->container_put(admin->impl, &c, NULL), STORE_OK);
    /* Within the binding's trust the stream would relay on; the re-check
     * after the change makes the next frame ask again. */
    hub_fixture_run(&h, STREAM_GUARD_POLL_MS + 300);
    ck_assert_int_eq(relay_text(&relay, 2, "sess-1", NULL, NULL), HUB_RELAY_UNBOUND);
    ck_assert_int_eq(call.finished, 0);
    hub_relay_close(&relay);
    store_close(admin);
}
END_TEST

START_TEST(a_revoked_runner_token_ends_the_stream_unauthenticated)
{
    struct store *admin = store_fixture_second_handle(&h.fx);
    struct hub_relay relay;
    struct fake_call call;
    int changed = 0;

    open_relay(&relay, &call, "runner-1");
    ck_assert_int_eq(relay_text(&relay, 1, "sess-1", NULL, NULL), HUB_RELAY_ACCEPTED);
    ck_assert_int_eq(
        admin->ops->token_revoke_subject(admin->impl, STORE_SUBJECT_RUNNER, "runner-1", &changed),
        STORE_OK);
    hub_fixture_run(&h, STREAM_GUARD_POLL_MS + 300);
    ck_assert_int_eq(call.finished, 1);
    ck_assert_int_eq(call.status, GRPC_STATUS_UNAUTHENTICATED);
    hub_relay_close(&relay);
    store_close(admin);
}
END_TEST

START_TEST(an_ended_call_is_left_alone_by_the_recheck)
{
    struct store *admin = store_fixture_second_handle(&h.fx);
    struct hub_relay relay;
    struct fake_call call;
    int changed = 0;

    open_relay(&relay, &call, "runner-1");
    call.finished = 1;
    call.status = GRPC_STATUS_OK;
    ck_assert_int_eq(
        admin->ops->token_revoke_subject(admin->impl, STORE_SUBJECT_RUNNER, "runner-1", &changed),
        STORE_OK);
    hub_fixture_run(&h, STREAM_GUARD_POLL_MS + 300);
    ck_assert_int_eq(call.status, GRPC_STATUS_OK);
    ck_assert_int_eq(hub_fixture_metric(&h, "agenthub_streams_guarded"), 1);
    hub_relay_close(&relay);
    ck_assert_int_eq(hub_fixture_metric(&h, "agenthub_streams_guarded"), 0);
    store_close(admin);
}
END_TEST

Suite *hub_relay_suite(void)
{
    Suite *s = suite_create("hub_relay");
    TCase *tc = tcase_create("verdicts");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, accepted_frame_reaches_the_session_log);
    tcase_add_test(tc, a_resent_runner_seq_is_a_retry_and_stores_nothing);
    tcase_add_test(tc, a_gap_is_counted_and_the_frame_after_it_is_kept);
    tcase_add_test(tc, a_key_seen_before_is_a_duplicate_even_at_a_new_runner_seq);
    tcase_add_test(tc, a_frame_for_another_runners_session_is_dropped_unbound);
    tcase_add_test(tc, runner_seq_out_of_range_ends_the_stream);
    tcase_add_test(tc, a_stream_of_the_runners_previous_run_is_stale);
    tcase_add_test(tc, a_frame_for_a_closed_session_is_dropped_and_reopens_nothing);
    tcase_add_test(tc, frames_that_are_not_for_the_pane_are_counted_only);
    suite_add_tcase(s, tc);

    tc = tcase_create("rechecks");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, a_moved_container_is_noticed_by_the_next_frame_after_a_recheck);
    tcase_add_test(tc, a_revoked_runner_token_ends_the_stream_unauthenticated);
    tcase_add_test(tc, an_ended_call_is_left_alone_by_the_recheck);
    suite_add_tcase(s, tc);
    return s;
}
