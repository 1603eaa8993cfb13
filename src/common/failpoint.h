/* failpoint: named faults for tests, compiled in only with FAILPOINTS=1.
 *
 * AGENTHUB_FAILPOINTS holds a comma-separated list of NAME=fault entries,
 * for example "store.binding=fault,store.membership=fault".  It is read on
 * every check, so a test may change it between calls; "@PATH" names a
 * file whose first line is the list, so a test can change the faults of a
 * server that is running. */
#ifndef AGENTHUB_FAILPOINT_H
#define AGENTHUB_FAILPOINT_H

#ifdef AGENTHUB_FAILPOINTS
/* Returns 1 when NAME is set to "fault" in AGENTHUB_FAILPOINTS, else 0. */
int failpoint_active(const char *name);
#else
#define failpoint_active(name) ((void)(name), 0)
#endif

#endif
