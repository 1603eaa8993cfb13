/* Unit tests for hub_snapshot: the bus compacted to each session's latest
 * status, which a since_seq = 0 subscriber is told before the tail. */
#include "hub/hub_snapshot.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "compass/v1/services.pb-c.h"

#define EPOCH 0x5eedULL

/* Publishes a status of SID in STATE (or a message chunk when STATE < 0). */
static uint64_t pub(struct bus *b, const char *sid, int state)
{
    Compass__V1__SubscribeEventsResponse event = COMPASS__V1__SUBSCRIBE_EVENTS_RESPONSE__INIT;
    Compass__V1__AgentSessionStatus status = COMPASS__V1__AGENT_SESSION_STATUS__INIT;
    Compass__V1__AgentMessageChunk chunk = COMPASS__V1__AGENT_MESSAGE_CHUNK__INIT;
    uint8_t buf[256];
    size_t len;

    event.session_id = (char *)sid;
    if (state >= 0) {
        status.session_id = (char *)sid;
        status.state = (Compass__V1__AgentSessionState)state;
        event.payload_case = COMPASS__V1__SUBSCRIBE_EVENTS_RESPONSE__PAYLOAD_AGENT_SESSION_STATUS;
        event.agent_session_status = &status;
    } else {
        chunk.session_id = (char *)sid;
        chunk.text = "hi";
        event.payload_case = COMPASS__V1__SUBSCRIBE_EVENTS_RESPONSE__PAYLOAD_AGENT_MESSAGE_CHUNK;
        event.agent_message_chunk = &chunk;
    }
    len = protobuf_c_message_pack(&event.base, buf);
    return bus_publish(b, buf, len, 1000);
}

/* The state of the status event at SEQ in the snapshot, or -1. */
static int state_at(const struct hub_snapshot *snap, uint64_t seq)
{
    Compass__V1__SubscribeEventsResponse *event;
    struct bus_event ev;
    int state;

    if (hub_snapshot_get(snap, seq, &ev) != 0)
        return -1;
    ck_assert_uint_eq(ev.seq, seq);
    event = compass__v1__subscribe_events_response__unpack(NULL, ev.len, ev.payload);
    ck_assert_ptr_nonnull(event);
    state = (int)event->agent_session_status->state;
    protobuf_c_message_free_unpacked(&event->base, NULL);
    return state;
}

START_TEST(holds_each_sessions_latest_status_in_seq_order_at_the_newest_seq)
{
    struct bus b;
    struct hub_snapshot snap;
    struct hub_log log;
    uint64_t *seqs, at;
    size_t n;

    bus_init(&b, 0, EPOCH);
    hub_log_memory(&log, &b);
    hub_snapshot_init(&snap, &log);
    pub(&b, "s1", 1);               /* 1 */
    pub(&b, "s2", 2);               /* 2 */
    pub(&b, "s1", -1);              /* 3: a chunk, not a status */
    uint64_t s1 = pub(&b, "s1", 3); /* 4 */
    pub(&b, "s3", 2);               /* 5 */
    pub(&b, "s3", 4);               /* 6: STOPPED drops it */
    ck_assert_int_eq(hub_snapshot_take(&snap, &seqs, &n, &at), 0);
    ck_assert_uint_eq(at, 6);
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_eq(seqs[0], 2);
    ck_assert_uint_eq(seqs[1], s1);
    ck_assert_int_eq(state_at(&snap, 2), 2);
    ck_assert_int_eq(state_at(&snap, s1), 3);
    ck_assert_int_eq(state_at(&snap, 1), -1); /* replaced by 4 */
    free(seqs);
    hub_snapshot_free(&snap);
    bus_free(&b);
}
END_TEST

START_TEST(a_status_after_the_snapshot_is_the_tails_not_the_snapshots)
{
    struct bus b;
    struct hub_snapshot snap;
    struct hub_log log;
    uint64_t *seqs, at;
    size_t n;

    bus_init(&b, 0, EPOCH);
    hub_log_memory(&log, &b);
    hub_snapshot_init(&snap, &log);
    pub(&b, "s1", 1);
    pub(&b, "s2", 1);
    ck_assert_int_eq(hub_snapshot_take(&snap, &seqs, &n, &at), 0);
    ck_assert_uint_eq(n, 2);
    /* Published after the snapshot was taken: seq 3 > at, in the tail. */
    ck_assert_uint_eq(pub(&b, "s1", 2), at + 1);
    ck_assert_int_eq(state_at(&snap, seqs[0]), -1);
    ck_assert_int_eq(state_at(&snap, seqs[1]), 1);
    free(seqs);
    hub_snapshot_free(&snap);
    bus_free(&b);
}
END_TEST

START_TEST(an_empty_bus_has_an_empty_snapshot_at_its_newest_seq)
{
    struct bus b;
    struct hub_snapshot snap;
    struct hub_log log;
    uint64_t *seqs, at;
    size_t n;

    bus_init(&b, 0, EPOCH);
    bus_skip_to(&b, 42);
    hub_log_memory(&log, &b);
    hub_snapshot_init(&snap, &log);
    ck_assert_int_eq(hub_snapshot_take(&snap, &seqs, &n, &at), 0);
    ck_assert_ptr_null(seqs);
    ck_assert_uint_eq(n, 0);
    ck_assert_uint_eq(at, 41);
    hub_snapshot_free(&snap);
    bus_free(&b);
}
END_TEST

START_TEST(it_keeps_statuses_the_bus_ring_has_evicted)
{
    struct bus b;
    struct hub_snapshot snap;
    struct hub_log log;
    uint64_t *seqs, at;
    size_t n;

    bus_init(&b, 4096, EPOCH);
    hub_log_memory(&log, &b);
    hub_snapshot_init(&snap, &log);
    uint64_t s1 = pub(&b, "s1", 2);
    for (int i = 0; i < 500; i++)
        pub(&b, "s2", -1);
    ck_assert_int_eq(hub_snapshot_take(&snap, &seqs, &n, &at), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(seqs[0], s1);
    ck_assert_int_eq(state_at(&snap, s1), 2);
    free(seqs);
    hub_snapshot_free(&snap);
    bus_free(&b);
}
END_TEST

Suite *hub_snapshot_suite(void)
{
    Suite *s = suite_create("hub_snapshot");
    TCase *tc = tcase_create("hub_snapshot");

    tcase_add_test(tc, holds_each_sessions_latest_status_in_seq_order_at_the_newest_seq);
    tcase_add_test(tc, a_status_after_the_snapshot_is_the_tails_not_the_snapshots);
    tcase_add_test(tc, an_empty_bus_has_an_empty_snapshot_at_its_newest_seq);
    tcase_add_test(tc, it_keeps_statuses_the_bus_ring_has_evicted);
    suite_add_tcase(s, tc);
    return s;
}
