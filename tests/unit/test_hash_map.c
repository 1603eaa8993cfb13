/* hash_map: common/hash_map.h, the intrusive table keyed by bytes. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash_map.h"

struct entry {
    struct hash_map_node node;
    int value;
    char key[16];
};

static struct entry *entry_new(int value)
{
    struct entry *e = calloc(1, sizeof(*e));

    ck_assert_ptr_nonnull(e);
    e->value = value;
    snprintf(e->key, sizeof(e->key), "key-%d", value);
    return e;
}

static struct entry *find(const struct hash_map *map, const char *key)
{
    struct hash_map_node *n = hash_map_find(map, key, strlen(key));

    return n ? hash_map_entry(n, struct entry, node) : NULL;
}

static void free_all(struct hash_map *map)
{
    struct hash_map_node *n = hash_map_first(map), *next;

    for (; n != NULL; n = next) {
        next = hash_map_next(map, n);
        hash_map_remove(map, n);
        free(hash_map_entry(n, struct entry, node));
    }
    ck_assert_uint_eq(hash_map_count(map), 0);
    hash_map_free(map);
}

START_TEST(test_fnv1a_matches_the_published_vectors)
{
    ck_assert_uint_eq(hash_fnv1a("", 0), 0xcbf29ce484222325ull);
    ck_assert_uint_eq(hash_fnv1a("a", 1), 0xaf63dc4c8601ec8cull);
    ck_assert_uint_eq(hash_fnv1a("foobar", 6), 0x85944171f73967e8ull);
    /* extending is hashing the concatenation */
    ck_assert_uint_eq(hash_fnv1a_extend(hash_fnv1a("foo", 3), "bar", 3), hash_fnv1a("foobar", 6));
}
END_TEST

START_TEST(test_an_empty_map_finds_nothing_and_walks_nothing)
{
    struct hash_map map;

    hash_map_init(&map);
    ck_assert_ptr_null(hash_map_find(&map, "x", 1));
    ck_assert_ptr_null(hash_map_first(&map));
    ck_assert_uint_eq(hash_map_memory_bytes(&map), 0);
    hash_map_free(&map);
}
END_TEST

START_TEST(test_insert_find_remove)
{
    struct hash_map map;
    struct entry *a = entry_new(1), *b = entry_new(2);

    hash_map_init(&map);
    ck_assert_int_eq(hash_map_insert(&map, &a->node, a->key, strlen(a->key)), HASH_MAP_OK);
    ck_assert_int_eq(hash_map_insert(&map, &b->node, b->key, strlen(b->key)), HASH_MAP_OK);
    ck_assert_uint_eq(hash_map_count(&map), 2);
    ck_assert_ptr_eq(find(&map, "key-1"), a);
    ck_assert_ptr_eq(find(&map, "key-2"), b);
    /* a prefix, a longer key and a different key are other keys */
    ck_assert_ptr_null(find(&map, "key-"));
    ck_assert_ptr_null(find(&map, "key-10"));
    ck_assert_ptr_null(find(&map, "key-3"));
    hash_map_remove(&map, &a->node);
    ck_assert_ptr_null(find(&map, "key-1"));
    ck_assert_ptr_eq(find(&map, "key-2"), b);
    ck_assert_uint_eq(hash_map_count(&map), 1);
    /* a removed node goes back in */
    ck_assert_int_eq(hash_map_insert(&map, &a->node, a->key, strlen(a->key)), HASH_MAP_OK);
    ck_assert_ptr_eq(find(&map, "key-1"), a);
    free_all(&map);
}
END_TEST

START_TEST(test_keys_are_bytes_not_strings)
{
    struct hash_map map;
    struct hash_map_node one, two;
    static const char with_nul[] = {'a', '\0', 'b'};

    hash_map_init(&map);
    ck_assert_int_eq(hash_map_insert(&map, &one, with_nul, 3), HASH_MAP_OK);
    ck_assert_int_eq(hash_map_insert(&map, &two, with_nul, 1), HASH_MAP_OK);
    ck_assert_ptr_eq(hash_map_find(&map, "a\0b", 3), &one);
    ck_assert_ptr_eq(hash_map_find(&map, "a", 1), &two);
    ck_assert_ptr_null(hash_map_find(&map, "a\0c", 3));
    hash_map_free(&map);
}
END_TEST

