/* hash_map: see hash_map.h. */
#include "common/hash_map.h"

#include <stdlib.h>
#include <string.h>

/* The first bucket array's size. */
#define HASH_MAP_MIN_BUCKETS 16u

#define FNV1A_PRIME 0x100000001b3ull

uint64_t hash_fnv1a_extend(uint64_t hash, const void *bytes, size_t len)
{
    const uint8_t *p = bytes;

    for (size_t i = 0; i < len; i++)
        hash = (hash ^ p[i]) * FNV1A_PRIME;
    return hash;
}

uint64_t hash_fnv1a(const void *bytes, size_t len)
{
    return hash_fnv1a_extend(HASH_FNV1A_OFFSET_BASIS, bytes, len);
}

void hash_map_init(struct hash_map *map)
{
    map->buckets = NULL;
    map->bucket_count = 0;
    map->count = 0;
}

void hash_map_free(struct hash_map *map)
{
    free(map->buckets);
    hash_map_init(map);
}

static size_t bucket_of(const struct hash_map *map, uint64_t hash)
{
    return (size_t)(hash & (map->bucket_count - 1));
}

struct hash_map_node *hash_map_find(const struct hash_map *map, const void *key, size_t len)
{
    uint64_t hash;

    if (map->count == 0)
        return NULL;
    hash = hash_fnv1a(key, len);
    for (struct hash_map_node *n = map->buckets[bucket_of(map, hash)]; n != NULL; n = n->next)
        if (n->hash == hash && n->key_len == len && memcmp(n->key, key, len) == 0)
            return n;
    return NULL;
}

/* Doubles MAP's bucket array (or makes the first).  Returns 0, or -1 with
 * MAP unchanged when memory is short. */
static int grow(struct hash_map *map)
{
    size_t count = map->bucket_count ? map->bucket_count * 2 : HASH_MAP_MIN_BUCKETS;
    struct hash_map_node **buckets = calloc(count, sizeof(*buckets));

    if (buckets == NULL)
        return -1;
    for (size_t i = 0; i < map->bucket_count; i++) {
        struct hash_map_node *n = map->buckets[i], *next;
        for (; n != NULL; n = next) {
            size_t b = (size_t)(n->hash & (count - 1));
            next = n->next;
            n->next = buckets[b];
            buckets[b] = n;
        }
    }
    free(map->buckets);
    map->buckets = buckets;
    map->bucket_count = count;
    return 0;
}

enum hash_map_result hash_map_reserve(struct hash_map *map)
{
    /* Load factor at most 1; a failed doubling of a table that has buckets
     * only lengthens its chains. */
    if (map->count >= map->bucket_count && grow(map) != 0 && map->bucket_count == 0)
        return HASH_MAP_NO_MEMORY;
    return HASH_MAP_OK;
}

void hash_map_remove(struct hash_map *map, struct hash_map_node *node)
{
    struct hash_map_node **pp = &map->buckets[bucket_of(map, node->hash)];

    while (*pp != node)
        pp = &(*pp)->next;
    *pp = node->next;
    node->next = NULL;
    map->count--;
}

/* The first node in a bucket from FROM on, or NULL. */
static struct hash_map_node *first_from(const struct hash_map *map, size_t from)
{
    for (size_t i = from; i < map->bucket_count; i++)
        if (map->buckets[i] != NULL)
            return map->buckets[i];
    return NULL;
}

struct hash_map_node *hash_map_first(const struct hash_map *map)
{
    return map->count ? first_from(map, 0) : NULL;
}

struct hash_map_node *hash_map_next(const struct hash_map *map, const struct hash_map_node *node)
{
    if (node->next != NULL)
        return node->next;
    return first_from(map, bucket_of(map, node->hash) + 1);
}
