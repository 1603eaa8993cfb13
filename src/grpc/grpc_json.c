/* grpc_json: proto3 JSON output for protobuf-c messages (grpc_json.h).
 * The parser is grpc_json_parse.c. */
#include "grpc/grpc_json.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/utf8.h"
#include "grpc/grpc_json_internal.h"
#include "grpc/grpc_wire.h"

char *grpc_json_field_name(const ProtobufCFieldDescriptor *field, char *out, size_t out_size)
{
    size_t n = 0;
    int upper = 0;

    for (const char *p = field->name; *p != '\0'; p++) {
        if (*p == '_') {
            upper = 1;
            continue;
        }
        if (n + 1 >= out_size)
            return NULL;
        out[n++] = upper && *p >= 'a' && *p <= 'z' ? (char)(*p - 'a' + 'A') : *p;
        upper = 0;
    }
    if (n >= out_size)
        return NULL;
    out[n] = '\0';
    return out;
}

size_t grpc_json_elem_size(ProtobufCType type)
{
    switch (type) {
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        return sizeof(uint64_t);
    case PROTOBUF_C_TYPE_DOUBLE:
        return sizeof(double);
    case PROTOBUF_C_TYPE_FLOAT:
        return sizeof(float);
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_STRING:
        return sizeof(char *);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(ProtobufCMessage *);
    default: /* the 32-bit integers and enums */
        return sizeof(uint32_t);
    }
}

/* --- Output buffer ------------------------------------------------------- */

struct out {
    char *p;
    size_t len;
    size_t cap;
    int failed; /* memory short: everything after is dropped */
    char *why;
    size_t why_size;
};

static void out_fail(struct out *o, const char *fmt, ...)
{
    va_list ap;

    if (!o->failed && o->why_size > 0) {
        va_start(ap, fmt);
        vsnprintf(o->why, o->why_size, fmt, ap);
        va_end(ap);
    }
    o->failed = 1;
}

/* Makes room for N more bytes.  Returns 0, or -1 (and marks O failed). */
static int out_reserve(struct out *o, size_t n)
{
    size_t cap;
    char *p;

    if (o->failed)
        return -1;
    if (o->len + n + 1 <= o->cap)
        return 0;
    cap = o->cap ? o->cap : 256;
    while (cap < o->len + n + 1) {
        if (cap > SIZE_MAX / 2) {
            out_fail(o, "JSON output too large");
            return -1;
        }
        cap *= 2;
    }
    p = realloc(o->p, cap);
    if (p == NULL) {
        out_fail(o, "out of memory writing JSON");
        return -1;
    }
    o->p = p;
    o->cap = cap;
    return 0;
}

static void out_bytes(struct out *o, const char *s, size_t n)
{
    if (out_reserve(o, n) < 0)
        return;
    memcpy(o->p + o->len, s, n);
    o->len += n;
}

static void out_char(struct out *o, char c)
{
    if (out_reserve(o, 1) < 0)
        return;
    o->p[o->len++] = c;
}

static void out_fmt(struct out *o, const char *fmt, ...)
{
    char tmp[64];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(tmp)) {
        out_fail(o, "number formatting failed");
        return;
    }
    out_bytes(o, tmp, (size_t)n);
}

/* A JSON string of S (LEN bytes), which must be UTF-8: quotes, backslashes
 * and controls are escaped, everything else is copied. */
static void out_string(struct out *o, const char *field, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    size_t i = 0, run = 0;

    out_char(o, '"');
    while (i < len) {
        unsigned char c = (unsigned char)s[i];
        uint32_t cp;
        size_t n;

        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            i++;
            continue;
        }
        out_bytes(o, s + run, i - run);
        if (c >= 0x80) {
            n = utf8_decode((const uint8_t *)s + i, len - i, &cp);
            if (n == 0) {
                out_fail(o, "string field %s is not valid UTF-8", field);
                return;
            }
            out_bytes(o, s + i, n);
            i += n;
        } else {
            char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            switch (c) {
            case '"':
                out_bytes(o, "\\\"", 2);
                break;
            case '\\':
                out_bytes(o, "\\\\", 2);
                break;
            case '\n':
                out_bytes(o, "\\n", 2);
                break;
            case '\r':
                out_bytes(o, "\\r", 2);
                break;
            case '\t':
                out_bytes(o, "\\t", 2);
                break;
            default:
                out_bytes(o, esc, sizeof(esc));
            }
            i++;
        }
        run = i;
    }
    out_bytes(o, s + run, i - run);
    out_char(o, '"');
}

static void out_double(struct out *o, double v, int digits)
{
    if (isnan(v))
        out_bytes(o, "\"NaN\"", 5);
    else if (isinf(v))
        out_bytes(o, v > 0 ? "\"Infinity\"" : "\"-Infinity\"", v > 0 ? 10 : 11);
    else
        out_fmt(o, "%.*g", digits, v);
}

static void put_message(struct out *o, const ProtobufCMessage *m, int depth);

