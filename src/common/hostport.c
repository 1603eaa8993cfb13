/* hostport: HOST:PORT splitting shared by h2, the gRPC client and the
 * metrics listener. */
#include "common/hostport.h"

#include <string.h>

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
