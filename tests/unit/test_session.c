/* Unit tests for the session registry. */
#include "core/session.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sub {
    struct watcher w; /* first: wake casts back */
    uint64_t cursor;
    int wakes;
    int ended_seen;
    struct session *s;
    int leave_on_end;
    uint64_t delivered;
};

static void sub_wake(struct watcher *w)
{
    struct sub *u = (struct sub *)w;
    struct ring_entry e;

    u->wakes++;
    /* Drain in place, as the RPC data provider would. */
    while (ring_next(session_ring(u->s), u->cursor, &e) == RING_OK) {
        u->cursor = e.seq;
        u->delivered++;
    }
    if (session_is_ended(u->s)) {
        u->ended_seen = 1;
        if (u->leave_on_end)
            session_unwatch(u->s, &u->w);
    }
}

static void sub_init(struct sub *u, struct session *s)
{
    memset(u, 0, sizeof(*u));
    u->w.wake = sub_wake;
    u->s = s;
    u->cursor = ring_newest_seq(session_ring(s));
}

static struct session *open_id(struct session_registry *reg, const char *id)
{
    struct session *s;

    ck_assert_int_ge(session_open(reg, id, strlen(id), &s), 0);
    return s;
}

START_TEST(open_creates_then_finds_the_same_session)
{
    struct session_registry reg;
    struct session *a, *b;

    session_registry_init(&reg, 0);
    ck_assert_ptr_null(session_find(&reg, "s1", 2));
    ck_assert_int_eq(session_open(&reg, "s1", 2, &a), SESSION_CREATED);
    ck_assert_int_eq(session_open(&reg, "s1", 2, &b), SESSION_EXISTS);
    ck_assert_ptr_eq(a, b);
    ck_assert_ptr_eq(session_find(&reg, "s1", 2), a);
    ck_assert_str_eq(session_id(a), "s1");
    ck_assert_int_eq(arbiter_state(session_arbiter(a)), ARBITER_STARTING);
    ck_assert_uint_eq(session_registry_count(&reg), 1);
    session_registry_free(&reg);
}
END_TEST

START_TEST(bad_ids_are_refused)
{
    struct session_registry reg;
    struct session *s;
    char big[SESSION_MAX_ID + 2];

    memset(big, 'a', sizeof(big));
    session_registry_init(&reg, 0);
    ck_assert_int_eq(session_open(&reg, "", 0, &s), SESSION_BAD_ID);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(session_open(&reg, big, SESSION_MAX_ID + 1, &s), SESSION_BAD_ID);
    ck_assert_int_eq(session_open(&reg, big, SESSION_MAX_ID, &s), SESSION_CREATED);
    session_registry_free(&reg);
}
END_TEST

START_TEST(many_sessions_are_all_found_after_growth)
{
    struct session_registry reg;
    char id[32];
    int i, n = 5000;

    session_registry_init(&reg, 0);
    for (i = 0; i < n; i++) {
        snprintf(id, sizeof(id), "sess-%d", i);
        open_id(&reg, id);
    }
    ck_assert_uint_eq(session_registry_count(&reg), (size_t)n);
    for (i = 0; i < n; i++) {
        struct session *s;
        snprintf(id, sizeof(id), "sess-%d", i);
        s = session_find(&reg, id, strlen(id));
        ck_assert_ptr_nonnull(s);
        ck_assert_str_eq(session_id(s), id);
    }
    ck_assert_ptr_null(session_find(&reg, "sess-x", 6));
    session_registry_free(&reg);
}
END_TEST

START_TEST(append_wakes_watchers_which_read_in_place)
{
    struct session_registry reg;
    struct session *s;
    struct sub a, b;

    session_registry_init(&reg, 0);
    s = open_id(&reg, "s");
    session_append(s, "zero", 4, 1);
    sub_init(&a, s);
    sub_init(&b, s);
    session_watch(s, &a.w);
    session_watch(s, &b.w);
    ck_assert_uint_eq(session_watcher_count(s), 2);
    ck_assert_uint_eq(session_append(s, "one", 3, 2), 2);
    ck_assert_uint_eq(session_append(s, "two", 3, 3), 3);
    ck_assert_int_eq(a.wakes, 2);
    ck_assert_uint_eq(a.delivered, 2);
    ck_assert_uint_eq(b.cursor, 3);
    session_unwatch(s, &a.w);
    session_unwatch(s, &b.w);
    session_registry_free(&reg);
}
END_TEST

