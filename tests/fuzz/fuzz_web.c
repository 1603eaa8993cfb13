/* libFuzzer target for the pane page's responder (src/web/web.c): any
 * method, path and If-None-Match get a well-formed answer.  The input is
 * three fields separated by NUL bytes: method, path, If-None-Match (absent
 * when there is no second NUL). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "web/web.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const unsigned char page[] = "<!doctype html>";
static const struct web_asset assets[] = {
    {"/", "text/html; charset=utf-8", page, sizeof(page) - 1, "\"0123abcd\"", 0},
    {"/app-0123456789abcdef.js", "text/javascript; charset=utf-8", page, 3, "\"feed\"", 1},
};
static const struct web_site site = {assets, 2};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size + 1);
    const char *fields[3] = {"", NULL, NULL};
    struct web_response r;
    size_t n = 1;

    if (!copy)
        return 0;
    memcpy(copy, data, size);
    copy[size] = '\0';
    fields[0] = copy;
    for (size_t i = 0; i < size && n < 3; i++)
        if (copy[i] == '\0')
            fields[n++] = copy + i + 1;
    web_respond(&site, fields[0], fields[1], fields[2], &r);
    if (r.status != 200 && r.status != 304 && r.status != 404 && r.status != 405)
        abort();
    if (r.header_count > WEB_MAX_HEADERS || (r.body == NULL) != (r.body_len == 0))
        abort();
    if (r.status == 200 && r.body && r.body_len != assets[0].len && r.body_len != assets[1].len)
        abort();
    free(copy);
    return 0;
}
