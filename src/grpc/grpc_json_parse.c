/* grpc_json_parse: proto3 JSON input for protobuf-c messages (grpc_json.h).
 *
 * jansson parses the document (duplicate keys refused); a cheap scan before
 * it bounds the nesting and the number of values, so a hostile body cannot
 * make the tree many times its own size or recurse deep.  The tree is then
 * walked against the message descriptors, building the message with
 * malloc so protobuf_c_message_free_unpacked(m, NULL) frees it, also when
 * the walk stops half-way. */
#include "grpc/grpc_json.h"

#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc/grpc_json_internal.h"
#include "grpc/grpc_wire.h"

/* Values (objects, lists, members, elements) one document may hold, and its
 * bracket nesting (a message level is one object, a list adds one). */
#define JSON_MAX_VALUES  (1u << 17)
#define JSON_MAX_NESTING (2 * GRPC_JSON_MAX_DEPTH + 2)

struct parse {
    char *why;
    size_t why_size;
    char path[160];
    size_t path_len;
};

/* Records a refusal at the current field path.  Returns -1. */
static int fail(struct parse *ps, const char *fmt, ...)
{
    char reason[GRPC_JSON_ERR_SIZE];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(reason, sizeof(reason), fmt, ap);
    va_end(ap);
    if (ps->path_len > 0)
        snprintf(ps->why, ps->why_size, "field %s: %s", ps->path, reason);
    else
        snprintf(ps->why, ps->why_size, "%s", reason);
    return -1;
}

/* Appends ".NAME" or "[I]" to the path; returns the length to restore. */
static size_t path_push(struct parse *ps, const char *name, long index)
{
    size_t old = ps->path_len;
    int n;

    if (name != NULL)
        n = snprintf(ps->path + old, sizeof(ps->path) - old, "%s%s", old ? "." : "", name);
    else
        n = snprintf(ps->path + old, sizeof(ps->path) - old, "[%ld]", index);
    if (n > 0)
        ps->path_len = old + (size_t)n < sizeof(ps->path) ? old + (size_t)n : sizeof(ps->path) - 1;
    return old;
}

static void path_pop(struct parse *ps, size_t old)
{
    ps->path_len = old;
    ps->path[old] = '\0';
}

/* An integer as sign and magnitude, whatever JSON form it came in. */
struct integer {
    int neg;
    uint64_t mag;
};

/* Reads V (a number or a decimal string) as an integer.  Returns 0, or -1
 * after fail() for any other JSON type, a fraction or a malformed string. */
static int get_integer(struct parse *ps, const json_t *v, struct integer *out)
{
    out->neg = 0;
    out->mag = 0;
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        out->neg = i < 0;
        out->mag = i < 0 ? (uint64_t)0 - (uint64_t)i : (uint64_t)i;
        return 0;
    }
    if (json_is_real(v)) {
        double r = json_real_value(v);
        if (!isfinite(r) || r != floor(r))
            return fail(ps, "expected an integer, got %g", r);
        if (fabs(r) >= 18446744073709551616.0)
            return fail(ps, "integer out of range");
        out->neg = r < 0;
        out->mag = (uint64_t)fabs(r);
        return 0;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        size_t len = json_string_length(v), i = 0;
        out->neg = len > 0 && s[0] == '-';
        out->mag = 0;
        i = out->neg ? 1 : 0;
        if (i == len)
            return fail(ps, "expected an integer, got \"%.32s\"", s);
        for (; i < len; i++) {
            unsigned d = (unsigned)(unsigned char)s[i] - '0';
            if (d > 9)
                return fail(ps, "expected an integer, got \"%.32s\"", s);
            if (out->mag > (UINT64_MAX - d) / 10)
                return fail(ps, "integer out of range");
            out->mag = out->mag * 10 + d;
        }
        return 0;
    }
    return fail(ps, "expected an integer");
}