START_TEST(end_without_retention_or_watchers_frees_and_forgets_at_once)
{
    struct session_registry reg;
    struct session *s;

    session_registry_init(&reg, 0);
    session_registry_set_retention(&reg, 0, SESSION_DEFAULT_RETAIN_MS);
    s = open_id(&reg, "gone");
    session_append(s, "x", 1, 1);
    session_end(s);
    ck_assert_ptr_null(session_find(&reg, "gone", 4));
    ck_assert_uint_eq(session_registry_count(&reg), 0);
    ck_assert(list_is_empty(&reg.all));
    session_registry_free(&reg);
}
END_TEST

START_TEST(ended_session_lives_until_last_watcher_leaves)
{
    struct session_registry reg;
    struct session *s, *again;
    struct sub a, b;

    session_registry_init(&reg, 0);
    session_registry_set_retention(&reg, SESSION_DEFAULT_RETAIN_BYTES, 0);
    s = open_id(&reg, "s");
    sub_init(&a, s);
    sub_init(&b, s);
    session_watch(s, &a.w);
    session_watch(s, &b.w);
    session_append(s, "last", 4, 1);
    session_end(s);
    ck_assert_int_eq(a.ended_seen, 1);
    ck_assert_uint_eq(a.delivered, 1);
    ck_assert_ptr_null(session_find(&reg, "s", 1));
    ck_assert_uint_eq(session_append(s, "late", 4, 2), 0);
    /* The id can be reopened while the old one drains. */
    ck_assert_int_eq(session_open(&reg, "s", 1, &again), SESSION_CREATED);
    ck_assert_ptr_ne(again, s);
    ck_assert_ptr_eq(session_first(&reg), again);
    ck_assert_ptr_null(session_next(again));
    session_unwatch(s, &a.w);
    ck_assert_ptr_nonnull(list_next(&reg.all, list_first(&reg.all))); /* still held by b */
    session_unwatch(s, &b.w);
    ck_assert_ptr_null(list_next(&reg.all, list_first(&reg.all)));
    session_registry_free(&reg);
}
END_TEST

START_TEST(watchers_leaving_inside_end_wake_free_safely)
{
    struct session_registry reg;
    struct session *s;
    struct sub a, b;

    session_registry_init(&reg, 0);
    s = open_id(&reg, "s");
    sub_init(&a, s);
    sub_init(&b, s);
    a.leave_on_end = b.leave_on_end = 1;
    session_watch(s, &a.w);
    session_watch(s, &b.w);
    session_end(s); /* both leave during the pass; ASan checks the free */
    ck_assert_int_eq(a.ended_seen, 1);
    ck_assert_int_eq(b.ended_seen, 1);
    ck_assert(list_is_empty(&reg.all));
    session_registry_free(&reg);
}
END_TEST

START_TEST(binding_is_copied_and_replaceable)
{
    struct session_registry reg;
    struct session *s;
    char runner[16] = "runner-1";

    session_registry_init(&reg, 0);
    s = open_id(&reg, "s");
    ck_assert_ptr_null(session_binding(s));
    ck_assert_int_eq(session_bind(s, runner), 0);
    runner[0] = 'X';
    ck_assert_str_eq(session_binding(s), "runner-1");
    ck_assert_int_eq(session_bind(s, "runner-2"), 0);
    ck_assert_str_eq(session_binding(s), "runner-2");
    ck_assert_int_eq(session_bind(s, NULL), 0);
    ck_assert_ptr_null(session_binding(s));
    session_registry_free(&reg);
}
END_TEST

START_TEST(ring_bound_applies_per_session)
{
    struct session_registry reg;
    struct session *s;
    char frame[200];
    int i;

    memset(frame, 'f', sizeof(frame));
    session_registry_init(&reg, 4096);
    s = open_id(&reg, "s");
    for (i = 0; i < 1000; i++)
        session_append(s, frame, sizeof(frame), i);
    ck_assert_uint_le(ring_retained_bytes(session_ring(s)), 4096);
    ck_assert_uint_eq(ring_newest_seq(session_ring(s)), 1000);
    session_registry_free(&reg);
}
END_TEST