START_TEST(test_growth_keeps_every_key_and_the_load_at_most_one)
{
    enum { N = 5000 };
    struct hash_map map;
    char key[16];
    size_t walked = 0;

    hash_map_init(&map);
    for (int i = 0; i < N; i++) {
        struct entry *e = entry_new(i);
        ck_assert_int_eq(hash_map_insert(&map, &e->node, e->key, strlen(e->key)), HASH_MAP_OK);
        ck_assert_uint_le(hash_map_count(&map), map.bucket_count);
    }
    ck_assert_uint_eq(hash_map_count(&map), N);
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof(key), "key-%d", i);
        ck_assert_ptr_nonnull(find(&map, key));
        ck_assert_int_eq(find(&map, key)->value, i);
    }
    for (struct hash_map_node *n = hash_map_first(&map); n; n = hash_map_next(&map, n))
        walked++;
    ck_assert_uint_eq(walked, N);
    ck_assert_uint_eq(hash_map_memory_bytes(&map), map.bucket_count * sizeof(void *));
    free_all(&map);
}
END_TEST

START_TEST(test_keys_sharing_a_bucket_are_told_apart)
{
    struct hash_map map;
    struct entry *first = entry_new(0), *others[8];
    int found = 0;

    hash_map_init(&map);
    ck_assert_int_eq(hash_map_insert(&map, &first->node, first->key, strlen(first->key)),
                     HASH_MAP_OK);
    /* keys whose hash lands in the first key's bucket of the first array */
    for (int v = 1; found < 8 && v < 100000; v++) {
        struct entry *e = entry_new(v);
        if ((hash_fnv1a(e->key, strlen(e->key)) & (map.bucket_count - 1)) ==
            (first->node.hash & (map.bucket_count - 1)))
            others[found++] = e;
        else
            free(e);
    }
    ck_assert_int_eq(found, 8);
    for (int i = 0; i < 7; i++)
        ck_assert_int_eq(
            hash_map_insert(&map, &others[i]->node, others[i]->key, strlen(others[i]->key)),
            HASH_MAP_OK);
    ck_assert_ptr_eq(find(&map, first->key), first);
    for (int i = 0; i < 7; i++)
        ck_assert_ptr_eq(find(&map, others[i]->key), others[i]);
    ck_assert_ptr_null(find(&map, others[7]->key));
    /* remove from the middle of the chain, then its head */
    hash_map_remove(&map, &others[3]->node);
    hash_map_remove(&map, &others[6]->node);
    ck_assert_ptr_null(find(&map, others[3]->key));
    ck_assert_ptr_eq(find(&map, others[2]->key), others[2]);
    ck_assert_ptr_eq(find(&map, first->key), first);
    free(others[3]);
    free(others[6]);
    free(others[7]);
    free_all(&map);
}
END_TEST

START_TEST(test_the_walker_may_remove_the_node_it_stands_on)
{
    enum { N = 300 };
    struct hash_map map;
    struct hash_map_node *n, *next;
    size_t left = 0;
    char key[16];

    hash_map_init(&map);
    for (int i = 0; i < N; i++) {
        struct entry *e = entry_new(i);
        ck_assert_int_eq(hash_map_insert(&map, &e->node, e->key, strlen(e->key)), HASH_MAP_OK);
    }
    for (n = hash_map_first(&map); n != NULL; n = next) {
        struct entry *e = hash_map_entry(n, struct entry, node);
        next = hash_map_next(&map, n);
        if (e->value % 3 == 0) {
            hash_map_remove(&map, n);
            free(e);
        }
    }
    ck_assert_uint_eq(hash_map_count(&map), N - (N + 2) / 3);
    for (n = hash_map_first(&map); n != NULL; n = hash_map_next(&map, n)) {
        ck_assert_int_ne(hash_map_entry(n, struct entry, node)->value % 3, 0);
        left++;
    }
    ck_assert_uint_eq(left, hash_map_count(&map));
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof(key), "key-%d", i);
        ck_assert(i % 3 == 0 ? find(&map, key) == NULL : find(&map, key) != NULL);
    }
    free_all(&map);
}
END_TEST

Suite *hash_map_suite(void)
{
    Suite *suite = suite_create("hash_map");
    TCase *tc = tcase_create("map");

    tcase_add_test(tc, test_fnv1a_matches_the_published_vectors);
    tcase_add_test(tc, test_an_empty_map_finds_nothing_and_walks_nothing);
    tcase_add_test(tc, test_insert_find_remove);
    tcase_add_test(tc, test_keys_are_bytes_not_strings);
    tcase_add_test(tc, test_growth_keeps_every_key_and_the_load_at_most_one);
    tcase_add_test(tc, test_keys_sharing_a_bucket_are_told_apart);
    tcase_add_test(tc, test_the_walker_may_remove_the_node_it_stands_on);
    suite_add_tcase(suite, tc);
    return suite;
}