/* Checks I against a BITS-wide integer, signed or not.  Returns 0 or -1. */
static int integer_fits(struct parse *ps, const struct integer *i, int is_signed, int bits)
{
    uint64_t max = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;

    if (is_signed) {
        uint64_t half = (uint64_t)1 << (bits - 1);
        if (i->neg ? i->mag > half : i->mag >= half)
            return fail(ps, "integer out of range for a %d-bit field", bits);
    } else if ((i->neg && i->mag != 0) || i->mag > max) {
        return fail(ps, "integer out of range for an unsigned %d-bit field", bits);
    }
    return 0;
}

static int64_t integer_signed(const struct integer *i)
{
    return i->neg ? (int64_t)((uint64_t)0 - i->mag) : (int64_t)i->mag;
}

/* Reads V as a double: a number, "NaN", "Infinity", "-Infinity" or a
 * numeric string.  Returns 0, or -1 after fail(). */
static int get_double(struct parse *ps, const json_t *v, double *out)
{
    const char *s;
    char *end;

    if (json_is_number(v)) {
        *out = json_number_value(v);
        return 0;
    }
    if (!json_is_string(v))
        return fail(ps, "expected a number");
    s = json_string_value(v);
    if (strcmp(s, "NaN") == 0) {
        *out = NAN;
        return 0;
    }
    if (strcmp(s, "Infinity") == 0 || strcmp(s, "-Infinity") == 0) {
        *out = s[0] == '-' ? -INFINITY : INFINITY;
        return 0;
    }
    if (s[0] == '\0' || s[0] == ' ' || s[0] == 'i' || s[0] == 'I' || s[0] == 'n' || s[0] == 'N')
        return fail(ps, "expected a number, got \"%.32s\"", s);
    *out = strtod(s, &end);
    if (*end != '\0' || !isfinite(*out))
        return fail(ps, "expected a number, got \"%.32s\"", s);
    return 0;
}

static int parse_message(struct parse *ps, const ProtobufCMessageDescriptor *d, const json_t *obj,
                         ProtobufCMessage **out, int depth);

/* Stores V as one value of field F at SLOT.  Returns 0 or -1 after fail(). */
static int parse_value(struct parse *ps, const ProtobufCFieldDescriptor *f, const json_t *v,
                       void *slot, int depth)
{
    struct integer i = {0, 0};
    double r = 0;
    const ProtobufCEnumValue *ev;
    ProtobufCBinaryData *bin;
    long n;

    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
        if (get_integer(ps, v, &i) < 0 || integer_fits(ps, &i, 1, 32) < 0)
            return -1;
        *(int32_t *)slot = (int32_t)integer_signed(&i);
        return 0;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        if (get_integer(ps, v, &i) < 0 || integer_fits(ps, &i, 0, 32) < 0)
            return -1;
        *(uint32_t *)slot = (uint32_t)i.mag;
        return 0;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        if (get_integer(ps, v, &i) < 0 || integer_fits(ps, &i, 1, 64) < 0)
            return -1;
        *(int64_t *)slot = integer_signed(&i);
        return 0;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        if (get_integer(ps, v, &i) < 0 || integer_fits(ps, &i, 0, 64) < 0)
            return -1;
        *(uint64_t *)slot = i.mag;
        return 0;
    case PROTOBUF_C_TYPE_FLOAT:
        if (get_double(ps, v, &r) < 0)
            return -1;
        if (isfinite(r) && fabs(r) > FLT_MAX)
            return fail(ps, "number out of range for a float field");
        *(float *)slot = (float)r;
        return 0;
    case PROTOBUF_C_TYPE_DOUBLE:
        if (get_double(ps, v, &r) < 0)
            return -1;
        *(double *)slot = r;
        return 0;
    case PROTOBUF_C_TYPE_BOOL:
        if (!json_is_boolean(v))
            return fail(ps, "expected true or false");
        *(protobuf_c_boolean *)slot = json_is_true(v);
        return 0;
    case PROTOBUF_C_TYPE_ENUM:
        if (json_is_string(v)) {
            ev = protobuf_c_enum_descriptor_get_value_by_name(f->descriptor, json_string_value(v));
            if (ev == NULL)
                return fail(ps, "unknown value \"%.64s\" of enum %s", json_string_value(v),
                            ((const ProtobufCEnumDescriptor *)f->descriptor)->name);
            *(int *)slot = ev->value;
            return 0;
        }
        if (!json_is_integer(v))
            return fail(ps, "expected an enum name or number");
        if (get_integer(ps, v, &i) < 0 || integer_fits(ps, &i, 1, 32) < 0)
            return -1;
        *(int *)slot = (int)integer_signed(&i);
        return 0;
    case PROTOBUF_C_TYPE_STRING:
        if (!json_is_string(v))
            return fail(ps, "expected a string");
        *(char **)slot = strdup(json_string_value(v));
        if (*(char **)slot == NULL)
            return fail(ps, "out of memory");
        return 0;
    case PROTOBUF_C_TYPE_BYTES:
        if (!json_is_string(v))
            return fail(ps, "expected a base64 string");
        bin = slot;
        bin->data = malloc(json_string_length(v) / 4 * 3 + 3);
        if (bin->data == NULL)
            return fail(ps, "out of memory");
        n = grpc_base64_decode(json_string_value(v), json_string_length(v), bin->data);
        if (n < 0)
            return fail(ps, "invalid base64");
        bin->len = (size_t)n;
        return 0;
    case PROTOBUF_C_TYPE_MESSAGE:
        return parse_message(ps, f->descriptor, v, (ProtobufCMessage **)slot, depth + 1);
    }
    return fail(ps, "unsupported field type");
}

