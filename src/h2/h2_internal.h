/* h2_internal: what h2_conn.c (the connection pump both sides use),
 * h2_server.c (server connections, streams), h2_client.c (client
 * connections), h2_budget.c (receive budgets) and h2_listen.c (the server,
 * listeners, accepting) share.  Not for use outside src/h2. */
#ifndef AGENTHUB_H2_INTERNAL_H
#define AGENTHUB_H2_INTERNAL_H

#include <event2/util.h>
#include <nghttp2/nghttp2.h>
#include <openssl/ssl.h>
#include <stdint.h>
#include <sys/time.h>

#include "common/list.h"
#include "h2/h2.h"

struct bufferevent;
struct event;
struct event_base;
struct evbuffer;
struct evconnlistener;

/* --- The connection pump (h2_conn.c) --- */

/* Stop pulling frames from nghttp2 while this much is unwritten; resume when
 * the socket drains below the low mark.  Both sides use the same marks. */
#define H2_OUTPUT_HIGH_WATER (256 * 1024)
#define H2_OUTPUT_LOW_WATER  (64 * 1024)

/* A bufferevent on FD (-1: connect later), over TLS when SSL is not NULL
 * (ACCEPTING: the server side of the handshake).  Takes SSL over, freeing
 * it on failure.  Returns NULL on failure. */
struct bufferevent *h2_pump_bev_new(struct event_base *base, evutil_socket_t fd, SSL *ssl,
                                    int accepting);
/* 1 when BEV is plain TCP or its TLS handshake agreed on ALPN "h2". */
int h2_pump_alpn_ok(struct bufferevent *bev);
/* 1 when BEV's TLS handshake agreed on "http/1.1" or on no protocol. */
int h2_pump_alpn_http1(struct bufferevent *bev);
/* Feeds every byte of IN to SESSION, counting them into *BYTES_IN.
 * Returns 0, or -1 when nghttp2 failed (the connection must go). */
int h2_pump_recv(nghttp2_session *session, struct evbuffer *in, uint64_t *bytes_in);
/* Moves frames from SESSION into BEV's output until it holds the high water
 * mark, counting them into *BYTES_OUT.  Returns 0, or -1 when nghttp2 or the
 * buffer failed (the connection must go). */
int h2_pump_send(nghttp2_session *session, struct bufferevent *bev, uint64_t *bytes_out);
/* 1 when neither side of SESSION has anything more to say. */
int h2_pump_finished(nghttp2_session *session);
/* HEADERS as nghttp2's name-value pairs, in STACK when COUNT fits, else
 * malloc'd (free it when it is not STACK).  Returns NULL when out of
 * memory. */
nghttp2_nv *h2_headers_to_nv(const struct h2_header *headers, size_t count, nghttp2_nv *stack,
                             size_t stack_count);

struct h2_conn;

struct h2_stream {
    struct h2_conn *conn;
    int32_t stream_id;
    void *data;
    size_t header_bytes;
    size_t held;         /* request bytes received and not yet released */
    size_t uncredited;   /* request bytes received and not yet given back as window */
    uint32_t reset_code; /* with reset_after_end: RST_STREAM once ended */
    unsigned reset_after_end : 1;
    unsigned end_sent : 1;
    unsigned answered : 1;     /* response headers were submitted */
    unsigned deferred : 1;     /* its data provider waits for the handler */
    unsigned input_paused : 1; /* h2_stream_pause_input */
    struct list_node link;     /* on its connection's streams */
};

struct h2_listener {
    struct h2_server *server;
    char name[16];
    char address[80];
    struct evconnlistener *evlistener;
    struct event *accept_pause; /* re-enables accepting after a failed accept */
    SSL_CTX *ssl_ctx;
    struct h2_handler handler;
    void *listener_data;
    size_t connection_count;
    h2_fallback_fn fallback; /* h2_listener_set_fallback */
    void *fallback_arg;
    struct list_node sniffs; /* accepted sockets not yet told apart (struct h2_sniff) */
    struct h2_listener *next;
};

/* --- Telling HTTP/2 from other protocols (h2_sniff.c) --- */

struct h2_sniff;
/* Peeks at FD, accepted on LISTENER (counted already), until it is known
 * to be HTTP/2 (h2_conn_accept) or not (the listener's fallback). */
void h2_sniff_start(struct h2_listener *listener, evutil_socket_t fd);
/* Closes every socket LISTENER is still peeking at. */
void h2_sniff_free_all(struct h2_listener *listener);

struct h2_conn {
    struct h2_server *server;
    struct h2_listener *listener;
    struct bufferevent *bev;
    nghttp2_session *session;
    struct event *flush_event;
    struct event *idle_event;
    struct event *header_event; /* armed while a request header block is open */
    struct list_node streams;   /* struct h2_stream, the newest first */
    size_t stream_count;
    size_t held;              /* sum of its streams' held bytes */
    struct h2_stream *grant;  /* the one stream credited while over a budget */
    int32_t header_stream_id; /* the stream whose header block is open */
    unsigned header_block_open : 1;
    unsigned header_block_ending : 1; /* its END_HEADERS frame has begun */
    unsigned header_timer_armed : 1;  /* header_event is pending */
    unsigned progressed : 1;          /* a stream frame since the idle timer's last look */
    unsigned credit_waiting : 1;      /* a stream waits for budget to get credit */
    int in_callback;                  /* >0 while nghttp2 is calling us: never free then */
    int close_pending;                /* close as soon as we are out of callbacks */
    int closing;                      /* writing out a last GOAWAY; closes once it is sent */
    struct list_node link;            /* on the server's connections */
};

struct h2_server {
    struct event_base *base;
    struct h2_limits limits;
    struct h2_listener *listeners;
    struct list_node conns; /* struct h2_conn, the newest first */
    int draining;
    int credit_waiting; /* some connection waits for the server budget */
    struct timeval idle_timeout;
    struct timeval header_timeout;
    struct h2_stats stats;
};

/* Wakes the connection's writer at the end of this loop turn (not from
 * within its own read, which flushes on return). */
void h2_conn_schedule_flush(struct h2_conn *conn);

/* --- Receive budgets (h2_budget.c) --- */

/* 1 when the connection's or the server's receive budget is spent. */
int h2_budget_exceeded(const struct h2_conn *conn);
/* LEN request bytes arrived on STREAM: held, without stream window yet. */
void h2_stream_hold(struct h2_stream *stream, size_t len);
/* Gives STREAM's bytes back as stream window when the budgets allow. */
void h2_stream_credit(struct h2_stream *stream);
/* Held bytes of CONN went away: its waiting streams may get window. */
void h2_budget_freed(struct h2_conn *conn);
/* The same for the server-wide budget, across every connection. */
void h2_budget_server_freed(struct h2_server *server);

/* Takes over an accepted socket FD for LISTENER.  Closes FD when the
 * connection cannot be set up. */
void h2_conn_accept(struct h2_listener *listener, evutil_socket_t fd);

/* Frees CONN now (its streams get stream_close first). */
void h2_conn_free(struct h2_conn *conn);

/* Moves frames from nghttp2 into the socket buffer.  Returns 0, or -1 when
 * the connection was freed. */
int h2_conn_flush(struct h2_conn *conn);

#endif
