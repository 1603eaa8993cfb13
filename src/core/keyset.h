/* keyset: a bounded memory of recently seen keys, for dropping resent
 * frames that carry an idempotency key.
 *
 * A key (a scope, such as a session id, and the key itself) is remembered
 * as a 128-bit fingerprint, never as its bytes, so memory does not depend
 * on how long keys are.  Two generations of KEYSET_GENERATION fingerprints
 * each: when the newer one fills, the older is forgotten and the newer takes
 * its place.  So the last KEYSET_GENERATION keys added are always
 * remembered, and at most 2 * KEYSET_GENERATION; a key older than that may
 * be taken as new again.  Memory: 2 * KEYSET_SLOTS * 16 bytes (64 KiB),
 * allocated on the first add.
 *
 * The fingerprint is not a cryptographic hash: a sender that crafts two keys
 * with one fingerprint only gets its own second frame dropped. */
#ifndef AGENTHUB_CORE_KEYSET_H
#define AGENTHUB_CORE_KEYSET_H

#include <stddef.h>
#include <stdint.h>

#define KEYSET_GENERATION 1024u
#define KEYSET_SLOTS      (2 * KEYSET_GENERATION) /* load stays at or under 1/2 */

struct keyset_fp {
    uint64_t a, b; /* a is never 0: 0 marks an empty slot */
};

struct keyset {
    struct keyset_fp *gen[2]; /* [0] newer, [1] older; KEYSET_SLOTS each */
    uint32_t count;           /* keys in gen[0] */
};

/* The fingerprint of SCOPE[0..SCOPE_LEN) and KEY[0..KEY_LEN) together
 * (("ab", "c") and ("a", "bc") differ). */
struct keyset_fp keyset_fingerprint(const void *scope, size_t scope_len, const void *key,
                                    size_t key_len);

/* 1 when FP is remembered, else 0. */
int keyset_contains(const struct keyset *set, struct keyset_fp fp);

/* Remembers FP (nothing changes when it already is).  Returns 0, or -1 when
 * memory is short (FP is then not remembered). */
int keyset_add(struct keyset *set, struct keyset_fp fp);

/* Frees what SET holds; it is empty and usable after. */
void keyset_clear(struct keyset *set);

#endif
