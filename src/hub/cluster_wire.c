#include "hub/cluster_wire.h"

#include <stdio.h>
#include <string.h>

#include "common/hex.h"

static int token_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
}

void cluster_wire_subject(const char *id, int runner, char *out)
{
    size_t n = strnlen(id, SESSION_MAX_ID), i;
    int raw = n > 0;
    char *p = out;

    for (i = 0; i < n && raw; i++)
        raw = token_char(id[i]);
    memcpy(p, CLUSTER_FRAMES_PREFIX, sizeof(CLUSTER_FRAMES_PREFIX) - 1);
    p += sizeof(CLUSTER_FRAMES_PREFIX) - 1;
    if (runner) {
        *p++ = '=';
        *p++ = '.';
    }
    if (raw) {
        memcpy(p, id, n);
        p[n] = '\0';
        return;
    }
    *p++ = '~';
    hex_encode((const uint8_t *)id, n, p);
}

/* A subject's hex digit: lowercase only, so one id has one subject. */
static int subject_hex_value(char c)
{
    return c >= 'A' && c <= 'F' ? -1 : hex_value(c);
}

int cluster_wire_session_id(const char *subject, char *out)
{
    size_t prefix = sizeof(CLUSTER_FRAMES_PREFIX) - 1, n, i;
    const char *t;

    if (strncmp(subject, CLUSTER_FRAMES_PREFIX, prefix) != 0)
        return -1;
    t = subject + prefix;
    n = strlen(t);
    if (t[0] != '~') {
        if (n == 0 || n > SESSION_MAX_ID)
            return -1;
        for (i = 0; i < n; i++)
            if (!token_char(t[i]))
                return -1;
        memcpy(out, t, n + 1);
        return 0;
    }
    t++;
    n--;
    if (n == 0 || n % 2 || n / 2 > SESSION_MAX_ID)
        return -1;
    for (i = 0; i < n / 2; i++) {
        int hi = subject_hex_value(t[2 * i]), lo = subject_hex_value(t[2 * i + 1]);
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
            return -1;
        out[i] = (char)(hi << 4 | lo);
    }
    out[n / 2] = '\0';
    return 0;
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int n)
{
    uint64_t v = 0;

    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

size_t cluster_wire_entry_size(const struct cluster_wire_entry *e)
{
    return CLUSTER_ENTRY_HEAD + e->origin_len + e->frame_len;
}

size_t cluster_wire_put(uint8_t *out, const struct cluster_wire_entry *e)
{
    out[0] = e->kind;
    put_le(out + 1, e->frame_len, 4);
    put_le(out + 5, (uint64_t)e->at_unix_ms, 8);
    out[13] = (uint8_t)e->origin_len;
    put_le(out + 14, e->runner_seq, 8);
    if (e->origin_len)
        memcpy(out + CLUSTER_ENTRY_HEAD, e->origin, e->origin_len);
    if (e->frame_len)
        memcpy(out + CLUSTER_ENTRY_HEAD + e->origin_len, e->frame, e->frame_len);
    return cluster_wire_entry_size(e);
}

int cluster_wire_next(const uint8_t *body, size_t len, size_t *off, struct cluster_wire_entry *e)
{
    const uint8_t *p;
    size_t left;

    if (*off >= len)
        return 0;
    left = len - *off;
    if (left < CLUSTER_ENTRY_HEAD)
        return -1;
    p = body + *off;
    e->kind = p[0];
    e->frame_len = (size_t)get_le(p + 1, 4);
    e->at_unix_ms = (int64_t)get_le(p + 5, 8);
    e->origin_len = p[13];
    e->runner_seq = get_le(p + 14, 8);
    if (e->origin_len > left - CLUSTER_ENTRY_HEAD ||
        e->frame_len > left - CLUSTER_ENTRY_HEAD - e->origin_len)
        return -1;
    e->origin = p + CLUSTER_ENTRY_HEAD;
    e->frame = e->origin + e->origin_len;
    *off += cluster_wire_entry_size(e);
    return 1;
}

size_t cluster_wire_origin_put(uint8_t *out, const struct cluster_wire_origin *o)
{
    size_t head = o->kind == CLUSTER_ORIGIN_RUNNER ? 10 : 5;

    if (o->id_len > CLUSTER_ORIGIN_ID_MAX || o->kind == CLUSTER_ORIGIN_NONE)
        return 0;
    out[0] = (uint8_t)o->kind;
    if (o->kind == CLUSTER_ORIGIN_RUNNER) {
        put_le(out + 1, o->nonce, 8);
        out[9] = (uint8_t)(o->part > 255 ? 255 : o->part);
    } else {
        put_le(out + 1, o->part, 4);
    }
    memcpy(out + head, o->id, o->id_len);
    return head + o->id_len;
}

int cluster_wire_origin_parse(const uint8_t *origin, size_t len, struct cluster_wire_origin *o)
{
    memset(o, 0, sizeof(*o));
    if (len >= 11 && origin[0] == CLUSTER_ORIGIN_RUNNER) {
        o->nonce = get_le(origin + 1, 8);
        o->part = origin[9];
        o->id = origin + 10;
        o->id_len = len - 10;
    } else if (len >= 6 && origin[0] == CLUSTER_ORIGIN_KEY) {
        o->part = (uint32_t)get_le(origin + 1, 4);
        o->id = origin + 5;
        o->id_len = len - 5;
    } else {
        return -1;
    }
    o->kind = (enum cluster_origin_kind)origin[0];
    return 0;
}

void cluster_wire_bus_put(uint8_t *out, int64_t at_unix_ms, const void *payload, size_t len)
{
    put_le(out, (uint64_t)at_unix_ms, 8);
    put_le(out + 8, len, 4);
    if (len)
        memcpy(out + CLUSTER_BUS_ENTRY_HEAD, payload, len);
}

size_t cluster_wire_bus_entry_size(const uint8_t *entry)
{
    return CLUSTER_BUS_ENTRY_HEAD + (size_t)get_le(entry + 8, 4);
}

int cluster_wire_bus_next(const uint8_t *body, size_t len, size_t *at, int64_t *at_unix_ms,
                          const uint8_t **payload, size_t *payload_len)
{
    size_t n;

    if (*at == len)
        return 0;
    if (len - *at < CLUSTER_BUS_ENTRY_HEAD)
        return -1;
    n = (size_t)get_le(body + *at + 8, 4);
    if (n > len - *at - CLUSTER_BUS_ENTRY_HEAD)
        return -1;
    *at_unix_ms = (int64_t)get_le(body + *at, 8);
    *payload = body + *at + CLUSTER_BUS_ENTRY_HEAD;
    *payload_len = n;
    *at += CLUSTER_BUS_ENTRY_HEAD + n;
    return 1;
}
