/* Unit tests for the per-session record ring. */
#include "core/ring.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

static uint64_t append_str(struct ring *r, const char *s, int64_t at)
{
    return ring_append(r, s, strlen(s), at);
}

START_TEST(empty_ring_allocates_nothing_and_reports_none)
{
    struct ring r;
    struct ring_entry e;

    ring_init(&r, 0);
    ck_assert_uint_eq(ring_heap_bytes(&r), 0);
    ck_assert_uint_eq(ring_memory_bytes(&r), sizeof(struct ring));
    ck_assert_uint_eq(ring_oldest_seq(&r), 0);
    ck_assert_uint_eq(ring_newest_seq(&r), 0);
    ck_assert_int_eq(ring_next(&r, 0, &e), RING_NONE);
    ck_assert_uint_eq(ring_tail_cursor(&r, 10), 0);
    ring_free(&r);
}
END_TEST

START_TEST(append_assigns_seq_from_one_and_reads_in_place)
{
    struct ring r;
    struct ring_entry e;

    ring_init(&r, 1024);
    ck_assert_uint_eq(append_str(&r, "alpha", 100), 1);
    ck_assert_uint_eq(append_str(&r, "beta", 200), 2);
    ck_assert_int_eq(ring_next(&r, 0, &e), RING_OK);
    ck_assert_uint_eq(e.seq, 1);
    ck_assert_int_eq(e.at_unix_ms, 100);
    ck_assert_uint_eq(e.len, 5);
    ck_assert_mem_eq(e.data, "alpha", 5);
    ck_assert_int_eq(ring_next(&r, 1, &e), RING_OK);
    ck_assert_uint_eq(e.seq, 2);
    ck_assert_mem_eq(e.data, "beta", 4);
    ck_assert_int_eq(ring_next(&r, 2, &e), RING_NONE);
    ck_assert_int_eq(ring_next(&r, 99, &e), RING_NONE);
    ck_assert_uint_eq(ring_oldest_seq(&r), 1);
    ck_assert_uint_eq(ring_newest_seq(&r), 2);
    ring_free(&r);
}
END_TEST

START_TEST(append_past_bound_evicts_oldest_and_cursor_reports_evicted)
{
    struct ring r;
    struct ring_entry e;
    char buf[100];
    uint64_t i;

    memset(buf, 'x', sizeof(buf));
    ring_init(&r, 10 * (100 + RING_SLOT_BYTES));
    for (i = 1; i <= 25; i++)
        ck_assert_uint_eq(ring_append(&r, buf, sizeof(buf), (int64_t)i), i);
    ck_assert_uint_le(ring_retained_bytes(&r), 10 * (100 + RING_SLOT_BYTES));
    ck_assert_uint_eq(ring_newest_seq(&r), 25);
    ck_assert_uint_ge(ring_oldest_seq(&r), 16);
    ck_assert_int_eq(ring_next(&r, 0, &e), RING_EVICTED);
    ck_assert_int_eq(ring_next(&r, ring_oldest_seq(&r) - 2, &e), RING_EVICTED);
    ck_assert_int_eq(ring_next(&r, ring_oldest_seq(&r) - 1, &e), RING_OK);
    ck_assert_uint_eq(e.seq, ring_oldest_seq(&r));
    ring_free(&r);
}
END_TEST

START_TEST(exact_fit_keeps_exactly_bound_worth_of_entries)
{
    struct ring r;
    char buf[48];
    int i;

    memset(buf, 'y', sizeof(buf));
    ring_init(&r, 4 * (48 + RING_SLOT_BYTES));
    for (i = 0; i < 4; i++)
        ring_append(&r, buf, sizeof(buf), 0);
    ck_assert_uint_eq(ring_count(&r), 4);
    ck_assert_uint_eq(ring_oldest_seq(&r), 1);
    ring_append(&r, buf, sizeof(buf), 0);
    ck_assert_uint_eq(ring_count(&r), 4);
    ck_assert_uint_eq(ring_oldest_seq(&r), 2);
    ring_free(&r);
}
END_TEST