/* Stores V (a JSON list) as repeated field F of M.  Returns 0 or -1. */
static int parse_repeated(struct parse *ps, const ProtobufCFieldDescriptor *f, const json_t *v,
                          ProtobufCMessage *m, int depth)
{
    char *base = (char *)m;
    size_t *count = (size_t *)(base + f->quantifier_offset);
    size_t size = grpc_json_elem_size(f->type);
    size_t n;
    char *arr;

    if (!json_is_array(v))
        return fail(ps, "expected a list");
    n = json_array_size(v);
    if (n == 0)
        return 0;
    arr = calloc(n, size);
    if (arr == NULL)
        return fail(ps, "out of memory");
    *(char **)(base + f->offset) = arr;
    for (size_t k = 0; k < n; k++) {
        const json_t *e = json_array_get(v, k);
        size_t old = path_push(ps, NULL, (long)k);
        if (json_is_null(e))
            return fail(ps, "null is not allowed in a list");
        /* Counted before it is filled: a half-built element (NULL, or
         * bytes without data) is still freed correctly. */
        (*count)++;
        if (parse_value(ps, f, e, arr + k * size, depth) < 0)
            return -1;
        path_pop(ps, old);
    }
    return 0;
}

/* The field of D that JSON key KEY names (its name or its json name). */
static const ProtobufCFieldDescriptor *find_field(const ProtobufCMessageDescriptor *d,
                                                  const char *key)
{
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(d, key);
    char name[GRPC_JSON_NAME_MAX];

    if (f != NULL)
        return f;
    for (unsigned i = 0; i < d->n_fields; i++)
        if (grpc_json_field_name(&d->fields[i], name, sizeof(name)) != NULL &&
            strcmp(name, key) == 0)
            return &d->fields[i];
    return NULL;
}

/* Stores member V of the object under field F of M; SEEN marks fields
 * already given.  Returns 0 or -1. */
static int parse_member(struct parse *ps, const ProtobufCFieldDescriptor *f, const json_t *v,
                        ProtobufCMessage *m, int depth)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    char *base = (char *)m;

    if (f->label == PROTOBUF_C_LABEL_REPEATED)
        return json_is_null(v) ? 0 : parse_repeated(ps, f, v, m, depth);
    /* null leaves the field at its default, and does not count as the
     * member of a oneof that is set. */
    if (json_is_null(v))
        return 0;
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
        uint32_t *which = (uint32_t *)(base + f->quantifier_offset);
        if (*which != 0) {
            const ProtobufCFieldDescriptor *other =
                protobuf_c_message_descriptor_get_field(d, *which);
            return fail(ps, "%s and %s are members of one oneof; at most one may be set",
                        other ? other->name : "another field", f->name);
        }
        /* The case is set first so that the member is freed even when it
         * fails half-built. */
        *which = f->id;
    }
    if (parse_value(ps, f, v, base + f->offset, depth) < 0)
        return -1;
    if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset != 0 &&
        !(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) && f->type != PROTOBUF_C_TYPE_STRING &&
        f->type != PROTOBUF_C_TYPE_MESSAGE)
        *(protobuf_c_boolean *)(base + f->quantifier_offset) = 1;
    return 0;
}

