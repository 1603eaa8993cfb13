/* web: the pane page's responder.  Answers plain HTTP GET and HEAD requests
 * from a table of files embedded in the program at build time (web/dist,
 * made into a C table by tools/embed_web.sh), with the page's security and
 * caching headers.
 *
 * It knows nothing of the transport: the wiring hands it a request's
 * method, path and If-None-Match and writes the answer it gets back on
 * whatever carries the request (HTTP/2 or HTTP/1.1).  It sits on common
 * and uses nothing else.
 *
 * Headers on every answer: Content-Security-Policy default-src 'self' (the
 * page has no inline script or style), X-Content-Type-Options nosniff,
 * Referrer-Policy no-referrer.  Files whose name carries their content hash
 * (app-<16 hex>.js) are cached for a year, immutable; the others (the page
 * itself) are revalidated every time (no-cache) against a strong ETag made
 * from their content hash, and If-None-Match that matches it answers 304. */
#ifndef AGENTHUB_WEB_H
#define AGENTHUB_WEB_H

#include <stddef.h>

/* One embedded file.  PATH is the request path it answers ("/" for the
 * page); ETAG is quoted ("\"...\""). */
struct web_asset {
    const char *path;
    const char *content_type;
    const unsigned char *data;
    size_t len;
    const char *etag;
    int immutable; /* its name carries its content hash */
};

struct web_site {
    const struct web_asset *assets;
    size_t count;
};

struct web_header {
    const char *name; /* lowercase */
    const char *value;
};

#define WEB_MAX_HEADERS 10

/* An answer.  The strings point into the site's table, static storage or
 * the response itself: it is valid as long as both are. */
struct web_response {
    int status;         /* 200, 304, 404, 405 */
    const char *reason; /* "OK", ... for HTTP/1.1's status line */
    struct web_header headers[WEB_MAX_HEADERS];
    size_t header_count;
    /* The body to send: NULL for HEAD and 304 (content-length still says
     * what GET would send). */
    const unsigned char *body;
    size_t body_len;
    char length_buf[24];
};

/* The Content-Security-Policy every answer carries. */
#define WEB_CSP "default-src 'self'"

/* Answers METHOD PATH (the request target: a query string is ignored) for
 * SITE.  IF_NONE_MATCH is the request's If-None-Match, or NULL.  Never
 * fails: anything it cannot serve is 404 (unknown path) or 405 (a method
 * other than GET and HEAD, with Allow). */
void web_respond(const struct web_site *site, const char *method, const char *path,
                 const char *if_none_match, struct web_response *out);

/* 1 when the If-None-Match value LIST names ETAG (weak comparison, as
 * RFC 9110 says for If-None-Match; "*" matches any), else 0.  A malformed
 * list matches nothing. */
int web_etag_matches(const char *list, const char *etag);

/* The embedded page of this build (tools/embed_web.sh), an empty site when
 * the program was built without one. */
extern const struct web_site web_embedded_site;

#endif
