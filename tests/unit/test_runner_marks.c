/* Unit tests for the Runners' marks a cluster node learns from the log. */
#include "hub/runner_marks.h"

#include <check.h>
#include <string.h>

START_TEST(test_marks_rise_reset_once_per_nonce_and_count_generations)
{
    struct runner_marks *m = runner_marks_new();
    uint64_t gen = 99;

    ck_assert_uint_eq(runner_marks_get(m, "runner-1", &gen), 0);
    ck_assert_uint_eq(gen, 0);
    runner_marks_see(m, "runner-1", 8, 5);
    runner_marks_see(m, "runner-1", 8, 3); /* an older frame moves nothing */
    runner_marks_see(m, "runner-2", 8, 9);
    ck_assert_uint_eq(runner_marks_get(m, "runner-1", &gen), 5);
    ck_assert_uint_eq(runner_marks_get(m, "runner-2", &gen), 9);
    /* The node that resets applies it at once, then again from the log. */
    runner_marks_reset(m, "runner-1", 8, 777);
    ck_assert_uint_eq(runner_marks_get(m, "runner-1", &gen), 0);
    ck_assert_uint_eq(gen, 1);
    runner_marks_see(m, "runner-1", 8, 1);
    runner_marks_reset(m, "runner-1", 8, 777);
    ck_assert_uint_eq(runner_marks_get(m, "runner-1", &gen), 1);
    ck_assert_uint_eq(gen, 1);
    runner_marks_reset(m, "runner-1", 8, 778);
    ck_assert_uint_eq(runner_marks_get(m, "runner-1", &gen), 0);
    ck_assert_uint_eq(gen, 2);
    /* An id is its bytes, not a prefix. */
    ck_assert_uint_eq(runner_marks_get(m, "runner-", &gen), 0);
    runner_marks_free(m);
}
END_TEST

Suite *runner_marks_suite(void)
{
    Suite *suite = suite_create("runner_marks");
    TCase *tc = tcase_create("marks");

    tcase_add_test(tc, test_marks_rise_reset_once_per_nonce_and_count_generations);
    suite_add_tcase(suite, tc);
    return suite;
}
