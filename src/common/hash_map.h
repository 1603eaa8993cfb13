/* hash_map: an intrusive chained hash table keyed by bytes, and the one
 * FNV-1a hash the code uses.
 *
 * A structure that can be found by key embeds a `struct hash_map_node`;
 * the node points at the key, which lives in the structure itself (an id,
 * a subject), so the table allocates nothing but its bucket array.  The
 * bucket count is a power of two and doubles when the table holds as many
 * nodes as buckets, so chains stay short; a doubling that finds no memory
 * leaves the table as it was and only lengthens chains.
 *
 * Iteration (hash_map_first, hash_map_next) visits every node once in no
 * particular order.  The caller may remove the node it stands on once it
 * has asked for the next one; inserting during a walk may move nodes and
 * is not allowed.
 *
 * Not thread-safe; every caller keeps a table on one thread. */
#ifndef AGENTHUB_COMMON_HASH_MAP_H
#define AGENTHUB_COMMON_HASH_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "common/container_of.h"

/* FNV-1a, 64 bits: the offset basis a hash starts from. */
#define HASH_FNV1A_OFFSET_BASIS 0xcbf29ce484222325ull

/* Continues the FNV-1a hash HASH over LEN bytes at BYTES; start from
 * HASH_FNV1A_OFFSET_BASIS.  Not a cryptographic hash: a sender that picks
 * keys can make them collide. */
uint64_t hash_fnv1a_extend(uint64_t hash, const void *bytes, size_t len);

/* The FNV-1a hash of LEN bytes at BYTES. */
uint64_t hash_fnv1a(const void *bytes, size_t len);

struct hash_map_node {
    struct hash_map_node *next; /* the bucket's chain */
    const void *key;            /* the owner's bytes; they must not change while linked */
    size_t key_len;
    uint64_t hash;
};

struct hash_map {
    struct hash_map_node **buckets; /* NULL until the first insert */
    size_t bucket_count;            /* a power of two, or 0 */
    size_t count;
};

enum hash_map_result {
    HASH_MAP_OK = 0,
    HASH_MAP_NO_MEMORY = 1, /* the first bucket array could not be allocated */
};

/* The structure of TYPE whose hash_map_node MEMBER is NODE. */
#define hash_map_entry(node, type, member) container_of(node, type, member)

/* Makes MAP an empty table (allocates nothing). */
void hash_map_init(struct hash_map *map);

/* Frees MAP's bucket array and makes it empty; the nodes are the caller's
 * and are left as they are. */
void hash_map_free(struct hash_map *map);

/* The node under the LEN bytes at KEY, or NULL. */
struct hash_map_node *hash_map_find(const struct hash_map *map, const void *key, size_t len);

/* Makes room for one more node: doubles the bucket array when MAP holds
 * as many nodes as buckets.  Returns HASH_MAP_OK (a failed doubling of an
 * array that exists only lengthens chains), or HASH_MAP_NO_MEMORY when MAP
 * had no buckets and none could be allocated. */
enum hash_map_result hash_map_reserve(struct hash_map *map);

/* Links NODE under the LEN bytes at KEY, which must stay valid and
 * unchanged while NODE is linked; KEY must not be in MAP yet.  Returns
 * HASH_MAP_OK, or HASH_MAP_NO_MEMORY (NODE not linked) when MAP had no
 * buckets and none could be allocated.  Inline so that static analysis
 * sees the owner of NODE kept by MAP rather than leaked. */
static inline enum hash_map_result hash_map_insert(struct hash_map *map, struct hash_map_node *node,
                                                   const void *key, size_t len)
{
    struct hash_map_node **slot;

    if (hash_map_reserve(map) != HASH_MAP_OK)
        return HASH_MAP_NO_MEMORY;
    node->key = key;
    node->key_len = len;
    node->hash = hash_fnv1a(key, len);
    slot = &map->buckets[node->hash & (map->bucket_count - 1)];
    node->next = *slot;
    *slot = node;
    map->count++;
    return HASH_MAP_OK;
}

/* Unlinks NODE, which must be in MAP. */
void hash_map_remove(struct hash_map *map, struct hash_map_node *node);

/* A node of MAP, or NULL when it is empty. */
struct hash_map_node *hash_map_first(const struct hash_map *map);

/* The node after NODE (in MAP) in the walk, or NULL after the last. */
struct hash_map_node *hash_map_next(const struct hash_map *map, const struct hash_map_node *node);

static inline size_t hash_map_count(const struct hash_map *map)
{
    return map->count;
}

/* The heap bytes MAP holds (its bucket array). */
static inline size_t hash_map_memory_bytes(const struct hash_map *map)
{
    return map->bucket_count * sizeof(*map->buckets);
}

#endif
