/* h2_server: one nghttp2 session per connection: its streams, the stream
 * API handlers use, and the timers that close a connection which makes no
 * progress or leaves a header block open.  The receive budgets are in
 * h2_budget.c. */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <openssl/ssl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "h2/h2.h"
#include "h2/h2_internal.h"

/* The server's flow-control windows (the client's are in h2_client.c). */
#define STREAM_WINDOW     (1024 * 1024)
#define CONNECTION_WINDOW (16 * 1024 * 1024)

static void conn_close(struct h2_conn *conn);
static void conn_close_after_write(struct h2_conn *conn);

void h2_conn_schedule_flush(struct h2_conn *conn)
{
    /* Inside on_read the flush at its end writes what was queued. */
    if (!conn->in_callback)
        event_active(conn->flush_event, EV_WRITE, 0);
}

/* --- Progress and header blocks ------------------------------------------ */

static void header_block_closed(struct h2_conn *conn)
{
    conn->header_block_open = 0;
    conn->header_block_ending = 0;
    if (conn->header_timer_armed) {
        conn->header_timer_armed = 0;
        event_del(conn->header_event);
    }
}

/* After a read: a header block still open waits for more bytes, and only
 * then is its timer armed (a block that came whole costs no timer). */
static void header_timer_arm(struct h2_conn *conn)
{
    if (conn->header_block_open && !conn->header_timer_armed) {
        conn->header_timer_armed = 1;
        event_add(conn->header_event, &conn->server->header_timeout);
    }
}

static int on_begin_frame(nghttp2_session *session, const nghttp2_frame_hd *hd, void *user_data)
{
    struct h2_conn *conn = user_data;

    if (hd->type == NGHTTP2_HEADERS || hd->type == NGHTTP2_CONTINUATION) {
        if (!conn->header_block_open) {
            conn->header_block_open = 1;
            conn->header_stream_id = hd->stream_id;
        }
        if (hd->flags & NGHTTP2_FLAG_END_HEADERS)
            conn->header_block_ending = 1;
        return 0;
    }
    /* Frames cannot interleave with a header block: the last one ended. */
    if (conn->header_block_open)
        header_block_closed(conn);
    return 0;
}

static void on_header_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct h2_conn *conn = arg;

    conn->server->stats.header_timeouts++;
    conn->header_block_open = 0;
    conn->header_timer_armed = 0;
    nghttp2_submit_goaway(conn->session, NGHTTP2_FLAG_NONE,
                          nghttp2_session_get_last_proc_stream_id(conn->session), NGHTTP2_NO_ERROR,
                          (const uint8_t *)"header timeout", 14);
    if (h2_conn_flush(conn) == 0)
        conn_close_after_write(conn);
}

/* 1 when STREAM waits on the server, not on its client: the handler has
 * not answered yet, or has answered and has nothing more to send.  Streams
 * holding undelivered request bytes, or with output the client's window or
 * socket does not take, wait on the client. */
static int stream_waits_on_server(const struct h2_stream *stream)
{
    if (stream->held > 0)
        return 0;
    if (!stream->answered)
        return 1;
    return stream->deferred && !stream->end_sent;
}

/* The idle timer, every idle timeout: a connection is closed once no stream
 * frame went either way for a whole period (PINGs, SETTINGS and
 * WINDOW_UPDATEs do not count) and none of its streams is waiting on the
 * server.  So it goes between one and two idle timeouts after its last
 * progress; frames only set a flag, with no timer or clock work. */
static void on_idle(evutil_socket_t fd, short what, void *arg)
{
    struct h2_conn *conn = arg;
    struct list_node *node;

    if (conn->closing) { /* the peer never read its GOAWAY */
        conn_close(conn);
        return;
    }
    if (conn->progressed) {
        conn->progressed = 0;
        event_add(conn->idle_event, &conn->server->idle_timeout);
        return;
    }
    list_for_each (node, &conn->streams) {
        if (stream_waits_on_server(list_entry(node, struct h2_stream, link))) {
            event_add(conn->idle_event, &conn->server->idle_timeout);
            return;
        }
    }
    conn->server->stats.idle_closes++;
    nghttp2_submit_goaway(conn->session, NGHTTP2_FLAG_NONE,
                          nghttp2_session_get_last_proc_stream_id(conn->session), NGHTTP2_NO_ERROR,
                          (const uint8_t *)"idle", 4);
    if (h2_conn_flush(conn) == 0)
        conn_close_after_write(conn);
}