START_TEST(empty_session_costs_under_1k)
{
    struct session_registry reg;
    struct session *s;

    session_registry_init(&reg, 0);
    s = open_id(&reg, "0f27f8c6-8133-956e-aaaa-bbbbccccdddd");
    ck_assert_uint_le(session_memory_bytes(s), 1024);
    ck_assert_uint_le(sizeof(struct watcher) + sizeof(uint64_t), 256);
    session_registry_free(&reg);
}
END_TEST

START_TEST(iteration_visits_every_live_session_once)
{
    struct session_registry reg;
    struct session *s, *dead;
    int n = 0;

    session_registry_init(&reg, 0);
    open_id(&reg, "a");
    dead = open_id(&reg, "b");
    open_id(&reg, "c");
    session_end(dead);
    for (s = session_first(&reg); s != NULL; s = session_next(s))
        n++;
    ck_assert_int_eq(n, 2);
    session_registry_free(&reg);
}
END_TEST

START_TEST(budget_trims_the_least_recently_appended_sessions_first)
{
    struct session_registry reg;
    struct session *a, *b, *c;
    struct sub ua;
    struct ring_entry e;
    uint8_t frame[4000];
    int i;

    memset(frame, 'f', sizeof(frame));
    session_registry_init(&reg, 1 << 20);
    a = open_id(&reg, "a");
    b = open_id(&reg, "b");
    c = open_id(&reg, "c");
    sub_init(&ua, a);
    session_watch(a, &ua.w);
    for (i = 0; i < 200; i++) /* a is filled first: the least recent */
        session_append(a, frame, sizeof(frame), i);
    for (i = 0; i < 200; i++)
        session_append(b, frame, sizeof(frame), i);
    ck_assert_uint_eq(session_registry_log_bytes(&reg),
                      ring_heap_bytes(session_ring(a)) + ring_heap_bytes(session_ring(b)));
    ck_assert_uint_eq(reg.trimmed_bytes, 0);
    /* A budget of about 1.5 sessions: a, the idlest, pays, b does not. */
    session_registry_set_budget(&reg, 1200 * 1024);
    ck_assert_uint_le(session_registry_log_bytes(&reg), 1200 * 1024);
    ck_assert_uint_eq(ring_count(session_ring(b)), 200);
    ck_assert_uint_lt(ring_count(session_ring(a)), 200);
    ck_assert_uint_gt(reg.trimmed_bytes, 0);
    ck_assert_uint_eq(ring_newest_seq(session_ring(a)), 200);
    /* The watcher of a, caught up, is unaffected; one from the start is told. */
    ck_assert_int_eq(ring_next(session_ring(a), ua.cursor, &e), RING_NONE);
    ck_assert_int_eq(ring_next(session_ring(a), 0, &e), RING_EVICTED);
    /* c's appends now push out a's, then b's oldest entries, never c's own. */
    for (i = 0; i < 200; i++) {
        session_append(c, frame, sizeof(frame), i);
        ck_assert_uint_le(session_registry_log_bytes(&reg), 1200 * 1024);
    }
    ck_assert_uint_eq(ring_count(session_ring(c)), 200);
    ck_assert_uint_eq(ring_heap_bytes(session_ring(a)), 0);
    ck_assert_uint_lt(ring_count(session_ring(b)), 200);
    /* An ended session's retained log still counts; evicting it gives its
     * bytes back to the registry. */
    session_end(b);
    ck_assert_uint_eq(session_registry_log_bytes(&reg),
                      ring_heap_bytes(session_ring(b)) + ring_heap_bytes(session_ring(c)));
    ck_assert_uint_eq(reg.retained_bytes, ring_heap_bytes(session_ring(b)));
    session_registry_set_retention(&reg, 0, 0);
    ck_assert_uint_eq(session_registry_log_bytes(&reg), ring_heap_bytes(session_ring(c)));
    session_unwatch(a, &ua.w);
    session_registry_free(&reg);
}
END_TEST

