/* Unit tests for the agent-side batch window. */
#include "runner/batch.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 2000

struct rec {
    int64_t now;
    uint32_t counts[32];
    uint64_t fires[32];
    int npending;
    int nfired;
    uint32_t fired_count;
    char fired_text[256];
    struct batch *self;
    int run_on_fire;
};

static int64_t fake_now(void *ctx)
{
    return ((struct rec *)ctx)->now;
}

static void on_pending(void *ctx, uint32_t count, uint64_t fires_at)
{
    struct rec *r = ctx;

    r->counts[r->npending] = count;
    r->fires[r->npending] = fires_at;
    r->npending++;
}

static void on_fire(void *ctx, const struct batch_item *items, uint32_t count)
{
    struct rec *r = ctx;
    const struct batch_item *it;

    r->nfired++;
    r->fired_count = count;
    r->fired_text[0] = '\0';
    for (it = items; it != NULL; it = it->next)
        strncat(r->fired_text, (const char *)it->data,
                sizeof(r->fired_text) - 1 - strlen(r->fired_text));
    if (r->run_on_fire)
        batch_set_running(r->self, 1);
}

static const struct batch_ops ops = {on_pending, on_fire, fake_now};

static void setup(struct batch *b, struct rec *r)
{
    memset(r, 0, sizeof(*r));
    r->now = 1000000;
    r->self = b;
    batch_init(b, WINDOW, &ops, r);
}

START_TEST(burst_arms_rearms_then_fires_with_counts_1_2_0)
{
    struct batch b;
    struct rec r;

    setup(&b, &r);
    ck_assert_int_eq(batch_next_deadline(&b), -1);
    ck_assert_int_eq(batch_push(&b, "a", 1), 0);
    r.now += 500;
    ck_assert_int_eq(batch_push(&b, "b", 1), 0);
    ck_assert_int_eq(batch_tick(&b, r.now + WINDOW - 1), 0);
    ck_assert_int_eq(batch_tick(&b, r.now + WINDOW), 1);
    ck_assert_int_eq(r.npending, 3);
    ck_assert_uint_eq(r.counts[0], 1);
    ck_assert_uint_eq(r.fires[0], 1000000 + WINDOW);
    ck_assert_uint_eq(r.counts[1], 2);
    ck_assert_uint_eq(r.fires[1], 1000500 + WINDOW);
    ck_assert_uint_eq(r.counts[2], 0);
    ck_assert_uint_eq(r.fires[2], 0);
    ck_assert_int_eq(r.nfired, 1);
    ck_assert_uint_eq(r.fired_count, 2);
    ck_assert_str_eq(r.fired_text, "ab");
    ck_assert_int_eq(batch_next_deadline(&b), -1);
    ck_assert_uint_eq(batch_waiting(&b), 0);
    batch_free(&b);
}
END_TEST

START_TEST(next_deadline_tracks_rearm)
{
    struct batch b;
    struct rec r;

    setup(&b, &r);
    batch_push(&b, "a", 1);
    ck_assert_int_eq(batch_next_deadline(&b), 1000000 + WINDOW);
    r.now += 700;
    batch_push(&b, "b", 1);
    ck_assert_int_eq(batch_next_deadline(&b), 1000700 + WINDOW);
    batch_free(&b);
}
END_TEST

START_TEST(start_now_fires_open_window_at_once)
{
    struct batch b;
    struct rec r;

    setup(&b, &r);
    batch_push(&b, "x", 1);
    ck_assert_int_eq(batch_start_now(&b), 1);
    ck_assert_int_eq(r.nfired, 1);
    ck_assert_int_eq(r.npending, 2);
    ck_assert_uint_eq(r.counts[1], 0);
    ck_assert_uint_eq(r.fires[1], 0);
    batch_free(&b);
}
END_TEST

START_TEST(start_now_without_window_does_nothing)
{
    struct batch b;
    struct rec r;

    setup(&b, &r);
    ck_assert_int_eq(batch_start_now(&b), 0);
    ck_assert_int_eq(r.npending, 0);
    ck_assert_int_eq(r.nfired, 0);
    batch_free(&b);
}
END_TEST

START_TEST(agent_starting_to_run_cancels_window_with_count_zero)
{
    struct batch b;
    struct rec r;

    setup(&b, &r);
    batch_push(&b, "x", 1);
    batch_set_running(&b, 1);
    ck_assert_int_eq(r.npending, 2);
    ck_assert_uint_eq(r.counts[1], 0);
    ck_assert_uint_eq(r.fires[1], 0);
    ck_assert_int_eq(r.nfired, 0);
    ck_assert_int_eq(batch_next_deadline(&b), -1);
    ck_assert_int_eq(batch_tick(&b, r.now + 10 * WINDOW), 0);
    /* The item stays queued and arms the window once the agent is idle. */
    ck_assert_uint_eq(batch_waiting(&b), 1);
    r.now += 5000;
    batch_set_running(&b, 0);
    ck_assert_int_eq(r.npending, 3);
    ck_assert_uint_eq(r.counts[2], 1);
    ck_assert_uint_eq(r.fires[2], 1005000 + WINDOW);
    batch_free(&b);
}
END_TEST

START_TEST(items_while_running_queue_silently)
{
    struct batch b;
    struct rec r;

    setup(&b, &r);
    batch_set_running(&b, 1);
    batch_push(&b, "a", 1);
    batch_push(&b, "b", 1);
    ck_assert_int_eq(r.npending, 0);
    ck_assert_uint_eq(batch_waiting(&b), 2);
    batch_set_running(&b, 0);
    ck_assert_int_eq(r.npending, 1);
    ck_assert_uint_eq(r.counts[0], 2);
    batch_free(&b);
}
END_TEST

START_TEST(agent_end_closes_window_without_count_zero)
{
    struct batch b;
    struct rec r;

    setup(&b, &r);
    batch_push(&b, "x", 1);
    batch_end(&b);
    ck_assert_int_eq(r.npending, 1);
    ck_assert_int_eq(r.nfired, 0);
    ck_assert_int_eq(batch_next_deadline(&b), -1);
    ck_assert_int_eq(batch_start_now(&b), 0);
    ck_assert_int_eq(batch_push(&b, "y", 1), -2);
    ck_assert_int_eq(r.npending, 1);
    batch_free(&b);
}
END_TEST

START_TEST(fire_callback_may_mark_agent_running)
{
    struct batch b;
    struct rec r;

    setup(&b, &r);
    r.run_on_fire = 1;
    batch_push(&b, "x", 1);
    ck_assert_int_eq(batch_tick(&b, r.now + WINDOW), 1);
    /* Already closed when the fire ran: no second count-0 event. */
    ck_assert_int_eq(r.npending, 2);
    batch_push(&b, "y", 1);
    ck_assert_int_eq(r.npending, 2);
    batch_free(&b);
}
END_TEST

Suite *batch_suite(void)
{
    Suite *s = suite_create("batch");
    TCase *tc = tcase_create("window");

    tcase_add_test(tc, burst_arms_rearms_then_fires_with_counts_1_2_0);
    tcase_add_test(tc, next_deadline_tracks_rearm);
    tcase_add_test(tc, start_now_fires_open_window_at_once);
    tcase_add_test(tc, start_now_without_window_does_nothing);
    tcase_add_test(tc, agent_starting_to_run_cancels_window_with_count_zero);
    tcase_add_test(tc, items_while_running_queue_silently);
    tcase_add_test(tc, agent_end_closes_window_without_count_zero);
    tcase_add_test(tc, fire_callback_may_mark_agent_running);
    suite_add_tcase(s, tc);
    return s;
}