/* --- nghttp2 callbacks --------------------------------------------------- */

static int on_begin_headers(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
    struct h2_conn *conn = user_data;
    struct h2_stream *stream;

    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    if (h2_budget_exceeded(conn)) {
        /* The client may retry it: nothing of it was processed. */
        conn->server->stats.streams_refused_budget++;
        nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id,
                                  NGHTTP2_REFUSED_STREAM);
        return 0;
    }
    stream = calloc(1, sizeof(*stream));
    if (!stream)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    stream->conn = conn;
    stream->stream_id = frame->hd.stream_id;
    stream->data = conn->listener->handler.stream_open(conn->listener->listener_data, stream);
    if (!stream->data) {
        free(stream);
        nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id,
                                  NGHTTP2_REFUSED_STREAM);
        return 0;
    }
    list_insert_head(&conn->streams, &stream->link);
    conn->stream_count++;
    conn->server->stats.streams_open++;
    conn->server->stats.streams_total++;
    nghttp2_session_set_stream_user_data(session, frame->hd.stream_id, stream);
    return 0;
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user_data)
{
    struct h2_conn *conn = user_data;
    struct h2_stream *stream;

    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0; /* client trailers carry nothing gRPC uses */
    stream = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (!stream)
        return 0;
    /* RFC 9113 section 6.5.2 size: name + value + 32 per field. */
    stream->header_bytes += namelen + valuelen + 32;
    if (stream->header_bytes > conn->server->limits.max_header_list_bytes)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    if (conn->listener->handler.stream_header(stream->data, name, namelen, value, valuelen) != 0)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    return 0;
}

static int on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
    struct h2_conn *conn = user_data;
    struct h2_stream *stream;

    switch (frame->hd.type) {
    case NGHTTP2_HEADERS:
        header_block_closed(conn);
        conn->progressed = 1;
        break;
    case NGHTTP2_DATA:
        if (frame->hd.length > 0 || (frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
            conn->progressed = 1;
        break;
    case NGHTTP2_RST_STREAM:
        conn->progressed = 1;
        return 0;
    default:
        return 0;
    }
    stream = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (!stream)
        return 0;
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST)
        conn->listener->handler.stream_headers_done(stream->data);
    if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)
        conn->listener->handler.stream_end(stream->data);
    return 0;
}

static int on_invalid_frame_recv(nghttp2_session *session, const nghttp2_frame *frame,
                                 int lib_error_code, void *user_data)
{
    struct h2_conn *conn = user_data;

    if (frame->hd.type == NGHTTP2_HEADERS)
        header_block_closed(conn);
    return 0;
}

static int on_frame_send(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
    struct h2_conn *conn = user_data;
    struct h2_stream *stream;

    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)
        return 0;
    conn->progressed = 1;
    if (!(frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return 0;
    stream = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (!stream)
        return 0;
    stream->end_sent = 1;
    if (stream->reset_after_end)
        nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, stream->stream_id,
                                  stream->reset_code);
    return 0;
}

static int on_data_chunk_recv(nghttp2_session *session, uint8_t flags, int32_t stream_id,
                              const uint8_t *data, size_t len, void *user_data)
{
    struct h2_conn *conn = user_data;
    struct h2_stream *stream = nghttp2_session_get_stream_user_data(session, stream_id);

    if (!stream) { /* a stream we refused: its bytes go nowhere */
        nghttp2_session_consume(session, stream_id, len);
        return 0;
    }
    h2_stream_hold(stream, len);
    nghttp2_session_consume_connection(session, len);
    conn->listener->handler.stream_data(stream->data, data, len);
    h2_stream_credit(stream);
    return 0;
}

/* Frees STREAM after telling its handler.  With LIVE (the connection goes
 * on), what it still held is given back to the budgets. */
static void stream_unlink_and_free(struct h2_conn *conn, struct h2_stream *stream,
                                   uint32_t error_code, int live)
{
    list_remove(&stream->link);
    conn->stream_count--;
    conn->server->stats.streams_open--;
    conn->held -= stream->held;
    conn->server->stats.recv_buffered -= stream->held;
    if (conn->grant == stream)
        conn->grant = NULL;
    if (live && conn->header_block_open && conn->header_block_ending &&
        conn->header_stream_id == stream->stream_id)
        header_block_closed(conn);
    conn->listener->handler.stream_close(stream->data, error_code);
    free(stream);
    if (live)
        h2_budget_freed(conn);
}

