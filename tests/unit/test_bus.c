/* Unit tests for the global event bus and the watcher lists it uses. */
#include "core/bus.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#define EPOCH 0x1234abcdULL

struct sub {
    struct watcher w;
    int wakes;
    struct bus *bus;
    struct sub *victim; /* unlinked by this watcher's wake, if set */
};

static void sub_wake(struct watcher *w)
{
    struct sub *s = (struct sub *)w;

    s->wakes++;
    if (s->victim != NULL) {
        bus_unwatch(s->bus, &s->victim->w);
        s->victim = NULL;
    }
}

static uint64_t pub(struct bus *b, const char *s)
{
    return bus_publish(b, s, strlen(s), 1000);
}

START_TEST(seq_is_strictly_increasing_from_one_and_stamped)
{
    struct bus b;
    struct bus_event ev;
    uint64_t cur;

    bus_init(&b, 0, EPOCH);
    ck_assert_uint_eq(bus_epoch(&b), EPOCH);
    ck_assert_uint_eq(pub(&b, "a"), 1);
    ck_assert_uint_eq(pub(&b, "b"), 2);
    ck_assert_int_eq(bus_cursor_open(&b, 1, EPOCH, &cur), BUS_OK);
    ck_assert_int_eq(bus_next(&b, cur, &ev), BUS_OK);
    ck_assert_uint_eq(ev.seq, 2);
    ck_assert_uint_eq(ev.epoch, EPOCH);
    ck_assert_int_eq(ev.at_unix_ms, 1000);
    ck_assert_mem_eq(ev.payload, "b", 1);
    ck_assert_int_eq(bus_next(&b, ev.seq, &ev), BUS_NONE);
    bus_free(&b);
}
END_TEST

START_TEST(random_epoch_is_nonzero_and_differs)
{
    struct bus a, b;

    bus_init(&a, 0, 0);
    bus_init(&b, 0, 0);
    ck_assert_uint_ne(bus_epoch(&a), 0);
    ck_assert_uint_ne(bus_epoch(&a), bus_epoch(&b));
    bus_free(&a);
    bus_free(&b);
}
END_TEST

START_TEST(since_zero_is_live_only)
{
    struct bus b;
    struct bus_event ev;
    uint64_t cur;

    bus_init(&b, 0, EPOCH);
    pub(&b, "old1");
    pub(&b, "old2");
    ck_assert_int_eq(bus_cursor_open(&b, 0, 0, &cur), BUS_OK);
    ck_assert_int_eq(bus_next(&b, cur, &ev), BUS_NONE);
    pub(&b, "new");
    ck_assert_int_eq(bus_next(&b, cur, &ev), BUS_OK);
    ck_assert_uint_eq(ev.seq, 3);
    /* A stale epoch with since 0 is still just live. */
    ck_assert_int_eq(bus_cursor_open(&b, 0, 999, &cur), BUS_OK);
    ck_assert_uint_eq(cur, 3);
    bus_free(&b);
}
END_TEST

START_TEST(epoch_mismatch_requires_resync)
{
    struct bus b;
    uint64_t cur = 77;

    bus_init(&b, 0, EPOCH);
    pub(&b, "x");
    pub(&b, "y");
    ck_assert_int_eq(bus_cursor_open(&b, 1, EPOCH + 1, &cur), BUS_RESYNC);
    ck_assert_int_eq(bus_cursor_open(&b, 1, 0, &cur), BUS_RESYNC);
    ck_assert_uint_eq(cur, 77);
    ck_assert_int_eq(bus_cursor_open(&b, 2, EPOCH, &cur), BUS_OK);
    ck_assert_uint_eq(cur, 2);
    bus_free(&b);
}
END_TEST

START_TEST(since_beyond_newest_requires_resync)
{
    struct bus b;
    uint64_t cur;

    bus_init(&b, 0, EPOCH);
    ck_assert_int_eq(bus_cursor_open(&b, 1, EPOCH, &cur), BUS_RESYNC);
    pub(&b, "x");
    ck_assert_int_eq(bus_cursor_open(&b, 2, EPOCH, &cur), BUS_RESYNC);
    bus_free(&b);
}
END_TEST

