/* Unit tests for the bounded memory of idempotency keys. */
#include "core/keyset.h"

#include <check.h>
#include <stdio.h>
#include <string.h>

static struct keyset_fp fp_of(const char *scope, unsigned n)
{
    char key[32];

    snprintf(key, sizeof(key), "key-%u", n);
    return keyset_fingerprint(scope, strlen(scope), key, strlen(key));
}

START_TEST(a_key_is_remembered_once_added)
{
    struct keyset set = {0};

    ck_assert_int_eq(keyset_contains(&set, fp_of("sess-1", 1)), 0);
    ck_assert_int_eq(keyset_add(&set, fp_of("sess-1", 1)), 0);
    ck_assert_int_eq(keyset_contains(&set, fp_of("sess-1", 1)), 1);
    /* The same key in another session is another frame. */
    ck_assert_int_eq(keyset_contains(&set, fp_of("sess-2", 1)), 0);
    ck_assert_int_eq(keyset_contains(&set, fp_of("sess-1", 2)), 0);
    /* Adding it again changes nothing. */
    ck_assert_int_eq(keyset_add(&set, fp_of("sess-1", 1)), 0);
    ck_assert_uint_eq(set.count, 1);
    keyset_clear(&set);
    ck_assert_int_eq(keyset_contains(&set, fp_of("sess-1", 1)), 0);
}
END_TEST

START_TEST(where_scope_ends_and_key_begins_counts)
{
    struct keyset_fp a = keyset_fingerprint("ab", 2, "c", 1);
    struct keyset_fp b = keyset_fingerprint("a", 1, "bc", 2);
    struct keyset_fp c = keyset_fingerprint("ab", 2, "c", 1);

    ck_assert(a.a != b.a || a.b != b.b);
    ck_assert(a.a == c.a && a.b == c.b);
    ck_assert(a.a != 0);
}
END_TEST

START_TEST(the_last_generation_is_always_remembered_and_memory_is_bounded)
{
    struct keyset set = {0};
    unsigned total = 5 * KEYSET_GENERATION + 17;

    for (unsigned i = 0; i < total; i++)
        ck_assert_int_eq(keyset_add(&set, fp_of("s", i)), 0);
    /* The newest KEYSET_GENERATION keys are all there... */
    for (unsigned i = total - KEYSET_GENERATION; i < total; i++)
        ck_assert_msg(keyset_contains(&set, fp_of("s", i)), "key %u forgotten", i);
    /* ...the oldest are not: at most two generations are held. */
    for (unsigned i = 0; i < total - 2 * KEYSET_GENERATION; i++)
        ck_assert_msg(!keyset_contains(&set, fp_of("s", i)), "key %u still held", i);
    ck_assert_uint_le(set.count, KEYSET_GENERATION);
    keyset_clear(&set);
}
END_TEST

START_TEST(fingerprints_of_many_keys_do_not_collide)
{
    struct keyset set = {0};

    /* Within one generation nothing added is taken for another key. */
    for (unsigned i = 0; i < KEYSET_GENERATION; i++)
        ck_assert_int_eq(keyset_add(&set, fp_of("sess", i)), 0);
    ck_assert_uint_eq(set.count, KEYSET_GENERATION);
    for (unsigned i = KEYSET_GENERATION; i < 100 * KEYSET_GENERATION; i++)
        ck_assert_msg(!keyset_contains(&set, fp_of("sess", i)), "key %u collides", i);
    keyset_clear(&set);
}
END_TEST

Suite *keyset_suite(void)
{
    Suite *s = suite_create("keyset");
    TCase *tc = tcase_create("keyset");

    tcase_add_test(tc, a_key_is_remembered_once_added);
    tcase_add_test(tc, where_scope_ends_and_key_begins_counts);
    tcase_add_test(tc, the_last_generation_is_always_remembered_and_memory_is_bounded);
    tcase_add_test(tc, fingerprints_of_many_keys_do_not_collide);
    suite_add_tcase(s, tc);
    return s;
}