static int on_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code,
                           void *user_data)
{
    struct h2_conn *conn = user_data;
    struct h2_stream *stream = nghttp2_session_get_stream_user_data(session, stream_id);

    if (!stream)
        return 0;
    nghttp2_session_set_stream_user_data(session, stream_id, NULL);
    stream_unlink_and_free(conn, stream, error_code, 1);
    return 0;
}

static ssize_t on_data_read(nghttp2_session *session, int32_t stream_id, uint8_t *buf,
                            size_t length, uint32_t *data_flags, nghttp2_data_source *source,
                            void *user_data)
{
    struct h2_conn *conn = user_data;
    struct h2_stream *stream = source->ptr;
    uint32_t flags = 0;
    ssize_t n;

    n = conn->listener->handler.stream_read(stream->data, buf, length, &flags);
    if (n == H2_READ_DEFERRED) {
        stream->deferred = 1;
        return NGHTTP2_ERR_DEFERRED;
    }
    if (n < 0)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    if (flags & H2_READ_EOF_END_STREAM)
        *data_flags |= NGHTTP2_DATA_FLAG_EOF; /* this DATA frame ends the stream */
    else if (flags & H2_READ_EOF)
        *data_flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
    return n;
}

/* --- Stream API ---------------------------------------------------------- */

int h2_stream_respond(struct h2_stream *stream, const struct h2_header *headers, size_t count,
                      int has_body)
{
    nghttp2_nv stack[16];
    nghttp2_nv *nv = h2_headers_to_nv(headers, count, stack, 16);
    nghttp2_data_provider provider;
    int rv;

    if (!nv)
        return -1;
    provider.source.ptr = stream;
    provider.read_callback = on_data_read;
    rv = nghttp2_submit_response(stream->conn->session, stream->stream_id, nv, count,
                                 has_body ? &provider : NULL);
    if (nv != stack)
        free(nv);
    if (rv != 0)
        return -1;
    stream->answered = 1;
    h2_conn_schedule_flush(stream->conn);
    return 0;
}

int h2_stream_trailers(struct h2_stream *stream, const struct h2_header *headers, size_t count)
{
    nghttp2_nv stack[16];
    nghttp2_nv *nv = h2_headers_to_nv(headers, count, stack, 16);
    int rv;

    if (!nv)
        return -1;
    rv = nghttp2_submit_trailer(stream->conn->session, stream->stream_id, nv, count);
    if (nv != stack)
        free(nv);
    if (rv != 0)
        return -1;
    h2_conn_schedule_flush(stream->conn);
    return 0;
}

void h2_stream_resume(struct h2_stream *stream)
{
    stream->deferred = 0;
    nghttp2_session_resume_data(stream->conn->session, stream->stream_id);
    h2_conn_schedule_flush(stream->conn);
}

void h2_stream_reset(struct h2_stream *stream, uint32_t error_code)
{
    nghttp2_submit_rst_stream(stream->conn->session, NGHTTP2_FLAG_NONE, stream->stream_id,
                              error_code);
    h2_conn_schedule_flush(stream->conn);
}

void h2_stream_reset_after_end(struct h2_stream *stream, uint32_t error_code)
{
    if (stream->end_sent) {
        h2_stream_reset(stream, error_code);
        return;
    }
    stream->reset_after_end = 1;
    stream->reset_code = error_code;
}

const char *h2_stream_listener_name(const struct h2_stream *stream)
{
    return stream->conn->listener->name;
}

size_t h2_stream_connection_backlog(const struct h2_stream *stream)
{
    return evbuffer_get_length(bufferevent_get_output(stream->conn->bev));
}

/* --- Connections --------------------------------------------------------- */

void h2_conn_free(struct h2_conn *conn)
{
    struct h2_server *server = conn->server;
    struct list_node *node, *next;

    /* nghttp2_session_del does not report open streams: tell the handler. */
    list_for_each_safe (node, next, &conn->streams) {
        struct h2_stream *stream = list_entry(node, struct h2_stream, link);
        nghttp2_session_set_stream_user_data(conn->session, stream->stream_id, NULL);
        stream_unlink_and_free(conn, stream, NGHTTP2_CANCEL, 0);
    }
    list_remove(&conn->link);
    conn->listener->connection_count--;
    server->stats.connections_open--;
    nghttp2_session_del(conn->session);
    event_free(conn->flush_event);
    event_free(conn->idle_event);
    event_free(conn->header_event);
    if (conn->bev) /* NULL: handed over to the fallback */
        bufferevent_free(conn->bev);
    free(conn);
    /* What it held is free now: others may have waited for it. */
    h2_budget_server_freed(server);
}

