/* grpc_json: the proto3 JSON mapping for any protobuf-c message, driven by
 * its descriptors alone (no per-message code), for the Connect protocol's
 * JSON codec.
 *
 * Output: field names in lowerCamelCase (protoc's json_name rule), fields at
 * their default value left out (oneof members and fields with explicit
 * presence are written when set), 64-bit integers as decimal strings, bytes
 * as standard base64 with padding, enums by name (by number when the value
 * has no name), floats and doubles as numbers or "NaN", "Infinity",
 * "-Infinity".
 *
 * Input accepts what protobuf's own parsers accept: the json name or the
 * original field name, integers as numbers or decimal strings (numbers above
 * the int64 range only as strings: the JSON parser holds integers as int64),
 * integral floating-point numbers for integer fields, bytes in the standard
 * or URL-safe alphabet with or without padding, enums by name or number,
 * null as the field's default.  Refused, with the field's path in the
 * message: unknown fields, a field given twice (under either name), two
 * members of one oneof, a value of the wrong JSON type or out of range,
 * invalid base64, an unknown enum name, null inside a list, strings with
 * NUL, and messages nested deeper than GRPC_JSON_MAX_DEPTH.
 *
 * protobuf-c keeps no json_name option, so a field renamed with one would be
 * misnamed; proto/ sets none. */
#ifndef AGENTHUB_GRPC_JSON_H
#define AGENTHUB_GRPC_JSON_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>

/* Message nesting a document may have, both ways. */
#define GRPC_JSON_MAX_DEPTH 32

/* Room for a refusal's message, including its field path. */
#define GRPC_JSON_ERR_SIZE 256

/* Writes MESSAGE as one line of JSON (no newline).  Returns a malloc'd,
 * NUL-terminated string and its length in *LEN, or NULL with a reason in
 * WHY (WHY_SIZE bytes): memory short, a string field that is not UTF-8, or
 * nesting past GRPC_JSON_MAX_DEPTH. */
char *grpc_json_encode(const ProtobufCMessage *message, size_t *len, char *why, size_t why_size);

/* Parses JSON (LEN bytes, not NUL-terminated) as a message of TYPE.  Returns
 * the message, freed with protobuf_c_message_free_unpacked(m, NULL), or NULL
 * with the reason in WHY (WHY_SIZE bytes; GRPC_JSON_ERR_SIZE is enough). */
ProtobufCMessage *grpc_json_decode(const ProtobufCMessageDescriptor *type, const char *json,
                                   size_t len, char *why, size_t why_size);

/* The json name of FIELD (protoc's rule: each '_' dropped and the letter
 * after it upper-cased) into OUT.  Returns OUT, or NULL when it does not
 * fit in OUT_SIZE bytes. */
char *grpc_json_field_name(const ProtobufCFieldDescriptor *field, char *out, size_t out_size);

#endif
