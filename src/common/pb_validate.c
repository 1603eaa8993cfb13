/* pb_validate: see pb_validate.h.  One pass over the wire bytes; nothing
 * is allocated. */
#include "common/pb_validate.h"

#include <stdio.h>
#include <string.h>

#include "common/protowire.h"
#include "common/utf8.h"

/* Deeper nesting than any request type has is left to the decoder. */
#define VALIDATE_MAX_DEPTH 32
/* Repeated fields of messages with more fields than this are named without
 * an index. */
#define VALIDATE_MAX_FIELDS 64
#define VALIDATE_PATH_SIZE  256

enum { VALIDATE_OK = 0, VALIDATE_REFUSED = -1 };

/* 1 when the field named NAME holds an identifier. */
static int field_is_id(const char *name)
{
    static const char *const named[] = {"container_name", "provider", "blob_ref", "live_sessions"};
    size_t len = strlen(name);

    if (strcmp(name, "id") == 0 || (len > 3 && strcmp(name + len - 3, "_id") == 0))
        return 1;
    for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
        if (strcmp(name, named[i]) == 0)
            return 1;
    return 0;
}

/* The reason string field bytes S[0..LEN) are refused for, or NULL. */
static const char *string_problem(const uint8_t *s, size_t len, int is_id)
{
    size_t i = 0;

    while (i < len) {
        uint32_t cp;
        size_t n;
        if (s[i] == 0)
            return "holds a NUL byte";
        n = utf8_decode(s + i, len - i, &cp);
        if (n == 0)
            return "is not valid UTF-8";
        if (is_id && utf8_is_control(cp))
            return "holds a control character";
        i += n;
    }
    return NULL;
}

/* Appends FIELD's name (and [INDEX] when it is repeated) to the PATH of
 * PATH_LEN bytes.  Returns the new length. */
static size_t path_push(char *path, size_t path_len, const ProtobufCFieldDescriptor *field,
                        long index)
{
    int n;

    if (field->label == PROTOBUF_C_LABEL_REPEATED && index >= 0)
        n = snprintf(path + path_len, VALIDATE_PATH_SIZE - path_len, "%s%s[%ld]",
                     path_len ? "." : "", field->name, index);
    else
        n = snprintf(path + path_len, VALIDATE_PATH_SIZE - path_len, "%s%s", path_len ? "." : "",
                     field->name);
    if (n < 0)
        return path_len;
    path_len += (size_t)n;
    return path_len < VALIDATE_PATH_SIZE ? path_len : VALIDATE_PATH_SIZE - 1;
}

/* Walks one message.  Returns VALIDATE_OK or VALIDATE_REFUSED (WHY set). */
static int walk(const ProtobufCMessageDescriptor *type, const uint8_t *p, const uint8_t *end,
                int depth, char *path, size_t path_len, char *why, size_t why_size)
{
    unsigned seen[VALIDATE_MAX_FIELDS];

    memset(seen, 0, sizeof(seen));
    while (p < end) {
        const ProtobufCFieldDescriptor *field;
        uint64_t key, len;
        long index = -1;
        const char *problem;

        if (protowire_read_varint(&p, end, &key) != 0)
            return VALIDATE_OK;
        switch (key & 7) {
        case 0:
            if (protowire_read_varint(&p, end, &len) != 0)
                return VALIDATE_OK;
            continue;
        case 1:
            if (end - p < 8)
                return VALIDATE_OK;
            p += 8;
            continue;
        case 5:
            if (end - p < 4)
                return VALIDATE_OK;
            p += 4;
            continue;
        case 2:
            break;
        default:
            return VALIDATE_OK; /* groups and reserved wire types do not decode */
        }
        if (protowire_read_varint(&p, end, &len) != 0 || len > (uint64_t)(end - p))
            return VALIDATE_OK;
        field = key >> 3 <= UINT32_MAX
                    ? protobuf_c_message_descriptor_get_field(type, (unsigned)(key >> 3))
                    : NULL;
        if (field && (size_t)(field - type->fields) < VALIDATE_MAX_FIELDS)
            index = (long)seen[field - type->fields]++;
        if (field && field->type == PROTOBUF_C_TYPE_STRING) {
            problem = string_problem(p, (size_t)len, field_is_id(field->name));
            if (problem) {
                path_push(path, path_len, field, index);
                snprintf(why, why_size, "%s %s", path, problem);
                return VALIDATE_REFUSED;
            }
        } else if (field && field->type == PROTOBUF_C_TYPE_MESSAGE && depth < VALIDATE_MAX_DEPTH) {
            size_t sub_len = path_push(path, path_len, field, index);
            if (walk(field->descriptor, p, p + len, depth + 1, path, sub_len, why, why_size) !=
                VALIDATE_OK)
                return VALIDATE_REFUSED;
            path[path_len] = '\0';
        }
        p += len;
    }
    return VALIDATE_OK;
}

int pb_validate_strings(const ProtobufCMessageDescriptor *type, const uint8_t *bytes, size_t len,
                        char *why, size_t why_size)
{
    char path[VALIDATE_PATH_SIZE];

    path[0] = '\0';
    if (len == 0)
        return 0;
    return walk(type, bytes, bytes + len, 0, path, 0, why, why_size) == VALIDATE_OK ? 0 : -1;
}
