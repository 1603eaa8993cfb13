/* http1: see http1.h.  One struct http1_conn per connection: its
 * bufferevent, its http-parser, the header block being collected, and the
 * request in progress (struct http1_request) whose response is pulled from
 * the handler by a deferred pump. */
#include "http1/http1.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <http_parser.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/list.h"

/* Stop pulling response bytes while this much is unwritten (as h2 does). */
#define HTTP1_OUTPUT_HIGH_WATER (256 * 1024)
#define HTTP1_OUTPUT_LOW_WATER  (64 * 1024)
/* Bytes asked of request_read at a time. */
#define HTTP1_READ_CHUNK (16 * 1024)
/* Input read ahead while a request is being answered (a pipelined next
 * request, or what a client sends after its body): beyond it the socket is
 * left unread until the response is out. */
#define HTTP1_INPUT_HIGH_WATER (64 * 1024)

#define HTTP1_DEFAULT_REQUEST_TIMEOUT_MS 10000
#define HTTP1_DEFAULT_WRITE_TIMEOUT_MS   60000

struct http1_conn;

struct http1_request {
    struct http1_conn *conn;
    void *data; /* the handler's */
    struct event *pump;
    size_t held; /* body bytes counted in the server's recv_held */
    unsigned responded : 1;
    unsigned chunked : 1;       /* the body goes out in chunks */
    unsigned no_body : 1;       /* HEAD: the head only */
    unsigned deferred : 1;      /* request_read said DEFERRED */
    unsigned message_done : 1;  /* the whole request was read */
    unsigned response_done : 1; /* the whole response was queued */
};

/* The header block being read: "name\0value\0" pairs after the target. */
struct header_block {
    char *arena;
    size_t len;
    size_t cap;
    size_t target_len; /* the request target, first in the arena */
    size_t pairs;
    unsigned target_done : 1; /* the target's NUL is written */
    unsigned in_name : 1;     /* a field name is being collected */
    unsigned in_value : 1;    /* a field value is being collected */
};

struct http1_conn {
    struct http1_server *server;
    struct bufferevent *bev;
    http_parser parser;
    struct header_block headers;
    size_t header_bytes;
    uint64_t body_bytes;
    struct http1_request *request;
    struct event *timer;   /* the header block's timeout */
    struct event *resumer; /* parses held input after a response */
    unsigned in_parse : 1;
    unsigned close_after : 1; /* close once the output is written */
    unsigned closing : 1;     /* output being flushed, then close */
    unsigned free_pending : 1;
    int refused_status; /* an HTTP error to answer with, or 0 */
    void (*on_close)(void *arg);
    void *close_arg;
    struct list_node link; /* on the server's connections */
};

struct http1_server {
    struct event_base *base;
    struct http1_limits limits;
    struct http1_handler handler;
    void *server_data;
    struct list_node conns; /* struct http1_conn, the newest first */
    struct http1_stats stats;
    struct timeval request_timeout;
    struct timeval write_timeout;
    http_parser_settings settings;
};

static void conn_free(struct http1_conn *conn, int aborted);
static void conn_process(struct http1_conn *conn);
static void request_pump(struct http1_request *r);

/* --- Header blocks ------------------------------------------------------- */

static int block_append(struct header_block *b, const char *at, size_t len)
{
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + len + 1)
            cap *= 2;
        char *arena = realloc(b->arena, cap);
        if (!arena)
            return -1;
        b->arena = arena;
        b->cap = cap;
    }
    memcpy(b->arena + b->len, at, len);
    b->len += len;
    b->arena[b->len] = '\0';
    return 0;
}

/* Ends the current piece with its NUL. */
static int block_terminate(struct header_block *b)
{
    if (block_append(b, "", 0) != 0)
        return -1;
    b->len++;
    return 0;
}

/* --- http-parser callbacks ------------------------------------------------ */

/* Counts header bytes against the limit.  Returns 0, or -1 (refused 431). */
static int count_header(struct http1_conn *conn, size_t len)
{
    conn->header_bytes += len;
    if (conn->header_bytes > conn->server->limits.max_header_bytes) {
        conn->refused_status = 431;
        return -1;
    }
    return 0;
}

