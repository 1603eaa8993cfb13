/* pb_validate: see pb_validate.h.  One pass over the wire bytes; nothing
 * is allocated. */
#include "common/pb_validate.h"

#include <stdio.h>
#include <string.h>

#include "common/protowire.h"
#include "common/utf8.h"

/* Deeper nesting than any request type has is left to the decoder. */
#define VALIDATE_MAX_DEPTH 32
#define VALIDATE_PATH_SIZE 256

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

/* The length of the printable ASCII (0x20..0x7e) run at S[0..LEN), eight
 * bytes at a time: text in frames is mostly that, and it needs no decoding
 * and holds no control character.  A word is skipped when no byte in it has
 * the high bit set, is below 0x20 or is 0x7f (the "has a byte less than n"
 * test reports no false negatives; a false positive only ends the fast
 * loop early). */
static size_t printable_ascii_run(const uint8_t *s, size_t len)
{
    const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    size_t i = 0;

    for (; i + 8 <= len; i += 8) {
        uint64_t word, del;

        memcpy(&word, s + i, 8);
        del = word ^ (ones * 0x7f); /* a zero byte where S holds 0x7f */
        if ((word & highs) || ((word - ones * 0x20) & ~word & highs) ||
            ((del - ones) & ~del & highs))
            break;
    }
    while (i < len && s[i] >= 0x20 && s[i] < 0x7f)
        i++;
    return i;
}

/* The reason the bytes S[0..LEN) of the string field FIELD are refused
 * for, or NULL.  ASCII, nearly every byte a request holds, is checked
 * inline; only bytes from 0x80 up go through the decoder.  Whether FIELD
 * is an identifier is asked only when a control character turns up. */
static const char *string_problem(const uint8_t *s, size_t len,
                                  const ProtobufCFieldDescriptor *field)
{
    size_t i = 0;
    int is_id = -1; /* not asked yet */

    while (i < len) {
        uint32_t cp = s[i];
        size_t n = 1;

        if (cp >= 0x20 && cp < 0x7f) {
            i += printable_ascii_run(s + i, len - i);
            continue;
        }
        if (cp == 0)
            return "holds a NUL byte";
        if (cp >= 0x80 && (n = utf8_decode(s + i, len - i, &cp)) == 0)
            return "is not valid UTF-8";
        if (utf8_is_control(cp) && (is_id < 0 ? (is_id = field_is_id(field->name)) : is_id))
            return "holds a control character";
        i += n;
    }
    return NULL;
}

/* Where the walk is: at each depth, the message's first byte, and the
 * field being read with the position of its key. */
struct walk_step {
    const uint8_t *message_start;
    const ProtobufCFieldDescriptor *field;
    const uint8_t *field_key;
};

/* FIELD's index among its repeats in the message that starts at START,
 * counting the occurrences whose key comes before KEY. */
static long repeat_index(const uint8_t *start, const uint8_t *key,
                         const ProtobufCFieldDescriptor *field)
{
    struct protowire_reader r;
    struct protowire_field f;
    long index = 0;

    protowire_reader_init(&r, start, (size_t)(key - start));
    while (protowire_next(&r, &f) == 1)
        if (f.number == field->id && f.type == PROTOWIRE_LEN)
            index++;
    return index;
}

/* Writes "a.b[2].c REASON" into WHY for the STEPS[0..DEPTH] the walk is
 * in.  The path is formatted only here, on the way to a refusal. */
static void refusal(const struct walk_step *steps, int depth, const char *reason, char *why,
                    size_t why_size)
{
    char path[VALIDATE_PATH_SIZE];
    size_t used = 0;

    path[0] = '\0';
    for (int d = 0; d <= depth && used < sizeof(path) - 1; d++) {
        const ProtobufCFieldDescriptor *field = steps[d].field;
        int n;

        if (field->label == PROTOBUF_C_LABEL_REPEATED)
            n = snprintf(path + used, sizeof(path) - used, "%s%s[%ld]", d ? "." : "", field->name,
                         repeat_index(steps[d].message_start, steps[d].field_key, field));
        else
            n = snprintf(path + used, sizeof(path) - used, "%s%s", d ? "." : "", field->name);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    snprintf(why, why_size, "%s %s", path, reason);
}

/* Walks the message at DEPTH of STEPS.  Returns VALIDATE_OK or
 * VALIDATE_REFUSED (WHY set). */
static int walk(const ProtobufCMessageDescriptor *type, const uint8_t *p, const uint8_t *end,
                struct walk_step *steps, int depth, char *why, size_t why_size)
{
    struct protowire_reader r;
    struct protowire_field f;
    const uint8_t *key_at = p;

    protowire_reader_init(&r, p, (size_t)(end - p));
    steps[depth].message_start = p;
    /* Bytes that do not parse are the decoder's to refuse. */
    for (; protowire_next(&r, &f) == 1; key_at = r.at) {
        const ProtobufCFieldDescriptor *field;
        const char *problem;

        if (f.type != PROTOWIRE_LEN ||
            !(field = protobuf_c_message_descriptor_get_field(type, f.number)))
            continue;
        if (field->type == PROTOBUF_C_TYPE_STRING) {
            problem = string_problem(f.data, f.len, field);
            if (problem) {
                steps[depth].field = field;
                steps[depth].field_key = key_at;
                refusal(steps, depth, problem, why, why_size);
                return VALIDATE_REFUSED;
            }
        } else if (field->type == PROTOBUF_C_TYPE_MESSAGE && depth < VALIDATE_MAX_DEPTH) {
            steps[depth].field = field;
            steps[depth].field_key = key_at;
            if (walk(field->descriptor, f.data, f.data + f.len, steps, depth + 1, why, why_size) !=
                VALIDATE_OK)
                return VALIDATE_REFUSED;
        }
    }
    return VALIDATE_OK;
}

int pb_validate_strings(const ProtobufCMessageDescriptor *type, const uint8_t *bytes, size_t len,
                        char *why, size_t why_size)
{
    struct walk_step steps[VALIDATE_MAX_DEPTH + 1];

    if (len == 0)
        return 0;
    return walk(type, bytes, bytes + len, steps, 0, why, why_size) == VALIDATE_OK ? 0 : -1;
}
