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

/* DATA with KEY set to VALUE when VALUE is a string (a name Claude Code
 * gives: a tool, an MCP server, an agent type); DATA as it was otherwise.
 * Returns DATA, or NULL (DATA freed) when memory ran out. */
static json_t *with_name(json_t *data, const char *key, const char *value)
{
    if (data && value && json_object_set_new(data, key, json_string(value)) != 0) {
        json_decref(data);
        return NULL;
    }
    return data;
}

/* {"tool_name": NAME} with NAME only when it is a string. */
static json_t *tool_data(const struct hook_input *hook)
{
    return with_name(json_object(), "tool_name", hook_input_string(hook, HOOK_TOOL_NAME));
}

/* TEXT when it is a plain word (lowercase letters and '_', under 32 bytes,
 * so it fits a record's kind), else NULL. */
static const char *plain_word(const char *text)
{
    size_t n = text ? strlen(text) : 0;

    if (n == 0 || n >= 32 || strspn(text, "abcdefghijklmnopqrstuvwxyz_") != n)
        return NULL;
    return text;
}

/* The member as a word fit for a record: itself when plain, "other" when
 * it is something else, NULL when it is absent.  This is how an error
 * reaches a record: as its kind, never as its text. */
static const char *member_word(const struct hook_input *hook, enum hook_member m)
{
    if (!hook_input_prefix(hook, m))
        return NULL;
    return plain_word(hook_input_string(hook, m)) ? hook_input_string(hook, m) : "other";
}

/* Notification types that mean the agent waits for the user, and the kind
 * each one's record carries (the arbiter reads these kinds as BLOCKED). */
static const struct {
    const char *type;
    const char *kind;
} blocking_types[] = {
    {.type = "permission_prompt", .kind = "permission"},
    {.type = "elicitation_dialog", .kind = "elicitation"},
    {.type = "elicitation_url_dialog", .kind = "elicitation_url"},
    {.type = "worker_permission_prompt", .kind = "worker_permission"},
};

/* The notification kind: one of blocking_types' kinds, idle, or the type
 * itself when it is a plain word (else "other").  Old hooks carry no
 * notification_type: the message then decides (its first
 * HOOK_INPUT_STRING_MAX bytes, when it is longer). */
static const char *notification_kind(const struct hook_input *hook)
{
    const char *type = hook_input_string(hook, HOOK_NOTIFICATION_TYPE);
    const char *message = hook_input_prefix(hook, HOOK_MESSAGE);

    if (!type && hook_input_prefix(hook, HOOK_NOTIFICATION_TYPE))
        return "other"; /* too long to keep, or with a U+0000: no plain word */
    if (type) {
        for (size_t i = 0; i < sizeof(blocking_types) / sizeof(blocking_types[0]); i++) {
            if (strcmp(type, blocking_types[i].type) == 0)
                return blocking_types[i].kind;
        }
        if (strcmp(type, "idle_prompt") == 0)
            return "idle";
        return plain_word(type) ? type : "other";
    }
    if (message && strstr(message, "permission"))
        return "permission";
    if (message && strstr(message, "waiting for your input"))
        return "idle";
    return "other";
}

static int notification_blocks(const char *kind)
{
    for (size_t i = 0; i < sizeof(blocking_types) / sizeof(blocking_types[0]); i++) {
        if (strcmp(kind, blocking_types[i].kind) == 0)
            return 1;
    }
    return 0;
}

/* Appends one record of TYPE with DATA (taken; NULL: memory ran out).
 * Returns 0, or -1 when memory ran out. */
static int append(struct hook_plan *plan, const char *type, json_t *data)
{
    return add_op(plan, "append", record(type, data));
}

/* Each map_* below appends what one event means and sets the fallback
 * state word; each returns 0, or -1 when memory ran out. */

static int map_session_start(const struct hook_input *hook, struct hook_plan *plan)
{
    plan->state_word = "ready";
    if (add_op(plan, "open", NULL) != 0)
        return -1;
    return append(plan, "session_start",
                  with_name(json_object(), "source", hook_input_string(hook, HOOK_SOURCE)));
}

static int map_prompt(const struct hook_input *hook, struct hook_plan *plan)
{
    plan->state_word = "working";
    return append(
        plan, "prompt",
        json_pack("{s:I}", "length", (json_int_t)(hook->has_prompt ? hook->prompt_length : 0)));
}

