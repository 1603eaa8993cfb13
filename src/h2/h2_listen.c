/* h2_listen: the server object, its listeners and the accept path,
 * including what happens when accept() fails (out of file descriptors). */
#include <errno.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/hostport.h"
#include "common/log.h"
#include "h2/h2.h"
#include "h2/h2_internal.h"
#include "h2/h2_tls.h"

/* How long accepting pauses after accept() failed.  Out of descriptors the
 * listening socket stays readable, so retrying at once would spin; a short
 * pause lets connections close, and the kernel keeps new ones queued. */
#define ACCEPT_PAUSE_MS 250

static void on_accept(struct evconnlistener *evlistener, evutil_socket_t fd, struct sockaddr *addr,
                      int addrlen, void *arg)
{
    struct h2_listener *listener = arg;
    struct h2_server *server = listener->server;

    if (server->draining) {
        evutil_closesocket(fd);
        return;
    }
    if (listener->connection_count >= server->limits.max_connections) {
        server->stats.connections_over_limit++;
        evutil_closesocket(fd);
        return;
    }
    if (listener->fallback && !listener->ssl_ctx) {
        listener->connection_count++;
        h2_sniff_start(listener, fd);
        return;
    }
    h2_conn_accept(listener, fd);
}

static void on_accept_resume(evutil_socket_t fd, short what, void *arg)
{
    struct h2_listener *listener = arg;

    if (!listener->server->draining)
        evconnlistener_enable(listener->evlistener);
}

/* accept() failed with something other than a transient error: EMFILE or
 * ENFILE above all.  Stops accepting for ACCEPT_PAUSE_MS, with one log
 * line per pause. */
static void on_accept_error(struct evconnlistener *evlistener, void *arg)
{
    struct h2_listener *listener = arg;
    int err = EVUTIL_SOCKET_ERROR();
    struct timeval pause = {ACCEPT_PAUSE_MS / 1000, (ACCEPT_PAUSE_MS % 1000) * 1000};

    evconnlistener_disable(evlistener);
    listener->server->stats.accept_pauses++;
    log_warn("listener %s: cannot accept a connection (%s); pausing accepts for %d ms",
             listener->name, evutil_socket_error_to_string(err), ACCEPT_PAUSE_MS);
    event_add(listener->accept_pause, &pause);
}

/* --- Server and listeners ------------------------------------------------ */

struct h2_server *h2_server_new(struct event_base *base, const struct h2_limits *limits)
{
    struct h2_server *server = calloc(1, sizeof(*server));

    if (!server)
        return NULL;
    list_init(&server->conns);
    server->base = base;
    server->limits = *limits;
    if (!server->limits.header_timeout_ms)
        server->limits.header_timeout_ms = H2_DEFAULT_HEADER_TIMEOUT_MS;
    if (!server->limits.conn_recv_budget)
        server->limits.conn_recv_budget = H2_DEFAULT_CONN_RECV_BUDGET;
    if (!server->limits.server_recv_budget)
        server->limits.server_recv_budget = H2_DEFAULT_SERVER_RECV_BUDGET;
    limits = &server->limits;
    server->idle_timeout.tv_sec = limits->idle_timeout_ms / 1000;
    server->idle_timeout.tv_usec = (limits->idle_timeout_ms % 1000) * 1000;
    server->header_timeout.tv_sec = limits->header_timeout_ms / 1000;
    server->header_timeout.tv_usec = (limits->header_timeout_ms % 1000) * 1000;
    return server;
}

static void listener_free(struct h2_listener *listener)
{
    h2_sniff_free_all(listener);
    if (listener->evlistener)
        evconnlistener_free(listener->evlistener);
    if (listener->accept_pause)
        event_free(listener->accept_pause);
    if (listener->ssl_ctx)
        SSL_CTX_free(listener->ssl_ctx);
    free(listener);
}

void h2_server_free(struct h2_server *server)
{
    if (!server)
        return;
    while (!list_is_empty(&server->conns))
        h2_conn_free(list_entry(list_first(&server->conns), struct h2_conn, link));
    while (server->listeners) {
        struct h2_listener *listener = server->listeners;
        server->listeners = listener->next;
        listener_free(listener);
    }
    free(server);
}