/* Fills S with N frames of 1000 bytes. */
static void fill(struct session *s, int n)
{
    static const uint8_t frame[1000];

    for (int i = 0; i < n; i++)
        ck_assert_uint_gt(session_append(s, frame, sizeof(frame), i), 0);
}

START_TEST(an_ended_session_log_stays_readable_and_counts)
{
    struct session_registry reg;
    struct session *s;
    struct ring_entry e;
    struct sub late;

    session_registry_init(&reg, 0);
    s = open_id(&reg, "done");
    fill(s, 10);
    session_end(s);
    ck_assert_ptr_null(session_find(&reg, "done", 4));
    ck_assert_ptr_eq(session_lookup(&reg, "done", 4), s);
    ck_assert_int_eq(session_is_ended(s), 1);
    ck_assert_int_eq(session_tail_over(s), 1);
    ck_assert_uint_eq(session_registry_count(&reg), 0);
    ck_assert_uint_eq(reg.retained_count, 1);
    ck_assert_uint_eq(reg.retained_bytes, ring_heap_bytes(session_ring(s)));
    ck_assert_uint_eq(session_registry_log_bytes(&reg), ring_heap_bytes(session_ring(s)));
    ck_assert_int_eq(ring_next(session_ring(s), 0, &e), RING_OK);
    ck_assert_uint_eq(ring_newest_seq(session_ring(s)), 10);
    ck_assert_uint_eq(session_append(s, "late", 4, 1), 0);
    /* A late reader replays it; leaving does not free what is retained. */
    sub_init(&late, s);
    late.cursor = 0;
    session_watch(s, &late.w);
    sub_wake(&late.w);
    ck_assert_uint_eq(late.delivered, 10);
    session_unwatch(s, &late.w);
    ck_assert_ptr_eq(session_lookup(&reg, "done", 4), s);
    /* Not iterated as live. */
    ck_assert_ptr_null(session_first(&reg));
    session_registry_free(&reg);
}
END_TEST

START_TEST(a_reopened_session_continues_its_ring)
{
    struct session_registry reg;
    struct session *s, *again;

    session_registry_init(&reg, 0);
    s = open_id(&reg, "resumed");
    session_bind(s, "runner-1");
    fill(s, 3);
    arbiter_observe(session_arbiter(s), ARBITER_RANK_STREAM, ARBITER_WORKING,
                    ARBITER_LIVE_UNCHANGED, NULL);
    session_end(s);
    ck_assert_int_eq(session_open(&reg, "resumed", 7, &again), SESSION_REOPENED);
    ck_assert_ptr_eq(again, s);
    ck_assert_int_eq(session_is_ended(s), 0);
    ck_assert_int_eq(session_tail_over(s), 0);
    ck_assert_uint_eq(session_tail_start(s), 4);
    ck_assert_ptr_null(session_binding(s));
    ck_assert_int_eq(arbiter_state(session_arbiter(s)), ARBITER_STARTING);
    ck_assert_uint_eq(reg.retained_count, 0);
    ck_assert_uint_eq(reg.retained_bytes, 0);
    ck_assert_uint_eq(session_registry_count(&reg), 1);
    ck_assert_ptr_eq(session_find(&reg, "resumed", 7), s);
    ck_assert_uint_eq(session_append(s, "on", 2, 9), 4);
    ck_assert_uint_eq(ring_oldest_seq(session_ring(s)), 1);
    session_registry_free(&reg);
}
END_TEST