static int map_tool_start(const struct hook_input *hook, struct hook_plan *plan)
{
    plan->state_word = "working";
    return append(plan, "tool_start", tool_data(hook));
}

/* A tool that finished (the arbiter reads tool_end as the end of a
 * permission wait). */
static int map_tool_end(const struct hook_input *hook, struct hook_plan *plan)
{
    plan->state_word = "working";
    return append(plan, "tool_end", tool_data(hook));
}

/* A tool that failed: its end, marked failed (the error's text is never
 * kept: it can quote the tool's input).  An interrupt (the user pressed
 * Esc) also ends the turn, and Claude Code sends no Stop for it. */
static int map_tool_failure(const struct hook_input *hook, struct hook_plan *plan)
{
    json_t *data = tool_data(hook);

    if (data && json_object_set_new(data, "failed", json_true()) != 0) {
        json_decref(data);
        data = NULL;
    }
    if (!hook->is_interrupt) {
        plan->state_word = "working";
        return append(plan, "tool_end", data);
    }
    plan->state_word = "done";
    if (data && json_object_set_new(data, "interrupted", json_true()) != 0) {
        json_decref(data);
        data = NULL;
    }
    if (append(plan, "tool_end", data) != 0)
        return -1;
    return append(plan, "stop", json_pack("{s:b}", "interrupted", 1));
}

/* A tool the permission check refused without asking: the agent goes on. */
static int map_permission_denied(const struct hook_input *hook, struct hook_plan *plan)
{
    json_t *data = tool_data(hook);

    plan->state_word = "working";
    if (data && json_object_set_new(data, "denied", json_true()) != 0) {
        json_decref(data);
        data = NULL;
    }
    return append(plan, "tool_end", data);
}

static int map_permission_request(const struct hook_input *hook, struct hook_plan *plan)
{
    plan->state_word = "blocked";
    return append(plan, "ask", tool_data(hook));
}

static int map_notification(const struct hook_input *hook, struct hook_plan *plan)
{
    const char *kind = notification_kind(hook);

    if (notification_blocks(kind))
        plan->state_word = "blocked";
    else if (strcmp(kind, "idle") == 0)
        plan->state_word = "done"; /* idle is the screen detector's word */
    return append(plan, "notification", json_pack("{s:s}", "kind", kind));
}

static int map_stop(const struct hook_input *hook, struct hook_plan *plan)
{
    (void)hook;
    plan->state_word = "done";
    return append(plan, "stop", json_object());
}

/* The turn ended on an API error, instead of Stop: an end all the same,
 * with the error's kind (rate_limit, server_error, ...). */
static int map_stop_failure(const struct hook_input *hook, struct hook_plan *plan)
{
    plan->state_word = "done";
    return append(plan, "stop", with_name(json_object(), "error", member_word(hook, HOOK_ERROR)));
}

/* An MCP server asks the user for input: a wait, as a permission is. */
static int map_elicitation(const struct hook_input *hook, struct hook_plan *plan)
{
    plan->state_word = "blocked";
    return append(
        plan, "ask",
        with_name(json_object(), "mcp_server_name", hook_input_string(hook, HOOK_MCP_SERVER_NAME)));
}

/* The user answered (accepted, declined or cancelled) an elicitation: the
 * MCP tool, and with it the agent, goes on. */
static int map_elicitation_result(const struct hook_input *hook, struct hook_plan *plan)
{
    json_t *data = json_pack("{s:s}", "kind", "elicitation_result");

    plan->state_word = "working";
    data = with_name(data, "mcp_server_name", hook_input_string(hook, HOOK_MCP_SERVER_NAME));
    return append(plan, "notification", with_name(data, "action", member_word(hook, HOOK_ACTION)));
}

/* A compaction works for a while with no tool and no prompt.  Whether it
 * ends the turn depends on its trigger, which only Claude Code's hooks
 * know, so the shim says it with a state record: working while it runs; a
 * manual one (/compact) ends with the agent waiting for a prompt, done; an
 * automatic one is part of a turn that goes on. */
