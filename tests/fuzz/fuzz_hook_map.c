/* libFuzzer target for the hook shim's mapping (src/cli/hook_map.c): any
 * stdin either maps cleanly or is refused, and every record a plan appends
 * is one line the server's AgentEventsJsonlV1 codec accepts (a record it
 * would refuse is an event the hook loses).  The first byte chooses
 * AGENTHUB_EMIT_RAW; the rest is the hook's stdin. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/hook_map.h"
#include "core/jsonl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts unless OP is a well-formed plan operation. */
static void check_op(const struct hook_plan *plan, const json_t *op)
{
    const char *kind = json_string_value(json_object_get(op, "op"));
    const char *native_id = json_string_value(json_object_get(op, "native_id"));
    const json_t *record = json_object_get(op, "record");
    struct jsonl_batch batch;
    char err[JSONL_ERR_SIZE];
    char *line;
    size_t len;

    if (!kind || !native_id || strcmp(native_id, plan->native_id) != 0 ||
        strcmp(json_string_value(json_object_get(op, "provider")), HOOK_PROVIDER) != 0)
        abort();
    if (strcmp(kind, "append") != 0) {
        if ((strcmp(kind, "open") != 0 && strcmp(kind, "close") != 0) || record)
            abort();
        return;
    }
    line = json_dumps(record, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!line)
        abort();
    len = strlen(line);
    line[len] = '\n'; /* json_dumps leaves room: the NUL is not needed */
    if (jsonl_parse_batch(line, len + 1, &batch, err) != JSONL_OK || batch.count != 1)
        abort();
    jsonl_batch_free(&batch);
    free(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct hook_plan plan;
    json_t *hook;
    size_t i;

    if (size == 0)
        return 0;
    hook = json_loadb((const char *)data + 1, size - 1, 0, NULL);
    if (!hook)
        return 0;
    if (hook_map(hook, data[0] & 1, &plan) == 0) {
        if (!json_is_array(plan.ops) || plan.native_id[0] == '\0')
            abort();
        for (i = 0; i < json_array_size(plan.ops); i++)
            check_op(&plan, json_array_get(plan.ops, i));
        hook_plan_free(&plan);
    }
    json_decref(hook);
    return 0;
}
