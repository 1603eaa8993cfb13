/* admin: shared pieces of `agenthub admin` (admin.c dispatches and handles
 * init, import and tokens; admin_rows.c adds, removes and lists rows). */
#ifndef AGENTHUB_CLI_ADMIN_H
#define AGENTHUB_CLI_ADMIN_H

#include <stdio.h>

#include "store/store.h"

#define ADMIN_OK    0
#define ADMIN_STORE 1 /* a store error: refused, absent, in use, fault */
#define ADMIN_USAGE 2 /* bad arguments or a bad import file */

/* Every flag any admin command takes, parsed once. */
struct admin_opts {
    const char *kind, *home_channel, *agent, *runner, *container, *owner, *provider, *native_id,
        *channel, *account, *hash;
    int admin, json, open_only, help;
    const char *pos[4]; /* positional arguments */
    int npos;
};

/* Parses ARGV[0..ARGC) into O.  Returns 0, or -1 after printing why. */
int admin_parse(int argc, char **argv, struct admin_opts *o);

/* Prints "agenthub admin: WHAT: <store_rc>" and returns the exit status
 * for store result RC (0 for STORE_OK). */
int admin_report(enum store_rc rc, const char *what);

/* add/remove/list commands for GROUP ("accounts", "channels", "members",
 * "runners", "containers", "sessions"); O->pos[0] is the verb. */
int admin_rows_main(struct store *s, const char *group, const struct admin_opts *o);

/* Usage text for GROUP, or NULL when GROUP is not a row group. */
const char *admin_rows_usage(const char *group);

#endif