static int on_message_begin(http_parser *p)
{
    struct http1_conn *conn = p->data;

    if (conn->closing)
        return -1; /* no request after one that closes the connection */
    conn->headers.len = conn->headers.target_len = conn->headers.pairs = 0;
    conn->headers.target_done = conn->headers.in_name = conn->headers.in_value = 0;
    conn->header_bytes = 0;
    conn->body_bytes = 0;
    return 0;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
    struct http1_conn *conn = p->data;

    if (count_header(conn, len) != 0 || block_append(&conn->headers, at, len) != 0)
        return -1;
    conn->headers.target_len += len;
    return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t len)
{
    struct http1_conn *conn = p->data;
    struct header_block *b = &conn->headers;

    if (count_header(conn, len + 4) != 0)
        return -1;
    /* A new field ends the target (the first) or the last value. */
    if (!b->target_done) {
        if (block_terminate(b) != 0)
            return -1;
        b->target_done = 1;
    }
    if (b->in_value) {
        if (block_terminate(b) != 0)
            return -1;
        b->in_value = 0;
    }
    if (!b->in_name) {
        b->pairs++;
        b->in_name = 1;
    }
    for (size_t i = 0; i < len; i++) {
        char c = at[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c + 32);
        if (block_append(b, &c, 1) != 0)
            return -1;
    }
    return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
    struct http1_conn *conn = p->data;
    struct header_block *b = &conn->headers;

    if (count_header(conn, len) != 0)
        return -1;
    /* http-parser calls this for every field, empty values included. */
    if (b->in_name) {
        if (block_terminate(b) != 0) /* the name ends */
            return -1;
        b->in_name = 0;
        b->in_value = 1;
    }
    return block_append(b, at, len);
}

static void on_pump(evutil_socket_t fd, short what, void *arg);

/* Hands the collected header block to the handler. */
static int on_headers_complete(http_parser *p)
{
    struct http1_conn *conn = p->data;
    struct http1_server *server = conn->server;
    struct header_block *b = &conn->headers;
    const char *method = http_method_str((enum http_method)p->method);
    struct http1_request *r;
    const char *at;

    event_del(conn->timer);
    if (!b->target_done && block_terminate(b) != 0)
        return -1;
    if (b->in_name) {
        /* A last name without a value gets an empty one. */
        if (block_terminate(b) != 0 || block_terminate(b) != 0)
            return -1;
    } else if (b->in_value && block_terminate(b) != 0) {
        return -1;
    }
    if (p->http_major != 1) {
        conn->refused_status = 505; /* HTTP/2 comes by its preface, not here */
        return -1;
    }
    if (p->content_length != ULLONG_MAX && p->content_length > server->limits.max_body_bytes) {
        conn->refused_status = 413;
        return -1;
    }
    if (server->limits.server_recv_budget &&
        server->stats.recv_held >= server->limits.server_recv_budget) {
        /* As h2 refuses new streams over its budget: the client may retry. */
        server->stats.budget_refusals++;
        conn->refused_status = 503;
        return -1;
    }
    server->stats.requests_total++;
    r = calloc(1, sizeof(*r));
    if (!r)
        return -1;
    r->conn = conn;
    r->no_body = p->method == HTTP_HEAD;
    r->pump = event_new(server->base, -1, 0, on_pump, r);
    if (!r->pump) {
        free(r);
        return -1;
    }
    r->data = server->handler.request_open(server->server_data, r);
    if (!r->data) {
        event_free(r->pump);
        free(r);
        conn->refused_status = 503;
        return -1;
    }
    conn->request = r;
    if (server->handler.request_header(r->data, (const uint8_t *)":method", 7,
                                       (const uint8_t *)method, strlen(method)) != 0 ||
        server->handler.request_header(r->data, (const uint8_t *)":path", 5,
                                       (const uint8_t *)b->arena, b->target_len) != 0)
        goto refuse;
    at = b->arena + b->target_len + 1;
    for (size_t i = 0; i < b->pairs; i++) {
        size_t name_len = strlen(at);
        const char *value = at + name_len + 1;
        size_t value_len = strlen(value);
        if (server->handler.request_header(r->data, (const uint8_t *)at, name_len,
                                           (const uint8_t *)value, value_len) != 0)
            goto refuse;
        at = value + value_len + 1;
    }
    server->handler.request_headers_done(r->data);
    return 0;
refuse:
    /* The handler keeps R until request_close; answer it plainly. */
    conn->refused_status = 400;
    return -1;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
    struct http1_conn *conn = p->data;
    struct http1_request *r = conn->request;

    conn->body_bytes += len;
    if (conn->body_bytes > conn->server->limits.max_body_bytes) {
        conn->refused_status = 413;
        return -1;
    }
    /* An answered request's body is read and dropped. */
    if (r && !r->response_done) {
        r->held += len;
        conn->server->stats.recv_held += len;
        conn->server->handler.request_data(r->data, (const uint8_t *)at, len);
    }
    return 0;
}

