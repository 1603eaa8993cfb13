/* server_flags: the flag table's engine (server_flags.h). */
#include "server/server_flags.h"

#include <ctype.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

/* Where a value came from, for the message about a bad one. */
struct flag_source {
    const struct flag_def *row;
    const char *env; /* the variable's name, or NULL: the command line */
};

/* Option values getopt_long returns for row I: past every char. */
#define FLAG_OPTION_BASE 256

/* Help text is wrapped to this width, indented by HELP_INDENT. */
#define HELP_WIDTH  79
#define HELP_INDENT 6
/* The column a header line's "(range, default)" starts at, at least. */
#define HELP_FACTS_COLUMN 33

const char *flag_env_name(const struct flag_def *row, char *out, size_t out_size)
{
    size_t prefix = strlen(FLAG_ENV_PREFIX), len = strlen(row->name);

    if (out_size < prefix + len + 1) {
        if (out_size > 0)
            out[0] = '\0';
        return out;
    }
    memcpy(out, FLAG_ENV_PREFIX, prefix);
    for (size_t i = 0; i < len; i++) {
        char c = row->name[i];
        out[prefix + i] = c == '-' ? '_' : (char)toupper((unsigned char)c);
    }
    out[prefix + len] = '\0';
    return out;
}

/* Fills ERR with "--name: WHY" or "AGENTHUB_NAME (--name): WHY". */
static void flag_fail(struct flag_error *err, const struct flag_source *source, const char *why)
{
    if (source->env)
        snprintf(err->message, sizeof(err->message), "%s (--%s): %s", source->env,
                 source->row->name, why);
    else
        snprintf(err->message, sizeof(err->message), "--%s: %s", source->row->name, why);
}

enum number_parse {
    NUMBER_OK,
    NUMBER_MALFORMED,    /* not a decimal number at all */
    NUMBER_OUT_OF_RANGE, /* a number, but negative or past 64 bits */
};

/* Reads TEXT as a decimal number: digits only, or '-' and digits (a
 * negative number, refused as out of range rather than wrapped the way
 * strtoull would).  Returns NUMBER_OK with *OUT, or why not. */
static enum number_parse parse_u64(const char *text, uint64_t *out)
{
    const char *digits = text[0] == '-' ? text + 1 : text;
    uint64_t n = 0;
    int overflow = 0;

    if (*digits == '\0')
        return NUMBER_MALFORMED;
    for (const char *p = digits; *p; p++) {
        unsigned d;
        if (*p < '0' || *p > '9')
            return NUMBER_MALFORMED;
        d = (unsigned)(*p - '0');
        if (n > (UINT64_MAX - d) / 10)
            overflow = 1;
        else
            n = n * 10 + d;
    }
    if (overflow || (digits != text && n != 0))
        return NUMBER_OUT_OF_RANGE;
    *out = n;
    return NUMBER_OK;
}

/* A numeric row's value from TEXT into CONFIG.  Returns FLAG_OK, or
 * FLAG_USAGE with ERR naming the flag and its range. */
static enum flag_rc set_number(const struct flag_source *source, const char *text, void *config,
                               struct flag_error *err)
{
    const struct flag_def *row = source->row;
    char why[256];
    uint64_t n = 0;
    enum number_parse parsed = parse_u64(text, &n);

    if (parsed == NUMBER_OK && (n < row->min || n > row->max))
        parsed = NUMBER_OUT_OF_RANGE;
    if (parsed == NUMBER_MALFORMED) {
        snprintf(why, sizeof(why), "expected a number in %llu..%llu, got '%.64s'",
                 (unsigned long long)row->min, (unsigned long long)row->max, text);
        flag_fail(err, source, why);
        return FLAG_USAGE;
    }
    if (parsed == NUMBER_OUT_OF_RANGE) {
        snprintf(why, sizeof(why), "%.64s is out of range (%llu..%llu)", text,
                 (unsigned long long)row->min, (unsigned long long)row->max);
        flag_fail(err, source, why);
        return FLAG_USAGE;
    }
    if (row->type == FLAG_U32)
        *(uint32_t *)((char *)config + row->offset) = (uint32_t)n;
    else
        *(size_t *)((char *)config + row->offset) = (size_t)n;
    return FLAG_OK;
}

/* 1 when VALUE is one of CHOICES ("on|off"), else 0. */
static int is_choice(const char *choices, const char *value)
{
    size_t len = strlen(value);
    const char *p = choices;

    while (*p) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (n == len && strncmp(p, value, len) == 0)
            return 1;
        p += n + (bar ? 1 : 0);
    }
    return 0;
}

