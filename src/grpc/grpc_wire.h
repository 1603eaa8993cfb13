/* grpc_wire: the byte-level rules of gRPC over HTTP/2 that both the server
 * and the clients need: status names, length-prefixed message framing,
 * grpc-message percent-encoding, grpc-timeout and -bin base64. */
#ifndef AGENTHUB_GRPC_WIRE_H
#define AGENTHUB_GRPC_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

/* "OK", "NOT_FOUND", ...; "UNKNOWN" for codes out of range. */
const char *grpc_status_name(int status);

/* Parses a status name ("NOT_FOUND") back to its code; -1 when unknown. */
int grpc_status_from_name(const char *name);

/* --- Length-prefixed messages ------------------------------------------- */

#define GRPC_FRAME_HEADER_LEN 5

/* Writes the 5-byte message header (compressed flag 0) for a LEN-byte body. */
void grpc_frame_header(uint8_t out[GRPC_FRAME_HEADER_LEN], uint32_t len);

struct byte_queue;

/* Appends a message header for a LEN-byte body to QUEUE and reserves the
 * body.  Returns where the caller writes the LEN body bytes, or NULL (the
 * queue unchanged) when LEN does not fit the 32-bit length or memory is
 * short. */
uint8_t *grpc_frame_reserve(struct byte_queue *queue, size_t len);

/* Appends one whole message, BODY with its compressed flag set as
 * COMPRESSED says.  Returns 0, or -1 (the queue unchanged) as
 * grpc_frame_reserve. */
int grpc_frame_append(struct byte_queue *queue, const uint8_t *body, size_t len, int compressed);

enum grpc_reader_result {
    GRPC_READER_NEED_MORE = 0, /* consumed everything given; no whole message yet */
    GRPC_READER_MESSAGE = 1,   /* a whole message is ready: see grpc_reader_message */
    GRPC_READER_TOO_LARGE = -1,
    GRPC_READER_COMPRESSED = -2, /* compressed flag set and allow_compressed is not */
    GRPC_READER_BAD_FLAG = -3,   /* flag byte other than 0 or 1 */
    GRPC_READER_NO_MEMORY = -4,
};

/* Reassembles length-prefixed messages from arbitrary chunks.  The declared
 * length is checked against max_len before any body byte is buffered. */
struct grpc_reader {
    uint8_t header[GRPC_FRAME_HEADER_LEN];
    size_t header_have;
    uint8_t *body;
    size_t body_len;
    size_t body_have;
    size_t max_len;
    int compressed;       /* the ready (or current) message's compressed flag */
    int allow_compressed; /* the call has a grpc-encoding: flag 1 is fine */
    int message_ready;
};

void grpc_reader_init(struct grpc_reader *reader, size_t max_len);
void grpc_reader_free(struct grpc_reader *reader);

/* Feeds up to LEN bytes; *consumed tells how many were used.  Returns
 * GRPC_READER_MESSAGE as soon as one message is complete (the rest of the
 * input is left for the next call, after grpc_reader_take), NEED_MORE when
 * all input was consumed, or a negative grpc_reader_result on error. */
enum grpc_reader_result grpc_reader_feed(struct grpc_reader *reader, const uint8_t *data,
                                         size_t len, size_t *consumed);

/* The ready message.  Valid until grpc_reader_take or grpc_reader_free. */
const uint8_t *grpc_reader_message(const struct grpc_reader *reader, size_t *len);

/* Releases the ready message and readies the reader for the next one. */
void grpc_reader_take(struct grpc_reader *reader);

/* 1 when no partial message is buffered. */
int grpc_reader_idle(const struct grpc_reader *reader);

/* --- Header values ------------------------------------------------------- */

/* Percent-encodes MSG for grpc-message: bytes outside 0x20..0x7E and '%'
 * become %XX.  Returns the encoded length written to OUT (NUL-terminated),
 * or the length that would be needed when out_size is too small (like
 * snprintf).  OUT_SIZE must be at least 1. */
size_t grpc_message_encode(const char *msg, size_t len, char *out, size_t out_size);

/* Decodes a grpc-message value in place semantics into OUT (at most len
 * bytes).  Malformed escapes are kept as literal bytes, as the spec asks.
 * Returns the decoded length. */
size_t grpc_message_decode(const char *in, size_t len, char *out);

/* Parses a grpc-timeout value ("100m", "5S", up to 8 digits and one of
 * H M S m u n).  Returns 0 and the timeout in nanoseconds (saturating), or
 * -1 when malformed. */
int grpc_timeout_parse(const char *value, size_t len, uint64_t *nanoseconds);

/* Base64 decoding for -bin metadata (encoding is common/base64.h):
 * accepts padded and unpadded input, and the URL alphabet's - and _.
 * Returns the decoded length or -1 when malformed; OUT must hold
 * (len / 4 + 1) * 3 bytes. */
long grpc_base64_decode(const char *in, size_t len, uint8_t *out);

#endif
