/* runner_marks: how far each Runner's runner_seq is dealt with in a
 * replicated session log, as this node's copy of the log tells.
 *
 * A Runner numbers every frame of one run 1, 2, 3, ... across all its
 * sessions, and resends after the mark Enroll answers.  That mark may only
 * cover runner_seq values the log holds: a frame answered as covered and
 * not stored is lost for good.  Frames of different sessions are stored
 * independently (one subject each), so runner_seq 96 of one session can be
 * stored while 95 of another is still on its way, or lost with the node
 * that took it.  The mark is therefore the contiguous prefix of what the
 * log says is dealt with, in CLUSTER_ENTRY_RUNNER_DEALT entries on the
 * Runner's subject: written by the node that stored a frame (or dropped
 * it as a copy of one stored) once it is stored, and by the relay for a
 * runner_seq dealt with without a frame.  Every node reads the Runner's
 * subject in the same order, so every node computes the same mark.
 *
 * Runs are told apart by their nonce (drawn by the node that took the
 * plain Enroll); the current run is the last reset the log holds.  Values
 * more than a window above the prefix are not remembered: the mark then
 * stays lower, and the Runner sends those frames again, which readers
 * drop as copies. */
#ifndef AGENTHUB_HUB_RUNNER_MARKS_H
#define AGENTHUB_HUB_RUNNER_MARKS_H

#include <stddef.h>
#include <stdint.h>

struct runner_marks;

/* runner_seq values remembered above a run's prefix. */
#define RUNNER_MARKS_WINDOW 4096u

struct runner_marks *runner_marks_new(void);
void runner_marks_free(struct runner_marks *marks);

/* RUNNER_ID[0..LEN)'s runner_seq FIRST..LAST of run NONCE are dealt with.
 * Memory short: forgotten (the mark stays lower: frames are asked for
 * again, never lost). */
void runner_marks_dealt(struct runner_marks *marks, const char *runner_id, size_t len,
                        uint64_t nonce, uint64_t first, uint64_t last);
/* RUNNER_ID[0..LEN) started run NONCE: it is the current run, and the
 * generation moves on, unless NONCE is the current run already (the node
 * that made it applies it at once, then again when the log delivers it). */
void runner_marks_reset(struct runner_marks *marks, const char *runner_id, size_t len,
                        uint64_t nonce);
/* RUNNER_ID's mark in its current run (0 when none), *GENERATION the count
 * of its resets, *NONCE (may be NULL) the current run's nonce. */
uint64_t runner_marks_get(const struct runner_marks *marks, const char *runner_id,
                          uint64_t *generation, uint64_t *nonce);

#endif