/* "disk, memory or off" from "disk|memory|off" into OUT. */
static void choices_in_words(const char *choices, char *out, size_t out_size)
{
    size_t bars = 0, seen = 0, used = 0;

    for (const char *p = choices; *p; p++)
        bars += *p == '|';
    for (const char *p = choices; *p && used + 5 < out_size; p++) {
        if (*p != '|') {
            out[used++] = *p;
            continue;
        }
        seen++;
        used += (size_t)snprintf(out + used, out_size - used, "%s", seen == bars ? " or " : ", ");
        if (used >= out_size)
            used = out_size - 1;
    }
    out[used < out_size ? used : out_size - 1] = '\0';
}

/* One value (TEXT; NULL for a flag without argument) of SOURCE's row into
 * CONFIG.  Returns FLAG_OK, or FLAG_USAGE with ERR filled. */
static enum flag_rc set_value(const struct flag_source *source, const char *text, void *config,
                              struct flag_error *err)
{
    const struct flag_def *row = source->row;
    char why[384], words[128];
    void *slot = (char *)config + row->offset;

    switch (row->type) {
    case FLAG_STRING:
        *(const char **)slot = text;
        return FLAG_OK;
    case FLAG_CHOICE:
        if (!is_choice(row->choices, text)) {
            choices_in_words(row->choices, words, sizeof(words));
            snprintf(why, sizeof(why), "expected %s, got '%.64s'", words, text);
            flag_fail(err, source, why);
            return FLAG_USAGE;
        }
        *(const char **)slot = text;
        return FLAG_OK;
    case FLAG_BOOL:
        if (text && strcmp(text, "0") != 0 && strcmp(text, "1") != 0) {
            snprintf(why, sizeof(why), "expected 0 or 1, got '%.64s'", text);
            flag_fail(err, source, why);
            return FLAG_USAGE;
        }
        *(int *)slot = !text || strcmp(text, "1") == 0;
        return FLAG_OK;
    case FLAG_SIZE:
    case FLAG_U32:
        return set_number(source, text, config, err);
    case FLAG_SETTER:
        why[0] = '\0';
        if (row->set(config, text, why, sizeof(why)) != FLAG_OK) {
            flag_fail(err, source, why);
            return FLAG_USAGE;
        }
        return FLAG_OK;
    case FLAG_ACTION:
        break;
    }
    return FLAG_OK;
}

/* Copies of list variables, split in place.  A setter keeps pointers into
 * its values, as it keeps argv's, so the copies live until
 * flags_release_copies (a static list: reachable, not leaked). */
struct kept_copy {
    struct kept_copy *next;
    char text[];
};
static struct kept_copy *kept_copies;

void flags_release_copies(void)
{
    while (kept_copies) {
        struct kept_copy *next = kept_copies->next;
        free(kept_copies);
        kept_copies = next;
    }
}

/* A FLAG_SETTER row's variable holds a comma-separated list: each item
 * goes to the setter in turn.  Returns FLAG_OK, FLAG_USAGE with ERR, or
 * FLAG_NOMEM. */
static enum flag_rc set_list(const struct flag_source *source, const char *text, void *config,
                             struct flag_error *err)
{
    size_t len = strlen(text);
    struct kept_copy *copy = malloc(sizeof(*copy) + len + 1);
    char *save = NULL;
    enum flag_rc rc = FLAG_OK;

    if (!copy)
        return FLAG_NOMEM;
    memcpy(copy->text, text, len + 1);
    copy->next = kept_copies;
    kept_copies = copy;
    for (char *item = strtok_r(copy->text, ",", &save); item && rc == FLAG_OK;
         item = strtok_r(NULL, ",", &save))
        rc = set_value(source, item, config, err);
    return rc;
}

/* Every row not given on the command line (SEEN) from its variable.
 * Returns FLAG_OK, FLAG_USAGE with ERR naming the variable, or
 * FLAG_NOMEM. */
static enum flag_rc parse_env(const struct flag_def *table, size_t count, const char *seen,
                              void *config, struct flag_error *err)
{
    char name[128];

    for (size_t i = 0; i < count; i++) {
        struct flag_source source = {&table[i], name};
        const char *value;
        enum flag_rc rc;

        if (seen[i] || table[i].type == FLAG_ACTION)
            continue;
        value = getenv(flag_env_name(&table[i], name, sizeof(name)));
        if (!value || value[0] == '\0')
            continue;
        rc = table[i].type == FLAG_SETTER ? set_list(&source, value, config, err)
                                          : set_value(&source, value, config, err);
        if (rc != FLAG_OK)
            return rc;
    }
    return FLAG_OK;
}

void flags_set_defaults(const struct flag_def *table, size_t count, void *config)
{
    for (size_t i = 0; i < count; i++) {
        void *slot = (char *)config + table[i].offset;
        if (table[i].type == FLAG_U32)
            *(uint32_t *)slot = (uint32_t)table[i].def;
        else if (table[i].type == FLAG_SIZE)
            *(size_t *)slot = (size_t)table[i].def;
    }
}

