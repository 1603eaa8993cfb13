/* web: answers GET and HEAD from the embedded page's file table. */
#include "web/web.h"

#include <stdio.h>
#include <string.h>

#define CACHE_IMMUTABLE  "public, max-age=31536000, immutable"
#define CACHE_REVALIDATE "no-cache"

static const unsigned char not_found_body[] = "not found\n";
static const unsigned char not_allowed_body[] = "only GET and HEAD are allowed here\n";

static void add_header(struct web_response *out, const char *name, const char *value)
{
    if (out->header_count < WEB_MAX_HEADERS)
        out->headers[out->header_count++] = (struct web_header){name, value};
}

/* The asset PATH (LEN bytes) names, or NULL. */
static const struct web_asset *find_asset(const struct web_site *site, const char *path, size_t len)
{
    for (size_t i = 0; i < site->count; i++) {
        const struct web_asset *a = &site->assets[i];
        if (strlen(a->path) == len && memcmp(a->path, path, len) == 0)
            return a;
    }
    return NULL;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t';
}

/* One entity tag at *P (W/ prefix and quotes included), advancing *P past
 * it.  Returns its opaque part's start and length in *TAG and *TAG_LEN (the
 * bytes between the quotes), 1 for "*", or -1 when malformed. */
static int next_etag(const char **p, const char **tag, size_t *tag_len)
{
    const char *s = *p;

    if (*s == '*') {
        *p = s + 1;
        return 1;
    }
    if (s[0] == 'W' && s[1] == '/')
        s += 2;
    if (*s != '"')
        return -1;
    s++;
    *tag = s;
    /* etagc: %x21 / %x23-7E / obs-text, so no quote and no control. */
    while (*s && *s != '"') {
        unsigned char c = (unsigned char)*s;
        if (c < 0x21 || c == 0x7f)
            return -1;
        s++;
    }
    if (*s != '"')
        return -1;
    *tag_len = (size_t)(s - *tag);
    *p = s + 1;
    return 0;
}

int web_etag_matches(const char *list, const char *etag)
{
    size_t want_len;
    const char *p = list;
    int matched = 0;

    if (!list || !etag || etag[0] != '"')
        return 0;
    want_len = strlen(etag) - 2; /* without the quotes */
    for (;;) {
        const char *tag = NULL;
        size_t tag_len = 0;
        int rv;
        while (is_space(*p) || *p == ',')
            p++;
        if (!*p)
            return matched;
        rv = next_etag(&p, &tag, &tag_len);
        if (rv < 0)
            return 0;
        if (rv == 1 || (tag_len == want_len && memcmp(tag, etag + 1, want_len) == 0))
            matched = 1;
        while (is_space(*p))
            p++;
        if (*p && *p != ',')
            return 0;
    }
}

static void set_body(struct web_response *out, const unsigned char *body, size_t len, int send)
{
    snprintf(out->length_buf, sizeof(out->length_buf), "%zu", len);
    add_header(out, "content-length", out->length_buf);
    out->body = send ? body : NULL;
    out->body_len = send ? len : 0;
}

void web_respond(const struct web_site *site, const char *method, const char *path,
                 const char *if_none_match, struct web_response *out)
{
    int head = strcmp(method, "HEAD") == 0;
    const struct web_asset *asset;

    memset(out, 0, sizeof(*out));
    add_header(out, "content-security-policy", WEB_CSP);
    add_header(out, "x-content-type-options", "nosniff");
    add_header(out, "referrer-policy", "no-referrer");
    if (!head && strcmp(method, "GET") != 0) {
        out->status = 405;
        out->reason = "Method Not Allowed";
        add_header(out, "allow", "GET, HEAD");
        add_header(out, "content-type", "text/plain; charset=utf-8");
        set_body(out, not_allowed_body, sizeof(not_allowed_body) - 1, 1);
        return;
    }
    asset = path ? find_asset(site, path, strcspn(path, "?#")) : NULL;
    if (!asset) {
        out->status = 404;
        out->reason = "Not Found";
        add_header(out, "content-type", "text/plain; charset=utf-8");
        add_header(out, "cache-control", CACHE_REVALIDATE);
        set_body(out, not_found_body, sizeof(not_found_body) - 1, !head);
        return;
    }
    add_header(out, "cache-control", asset->immutable ? CACHE_IMMUTABLE : CACHE_REVALIDATE);
    add_header(out, "etag", asset->etag);
    if (if_none_match && web_etag_matches(if_none_match, asset->etag)) {
        out->status = 304;
        out->reason = "Not Modified";
        return;
    }
    out->status = 200;
    out->reason = "OK";
    add_header(out, "content-type", asset->content_type);
    set_body(out, asset->data, asset->len, !head);
}
