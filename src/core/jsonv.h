/* jsonv: a strict single-pass JSON validator, internal to the jsonl codec.
 *
 * RFC 8259 grammar, RFC 3629 UTF-8 (no overlongs, no surrogates, nothing
 * above U+10FFFF), \u escapes without lone surrogates, duplicate keys
 * rejected at every depth (keys compared after decoding), nesting at most
 * JSONV_MAX_DEPTH.  Numbers are checked against the grammar only (any
 * magnitude).  It never builds a tree: callers keep spans of the input. */
#ifndef AGENTHUB_CORE_JSONV_H
#define AGENTHUB_CORE_JSONV_H

#include <stddef.h>
#include <stdint.h>

/* Buffer size of a watched member's copied string (longer values: "").  */
#define JSONV_WORD_SIZE 32
#define JSONV_MAX_DEPTH 256
/* Objects up to this many keys check duplicates on insert; bigger ones sort
 * their keys when they close, so a 3000-key object stays O(n log n). */
#define JSONV_LINEAR_KEYS 32

struct jsonv_key {
    const uint8_t *raw; /* between the quotes, escapes undecoded */
    uint32_t len;
    uint64_t hash; /* FNV-1a of the decoded bytes */
    uint32_t esc;  /* raw contains a backslash */
};

struct jsonv_parser {
    const uint8_t *start, *p, *end;
    const char *why; /* static reason of the first error */
    size_t ws;       /* whitespace bytes skipped so far */
    struct jsonv_key *keys;
    size_t nkeys, capkeys;
    struct jsonv_key small[64];
    int nomem;
};

/* What an object's caller wants to learn about its direct members. */
struct jsonv_watch {
    const char *name[2];
    char *word[2]; /* JSONV_WORD_SIZE buffers: string value of that member */
};

/* Prepares JP over BYTES[0..LEN). */
void jsonv_init(struct jsonv_parser *jp, const void *bytes, size_t len);
/* Releases the key stack (if it outgrew the inline one). */
void jsonv_release(struct jsonv_parser *jp);
/* Records WHY (a static string) as the first error; returns -1. */
int jsonv_fail(struct jsonv_parser *jp, const char *why);
void jsonv_skip_ws(struct jsonv_parser *jp);
/* Scans the string at jp->p (its opening quote): 0 with the raw span between
 * the quotes and whether it holds escapes, or -1 (error recorded). */
int jsonv_string(struct jsonv_parser *jp, const uint8_t **raw, size_t *len, int *esc);
/* Decodes a raw span jsonv_string() accepted into OUT (LEN bytes of room
 * suffice) and returns the decoded length. */
size_t jsonv_decode(const uint8_t *raw, size_t len, uint8_t *out);
/* Pushes a key of the object whose keys start at BASE; -1 on a duplicate or
 * memory exhaustion (jp->nomem set). */
int jsonv_push_key(struct jsonv_parser *jp, size_t base, const uint8_t *raw, size_t len, int esc);
/* 1 when K decodes to the NUL-terminated WORD, else 0. */
int jsonv_key_is(const struct jsonv_key *k, const char *word);
/* Parses the object at jp->p ('{') and its closing duplicate check; W (may be
 * NULL) names members whose short string values are copied out.  0 or -1. */
int jsonv_object(struct jsonv_parser *jp, int depth, const struct jsonv_watch *w);
/* Parses any value at jp->p; 0 or -1. */
int jsonv_value(struct jsonv_parser *jp, int depth);
/* Copies validated JSON SRC[0..N) without whitespace outside strings into
 * DST (N bytes of room) and returns the length written. */
size_t jsonv_compact(const uint8_t *src, size_t n, char *dst);

#endif
