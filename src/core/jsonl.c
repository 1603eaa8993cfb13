#include "core/jsonl.h"

#include <inttypes.h>
#include <jansson.h>
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

static void jsonl_copy_word(char *dst, json_t *v)
{
    const char *s;
    size_t n;

    dst[0] = '\0';
    if (!json_is_string(v))
        return;
    s = json_string_value(v);
    n = json_string_length(v);
    if (n >= JSONL_WORD_SIZE || memchr(s, '\0', n) != NULL)
        return;
    memcpy(dst, s, n + 1);
}

/* Parses one line into *REC.  Returns JSONL_OK, JSONL_RECORD_INVALID (ERR
 * set) or JSONL_NOMEM. */
static enum jsonl_result jsonl_parse_line(const char *line, size_t n, size_t lineno,
                                          struct jsonl_record *rec, char *err)
{
    enum jsonl_result rv = JSONL_RECORD_INVALID;
    json_error_t jerr;
    json_t *root, *data = NULL, *v;
    const char *key;
    size_t klen;
    int type = -1;

    if (n == 0) {
        jsonl_err(err, lineno, "empty line");
        return JSONL_RECORD_INVALID;
    }
    if (n > JSONL_MAX_LINE) {
        jsonl_err(err, lineno, "line over %u bytes", JSONL_MAX_LINE);
        return JSONL_RECORD_INVALID;
    }
    /* JSON_ALLOW_NUL: "\u0000" is valid JSON; the dump escapes it again. */
    root = json_loadb(line, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (root == NULL) {
        jsonl_err(err, lineno, "invalid JSON: %s", jerr.text);
        return JSONL_RECORD_INVALID;
    }
    if (!json_is_object(root)) {
        jsonl_err(err, lineno, "not a JSON object");
        goto out;
    }
    /* Keys compare with their length: "type\u0000x" is not "type". */
    json_object_keylen_foreach(root, key, klen, v)
    {
        if (klen == 4 && memcmp(key, "type", 4) == 0) {
            if (!json_is_string(v)) {
                jsonl_err(err, lineno, "type is not a string");
                goto out;
            }
            type = jsonl_type_from_name(json_string_value(v), json_string_length(v));
            if (type < 0) {
                jsonl_err(err, lineno, "unknown type \"%.40s\"", json_string_value(v));
                goto out;
            }
        } else if (klen == 4 && memcmp(key, "data", 4) == 0) {
            if (!json_is_object(v)) {
                jsonl_err(err, lineno, "data is not an object");
                goto out;
            }
            data = v;
        } else if (!(klen == 3 && memcmp(key, "seq", 3) == 0) &&
                   !(klen == 5 && memcmp(key, "ts_ms", 5) == 0)) {
            jsonl_err(err, lineno, "unknown key \"%.40s\"", key);
            goto out;
        }
    }
    if (type < 0) {
        jsonl_err(err, lineno, "missing type");
        goto out;
    }
    rec->type = (enum jsonl_type)type;
    rec->kind[0] = rec->state[0] = '\0';
    if (data != NULL) {
        jsonl_copy_word(rec->kind, json_object_get(data, "kind"));
        jsonl_copy_word(rec->state, json_object_get(data, "state"));
        rec->data_json = json_dumps(data, JSON_COMPACT | JSON_PRESERVE_ORDER);
    } else {
        rec->data_json = strdup("{}");
    }
    if (rec->data_json == NULL) {
        rv = JSONL_NOMEM;
        goto out;
    }
    rec->data_len = strlen(rec->data_json);
    rv = JSONL_OK;
out:
    json_decref(root);
    return rv;
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
