/* hook_map: what one Claude Code hook means for agenthub (pure; no I/O).
 *
 * The hook's stdin JSON, as hook_input read it, becomes a plan of
 * operations, each a JSON object (the same objects the spool file keeps, one
 * per line):
 *   {"op":"open","provider":"claude","native_id":ID}
 *   {"op":"append","provider":"claude","native_id":ID,"record":{"type":T,"data":{...}}}
 *   {"op":"close","provider":"claude","native_id":ID}
 * and the ReportAgentState word for servers without RESOURCE_KINDS.
 * Privacy: a prompt becomes its length, a tool its name (an MCP server and
 * an agent type too), an error its kind word; nothing else of the hook's
 * input reaches a record unless EMIT_RAW adds provider_raw.  Which event
 * becomes which records, and why the others are ignored, is in
 * deploy/claude/README.md.  A kept
 * member that hook_input had to cut (over HOOK_INPUT_STRING_MAX bytes) is
 * left out of its record; the event is still recorded. */
#ifndef AGENTHUB_CLI_HOOK_MAP_H
#define AGENTHUB_CLI_HOOK_MAP_H

#include <jansson.h>

#include "cli/hook_input.h"

#define HOOK_PROVIDER "claude"
/* provider_raw carries the hook JSON only while its record fits a line
 * (compact, at most this many bytes); else a marker with the input's size. */
#define HOOK_RAW_MAX 15000

struct hook_plan {
    json_t *ops;            /* array of operations, in order */
    const char *state_word; /* fallback state ("working", ...) or NULL */
    char native_id[160];    /* the hook's session_id */
};

/* Maps HOOK (the stdin read whole: hook_input_end returned 0) into PLAN.
 * Returns 0 (PLAN->ops may be empty: an unknown event), or -1 when the hook
 * has no usable session_id or memory ran out (PLAN holds nothing to free). */
int hook_map(const struct hook_input *hook, int emit_raw, struct hook_plan *plan);

void hook_plan_free(struct hook_plan *plan);

#endif
