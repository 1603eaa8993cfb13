/* grpc_json_internal: what the JSON writer (grpc_json.c) and parser
 * (grpc_json_parse.c) share.  Not for use outside src/grpc. */
#ifndef AGENTHUB_GRPC_JSON_INTERNAL_H
#define AGENTHUB_GRPC_JSON_INTERNAL_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>

/* Room for a field's json name. */
#define GRPC_JSON_NAME_MAX 128

/* Bytes one element of a field of TYPE takes in a protobuf-c struct (and in
 * a repeated field's array). */
size_t grpc_json_elem_size(ProtobufCType type);

#endif
