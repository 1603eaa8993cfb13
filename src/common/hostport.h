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

#endif
