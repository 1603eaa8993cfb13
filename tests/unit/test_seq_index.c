/* Unit tests for the map from a ring's local seqs to a copy's own seqs. */
#include "core/seq_index.h"

#include <check.h>

START_TEST(an_empty_index_finds_nothing_and_has_no_newest)
{
    struct seq_index x = {0};

    ck_assert_uint_eq(seq_index_newest(&x), 0);
    ck_assert_uint_eq(seq_index_after(&x, 0), 0);
    seq_index_free(&x);
}
END_TEST

START_TEST(the_entry_after_a_seq_is_found_across_gaps)
{
    struct seq_index x = {0};

    /* Local seqs 1..3 hold 1024, 1025, 5120 (two batches). */
    ck_assert_int_eq(seq_index_reserve(&x), 0);
    seq_index_push(&x, 1, 1024, 1);
    ck_assert_int_eq(seq_index_reserve(&x), 0);
    seq_index_push(&x, 2, 1025, 1);
    ck_assert_int_eq(seq_index_reserve(&x), 0);
    seq_index_push(&x, 3, 5120, 1);
    ck_assert_uint_eq(seq_index_newest(&x), 5120);
    ck_assert_uint_eq(seq_index_after(&x, 0), 1);
    ck_assert_uint_eq(seq_index_after(&x, 1024), 2);
    /* A seq inside a gap: the next one held. */
    ck_assert_uint_eq(seq_index_after(&x, 1026), 3);
    ck_assert_uint_eq(seq_index_at(&x, 3), 5120);
    ck_assert_uint_eq(seq_index_after(&x, 5120), 0);
    ck_assert_uint_eq(x.floor, 0);
    seq_index_free(&x);
}
END_TEST

START_TEST(evicted_entries_raise_the_floor_and_are_no_longer_found)
{
    struct seq_index x = {0};

    for (uint64_t l = 1; l <= 10; l++) {
        ck_assert_int_eq(seq_index_reserve(&x), 0);
        seq_index_push(&x, l, l * 10, 1);
    }
    /* The ring evicted local 1..4 before local 11 came. */
    ck_assert_int_eq(seq_index_reserve(&x), 0);
    seq_index_push(&x, 11, 110, 5);
    ck_assert_uint_eq(x.floor, 40);
    ck_assert_uint_eq(x.count, 7);
    ck_assert_uint_eq(seq_index_after(&x, 0), 5);
    ck_assert_uint_eq(seq_index_at(&x, 5), 50);
    seq_index_raise_floor(&x, 30); /* never lowered */
    ck_assert_uint_eq(x.floor, 40);
    seq_index_free(&x);
}
END_TEST

START_TEST(growing_past_its_capacity_keeps_every_entry_in_order)
{
    struct seq_index x = {0};
    uint64_t n = 5000, oldest = 1;

    /* A window of at most 1500 entries slides over 5000, so the array
     * wraps and doubles while entries are held. */
    for (uint64_t l = 1; l <= n; l++) {
        if (l > 1500)
            oldest = l - 1500;
        ck_assert_int_eq(seq_index_reserve(&x), 0);
        seq_index_push(&x, l, 3 * l + 7, oldest);
    }
    ck_assert_uint_eq(x.first, oldest);
    for (uint64_t l = x.first; l < x.first + x.count; l++) {
        ck_assert_uint_eq(seq_index_at(&x, l), 3 * l + 7);
        ck_assert_uint_eq(seq_index_after(&x, 3 * l + 6), l);
        ck_assert_uint_eq(seq_index_after(&x, 3 * l + 7), l + 1 < x.first + x.count ? l + 1 : 0);
    }
    ck_assert_uint_eq(x.floor, 3 * (oldest - 1) + 7);
    seq_index_free(&x);
}
END_TEST

START_TEST(an_index_emptied_by_eviction_starts_again_at_the_next_local_seq)
{
    struct seq_index x = {0};

    ck_assert_int_eq(seq_index_reserve(&x), 0);
    seq_index_push(&x, 1, 100, 1);
    ck_assert_int_eq(seq_index_reserve(&x), 0);
    seq_index_push(&x, 2, 200, 1);
    /* One large entry evicted both before it. */
    ck_assert_int_eq(seq_index_reserve(&x), 0);
    seq_index_push(&x, 3, 300, 3);
    ck_assert_uint_eq(x.count, 1);
    ck_assert_uint_eq(x.floor, 200);
    ck_assert_uint_eq(seq_index_after(&x, 250), 3);
    seq_index_free(&x);
}
END_TEST

Suite *seq_index_suite(void)
{
    Suite *s = suite_create("seq_index");
    TCase *tc = tcase_create("seq_index");

    tcase_add_test(tc, an_empty_index_finds_nothing_and_has_no_newest);
    tcase_add_test(tc, the_entry_after_a_seq_is_found_across_gaps);
    tcase_add_test(tc, evicted_entries_raise_the_floor_and_are_no_longer_found);
    tcase_add_test(tc, growing_past_its_capacity_keeps_every_entry_in_order);
    tcase_add_test(tc, an_index_emptied_by_eviction_starts_again_at_the_next_local_seq);
    suite_add_tcase(s, tc);
    return s;
}
