/* libFuzzer target for the proto3 JSON codec (src/grpc/grpc_json.h).  The
 * first byte picks a message type (its low bits) and a direction (its top
 * bit): JSON text in, or protobuf binary in.  Any input either fails
 * cleanly with a reason or yields a message whose JSON parses back to the
 * same binary form. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agenthub/testing/v1/echo.pb-c.h"
#include "compass/v1/frames.pb-c.h"
#include "compass/v1/services.pb-c.h"
#include "grpc/grpc_json.h"
#include "grpc/reflection/v1/reflection.pb-c.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Types covering every field kind proto/ uses: strings, bytes, 32- and
 * 64-bit integers, bools, enums, oneofs, lists and nesting. */
static const ProtobufCMessageDescriptor *const types[] = {
    &compass__v1__sessions_request__descriptor,
    &compass__v1__sessions_response__descriptor,
    &compass__v1__publish_events_request__descriptor,
    &compass__v1__subscribe_events_response__descriptor,
    &compass__v1__get_agent_status_response__descriptor,
    &compass__v1__agent_session_frame__descriptor,
    &compass__v1__upload_session_blob_request__descriptor,
    &grpc__reflection__v1__server_reflection_response__descriptor,
    &agenthub__testing__v1__echo_request__descriptor,
};

/* Packs M into a malloc'd buffer; *LEN gets its size. */
static uint8_t *pack(const ProtobufCMessage *m, size_t *len)
{
    uint8_t *out;

    *len = protobuf_c_message_get_packed_size(m);
    out = malloc(*len + 1);
    if (out == NULL)
        abort();
    protobuf_c_message_pack(m, out);
    return out;
}

/* M's JSON must parse back to a message printing the same JSON and, for a
 * message that came from JSON (SAME_BINARY; one from binary may carry
 * unknown fields, which JSON leaves out), the same binary form. */
static void round_trip(const ProtobufCMessage *m, int same_binary)
{
    char why[GRPC_JSON_ERR_SIZE];
    size_t json_len, a_len, b_len;
    char *json = grpc_json_encode(m, &json_len, why, sizeof(why)), *again;
    ProtobufCMessage *back;
    uint8_t *a, *b;

    if (json == NULL) {
        /* Only a string that is not UTF-8 may refuse to print. */
        if (strstr(why, "UTF-8") == NULL)
            abort();
        return;
    }
    back = grpc_json_decode(m->descriptor, json, json_len, why, sizeof(why));
    if (back == NULL)
        abort();
    again = grpc_json_encode(back, &b_len, why, sizeof(why));
    if (again == NULL || b_len != json_len || memcmp(again, json, json_len) != 0)
        abort();
    free(again);
    if (same_binary) {
        a = pack(m, &a_len);
        b = pack(back, &b_len);
        if (a_len != b_len || memcmp(a, b, a_len) != 0)
            abort();
        free(a);
        free(b);
    }
    protobuf_c_message_free_unpacked(back, NULL);
    free(json);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const ProtobufCMessageDescriptor *type;
    char why[GRPC_JSON_ERR_SIZE];
    ProtobufCMessage *m;

    if (size == 0)
        return 0;
    type = types[(data[0] & 0x7f) % (sizeof(types) / sizeof(types[0]))];
    if (data[0] & 0x80) {
        m = protobuf_c_message_unpack(type, NULL, size - 1, data + 1);
    } else {
        m = grpc_json_decode(type, (const char *)data + 1, size - 1, why, sizeof(why));
        if (m == NULL && why[0] == '\0')
            abort();
    }
    if (m == NULL)
        return 0;
    round_trip(m, !(data[0] & 0x80));
    protobuf_c_message_free_unpacked(m, NULL);
    return 0;
}
