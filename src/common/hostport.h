/* hostport: the one parser of the "HOST:PORT" addresses that flags and
 * configuration give to listeners and clients. */
#ifndef AGENTHUB_HOSTPORT_H
#define AGENTHUB_HOSTPORT_H

#include <stddef.h>

/* Splits "host:port", "[v6addr]:port" or ":port" into HOST (brackets
 * removed) and PORT, both NUL-terminated.  Without brackets the last colon
 * separates, so "::1:8080" reads as host "::1".  HOST may come out empty
 * (callers that bind take that as "every address"); PORT may not.  Returns
 * 0, or -1 when the text has no port, a bracket is unclosed or not followed
 * by ':', or either part does not fit its buffer. */
int hostport_split(const char *host_port, char *host, size_t host_size, char *port,
                   size_t port_size);

/* Clients take a comma-separated list of addresses ("h1:p1,h2:p2"), the
 * nodes of one cluster, and move to the next when one fails.  Writes the
 * INDEX-th (modulo the count) into OUT, spaces around it removed, and
 * returns how many the list holds; 0 (OUT empty) when it holds none or the
 * one picked does not fit. */
size_t hostport_list_nth(const char *list, size_t index, char *out, size_t size);

struct addrinfo;

/* The address a listener binds for HOST_PORT (an empty host: every
 * address).  Returns 0 with *RES to freeaddrinfo, or -1 with the reason,
 * naming HOST_PORT, in ERR. */
int hostport_resolve_listen(const char *host_port, struct addrinfo **res, char *err,
                            size_t err_size);

/* "HOST:PORT" (an IPv6 host in brackets) of the socket FD is bound to, into
 * OUT; FALLBACK when the socket cannot say. */
void hostport_format_bound(int fd, char *out, size_t size, const char *fallback);

#endif