START_TEST(evicted_resume_point_requires_resync)
{
    struct bus b;
    struct bus_event ev;
    uint64_t cur, oldest, i;
    char payload[100];

    memset(payload, 'p', sizeof(payload));
    bus_init(&b, 1000, EPOCH);
    for (i = 0; i < 50; i++)
        bus_publish(&b, payload, sizeof(payload), (int64_t)i);
    oldest = b.ring.next_seq - b.ring.count;
    ck_assert_uint_gt(oldest, 2);
    ck_assert_int_eq(bus_cursor_open(&b, oldest - 2, EPOCH, &cur), BUS_RESYNC);
    ck_assert_int_eq(bus_cursor_open(&b, oldest - 1, EPOCH, &cur), BUS_OK);
    ck_assert_int_eq(bus_next(&b, cur, &ev), BUS_OK);
    ck_assert_uint_eq(ev.seq, oldest);
    /* A reader overtaken by eviction gets resync from bus_next too. */
    ck_assert_int_eq(bus_next(&b, 1, &ev), BUS_RESYNC);
    bus_free(&b);
}
END_TEST

START_TEST(bus_stays_within_its_byte_bound)
{
    struct bus b;
    char payload[300];
    int i;

    memset(payload, 0, sizeof(payload));
    bus_init(&b, 64 * 1024, EPOCH);
    for (i = 0; i < 10000; i++)
        bus_publish(&b, payload, (size_t)(i % 300), i);
    ck_assert_uint_le(ring_retained_bytes(&b.ring), 64 * 1024);
    ck_assert_uint_eq(bus_newest_seq(&b), 10000);
    bus_free(&b);
}
END_TEST

START_TEST(publish_wakes_every_watcher_once)
{
    struct bus b;
    struct sub s1 = {{.wake = sub_wake}, 0, NULL, NULL};
    struct sub s2 = {{.wake = sub_wake}, 0, NULL, NULL};

    bus_init(&b, 0, EPOCH);
    bus_watch(&b, &s1.w);
    bus_watch(&b, &s2.w);
    pub(&b, "x");
    ck_assert_int_eq(s1.wakes, 1);
    ck_assert_int_eq(s2.wakes, 1);
    bus_unwatch(&b, &s1.w);
    pub(&b, "y");
    ck_assert_int_eq(s1.wakes, 1);
    ck_assert_int_eq(s2.wakes, 2);
    bus_unwatch(&b, &s2.w);
    ck_assert_uint_eq(b.watchers.count, 0);
    bus_free(&b);
}
END_TEST

START_TEST(watcher_may_unlink_another_during_wake)
{
    struct bus b;
    struct sub s1 = {{.wake = sub_wake}, 0, NULL, NULL};
    struct sub s2 = {{.wake = sub_wake}, 0, NULL, NULL};
    struct sub s3 = {{.wake = sub_wake}, 0, NULL, NULL};

    bus_init(&b, 0, EPOCH);
    bus_watch(&b, &s1.w);
    bus_watch(&b, &s2.w);
    bus_watch(&b, &s3.w);
    s1.bus = &b;
    s1.victim = &s2;
    pub(&b, "x");
    ck_assert_int_eq(s1.wakes, 1);
    ck_assert_int_eq(s2.wakes, 0);
    ck_assert_int_eq(s3.wakes, 1);
    ck_assert_uint_eq(b.watchers.count, 2);
    bus_unwatch(&b, &s1.w);
    bus_unwatch(&b, &s3.w);
    bus_free(&b);
}
END_TEST

static struct bus *reentry_bus;
static int reentry_wakes;

static void reentrant_wake(struct watcher *w)
{
    (void)w;
    if (++reentry_wakes == 1)
        pub(reentry_bus, "again");
}

START_TEST(publish_from_a_wake_folds_into_one_more_pass)
{
    struct bus b;
    struct watcher w = {.wake = reentrant_wake};

    bus_init(&b, 0, EPOCH);
    reentry_bus = &b;
    reentry_wakes = 0;
    bus_watch(&b, &w);
    pub(&b, "x");
    ck_assert_int_eq(reentry_wakes, 2);
    ck_assert_uint_eq(bus_newest_seq(&b), 2);
    bus_unwatch(&b, &w);
    bus_free(&b);
}
END_TEST

Suite *bus_suite(void)
{
    Suite *s = suite_create("bus");
    TCase *tc = tcase_create("bus");

    tcase_add_test(tc, seq_is_strictly_increasing_from_one_and_stamped);
    tcase_add_test(tc, random_epoch_is_nonzero_and_differs);
    tcase_add_test(tc, since_zero_is_live_only);
    tcase_add_test(tc, epoch_mismatch_requires_resync);
    tcase_add_test(tc, since_beyond_newest_requires_resync);
    tcase_add_test(tc, evicted_resume_point_requires_resync);
    tcase_add_test(tc, bus_stays_within_its_byte_bound);
    tcase_add_test(tc, publish_wakes_every_watcher_once);
    tcase_add_test(tc, watcher_may_unlink_another_during_wake);
    tcase_add_test(tc, publish_from_a_wake_folds_into_one_more_pass);
    suite_add_tcase(s, tc);
    return s;
}
