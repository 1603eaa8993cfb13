#include "core/jsonv.h"

#include <stdlib.h>
#include <string.h>

#include "common/hash_map.h"
#include "common/utf8.h"

/* A strict single-pass JSON validator for one line (RFC 8259 grammar,
 * RFC 3629 UTF-8, no lone surrogates, duplicate keys rejected at every
 * depth).  Hand-written rather than jansson because it keeps the producer's
 * own text for data (numbers and escapes are not re-rendered) and runs several
 * times faster than building and dumping a jansson tree. */

void jsonv_init(struct jsonv_parser *jp, const void *bytes, size_t len)
{
    jp->start = jp->p = bytes;
    jp->end = jp->p + len;
    jp->why = NULL;
    jp->ws = 0;
    jp->keys = jp->small;
    jp->nkeys = 0;
    jp->capkeys = sizeof(jp->small) / sizeof(jp->small[0]);
    jp->nomem = 0;
}

void jsonv_release(struct jsonv_parser *jp)
{
    if (jp->keys != jp->small)
        free(jp->keys);
    jp->keys = jp->small;
}

int jsonv_fail(struct jsonv_parser *jp, const char *why)
{
    if (jp->why == NULL)
        jp->why = why;
    return -1;
}

void jsonv_skip_ws(struct jsonv_parser *jp)
{
    const uint8_t *p = jp->p;

    while (p < jp->end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
        p++;
    jp->ws += (size_t)(p - jp->p);
    jp->p = p;
}

static int jsonv_hex4(const uint8_t *p, unsigned *out)
{
    unsigned v = 0;
    int i;

    for (i = 0; i < 4; i++) {
        unsigned c = p[i], d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return -1;
        v = v << 4 | d;
    }
    *out = v;
    return 0;
}

/* Length of the valid UTF-8 sequence at P (lead byte >= 0x80), or 0. */
static size_t jsonv_utf8_len(const uint8_t *p, const uint8_t *end)
{
    uint32_t code_point;

    return utf8_decode(p, (size_t)(end - p), &code_point);
}

/* Scans a string at jp->p (on the opening quote).  Returns 0 and the raw span
 * between the quotes, or -1. */
int jsonv_string(struct jsonv_parser *jp, const uint8_t **raw, size_t *len, int *esc)
{
    const uint8_t *p = jp->p + 1, *end = jp->end;
    unsigned u, u2;

    *esc = 0;
    *raw = p;
    for (;;) {
        while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
            p++;
        if (p >= end)
            return jsonv_fail(jp, "unterminated string");
        if (*p == '"')
            break;
        if (*p < 0x20)
            return jsonv_fail(jp, "control character in string");
        if (*p == '\\') {
            *esc = 1;
            if (end - p < 2)
                return jsonv_fail(jp, "unterminated string");
            switch (p[1]) {
            case '"':
            case '\\':
            case '/':
            case 'b':
            case 'f':
            case 'n':
            case 'r':
            case 't':
                p += 2;
                continue;
            case 'u':
                if (end - p < 6 || jsonv_hex4(p + 2, &u) != 0)
                    return jsonv_fail(jp, "invalid \\u escape");
                p += 6;
                if (u >= 0xdc00 && u <= 0xdfff)
                    return jsonv_fail(jp, "lone surrogate");
                if (u >= 0xd800 && u <= 0xdbff) {
                    if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || jsonv_hex4(p + 2, &u2) != 0 ||
                        u2 < 0xdc00 || u2 > 0xdfff)
                        return jsonv_fail(jp, "lone surrogate");
                    p += 6;
                }
                continue;
            default:
                return jsonv_fail(jp, "invalid escape");
            }
        }
        u = (unsigned)jsonv_utf8_len(p, end);
        if (u == 0)
            return jsonv_fail(jp, "invalid UTF-8");
        p += u;
    }
    *len = (size_t)(p - *raw);
    jp->p = p + 1;
    return 0;
}

/* Decodes a validated raw string into OUT (room for LEN bytes suffices: no
 * escape decodes longer than it is written) and returns the decoded length. */
