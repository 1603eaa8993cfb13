/* keyset: see keyset.h.  Each generation is an open-addressing table with
 * linear probing and no deletion: a generation is dropped whole. */
#include "core/keyset.h"

#include <stdlib.h>
#include <string.h>

#include "common/hash_map.h"

/* The 64-bit finalizer of MurmurHash3: spreads every input bit. */
static uint64_t mix64(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

/* FNV-1a over the eight bytes of V, least significant first, from H. */
static uint64_t fnv1a_u64(uint64_t h, uint64_t v)
{
    uint8_t bytes[8];

    for (int i = 0; i < 8; i++)
        bytes[i] = (uint8_t)(v >> (8 * i));
    return hash_fnv1a_extend(h, bytes, sizeof(bytes));
}

struct keyset_fp keyset_fingerprint(const void *scope, size_t scope_len, const void *key,
                                    size_t key_len)
{
    uint64_t a = HASH_FNV1A_OFFSET_BASIS, b = 0x84222325cbf29ce4ULL;
    struct keyset_fp fp;

    /* The lengths go in first, so the split between scope and key counts. */
    a = fnv1a_u64(fnv1a_u64(a, scope_len), key_len);
    a = hash_fnv1a_extend(a, scope, scope_len);
    a = hash_fnv1a_extend(a, key, key_len);
    /* The second lane reads the bytes in another order from another start, so the two
     * halves do not collide together. */
    b = hash_fnv1a_extend(b, key, key_len);
    b = fnv1a_u64(fnv1a_u64(b, key_len), scope_len);
    b = hash_fnv1a_extend(b, scope, scope_len);
    fp.a = mix64(a) | 1u;
    fp.b = mix64(b ^ (a << 1));
    return fp;
}

/* The slot of FP in TABLE: where it is, or the empty slot where it would
 * go.  The table is never full (load at most 1/2), so this ends. */
static struct keyset_fp *slot_of(struct keyset_fp *table, struct keyset_fp fp)
{
    uint32_t i = (uint32_t)(fp.b ^ (fp.a >> 32)) & (KEYSET_SLOTS - 1);

    while (table[i].a != 0 && (table[i].a != fp.a || table[i].b != fp.b))
        i = (i + 1) & (KEYSET_SLOTS - 1);
    return &table[i];
}

int keyset_contains(const struct keyset *set, struct keyset_fp fp)
{
    for (int g = 0; g < 2; g++)
        if (set->gen[g] && slot_of(set->gen[g], fp)->a != 0)
            return 1;
    return 0;
}

int keyset_add(struct keyset *set, struct keyset_fp fp)
{
    struct keyset_fp *slot;

    if (keyset_contains(set, fp))
        return 0;
    if (!set->gen[0]) {
        set->gen[0] = calloc(KEYSET_SLOTS, sizeof(*set->gen[0]));
        if (!set->gen[0])
            return -1;
        set->count = 0;
    }
    if (set->count >= KEYSET_GENERATION) {
        /* The newer generation is full: it becomes the older one, and the
         * older one's table is reused, emptied, as the newer. */
        struct keyset_fp *older = set->gen[1];
        if (!older && !(older = malloc(KEYSET_SLOTS * sizeof(*older))))
            return -1;
        memset(older, 0, KEYSET_SLOTS * sizeof(*older));
        set->gen[1] = set->gen[0];
        set->gen[0] = older;
        set->count = 0;
    }
    slot = slot_of(set->gen[0], fp);
    *slot = fp;
    set->count++;
    return 0;
}

void keyset_clear(struct keyset *set)
{
    free(set->gen[0]);
    free(set->gen[1]);
    memset(set, 0, sizeof(*set));
}
