/* grpc_connect: the Connect protocol's rules in the call layer (the protocol
 * entries themselves are in grpc_protocol.c).
 *
 * Unary (application/proto, application/json): the request body is the
 * bare message; a success is HTTP 200 with the bare response message,
 * initial metadata as headers and trailing metadata as "trailer-" headers;
 * an error is HTTP 4xx/5xx (the Connect status for its code) with the
 * Connect error JSON {"code": "not_found", "message": ...} as the body.
 *
 * Streaming (application/connect+proto, application/connect+json): request
 * and response messages are enveloped like gRPC's (flag byte, 4-byte
 * length); the response ends with an end-of-stream envelope (flag 0x02)
 * holding {"error": {...}, "metadata": {"name": ["value"]}} as JSON, always
 * after HTTP 200.
 *
 * Both take Connect-Timeout-Ms as the deadline and Connect-Protocol-Version
 * (when sent, it must be 1).  Messages are never compressed (identity both
 * ways).  Not for use outside src/grpc. */
#ifndef AGENTHUB_GRPC_CONNECT_H
#define AGENTHUB_GRPC_CONNECT_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

struct grpc_call;

/* Envelope flag of the end-of-stream message. */
#define GRPC_CONNECT_END_STREAM 0x02

/* The Connect code name of a gRPC status ("not_found"; "canceled"). */
const char *grpc_connect_code_name(int status);

/* The HTTP status the Connect protocol gives an error with STATUS. */
int grpc_connect_http_status(int status);

/* Parses a Connect-Timeout-Ms value (1 to 10 digits).  Returns 0 with the
 * timeout in nanoseconds, or -1 when malformed. */
int grpc_connect_timeout_parse(const char *value, size_t len, uint64_t *nanoseconds);

/* The Connect request checks the call layer's own do not cover, once its
 * method is known: the protocol version, the content encoding, a unary
 * content type for a streaming method, bidi streams over HTTP/1.1.
 * Returns 0, or -1 after ending the call. */
int grpc_connect_check_request(struct grpc_call *call);

/* A unary request's body bytes: kept whole (the body is the one message),
 * up to the receive limit (past it the call ends RESOURCE_EXHAUSTED). */
void grpc_connect_body_data(struct grpc_call *call, const uint8_t *bytes, size_t len);

/* The unary request ended: its body becomes the call's one request
 * message.  Returns 0, or -1 after ending the call (memory). */
int grpc_connect_body_end(struct grpc_call *call);

/* A JSON request message (BYTES, LEN) as protobuf binary in *OUT (malloc'd)
 * and *OUT_LEN.  Returns 0, or -1 after ending the call INVALID_ARGUMENT
 * (the codec's reason) or RESOURCE_EXHAUSTED. */
int grpc_connect_json_request(struct grpc_call *call, const uint8_t *bytes, size_t len,
                              uint8_t **out, size_t *out_len);

/* MESSAGE as JSON text (malloc'd, length in *LEN).  Returns NULL after
 * ending the call: memory short, or a message the codec cannot print
 * (INTERNAL). */
char *grpc_connect_json_message(struct grpc_call *call, const ProtobufCMessage *message,
                                size_t *len);

/* As grpc_connect_json_message for an already encoded message: PREFIX then
 * BODY, protobuf binary of the method's response type. */
char *grpc_connect_json_encoded(struct grpc_call *call, const uint8_t *prefix, size_t prefix_len,
                                const uint8_t *body, size_t body_len, size_t *len);

/* The call finished: a unary call sends its whole response now (headers and
 * body); a stream queues its end-of-stream message.  Counts the status.
 * Returns 0, or -1 when memory is short (the stream must then be reset). */
int grpc_connect_finish(struct grpc_call *call);

/* Sends a unary answer held back until the request's end (respond_at_end):
 * the body ended, or it went on past the receive limit or the request
 * timeout (the connection then closes after the answer). */
void grpc_connect_respond_held(struct grpc_call *call);

#endif