START_TEST(entry_larger_than_bound_is_kept_alone)
{
    struct ring r;
    struct ring_entry e;
    char *big = malloc(5000);

    memset(big, 'b', 5000);
    ring_init(&r, 1000);
    append_str(&r, "one", 1);
    append_str(&r, "two", 2);
    ck_assert_uint_eq(ring_append(&r, big, 5000, 3), 3);
    ck_assert_uint_eq(ring_count(&r), 1);
    ck_assert_uint_eq(ring_oldest_seq(&r), 3);
    ck_assert_int_eq(ring_next(&r, 2, &e), RING_OK);
    ck_assert_uint_eq(e.len, 5000);
    ck_assert_int_eq(e.data[4999], 'b');
    ck_assert_uint_eq(append_str(&r, "four", 4), 4);
    ck_assert_uint_eq(ring_count(&r), 1);
    ck_assert_int_eq(ring_next(&r, 3, &e), RING_OK);
    ck_assert_mem_eq(e.data, "four", 4);
    ck_assert_int_eq(ring_next(&r, 2, &e), RING_EVICTED);
    free(big);
    ring_free(&r);
}
END_TEST

START_TEST(empty_entries_are_kept_and_read)
{
    struct ring r;
    struct ring_entry e;

    ring_init(&r, 1000);
    ck_assert_uint_eq(ring_append(&r, NULL, 0, 7), 1);
    ck_assert_int_eq(ring_next(&r, 0, &e), RING_OK);
    ck_assert_uint_eq(e.len, 0);
    ck_assert_ptr_nonnull(e.data);
    ck_assert_int_eq(e.at_unix_ms, 7);
    ring_free(&r);
}
END_TEST

START_TEST(tail_cursor_replays_last_n_retained)
{
    struct ring r;
    struct ring_entry e;
    int i;

    ring_init(&r, 0);
    for (i = 0; i < 10; i++)
        append_str(&r, "x", i);
    ck_assert_uint_eq(ring_tail_cursor(&r, 0), 10);
    ck_assert_uint_eq(ring_tail_cursor(&r, 3), 7);
    ck_assert_int_eq(ring_next(&r, ring_tail_cursor(&r, 3), &e), RING_OK);
    ck_assert_uint_eq(e.seq, 8);
    ck_assert_uint_eq(ring_tail_cursor(&r, 100), 0);
    ring_free(&r);
}
END_TEST

START_TEST(tail_cursor_after_eviction_starts_at_oldest)
{
    struct ring r;
    struct ring_entry e;
    char buf[84];
    int i;

    memset(buf, 0, sizeof(buf));
    ring_init(&r, 5 * 100);
    for (i = 0; i < 20; i++)
        ring_append(&r, buf, sizeof(buf), i);
    ck_assert_uint_eq(ring_tail_cursor(&r, 1000), ring_oldest_seq(&r) - 1);
    ck_assert_int_eq(ring_next(&r, ring_tail_cursor(&r, 1000), &e), RING_OK);
    ck_assert_uint_eq(e.seq, ring_oldest_seq(&r));
    ring_free(&r);
}
END_TEST

START_TEST(skip_to_starts_a_copy_where_its_source_is)
{
    struct ring r;
    struct ring_entry e;

    ring_init(&r, 1024);
    ck_assert_uint_eq(append_str(&r, "one", 1), 1);
    ring_skip_to(&r, 1); /* not past the ring's own: nothing changes */
    ck_assert_uint_eq(ring_newest_seq(&r), 1);
    ring_skip_to(&r, 10);
    ck_assert_uint_eq(ring_count(&r), 0);
    ck_assert_uint_eq(ring_newest_seq(&r), 9);
    /* A reader before the skip is told the entries are gone. */
    ck_assert_int_eq(ring_next(&r, 1, &e), RING_EVICTED);
    ck_assert_int_eq(ring_cursor_check(&r, 1), RING_EVICTED);
    ck_assert_uint_eq(append_str(&r, "ten", 2), 10);
    ck_assert_int_eq(ring_next(&r, 9, &e), RING_OK);
    ck_assert_uint_eq(e.seq, 10);
    ck_assert_uint_eq(ring_oldest_seq(&r), 10);
    ring_free(&r);
}
END_TEST

