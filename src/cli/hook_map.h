/* hook_map: what one Claude Code hook means for agenthub (pure; no I/O).
 *
 * The hook's stdin JSON becomes a plan of operations, each a JSON object
 * (the same objects the spool file keeps, one per line):
 *   {"op":"open","provider":"claude","native_id":ID}
 *   {"op":"append","provider":"claude","native_id":ID,"record":{"type":T,"data":{...}}}
 *   {"op":"close","provider":"claude","native_id":ID}
 * and the ReportAgentState word for servers without RESOURCE_KINDS.
 * Privacy: a prompt becomes its length, a tool its name; nothing else of the
 * hook's input reaches a record unless EMIT_RAW adds provider_raw. */
#ifndef AGENTHUB_CLI_HOOK_MAP_H
#define AGENTHUB_CLI_HOOK_MAP_H

#include <jansson.h>

#define HOOK_PROVIDER "claude"
/* provider_raw carries the hook JSON only while its record fits a line. */
#define HOOK_RAW_MAX 15000

struct hook_plan {
    json_t *ops;            /* array of operations, in order */
    const char *state_word; /* fallback state ("working", ...) or NULL */
    char native_id[160];    /* the hook's session_id */
};

/* Maps HOOK (the parsed stdin object) into PLAN.  Returns 0 (PLAN->ops may be
 * empty: an unknown event), or -1 when the hook has no usable session_id or
 * memory ran out (PLAN holds nothing to free). */
int hook_map(const json_t *hook, int emit_raw, struct hook_plan *plan);

void hook_plan_free(struct hook_plan *plan);

/* Number of Unicode code points in the UTF-8 string TEXT. */
size_t hook_utf8_length(const char *text);

#endif