static int on_message_complete(http_parser *p)
{
    struct http1_conn *conn = p->data;
    struct http1_request *r = conn->request;

    if (!r)
        return 0;
    r->message_done = 1;
    /* One request at a time: parsing stops here until the response is out. */
    http_parser_pause(p, 1);
    if (!r->response_done)
        conn->server->handler.request_end(r->data);
    return 0;
}

/* --- Responses ----------------------------------------------------------- */

static void request_free(struct http1_request *r)
{
    if (r->conn) {
        r->conn->server->stats.recv_held -= r->held;
        if (r->conn->request == r)
            r->conn->request = NULL;
    }
    event_free(r->pump);
    free(r);
}

/* The response is queued whole.  The handler is told from the loop (it may
 * be answering from inside its own callback), and the connection goes on to
 * the next request or closes. */
static void request_finish(struct http1_request *r)
{
    struct http1_conn *conn = r->conn;

    r->response_done = 1;
    /* A request answered before its body was read whole (a refusal from
     * its headers) keeps the connection: the rest of the body is read and
     * dropped (bounded by max_body_bytes and the header timeout, which
     * runs again from here), so a client still sending sees its answer
     * rather than a reset. */
    if (!http_should_keep_alive(&conn->parser))
        conn->close_after = 1;
    if (conn->close_after) {
        conn->closing = 1;
        bufferevent_disable(conn->bev, EV_READ);
    }
    event_active(r->pump, EV_WRITE, 0);
}

static void request_complete(struct http1_request *r)
{
    struct http1_conn *conn = r->conn;

    conn->server->handler.request_close(r->data, 0);
    request_free(r);
    if (conn->closing) {
        if (evbuffer_get_length(bufferevent_get_output(conn->bev)) == 0)
            conn_free(conn, 0);
        return;
    }
    event_add(conn->timer, &conn->server->request_timeout);
    /* The next request may already be read. */
    conn_process(conn);
}

/* A chunk head of fixed width ("0000abcd\r\n": leading zeros are allowed),
 * so it can be written after the data it counts. */
#define CHUNK_HEAD_LEN 10

static void chunk_head(void *at, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    char *p = at;

    for (int i = 7; i >= 0; i--) {
        p[i] = hex[len & 0xf];
        len >>= 4;
    }
    p[8] = '\r';
    p[9] = '\n';
}

static void on_pump(evutil_socket_t fd, short what, void *arg)
{
    struct http1_request *r = arg;

    if (r->response_done)
        request_complete(r);
    else
        request_pump(r);
}

/* Moves response bytes from the handler to the connection until its output
 * holds the high water mark, the handler has nothing ready, or the body
 * ended.  R may be freed when this returns. */
