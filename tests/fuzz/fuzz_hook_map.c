/* libFuzzer target for the hook shim's stdin reader and mapping
 * (src/cli/hook_input.c, src/cli/hook_map.c): the reader, fed the stdin in
 * random chunks, keeps exactly what jansson reads of it (or refuses what
 * jansson refuses: hook_input_oracle.h); a hook it accepts either maps
 * cleanly or is refused, and every record a plan appends is one line the
 * server's AgentEventsJsonlV1 codec accepts (a record it would refuse is an
 * event the hook loses).  The first byte's low bit chooses
 * AGENTHUB_EMIT_RAW, the rest of it seeds the chunking; the other bytes are
 * the hook's stdin. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/hook_input.h"
#include "cli/hook_map.h"
#include "core/jsonl.h"
#include "hook_input_oracle.h"

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

/* Feeds TEXT (LEN bytes) to IN in chunks whose sizes SEED picks: from one
 * byte to the whole input.  Returns hook_input_end's answer. */
static int read_chunked(struct hook_input *in, const char *text, size_t len, uint32_t seed)
{
    uint32_t s = seed * 2654435761u + (uint32_t)len + 1;
    size_t at = 0;

    hook_input_init(in);
    while (at < len) {
        size_t n;
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        n = (seed & 0x40) ? len - at : 1 + s % ((seed & 0x20) ? 4 : 97);
        if (n > len - at)
            n = len - at;
        if (hook_input_feed(in, text + at, n) != 0 && (s & 1))
            break; /* a caller may stop reading once it is no hook */
        at += n;
    }
    if (at < len)
        hook_input_feed(in, text + at, len - at); /* the rest, refused too */
    return hook_input_end(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data + 1;
    struct hook_input in;
    struct hook_plan plan;
    const char *why;
    size_t i;
    int ok;

    if (size == 0)
        return 0;
    ok = read_chunked(&in, text, size - 1, data[0] >> 1) == 0;
    why = oracle_check(text, size - 1, &in, ok);
    if (why) {
        fprintf(stderr, "hook_input differs from jansson: %s\n", why);
        abort();
    }
    if (ok && hook_map(&in, data[0] & 1, &plan) == 0) {
        if (!json_is_array(plan.ops) || plan.native_id[0] == '\0')
            abort();
        for (i = 0; i < json_array_size(plan.ops); i++)
            check_op(&plan, json_array_get(plan.ops, i));
        hook_plan_free(&plan);
    }
    hook_input_free(&in);
    return 0;
}
