/* Unit tests for the Runners' marks a cluster node learns from the log. */
#include "hub/runner_marks.h"

#include <check.h>
#include <string.h>

static uint64_t mark_of(struct runner_marks *m, const char *id, uint64_t *gen)
{
    return runner_marks_get(m, id, gen, NULL);
}

START_TEST(test_the_mark_is_the_prefix_with_no_hole)
{
    struct runner_marks *m = runner_marks_new();
    uint64_t gen = 99;

    ck_assert_uint_eq(mark_of(m, "runner-1", &gen), 0);
    ck_assert_uint_eq(gen, 0);
    /* 96 of one session stored while 95 of another is not: the mark stays
     * at 94, so the Runner sends 95 again rather than losing it. */
    runner_marks_dealt(m, "runner-1", 8, 0, 1, 94);
    runner_marks_dealt(m, "runner-1", 8, 0, 96, 96);
    ck_assert_uint_eq(mark_of(m, "runner-1", &gen), 94);
    runner_marks_dealt(m, "runner-1", 8, 0, 95, 95);
    ck_assert_uint_eq(mark_of(m, "runner-1", &gen), 96);
    /* A copy of a frame dealt with moves nothing. */
    runner_marks_dealt(m, "runner-1", 8, 0, 3, 3);
    ck_assert_uint_eq(mark_of(m, "runner-1", &gen), 96);
    runner_marks_dealt(m, "runner-2", 8, 0, 1, 9);
    ck_assert_uint_eq(mark_of(m, "runner-2", &gen), 9);
    /* An id is its bytes, not a prefix. */
    ck_assert_uint_eq(mark_of(m, "runner-", &gen), 0);
    runner_marks_free(m);
}
END_TEST

START_TEST(test_a_value_beyond_the_window_is_forgotten_and_the_mark_stays_lower)
{
    struct runner_marks *m = runner_marks_new();
    uint64_t gen;

    runner_marks_dealt(m, "r", 1, 0, RUNNER_MARKS_WINDOW + 5, RUNNER_MARKS_WINDOW + 5);
    runner_marks_dealt(m, "r", 1, 0, 1, RUNNER_MARKS_WINDOW + 4);
    /* The far value was not remembered: it is asked for again, never
     * assumed. */
    ck_assert_uint_eq(mark_of(m, "r", &gen), RUNNER_MARKS_WINDOW + 4);
    runner_marks_dealt(m, "r", 1, 0, RUNNER_MARKS_WINDOW + 5, RUNNER_MARKS_WINDOW + 5);
    ck_assert_uint_eq(mark_of(m, "r", &gen), RUNNER_MARKS_WINDOW + 5);
    /* Values just above the prefix fill in out of order. */
    for (uint64_t v = RUNNER_MARKS_WINDOW + 100; v > RUNNER_MARKS_WINDOW + 5; v--)
        runner_marks_dealt(m, "r", 1, 0, v, v);
    ck_assert_uint_eq(mark_of(m, "r", &gen), RUNNER_MARKS_WINDOW + 100);
    runner_marks_free(m);
}
END_TEST

START_TEST(test_runs_are_told_apart_by_nonce_and_reset_once)
{
    struct runner_marks *m = runner_marks_new();
    uint64_t gen, nonce;

    runner_marks_dealt(m, "runner-1", 8, 0, 1, 1813);
    /* The new run's frames can be read before its reset (another subject):
     * they count for that run, not the old one. */
    runner_marks_dealt(m, "runner-1", 8, 777, 1, 3);
    ck_assert_uint_eq(mark_of(m, "runner-1", &gen), 1813);
    runner_marks_reset(m, "runner-1", 8, 777);
    ck_assert_uint_eq(runner_marks_get(m, "runner-1", &gen, &nonce), 3);
    ck_assert_uint_eq(gen, 1);
    ck_assert_uint_eq(nonce, 777);
    /* The old run's frames, late, never raise the new run's mark. */
    runner_marks_dealt(m, "runner-1", 8, 0, 1814, 1900);
    ck_assert_uint_eq(mark_of(m, "runner-1", &gen), 3);
    /* The node that resets applies it at once, then again from the log. */
    runner_marks_reset(m, "runner-1", 8, 777);
    ck_assert_uint_eq(mark_of(m, "runner-1", &gen), 3);
    ck_assert_uint_eq(gen, 1);
    runner_marks_reset(m, "runner-1", 8, 778);
    ck_assert_uint_eq(mark_of(m, "runner-1", &gen), 0);
    ck_assert_uint_eq(gen, 2);
    runner_marks_free(m);
}
END_TEST

Suite *runner_marks_suite(void)
{
    Suite *suite = suite_create("runner_marks");
    TCase *tc = tcase_create("marks");

    tcase_add_test(tc, test_the_mark_is_the_prefix_with_no_hole);
    tcase_add_test(tc, test_a_value_beyond_the_window_is_forgotten_and_the_mark_stays_lower);
    tcase_add_test(tc, test_runs_are_told_apart_by_nonce_and_reset_once);
    suite_add_tcase(suite, tc);
    return suite;
}