static void request_pump(struct http1_request *r)
{
    struct http1_conn *conn = r->conn;
    struct evbuffer *out = bufferevent_get_output(conn->bev);

    while (!r->response_done && evbuffer_get_length(out) < HTTP1_OUTPUT_HIGH_WATER) {
        struct evbuffer_iovec vec;
        uint32_t flags = 0;
        size_t head = r->chunked ? CHUNK_HEAD_LEN : 0;
        ssize_t n;

        /* Read straight into the output, after room for the chunk head. */
        if (evbuffer_reserve_space(out, (ev_ssize_t)(head + HTTP1_READ_CHUNK + 2), &vec, 1) < 1)
            goto fail;
        n = conn->server->handler.request_read(r->data, (uint8_t *)vec.iov_base + head,
                                               HTTP1_READ_CHUNK, &flags);
        if (n == HTTP1_READ_DEFERRED) {
            r->deferred = 1;
            return; /* nothing committed */
        }
        if (n < 0)
            goto fail;
        /* Each pull goes out as its own chunk, flushed by the loop: a
         * stream's messages are not held back waiting for more. */
        vec.iov_len = 0;
        if (n > 0 && !r->no_body) {
            if (r->chunked) {
                chunk_head(vec.iov_base, (size_t)n);
                memcpy((uint8_t *)vec.iov_base + head + (size_t)n, "\r\n", 2);
                vec.iov_len = head + (size_t)n + 2;
            } else {
                memmove(vec.iov_base, (uint8_t *)vec.iov_base + head, (size_t)n);
                vec.iov_len = (size_t)n;
            }
        }
        if (evbuffer_commit_space(out, &vec, 1) != 0)
            goto fail;
        if (flags & HTTP1_READ_EOF) {
            if (r->chunked && !r->no_body)
                evbuffer_add(out, "0\r\n\r\n", 5);
            request_finish(r);
            return;
        }
    }
    return;
fail:
    /* The body cannot be finished: a client must not take it for whole, so
     * the connection goes without its last chunk. */
    conn_free(conn, 1);
}

void http1_request_resume(struct http1_request *r)
{
    r->deferred = 0;
    if (r->responded && !r->response_done)
        event_active(r->pump, EV_WRITE, 0);
}

void http1_request_close_after(struct http1_request *r)
{
    r->conn->close_after = 1;
}

size_t http1_request_backlog(const struct http1_request *r)
{
    return evbuffer_get_length(bufferevent_get_output(r->conn->bev));
}

static int header_is(const struct http1_header *h, const char *name)
{
    size_t n = strlen(name);
    return h->name_len == n && strncasecmp(h->name, name, n) == 0;
}

int http1_request_respond(struct http1_request *r, const struct http1_header *headers, size_t count,
                          int has_body)
{
    struct http1_conn *conn = r->conn;
    struct evbuffer *out = bufferevent_get_output(conn->bev);
    int status = 200, has_length = 0;

    if (r->responded || conn->closing)
        return -1;
    for (size_t i = 0; i < count; i++)
        if (header_is(&headers[i], ":status")) {
            status = 0;
            for (size_t j = 0; j < headers[i].value_len && j < 3; j++)
                status = status * 10 + (headers[i].value[j] - '0');
        } else if (header_is(&headers[i], "content-length")) {
            has_length = 1;
        }
    if (status < 100 || status > 999)
        status = 500;
    r->responded = 1;
    evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\n", status,
                        http_status_str((enum http_status)status));
    for (size_t i = 0; i < count; i++) {
        const struct http1_header *h = &headers[i];
        if (h->name_len == 0 || h->name[0] == ':' || header_is(h, "connection") ||
            header_is(h, "transfer-encoding"))
            continue;
        evbuffer_add(out, h->name, h->name_len);
        evbuffer_add(out, ": ", 2);
        evbuffer_add(out, h->value, h->value_len);
        evbuffer_add(out, "\r\n", 2);
    }
    if (!has_body) {
        if (!has_length && status >= 200 && status != 204 && status != 304)
            evbuffer_add(out, "content-length: 0\r\n", 19);
    } else if (!has_length) {
        if (conn->parser.http_major == 1 && conn->parser.http_minor >= 1)
            r->chunked = 1;
        else
            conn->close_after = 1; /* HTTP/1.0: the body ends with the connection */
        if (r->chunked)
            evbuffer_add(out, "transfer-encoding: chunked\r\n", 28);
    }
    if (conn->close_after || !http_should_keep_alive(&conn->parser))
        evbuffer_add(out, "connection: close\r\n", 19);
    evbuffer_add(out, "\r\n", 2);
    if (!has_body) {
        request_finish(r);
        return 0;
    }
    event_active(r->pump, EV_WRITE, 0);
    return 0;
}

/* --- Connections --------------------------------------------------------- */

