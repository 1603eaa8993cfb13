/* The one unit-test runner: every suite in test_list.h, or only the suites
 * named on the command line.
 *
 *   unit_tests [--counts FILE] [SUITE...]
 *
 * Totals come from Check itself (srunner_ntests_run, srunner_ntests_failed);
 * with --counts the runner appends "passed failed" to FILE, the line
 * tests/run_all.sh adds up.  Exits 0 when nothing failed, 1 when a test
 * failed, 2 on a usage error (an unknown suite name, an unwritable FILE). */
#include "test_list.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DECLARE_SUITE(name) Suite *name##_suite(void);
TEST_SUITE_LIST(DECLARE_SUITE)
#undef DECLARE_SUITE

struct unit_suite {
    const char *name;
    Suite *(*make)(void);
};

#define ENTRY(name) {#name, name##_suite},
static const struct unit_suite suites[] = {TEST_SUITE_LIST(ENTRY)};
#undef ENTRY

#define NSUITES (sizeof(suites) / sizeof(suites[0]))

/* Returns the index of the suite called NAME, or -1 when there is none. */
static int find_suite(const char *name)
{
    size_t i;

    for (i = 0; i < NSUITES; i++)
        if (strcmp(suites[i].name, name) == 0)
            return (int)i;
    return -1;
}

static void usage(FILE *out)
{
    size_t i;

    fprintf(out, "usage: unit_tests [--counts FILE] [SUITE...]\nsuites:");
    for (i = 0; i < NSUITES; i++)
        fprintf(out, " %s", suites[i].name);
    fprintf(out, "\n");
}

int main(int argc, char **argv)
{
    const char *counts = NULL;
    SRunner *sr = NULL;
    FILE *f;
    int i, first, run, failed;

    for (first = 1; first < argc && argv[first][0] == '-'; first++) {
        if (strcmp(argv[first], "--counts") == 0 && first + 1 < argc) {
            counts = argv[++first];
        } else {
            usage(strcmp(argv[first], "--help") == 0 ? stdout : stderr);
            return strcmp(argv[first], "--help") == 0 ? 0 : 2;
        }
    }
    for (i = first; i < argc; i++) {
        if (find_suite(argv[i]) < 0) {
            fprintf(stderr, "unit_tests: no suite called '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }

    for (i = 0; i < (int)NSUITES; i++) {
        int j, wanted = first == argc;

        for (j = first; j < argc && !wanted; j++)
            wanted = strcmp(argv[j], suites[i].name) == 0;
        if (!wanted)
            continue;
        if (!sr)
            sr = srunner_create(suites[i].make());
        else
            srunner_add_suite(sr, suites[i].make());
    }

    srunner_run_all(sr, CK_NORMAL);
    run = srunner_ntests_run(sr);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);

    printf("unit_tests: %d passed, %d failed\n", run - failed, failed);
    if (counts) {
        int wrote;

        f = fopen(counts, "a");
        if (!f) {
            perror(counts);
            return 2;
        }
        wrote = fprintf(f, "%d %d\n", run - failed, failed);
        if (fclose(f) != 0 || wrote < 0) {
            perror(counts);
            return 2;
        }
    }
    return failed == 0 ? 0 : 1;
}
