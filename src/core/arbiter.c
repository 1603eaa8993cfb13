#include "core/arbiter.h"

#include <string.h>
#include <strings.h>

static const char *const arbiter_names[ARBITER_STATE_COUNT] = {
    "unspecified", "starting",     "ready",   "working", "stopped",
    "errored",     "disconnected", "blocked", "done",    "idle",
};

const char *arbiter_state_name(enum arbiter_state s)
{
    if ((unsigned)s >= ARBITER_STATE_COUNT)
        return NULL;
    return arbiter_names[s];
}

int arbiter_state_from_word(const char *word)
{
    static const char prefix[] = "AGENT_SESSION_STATE_";
    int i;

    if (strncmp(word, prefix, sizeof(prefix) - 1) == 0) {
        word += sizeof(prefix) - 1;
        for (i = 0; i < ARBITER_STATE_COUNT; i++) {
            if (strcasecmp(word, arbiter_names[i]) == 0)
                return i;
        }
        return -1;
    }
    for (i = 0; i < ARBITER_STATE_COUNT; i++) {
        if (strcmp(word, arbiter_names[i]) == 0)
            return i;
    }
    return -1;
}

void arbiter_init(struct arbiter *a, enum arbiter_state initial)
{
    int r;

    memset(a, 0, sizeof(*a));
    for (r = 0; r < ARBITER_RANK_COUNT; r++)
        a->evidence[r] = ARBITER_NONE;
    a->initial = (uint8_t)initial;
    a->state = (uint8_t)initial;
}

enum arbiter_state arbiter_state(const struct arbiter *a)
{
    return (enum arbiter_state)a->state;
}

void arbiter_announce(struct arbiter *a, enum arbiter_state state)
{
    a->state = (uint8_t)state;
}

int arbiter_live_child(const struct arbiter *a)
{
    return a->live_child != 0;
}

static int arbiter_corrects(int s)
{
    return s == ARBITER_IDLE || s == ARBITER_STOPPED || s == ARBITER_DISCONNECTED;
}

static enum arbiter_state arbiter_derive(const struct arbiter *a)
{
    int top = -1, r, screen = a->evidence[ARBITER_RANK_SCREEN];
    int screen_counts;

    for (r = ARBITER_RANK_STREAM; r > ARBITER_RANK_SCREEN; r--) {
        if (a->evidence[r] != ARBITER_NONE) {
            top = r;
            break;
        }
    }
    screen_counts = screen != ARBITER_NONE && (!a->live_child || arbiter_corrects(screen));
    if (screen_counts && arbiter_corrects(screen) &&
        (top < 0 || a->stamp[ARBITER_RANK_SCREEN] > a->stamp[top]))
        return (enum arbiter_state)screen;
    if (top >= 0)
        return (enum arbiter_state)a->evidence[top];
    if (screen_counts)
        return (enum arbiter_state)screen;
    return (enum arbiter_state)a->initial;
}

/* What EVIDENCE says at RANK given what the rank holds: the conditional
 * values become a state or ARBITER_NONE; the others are returned as they
 * are. */
static int arbiter_resolve(const struct arbiter *a, enum arbiter_rank rank, int evidence)
{
    int had = a->evidence[rank];

    if (evidence == ARBITER_UNBLOCK)
        return had == ARBITER_BLOCKED ? ARBITER_WORKING : ARBITER_NONE;
    if (evidence == ARBITER_SETTLE)
        return had == ARBITER_WORKING || had == ARBITER_BLOCKED ? ARBITER_DONE : ARBITER_NONE;
    return evidence;
}

int arbiter_observe(struct arbiter *a, enum arbiter_rank rank, int evidence, int live_child,
                    enum arbiter_state *out)
{
    enum arbiter_state next;
    int changed;

    if ((unsigned)rank >= ARBITER_RANK_COUNT ||
        (evidence < ARBITER_SETTLE || evidence >= ARBITER_STATE_COUNT)) {
        if (out != NULL)
            *out = (enum arbiter_state)a->state;
        return 0;
    }
    if (live_child != ARBITER_LIVE_UNCHANGED)
        a->live_child = live_child ? 1 : 0;
    evidence = arbiter_resolve(a, rank, evidence);
    if (evidence == ARBITER_RETRACT) {
        a->evidence[rank] = ARBITER_NONE;
    } else if (evidence != ARBITER_NONE &&
               !(evidence == ARBITER_IDLE && rank != ARBITER_RANK_SCREEN)) {
        a->evidence[rank] = (int8_t)evidence;
        a->stamp[rank] = ++a->clock;
    }
    next = arbiter_derive(a);
    changed = next != (enum arbiter_state)a->state;
    a->state = (uint8_t)next;
    if (out != NULL)
        *out = next;
    return changed;
}

int arbiter_evidence_for_record(const struct jsonl_record *rec)
{
    int s;

    switch (rec->type) {
    case JSONL_TYPE_PROMPT:
    case JSONL_TYPE_TOOL_START:
        return ARBITER_WORKING;
    case JSONL_TYPE_TOOL_END:
        return ARBITER_UNBLOCK;
    case JSONL_TYPE_ASK:
        return ARBITER_BLOCKED;
    case JSONL_TYPE_NOTIFICATION:
        if (jsonl_record_blocks(rec))
            return ARBITER_BLOCKED;
        if (strcmp(rec->kind, "elicitation_result") == 0)
            return ARBITER_UNBLOCK;
        return strcmp(rec->kind, "idle") == 0 ? ARBITER_SETTLE : ARBITER_NONE;
    case JSONL_TYPE_STOP:
        return ARBITER_DONE;
    case JSONL_TYPE_SESSION_END:
        return ARBITER_STOPPED;
    case JSONL_TYPE_STATE:
        s = rec->state[0] ? arbiter_state_from_word(rec->state) : -1;
        return s > 0 ? s : ARBITER_NONE;
    default:
        return ARBITER_NONE;
    }
}

int arbiter_evidence_for_tool_status(int tool_status)
{
    return tool_status == ARBITER_WIRE_TOOL_IN_PROGRESS ? ARBITER_WORKING : ARBITER_NONE;
}

int arbiter_evidence_for_frame_state(int state)
{
    return state > 0 && state < ARBITER_STATE_COUNT ? state : ARBITER_NONE;
}

int arbiter_rank_from_wire(int evidence_rank)
{
    switch (evidence_rank) {
    case ARBITER_WIRE_RANK_PROCESS:
        return ARBITER_RANK_PROCESS;
    case ARBITER_WIRE_RANK_SCREEN:
        return ARBITER_RANK_SCREEN;
    default:
        return -1;
    }
}