START_TEST(memory_accounting_matches_allocations_and_stays_bounded)
{
    struct ring r;
    char buf[200];
    int i;

    memset(buf, 1, sizeof(buf));
    ring_init(&r, 64 * 1024);
    for (i = 0; i < 10000; i++)
        ring_append(&r, buf, sizeof(buf), i);
    /* Data buffer never grows past the bound; the index holds at most
     * bound / RING_SLOT_BYTES slots, rounded up to a power of two. */
    ck_assert_uint_le(ring_heap_bytes(&r), 64 * 1024 + 2 * (64 * 1024 / 216 + 64) * 16);
    ck_assert_uint_eq(ring_memory_bytes(&r), sizeof(struct ring) + ring_heap_bytes(&r));
    ring_free(&r);
    ck_assert_uint_eq(ring_heap_bytes(&r), 0);
}
END_TEST

/* Property: random sizes never exceed the bound (when each fits), seq strictly
 * increases and every retained entry reads back intact. */
START_TEST(property_random_sizes_respect_bound_and_seq_order)
{
    struct ring r;
    struct ring_entry e;
    unsigned seed = 12345u + (unsigned)_i;
    size_t bound = 256 + (size_t)(rand_r(&seed) % 20000);
    uint8_t buf[4096];
    uint64_t last = 0, cur;
    int i;

    ring_init(&r, bound);
    for (i = 0; i < 5000; i++) {
        size_t len = (size_t)rand_r(&seed) % (bound / 2 < 4096 ? bound / 2 : 4096);
        uint64_t seq;
        memset(buf, (int)(i & 0xff), len);
        if (len >= 4)
            memcpy(buf, &i, sizeof(int));
        seq = ring_append(&r, buf, len, i);
        ck_assert_uint_gt(seq, last);
        ck_assert_uint_eq(seq, last + 1);
        last = seq;
        ck_assert_uint_le(ring_retained_bytes(&r), bound);
        ck_assert_uint_le(ring_heap_bytes(&r) - (size_t)r.slot_cap * RING_SLOT_BYTES, bound);
        ck_assert_uint_eq(ring_newest_seq(&r), seq);
        ck_assert_uint_ge(ring_count(&r), 1);
    }
    /* Walk every retained entry from the oldest. */
    cur = ring_oldest_seq(&r) - 1;
    while (ring_next(&r, cur, &e) == RING_OK) {
        ck_assert_uint_eq(e.seq, cur + 1);
        if (e.len >= 4) {
            int tag;
            memcpy(&tag, e.data, sizeof(int));
            ck_assert_int_eq(tag, (int)e.at_unix_ms);
        }
        if (e.len > 4)
            ck_assert_int_eq(e.data[e.len - 1], (int)(e.at_unix_ms & 0xff));
        cur = e.seq;
    }
    ck_assert_uint_eq(cur, last);
    ring_free(&r);
}
END_TEST

START_TEST(cursor_check_classifies_resume_points)
{
    struct ring r;
    char buf[84];
    int i;

    memset(buf, 0, sizeof(buf));
    ring_init(&r, 5 * 100);
    ck_assert_int_eq(ring_cursor_check(&r, 0), RING_OK);
    ck_assert_int_eq(ring_cursor_check(&r, 1), RING_AHEAD);
    for (i = 0; i < 20; i++)
        ring_append(&r, buf, sizeof(buf), i);
    ck_assert_uint_eq(ring_oldest_seq(&r), 16);
    ck_assert_int_eq(ring_cursor_check(&r, 20), RING_OK);
    ck_assert_int_eq(ring_cursor_check(&r, 15), RING_OK);
    ck_assert_int_eq(ring_cursor_check(&r, 14), RING_EVICTED);
    ck_assert_int_eq(ring_cursor_check(&r, 0), RING_EVICTED);
    ck_assert_int_eq(ring_cursor_check(&r, 21), RING_AHEAD);
    ring_free(&r);
}
END_TEST

/* Property: a reader that lags by a random amount either reads exactly the
 * next seq or is told it was evicted; it never skips silently. */