size_t jsonv_decode(const uint8_t *raw, size_t len, uint8_t *out)
{
    const uint8_t *p = raw, *end = raw + len;
    uint8_t *o = out;
    unsigned u = 0, u2 = 0xdc00; /* always set: RAW was validated */

    while (p < end) {
        if (*p != '\\') {
            *o++ = *p++;
            continue;
        }
        switch (p[1]) {
        case 'b':
            *o++ = '\b';
            break;
        case 'f':
            *o++ = '\f';
            break;
        case 'n':
            *o++ = '\n';
            break;
        case 'r':
            *o++ = '\r';
            break;
        case 't':
            *o++ = '\t';
            break;
        case 'u':
            jsonv_hex4(p + 2, &u);
            if (u >= 0xd800 && u <= 0xdbff) {
                jsonv_hex4(p + 8, &u2);
                u = 0x10000 + ((u - 0xd800) << 10) + (u2 - 0xdc00);
                p += 6;
            }
            if (u < 0x80) {
                *o++ = (uint8_t)u;
            } else if (u < 0x800) {
                *o++ = (uint8_t)(0xc0 | u >> 6);
                *o++ = (uint8_t)(0x80 | (u & 0x3f));
            } else if (u < 0x10000) {
                *o++ = (uint8_t)(0xe0 | u >> 12);
                *o++ = (uint8_t)(0x80 | (u >> 6 & 0x3f));
                *o++ = (uint8_t)(0x80 | (u & 0x3f));
            } else {
                *o++ = (uint8_t)(0xf0 | u >> 18);
                *o++ = (uint8_t)(0x80 | (u >> 12 & 0x3f));
                *o++ = (uint8_t)(0x80 | (u >> 6 & 0x3f));
                *o++ = (uint8_t)(0x80 | (u & 0x3f));
            }
            p += 6;
            continue;
        default: /* " \ / */
            *o++ = p[1];
            break;
        }
        p += 2;
    }
    return (size_t)(o - out);
}

/* Decoded bytes of K: K's own raw bytes, or a malloc'd copy in *FREEME.
 * Returns NULL (nomem) only when a copy was needed and failed. */
static const uint8_t *jsonv_key_bytes(const struct jsonv_key *k, size_t *n, uint8_t **freeme)
{
    *freeme = NULL;
    if (!k->esc) {
        *n = k->len;
        return k->raw;
    }
    *freeme = malloc(k->len ? k->len : 1);
    if (*freeme == NULL)
        return NULL;
    *n = jsonv_decode(k->raw, k->len, *freeme);
    return *freeme;
}

/* 1 when A and B decode to the same bytes, 0 when not, -1 on nomem. */
static int jsonv_key_equal(const struct jsonv_key *a, const struct jsonv_key *b)
{
    const uint8_t *x, *y;
    uint8_t *fx, *fy;
    size_t nx = 0, ny = 0;
    int eq = -1;

    if (a->hash != b->hash)
        return 0;
    if (!a->esc && !b->esc)
        return a->len == b->len && memcmp(a->raw, b->raw, a->len) == 0;
    x = jsonv_key_bytes(a, &nx, &fx);
    y = jsonv_key_bytes(b, &ny, &fy);
    if (x != NULL && y != NULL)
        eq = nx == ny && memcmp(x, y, nx) == 0;
    free(fx);
    free(fy);
    return eq;
}

/* 1 when K decodes to the NUL-terminated WORD. */
int jsonv_key_is(const struct jsonv_key *k, const char *word)
{
    struct jsonv_key w;

    w.raw = (const uint8_t *)word;
    w.len = (uint32_t)strlen(word);
    w.hash = hash_fnv1a(w.raw, w.len);
    w.esc = 0;
    return jsonv_key_equal(k, &w) == 1;
}

/* Orders unescaped keys by hash, then length, then bytes. */
static int jsonv_key_cmp(const void *a, const void *b)
{
    const struct jsonv_key *x = a, *y = b;

    if (x->hash != y->hash)
        return x->hash < y->hash ? -1 : 1;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return memcmp(x->raw, y->raw, x->len);
}

/* Pushes a key of the object whose keys start at BASE, checking for a
 * duplicate while the object is small.  Returns 0 or -1 (error set). */
