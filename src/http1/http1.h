/* http1: HTTP/1.1 server connections on libevent bufferevents, parsed by
 * the Node.js project's http-parser (Debian's libhttp-parser).
 *
 * A layer beside h2 that uses only src/common, libevent and http-parser: it
 * parses nothing by hand (request lines, header fields, content-length and
 * chunked bodies are http-parser's) and accepts no sockets: the listener
 * that did (h2's, once it told an HTTP/1.1 request line from the HTTP/2
 * preface, or TLS's ALPN chose http/1.1) hands each connection over with
 * http1_server_adopt.
 *
 * The layer above installs a struct http1_handler, shaped like h2's: one
 * request at a time per connection (a pipelined next request waits until
 * the response is out), its header fields as soon as the header block is
 * complete (before any body byte is taken), its body as it arrives, its
 * end; then response body bytes pulled through a read callback and written
 * as they come, chunked unless the response names a content-length.
 *
 * Bounds: the request line and header fields (max_header_bytes, 431), the
 * body (max_body_bytes, 413), a request's header block must be complete
 * within request_timeout_ms of the connection's start or the previous
 * response's end (this is also the keep-alive idle time), a response write
 * that makes no progress for write_timeout_ms closes the connection, and
 * a client that closes its connection cancels its request. */
#ifndef AGENTHUB_HTTP1_H
#define AGENTHUB_HTTP1_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct event_base;
struct http1_server;
struct http1_request;

struct http1_header {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
};

/* request_read's *flags at the end of the response body. */
#define HTTP1_READ_EOF 0x2
/* request_read's returns: nothing ready yet (http1_request_resume wakes it),
 * or the response cannot go on (the connection is closed). */
#define HTTP1_READ_DEFERRED ((ssize_t)-1)
#define HTTP1_READ_ERROR    ((ssize_t)-2)

struct http1_handler {
    /* A new request.  Returns the handler's data for it, or NULL to refuse
     * it (503). */
    void *(*request_open)(void *server_data, struct http1_request *request);
    /* One field: ":method" and ":path" first, then the header fields with
     * lowercase names.  Returns 0, or -1 to refuse the request (400). */
    /* (The handler may answer from any of these callbacks; the rest of a
     * request body it answered early is read and dropped, and the
     * connection closes after the response.) */
    int (*request_header)(void *data, const uint8_t *name, size_t name_len, const uint8_t *value,
                          size_t value_len);
    void (*request_headers_done)(void *data);
    void (*request_data)(void *data, const uint8_t *bytes, size_t len);
    void (*request_end)(void *data);
    /* Response body bytes into BUF (up to LEN): the count (HTTP1_READ_EOF in
     * *flags with the last), HTTP1_READ_DEFERRED or HTTP1_READ_ERROR. */
    ssize_t (*request_read)(void *data, uint8_t *buf, size_t len, uint32_t *flags);
    /* Always last: the response went out whole (ABORTED 0), or the
     * connection is gone first (1).  The request must not be used after. */
    void (*request_close)(void *data, int aborted);
};

struct http1_limits {
    size_t max_header_bytes; /* request line and header fields */
    size_t max_body_bytes;   /* request body, chunked or not */
    /* A request's header block (from the connection's start, or the end of
     * the previous response) must be complete within this (0: 10 s). */
    uint32_t request_timeout_ms;
    /* Longest a response write may make no progress (0: 60 s). */
    uint32_t write_timeout_ms;
    /* Request body bytes held across the server (read, and their request
     * not yet closed).  Over it, new requests are refused 503 until some
     * close (0: no bound). */
    size_t server_recv_budget;
};

struct http1_stats {
    uint64_t connections_open;
    uint64_t connections_total;
    uint64_t requests_total;
    uint64_t request_timeouts; /* closed: a header block not complete in time */
    uint64_t disconnects;      /* closed by the client with a response open */
    uint64_t bad_requests;     /* refused: malformed, or over a size bound */
    uint64_t budget_refusals;  /* refused 503: over server_recv_budget */
    uint64_t recv_held;        /* gauge: body bytes held (server_recv_budget) */
};

/* Returns NULL when memory is short. */
struct http1_server *http1_server_new(struct event_base *base, const struct http1_limits *limits,
                                      const struct http1_handler *handler, void *server_data);
/* Closes every connection (open requests get request_close aborted). */
void http1_server_free(struct http1_server *server);

/* Takes over an accepted connection: the plaintext socket FD, or BEV (a
 * bufferevent, TLS already established; FD is then ignored) with any bytes
 * already in its input.  ON_CLOSE(ARG) runs once when the connection is
 * gone (so the listener's count goes down).  Returns 0, or -1 with the
 * socket closed and ON_CLOSE not called. */
struct bufferevent;
int http1_server_adopt(struct http1_server *server, int fd, struct bufferevent *bev,
                       void (*on_close)(void *arg), void *arg);

const struct http1_stats *http1_server_stats(const struct http1_server *server);

/* Sends the response head: ":status" and the header fields in HEADERS.
 * With HAS_BODY the body is pulled through request_read; without, the
 * response is empty.  Returns 0, or -1 when the connection is gone. */
int http1_request_respond(struct http1_request *request, const struct http1_header *headers,
                          size_t count, int has_body);
/* Wakes a request whose request_read said HTTP1_READ_DEFERRED. */
void http1_request_resume(struct http1_request *request);
/* The connection closes once this response is out. */
void http1_request_close_after(struct http1_request *request);
/* Bytes written to the connection and not yet taken by the socket. */
size_t http1_request_backlog(const struct http1_request *request);

#endif