/* Answers a request that cannot be served with a bare STATUS and closes. */
static void conn_refuse(struct http1_conn *conn, int status)
{
    struct evbuffer *out = bufferevent_get_output(conn->bev);

    conn->server->stats.bad_requests++;
    evbuffer_add_printf(out,
                        "HTTP/1.1 %d %s\r\ncontent-type: text/plain\r\ncontent-length: %zu\r\n"
                        "connection: close\r\n\r\n%s\n",
                        status, http_status_str((enum http_status)status),
                        strlen(http_status_str((enum http_status)status)) + 1,
                        http_status_str((enum http_status)status));
    conn->closing = 1;
    bufferevent_disable(conn->bev, EV_READ);
}

/* Parses what input is held, unless a request is being answered. */
static void conn_process(struct http1_conn *conn)
{
    struct evbuffer *in = bufferevent_get_input(conn->bev);
    struct evbuffer_iovec vec[4];
    int count;

    if (conn->closing || conn->in_parse)
        return;
    conn->in_parse = 1;
    while (!conn->closing && (count = evbuffer_peek(in, -1, NULL, vec, 4)) > 0) {
        size_t used = 0;
        enum http_errno err = HPE_OK;
        if (conn->request && conn->request->message_done)
            break; /* one at a time: the next waits for this response */
        http_parser_pause(&conn->parser, 0);
        for (int i = 0; i < count && i < 4 && err == HPE_OK; i++) {
            size_t n = http_parser_execute(&conn->parser, &conn->server->settings, vec[i].iov_base,
                                           vec[i].iov_len);
            used += n;
            err = HTTP_PARSER_ERRNO(&conn->parser);
            if (conn->free_pending)
                break;
        }
        if (conn->free_pending)
            break;
        evbuffer_drain(in, used);
        if (err == HPE_PAUSED)
            continue; /* a request is complete: the loop stops above */
        if (err != HPE_OK) {
            struct http1_request *r = conn->request;
            int status = conn->refused_status ? conn->refused_status : 400;
            if (conn->closing) {
                /* Bytes after a response that closes: dropped. */
            } else if (r && r->responded) {
                /* Already answered: only the connection goes. */
                conn->closing = 1;
                bufferevent_disable(conn->bev, EV_READ);
            } else {
                conn_refuse(conn, status);
            }
            if (r) {
                conn->server->handler.request_close(r->data, 1);
                /* Said outright (request_free clears it too, through
                 * r->conn): the analyzer cannot tell r->conn is CONN. */
                conn->request = NULL;
                request_free(r);
            }
            break;
        }
    }
    conn->in_parse = 0;
    if (conn->free_pending) {
        conn_free(conn, 1);
        return;
    }
    if (conn->closing && evbuffer_get_length(bufferevent_get_output(conn->bev)) == 0)
        conn_free(conn, 0);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    conn_process(arg);
}

static void on_resume(evutil_socket_t fd, short what, void *arg)
{
    conn_process(arg);
}

static void on_write(struct bufferevent *bev, void *arg)
{
    struct http1_conn *conn = arg;

    if (conn->closing) {
        if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
            conn_free(conn, 0);
        return;
    }
    if (conn->request && conn->request->responded && !conn->request->deferred &&
        !conn->request->response_done)
        request_pump(conn->request);
}

static void on_event(struct bufferevent *bev, short events, void *arg)
{
    struct http1_conn *conn = arg;

    if (events & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)) {
        if (conn->request && !conn->request->response_done)
            conn->server->stats.disconnects++;
        conn_free(conn, 1);
    }
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct http1_conn *conn = arg;

    conn->server->stats.request_timeouts++;
    conn_free(conn, 1);
}

/* Frees CONN; an open request's handler is told (aborted).  Inside the
 * parser it only marks the connection, and conn_process frees it. */
static void conn_free(struct http1_conn *conn, int aborted)
{
    struct http1_server *server = conn->server;
    struct http1_request *r = conn->request;

    if (conn->in_parse) {
        conn->free_pending = 1;
        return;
    }
    if (r) {
        conn->request = NULL;
        server->stats.recv_held -= r->held;
        r->conn = NULL;
        server->handler.request_close(r->data, 1);
        event_free(r->pump);
        free(r);
    }
    list_remove(&conn->link);
    server->stats.connections_open--;
    bufferevent_free(conn->bev);
    event_free(conn->timer);
    event_free(conn->resumer);
    free(conn->headers.arena);
    if (conn->on_close)
        conn->on_close(conn->close_arg);
    free(conn);
}