int jsonv_push_key(struct jsonv_parser *jp, size_t base, const uint8_t *raw, size_t len, int esc)
{
    struct jsonv_key *k;
    size_t i;

    if (jp->nkeys == jp->capkeys) {
        size_t ncap = jp->capkeys * 2;
        struct jsonv_key *nk = malloc(ncap * sizeof(*nk));
        if (nk == NULL) {
            jp->nomem = 1;
            return jsonv_fail(jp, "out of memory");
        }
        memcpy(nk, jp->keys, jp->nkeys * sizeof(*nk));
        if (jp->keys != jp->small)
            free(jp->keys);
        jp->keys = nk;
        jp->capkeys = ncap;
    }
    k = &jp->keys[jp->nkeys];
    k->raw = raw;
    k->len = (uint32_t)len;
    k->esc = (uint32_t)esc;
    if (esc) {
        uint8_t *tmp;
        size_t n;
        const uint8_t *d = jsonv_key_bytes(k, &n, &tmp);
        if (d == NULL) {
            jp->nomem = 1;
            return jsonv_fail(jp, "out of memory");
        }
        k->hash = hash_fnv1a(d, n);
        free(tmp);
    } else {
        k->hash = hash_fnv1a(raw, len);
    }
    if (jp->nkeys - base < JSONV_LINEAR_KEYS) {
        for (i = base; i < jp->nkeys; i++) {
            int eq = jsonv_key_equal(&jp->keys[i], k);
            if (eq != 0) {
                if (eq < 0)
                    jp->nomem = 1;
                return jsonv_fail(jp, eq < 0 ? "out of memory" : "duplicate key");
            }
        }
    }
    jp->nkeys++;
    return 0;
}

/* Duplicate check for a big object's keys [BASE, nkeys) when it closes: the
 * escaped keys are decoded once into an arena, then all keys are sorted by
 * (hash, length, bytes) and neighbours compared, so even keys built to share
 * one hash cost O(n log n).  The entries are rewritten (they are popped right
 * after).  Returns 0 or -1 (error set). */
static int jsonv_check_big_object(struct jsonv_parser *jp, size_t base)
{
    size_t i, n = jp->nkeys - base, arena_len = 0;
    struct jsonv_key *k = jp->keys + base;
    uint8_t *arena = NULL, *o;
    int rv = 0;

    if (n <= JSONV_LINEAR_KEYS)
        return 0;
    for (i = 0; i < n; i++) {
        if (k[i].esc)
            arena_len += k[i].len;
    }
    if (arena_len > 0) {
        arena = malloc(arena_len);
        if (arena == NULL) {
            jp->nomem = 1;
            return jsonv_fail(jp, "out of memory");
        }
        for (i = 0, o = arena; i < n; i++) {
            if (k[i].esc) {
                size_t d = jsonv_decode(k[i].raw, k[i].len, o);
                k[i].raw = o;
                k[i].len = (uint32_t)d;
                k[i].esc = 0;
                o += d;
            }
        }
    }
    qsort(k, n, sizeof(*k), jsonv_key_cmp);
    for (i = 1; i < n; i++) {
        if (jsonv_key_cmp(&k[i - 1], &k[i]) == 0) {
            rv = jsonv_fail(jp, "duplicate key");
            break;
        }
    }
    free(arena);
    return rv;
}

