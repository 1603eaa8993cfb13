/* grpc_protocol: the protocol dimension of a server call.
 *
 * A call has two independent dimensions.  Its transport (grpc_transport.h:
 * HTTP/2 streams, HTTP/1.1 requests) carries header blocks and body bytes.
 * Its protocol says what those mean: which content type selects it, which
 * request headers it requires, how request body bytes become length-prefixed
 * messages, and how the response's headers, messages and final status are
 * written.  The call layer picks the protocol from the request's
 * content-type once the header block is complete (grpc_protocol_find) and
 * asks it at those points; handlers never know which protocol or transport
 * a call uses.
 *
 * Protocols here:
 *   grpc           application/grpc[+proto]: trailers as HTTP trailers
 *                  (Trailers-Only for an answer without messages); needs a
 *                  transport that carries trailers (HTTP/2).
 *   grpc-web       application/grpc-web[+proto]: the status and trailing
 *                  metadata go in the body, as a last length-prefixed frame
 *                  with flag 0x80, and the body ends the response.
 *   grpc-web-text  application/grpc-web-text[+proto]: grpc-web with both
 *                  bodies base64-encoded; the response is one base64 text
 *                  (partial groups carried between reads, padded once at
 *                  its end), so a client that concatenates the chunks it
 *                  receives decodes them.
 *
 * A new protocol adds an entry to the table in grpc_protocol.c and, where
 * it differs, a hook here; the call layer's checks that are not the
 * protocol's (method table, deadline, authentication, send bounds, metrics)
 * stay shared. */
#ifndef AGENTHUB_GRPC_PROTOCOL_H
#define AGENTHUB_GRPC_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

enum grpc_protocol_id {
    GRPC_PROTOCOL_GRPC,
    GRPC_PROTOCOL_GRPC_WEB,
    GRPC_PROTOCOL_GRPC_WEB_TEXT,
    GRPC_PROTOCOL_COUNT,
};

struct grpc_protocol {
    enum grpc_protocol_id id;
    const char *name; /* the metrics label */
    /* The request's content type selects this protocol (case-insensitive,
     * parameters after ';' ignored).  Returns 1 or 0. */
    int (*matches)(const char *content_type, size_t len);
    /* The response content type, or NULL to echo the request's own (without
     * its parameters). */
    const char *response_content_type;
    unsigned needs_te_trailers : 1;   /* "te: trailers" is required */
    unsigned needs_http_trailers : 1; /* only on transports with trailers */
    unsigned trailers_in_body : 1;    /* status as the body's last frame */
    unsigned unary_requests_only : 1; /* client and bidi streams are refused */
    unsigned base64 : 1;              /* both bodies are base64 text */
};

/* The protocol whose content type CONTENT_TYPE is (NULL: none). */
const struct grpc_protocol *grpc_protocol_find(const char *content_type);

extern const struct grpc_protocol grpc_protocol_grpc;

/* The metrics label of protocol ID. */
const char *grpc_protocol_name(enum grpc_protocol_id id);

/* Status and trailing metadata as a grpc-web trailer frame: flag 0x80, a
 * 4-byte length, then "name:value\r\n" lines (lowercase names).  NAMES and
 * VALUES are COUNT parallel arrays.  Appends to *OUT.  Returns 0, or -1
 * when memory is short. */
struct byte_queue;
int grpc_web_trailer_frame(struct byte_queue *out, const char *const *names,
                           const char *const *values, size_t count);

/* Streaming base64 decoding of a grpc-web-text request body: accepts the
 * text in any split, with or without padding at the end of any group (a
 * client may pad each chunk it sends), and no other characters. */
struct grpc_base64_decoder {
    uint8_t carry[4];
    size_t carry_len;
};

/* Decodes LEN characters, appending the bytes to OUT.  Returns 0, or -1
 * when the text is not base64 (or memory is short: -2). */
int grpc_base64_decoder_feed(struct grpc_base64_decoder *dec, const uint8_t *in, size_t len,
                             struct byte_queue *out);
/* 1 when the text ended on a group boundary. */
int grpc_base64_decoder_done(const struct grpc_base64_decoder *dec);

/* Streaming base64 encoding of a grpc-web-text response. */
struct grpc_base64_encoder {
    uint8_t carry[2];
    size_t carry_len;
};

/* Raw bytes that may be encoded into OUT_ROOM characters, keeping room for
 * the final padded group. */
size_t grpc_base64_encoder_room(const struct grpc_base64_encoder *enc, size_t out_room);
/* Encodes LEN raw bytes (at most grpc_base64_encoder_room) into OUT, whole
 * groups only; with FINAL the carried remainder too, padded.  Returns the
 * characters written. */
size_t grpc_base64_encoder_feed(struct grpc_base64_encoder *enc, const uint8_t *in, size_t len,
                                int final, uint8_t *out);

#endif
