/* grpc_internal: what grpc_server.c (doors, the receive path) and
 * grpc_call.c (the handler-facing call API, the send path) share.  Not for
 * use outside src/grpc. */
#ifndef AGENTHUB_GRPC_INTERNAL_H
#define AGENTHUB_GRPC_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/byte_queue.h"
#include "common/list.h"
#include "grpc/grpc_compress.h"
#include "grpc/grpc.h"
#include "grpc/grpc_protocol.h"
#include "grpc/grpc_transport.h"

struct event;
struct h2_listener;
struct http1_server;

struct door_method {
    const struct grpc_method *method;
    size_t path_len;
    uint64_t started;
    uint64_t by_status[GRPC_STATUS_COUNT];
};

struct grpc_door {
    struct grpc_server *server;
    char name[16];
    int kind; /* grpc_door_set_kind: the owner's value, 0 by default */
    void *door_data;
    struct door_method *methods;
    size_t method_count;
    size_t method_cap;
    uint64_t unknown_method_calls;
    uint64_t rejected_calls;
    const struct grpc_authenticator *auth;
    uint64_t header_refusals[GRPC_STATUS_COUNT]; /* refused by the authenticator */
    uint64_t send_cap_cuts;    /* ended: send queue past GRPC_SEND_CAP_FACTOR x bound */
    uint64_t request_timeouts; /* ended: first message not in within the timeout */
    uint64_t recv_pauses;      /* request delivery paused for a full send queue */
    /* Messages by grpc-encoding (enum grpc_encoding; identity not counted). */
    uint64_t compressed_received[GRPC_ENCODING_UNSUPPORTED];
    uint64_t compressed_sent[GRPC_ENCODING_UNSUPPORTED];
    uint64_t decompress_refusals; /* a request that would not inflate within the limit */
    /* Calls by protocol and transport, counted once their headers passed. */
    uint64_t protocol_calls[GRPC_PROTOCOL_COUNT][GRPC_TRANSPORT_COUNT];
    struct h2_listener *listener;
    int serve_http1;            /* grpc_door_serve_http1 */
    struct http1_server *http1; /* HTTP/1.1 on the same listener */
    char **cors_origins;        /* grpc_door_add_cors_origin */
    size_t cors_origin_count;
    grpc_http_responder responder; /* grpc_door_set_http_responder */
    void *responder_arg;
    uint64_t cors_preflights[2]; /* answered: refused (0), allowed (1) */
    uint64_t plain_answers;      /* requests the responder answered */
    struct grpc_door *next;
};

struct grpc_server {
    struct event_base *base;
    struct h2_server *h2;
    struct grpc_limits limits;
    struct grpc_door *doors;
    grpc_request_check request_check; /* NULL: none */
    struct list_node calls;           /* struct grpc_call, the newest first */
    size_t call_count;
    int shutting_down;
    struct event *request_sweep; /* enforces limits.request_timeout_ms */
    uint64_t sweeps;             /* request sweeps so far */
};

/* Header name/value pairs kept as offsets into one arena. */
struct header_list {
    char *arena;
    size_t len;
    size_t cap;
    size_t count;
};

struct grpc_call {
    struct grpc_server *server;
    struct grpc_door *door;
    const struct grpc_transport *transport;
    void *stream; /* the transport's; NULL once the transport closed it */
    struct door_method *entry;
    struct list_node link; /* on the server's calls */

    struct header_list request_headers;
    /* What the request's content-type selected (grpc_protocol.h); native
     * gRPC until the header block is complete. */
    const struct grpc_protocol *protocol;
    char http_method[8]; /* ":method", cut to fit */
    unsigned is_post : 1;
    unsigned plain : 1; /* a plain HTTP answer: call->out is its raw body */
    unsigned te_trailers : 1;
    unsigned encoding_unsupported : 1;
    unsigned timeout_malformed : 1;
    unsigned has_timeout : 1;
    unsigned started : 1;     /* passed header validation: handler owns it */
    unsigned half_closed : 1; /* client sent END_STREAM */
    unsigned headers_sent : 1;
    unsigned finished : 1;
    unsigned trailers_sent : 1;
    unsigned cancelled : 1;
    unsigned deferred : 1;
    unsigned in_handler : 1;
    unsigned input_paused : 1;     /* send queue over its bound: no delivery */
    unsigned end_pending : 1;      /* END_STREAM came while input was queued */
    unsigned request_timed : 1;    /* its first message's timeout was started */
    unsigned request_waiting : 1;  /* and the first message is not in yet */
    unsigned unary_compressed : 1; /* the held unary request has its compressed flag */
    uint8_t request_encoding;      /* enum grpc_encoding of grpc-encoding */
    uint8_t response_encoding;     /* what large responses are compressed with */
    unsigned accept_encodings;     /* grpc-accept-encoding as GRPC_ENCODING_BITs */
    uint64_t timeout_ns;

