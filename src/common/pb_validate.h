/* pb_validate: the string check every request message passes before it is
 * decoded (installed with grpc_server_set_request_check).
 *
 * protobuf-c hands string fields to handlers as NUL-terminated copies, so
 * after decoding "sess-1\0junk" would read as "sess-1"; and nothing checks
 * that a string is UTF-8.  The check reads the wire bytes instead, by the
 * message's descriptor, nested messages included:
 *  - every string field is well-formed UTF-8 (RFC 3629) without a NUL byte;
 *  - an identifier field (named "id", "..._id", container_name, provider,
 *    blob_ref or live_sessions) holds no control character either.
 * Bytes that do not parse as the message are left to the decoder. */
#ifndef AGENTHUB_PB_VALIDATE_H
#define AGENTHUB_PB_VALIDATE_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

/* Checks the wire bytes BYTES[0..LEN) of a TYPE message.  Returns 0 when
 * every string field passes (or the bytes do not parse), else -1 with
 * "FIELD: reason" in WHY (WHY_SIZE bytes), FIELD the field's path such as
 * "frame.session.typed_event.record.type" or "live_sessions[2]". */
int pb_validate_strings(const ProtobufCMessageDescriptor *type, const uint8_t *bytes, size_t len,
                        char *why, size_t why_size);

#endif
