/* render: pane frames and bus events as JSON objects and one-line summaries
 * (pure functions; agenthub log, events and the MCP log tool). */
#ifndef AGENTHUB_CLI_RENDER_H
#define AGENTHUB_CLI_RENDER_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "compass/v1/frames.pb-c.h"
#include "compass/v1/services.pb-c.h"

/* {"seq","ts_ms","type","data"}: a record renders as itself (its type, its
 * data object), a typed event with type = its SessionEvent field name and
 * data = its fields, a state change as type "state" with {"state":"..."}.
 * Returns a new reference, or NULL when memory ran out. */
json_t *render_frame_json(const Compass__V1__AgentSessionFrame *frame);

/* A bus event: {"seq","ts_ms","session_id","type","data","epoch"} with type
 * the payload's field name (epoch: the server boot's instance_epoch as a
 * decimal string, since it may not fit a JSON integer).  Returns a new reference, or NULL. */
json_t *render_event_json(const Compass__V1__SubscribeEventsResponse *event);

/* "HH:MM:SS.mmm  SEQ  TYPE  SUMMARY" (no newline) for a rendered object from
 * the functions above, into OUT (truncated to OUT_SIZE). */
void render_line(const json_t *object, char *out, size_t out_size);

/* The human view of a pane: consecutive thinking or assistant_text deltas of
 * one message read as one paragraph (its first frame's line header, then the
 * text of every delta as it arrives), everything else one line per frame.
 * Agent text is written with control characters other than newline and tab
 * replaced by '?', so it cannot move the terminal's cursor. */
struct render_pane {
    char kind[16];        /* type of the open paragraph; "" when none is open */
    char message_id[128]; /* its message_id: another message starts a new one */
    int hide_state;       /* skip derived "state" frames */
};

/* Writes the rendered frame OBJECT (from render_frame_json) to OUT. */
void render_pane_frame(struct render_pane *pane, const json_t *object, FILE *out);

/* Ends an open paragraph with its newline (at the end of the stream). */
void render_pane_end(struct render_pane *pane, FILE *out);

#endif
