#include "core/jsonl.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const jsonl_type_names[JSONL_TYPE_COUNT] = {
    "session_start", "prompt", "tool_start",  "tool_end", "notification",
    "ask",           "stop",   "session_end", "state",    "provider_raw",
};

const char *jsonl_type_name(enum jsonl_type t)
{
    if ((unsigned)t >= JSONL_TYPE_COUNT)
        return NULL;
    return jsonl_type_names[t];
}

int jsonl_type_from_name(const char *name, size_t len)
{
    int i;

    for (i = 0; i < JSONL_TYPE_COUNT; i++) {
        if (strlen(jsonl_type_names[i]) == len && memcmp(jsonl_type_names[i], name, len) == 0)
            return i;
    }
    return -1;
}

int jsonl_record_blocks(const struct jsonl_record *rec)
{
    if (rec->type != JSONL_TYPE_NOTIFICATION)
        return 0;
    return strcmp(rec->kind, "permission") == 0 || strcmp(rec->kind, "elicitation") == 0;
}

/* Formats "line N: ..." into ERR, keeping only printable ASCII so producer
 * bytes quoted by the parser never carry control or invalid UTF-8 bytes into
 * a grpc-message or a log line. */
static void jsonl_err(char *err, size_t line, const char *fmt, ...)
{
    int n;
    va_list ap;
    char *p;

    if (err == NULL)
        return;
    n = snprintf(err, JSONL_ERR_SIZE, "line %zu: ", line);
    if (n < 0 || (size_t)n >= JSONL_ERR_SIZE)
        return;
    va_start(ap, fmt);
    vsnprintf(err + n, JSONL_ERR_SIZE - (size_t)n, fmt, ap);
    va_end(ap);
    for (p = err; *p; p++) {
        if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
            *p = '?';
    }
}

/* A strict single-pass JSON validator for one line (RFC 8259 grammar,
 * RFC 3629 UTF-8, no lone surrogates, duplicate keys rejected at every
 * depth).  Hand-written rather than jansson because it keeps the producer's
 * own text for data (numbers and escapes are not re-rendered) and runs several
 * times faster than building and dumping a jansson tree. */

#define JSONL_MAX_DEPTH 256
/* Objects up to this many keys check duplicates on insert; bigger ones sort
 * their keys by hash when they close, so a 3000-key object stays O(n log n). */
#define JSONL_LINEAR_KEYS 32

struct jsonl_key {
    const uint8_t *raw; /* between the quotes, escapes undecoded */
    uint32_t len;
    uint32_t hash; /* FNV-1a of the decoded bytes */
    uint32_t esc;  /* raw contains a backslash */
};

struct jsonl_parser {
    const uint8_t *start, *p, *end;
    const char *why; /* static reason of the first error */
    size_t ws;       /* whitespace bytes skipped so far */
    struct jsonl_key *keys;
    size_t nkeys, capkeys;
    struct jsonl_key small[64];
    int nomem;
};

static int jp_fail(struct jsonl_parser *jp, const char *why)
{
    if (jp->why == NULL)
        jp->why = why;
    return -1;
}