START_TEST(the_agent_stopping_ends_the_tail_and_resuming_starts_one)
{
    struct session_registry reg;
    struct session *s;
    struct sub a;

    session_registry_init(&reg, 0);
    s = open_id(&reg, "s");
    fill(s, 2);
    sub_init(&a, s);
    session_watch(s, &a.w);
    ck_assert_uint_eq(session_tail_start(s), 1);
    session_tail_end(s);
    ck_assert_int_eq(a.wakes, 1);
    ck_assert_int_eq(session_tail_over(s), 1);
    ck_assert_ptr_eq(session_find(&reg, "s", 1), s); /* still live */
    ck_assert_uint_eq(reg.retained_count, 1);
    session_tail_end(s); /* once */
    ck_assert_int_eq(a.wakes, 1);
    /* A repeated terminal state is appended; the tail stays over. */
    ck_assert_uint_eq(session_append(s, "stopped", 7, 3), 3);
    ck_assert_int_eq(session_tail_over(s), 1);
    session_tail_resume(s);
    ck_assert_int_eq(session_tail_over(s), 0);
    ck_assert_uint_eq(session_tail_start(s), 4);
    ck_assert_uint_eq(reg.retained_count, 0);
    ck_assert_uint_eq(reg.retained_bytes, 0);
    ck_assert_uint_eq(session_append(s, "again", 5, 4), 4);
    /* Closed while its tail is over: it keeps its place among the retained. */
    session_tail_end(s);
    session_end(s);
    ck_assert_uint_eq(reg.retained_count, 1);
    ck_assert_ptr_eq(session_lookup(&reg, "s", 1), s);
    session_unwatch(s, &a.w);
    session_registry_free(&reg);
}
END_TEST

START_TEST(retention_bytes_evict_the_oldest_ended_session_first)
{
    struct session_registry reg;
    struct session *a, *b, *c, *fresh;
    size_t one;

    session_registry_init(&reg, 0);
    a = open_id(&reg, "a");
    b = open_id(&reg, "b");
    c = open_id(&reg, "c");
    fill(c, 20); /* c is the most recently appended to, yet ends first */
    fill(b, 20);
    fill(a, 20);
    one = ring_heap_bytes(session_ring(a));
    ck_assert_uint_eq(ring_heap_bytes(session_ring(b)), one);
    session_registry_set_retention(&reg, 2 * one, SESSION_DEFAULT_RETAIN_MS);
    session_end(c);
    session_end(a);
    ck_assert_uint_eq(reg.retained_count, 2);
    ck_assert_uint_eq(reg.evictions[SESSION_EVICT_BYTES], 0);
    session_end(b);
    ck_assert_uint_eq(reg.evictions[SESSION_EVICT_BYTES], 1);
    ck_assert_uint_eq(reg.retained_count, 2);
    ck_assert_uint_le(reg.retained_bytes, 2 * one);
    ck_assert_ptr_null(session_lookup(&reg, "c", 1));
    ck_assert_ptr_eq(session_lookup(&reg, "a", 1), a);
    ck_assert_ptr_eq(session_lookup(&reg, "b", 1), b);
    ck_assert_uint_eq(session_registry_log_bytes(&reg), 2 * one);
    /* The evicted id opens afresh; with nothing to read it is not retained. */
    ck_assert_int_eq(session_open(&reg, "c", 1, &fresh), SESSION_CREATED);
    ck_assert_uint_eq(ring_newest_seq(session_ring(fresh)), 0);
    session_end(fresh);
    ck_assert_uint_eq(reg.retained_count, 2);
    ck_assert_ptr_null(session_lookup(&reg, "c", 1));
    session_registry_free(&reg);
}
END_TEST

START_TEST(retention_age_evicts_logs_ended_too_long_ago)
{
    struct session_registry reg;
    struct session *a, *b;
    int64_t ended_at;

    session_registry_init(&reg, 0);
    session_registry_set_retention(&reg, SESSION_DEFAULT_RETAIN_BYTES, 60000);
    a = open_id(&reg, "a");
    b = open_id(&reg, "b");
    fill(a, 1);
    fill(b, 1);
    session_end(a);
    ended_at = a->over_at_ms;
    b->over = 0;
    session_tail_end(b);
    b->over_at_ms = ended_at + 30000; /* as if it stopped 30 s later */
    ck_assert_uint_eq(session_registry_expire(&reg, ended_at + 59999), 0);
    ck_assert_uint_eq(session_registry_expire(&reg, ended_at + 60000), 1);
    ck_assert_uint_eq(reg.evictions[SESSION_EVICT_AGE], 1);
    ck_assert_uint_eq(reg.retained_count, 1);
    /* b is live (its agent stopped, the session is open): only its log goes. */
    ck_assert_uint_eq(session_registry_expire(&reg, ended_at + 90000), 1);
    ck_assert_ptr_eq(session_find(&reg, "b", 1), b);
    ck_assert_uint_eq(ring_heap_bytes(session_ring(b)), 0);
    ck_assert_uint_eq(ring_newest_seq(session_ring(b)), 1);
    ck_assert_uint_eq(session_registry_log_bytes(&reg), 0);
    session_registry_free(&reg);
}
END_TEST

