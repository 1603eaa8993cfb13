/* server_flags: a program's flags as one table, one row per flag, and the
 * engine that reads the command line and the environment against it.
 *
 * A row says everything about its flag: its name, the type of its value
 * and where in the program's config struct the value goes (an offsetof),
 * its bounds and default, its help text, and, for the few flags a plain
 * store does not fit, a setter.  Parsing, range checks, --help and the
 * flag table in docs/configuration.md all come from the rows, so no flag
 * can skip its bounds check or go undocumented.
 *
 * Every flag but an action (--help, --version) may also come from the
 * environment: --max-connections from AGENTHUB_MAX_CONNECTIONS (the name
 * upper-cased, '-' as '_', after AGENTHUB_).  The command line wins over
 * the environment; an empty variable counts as unset. */
#ifndef AGENTHUB_SERVER_FLAGS_H
#define AGENTHUB_SERVER_FLAGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* What every flag's variable starts with. */
#define FLAG_ENV_PREFIX "AGENTHUB_"

/* The largest value a FLAG_SIZE row may allow: a size_t that also fits
 * the signed 64-bit fields it reaches (JetStream's max_bytes, ages in ms). */
#define FLAG_SIZE_LIMIT ((uint64_t)(SIZE_MAX < INT64_MAX ? SIZE_MAX : INT64_MAX))

enum flag_type {
    FLAG_STRING, /* const char *: the argument as given */
    FLAG_CHOICE, /* const char *: one of the row's choices ("on|off") */
    FLAG_BOOL,   /* int set to 1; takes no argument (0 or 1 from the environment) */
    FLAG_SIZE,   /* size_t within [min, max] */
    FLAG_U32,    /* uint32_t within [min, max] */
    FLAG_SETTER, /* each value goes to the row's setter; the flag may repeat */
    FLAG_ACTION, /* --help, --version: parsing stops and names the row */
};

enum flag_rc {
    FLAG_OK,
    FLAG_ACTION_ASKED, /* an action flag was given: do it and exit */
    FLAG_USAGE,        /* a bad flag or value: the message says which */
    FLAG_NOMEM,
};

/* A FLAG_SETTER row's store: takes VALUE into CONFIG.  Returns FLAG_OK, or
 * FLAG_USAGE with why in WHY (the caller adds which flag or variable). */
typedef enum flag_rc (*flag_setter)(void *config, const char *value, char *why, size_t why_size);

struct flag_def {
    const char *name; /* without the leading "--" */
    char short_name;  /* a one-letter alias ('h'), or 0 */
    enum flag_type type;
    const char *arg;      /* the value's placeholder in --help ("N", "HOST:PORT") */
    size_t offset;        /* offsetof the value in the config struct */
    uint64_t min, max;    /* FLAG_SIZE, FLAG_U32: the accepted values, inclusive */
    uint64_t def;         /* FLAG_SIZE, FLAG_U32: the default */
    const char *def_text; /* the default in words, when it is no number (or NULL) */
    const char *choices;  /* FLAG_CHOICE: the accepted values, '|' between them */
    flag_setter set;      /* FLAG_SETTER */
    const char *help;     /* what the flag does, one paragraph */
};

/* Where a failed parse stopped.  MESSAGE names the flag ("--bus-bytes: ...")
 * or the variable ("AGENTHUB_BUS_BYTES (--bus-bytes): ...") and says what
 * was wrong, without the program's name. */
struct flag_error {
    char message[512];
};

/* Writes every numeric row's default into CONFIG.  Other values keep what
 * CONFIG holds (zeroed by the caller: NULL strings mean "not given"). */
void flags_set_defaults(const struct flag_def *table, size_t count, void *config);

/* Reads ARGV (getopt_long: --name VALUE, --name=VALUE, unambiguous
 * prefixes), then the variable of every row the command line did not
 * give, into CONFIG.  Returns FLAG_OK; FLAG_ACTION_ASKED with *ACTION the
 * action's row; FLAG_USAGE with ERR saying what was wrong; FLAG_NOMEM. */
enum flag_rc flags_parse(const struct flag_def *table, size_t count, int argc, char **argv,
                         void *config, const struct flag_def **action, struct flag_error *err);

/* Frees the copies flags_parse made of list variables (a FLAG_SETTER
 * row's, split at commas); the pointers setters kept into them dangle
 * after it. */
void flags_release_copies(void);

/* ROW's environment variable into OUT (AGENTHUB_MAX_CONNECTIONS).  Returns
 * OUT, empty when it does not fit OUT_SIZE. */
const char *flag_env_name(const struct flag_def *row, char *out, size_t out_size);

/* Writes one entry per row to OUT: a header line "  --name ARG  (min..max,
 * default D)", the help text wrapped, and "env AGENTHUB_NAME" (actions
 * have none).  The layout is stable: tools/flags_doc.py and the e2e suite
 * read it back. */
void flags_print_help(const struct flag_def *table, size_t count, FILE *out);

#endif
