/* hostport: HOST:PORT splitting shared by h2, the gRPC client and the
 * metrics listener, and the listeners' address resolution and naming. */
#include "common/hostport.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

int hostport_split(const char *host_port, char *host, size_t host_size, char *port,
                   size_t port_size)
{
    const char *colon;
    const char *host_start = host_port;
    size_t host_len, port_len;

    if (host_port[0] == '[') {
        const char *close = strchr(host_port, ']');
        if (!close || close[1] != ':')
            return -1;
        host_start = host_port + 1;
        host_len = (size_t)(close - host_start);
        colon = close + 1;
    } else {
        colon = strrchr(host_port, ':');
        if (!colon)
            return -1;
        host_len = (size_t)(colon - host_port);
    }
    port_len = strlen(colon + 1);
    if (host_len >= host_size || port_len == 0 || port_len >= port_size)
        return -1;
    memcpy(host, host_start, host_len);
    host[host_len] = '\0';
    memcpy(port, colon + 1, port_len + 1);
    return 0;
}

int hostport_resolve_listen(const char *host_port, struct addrinfo **res, char *err,
                            size_t err_size)
{
    char host[64], port[16];
    struct addrinfo hints;
    int rv;

    *res = NULL;
    if (hostport_split(host_port, host, sizeof(host), port, sizeof(port)) != 0) {
        snprintf(err, err_size, "%s: expected HOST:PORT", host_port);
        return -1;
    }
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    rv = getaddrinfo(host[0] ? host : NULL, port, &hints, res);
    if (rv != 0) {
        *res = NULL;
        snprintf(err, err_size, "%s: %s", host_port, gai_strerror(rv));
        return -1;
    }
    return 0;
}

void hostport_format_bound(int fd, char *out, size_t size, const char *fallback)
{
    struct sockaddr_storage bound;
    socklen_t len = sizeof(bound);
    char ip[INET6_ADDRSTRLEN];

    memset(&bound, 0, sizeof(bound));
    if (getsockname(fd, (struct sockaddr *)&bound, &len) != 0) {
        snprintf(out, size, "%s", fallback);
    } else if (bound.ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&bound;
        inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
        snprintf(out, size, "[%s]:%u", ip, ntohs(in6->sin6_port));
    } else {
        const struct sockaddr_in *in4 = (const struct sockaddr_in *)&bound;
        inet_ntop(AF_INET, &in4->sin_addr, ip, sizeof(ip));
        snprintf(out, size, "%s:%u", ip, ntohs(in4->sin_port));
    }
}

/* The length of LIST's element at P (up to a comma or the end). */
static size_t element_len(const char *p)
{
    const char *comma = strchr(p, ',');

    return comma ? (size_t)(comma - p) : strlen(p);
}

size_t hostport_list_nth(const char *list, size_t index, char *out, size_t size)
{
    size_t count = 0, len;
    const char *p;

    if (size)
        out[0] = '\0';
    if (!list)
        return 0;
    for (p = list;; p += element_len(p) + 1) {
        count++;
        if (!p[element_len(p)])
            break;
    }
    index %= count;
    for (p = list; index; index--)
        p += element_len(p) + 1;
    len = element_len(p);
    while (len && (*p == ' ' || *p == '\t')) {
        p++;
        len--;
    }
    while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
        len--;
    if (len == 0 || len >= size)
        return 0;
    memcpy(out, p, len);
    out[len] = '\0';
    return count;
}