static int parse_message(struct parse *ps, const ProtobufCMessageDescriptor *d, const json_t *obj,
                         ProtobufCMessage **out, int depth)
{
    uint8_t seen_small[64];
    uint8_t *seen = seen_small;
    ProtobufCMessage *m;
    const char *key;
    json_t *v;
    int rv = -1;

    if (!json_is_object(obj))
        return fail(ps, "expected an object (message %s)", d->name);
    if (depth > GRPC_JSON_MAX_DEPTH)
        return fail(ps, "message nested deeper than %d", GRPC_JSON_MAX_DEPTH);
    m = malloc(d->sizeof_message);
    if (m == NULL)
        return fail(ps, "out of memory");
    protobuf_c_message_init(d, m);
    *out = m;
    if (d->n_fields > sizeof(seen_small)) {
        seen = calloc(d->n_fields, 1);
        if (seen == NULL)
            return fail(ps, "out of memory");
    } else {
        memset(seen_small, 0, sizeof(seen_small));
    }

    json_object_foreach((json_t *)obj, key, v)
    {
        const ProtobufCFieldDescriptor *f = find_field(d, key);
        size_t old;
        if (f == NULL) {
            fail(ps, "unknown field \"%.64s\" in message %s", key, d->name);
            goto out;
        }
        old = path_push(ps, key, 0);
        if (seen[f - d->fields]) {
            fail(ps, "given twice (by its name and its json name)");
            goto out;
        }
        seen[f - d->fields] = 1;
        if (parse_member(ps, f, v, m, depth) < 0)
            goto out;
        path_pop(ps, old);
    }
    rv = 0;
out:
    if (seen != seen_small)
        free(seen);
    return rv;
}

/* Bounds TEXT's nesting and number of values before jansson builds a tree
 * of it.  Returns 0, or -1 after fail().  Malformed text passes: jansson
 * refuses it with a better message. */
static int prescan(struct parse *ps, const char *text, size_t len)
{
    size_t values = 0;
    int depth = 0, in_string = 0;

    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = 0;
            continue;
        }
        switch (c) {
        case '"':
            in_string = 1;
            break;
        case '{':
        case '[':
            if (++depth > JSON_MAX_NESTING)
                return fail(ps, "JSON nested deeper than %d", JSON_MAX_NESTING);
            values++;
            break;
        case '}':
        case ']':
            depth--;
            break;
        case ',':
        case ':':
            values++;
            break;
        default:
            break;
        }
        if (values > JSON_MAX_VALUES)
            return fail(ps, "JSON holds more than %u values", JSON_MAX_VALUES);
    }
    return 0;
}

ProtobufCMessage *grpc_json_decode(const ProtobufCMessageDescriptor *type, const char *json,
                                   size_t len, char *why, size_t why_size)
{
    struct parse ps = {.why = why, .why_size = why_size};
    ProtobufCMessage *m = NULL;
    json_error_t err;
    json_t *root;

    if (why_size > 0)
        why[0] = '\0';
    if (prescan(&ps, json, len) < 0)
        return NULL;
    root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &err);
    if (root == NULL) {
        fail(&ps, "invalid JSON at line %d column %d: %s", err.line, err.column, err.text);
        return NULL;
    }
    if (parse_message(&ps, type, root, &m, 0) < 0) {
        if (m != NULL)
            protobuf_c_message_free_unpacked(m, NULL);
        m = NULL;
    }
    json_decref(root);
    return m;
}
