/* h2_sniff: a plaintext listener with a fallback serves HTTP/2 and another
 * protocol (HTTP/1.1) on one port.  Each accepted socket is peeked at with
 * MSG_PEEK, so the bytes stay in the kernel for whoever takes the socket:
 * a client whose first bytes are the HTTP/2 preface's ("PRI * HTTP/2.0")
 * becomes an h2 connection, any other goes to the fallback. */
#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "h2/h2.h"
#include "h2/h2_internal.h"

static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/* Bytes of the preface that settle it: no HTTP/1.1 method is "PRI". */
#define SNIFF_DECISIVE 3
/* A client that sent fewer bytes than that is peeked at again this soon:
 * the bytes stay readable, so waiting on readability would spin. */
#define SNIFF_RETRY_MS 10

struct h2_sniff {
    struct h2_listener *listener;
    evutil_socket_t fd;
    struct event *readable;
    struct event *retry;
    struct event *deadline;
    struct list_node link; /* on its listener's sniffs */
};

static void sniff_unlink_free(struct h2_sniff *sniff)
{
    list_remove(&sniff->link);
    if (sniff->readable)
        event_free(sniff->readable);
    if (sniff->retry)
        event_free(sniff->retry);
    if (sniff->deadline)
        event_free(sniff->deadline);
    free(sniff);
}

/* Gives up on the socket: closed, and no longer counted. */
static void sniff_close(struct h2_sniff *sniff)
{
    sniff->listener->connection_count--;
    evutil_closesocket(sniff->fd);
    sniff_unlink_free(sniff);
}

static void sniff_peek(struct h2_sniff *sniff)
{
    struct h2_listener *listener = sniff->listener;
    evutil_socket_t fd = sniff->fd;
    char buf[sizeof(preface) - 1];
    ssize_t n = recv(fd, buf, sizeof(buf), MSG_PEEK);

    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n <= 0) {
        sniff_close(sniff);
        return;
    }
    if (memcmp(buf, preface, (size_t)n) != 0) {
        sniff_unlink_free(sniff);
        listener->fallback(listener->fallback_arg, listener, fd, NULL);
        return;
    }
    if (n >= SNIFF_DECISIVE) {
        sniff_unlink_free(sniff);
        listener->connection_count--; /* h2_conn_accept counts it again */
        h2_conn_accept(listener, fd);
        return;
    }
    struct timeval tv = {0, SNIFF_RETRY_MS * 1000};
    event_del(sniff->readable);
    event_add(sniff->retry, &tv);
}

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
    sniff_peek(arg);
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    struct h2_sniff *sniff = arg;

    event_add(sniff->readable, NULL);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    struct h2_sniff *sniff = arg;

    sniff->listener->server->stats.header_timeouts++;
    sniff_close(sniff);
}

void h2_sniff_start(struct h2_listener *listener, evutil_socket_t fd)
{
    struct h2_server *server = listener->server;
    struct h2_sniff *sniff = calloc(1, sizeof(*sniff));

    if (!sniff) {
        listener->connection_count--;
        evutil_closesocket(fd);
        return;
    }
    sniff->listener = listener;
    sniff->fd = fd;
    list_insert_head(&listener->sniffs, &sniff->link);
    evutil_make_socket_nonblocking(fd);
    sniff->readable = event_new(server->base, fd, EV_READ | EV_PERSIST, on_readable, sniff);
    sniff->retry = evtimer_new(server->base, on_retry, sniff);
    sniff->deadline = evtimer_new(server->base, on_deadline, sniff);
    if (!sniff->readable || !sniff->retry || !sniff->deadline) {
        sniff_close(sniff);
        return;
    }
    event_add(sniff->readable, NULL);
    event_add(sniff->deadline, &server->header_timeout);
}

void h2_sniff_free_all(struct h2_listener *listener)
{
    struct list_node *node, *next;

    list_for_each_safe (node, next, &listener->sniffs) {
        sniff_close(list_entry(node, struct h2_sniff, link));
    }
}