START_TEST(property_lagging_reader_never_skips)
{
    struct ring r;
    struct ring_entry e;
    unsigned seed = 99u + (unsigned)_i;
    uint8_t buf[600];
    uint64_t cursor = 0;
    int i, evictions = 0, reads = 0;

    memset(buf, 7, sizeof(buf));
    ring_init(&r, 8192);
    for (i = 0; i < 20000; i++) {
        /* Alternate slow phases (falls behind) and fast ones (catches up). */
        int k, burst = (i / 500) % 2 ? (rand_r(&seed) % 4 == 0) : rand_r(&seed) % 8;
        ring_append(&r, buf, (size_t)rand_r(&seed) % sizeof(buf), i);
        for (k = 0; k < burst; k++) {
            enum ring_status st = ring_next(&r, cursor, &e);
            if (st == RING_NONE)
                break;
            if (st == RING_EVICTED) {
                ck_assert_uint_lt(cursor + 1, ring_oldest_seq(&r));
                evictions++;
                cursor = ring_oldest_seq(&r) - 1; /* rejoin at the oldest */
                continue;
            }
            ck_assert_uint_eq(e.seq, cursor + 1);
            ck_assert_int_eq(e.at_unix_ms, (int64_t)(e.seq - 1));
            cursor = e.seq;
            reads++;
        }
    }
    ck_assert_int_gt(reads, 0);
    ck_assert_int_gt(evictions, 0);
    ring_free(&r);
}
END_TEST

START_TEST(trim_evicts_oldest_and_gives_memory_back)
{
    struct ring r;
    struct ring_entry e;
    uint8_t buf[1000];
    uint64_t i, newest;
    size_t heap, freed;

    memset(buf, 'x', sizeof(buf));
    ring_init(&r, 1 << 20);
    for (i = 0; i < 1000; i++)
        ring_append(&r, buf, sizeof(buf), (int64_t)i);
    heap = ring_heap_bytes(&r);
    newest = ring_newest_seq(&r);
    /* Keep about a tenth: the oldest go, the newest stay readable in order. */
    freed = ring_trim(&r, 100 * (sizeof(buf) + RING_SLOT_BYTES));
    ck_assert_uint_eq(ring_count(&r), 100);
    ck_assert_uint_eq(ring_newest_seq(&r), newest);
    ck_assert_uint_eq(ring_oldest_seq(&r), newest - 99);
    ck_assert_uint_eq(freed, heap - ring_heap_bytes(&r));
    ck_assert_uint_lt(ring_heap_bytes(&r), heap / 4);
    ck_assert_int_eq(ring_next(&r, 0, &e), RING_EVICTED);
    ck_assert_int_eq(ring_next(&r, newest - 100, &e), RING_OK);
    ck_assert_uint_eq(e.seq, newest - 99);
    ck_assert_int_eq(e.at_unix_ms, (int64_t)(newest - 100));
    /* Appends continue with the next seq and regrow as needed. */
    for (i = 0; i < 500; i++)
        ck_assert_uint_eq(ring_append(&r, buf, sizeof(buf), 0), newest + 1 + i);
    /* KEEP 0 frees everything; seqs are never reused. */
    heap = ring_heap_bytes(&r);
    ck_assert_uint_eq(ring_trim(&r, 0), heap);
    ck_assert_uint_eq(ring_heap_bytes(&r), 0);
    ck_assert_uint_eq(ring_count(&r), 0);
    ck_assert_uint_eq(ring_append(&r, buf, 10, 0), newest + 501);
    ring_free(&r);
}
END_TEST

Suite *ring_suite(void)
{
    Suite *s = suite_create("ring");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, empty_ring_allocates_nothing_and_reports_none);
    tcase_add_test(tc, append_assigns_seq_from_one_and_reads_in_place);
    tcase_add_test(tc, append_past_bound_evicts_oldest_and_cursor_reports_evicted);
    tcase_add_test(tc, exact_fit_keeps_exactly_bound_worth_of_entries);
    tcase_add_test(tc, entry_larger_than_bound_is_kept_alone);
    tcase_add_test(tc, empty_entries_are_kept_and_read);
    tcase_add_test(tc, tail_cursor_replays_last_n_retained);
    tcase_add_test(tc, tail_cursor_after_eviction_starts_at_oldest);
    tcase_add_test(tc, skip_to_starts_a_copy_where_its_source_is);
    tcase_add_test(tc, memory_accounting_matches_allocations_and_stays_bounded);
    tcase_add_loop_test(tc, property_random_sizes_respect_bound_and_seq_order, 0, 20);
    tcase_add_test(tc, cursor_check_classifies_resume_points);
    tcase_add_loop_test(tc, property_lagging_reader_never_skips, 0, 5);
    tcase_add_test(tc, trim_evicts_oldest_and_gives_memory_back);
    suite_add_tcase(s, tc);
    return s;
}
