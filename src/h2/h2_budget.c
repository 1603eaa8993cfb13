/* h2_budget: request bytes held per connection and across the server, and
 * the stream window given back for them (see h2_stream_release in h2.h). */
#include <nghttp2/nghttp2.h>

#include "h2/h2.h"
#include "h2/h2_internal.h"

int h2_budget_exceeded(const struct h2_conn *conn)
{
    const struct h2_server *server = conn->server;

    return conn->held >= server->limits.conn_recv_budget ||
           server->stats.recv_buffered >= server->limits.server_recv_budget;
}

/* Gives the stream's received bytes back to the client as stream window,
 * unless it is paused or a budget is spent and another stream of this
 * connection holds the connection's grant (then it waits for a release).
 * The connection window is given back as bytes arrive: withheld, the bytes
 * of waiting streams would close it for the stream that may go on. */
void h2_stream_credit(struct h2_stream *stream)
{
    struct h2_conn *conn = stream->conn;

    if (stream->uncredited == 0 || stream->input_paused)
        return;
    if (h2_budget_exceeded(conn)) {
        if (conn->grant && conn->grant != stream) {
            conn->credit_waiting = 1;
            conn->server->credit_waiting = 1;
            return;
        }
        conn->grant = stream;
    }
    nghttp2_session_consume_stream(conn->session, stream->stream_id, stream->uncredited);
    stream->uncredited = 0;
}

static void conn_credit_waiting(struct h2_conn *conn)
{
    struct list_node *node;

    if (!conn->credit_waiting)
        return;
    conn->credit_waiting = 0;
    list_for_each (node, &conn->streams)
        h2_stream_credit(list_entry(node, struct h2_stream, link));
    h2_conn_schedule_flush(conn);
}

void h2_budget_server_freed(struct h2_server *server)
{
    if (server->credit_waiting && server->stats.recv_buffered < server->limits.server_recv_budget) {
        server->credit_waiting = 0;
        struct list_node *node;
        list_for_each (node, &server->conns)
            conn_credit_waiting(list_entry(node, struct h2_conn, link));
    }
}

/* Bytes left the server's custody: budgets have room again, so streams
 * that waited for credit get it (those of other connections too, when the
 * server-wide budget was the one spent). */
void h2_budget_freed(struct h2_conn *conn)
{
    conn_credit_waiting(conn);
    h2_budget_server_freed(conn->server);
}

void h2_stream_hold(struct h2_stream *stream, size_t len)
{
    stream->held += len;
    stream->uncredited += len;
    stream->conn->held += len;
    stream->conn->server->stats.recv_buffered += len;
}

void h2_stream_release(struct h2_stream *stream, size_t len)
{
    struct h2_conn *conn = stream->conn;

    if (len > stream->held)
        len = stream->held;
    stream->held -= len;
    conn->held -= len;
    conn->server->stats.recv_buffered -= len;
    if (conn->grant == stream)
        conn->grant = NULL; /* its message went through: others may take a turn */
    h2_stream_credit(stream);
    h2_budget_freed(conn);
    h2_conn_schedule_flush(conn);
}

void h2_stream_pause_input(struct h2_stream *stream, int paused)
{
    struct h2_conn *conn = stream->conn;

    stream->input_paused = paused ? 1 : 0;
    if (paused) {
        if (conn->grant == stream) {
            conn->grant = NULL;
            conn->credit_waiting = 1;
            h2_budget_freed(conn);
        }
        return;
    }
    h2_stream_credit(stream);
    h2_conn_schedule_flush(conn);
}