static int jsonv_number(struct jsonv_parser *jp)
{
    const uint8_t *p = jp->p, *end = jp->end;

    if (p < end && *p == '-')
        p++;
    if (p >= end || *p < '0' || *p > '9')
        return jsonv_fail(jp, "invalid number");
    if (*p == '0') {
        p++;
    } else {
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < end && *p == '.') {
        p++;
        if (p >= end || *p < '0' || *p > '9')
            return jsonv_fail(jp, "invalid number");
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (p >= end || *p < '0' || *p > '9')
            return jsonv_fail(jp, "invalid number");
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    jp->p = p;
    return 0;
}

static int jsonv_literal(struct jsonv_parser *jp, const char *lit, size_t n)
{
    if ((size_t)(jp->end - jp->p) < n || memcmp(jp->p, lit, n) != 0)
        return jsonv_fail(jp, "invalid literal");
    jp->p += n;
    return 0;
}

int jsonv_value(struct jsonv_parser *jp, int depth);

/* Parses an object at jp->p ('{').  W (may be NULL) names members whose short
 * string values are copied out. */
int jsonv_object(struct jsonv_parser *jp, int depth, const struct jsonv_watch *w)
{
    size_t base = jp->nkeys;
    const uint8_t *raw;
    size_t len;
    int esc, i;

    if (depth > JSONV_MAX_DEPTH)
        return jsonv_fail(jp, "nesting too deep");
    jp->p++;
    jsonv_skip_ws(jp);
    if (jp->p < jp->end && *jp->p == '}') {
        jp->p++;
        return 0;
    }
    for (;;) {
        if (jp->p >= jp->end || *jp->p != '"')
            return jsonv_fail(jp, "expected a key");
        if (jsonv_string(jp, &raw, &len, &esc) != 0 || jsonv_push_key(jp, base, raw, len, esc) != 0)
            return -1;
        jsonv_skip_ws(jp);
        if (jp->p >= jp->end || *jp->p != ':')
            return jsonv_fail(jp, "expected ':'");
        jp->p++;
        jsonv_skip_ws(jp);
        if (w != NULL && jp->p < jp->end && *jp->p == '"') {
            for (i = 0; i < 2; i++) {
                if (jsonv_key_is(&jp->keys[jp->nkeys - 1], w->name[i]))
                    break;
            }
            if (i < 2) {
                const uint8_t *vraw;
                size_t vlen;
                int vesc;
                uint8_t tmp[JSONV_WORD_SIZE * 6];
                if (jsonv_string(jp, &vraw, &vlen, &vesc) != 0)
                    return -1;
                w->word[i][0] = '\0';
                if (vlen < sizeof(tmp)) {
                    size_t n = jsonv_decode(vraw, vlen, tmp);
                    if (n < JSONV_WORD_SIZE && memchr(tmp, '\0', n) == NULL) {
                        memcpy(w->word[i], tmp, n);
                        w->word[i][n] = '\0';
                    }
                }
                goto next;
            }
        }
        if (jsonv_value(jp, depth + 1) != 0)
            return -1;
    next:
        jsonv_skip_ws(jp);
        if (jp->p < jp->end && *jp->p == ',') {
            jp->p++;
            jsonv_skip_ws(jp);
            continue;
        }
        if (jp->p < jp->end && *jp->p == '}') {
            jp->p++;
            break;
        }
        return jsonv_fail(jp, "expected ',' or '}'");
    }
    if (jsonv_check_big_object(jp, base) != 0)
        return -1;
    jp->nkeys = base;
    return 0;
}

static int jsonv_array(struct jsonv_parser *jp, int depth)
{
    if (depth > JSONV_MAX_DEPTH)
        return jsonv_fail(jp, "nesting too deep");
    jp->p++;
    jsonv_skip_ws(jp);
    if (jp->p < jp->end && *jp->p == ']') {
        jp->p++;
        return 0;
    }
    for (;;) {
        if (jsonv_value(jp, depth + 1) != 0)
            return -1;
        jsonv_skip_ws(jp);
        if (jp->p < jp->end && *jp->p == ',') {
            jp->p++;
            jsonv_skip_ws(jp);
            continue;
        }
        if (jp->p < jp->end && *jp->p == ']') {
            jp->p++;
            return 0;
        }
        return jsonv_fail(jp, "expected ',' or ']'");
    }
}

int jsonv_value(struct jsonv_parser *jp, int depth)
{
    const uint8_t *raw;
    size_t len;
    int esc;

    if (jp->p >= jp->end)
        return jsonv_fail(jp, "unexpected end");
    switch (*jp->p) {
    case '{':
        return jsonv_object(jp, depth, NULL);
    case '[':
        return jsonv_array(jp, depth);
    case '"':
        return jsonv_string(jp, &raw, &len, &esc);
    case 't':
        return jsonv_literal(jp, "true", 4);
    case 'f':
        return jsonv_literal(jp, "false", 5);
    case 'n':
        return jsonv_literal(jp, "null", 4);
    default:
        return jsonv_number(jp);
    }
}

/* Copies the validated JSON text SRC[0..N) without whitespace outside
 * strings into DST and returns the length written. */
size_t jsonv_compact(const uint8_t *src, size_t n, char *dst)
{
    size_t i, o = 0;
    int in_str = 0;

    for (i = 0; i < n; i++) {
        uint8_t c = src[i];
        if (in_str) {
            dst[o++] = (char)c;
            if (c == '\\')
                dst[o++] = (char)src[++i];
            else if (c == '"')
                in_str = 0;
        } else if (c == '"') {
            in_str = 1;
            dst[o++] = (char)c;
        } else if (c != ' ' && c != '\t' && c != '\r' && c != '\n') {
            dst[o++] = (char)c;
        }
    }
    return o;
}
