/* libFuzzer target for `agenthub admin import` (src/store/import.c): the
 * input is the file, imported into a fresh copy of the provisioned store.
 * A file either imports or is refused with a message; a file that imports
 * imports again with no change (the import is declarative and idempotent);
 * no refusal echoes a token the file carries. */
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

/* 1 when ERR holds a token string of length 6 or more from the file. */
static int echoes_a_token(const char *err, const json_t *node)
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
                    if (t && strlen(t) >= 6 && strstr(err, t))
                        return 1;
                }
            }
            if (echoes_a_token(err, value))
                return 1;
        }
    } else if (json_is_array(node)) {
        json_array_foreach(node, i, value) if (echoes_a_token(err, value)) return 1;
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
    } else if (err[0] == '\0' || (root && echoes_a_token(err, root))) {
        abort();
    }
    json_decref(root);
    store_close(s);
    return 0;
}