static int map_compact(const struct hook_input *hook, struct hook_plan *plan, const char *kind)
{
    const char *trigger = member_word(hook, HOOK_TRIGGER);
    int before = strcmp(kind, "compact") == 0;
    const char *state = before                                      ? "working"
                        : trigger && strcmp(trigger, "manual") == 0 ? "done"
                                                                    : NULL;

    plan->state_word = state;
    if (append(plan, "notification",
               with_name(json_pack("{s:s}", "kind", kind), "trigger", trigger)) != 0)
        return -1;
    return state ? append(plan, "state", json_pack("{s:s}", "state", state)) : 0;
}

static int map_pre_compact(const struct hook_input *hook, struct hook_plan *plan)
{
    return map_compact(hook, plan, "compact");
}

static int map_post_compact(const struct hook_input *hook, struct hook_plan *plan)
{
    return map_compact(hook, plan, "compacted");
}

/* Subagents start and stop inside the agent's turn: worth a line in the
 * log, no change of state (SubagentStop is not the agent's Stop). */
static int map_subagent(const struct hook_input *hook, struct hook_plan *plan, const char *kind)
{
    return append(plan, "notification",
                  with_name(json_pack("{s:s}", "kind", kind), "agent_type",
                            hook_input_string(hook, HOOK_AGENT_TYPE)));
}

static int map_subagent_start(const struct hook_input *hook, struct hook_plan *plan)
{
    return map_subagent(hook, plan, "subagent_start");
}

static int map_subagent_stop(const struct hook_input *hook, struct hook_plan *plan)
{
    return map_subagent(hook, plan, "subagent_stop");
}

static int map_session_end(const struct hook_input *hook, struct hook_plan *plan)
{
    plan->state_word = "stopped";
    return append(plan, "session_end",
                  with_name(json_object(), "reason", hook_input_string(hook, HOOK_REASON)));
}

/* The events the shim maps; every other event is ignored (deploy/claude/
 * README.md says why for each one Claude Code defines). */
static const struct {
    const char *event;
    int (*map)(const struct hook_input *hook, struct hook_plan *plan);
} event_maps[] = {
    {.event = "SessionStart", .map = map_session_start},
    {.event = "UserPromptSubmit", .map = map_prompt},
    {.event = "PreToolUse", .map = map_tool_start},
    {.event = "PostToolUse", .map = map_tool_end},
    {.event = "PostToolUseFailure", .map = map_tool_failure},
    {.event = "PermissionRequest", .map = map_permission_request},
    {.event = "PermissionDenied", .map = map_permission_denied},
    {.event = "Notification", .map = map_notification},
    {.event = "Elicitation", .map = map_elicitation},
    {.event = "ElicitationResult", .map = map_elicitation_result},
    {.event = "PreCompact", .map = map_pre_compact},
    {.event = "PostCompact", .map = map_post_compact},
    {.event = "SubagentStart", .map = map_subagent_start},
    {.event = "SubagentStop", .map = map_subagent_stop},
    {.event = "Stop", .map = map_stop},
    {.event = "StopFailure", .map = map_stop_failure},
    {.event = "SessionEnd", .map = map_session_end},
};

static int map_event(const struct hook_input *hook, const char *event, struct hook_plan *plan)
{
    for (size_t i = 0; i < sizeof(event_maps) / sizeof(event_maps[0]); i++) {
        if (strcmp(event, event_maps[i].event) == 0)
            return event_maps[i].map(hook, plan);
    }
    return 0; /* an event this shim does not map: ignored */
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

/* Puts the provider_raw record before the event's own records (after an
 * open): a session_end ends the session's panes, and the raw hook should
 * reach them too.  Returns 0, or -1 when memory ran out. */
static int add_raw(struct hook_plan *plan, const struct hook_input *hook, const char *event)
{
    const char *first = json_string_value(json_object_get(json_array_get(plan->ops, 0), "op"));
    size_t at = first && strcmp(first, "open") == 0 ? 1 : 0;
    size_t last;

    if (add_op(plan, "append", record("provider_raw", raw_data(hook, event))) != 0)
        return -1;
    last = json_array_size(plan->ops) - 1;
    if (at == last)
        return 0;
    if (json_array_insert(plan->ops, at, json_array_get(plan->ops, last)) != 0)
        return -1;
    return json_array_remove(plan->ops, last + 1);
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
    if (emit_raw && json_array_size(plan->ops) > 0 && add_raw(plan, hook, event) != 0)
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