static void jp_skip_ws(struct jsonl_parser *jp)
{
    const uint8_t *p = jp->p;

    while (p < jp->end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
        p++;
    jp->ws += (size_t)(p - jp->p);
    jp->p = p;
}

static int jp_hex4(const uint8_t *p, unsigned *out)
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
static size_t jp_utf8_len(const uint8_t *p, const uint8_t *end)
{
    unsigned c = p[0], lo = 0x80, hi = 0xbf;
    size_t n, i;

    if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4;
    else
        return 0;
    if ((size_t)(end - p) < n)
        return 0;
    if (c == 0xe0)
        lo = 0xa0; /* overlong */
    else if (c == 0xed)
        hi = 0x9f; /* surrogates */
    else if (c == 0xf0)
        lo = 0x90; /* overlong */
    else if (c == 0xf4)
        hi = 0x8f; /* above U+10FFFF */
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (i = 2; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    }
    return n;
}

/* Scans a string at jp->p (on the opening quote).  Returns 0 and the raw span
 * between the quotes, or -1. */
static int jp_string(struct jsonl_parser *jp, const uint8_t **raw, size_t *len, int *esc)
{
    const uint8_t *p = jp->p + 1, *end = jp->end;
    unsigned u, u2;

    *esc = 0;
    *raw = p;
    for (;;) {
        while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
            p++;
        if (p >= end)
            return jp_fail(jp, "unterminated string");
        if (*p == '"')
            break;
        if (*p < 0x20)
            return jp_fail(jp, "control character in string");
        if (*p == '\\') {
            *esc = 1;
            if (end - p < 2)
                return jp_fail(jp, "unterminated string");
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
                if (end - p < 6 || jp_hex4(p + 2, &u) != 0)
                    return jp_fail(jp, "invalid \\u escape");
                p += 6;
                if (u >= 0xdc00 && u <= 0xdfff)
                    return jp_fail(jp, "lone surrogate");
                if (u >= 0xd800 && u <= 0xdbff) {
                    if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || jp_hex4(p + 2, &u2) != 0 ||
                        u2 < 0xdc00 || u2 > 0xdfff)
                        return jp_fail(jp, "lone surrogate");
                    p += 6;
                }
                continue;
            default:
                return jp_fail(jp, "invalid escape");
            }
        }
        u = (unsigned)jp_utf8_len(p, end);
        if (u == 0)
            return jp_fail(jp, "invalid UTF-8");
        p += u;
    }
    *len = (size_t)(p - *raw);
    jp->p = p + 1;
    return 0;
}

/* Decodes a validated raw string into OUT (room for LEN bytes suffices: no
 * escape decodes longer than it is written) and returns the decoded length. */
