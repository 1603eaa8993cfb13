/* runner_marks: the highest runner_seq of each Runner whose frames a
 * replicated session log holds, as this node's copy of it tells.
 *
 * A cluster node learns every node's frames from the log, each tagged with
 * its Runner and runner_seq, so whichever node a Runner enrolls with next
 * answers from the log's mark: frames the log holds are not taken twice,
 * and frames it never got are asked for again.  A Runner's new run (a
 * plain Enroll, on any node) resets its mark and bumps its generation. */
#ifndef AGENTHUB_HUB_RUNNER_MARKS_H
#define AGENTHUB_HUB_RUNNER_MARKS_H

#include <stddef.h>
#include <stdint.h>

struct runner_marks;

struct runner_marks *runner_marks_new(void);
void runner_marks_free(struct runner_marks *marks);

/* RUNNER_ID[0..LEN)'s frame SEQ is in the log.  Memory short: forgotten
 * (the mark stays lower: frames are asked for again, never lost). */
void runner_marks_see(struct runner_marks *marks, const char *runner_id, size_t len, uint64_t seq);
/* RUNNER_ID[0..LEN) started a new run: mark 0, generation + 1, unless
 * the reset NONCE was applied already (the node that made it applies it
 * at once, then again when the log delivers it). */
void runner_marks_reset(struct runner_marks *marks, const char *runner_id, size_t len,
                        uint64_t nonce);
/* RUNNER_ID's mark (0 when none), *GENERATION its generation. */
uint64_t runner_marks_get(const struct runner_marks *marks, const char *runner_id,
                          uint64_t *generation);

#endif
