/* arbiter: a session's derived state from evidence at four ranks (see the
 * glossary in docs/architecture.md).
 *
 * Each rank holds at most one piece of evidence (a state) and the order in
 * which it arrived.  Precedence is Stream > Hook > Process > Screen, with the
 * two exceptions for the screen detector:
 *
 *  - Idle is detector-owned.  An IDLE claim at any rank but Screen is not
 *    evidence: it is dropped (the rank keeps what it had).
 *  - Screen evidence for idle or departure (STOPPED or DISCONNECTED: the
 *    agent left the terminal) corrects stale evidence above it: when it
 *    arrived after the winning higher-rank evidence, it wins.  This is how "a
 *    shim that dies mid-turn leaves the last derived state until screen
 *    evidence for idle or departure corrects it".  Newer higher-rank evidence
 *    wins again by precedence.
 *  - While a live child exists, other Screen evidence (WORKING, BLOCKED, ...)
 *    does not count.  It is kept, and counts at Screen rank again once the
 *    live child is gone.
 *
 * Stream evidence comes from AgentEventsJsonlV1 records and from typed
 * compass.v1 frames (a tool call or update IN_PROGRESS -> WORKING; a
 * SessionFrame state sets it).  The records' rules:
 *
 *   prompt, tool_start                                  -> WORKING
 *   ask; notification of a kind that asks the user
 *     (jsonl_record_blocks)                             -> BLOCKED
 *   tool_end; notification of kind elicitation_result   -> ends BLOCKED
 *   notification of kind idle                           -> ends WORKING or BLOCKED
 *   stop                                                -> DONE
 *   session_end                                         -> STOPPED
 *   state                                               -> its data.state word
 *
 * "Ends BLOCKED" is evidence that the agent runs again: when this rank's
 * evidence is BLOCKED it becomes WORKING, otherwise nothing changes (a tool
 * that ends mid-turn says nothing new).  "Ends WORKING or BLOCKED" is the
 * agent saying it waits for a prompt: such stale evidence becomes DONE,
 * never IDLE, which stays the screen detector's.  The other record types
 * carry no evidence.  docs/protocol.md lists the same rules for producers.
 * With no evidence at all the derived state is the initial state given to
 * arbiter_init().
 *
 * Every change of the derived state is reported once; re-deriving the same
 * state reports nothing. */
#ifndef AGENTHUB_CORE_ARBITER_H
#define AGENTHUB_CORE_ARBITER_H

#include <stdint.h>

#include "core/jsonl.h"

/* compass.v1 AgentSessionState numbering. */
enum arbiter_state {
    ARBITER_UNSPECIFIED = 0,
    ARBITER_STARTING = 1,
    ARBITER_READY = 2,
    ARBITER_WORKING = 3,
    ARBITER_STOPPED = 4,
    ARBITER_ERRORED = 5,
    ARBITER_DISCONNECTED = 6,
    ARBITER_BLOCKED = 7,
    ARBITER_DONE = 8,
    ARBITER_IDLE = 9,
    ARBITER_STATE_COUNT = 10
};

/* Lowest to highest precedence. */
enum arbiter_rank {
    ARBITER_RANK_SCREEN = 0,
    ARBITER_RANK_PROCESS = 1,
    ARBITER_RANK_HOOK = 2,
    ARBITER_RANK_STREAM = 3,
    ARBITER_RANK_COUNT = 4
};

/* compass.v1 numbers core reads off the wire (enum arbiter_state is
 * AgentSessionState itself); hub/hub_wire.c ties each to proto/. */
#define ARBITER_WIRE_RANK_PROCESS     1 /* EvidenceRank */
#define ARBITER_WIRE_RANK_SCREEN      2
#define ARBITER_WIRE_TOOL_IN_PROGRESS 2 /* AgentToolCallStatus */

/* Evidence values besides a state: */
#define ARBITER_NONE    (-1) /* nothing to observe (a no-op) */
#define ARBITER_RETRACT (-2) /* withdraw this rank's evidence */
#define ARBITER_UNBLOCK (-3) /* this rank's BLOCKED becomes WORKING */
#define ARBITER_SETTLE  (-4) /* this rank's WORKING or BLOCKED becomes DONE */

/* live_child argument of arbiter_observe(): keep the current flag. */
#define ARBITER_LIVE_UNCHANGED (-1)

struct arbiter {
    int8_t evidence[ARBITER_RANK_COUNT]; /* a state, or ARBITER_NONE */
    uint32_t stamp[ARBITER_RANK_COUNT];  /* arrival order of evidence */
    uint32_t clock;
    uint8_t live_child;
    uint8_t initial;
    uint8_t state; /* last derived state */
};

/* Starts with no evidence, no live child, derived state INITIAL. */
void arbiter_init(struct arbiter *a, enum arbiter_state initial);

/* Records EVIDENCE (a state, ARBITER_RETRACT, ARBITER_UNBLOCK, ARBITER_SETTLE
 * or ARBITER_NONE) at RANK and,
 * unless LIVE_CHILD is ARBITER_LIVE_UNCHANGED, sets the live-child flag
 * (0/1), then re-derives.  Returns 1 when the derived state changed, else 0;
 * *OUT (may be NULL) gets the derived state either way.  Out-of-range ranks or
 * states are ignored (return 0). */
int arbiter_observe(struct arbiter *a, enum arbiter_rank rank, int evidence, int live_child,
                    enum arbiter_state *out);

enum arbiter_state arbiter_state(const struct arbiter *a);

/* Makes STATE the reported state without evidence (a transport fact such as
 * DISCONNECTED), so the next evidence that derives another state counts as
 * a change.  The evidence itself is kept. */
void arbiter_announce(struct arbiter *a, enum arbiter_state state);

/* 1 when the agent has a live child process, else 0. */
int arbiter_live_child(const struct arbiter *a);

/* The Stream evidence a parsed record carries (the table above): a state,
 * ARBITER_UNBLOCK, ARBITER_SETTLE or ARBITER_NONE. */
int arbiter_evidence_for_record(const struct jsonl_record *rec);
/* The Stream evidence of a typed tool call (compass.v1 AgentToolCallStatus):
 * ARBITER_WORKING for IN_PROGRESS (2), else ARBITER_NONE. */
int arbiter_evidence_for_tool_status(int tool_status);
/* The Stream evidence of a SessionFrame state: the state when it is a known
 * non-UNSPECIFIED value, else ARBITER_NONE. */
int arbiter_evidence_for_frame_state(int state);

/* The rank of a ReportEvidence EvidenceRank wire value (PROCESS 1, SCREEN
 * 2), or -1 for UNSPECIFIED and unknown values. */
int arbiter_rank_from_wire(int evidence_rank);

/* Maps a state word ("working", "blocked", "done", "idle", "starting",
 * "ready", "stopped", "errored", "disconnected"; also the compass.v1 enum
 * names "AGENT_SESSION_STATE_WORKING" ...) to a state, or -1. */
int arbiter_state_from_word(const char *word);
/* "working" ...; "unspecified" for 0; NULL when out of range. */
const char *arbiter_state_name(enum arbiter_state s);

#endif