START_TEST(an_evicted_log_being_read_is_kept_until_its_reader_leaves)
{
    struct session_registry reg;
    struct session *a, *b;
    struct sub ua;

    session_registry_init(&reg, 0);
    a = open_id(&reg, "a");
    b = open_id(&reg, "b");
    fill(a, 5);
    fill(b, 5);
    session_registry_set_retention(&reg, ring_heap_bytes(session_ring(a)),
                                   SESSION_DEFAULT_RETAIN_MS);
    sub_init(&ua, a);
    ua.cursor = 0;
    session_watch(a, &ua.w);
    session_end(a);
    session_end(b); /* a is evicted, but a reader still drains it */
    ck_assert_uint_eq(reg.evictions[SESSION_EVICT_BYTES], 1);
    ck_assert_ptr_null(session_lookup(&reg, "a", 1));
    ck_assert_uint_eq(ua.delivered, 5);
    ck_assert_uint_gt(ring_heap_bytes(session_ring(a)), 0);
    session_unwatch(a, &ua.w); /* frees a */
    ck_assert_ptr_eq(list_first(&reg.all), &b->all_link);
    ck_assert_ptr_null(list_next(&reg.all, &b->all_link));
    session_registry_free(&reg);
}
END_TEST

START_TEST(a_retained_log_trimmed_to_nothing_by_the_budget_is_evicted)
{
    struct session_registry reg;
    struct session *a, *b;

    session_registry_init(&reg, 1 << 20);
    a = open_id(&reg, "a");
    b = open_id(&reg, "b");
    fill(a, 100);
    session_end(a);
    session_registry_set_budget(&reg, ring_heap_bytes(session_ring(a)));
    fill(b, 200); /* pushes a's log out entirely */
    ck_assert_uint_eq(reg.evictions[SESSION_EVICT_BUDGET], 1);
    ck_assert_uint_eq(reg.retained_count, 0);
    ck_assert_ptr_null(session_lookup(&reg, "a", 1));
    ck_assert_ptr_eq(list_first(&reg.all), &b->all_link);
    ck_assert_ptr_null(list_next(&reg.all, &b->all_link));
    session_registry_free(&reg);
}
END_TEST

Suite *session_suite(void)
{
    Suite *s = suite_create("session");
    TCase *tc = tcase_create("registry");

    tcase_add_test(tc, open_creates_then_finds_the_same_session);
    tcase_add_test(tc, bad_ids_are_refused);
    tcase_add_test(tc, many_sessions_are_all_found_after_growth);
    tcase_add_test(tc, append_wakes_watchers_which_read_in_place);
    tcase_add_test(tc, end_without_retention_or_watchers_frees_and_forgets_at_once);
    tcase_add_test(tc, ended_session_lives_until_last_watcher_leaves);
    tcase_add_test(tc, watchers_leaving_inside_end_wake_free_safely);
    tcase_add_test(tc, binding_is_copied_and_replaceable);
    tcase_add_test(tc, ring_bound_applies_per_session);
    tcase_add_test(tc, empty_session_costs_under_1k);
    tcase_add_test(tc, iteration_visits_every_live_session_once);
    tcase_add_test(tc, budget_trims_the_least_recently_appended_sessions_first);
    tcase_add_test(tc, an_ended_session_log_stays_readable_and_counts);
    tcase_add_test(tc, a_reopened_session_continues_its_ring);
    tcase_add_test(tc, the_agent_stopping_ends_the_tail_and_resuming_starts_one);
    tcase_add_test(tc, retention_bytes_evict_the_oldest_ended_session_first);
    tcase_add_test(tc, retention_age_evicts_logs_ended_too_long_ago);
    tcase_add_test(tc, an_evicted_log_being_read_is_kept_until_its_reader_leaves);
    tcase_add_test(tc, a_retained_log_trimmed_to_nothing_by_the_budget_is_evicted);
    suite_add_tcase(s, tc);
    return s;
}