static size_t jp_decode(const uint8_t *raw, size_t len, uint8_t *out)
{
    const uint8_t *p = raw, *end = raw + len;
    uint8_t *o = out;
    unsigned u, u2;

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
            jp_hex4(p + 2, &u);
            if (u >= 0xd800 && u <= 0xdbff) {
                jp_hex4(p + 8, &u2);
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

static uint32_t jp_fnv(const uint8_t *p, size_t n)
{
    uint32_t h = 2166136261u;
    size_t i;

    for (i = 0; i < n; i++) {
        h ^= p[i];
        h *= 16777619u;
    }
    return h;
}

/* Decoded bytes of K: K's own raw bytes, or a malloc'd copy in *FREEME.
 * Returns NULL (nomem) only when a copy was needed and failed. */
static const uint8_t *jp_key_bytes(const struct jsonl_key *k, size_t *n, uint8_t **freeme)
{
    *freeme = NULL;
    if (!k->esc) {
        *n = k->len;
        return k->raw;
    }
    *freeme = malloc(k->len ? k->len : 1);
    if (*freeme == NULL)
        return NULL;
    *n = jp_decode(k->raw, k->len, *freeme);
    return *freeme;
}

/* 1 when A and B decode to the same bytes, 0 when not, -1 on nomem. */
static int jp_key_equal(const struct jsonl_key *a, const struct jsonl_key *b)
{
    const uint8_t *x, *y;
    uint8_t *fx, *fy;
    size_t nx = 0, ny = 0;
    int eq = -1;

    if (a->hash != b->hash)
        return 0;
    if (!a->esc && !b->esc)
        return a->len == b->len && memcmp(a->raw, b->raw, a->len) == 0;
    x = jp_key_bytes(a, &nx, &fx);
    y = jp_key_bytes(b, &ny, &fy);
    if (x != NULL && y != NULL)
        eq = nx == ny && memcmp(x, y, nx) == 0;
    free(fx);
    free(fy);
    return eq;
}

/* 1 when K decodes to the NUL-terminated WORD. */
static int jp_key_is(const struct jsonl_key *k, const char *word)
{
    struct jsonl_key w;

    w.raw = (const uint8_t *)word;
    w.len = (uint32_t)strlen(word);
    w.hash = jp_fnv(w.raw, w.len);
    w.esc = 0;
    return jp_key_equal(k, &w) == 1;
}

static int jp_hash_cmp(const void *a, const void *b)
{
    uint32_t x = ((const struct jsonl_key *)a)->hash, y = ((const struct jsonl_key *)b)->hash;

    return x < y ? -1 : x > y;
}

/* Pushes a key of the object whose keys start at BASE, checking for a
 * duplicate while the object is small.  Returns 0 or -1 (error set). */
static int jp_push_key(struct jsonl_parser *jp, size_t base, const uint8_t *raw, size_t len,
                       int esc)
{
    struct jsonl_key *k;
    size_t i;

    if (jp->nkeys == jp->capkeys) {
        size_t ncap = jp->capkeys * 2;
        struct jsonl_key *nk = malloc(ncap * sizeof(*nk));
        if (nk == NULL) {
            jp->nomem = 1;
            return jp_fail(jp, "out of memory");
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
        const uint8_t *d = jp_key_bytes(k, &n, &tmp);
        if (d == NULL) {
            jp->nomem = 1;
            return jp_fail(jp, "out of memory");
        }
        k->hash = jp_fnv(d, n);
        free(tmp);
    } else {
        k->hash = jp_fnv(raw, len);
    }
    if (jp->nkeys - base < JSONL_LINEAR_KEYS) {
        for (i = base; i < jp->nkeys; i++) {
            int eq = jp_key_equal(&jp->keys[i], k);
            if (eq != 0) {
                if (eq < 0)
                    jp->nomem = 1;
                return jp_fail(jp, eq < 0 ? "out of memory" : "duplicate key");
            }
        }
    }
    jp->nkeys++;
    return 0;
}

/* Duplicate check for a big object's keys [BASE, nkeys) when it closes. */
static int jp_check_big_object(struct jsonl_parser *jp, size_t base)
{
    size_t i, j, n = jp->nkeys - base;
    struct jsonl_key *k = jp->keys + base;

    if (n <= JSONL_LINEAR_KEYS)
        return 0;
    qsort(k, n, sizeof(*k), jp_hash_cmp);
    for (i = 0; i < n; i++) {
        for (j = i + 1; j < n && k[j].hash == k[i].hash; j++) {
            int eq = jp_key_equal(&k[i], &k[j]);
            if (eq != 0) {
                if (eq < 0)
                    jp->nomem = 1;
                return jp_fail(jp, eq < 0 ? "out of memory" : "duplicate key");
            }
        }
    }
    return 0;
}

static int jp_number(struct jsonl_parser *jp)
{
    const uint8_t *p = jp->p, *end = jp->end;

    if (p < end && *p == '-')
        p++;
    if (p >= end || *p < '0' || *p > '9')
        return jp_fail(jp, "invalid number");
    if (*p == '0') {
        p++;
    } else {
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < end && *p == '.') {
        p++;
        if (p >= end || *p < '0' || *p > '9')
            return jp_fail(jp, "invalid number");
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (p >= end || *p < '0' || *p > '9')
            return jp_fail(jp, "invalid number");
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    jp->p = p;
    return 0;
}

static int jp_literal(struct jsonl_parser *jp, const char *lit, size_t n)
{
    if ((size_t)(jp->end - jp->p) < n || memcmp(jp->p, lit, n) != 0)
        return jp_fail(jp, "invalid literal");
    jp->p += n;
    return 0;
}

/* What an object's caller wants to learn about its direct members. */
struct jp_watch {
    const char *name[2];
    char *word[2]; /* JSONL_WORD_SIZE buffers: string value of that member */
};

static int jp_value(struct jsonl_parser *jp, int depth);

/* Parses an object at jp->p ('{').  W (may be NULL) names members whose short
 * string values are copied out. */
static int jp_object(struct jsonl_parser *jp, int depth, const struct jp_watch *w)
{
    size_t base = jp->nkeys;
    const uint8_t *raw;
    size_t len;
    int esc, i;

    if (depth > JSONL_MAX_DEPTH)
        return jp_fail(jp, "nesting too deep");
    jp->p++;
    jp_skip_ws(jp);
    if (jp->p < jp->end && *jp->p == '}') {
        jp->p++;
        return 0;
    }
    for (;;) {
        if (jp->p >= jp->end || *jp->p != '"')
            return jp_fail(jp, "expected a key");
        if (jp_string(jp, &raw, &len, &esc) != 0 || jp_push_key(jp, base, raw, len, esc) != 0)
            return -1;
        jp_skip_ws(jp);
        if (jp->p >= jp->end || *jp->p != ':')
            return jp_fail(jp, "expected ':'");
        jp->p++;
        jp_skip_ws(jp);
        if (w != NULL && jp->p < jp->end && *jp->p == '"') {
            for (i = 0; i < 2; i++) {
                if (jp_key_is(&jp->keys[jp->nkeys - 1], w->name[i]))
                    break;
            }
            if (i < 2) {
                const uint8_t *vraw;
                size_t vlen;
                int vesc;
                uint8_t tmp[JSONL_WORD_SIZE * 6];
                if (jp_string(jp, &vraw, &vlen, &vesc) != 0)
                    return -1;
                w->word[i][0] = '\0';
                if (vlen < sizeof(tmp)) {
                    size_t n = jp_decode(vraw, vlen, tmp);
                    if (n < JSONL_WORD_SIZE && memchr(tmp, '\0', n) == NULL) {
                        memcpy(w->word[i], tmp, n);
                        w->word[i][n] = '\0';
                    }
                }
                goto next;
            }
        }
        if (jp_value(jp, depth + 1) != 0)
            return -1;
    next:
        jp_skip_ws(jp);
        if (jp->p < jp->end && *jp->p == ',') {
            jp->p++;
            jp_skip_ws(jp);
            continue;
        }
        if (jp->p < jp->end && *jp->p == '}') {
            jp->p++;
            break;
        }
        return jp_fail(jp, "expected ',' or '}'");
    }
    if (jp_check_big_object(jp, base) != 0)
        return -1;
    jp->nkeys = base;
    return 0;
}

static int jp_array(struct jsonl_parser *jp, int depth)
{
    if (depth > JSONL_MAX_DEPTH)
        return jp_fail(jp, "nesting too deep");
    jp->p++;
    jp_skip_ws(jp);
    if (jp->p < jp->end && *jp->p == ']') {
        jp->p++;
        return 0;
    }
    for (;;) {
        if (jp_value(jp, depth + 1) != 0)
            return -1;
        jp_skip_ws(jp);
        if (jp->p < jp->end && *jp->p == ',') {
            jp->p++;
            jp_skip_ws(jp);
            continue;
        }
        if (jp->p < jp->end && *jp->p == ']') {
            jp->p++;
            return 0;
        }
        return jp_fail(jp, "expected ',' or ']'");
    }
}

static int jp_value(struct jsonl_parser *jp, int depth)
{
    const uint8_t *raw;
    size_t len;
    int esc;

    if (jp->p >= jp->end)
        return jp_fail(jp, "unexpected end");
    switch (*jp->p) {
    case '{':
        return jp_object(jp, depth, NULL);
    case '[':
        return jp_array(jp, depth);
    case '"':
        return jp_string(jp, &raw, &len, &esc);
    case 't':
        return jp_literal(jp, "true", 4);
    case 'f':
        return jp_literal(jp, "false", 5);
    case 'n':
        return jp_literal(jp, "null", 4);
    default:
        return jp_number(jp);
    }
}

/* Copies the validated JSON text SRC[0..N) without whitespace outside
 * strings into DST and returns the length written. */
static size_t jp_compact(const uint8_t *src, size_t n, char *dst)
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

/* Parses one line into *REC.  Returns JSONL_OK, JSONL_RECORD_INVALID (ERR
 * set) or JSONL_NOMEM. */
static enum jsonl_result jsonl_parse_line(const char *line, size_t n, size_t lineno,
                                          struct jsonl_record *rec, char *err)
{
    struct jsonl_parser jp;
    const uint8_t *data = NULL, *data_end = NULL, *raw;
    size_t data_ws = 0, len, base;
    int esc, type = -1, rv = JSONL_RECORD_INVALID;
    struct jp_watch w;

    if (n == 0) {
        jsonl_err(err, lineno, "empty line");
        return JSONL_RECORD_INVALID;
    }
    if (n > JSONL_MAX_LINE) {
        jsonl_err(err, lineno, "line over %u bytes", JSONL_MAX_LINE);
        return JSONL_RECORD_INVALID;
    }
    memset(&jp, 0, offsetof(struct jsonl_parser, small));
    jp.start = jp.p = (const uint8_t *)line;
    jp.end = jp.p + n;
    jp.keys = jp.small;
    jp.capkeys = sizeof(jp.small) / sizeof(jp.small[0]);
    jp.nomem = 0;
    rec->kind[0] = rec->state[0] = '\0';
    w.name[0] = "kind";
    w.name[1] = "state";
    w.word[0] = rec->kind;
    w.word[1] = rec->state;

    jp_skip_ws(&jp);
    if (jp.p >= jp.end || *jp.p != '{') {
        jsonl_err(err, lineno, "not a JSON object");
        goto out;
    }
    /* The root object is walked here rather than by jp_object() because its
     * members carry meaning. */
    jp.p++;
    base = jp.nkeys;
    jp_skip_ws(&jp);
    if (jp.p < jp.end && *jp.p == '}') {
        jp.p++;
        goto closed;
    }
    for (;;) {
        struct jsonl_key *k;
        if (jp.p >= jp.end || *jp.p != '"') {
            jp_fail(&jp, "expected a key");
            goto bad;
        }
        if (jp_string(&jp, &raw, &len, &esc) != 0 || jp_push_key(&jp, base, raw, len, esc) != 0)
            goto bad;
        k = &jp.keys[jp.nkeys - 1];
        jp_skip_ws(&jp);
        if (jp.p >= jp.end || *jp.p != ':') {
            jp_fail(&jp, "expected ':'");
            goto bad;
        }
        jp.p++;
        jp_skip_ws(&jp);
        if (jp_key_is(k, "type")) {
            uint8_t tmp[64];
            if (jp.p >= jp.end || *jp.p != '"') {
                if (jp_value(&jp, 1) != 0)
                    goto bad;
                jsonl_err(err, lineno, "type is not a string");
                goto out;
            }
            if (jp_string(&jp, &raw, &len, &esc) != 0)
                goto bad;
            type = len < sizeof(tmp)
                       ? jsonl_type_from_name((const char *)tmp, jp_decode(raw, len, tmp))
                       : -1;
            if (type < 0) {
                jsonl_err(err, lineno, "unknown type \"%.*s\"", (int)(len < 40 ? len : 40),
                          (const char *)raw);
                goto out;
            }
        } else if (jp_key_is(k, "data")) {
            size_t ws0 = jp.ws;
            if (jp.p >= jp.end || *jp.p != '{') {
                if (jp_value(&jp, 1) != 0)
                    goto bad;
                jsonl_err(err, lineno, "data is not an object");
                goto out;
            }
            data = jp.p;
            if (jp_object(&jp, 1, &w) != 0)
                goto bad;
            data_end = jp.p;
            data_ws = jp.ws - ws0;
        } else if (jp_key_is(k, "seq") || jp_key_is(k, "ts_ms")) {
            if (jp_value(&jp, 1) != 0)
                goto bad;
        } else {
            jsonl_err(err, lineno, "unknown key \"%.*s\"", (int)(len < 40 ? len : 40),
                      (const char *)raw);
            goto out;
        }
        jp_skip_ws(&jp);
        if (jp.p < jp.end && *jp.p == ',') {
            jp.p++;
            jp_skip_ws(&jp);
            continue;
        }
        if (jp.p < jp.end && *jp.p == '}') {
            jp.p++;
            break;
        }
        jp_fail(&jp, "expected ',' or '}'");
        goto bad;
    }
closed:
    jp_skip_ws(&jp);
    if (jp.p != jp.end) {
        jp_fail(&jp, "trailing bytes after the object");
        goto bad;
    }
    if (type < 0) {
        jsonl_err(err, lineno, "missing type");
        goto out;
    }
    rec->type = (enum jsonl_type)type;
    if (data == NULL) {
        rec->data_json = strdup("{}");
        rec->kind[0] = rec->state[0] = '\0';
    } else {
        rec->data_json = malloc((size_t)(data_end - data) + 1);
    }
    if (rec->data_json == NULL) {
        rv = JSONL_NOMEM;
        goto out;
    }
    if (data != NULL) {
        if (data_ws == 0) {
            rec->data_len = (size_t)(data_end - data);
            memcpy(rec->data_json, data, rec->data_len);
        } else {
            rec->data_len = jp_compact(data, (size_t)(data_end - data), rec->data_json);
        }
        rec->data_json[rec->data_len] = '\0';
    } else {
        rec->data_len = 2;
    }
    rv = JSONL_OK;
    goto out;
bad:
    if (jp.nomem)
        rv = JSONL_NOMEM;
    else
        jsonl_err(err, lineno, "invalid JSON: %s at byte %zu", jp.why ? jp.why : "syntax error",
                  (size_t)(jp.p - jp.start) + 1);
out:
    if (jp.keys != jp.small)
        free(jp.keys);
    return (enum jsonl_result)rv;
}

void jsonl_batch_free(struct jsonl_batch *b)
{
    size_t i;

    for (i = 0; i < b->count; i++)
        free(b->records[i].data_json);
    free(b->records);
    b->records = NULL;
    b->count = 0;
}

enum jsonl_result jsonl_parse_batch(const void *bytes, size_t len, struct jsonl_batch *out,
                                    char *err)
{
    const char *p = bytes, *end = p + len, *nl;
    enum jsonl_result rv;
    size_t lines = 0, lineno = 0, cap;

    out->records = NULL;
    out->count = 0;
    if (err != NULL)
        err[0] = '\0';
    if (len > JSONL_MAX_CALL) {
        if (err != NULL)
            snprintf(err, JSONL_ERR_SIZE, "call of %zu bytes is over %u", len, JSONL_MAX_CALL);
        return JSONL_OVERFLOW;
    }
    if (len == 0) {
        jsonl_err(err, 1, "empty line");
        return JSONL_RECORD_INVALID;
    }
    /* Lines = newlines, plus one when the last line has no terminator. */
    for (nl = p; (nl = memchr(nl, '\n', (size_t)(end - nl))) != NULL; nl++)
        lines++;
    if (p[len - 1] != '\n')
        lines++;
    cap = lines;
    out->records = calloc(cap, sizeof(*out->records));
    if (out->records == NULL)
        return JSONL_NOMEM;
    while (p < end) {
        size_t n;
        nl = memchr(p, '\n', (size_t)(end - p));
        n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        lineno++;
        rv = jsonl_parse_line(p, n, lineno, &out->records[out->count], err);
        if (rv != JSONL_OK)
            goto fail;
        out->count++;
        p += n + (nl ? 1 : 0);
    }
    return JSONL_OK;
fail:
    jsonl_batch_free(out);
    return rv;
}

int jsonl_render(uint64_t seq, int64_t ts_ms, enum jsonl_type type, const char *data_json,
                 size_t data_len, char *out, size_t cap)
{
    const char *name = jsonl_type_name(type);

    if (name == NULL)
        return -1;
    if (data_json == NULL || data_len == 0) {
        data_json = "{}";
        data_len = 2;
    }
    if (data_len > (size_t)INT32_MAX / 2)
        return -1;
    return snprintf(out, cap,
                    "{\"seq\":%" PRIu64 ",\"ts_ms\":%" PRId64 ",\"type\":\"%s\",\"data\":%.*s}",
                    seq, ts_ms, name, (int)data_len, data_json);
}
