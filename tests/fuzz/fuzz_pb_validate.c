/* libFuzzer target for the request string check (src/common/pb_validate.c),
 * differential: the check skips printable ASCII a word at a time and
 * formats a refusal's path only when it refuses, so it is compared with a
 * plain reader written here the obvious way (every byte decoded, the path
 * built on the way down).  Both must agree on the verdict and on the
 * reason, path included.  The first input byte picks the message type. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/pb_validate.h"
#include "common/protowire.h"
#include "common/utf8.h"
#include "compass/v1/frames.pb-c.h"
#include "compass/v1/services.pb-c.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int is_id(const char *name)
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

static const char *plain_problem(const uint8_t *s, size_t len, int id)
{
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t n;

        if (s[i] == 0)
            return "holds a NUL byte";
        if ((n = utf8_decode(s + i, len - i, &cp)) == 0)
            return "is not valid UTF-8";
        if (id && utf8_is_control(cp))
            return "holds a control character";
        i += n;
    }
    return NULL;
}

/* Returns 0 or -1 with the reason in WHY; PATH holds the path so far. */
static int plain_walk(const ProtobufCMessageDescriptor *type, const uint8_t *p, size_t len,
                      int depth, char *path, char *why)
{
    struct protowire_reader r;
    struct protowire_field f;
    unsigned seen[256] = {0};

    protowire_reader_init(&r, p, len);
    while (protowire_next(&r, &f) == 1) {
        const ProtobufCFieldDescriptor *field;
        char *end = path + strlen(path);
        const char *problem;
        int rv = 0;

        if (f.type != PROTOWIRE_LEN ||
            !(field = protobuf_c_message_descriptor_get_field(type, f.number)))
            continue;
        if (field->type != PROTOBUF_C_TYPE_STRING &&
            (field->type != PROTOBUF_C_TYPE_MESSAGE || depth >= 32))
            continue;
        if (field->label == PROTOBUF_C_LABEL_REPEATED)
            sprintf(end, "%s%s[%u]", end == path ? "" : ".", field->name,
                    seen[(field - type->fields) & 255]++);
        else
            sprintf(end, "%s%s", end == path ? "" : ".", field->name);
        if (field->type == PROTOBUF_C_TYPE_STRING) {
            if ((problem = plain_problem(f.data, f.len, is_id(field->name)))) {
                sprintf(why, "%s %s", path, problem);
                rv = -1;
            }
        } else {
            rv = plain_walk(field->descriptor, f.data, f.len, depth + 1, path, why);
        }
        *end = '\0';
        if (rv != 0)
            return rv;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const ProtobufCMessageDescriptor *const types[] = {
        &compass__v1__publish_events_request__descriptor,
        &compass__v1__sessions_request__descriptor,
        &compass__v1__send_agent_message_request__descriptor,
        &compass__v1__agent_frame__descriptor,
    };
    /* Deep enough for 33 levels of short names; a longer path would be cut
     * at 255 bytes by the check, and only the verdict is compared then. */
    static char path[8192], plain_why[8192 + 64];
    char why[512];
    int rv, plain;

    if (size < 1)
        return 0;
    path[0] = '\0';
    rv = pb_validate_strings(types[data[0] % 4], data + 1, size - 1, why, sizeof(why));
    plain = plain_walk(types[data[0] % 4], data + 1, size - 1, 0, path, plain_why);
    if (rv != plain)
        abort();
    if (rv != 0 && strlen(plain_why) < 255 && strcmp(why, plain_why) != 0)
        abort();
    return 0;
}