struct h2_listener *h2_listen(struct h2_server *server, const char *name, const char *host_port,
                              const struct h2_tls_config *tls, const struct h2_handler *handler,
                              void *listener_data, char *err, size_t err_size)
{
    struct addrinfo *res = NULL;
    struct h2_listener *listener;

    if (hostport_resolve_listen(host_port, &res, err, err_size) != 0)
        return NULL;
    listener = calloc(1, sizeof(*listener));
    if (!listener) {
        freeaddrinfo(res);
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    list_init(&listener->sniffs);
    listener->server = server;
    snprintf(listener->name, sizeof(listener->name), "%s", name);
    listener->handler = *handler;
    listener->listener_data = listener_data;
    if (tls && tls->cert_file) {
        listener->ssl_ctx = h2_tls_context_new(tls, err, err_size);
        if (!listener->ssl_ctx)
            goto fail;
    }
    listener->accept_pause = evtimer_new(server->base, on_accept_resume, listener);
    if (!listener->accept_pause) {
        snprintf(err, err_size, "out of memory");
        goto fail;
    }
    listener->evlistener =
        evconnlistener_new_bind(server->base, on_accept, listener,
                                LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC,
                                1024, res->ai_addr, (int)res->ai_addrlen);
    if (!listener->evlistener) {
        snprintf(err, err_size, "%s: cannot listen: %s", host_port, strerror(errno));
        goto fail;
    }
    evconnlistener_set_error_cb(listener->evlistener, on_accept_error);
    hostport_format_bound(evconnlistener_get_fd(listener->evlistener), listener->address,
                          sizeof(listener->address), host_port);
    freeaddrinfo(res);
    listener->next = server->listeners;
    server->listeners = listener;
    return listener;
fail:
    freeaddrinfo(res);
    listener_free(listener);
    return NULL;
}

void h2_listener_set_fallback(struct h2_listener *listener, h2_fallback_fn fn, void *arg)
{
    listener->fallback = fn;
    listener->fallback_arg = arg;
    if (listener->ssl_ctx)
        h2_tls_offer_http1(listener->ssl_ctx);
}

void h2_listener_release(struct h2_listener *listener)
{
    listener->connection_count--;
}

const struct h2_limits *h2_server_limits(const struct h2_server *server)
{
    return &server->limits;
}

const char *h2_listener_address(const struct h2_listener *listener)
{
    return listener->address;
}

void h2_server_drain(struct h2_server *server)
{
    struct list_node *node, *next;

    server->draining = 1;
    for (struct h2_listener *l = server->listeners; l; l = l->next) {
        if (l->evlistener)
            evconnlistener_disable(l->evlistener);
        event_del(l->accept_pause);
        h2_sniff_free_all(l);
    }
    list_for_each_safe (node, next, &server->conns) {
        struct h2_conn *conn = list_entry(node, struct h2_conn, link);
        nghttp2_submit_goaway(conn->session, NGHTTP2_FLAG_NONE,
                              nghttp2_session_get_last_proc_stream_id(conn->session),
                              NGHTTP2_NO_ERROR, NULL, 0);
        h2_conn_flush(conn);
    }
}

size_t h2_server_connection_count(const struct h2_server *server)
{
    return (size_t)server->stats.connections_open;
}

const struct h2_stats *h2_server_stats(const struct h2_server *server)
{
    return &server->stats;
}

void h2_server_write_metrics(const struct h2_server *server, FILE *out)
{
    const struct h2_stats *stats = &server->stats;

    fprintf(out,
            "# TYPE agenthub_connections_open gauge\n"
            "agenthub_connections_open %llu\n"
            "# TYPE agenthub_connections_total counter\n"
            "agenthub_connections_total %llu\n"
            "# TYPE agenthub_streams_open gauge\n"
            "agenthub_streams_open %llu\n"
            "# TYPE agenthub_streams_total counter\n"
            "agenthub_streams_total %llu\n"
            "# TYPE agenthub_bytes_in_total counter\n"
            "agenthub_bytes_in_total %llu\n"
            "# TYPE agenthub_bytes_out_total counter\n"
            "agenthub_bytes_out_total %llu\n",
            (unsigned long long)stats->connections_open,
            (unsigned long long)stats->connections_total, (unsigned long long)stats->streams_open,
            (unsigned long long)stats->streams_total, (unsigned long long)stats->bytes_in,
            (unsigned long long)stats->bytes_out);
    fprintf(out,
            "# HELP agenthub_recv_buffered_bytes request bytes received and not yet delivered.\n"
            "# TYPE agenthub_recv_buffered_bytes gauge\n"
            "agenthub_recv_buffered_bytes %llu\n"
            "# HELP agenthub_connections_over_limit_total connections closed at accept: over "
            "--max-connections.\n"
            "# TYPE agenthub_connections_over_limit_total counter\n"
            "agenthub_connections_over_limit_total %llu\n"
            "# HELP agenthub_idle_closes_total connections closed: no stream progress.\n"
            "# TYPE agenthub_idle_closes_total counter\n"
            "agenthub_idle_closes_total %llu\n"
            "# HELP agenthub_header_timeouts_total connections closed: handshake, preface or "
            "header block unfinished.\n"
            "# TYPE agenthub_header_timeouts_total counter\n"
            "agenthub_header_timeouts_total %llu\n"
            "# HELP agenthub_streams_refused_budget_total streams refused: a receive budget "
            "was spent.\n"
            "# TYPE agenthub_streams_refused_budget_total counter\n"
            "agenthub_streams_refused_budget_total %llu\n"
            "# HELP agenthub_accept_pauses_total accepting paused: accept() failed (out of "
            "file descriptors).\n"
            "# TYPE agenthub_accept_pauses_total counter\n"
            "agenthub_accept_pauses_total %llu\n",
            (unsigned long long)stats->recv_buffered,
            (unsigned long long)stats->connections_over_limit,
            (unsigned long long)stats->idle_closes, (unsigned long long)stats->header_timeouts,
            (unsigned long long)stats->streams_refused_budget,
            (unsigned long long)stats->accept_pauses);
}