int http1_server_adopt(struct http1_server *server, int fd, struct bufferevent *bev,
                       void (*on_close)(void *arg), void *arg)
{
    struct http1_conn *conn = calloc(1, sizeof(*conn));
    int one = 1;

    if (!bev) {
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        bev = bufferevent_socket_new(server->base, fd, BEV_OPT_CLOSE_ON_FREE);
        if (!bev) {
            close(fd);
            free(conn);
            return -1;
        }
    }
    if (!conn)
        goto fail;
    conn->server = server;
    conn->bev = bev;
    conn->timer = evtimer_new(server->base, on_timeout, conn);
    conn->resumer = event_new(server->base, -1, 0, on_resume, conn);
    if (!conn->timer || !conn->resumer)
        goto fail;
    http_parser_init(&conn->parser, HTTP_REQUEST);
    conn->parser.data = conn;
    conn->on_close = on_close;
    conn->close_arg = arg;
    list_insert_head(&server->conns, &conn->link);
    server->stats.connections_open++;
    server->stats.connections_total++;
    bufferevent_setwatermark(bev, EV_READ, 0, HTTP1_INPUT_HIGH_WATER);
    bufferevent_setwatermark(bev, EV_WRITE, HTTP1_OUTPUT_LOW_WATER, 0);
    bufferevent_set_timeouts(bev, NULL, &server->write_timeout);
    bufferevent_setcb(bev, on_read, on_write, on_event, conn);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
    event_add(conn->timer, &server->request_timeout);
    /* Bytes that came with a TLS handshake are parsed from the loop. */
    if (evbuffer_get_length(bufferevent_get_input(bev)) > 0)
        event_active(conn->resumer, EV_READ, 0);
    return 0;
fail:
    if (conn) {
        if (conn->timer)
            event_free(conn->timer);
        if (conn->resumer)
            event_free(conn->resumer);
        free(conn);
    }
    bufferevent_free(bev);
    return -1;
}

/* --- Server -------------------------------------------------------------- */

static struct timeval ms_to_tv(uint32_t ms)
{
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000)};
    return tv;
}

struct http1_server *http1_server_new(struct event_base *base, const struct http1_limits *limits,
                                      const struct http1_handler *handler, void *server_data)
{
    struct http1_server *server = calloc(1, sizeof(*server));

    if (!server)
        return NULL;
    list_init(&server->conns);
    server->base = base;
    server->limits = *limits;
    if (!server->limits.request_timeout_ms)
        server->limits.request_timeout_ms = HTTP1_DEFAULT_REQUEST_TIMEOUT_MS;
    if (!server->limits.write_timeout_ms)
        server->limits.write_timeout_ms = HTTP1_DEFAULT_WRITE_TIMEOUT_MS;
    server->request_timeout = ms_to_tv(server->limits.request_timeout_ms);
    server->write_timeout = ms_to_tv(server->limits.write_timeout_ms);
    server->handler = *handler;
    server->server_data = server_data;
    http_parser_settings_init(&server->settings);
    server->settings.on_message_begin = on_message_begin;
    server->settings.on_url = on_url;
    server->settings.on_header_field = on_header_field;
    server->settings.on_header_value = on_header_value;
    server->settings.on_headers_complete = on_headers_complete;
    server->settings.on_body = on_body;
    server->settings.on_message_complete = on_message_complete;
    return server;
}

const struct http1_stats *http1_server_stats(const struct http1_server *server)
{
    return &server->stats;
}

void http1_server_free(struct http1_server *server)
{
    struct list_node *node, *next;

    if (!server)
        return;
    list_for_each_safe (node, next, &server->conns) {
        struct http1_conn *conn = list_entry(node, struct http1_conn, link);
        /* The listener that handed it over is going away too. */
        conn->on_close = NULL;
        conn_free(conn, 1);
    }
    free(server);
}
