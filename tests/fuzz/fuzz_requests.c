/* libFuzzer target for protobuf-c decoding of every request type a door
 * accepts from the network: unpack never crashes, and what unpacks packs
 * again to exactly its computed size.  (Reparsing is not asserted:
 * protobuf-c keeps unknown fields, including a field number 0 spelled as an
 * overlong varint, which it then refuses on the way back in.) */
#include <stdint.h>
#include <stdlib.h>

#include "compass/v1/frames.pb-c.h"
#include "compass/v1/services.pb-c.h"
#include "grpc/health/v1/health.pb-c.h"
#include "grpc/reflection/v1/reflection.pb-c.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const ProtobufCMessageDescriptor *const request_types[] = {
    &compass__v1__publish_events_request__descriptor,
    &compass__v1__subscribe_agent_session_request__descriptor,
    &compass__v1__subscribe_events_request__descriptor,
    &compass__v1__sessions_request__descriptor,
    &compass__v1__spawn_resource_request__descriptor,
    &compass__v1__append_resource_output_request__descriptor,
    &compass__v1__upload_session_blob_request__descriptor,
    &compass__v1__report_evidence_request__descriptor,
    &grpc__health__v1__health_check_request__descriptor,
    &grpc__reflection__v1__server_reflection_request__descriptor,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t count = sizeof(request_types) / sizeof(request_types[0]);
    const ProtobufCMessageDescriptor *type;
    ProtobufCMessage *message, *again;
    uint8_t *packed;
    size_t len;

    if (size == 0)
        return 0;
    type = request_types[data[0] % count];
    message = protobuf_c_message_unpack(type, NULL, size - 1, data + 1);
    if (!message)
        return 0;
    len = protobuf_c_message_get_packed_size(message);
    packed = malloc(len ? len : 1);
    if (!packed)
        abort();
    if (protobuf_c_message_pack(message, packed) != len)
        abort();
    again = protobuf_c_message_unpack(type, NULL, len, packed);
    if (again)
        protobuf_c_message_free_unpacked(again, NULL);
    protobuf_c_message_free_unpacked(message, NULL);
    free(packed);
    return 0;
}
