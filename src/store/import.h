/* import: provisions the ownership model from a JSON document (the format
 * is docs/provisioning.md), declaratively and idempotently.
 *
 * Everything the file names is made to match it: accounts, channels,
 * runners and containers are created or updated, a channel's "members" list
 * becomes its exact membership, tokens (given in plain text) are bound by
 * their SHA-256 only, sessions are created when absent.  Rows the file does
 * not name are left alone.  A revoked token stays revoked.  The whole file
 * is one transaction: a bad file writes nothing. */
#ifndef AGENTHUB_IMPORT_H
#define AGENTHUB_IMPORT_H

#include <jansson.h>
#include <stddef.h>

#include "store/store.h"

/* Applies ROOT.  Returns STORE_OK with *CHANGES (may be NULL) set to the
 * number of rows altered (0 for a second import of the same file).  A bad
 * document is STORE_INVALID with "JSON.path: problem" in ERR, for example
 * `containers[0].agent_account: no account "x"`; a store failure is
 * STORE_FAULT (or STORE_CONFLICT under a concurrent writer). */
enum store_rc store_import_json(struct store *s, json_t *root, int *changes, char *err,
                                size_t errlen);

/* Reads and applies file PATH.  Malformed JSON is STORE_INVALID with
 * "PATH:LINE:COLUMN: reason" in ERR. */
enum store_rc store_import_file(struct store *s, const char *path, int *changes, char *err,
                                size_t errlen);

#endif
