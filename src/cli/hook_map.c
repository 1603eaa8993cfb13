/* hook_map: Claude Code hook JSON -> agenthub operations (hook_map.h). */
#include "cli/hook_map.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t hook_utf8_length(const char *text)
{
    size_t n = 0;

    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        if ((*p & 0xC0) != 0x80)
            n++;
    return n;
}

static const char *string_field(const json_t *hook, const char *key)
{
    return json_string_value(json_object_get(hook, key));
}

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
static json_t *tool_data(const json_t *hook)
{
    const char *name = string_field(hook, "tool_name");

    return name ? json_pack("{s:s}", "tool_name", name) : json_object();
}

/* The notification kind: permission, elicitation, idle, or the type itself
 * when it is a plain word (else "other").  Old hooks carry no
 * notification_type: the message then decides. */
static const char *notification_kind(const json_t *hook)
{
    const char *type = string_field(hook, "notification_type");
    const char *message = string_field(hook, "message");

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

static int map_event(const json_t *hook, const char *event, struct hook_plan *plan)
{
    const char *text;

    if (strcmp(event, "SessionStart") == 0) {
        text = string_field(hook, "source");
        plan->state_word = "ready";
        if (add_op(plan, "open", NULL) != 0)
            return -1;
        return add_op(
            plan, "append",
            record("session_start", text ? json_pack("{s:s}", "source", text) : json_object()));
    }
    if (strcmp(event, "UserPromptSubmit") == 0) {
        text = string_field(hook, "prompt");
        plan->state_word = "working";
        return add_op(plan, "append",
                      record("prompt", json_pack("{s:I}", "length",
                                                 (json_int_t)(text ? hook_utf8_length(text) : 0))));
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
        text = string_field(hook, "reason");
        plan->state_word = "stopped";
        return add_op(
            plan, "append",
            record("session_end", text ? json_pack("{s:s}", "reason", text) : json_object()));
    }
    return 0; /* an event this shim does not know: ignored */
}

int hook_map(const json_t *hook, int emit_raw, struct hook_plan *plan)
{
    const char *native_id = string_field(hook, "session_id");
    const char *event = string_field(hook, "hook_event_name");

    memset(plan, 0, sizeof(*plan));
    if (!json_is_object(hook) || !native_id || !native_id[0] ||
        strlen(native_id) >= sizeof(plan->native_id))
        return -1;
    snprintf(plan->native_id, sizeof(plan->native_id), "%s", native_id);
    plan->ops = json_array();
    if (!plan->ops)
        return -1;
    if (!event || map_event(hook, event, plan) != 0)
        goto fail_or_empty;
    if (emit_raw && json_array_size(plan->ops) > 0) {
        char *raw = json_dumps(hook, JSON_COMPACT);
        json_t *data;
        if (!raw)
            goto fail;
        data = strlen(raw) <= HOOK_RAW_MAX
                   ? json_deep_copy(hook)
                   : json_pack("{s:s, s:b, s:I}", "hook_event_name", event, "truncated", 1, "bytes",
                               (json_int_t)strlen(raw));
        free(raw);
        if (add_op(plan, "append", record("provider_raw", data)) != 0)
            goto fail;
    }
    if (event && strcmp(event, "SessionEnd") == 0 && add_op(plan, "close", NULL) != 0)
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
