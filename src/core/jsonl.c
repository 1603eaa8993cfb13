#include "core/jsonl.h"
#include "core/jsonv.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(JSONL_WORD_SIZE == JSONV_WORD_SIZE, "record words are filled by jsonv");

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
    static const char *const asking[] = {"permission", "elicitation", "elicitation_url",
                                         "worker_permission"};

    if (rec->type != JSONL_TYPE_NOTIFICATION)
        return 0;
    for (size_t i = 0; i < sizeof(asking) / sizeof(asking[0]); i++) {
        if (strcmp(rec->kind, asking[i]) == 0)
            return 1;
    }
    return 0;
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

/* Sets REC's data_json to the compact form of the validated object
 * DATA[0..DATA_END) (NULL: absent, {}), which holds WS bytes of whitespace
 * outside strings.  Returns JSONL_OK or JSONL_NOMEM. */
static enum jsonl_result jsonl_take_data(struct jsonl_record *rec, const uint8_t *data,
                                         const uint8_t *data_end, size_t ws)
{
    if (data == NULL) {
        rec->kind[0] = rec->state[0] = '\0';
        rec->data_json = strdup("{}");
        rec->data_len = 2;
        return rec->data_json ? JSONL_OK : JSONL_NOMEM;
    }
    rec->data_json = malloc((size_t)(data_end - data) + 1);
    if (rec->data_json == NULL)
        return JSONL_NOMEM;
    if (ws == 0) {
        rec->data_len = (size_t)(data_end - data);
        memcpy(rec->data_json, data, rec->data_len);
    } else {
        rec->data_len = jsonv_compact(data, (size_t)(data_end - data), rec->data_json);
    }
    rec->data_json[rec->data_len] = '\0';
    return JSONL_OK;
}

/* Parses one line into *REC.  Returns JSONL_OK, JSONL_RECORD_INVALID (ERR
 * set) or JSONL_NOMEM. */
static enum jsonl_result jsonl_parse_line(const char *line, size_t n, size_t lineno,
                                          struct jsonl_record *rec, char *err)
{
    struct jsonv_parser jp;
    const uint8_t *data = NULL, *data_end = NULL, *raw;
    size_t data_ws = 0, len, base;
    int esc, type = -1, rv = JSONL_RECORD_INVALID;
    struct jsonv_watch w;

    if (n == 0) {
        jsonl_err(err, lineno, "empty line");
        return JSONL_RECORD_INVALID;
    }
    if (n > JSONL_MAX_LINE) {
        jsonl_err(err, lineno, "line over %u bytes", JSONL_MAX_LINE);
        return JSONL_RECORD_INVALID;
    }
    jsonv_init(&jp, line, n);
    rec->kind[0] = rec->state[0] = '\0';
    w.name[0] = "kind";
    w.name[1] = "state";
    w.word[0] = rec->kind;
    w.word[1] = rec->state;