    void *caller;                 /* the door authenticator's, for needs_caller methods */
    struct byte_queue in;         /* request bytes held while delivery is paused */
    struct event *resume;         /* delivers held input once the queue drains */
    uint64_t request_since_sweep; /* with request_waiting: the request sweep it began in */
    struct grpc_reader reader;
    struct grpc_base64_decoder text_in;  /* grpc-web-text request body */
    struct grpc_base64_encoder text_out; /* grpc-web-text response body */
    struct byte_queue text_scratch;      /* decoded request bytes, grpc-web-text */
    struct byte_queue text_pending;      /* encoded response text not yet taken */
    unsigned text_eof : 1;               /* text_pending holds the end of the body */
    struct byte_queue bare_in;           /* Connect unary: the request body so far */
    /* A Connect unary answer held until the request body ends (HTTP/1.1:
     * answering first closes the connection under a client still
     * sending), and the body bytes dropped meanwhile. */
    unsigned respond_at_end : 1;
    size_t dropped_at_end;
    uint8_t *unary_request;
    size_t unary_request_len;
    unsigned message_count;

    int status;
    char *status_message;
    struct header_list initial_metadata;
    struct header_list trailing_metadata;
    struct byte_queue out;
    size_t out_partial; /* bytes of the message at the queue's head still to go */
    struct event *deadline;
    void *user;
};

/* Appends NAME: VALUE.  Returns 0, or -1 when memory is short. */
int grpc_header_list_add(struct header_list *list, const char *name, size_t name_len,
                         const char *value, size_t value_len);
/* Iterates: *offset starts at 0.  Returns 1 with NAME/VALUE set, or 0 at the end. */
int grpc_header_list_next(const struct header_list *list, size_t *offset, const char **name,
                          const char **value);
void grpc_header_list_free(struct header_list *list);

/* Counts a finished call under STATUS for its method. */
void grpc_call_count_status(struct grpc_call *call, int status);
/* Sends the trailers of a finished call (from within the data provider). */
void grpc_call_send_trailers(struct grpc_call *call);
/* The layer ends the call itself: queued whole messages are dropped, a
 * message already partly sent is completed so framing stays intact. */
void grpc_call_fail(struct grpc_call *call, int status, const char *message);
/* The call finished: request bytes still held are thrown away. */
void grpc_call_drop_input(struct grpc_call *call);

/* --- Browsers (grpc_http.c) --- */

/* Answers CALL when it is a CORS preflight or a request the door's plain
 * HTTP responder takes (PROTOCOL: what its content-type selected, or NULL).
 * Returns 1 when answered (the call is finished), else 0. */
int grpc_http_dispatch(struct grpc_call *call, const struct grpc_protocol *protocol);
/* The CORS headers of a response to CALL (none when its origin is not
 * allowed), into OUT (up to MAX).  Returns the count. */
size_t grpc_http_cors_headers(const struct grpc_call *call, struct h2_header *out, size_t max);
void grpc_http_door_free(struct grpc_door *door);

/* DOOR's method at PATH (LEN bytes), or NULL. */
struct door_method *grpc_door_find(const struct grpc_door *door, const char *path, size_t len);

/* A persistent timer on SERVER's base that cancels requests waiting longer
 * than limits.request_timeout_ms.  Returns NULL when short of memory. */
struct event *grpc_request_sweep_new(struct grpc_server *server);

/* The h2 handler of every door (grpc_recv.c). */
struct h2_handler;
extern const struct h2_handler grpc_h2_handler;

/* The http1 handler of every door's HTTP/1.1 connections
 * (grpc_transport_http1.c): the same calls over grpc_transport_http1. */
struct http1_handler;
extern const struct http1_handler grpc_http1_handler;

#endif
