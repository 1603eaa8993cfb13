/* intrusive_list: common/list.h, the circular list with a head node. */
#include <check.h>
#include <stdlib.h>

#include "common/list.h"

struct item {
    int value;
    struct list_node link;
};

/* Writes the values of HEAD's items into OUT (at most MAX) and returns how
 * many the list holds. */
static int values_of(const struct list_node *head, int *out, int max)
{
    const struct list_node *node;
    int n = 0;

    list_for_each (node, head) {
        if (n < max)
            out[n] = list_entry(node, const struct item, link)->value;
        n++;
    }
    return n;
}

START_TEST(test_an_empty_list_has_no_first_or_last)
{
    struct list_node head;

    list_init(&head);
    ck_assert(list_is_empty(&head));
    ck_assert_ptr_null(list_first(&head));
    ck_assert_ptr_null(list_last(&head));
}
END_TEST

START_TEST(test_insert_at_head_and_tail_keeps_order)
{
    struct list_node head;
    struct item items[4] = {{.value = 0}, {.value = 1}, {.value = 2}, {.value = 3}};
    int got[4];

    list_init(&head);
    list_insert_tail(&head, &items[1].link);
    list_insert_tail(&head, &items[2].link);
    list_insert_head(&head, &items[0].link);
    list_insert_tail(&head, &items[3].link);
    ck_assert(!list_is_empty(&head));
    ck_assert_int_eq(values_of(&head, got, 4), 4);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(got[i], i);
    ck_assert_ptr_eq(list_first(&head), &items[0].link);
    ck_assert_ptr_eq(list_last(&head), &items[3].link);
    ck_assert_ptr_eq(list_next(&head, &items[1].link), &items[2].link);
    ck_assert_ptr_null(list_next(&head, &items[3].link));
}
END_TEST

START_TEST(test_a_zeroed_or_removed_node_is_unlinked_and_removing_it_again_is_harmless)
{
    struct list_node head;
    struct item a = {0}, b = {0};
    int got[2];

    list_init(&head);
    ck_assert(!list_is_linked(&a.link));
    list_insert_tail(&head, &a.link);
    list_insert_tail(&head, &b.link);
    ck_assert(list_is_linked(&a.link));
    list_remove(&a.link);
    ck_assert(!list_is_linked(&a.link));
    list_remove(&a.link);
    ck_assert_int_eq(values_of(&head, got, 2), 1);
    list_remove(&b.link);
    ck_assert(list_is_empty(&head));
    /* an unlinked node can go on a list again */
    list_insert_head(&head, &a.link);
    ck_assert_ptr_eq(list_first(&head), &a.link);
}
END_TEST

START_TEST(test_removal_from_the_middle_head_and_tail)
{
    struct list_node head;
    struct item items[5];
    int got[5];

    list_init(&head);
    for (int i = 0; i < 5; i++) {
        items[i] = (struct item){.value = i};
        list_insert_tail(&head, &items[i].link);
    }
    list_remove(&items[2].link);
    list_remove(&items[0].link);
    list_remove(&items[4].link);
    ck_assert_int_eq(values_of(&head, got, 5), 2);
    ck_assert_int_eq(got[0], 1);
    ck_assert_int_eq(got[1], 3);
    ck_assert_ptr_eq(list_first(&head), &items[1].link);
    ck_assert_ptr_eq(list_last(&head), &items[3].link);
}
END_TEST

START_TEST(test_the_safe_walk_may_free_the_node_it_stands_on)
{
    struct list_node head, *node, *next;
    int got[8], kept = 0;

    list_init(&head);
    for (int i = 0; i < 8; i++) {
        struct item *it = calloc(1, sizeof(*it));
        ck_assert_ptr_nonnull(it);
        it->value = i;
        list_insert_tail(&head, &it->link);
    }
    /* drop the odd ones while walking */
    list_for_each_safe (node, next, &head) {
        struct item *it = list_entry(node, struct item, link);
        if (it->value % 2) {
            list_remove(node);
            free(it);
        }
    }
    ck_assert_int_eq(values_of(&head, got, 8), 4);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(got[i], 2 * i);
    list_for_each_safe (node, next, &head) {
        list_remove(node);
        free(list_entry(node, struct item, link));
        kept++;
    }
    ck_assert_int_eq(kept, 4);
    ck_assert(list_is_empty(&head));
}
END_TEST

Suite *intrusive_list_suite(void)
{
    Suite *suite = suite_create("intrusive_list");
    TCase *tc = tcase_create("list");

    tcase_add_test(tc, test_an_empty_list_has_no_first_or_last);
    tcase_add_test(tc, test_insert_at_head_and_tail_keeps_order);
    tcase_add_test(tc, test_a_zeroed_or_removed_node_is_unlinked_and_removing_it_again_is_harmless);
    tcase_add_test(tc, test_removal_from_the_middle_head_and_tail);
    tcase_add_test(tc, test_the_safe_walk_may_free_the_node_it_stands_on);
    suite_add_tcase(suite, tc);
    return suite;
}
