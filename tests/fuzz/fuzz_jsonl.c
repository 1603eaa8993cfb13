/* libFuzzer target for the AgentEventsJsonlV1 codec: any input either fails
 * cleanly or yields records whose rendered line reparses to the same data. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct jsonl_batch b, b2;
    char err[JSONL_ERR_SIZE];
    size_t i;

    if (jsonl_parse_batch(data, size, &b, err) != JSONL_OK) {
        if (b.count != 0 || err[0] == '\0')
            abort();
        return 0;
    }
    for (i = 0; i < b.count; i++) {
        const struct jsonl_record *r = &b.records[i];
        size_t cap = r->data_len + 128;
        char *line = malloc(cap);
        int n;
        if (line == NULL)
            abort();
        n = jsonl_render(i + 1, 1700000000000, r->type, r->data_json, r->data_len, line, cap);
        if (n < 0 || (size_t)n >= cap)
            abort();
        /* Rendering adds seq and ts_ms, which may push a line past the limit. */
        if ((size_t)n > JSONL_MAX_LINE) {
            free(line);
            continue;
        }
        if (jsonl_parse_batch(line, (size_t)n, &b2, err) != JSONL_OK || b2.count != 1 ||
            b2.records[0].type != r->type || b2.records[0].data_len != r->data_len ||
            memcmp(b2.records[0].data_json, r->data_json, r->data_len) != 0)
            abort();
        jsonl_batch_free(&b2);
        free(line);
    }
    jsonl_batch_free(&b);
    return 0;
}
