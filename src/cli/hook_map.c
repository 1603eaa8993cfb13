/* hook_map: Claude Code hook JSON -> agenthub operations (hook_map.h). */
#include "cli/hook_map.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int add_op(struct hook_plan *plan, const char *op, json_t *record)
{
    json_t *o = json_pack("{s:s, s:s, s:s}", "op", op, "provider", HOOK_PROVIDER, "native_id",
                          plan->native_id);

    if (!o || (record && json_object_set_new(o, "record", record) != 0)) {
        json_decref(o);
        return -1;
    }
    if (!record && strcmp(op, "append") == 0) {
        json_decref(o);
        return -1;
    }
    return json_array_append_new(plan->ops, o);
}

static json_t *record(const char *type, json_t *data)
{
    if (!data)
        return NULL;
    return json_pack("{s:s, s:o}", "type", type, "data", data);
}

/* {"tool_name": NAME} with NAME only when it is a string. */
static json_t *tool_data(const struct hook_input *hook)
{
    const char *name = hook_input_string(hook, HOOK_TOOL_NAME);

    return name ? json_pack("{s:s}", "tool_name", name) : json_object();
}

/* The notification kind: permission, elicitation, idle, or the type itself
 * when it is a plain word (else "other").  Old hooks carry no
 * notification_type: the message then decides (its first
 * HOOK_INPUT_STRING_MAX bytes, when it is longer). */
static const char *notification_kind(const struct hook_input *hook)
{
    const char *type = hook_input_string(hook, HOOK_NOTIFICATION_TYPE);
    const char *message = hook_input_prefix(hook, HOOK_MESSAGE);

    if (!type && hook_input_prefix(hook, HOOK_NOTIFICATION_TYPE))
        return "other"; /* too long to keep, or with a U+0000: no plain word */
    if (type) {
        if (strcmp(type, "permission_prompt") == 0)
            return "permission";
        if (strcmp(type, "elicitation_dialog") == 0)
            return "elicitation";
        if (strcmp(type, "idle_prompt") == 0)
            return "idle";
        if (strlen(type) > 0 && strlen(type) < 32 &&
            strspn(type, "abcdefghijklmnopqrstuvwxyz_") == strlen(type))
            return type;
        return "other";
    }
    if (message && strstr(message, "permission"))
        return "permission";
    if (message && strstr(message, "waiting for your input"))
        return "idle";
    return "other";
}

static int map_event(const struct hook_input *hook, const char *event, struct hook_plan *plan)
{
    const char *text;

    if (strcmp(event, "SessionStart") == 0) {
        text = hook_input_string(hook, HOOK_SOURCE);
        plan->state_word = "ready";
        if (add_op(plan, "open", NULL) != 0)
            return -1;
        return add_op(
            plan, "append",
            record("session_start", text ? json_pack("{s:s}", "source", text) : json_object()));
    }
    if (strcmp(event, "UserPromptSubmit") == 0) {
        plan->state_word = "working";
        return add_op(
            plan, "append",
            record("prompt", json_pack("{s:I}", "length",
                                       (json_int_t)(hook->has_prompt ? hook->prompt_length : 0))));
    }
    if (strcmp(event, "PreToolUse") == 0) {
        plan->state_word = "working";
        return add_op(plan, "append", record("tool_start", tool_data(hook)));
    }
    if (strcmp(event, "PostToolUse") == 0) {
        plan->state_word = "working";
        return add_op(plan, "append", record("tool_end", tool_data(hook)));
    }
    if (strcmp(event, "PermissionRequest") == 0) {
        plan->state_word = "blocked";
        return add_op(plan, "append", record("ask", tool_data(hook)));
    }
    if (strcmp(event, "Notification") == 0) {
        const char *kind = notification_kind(hook);
        if (strcmp(kind, "permission") == 0 || strcmp(kind, "elicitation") == 0)
            plan->state_word = "blocked";
        else if (strcmp(kind, "idle") == 0)
            plan->state_word = "idle";
        return add_op(plan, "append", record("notification", json_pack("{s:s}", "kind", kind)));
    }
    if (strcmp(event, "Stop") == 0) {
        plan->state_word = "done";
        return add_op(plan, "append", record("stop", json_object()));
    }
    if (strcmp(event, "SessionEnd") == 0) {
        text = hook_input_string(hook, HOOK_REASON);
        plan->state_word = "stopped";
        return add_op(
            plan, "append",
            record("session_end", text ? json_pack("{s:s}", "reason", text) : json_object()));
    }
    return 0; /* an event this shim does not know: ignored */
}

/* provider_raw's data: the whole hook while its compact form is at most
 * HOOK_RAW_MAX bytes, else (or when it was too large to keep, or holds what
 * jansson cannot represent) a marker with the input's size in bytes. */
static json_t *raw_data(const struct hook_input *hook, const char *event)
{
    size_t len;
    const char *text = hook_input_raw(hook, &len);
    json_t *whole = text ? json_loadb(text, len, 0, NULL) : NULL;

    if (whole) {
        char *compact = json_dumps(whole, JSON_COMPACT);
        size_t n = compact ? strlen(compact) : HOOK_RAW_MAX + 1;
        free(compact);
        if (n <= HOOK_RAW_MAX)
            return whole;
        json_decref(whole);
    }
    return json_pack("{s:s, s:b, s:I}", "hook_event_name", event, "truncated", 1, "bytes",
                     (json_int_t)hook->bytes);
}

int hook_map(const struct hook_input *hook, int emit_raw, struct hook_plan *plan)
{
    const char *native_id = hook_input_string(hook, HOOK_SESSION_ID);
    const char *event = hook_input_string(hook, HOOK_EVENT_NAME);

    memset(plan, 0, sizeof(*plan));
    if (!native_id || !native_id[0] || strlen(native_id) >= sizeof(plan->native_id))
        return -1;
    snprintf(plan->native_id, sizeof(plan->native_id), "%s", native_id);
    plan->ops = json_array();
    if (!plan->ops)
        return -1;
    if (!event || map_event(hook, event, plan) != 0)
        goto fail_or_empty;
    if (emit_raw && json_array_size(plan->ops) > 0 &&
        add_op(plan, "append", record("provider_raw", raw_data(hook, event))) != 0)
        goto fail;
    if (strcmp(event, "SessionEnd") == 0 && add_op(plan, "close", NULL) != 0)
        goto fail;
    return 0;
fail_or_empty:
    if (!event)
        return 0;
fail:
    hook_plan_free(plan);
    return -1;
}

void hook_plan_free(struct hook_plan *plan)
{
    json_decref(plan->ops);
    plan->ops = NULL;
}
