#include "hub/runner_marks.h"

#include <stdlib.h>
#include <string.h>

#include "common/hash_map.h"

/* Runs remembered per Runner: the current one and a few others whose
 * frames can still arrive (another node's, before its reset is read). */
#define RUNS_KEPT 4u

struct run_track {
    uint64_t nonce;
    uint64_t prefix;                         /* every runner_seq up to here is dealt with */
    uint64_t used;                           /* for replacing the least recently used */
    uint8_t window[RUNNER_MARKS_WINDOW / 8]; /* bit i: prefix + 1 + i */
    uint8_t in_use;
};

struct mark {
    struct hash_map_node by_id;
    uint64_t generation;
    uint64_t nonce; /* the current run */
    struct run_track runs[RUNS_KEPT];
    size_t len;
    char id[];
};

struct runner_marks {
    struct hash_map by_id; /* struct mark by Runner id */
    uint64_t uses;
};

struct runner_marks *runner_marks_new(void)
{
    struct runner_marks *marks = calloc(1, sizeof(*marks));

    if (marks)
        hash_map_init(&marks->by_id);
    return marks;
}

void runner_marks_free(struct runner_marks *marks)
{
    if (!marks)
        return;
    for (struct hash_map_node *n = hash_map_first(&marks->by_id), *next; n; n = next) {
        next = hash_map_next(&marks->by_id, n);
        free(hash_map_entry(n, struct mark, by_id));
    }
    hash_map_free(&marks->by_id);
    free(marks);
}

/* The entry of ID[0..LEN), made when CREATE.  NULL when absent or memory is
 * short. */
static struct mark *find(struct runner_marks *marks, const char *id, size_t len, int create)
{
    struct hash_map_node *n = hash_map_find(&marks->by_id, id, len);
    struct mark *m;

    if (n)
        return hash_map_entry(n, struct mark, by_id);
    if (!create)
        return NULL;
    m = calloc(1, sizeof(*m) + len + 1);
    if (!m)
        return NULL;
    memcpy(m->id, id, len);
    m->len = len;
    if (hash_map_insert(&marks->by_id, &m->by_id, m->id, len) != HASH_MAP_OK) {
        free(m);
        return NULL;
    }
    return m;
}

/* M's track of run NONCE; with CREATE made, replacing the least recently
 * used run other than the current one.  NULL when absent. */
static struct run_track *track_of(struct runner_marks *marks, struct mark *m, uint64_t nonce,
                                  int create)
{
    struct run_track *victim = NULL;

    for (unsigned i = 0; i < RUNS_KEPT; i++) {
        struct run_track *t = &m->runs[i];
        if (t->in_use && t->nonce == nonce) {
            t->used = ++marks->uses;
            return t;
        }
        if (t->in_use && t->nonce == m->nonce)
            continue;
        if (!victim || !t->in_use || (victim->in_use && t->used < victim->used))
            victim = t;
    }
    if (!create || !victim)
        return NULL;
    memset(victim, 0, sizeof(*victim));
    victim->in_use = 1;
    victim->nonce = nonce;
    victim->used = ++marks->uses;
    return victim;
}

static int bit_get(const struct run_track *t, uint64_t i)
{
    return (t->window[i / 8] >> (i % 8)) & 1;
}

/* Moves T's prefix over the values the window holds next to it. */
static void track_advance(struct run_track *t)
{
    uint64_t n = 0;

    while (n < RUNNER_MARKS_WINDOW && bit_get(t, n))
        n++;
    if (n == 0)
        return;
    t->prefix += n;
    if (n >= RUNNER_MARKS_WINDOW) {
        memset(t->window, 0, sizeof(t->window));
        return;
    }
    /* Shift the window down by N bits. */
    for (uint64_t i = 0; i < RUNNER_MARKS_WINDOW; i++) {
        uint64_t from = i + n;
        int bit = from < RUNNER_MARKS_WINDOW && bit_get(t, from);
        if (bit)
            t->window[i / 8] |= (uint8_t)(1u << (i % 8));
        else
            t->window[i / 8] &= (uint8_t) ~(1u << (i % 8));
    }
}

void runner_marks_dealt(struct runner_marks *marks, const char *runner_id, size_t len,
                        uint64_t nonce, uint64_t first, uint64_t last)
{
    struct mark *m = find(marks, runner_id, len, 1);
    struct run_track *t = m ? track_of(marks, m, nonce, 1) : NULL;

    if (!t || first == 0 || last < first || last <= t->prefix)
        return;
    if (first <= t->prefix + 1 && last - t->prefix >= RUNNER_MARKS_WINDOW) {
        /* The whole window and more at once. */
        t->prefix = last;
        memset(t->window, 0, sizeof(t->window));
        return;
    }
    if (first <= t->prefix)
        first = t->prefix + 1;
    for (uint64_t v = first; v <= last; v++) {
        uint64_t i = v - t->prefix - 1;
        if (i >= RUNNER_MARKS_WINDOW)
            break; /* too far above: not remembered */
        t->window[i / 8] |= (uint8_t)(1u << (i % 8));
    }
    track_advance(t);
}

void runner_marks_reset(struct runner_marks *marks, const char *runner_id, size_t len,
                        uint64_t nonce)
{
    struct mark *m = find(marks, runner_id, len, 1);

    if (!m || (m->nonce == nonce && m->generation != 0 && nonce != 0))
        return;
    m->generation++;
    m->nonce = nonce;
    track_of(marks, m, nonce, 1);
}

uint64_t runner_marks_get(const struct runner_marks *marks, const char *runner_id,
                          uint64_t *generation, uint64_t *nonce)
{
    struct runner_marks *mutable_marks = (struct runner_marks *)marks;
    struct mark *m = find(mutable_marks, runner_id, strlen(runner_id), 0);
    const struct run_track *t = m ? track_of(mutable_marks, m, m->nonce, 0) : NULL;

    *generation = m ? m->generation : 0;
    if (nonce)
        *nonce = m ? m->nonce : 0;
    return t ? t->prefix : 0;
}
