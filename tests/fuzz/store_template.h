/* store_template: a fresh provisioned store for every fuzz input, fast.
 *
 * The demo world (tests/unit/store_fixture.c) is imported once into a
 * template database kept in memory; each input gets a copy of it written
 * to a file on tmpfs (the store needs WAL, so not ":memory:"). */
#ifndef AGENTHUB_FUZZ_STORE_TEMPLATE_H
#define AGENTHUB_FUZZ_STORE_TEMPLATE_H

#include "store/store.h"

/* Makes the template; aborts on failure.  Call once. */
void store_template_init(void);

/* Opens a fresh copy of the template (close it with store_close).  Aborts
 * on failure. */
struct store *store_template_fresh(void);

/* A directory private to this process, for scratch files; removed with
 * everything in it when the process exits normally. */
const char *store_template_dir(void);

#endif