/* Writes one value of FIELD stored at P (an element, for repeated fields). */
static void put_value(struct out *o, const ProtobufCFieldDescriptor *f, const void *p, int depth)
{
    const ProtobufCEnumValue *ev;
    const ProtobufCBinaryData *bin;
    const char *s;
    char *b64;
    size_t b64_size;

    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
        out_fmt(o, "%" PRId32, *(const int32_t *)p);
        break;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        out_fmt(o, "%" PRIu32, *(const uint32_t *)p);
        break;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        out_fmt(o, "\"%" PRId64 "\"", *(const int64_t *)p);
        break;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        out_fmt(o, "\"%" PRIu64 "\"", *(const uint64_t *)p);
        break;
    case PROTOBUF_C_TYPE_FLOAT:
        out_double(o, *(const float *)p, 9);
        break;
    case PROTOBUF_C_TYPE_DOUBLE:
        out_double(o, *(const double *)p, 17);
        break;
    case PROTOBUF_C_TYPE_BOOL:
        if (*(const protobuf_c_boolean *)p)
            out_bytes(o, "true", 4);
        else
            out_bytes(o, "false", 5);
        break;
    case PROTOBUF_C_TYPE_ENUM:
        ev = protobuf_c_enum_descriptor_get_value(f->descriptor, *(const int *)p);
        if (ev != NULL)
            out_string(o, f->name, ev->name, strlen(ev->name));
        else
            out_fmt(o, "%d", *(const int *)p);
        break;
    case PROTOBUF_C_TYPE_STRING:
        s = *(char *const *)p;
        if (s == NULL)
            s = "";
        out_string(o, f->name, s, strlen(s));
        break;
    case PROTOBUF_C_TYPE_BYTES:
        bin = p;
        b64_size = (bin->len + 2) / 3 * 4 + 3;
        if (out_reserve(o, b64_size) < 0)
            return;
        b64 = o->p + o->len;
        *b64++ = '"';
        o->len += 1 + base64_encode(bin->data, bin->len, b64, b64_size - 2);
        o->p[o->len++] = '"';
        break;
    case PROTOBUF_C_TYPE_MESSAGE:
        if (*(ProtobufCMessage *const *)p == NULL)
            out_bytes(o, "{}", 2);
        else
            put_message(o, *(ProtobufCMessage *const *)p, depth + 1);
        break;
    }
}

/* 1 when a field without explicit presence holds a non-default value. */
static int value_is_set(const ProtobufCFieldDescriptor *f, const void *p)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_STRING:
        return *(char *const *)p != NULL && **(char *const *)p != '\0';
    case PROTOBUF_C_TYPE_BYTES:
        return ((const ProtobufCBinaryData *)p)->len > 0;
    case PROTOBUF_C_TYPE_MESSAGE:
        return *(ProtobufCMessage *const *)p != NULL;
    default: {
        /* Bitwise, as protobuf's own printers do: -0.0 counts as set. */
        static const uint8_t zero[8];
        return memcmp(p, zero, grpc_json_elem_size(f->type)) != 0;
    }
    }
}

/* 1 when FIELD of M is present and has to be written. */
static int field_present(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
    const char *base = (const char *)m;
    const void *p = base + f->offset;

    if (f->label == PROTOBUF_C_LABEL_REPEATED)
        return *(const size_t *)(base + f->quantifier_offset) > 0;
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
        return *(const uint32_t *)(base + f->quantifier_offset) == f->id;
    if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset != 0 &&
        f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_MESSAGE)
        return *(const protobuf_c_boolean *)(base + f->quantifier_offset) != 0;
    if (f->type == PROTOBUF_C_TYPE_MESSAGE)
        return *(ProtobufCMessage *const *)p != NULL;
    if (f->label != PROTOBUF_C_LABEL_NONE)
        return f->type != PROTOBUF_C_TYPE_STRING || *(char *const *)p != NULL;
    return value_is_set(f, p);
}

static void put_message(struct out *o, const ProtobufCMessage *m, int depth)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    int first = 1;
    char name[GRPC_JSON_NAME_MAX];

    if (depth > GRPC_JSON_MAX_DEPTH) {
        out_fail(o, "message nested deeper than %d", GRPC_JSON_MAX_DEPTH);
        return;
    }
    out_char(o, '{');
    for (unsigned i = 0; i < d->n_fields && !o->failed; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        const char *base = (const char *)m;

        if (!field_present(m, f))
            continue;
        if (grpc_json_field_name(f, name, sizeof(name)) == NULL) {
            out_fail(o, "field name %s too long", f->name);
            return;
        }
        if (!first)
            out_char(o, ',');
        first = 0;
        out_char(o, '"');
        out_bytes(o, name, strlen(name));
        out_bytes(o, "\":", 2);
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = *(const size_t *)(base + f->quantifier_offset);
            const char *arr = *(char *const *)(base + f->offset);
            size_t size = grpc_json_elem_size(f->type);
            out_char(o, '[');
            for (size_t k = 0; k < n && !o->failed; k++) {
                if (k > 0)
                    out_char(o, ',');
                put_value(o, f, arr + k * size, depth);
            }
            out_char(o, ']');
        } else {
            put_value(o, f, base + f->offset, depth);
        }
    }
    out_char(o, '}');
}

char *grpc_json_encode(const ProtobufCMessage *message, size_t *len, char *why, size_t why_size)
{
    struct out o = {.why = why, .why_size = why_size};

    put_message(&o, message, 0);
    if (o.failed || out_reserve(&o, 0) < 0) {
        free(o.p);
        return NULL;
    }
    o.p[o.len] = '\0';
    *len = o.len;
    return o.p;
}
