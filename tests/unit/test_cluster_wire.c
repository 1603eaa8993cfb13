/* Unit tests for a cluster's subjects and batch entries (hub/cluster_wire.h). */
#include "hub/cluster_wire.h"

#include <check.h>
#include <string.h>

START_TEST(test_subjects_carry_plain_ids_as_they_are_and_others_in_hex)
{
    char subject[CLUSTER_SUBJECT_MAX], id[SESSION_MAX_ID + 1];

    cluster_wire_subject("sess-1", 0, subject);
    ck_assert_str_eq(subject, "agenthub.frames.sess-1");
    ck_assert_int_eq(cluster_wire_session_id(subject, id), 0);
    ck_assert_str_eq(id, "sess-1");
    cluster_wire_subject("a.b *>", 0, subject);
    ck_assert_str_eq(subject, "agenthub.frames.~612e62202a3e");
    ck_assert_int_eq(cluster_wire_session_id(subject, id), 0);
    ck_assert_str_eq(id, "a.b *>");
    cluster_wire_subject("runner-1", 1, subject);
    ck_assert_str_eq(subject, "agenthub.frames.=.runner-1");
    ck_assert_int_eq(cluster_wire_session_id(subject, id), -1);
    cluster_wire_subject("r.1", 1, subject);
    ck_assert_str_eq(subject, "agenthub.frames.=.~722e31");
    /* A Runner's subject of older nodes: still not a session's. */
    ck_assert_int_eq(cluster_wire_session_id("agenthub.frames.=runner-1", id), -1);
}
END_TEST

START_TEST(test_malformed_subjects_are_refused)
{
    char id[SESSION_MAX_ID + 1];

    ck_assert_int_eq(cluster_wire_session_id("agenthub.bus", id), -1);
    ck_assert_int_eq(cluster_wire_session_id("agenthub.frames.", id), -1);
    ck_assert_int_eq(cluster_wire_session_id("agenthub.frames.~", id), -1);
    ck_assert_int_eq(cluster_wire_session_id("agenthub.frames.~6", id), -1);
    ck_assert_int_eq(cluster_wire_session_id("agenthub.frames.~zz", id), -1);
    ck_assert_int_eq(cluster_wire_session_id("agenthub.frames.~00", id), -1);
    ck_assert_int_eq(cluster_wire_session_id("agenthub.frames.a.b", id), -1);
}
END_TEST

START_TEST(test_entries_round_trip_and_a_short_rest_is_malformed)
{
    uint8_t body[256];
    struct cluster_wire_entry in[2] = {
        {.kind = CLUSTER_ENTRY_FRAME,
         .at_unix_ms = 1700000000123,
         .runner_seq = 42,
         .origin = (const uint8_t *)"runner-1",
         .origin_len = 8,
         .frame = (const uint8_t *)"frame",
         .frame_len = 5},
        {.kind = 1, .at_unix_ms = -1},
    };
    struct cluster_wire_entry out;
    size_t len = 0, off = 0;

    for (int i = 0; i < 2; i++)
        len += cluster_wire_put(body + len, &in[i]);
    ck_assert_uint_eq(len, 2 * CLUSTER_ENTRY_HEAD + 13);
    ck_assert_int_eq(cluster_wire_next(body, len, &off, &out), 1);
    ck_assert_uint_eq(out.kind, CLUSTER_ENTRY_FRAME);
    ck_assert_int_eq(out.at_unix_ms, 1700000000123);
    ck_assert_uint_eq(out.runner_seq, 42);
    ck_assert_uint_eq(out.origin_len, 8);
    ck_assert_int_eq(memcmp(out.origin, "runner-1", 8), 0);
    ck_assert_uint_eq(out.frame_len, 5);
    ck_assert_int_eq(memcmp(out.frame, "frame", 5), 0);
    ck_assert_int_eq(cluster_wire_next(body, len, &off, &out), 1);
    ck_assert_uint_eq(out.kind, 1);
    ck_assert_int_eq(out.at_unix_ms, -1);
    ck_assert_int_eq(cluster_wire_next(body, len, &off, &out), 0);
    /* Cut short: the first entry stands, the rest is malformed. */
    off = 0;
    ck_assert_int_eq(cluster_wire_next(body, len - 1, &off, &out), 1);
    ck_assert_int_eq(cluster_wire_next(body, len - 1, &off, &out), -1);
    off = 0;
    ck_assert_int_eq(cluster_wire_next(body, CLUSTER_ENTRY_HEAD + 3, &off, &out), -1);
}
END_TEST

START_TEST(test_bus_entries_read_back_and_truncated_bodies_are_refused)
{
    uint8_t body[2 * CLUSTER_BUS_ENTRY_HEAD + 5];
    const uint8_t *payload;
    size_t at = 0, len;
    int64_t stamp;

    cluster_wire_bus_put(body, 42, "abc", 3);
    cluster_wire_bus_put(body + CLUSTER_BUS_ENTRY_HEAD + 3, -7, "de", 2);
    ck_assert_uint_eq(cluster_wire_bus_entry_size(body), CLUSTER_BUS_ENTRY_HEAD + 3);
    ck_assert_int_eq(cluster_wire_bus_next(body, sizeof(body), &at, &stamp, &payload, &len), 1);
    ck_assert_int_eq(stamp, 42);
    ck_assert_uint_eq(len, 3);
    ck_assert_int_eq(memcmp(payload, "abc", 3), 0);
    ck_assert_int_eq(cluster_wire_bus_next(body, sizeof(body), &at, &stamp, &payload, &len), 1);
    ck_assert_int_eq(stamp, -7);
    ck_assert_int_eq(memcmp(payload, "de", 2), 0);
    ck_assert_int_eq(cluster_wire_bus_next(body, sizeof(body), &at, &stamp, &payload, &len), 0);
    /* A body cut inside a head or inside a payload: refused, AT unchanged. */
    for (size_t cut = 1; cut < CLUSTER_BUS_ENTRY_HEAD + 3; cut++) {
        at = 0;
        ck_assert_int_eq(cluster_wire_bus_next(body, cut, &at, &stamp, &payload, &len), -1);
        ck_assert_uint_eq(at, 0);
    }
}
END_TEST

Suite *cluster_wire_suite(void)
{
    Suite *suite = suite_create("cluster_wire");
    TCase *tc = tcase_create("wire");

    tcase_add_test(tc, test_subjects_carry_plain_ids_as_they_are_and_others_in_hex);
    tcase_add_test(tc, test_malformed_subjects_are_refused);
    tcase_add_test(tc, test_bus_entries_read_back_and_truncated_bodies_are_refused);
    tcase_add_test(tc, test_entries_round_trip_and_a_short_rest_is_malformed);
    suite_add_tcase(suite, tc);
    return suite;
}