    jsonv_skip_ws(&jp);
    if (jp.p >= jp.end || *jp.p != '{') {
        jsonl_err(err, lineno, "not a JSON object");
        goto out;
    }
    /* The root object is walked here rather than by jsonv_object() because its
     * members carry meaning. */
    jp.p++;
    base = jp.nkeys;
    jsonv_skip_ws(&jp);
    if (jp.p < jp.end && *jp.p == '}') {
        jp.p++;
        goto closed;
    }
    for (;;) {
        struct jsonv_key *k;
        if (jp.p >= jp.end || *jp.p != '"') {
            jsonv_fail(&jp, "expected a key");
            goto bad;
        }
        if (jsonv_string(&jp, &raw, &len, &esc) != 0 ||
            jsonv_push_key(&jp, base, raw, len, esc) != 0)
            goto bad;
        k = &jp.keys[jp.nkeys - 1];
        jsonv_skip_ws(&jp);
        if (jp.p >= jp.end || *jp.p != ':') {
            jsonv_fail(&jp, "expected ':'");
            goto bad;
        }
        jp.p++;
        jsonv_skip_ws(&jp);
        if (jsonv_key_is(k, "type")) {
            uint8_t tmp[64];
            if (jp.p >= jp.end || *jp.p != '"') {
                if (jsonv_value(&jp, 1) != 0)
                    goto bad;
                jsonl_err(err, lineno, "type is not a string");
                goto out;
            }
            if (jsonv_string(&jp, &raw, &len, &esc) != 0)
                goto bad;
            type = len < sizeof(tmp)
                       ? jsonl_type_from_name((const char *)tmp, jsonv_decode(raw, len, tmp))
                       : -1;
            if (type < 0) {
                jsonl_err(err, lineno, "unknown type \"%.*s\"", (int)(len < 40 ? len : 40),
                          (const char *)raw);
                goto out;
            }
        } else if (jsonv_key_is(k, "data")) {
            size_t ws0 = jp.ws;
            if (jp.p >= jp.end || *jp.p != '{') {
                if (jsonv_value(&jp, 1) != 0)
                    goto bad;
                jsonl_err(err, lineno, "data is not an object");
                goto out;
            }
            data = jp.p;
            if (jsonv_object(&jp, 1, &w) != 0)
                goto bad;
            data_end = jp.p;
            data_ws = jp.ws - ws0;
        } else if (jsonv_key_is(k, "seq") || jsonv_key_is(k, "ts_ms")) {
            if (jsonv_value(&jp, 1) != 0)
                goto bad;
        } else {
            jsonl_err(err, lineno, "unknown key \"%.*s\"", (int)(len < 40 ? len : 40),
                      (const char *)raw);
            goto out;
        }
        jsonv_skip_ws(&jp);
        if (jp.p < jp.end && *jp.p == ',') {
            jp.p++;
            jsonv_skip_ws(&jp);
            continue;
        }
        if (jp.p < jp.end && *jp.p == '}') {
            jp.p++;
            break;
        }
        jsonv_fail(&jp, "expected ',' or '}'");
        goto bad;
    }
closed:
    jsonv_skip_ws(&jp);
    if (jp.p != jp.end) {
        jsonv_fail(&jp, "trailing bytes after the object");
        goto bad;
    }
    if (type < 0) {
        jsonl_err(err, lineno, "missing type");
        goto out;
    }
    rec->type = (enum jsonl_type)type;
    rv = jsonl_take_data(rec, data, data_end, data_ws);
    goto out;
bad:
    if (jp.nomem)
        rv = JSONL_NOMEM;
    else
        jsonl_err(err, lineno, "invalid JSON: %s at byte %zu", jp.why ? jp.why : "syntax error",
                  (size_t)(jp.p - jp.start) + 1);
out:
    jsonv_release(&jp);
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
    /* An empty protobuf bytes field arrives as NULL: NULL + 0 is undefined. */
    const char *p = bytes ? (const char *)bytes : "", *end = p + len, *nl;
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
    cap = lines ? lines : 1;
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

enum jsonl_result jsonl_parse_record(const char *type, size_t type_len, const char *data,
                                     size_t data_len, struct jsonl_record *rec, char *err)
{
    /* The bytes {"type":"","data":} around TYPE and DATA in a line. */
    static const size_t line_overhead = 19;
    struct jsonv_parser jp;
    const uint8_t *start, *end;
    struct jsonv_watch w;
    size_t ws0;
    int t;
    enum jsonl_result rv = JSONL_RECORD_INVALID;

    if (err != NULL)
        err[0] = '\0';
    memset(rec, 0, sizeof(*rec));
    t = jsonl_type_from_name(type, type_len);
    if (t < 0) {
        jsonl_err(err, 1, "unknown type \"%.*s\"", (int)(type_len < 40 ? type_len : 40), type);
        return JSONL_RECORD_INVALID;
    }
    rec->type = (enum jsonl_type)t;
    if (data_len > JSONL_MAX_LINE - line_overhead - type_len) {
        jsonl_err(err, 1, "line over %u bytes", JSONL_MAX_LINE);
        return JSONL_RECORD_INVALID;
    }
    if (data_len == 0)
        return jsonl_take_data(rec, NULL, NULL, 0);
    w.name[0] = "kind";
    w.name[1] = "state";
    w.word[0] = rec->kind;
    w.word[1] = rec->state;
    jsonv_init(&jp, data, data_len);
    jsonv_skip_ws(&jp);
    if (jp.p >= jp.end || *jp.p != '{') {
        jsonl_err(err, 1, "data is not an object");
        goto out;
    }
    ws0 = jp.ws;
    start = jp.p;
    if (jsonv_object(&jp, 1, &w) != 0) {
        if (jp.nomem)
            rv = JSONL_NOMEM;
        else
            jsonl_err(err, 1, "invalid JSON: %s at byte %zu", jp.why ? jp.why : "syntax error",
                      (size_t)(jp.p - jp.start) + 1);
        goto out;
    }
    end = jp.p;
    ws0 = jp.ws - ws0;
    jsonv_skip_ws(&jp);
    if (jp.p != jp.end) {
        jsonl_err(err, 1, "trailing bytes after the data object at byte %zu",
                  (size_t)(jp.p - jp.start) + 1);
        goto out;
    }
    rv = jsonl_take_data(rec, start, end, ws0);
out:
    jsonv_release(&jp);
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