static void conn_close(struct h2_conn *conn)
{
    if (conn->in_callback) {
        conn->close_pending = 1;
        return;
    }
    h2_conn_free(conn);
}

/* How long a closing connection may take to write its last frames. */
#define CLOSE_LINGER_MS 1000

/* Closes once the bytes already in the socket buffer (a GOAWAY, usually)
 * are written: bufferevent_free would drop them.  Reads stop now. */
static void conn_close_after_write(struct h2_conn *conn)
{
    struct timeval linger = {CLOSE_LINGER_MS / 1000, (CLOSE_LINGER_MS % 1000) * 1000};

    if (evbuffer_get_length(bufferevent_get_output(conn->bev)) == 0) {
        conn_close(conn);
        return;
    }
    conn->closing = 1;
    bufferevent_disable(conn->bev, EV_READ);
    header_block_closed(conn);
    event_add(conn->idle_event, &linger); /* on_idle frees it if the peer never reads */
}

/* Moves frames from nghttp2 into the socket buffer, stopping at the high
 * water mark.  Closes the connection when neither side has more to say.
 * Returns 0, or -1 when the connection was freed. */
int h2_conn_flush(struct h2_conn *conn)
{
    struct evbuffer *out = bufferevent_get_output(conn->bev);

    conn->in_callback++;
    if (h2_pump_send(conn->session, conn->bev, &conn->server->stats.bytes_out) != 0)
        conn->close_pending = 1;
    conn->in_callback--;
    if (!conn->close_pending && h2_pump_finished(conn->session) && evbuffer_get_length(out) == 0)
        conn->close_pending = 1;
    if (conn->close_pending && !conn->in_callback) {
        h2_conn_free(conn);
        return -1;
    }
    return 0;
}

static void on_flush_event(evutil_socket_t fd, short what, void *arg)
{
    (void)h2_conn_flush(arg);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct h2_conn *conn = arg;
    struct evbuffer *in = bufferevent_get_input(bev);

    if (conn->closing) {
        evbuffer_drain(in, evbuffer_get_length(in));
        return;
    }
    conn->in_callback++;
    if (h2_pump_recv(conn->session, in, &conn->server->stats.bytes_in) != 0)
        conn->close_pending = 1;
    conn->in_callback--;
    if (conn->close_pending) {
        /* Let nghttp2 say GOAWAY when it has one queued, then close. */
        conn->close_pending = 0;
        if (h2_conn_flush(conn) == 0)
            conn_close_after_write(conn);
        return;
    }
    header_timer_arm(conn);
    h2_conn_flush(conn);
}

static void on_write(struct bufferevent *bev, void *arg)
{
    struct h2_conn *conn = arg;

    /* The socket drained below the low water mark. */
    if (conn->closing) {
        if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
            conn_close(conn);
        return;
    }
    h2_conn_flush(conn);
}

/* TLS chose http/1.1 (or no protocol): the connection, not one byte of it
 * read by nghttp2 yet, goes to the listener's fallback with its bufferevent,
 * still counted against the listener until the fallback releases it. */
static void conn_hand_over(struct h2_conn *conn)
{
    struct h2_listener *listener = conn->listener;
    struct bufferevent *bev = conn->bev;

    bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
    conn->bev = NULL;
    h2_conn_free(conn);
    listener->connection_count++;
    listener->fallback(listener->fallback_arg, listener, -1, bev);
}