enum flag_rc flags_parse(const struct flag_def *table, size_t count, int argc, char **argv,
                         void *config, const struct flag_def **action, struct flag_error *err)
{
    struct option *options = calloc(count + 1, sizeof(*options));
    char *seen = calloc(count ? count : 1, 1);
    char shorts[64] = ":";
    size_t nshort = 1;
    enum flag_rc rc = FLAG_OK;
    int opt;

    *action = NULL;
    err->message[0] = '\0';
    if (!options || !seen) {
        rc = FLAG_NOMEM;
        goto out;
    }
    for (size_t i = 0; i < count; i++) {
        int takes_value = table[i].type != FLAG_BOOL && table[i].type != FLAG_ACTION;
        options[i].name = table[i].name;
        options[i].has_arg = takes_value ? required_argument : no_argument;
        options[i].val = FLAG_OPTION_BASE + (int)i;
        if (table[i].short_name && nshort + 3 < sizeof(shorts)) {
            shorts[nshort++] = table[i].short_name;
            if (takes_value)
                shorts[nshort++] = ':';
        }
    }
    shorts[nshort] = '\0';
    optind = 0; /* glibc: start over, also after an earlier parse */
    opterr = 0;
    while ((opt = getopt_long(argc, argv, shorts, options, NULL)) != -1) {
        struct flag_source source = {NULL, NULL};
        size_t i = count;

        if (opt >= FLAG_OPTION_BASE)
            i = (size_t)(opt - FLAG_OPTION_BASE);
        for (size_t s = 0; i == count && opt != '?' && opt != ':' && s < count; s++)
            if (table[s].short_name == opt)
                i = s;
        if (i == count) {
            snprintf(err->message, sizeof(err->message),
                     "unknown or incomplete option '%.64s' (see --help)", argv[optind - 1]);
            rc = FLAG_USAGE;
            goto out;
        }
        source.row = &table[i];
        seen[i] = 1;
        if (table[i].type == FLAG_ACTION) {
            *action = &table[i];
            rc = FLAG_ACTION_ASKED;
            goto out;
        }
        rc = set_value(&source, optarg, config, err);
        if (rc != FLAG_OK)
            goto out;
    }
    if (optind < argc) {
        snprintf(err->message, sizeof(err->message), "unexpected argument '%.64s'", argv[optind]);
        rc = FLAG_USAGE;
        goto out;
    }
    rc = parse_env(table, count, seen, config, err);

out:
    free(seen);
    free(options);
    return rc;
}

/* Writes TEXT wrapped to HELP_WIDTH, every line indented HELP_INDENT. */
static void print_wrapped(FILE *out, const char *text)
{
    const char *p = text;

    while (*p) {
        size_t room = HELP_WIDTH - HELP_INDENT, len = strlen(p), cut = len;

        if (len > room) {
            cut = room;
            while (cut > 0 && p[cut] != ' ')
                cut--;
            if (cut == 0) /* one word longer than a line: keep it whole */
                cut = strcspn(p, " ");
        }
        fprintf(out, "%*s%.*s\n", HELP_INDENT, "", (int)cut, p);
        p += cut;
        while (*p == ' ')
            p++;
    }
}

void flags_print_help(const struct flag_def *table, size_t count, FILE *out)
{
    char name[128], facts[160];

    for (size_t i = 0; i < count; i++) {
        const struct flag_def *row = &table[i];
        const char *def = row->def_text;
        char number[32], head[160];
        int n;

        facts[0] = '\0';
        if (row->type == FLAG_SIZE || row->type == FLAG_U32) {
            snprintf(number, sizeof(number), "%llu", (unsigned long long)row->def);
            snprintf(facts, sizeof(facts), "(%llu..%llu, default %s)", (unsigned long long)row->min,
                     (unsigned long long)row->max, def ? def : number);
        } else if (def) {
            snprintf(facts, sizeof(facts), "(default %s)", def);
        }
        if (row->short_name)
            n = snprintf(head, sizeof(head), "  -%c, --%s", row->short_name, row->name);
        else
            n = snprintf(head, sizeof(head), "  --%s%s%s", row->name, row->arg ? " " : "",
                         row->arg ? row->arg : "");
        if (facts[0])
            fprintf(out, "%s%*s%s\n", head, n < HELP_FACTS_COLUMN ? HELP_FACTS_COLUMN - n : 2, "",
                    facts);
        else
            fprintf(out, "%s\n", head);
        print_wrapped(out, row->help);
        if (row->type != FLAG_ACTION)
            fprintf(out, "%*senv %s\n", HELP_INDENT, "", flag_env_name(row, name, sizeof(name)));
    }
}
