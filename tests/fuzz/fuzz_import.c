/* libFuzzer target for `agenthub admin import` (src/store/import.c): the
 * input is the file, imported into a fresh copy of the provisioned store.
 * A file either imports or is refused with a message; a file that imports
 * imports again with no change (the import is declarative and idempotent);
 * no refusal echoes a token the file carries (unless the same text is also
 * a key or another string of the file, which a message may name). */
#include <fcntl.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "store_template.h"
#include "store/import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static char path[200];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    log_setup("fuzz", LOG_LEVEL_ERROR + 1);
    store_template_init();
    snprintf(path, sizeof(path), "%s/import.json", store_template_dir());
    return 0;
}

/* 1 when TEXT occurs in a key, or in a string that is not a token, of
 * NODE: a message quoting that may show it. */
static int named_elsewhere(const char *text, const json_t *node, int in_tokens)
{
    const char *key;
    json_t *value;
    size_t i;

    if (json_is_string(node))
        return !in_tokens && strstr(json_string_value(node), text) != NULL;
    if (json_is_object(node)) {
        json_object_foreach((json_t *)node, key, value)
        {
            if (strstr(key, text) ||
                named_elsewhere(text, value, strcmp(key, "tokens") == 0 && json_is_array(value)))
                return 1;
        }
    } else if (json_is_array(node)) {
        json_array_foreach(node, i, value) if (named_elsewhere(text, value, in_tokens)) return 1;
    }
    return 0;
}

/* 1 when ERR holds a token (6 bytes or more) of ROOT, found below NODE. */
static int echoes_a_token(const char *err, const json_t *root, const json_t *node)
{
    const char *key;
    json_t *value;
    size_t i;

    if (json_is_object(node)) {
        json_object_foreach((json_t *)node, key, value)
        {
            if (strcmp(key, "tokens") == 0 && json_is_array(value)) {
                json_t *token;
                json_array_foreach(value, i, token)
                {
                    const char *t = json_string_value(token);
                    if (t && strlen(t) >= 6 && strstr(err, t) && !named_elsewhere(t, root, 0))
                        return 1;
                }
            }
            if (echoes_a_token(err, root, value))
                return 1;
        }
    } else if (json_is_array(node)) {
        json_array_foreach(node, i, value) if (echoes_a_token(err, root, value)) return 1;
    }
    return 0;
}

/* For a file that is not JSON: 1 when ERR (after its "PATH:" prefix) holds
 * a quoted string of 6 bytes or more from the list after a "tokens" key in
 * the raw text, up to that list's first ']'. */
static int echoes_a_raw_token(const char *err, const uint8_t *data, size_t size)
{
    static const char key[] = "\"tokens\"";
    const uint8_t *end = data + size, *p = data;
    size_t path_len = strlen(path);

    if (strncmp(err, path, path_len) == 0)
        err += path_len;
    while ((p = memmem(p, (size_t)(end - p), key, sizeof(key) - 1)) != NULL) {
        const uint8_t *q = p + sizeof(key) - 1;
        const uint8_t *list_end = memchr(q, ']', (size_t)(end - q));
        if (!list_end)
            list_end = end;
        while (q < list_end) {
            const uint8_t *open = memchr(q, '"', (size_t)(list_end - q)), *close;
            if (!open)
                break;
            for (close = open + 1; close < list_end && *close != '"'; close++)
                if (*close == '\\' && close + 1 < list_end)
                    close++;
            if (close - open - 1 >= 6 &&
                memmem(err, strlen(err), open + 1, (size_t)(close - open - 1)))
                return 1;
            q = close + 1;
        }
        p += sizeof(key) - 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct store *s = store_template_fresh();
    char err[512] = "";
    int changes = -1, rv;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    json_t *root;

    if (fd < 0 || write(fd, data, size) != (ssize_t)size)
        abort();
    close(fd);
    rv = store_import_file(s, path, &changes, err, sizeof(err));
    root = json_loadb((const char *)data, size, 0, NULL);
    if (rv == STORE_OK) {
        if (changes < 0)
            abort();
        changes = -1;
        if (store_import_file(s, path, &changes, err, sizeof(err)) != STORE_OK || changes != 0)
            abort();
    } else if (err[0] == '\0' || (root && echoes_a_token(err, root, root)) ||
               (!root && echoes_a_raw_token(err, data, size))) {
        abort();
    }
    json_decref(root);
    store_close(s);
    return 0;
}