static void on_event(struct bufferevent *bev, short events, void *arg)
{
    struct h2_conn *conn = arg;

    if (events & BEV_EVENT_CONNECTED) {
        if (conn->listener->fallback && h2_pump_alpn_http1(bev)) {
            conn_hand_over(conn);
            return;
        }
        if (!h2_pump_alpn_ok(bev)) {
            conn_close(conn);
            return;
        }
        h2_conn_flush(conn);
        return;
    }
    if (events & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
        conn_close(conn);
}

static int conn_setup_session(struct h2_conn *conn)
{
    nghttp2_session_callbacks *callbacks;
    nghttp2_option *option;
    nghttp2_settings_entry settings[4];
    size_t window;
    int rv;

    if (nghttp2_session_callbacks_new(&callbacks) != 0)
        return -1;
    nghttp2_session_callbacks_set_on_begin_frame_callback(callbacks, on_begin_frame);
    nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, on_frame_recv);
    nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(callbacks, on_invalid_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, on_data_chunk_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, on_stream_close);
    nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, on_frame_send);
    if (nghttp2_option_new(&option) != 0) {
        nghttp2_session_callbacks_del(callbacks);
        return -1;
    }
    nghttp2_option_set_no_closed_streams(option, 1);
    nghttp2_option_set_stream_reset_rate_limit(option, 1000, 33);
    nghttp2_option_set_max_settings(option, 32);
    /* Window credit is given back only for bytes released or credited by
     * the budget rules above, never merely for having arrived. */
    nghttp2_option_set_no_auto_window_update(option, 1);
    rv = nghttp2_session_server_new2(&conn->session, callbacks, conn, option);
    nghttp2_option_del(option);
    nghttp2_session_callbacks_del(callbacks);
    if (rv != 0)
        return -1;
    settings[0].settings_id = NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS;
    settings[0].value = conn->server->limits.max_concurrent_streams;
    settings[1].settings_id = NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE;
    settings[1].value = conn->server->limits.max_header_list_bytes;
    settings[2].settings_id = NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE;
    settings[2].value = STREAM_WINDOW;
    settings[3].settings_id = NGHTTP2_SETTINGS_ENABLE_PUSH;
    settings[3].value = 0;
    if (nghttp2_submit_settings(conn->session, NGHTTP2_FLAG_NONE, settings, 4) != 0)
        return -1;
    /* Never more connection window than the connection's budget. */
    window = conn->server->limits.conn_recv_budget;
    if (window > CONNECTION_WINDOW)
        window = CONNECTION_WINDOW;
    if (window < NGHTTP2_INITIAL_CONNECTION_WINDOW_SIZE)
        window = NGHTTP2_INITIAL_CONNECTION_WINDOW_SIZE;
    nghttp2_session_set_local_window_size(conn->session, NGHTTP2_FLAG_NONE, 0, (int32_t)window);
    return 0;
}

void h2_conn_accept(struct h2_listener *listener, evutil_socket_t fd)
{
    struct h2_server *server = listener->server;
    struct h2_conn *conn;
    int one = 1;

    conn = calloc(1, sizeof(*conn));
    if (!conn) {
        evutil_closesocket(fd);
        return;
    }
    list_init(&conn->streams);
    conn->server = server;
    conn->listener = listener;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (listener->ssl_ctx) {
        SSL *ssl = SSL_new(listener->ssl_ctx);
        if (!ssl)
            goto fail_fd;
        conn->bev = h2_pump_bev_new(server->base, fd, ssl, 1);
    } else {
        conn->bev = h2_pump_bev_new(server->base, fd, NULL, 1);
    }
    if (!conn->bev)
        goto fail_fd;
    conn->flush_event = event_new(server->base, -1, 0, on_flush_event, conn);
    conn->idle_event = evtimer_new(server->base, on_idle, conn);
    conn->header_event = evtimer_new(server->base, on_header_timeout, conn);
    if (!conn->flush_event || !conn->idle_event || !conn->header_event ||
        conn_setup_session(conn) != 0)
        goto fail_bev;
    listener->connection_count++;
    server->stats.connections_open++;
    server->stats.connections_total++;
    list_insert_head(&server->conns, &conn->link);
    event_add(conn->idle_event, &server->idle_timeout);
    /* The TLS handshake and the client's preface are bounded like a header
     * block: the first frame (SETTINGS) ends it. */
    conn->header_block_open = 1;
    header_timer_arm(conn);
    bufferevent_setwatermark(conn->bev, EV_WRITE, H2_OUTPUT_LOW_WATER, 0);
    bufferevent_setcb(conn->bev, on_read, on_write, on_event, conn);
    bufferevent_enable(conn->bev, EV_READ | EV_WRITE);
    if (!listener->ssl_ctx)
        h2_conn_flush(conn);
    return;

fail_bev:
    if (conn->session)
        nghttp2_session_del(conn->session);
    if (conn->flush_event)
        event_free(conn->flush_event);
    if (conn->idle_event)
        event_free(conn->idle_event);
    if (conn->header_event)
        event_free(conn->header_event);
    bufferevent_free(conn->bev);
    free(conn);
    return;
fail_fd:
    evutil_closesocket(fd);
    free(conn);
}
