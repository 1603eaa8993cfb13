/* Unit tests for the state arbiter: record rules, rank pairs, screen rules. */
#include "core/arbiter.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct jsonl_record rec(enum jsonl_type t, const char *kind, const char *state)
{
    struct jsonl_record r;

    memset(&r, 0, sizeof(r));
    r.type = t;
    snprintf(r.kind, sizeof(r.kind), "%s", kind);
    snprintf(r.state, sizeof(r.state), "%s", state);
    return r;
}

/* One row per record rule. */
static const struct {
    enum jsonl_type type;
    const char *kind;
    const char *state;
    int evidence;
} record_rules[] = {
    {JSONL_TYPE_PROMPT, "", "", ARBITER_WORKING},
    {JSONL_TYPE_TOOL_START, "", "", ARBITER_WORKING},
    {JSONL_TYPE_TOOL_END, "", "", ARBITER_UNBLOCK},
    {JSONL_TYPE_ASK, "", "", ARBITER_BLOCKED},
    {JSONL_TYPE_NOTIFICATION, "permission", "", ARBITER_BLOCKED},
    {JSONL_TYPE_NOTIFICATION, "elicitation", "", ARBITER_BLOCKED},
    {JSONL_TYPE_NOTIFICATION, "elicitation_url", "", ARBITER_BLOCKED},
    {JSONL_TYPE_NOTIFICATION, "worker_permission", "", ARBITER_BLOCKED},
    {JSONL_TYPE_NOTIFICATION, "elicitation_result", "", ARBITER_UNBLOCK},
    {JSONL_TYPE_NOTIFICATION, "idle", "", ARBITER_SETTLE},
    {JSONL_TYPE_NOTIFICATION, "idle_prompt", "", ARBITER_NONE},
    {JSONL_TYPE_NOTIFICATION, "subagent_stop", "", ARBITER_NONE},
    {JSONL_TYPE_NOTIFICATION, "spool_dropped", "", ARBITER_NONE},
    {JSONL_TYPE_NOTIFICATION, "", "", ARBITER_NONE},
    {JSONL_TYPE_STOP, "", "", ARBITER_DONE},
    {JSONL_TYPE_SESSION_END, "", "", ARBITER_STOPPED},
    {JSONL_TYPE_SESSION_START, "", "", ARBITER_NONE},
    {JSONL_TYPE_PROVIDER_RAW, "", "", ARBITER_NONE},
    {JSONL_TYPE_STATE, "", "working", ARBITER_WORKING},
    {JSONL_TYPE_STATE, "", "blocked", ARBITER_BLOCKED},
    {JSONL_TYPE_STATE, "", "AGENT_SESSION_STATE_DONE", ARBITER_DONE},
    {JSONL_TYPE_STATE, "", "bogus", ARBITER_NONE},
    {JSONL_TYPE_STATE, "", "", ARBITER_NONE},
};

START_TEST(record_rule_maps_to_evidence)
{
    struct jsonl_record r =
        rec(record_rules[_i].type, record_rules[_i].kind, record_rules[_i].state);

    ck_assert_int_eq(arbiter_evidence_for_record(&r), record_rules[_i].evidence);
}
END_TEST

START_TEST(record_rule_drives_stream_state)
{
    struct arbiter a;
    struct jsonl_record r =
        rec(record_rules[_i].type, record_rules[_i].kind, record_rules[_i].state);
    enum arbiter_state out;
    int ev = arbiter_evidence_for_record(&r);
    int changed;

    arbiter_init(&a, ARBITER_STARTING);
    changed = arbiter_observe(&a, ARBITER_RANK_STREAM, ev, ARBITER_LIVE_UNCHANGED, &out);
    if (ev >= 0) {
        ck_assert_int_eq(changed, 1);
        ck_assert_int_eq(out, ev);
    } else {
        ck_assert_int_eq(changed, 0);
        ck_assert_int_eq(out, ARBITER_STARTING);
    }
}
END_TEST

START_TEST(typed_frames_are_stream_evidence)
{
    struct arbiter a;
    enum arbiter_state out;

    ck_assert_int_eq(arbiter_evidence_for_tool_status(2), ARBITER_WORKING);
    ck_assert_int_eq(arbiter_evidence_for_tool_status(1), ARBITER_NONE);
    ck_assert_int_eq(arbiter_evidence_for_tool_status(3), ARBITER_NONE);
    ck_assert_int_eq(arbiter_evidence_for_frame_state(0), ARBITER_NONE);
    ck_assert_int_eq(arbiter_evidence_for_frame_state(10), ARBITER_NONE);
    ck_assert_int_eq(arbiter_evidence_for_frame_state(ARBITER_BLOCKED), ARBITER_BLOCKED);
    arbiter_init(&a, ARBITER_UNSPECIFIED);
    arbiter_observe(&a, ARBITER_RANK_HOOK, ARBITER_DONE, 1, NULL);
    ck_assert_int_eq(arbiter_observe(&a, ARBITER_RANK_STREAM, arbiter_evidence_for_tool_status(2),
                                     ARBITER_LIVE_UNCHANGED, &out),
                     1);
    ck_assert_int_eq(out, ARBITER_WORKING);
    ck_assert_int_eq(arbiter_observe(&a, ARBITER_RANK_STREAM,
                                     arbiter_evidence_for_frame_state(ARBITER_ERRORED),
                                     ARBITER_LIVE_UNCHANGED, &out),
                     1);
    ck_assert_int_eq(out, ARBITER_ERRORED);
}
END_TEST

START_TEST(repeat_of_same_state_reports_no_change)
{
    struct arbiter a;
    enum arbiter_state out;

    arbiter_init(&a, ARBITER_UNSPECIFIED);
    ck_assert_int_eq(arbiter_observe(&a, ARBITER_RANK_STREAM, ARBITER_WORKING, -1, &out), 1);
    ck_assert_int_eq(arbiter_observe(&a, ARBITER_RANK_STREAM, ARBITER_WORKING, -1, &out), 0);
    /* Same derived state from another rank: no change either. */
    ck_assert_int_eq(arbiter_observe(&a, ARBITER_RANK_HOOK, ARBITER_WORKING, -1, &out), 0);
    ck_assert_int_eq(arbiter_observe(&a, ARBITER_RANK_STREAM, ARBITER_NONE, -1, &out), 0);
    ck_assert_int_eq(out, ARBITER_WORKING);
}
END_TEST

/* Every ordered pair of ranks (hi above lo), both arrival orders, with and
 * without a live child, using non-correcting states. */
START_TEST(higher_rank_wins_for_every_pair_in_either_order)
{
    int hi, lo, live;

    for (live = 0; live <= 1; live++) {
        for (hi = 1; hi < ARBITER_RANK_COUNT; hi++) {
            for (lo = 0; lo < hi; lo++) {
                struct arbiter a;
                enum arbiter_state out;
                int lo_counts = !(lo == ARBITER_RANK_SCREEN && live);

                /* lo first, then hi: hi wins. */
                arbiter_init(&a, ARBITER_UNSPECIFIED);
                ck_assert_int_eq(arbiter_observe(&a, lo, ARBITER_BLOCKED, live, &out), lo_counts);
                ck_assert_int_eq(arbiter_observe(&a, hi, ARBITER_WORKING, live, &out), 1);
                ck_assert_int_eq(out, ARBITER_WORKING);
                /* hi retracts: lo shows (if it counts). */
                arbiter_observe(&a, hi, ARBITER_RETRACT, live, &out);
                ck_assert_int_eq(out, lo_counts ? ARBITER_BLOCKED : ARBITER_UNSPECIFIED);

                /* hi first, then lo: hi stays. */
                arbiter_init(&a, ARBITER_UNSPECIFIED);
                arbiter_observe(&a, hi, ARBITER_DONE, live, &out);
                ck_assert_int_eq(arbiter_observe(&a, lo, ARBITER_WORKING, live, &out), 0);
                ck_assert_int_eq(out, ARBITER_DONE);
                /* lo retracting changes nothing either. */
                ck_assert_int_eq(arbiter_observe(&a, lo, ARBITER_RETRACT, live, &out), 0);
                ck_assert_int_eq(out, ARBITER_DONE);
            }
        }
    }
}
END_TEST

/* The Stream evidence after each record of SEQ (N of them) from STARTING. */
static void expect_sequence(const struct jsonl_record *seq, const int *want, size_t n)
{
    struct arbiter a;
    enum arbiter_state out;

    arbiter_init(&a, ARBITER_STARTING);
    for (size_t i = 0; i < n; i++) {
        arbiter_observe(&a, ARBITER_RANK_STREAM, arbiter_evidence_for_record(&seq[i]), -1, &out);
        ck_assert_msg((int)out == want[i], "after record %zu: %s, want %s", i,
                      arbiter_state_name(out), arbiter_state_name(want[i]));
    }
}

START_TEST(a_tool_ending_after_a_permission_ends_blocked)
{
    const struct jsonl_record seq[] = {
        rec(JSONL_TYPE_PROMPT, "", ""),
        rec(JSONL_TYPE_ASK, "", ""),
        rec(JSONL_TYPE_TOOL_END, "", ""),
    };
    const int want[] = {ARBITER_WORKING, ARBITER_BLOCKED, ARBITER_WORKING};

    expect_sequence(seq, want, 3);
}
END_TEST

START_TEST(an_answered_elicitation_ends_blocked)
{
    const struct jsonl_record seq[] = {
        rec(JSONL_TYPE_PROMPT, "", ""),
        rec(JSONL_TYPE_NOTIFICATION, "elicitation_url", ""),
        rec(JSONL_TYPE_NOTIFICATION, "elicitation_result", ""),
    };
    const int want[] = {ARBITER_WORKING, ARBITER_BLOCKED, ARBITER_WORKING};

    expect_sequence(seq, want, 3);
}
END_TEST

/* Ending a wait is evidence only while there is a wait: a tool that ends
 * after the turn did, or before anything, changes nothing. */
START_TEST(ending_blocked_without_a_wait_changes_nothing)
{
    const struct jsonl_record seq[] = {
        rec(JSONL_TYPE_TOOL_END, "", ""), rec(JSONL_TYPE_PROMPT, "", ""),
        rec(JSONL_TYPE_TOOL_END, "", ""), rec(JSONL_TYPE_STOP, "", ""),
        rec(JSONL_TYPE_TOOL_END, "", ""), rec(JSONL_TYPE_NOTIFICATION, "elicitation_result", ""),
    };
    const int want[] = {ARBITER_STARTING, ARBITER_WORKING, ARBITER_WORKING,
                        ARBITER_DONE,     ARBITER_DONE,    ARBITER_DONE};

    expect_sequence(seq, want, 6);
}
END_TEST

/* The agent saying it waits for a prompt ends a stale WORKING or BLOCKED
 * as DONE, and never claims IDLE. */
START_TEST(an_idle_notification_settles_stale_working_or_blocked_as_done)
{
    const struct jsonl_record working[] = {
        rec(JSONL_TYPE_PROMPT, "", ""),
        rec(JSONL_TYPE_NOTIFICATION, "idle", ""),
    };
    const struct jsonl_record blocked[] = {
        rec(JSONL_TYPE_ASK, "", ""),
        rec(JSONL_TYPE_NOTIFICATION, "idle", ""),
    };
    const struct jsonl_record ready[] = {
        rec(JSONL_TYPE_STATE, "", "ready"),
        rec(JSONL_TYPE_NOTIFICATION, "idle", ""),
    };
    const struct jsonl_record nothing[] = {rec(JSONL_TYPE_NOTIFICATION, "idle", "")};
    const int want_working[] = {ARBITER_WORKING, ARBITER_DONE};
    const int want_blocked[] = {ARBITER_BLOCKED, ARBITER_DONE};
    const int want_ready[] = {ARBITER_READY, ARBITER_READY};
    const int want_nothing[] = {ARBITER_STARTING};

    expect_sequence(working, want_working, 2);
    expect_sequence(blocked, want_blocked, 2);
    expect_sequence(ready, want_ready, 2);
    expect_sequence(nothing, want_nothing, 1);
}
END_TEST

/* A conditional claim looks at its own rank only: Hook-rank BLOCKED below
 * Stream evidence is not ended by a Stream tool_end. */
START_TEST(ending_blocked_looks_at_its_own_rank)
{
    struct arbiter a;
    struct jsonl_record end = rec(JSONL_TYPE_TOOL_END, "", "");
    enum arbiter_state out;

    arbiter_init(&a, ARBITER_STARTING);
    arbiter_observe(&a, ARBITER_RANK_HOOK, ARBITER_BLOCKED, -1, &out);
    ck_assert_int_eq(
        arbiter_observe(&a, ARBITER_RANK_STREAM, arbiter_evidence_for_record(&end), -1, &out), 0);
    ck_assert_int_eq(out, ARBITER_BLOCKED);
    ck_assert_int_eq(arbiter_observe(&a, ARBITER_RANK_HOOK, ARBITER_UNBLOCK, -1, &out), 1);
    ck_assert_int_eq(out, ARBITER_WORKING);
}
END_TEST

START_TEST(session_end_makes_the_session_stopped)
{
    struct arbiter a;
    enum arbiter_state out;
    struct jsonl_record end = rec(JSONL_TYPE_SESSION_END, "", "");

    arbiter_init(&a, ARBITER_STARTING);
    arbiter_observe(&a, ARBITER_RANK_PROCESS, ARBITER_READY, 0, NULL);
    arbiter_observe(&a, ARBITER_RANK_STREAM, ARBITER_WORKING, -1, &out);
    ck_assert_int_eq(out, ARBITER_WORKING);
    ck_assert_int_eq(
        arbiter_observe(&a, ARBITER_RANK_STREAM, arbiter_evidence_for_record(&end), -1, &out), 1);
    ck_assert_int_eq(out, ARBITER_STOPPED);
}
END_TEST

START_TEST(no_evidence_falls_back_to_initial_state)
{
    struct arbiter a;
    enum arbiter_state out;

    arbiter_init(&a, ARBITER_STARTING);
    ck_assert_int_eq(arbiter_state(&a), ARBITER_STARTING);
    arbiter_observe(&a, ARBITER_RANK_HOOK, ARBITER_WORKING, -1, &out);
    ck_assert_int_eq(arbiter_observe(&a, ARBITER_RANK_HOOK, ARBITER_RETRACT, -1, &out), 1);
    ck_assert_int_eq(out, ARBITER_STARTING);
}
END_TEST

/* Idle belongs to the screen detector: every other rank's idle claim is dropped. */
START_TEST(idle_claim_above_screen_is_dropped)
{
    int r;

    for (r = ARBITER_RANK_PROCESS; r < ARBITER_RANK_COUNT; r++) {
        struct arbiter a;
        enum arbiter_state out;
        arbiter_init(&a, ARBITER_UNSPECIFIED);
        arbiter_observe(&a, r, ARBITER_WORKING, 0, NULL);
        ck_assert_int_eq(arbiter_observe(&a, r, ARBITER_IDLE, 0, &out), 0);
        ck_assert_int_eq(out, ARBITER_WORKING);
    }
}
END_TEST

/* While a live child exists, screen evidence counts only for idle and departure. */
static const struct {
    int state;
    int counts_with_live_child;
} screen_rows[] = {
    {ARBITER_STARTING, 0}, {ARBITER_READY, 0},   {ARBITER_WORKING, 0},
    {ARBITER_STOPPED, 1},  {ARBITER_ERRORED, 0}, {ARBITER_DISCONNECTED, 1},
    {ARBITER_BLOCKED, 0},  {ARBITER_DONE, 0},    {ARBITER_IDLE, 1},
};

START_TEST(screen_with_live_child_counts_only_idle_and_departure)
{
    struct arbiter a;
    enum arbiter_state out;
    int s = screen_rows[_i].state;

    arbiter_init(&a, ARBITER_UNSPECIFIED);
    arbiter_observe(&a, ARBITER_RANK_SCREEN, s, 1, &out);
    ck_assert_int_eq(out, screen_rows[_i].counts_with_live_child ? s : ARBITER_UNSPECIFIED);
    /* The live child leaving makes the kept evidence count. */
    ck_assert_int_eq(arbiter_observe(&a, ARBITER_RANK_SCREEN, ARBITER_NONE, 0, &out),
                     !screen_rows[_i].counts_with_live_child);
    ck_assert_int_eq(out, s);
}
END_TEST

START_TEST(screen_idle_or_departure_corrects_older_stream_evidence)
{
    static const int correcting[] = {ARBITER_IDLE, ARBITER_STOPPED, ARBITER_DISCONNECTED};
    int i, hi;

    for (i = 0; i < 3; i++) {
        for (hi = ARBITER_RANK_PROCESS; hi < ARBITER_RANK_COUNT; hi++) {
            struct arbiter a;
            enum arbiter_state out;
            arbiter_init(&a, ARBITER_UNSPECIFIED);
            arbiter_observe(&a, hi, ARBITER_WORKING, 1, &out);
            /* The shim died mid-turn; the detector sees idle (or departure). */
            ck_assert_int_eq(arbiter_observe(&a, ARBITER_RANK_SCREEN, correcting[i], 1, &out), 1);
            ck_assert_int_eq(out, correcting[i]);
            /* Newer higher-rank evidence wins again. */
            ck_assert_int_eq(arbiter_observe(&a, hi, ARBITER_WORKING, 1, &out), 1);
            ck_assert_int_eq(out, ARBITER_WORKING);
        }
    }
}
END_TEST

START_TEST(screen_working_never_overrides_higher_rank)
{
    struct arbiter a;
    enum arbiter_state out;

    arbiter_init(&a, ARBITER_UNSPECIFIED);
    arbiter_observe(&a, ARBITER_RANK_STREAM, ARBITER_DONE, 0, &out);
    ck_assert_int_eq(arbiter_observe(&a, ARBITER_RANK_SCREEN, ARBITER_WORKING, 0, &out), 0);
    ck_assert_int_eq(out, ARBITER_DONE);
}
END_TEST

START_TEST(invalid_rank_or_state_is_ignored)
{
    struct arbiter a;
    enum arbiter_state out;

    arbiter_init(&a, ARBITER_READY);
    ck_assert_int_eq(arbiter_observe(&a, ARBITER_RANK_COUNT, ARBITER_WORKING, -1, &out), 0);
    ck_assert_int_eq(arbiter_observe(&a, ARBITER_RANK_STREAM, 42, -1, &out), 0);
    ck_assert_int_eq(arbiter_observe(&a, ARBITER_RANK_STREAM, -7, -1, &out), 0);
    ck_assert_int_eq(arbiter_observe(&a, ARBITER_RANK_STREAM, -5, -1, &out), 0);
    ck_assert_int_eq(out, ARBITER_READY);
}
END_TEST

START_TEST(wire_evidence_ranks_map_to_process_and_screen)
{
    ck_assert_int_eq(arbiter_rank_from_wire(1), ARBITER_RANK_PROCESS);
    ck_assert_int_eq(arbiter_rank_from_wire(2), ARBITER_RANK_SCREEN);
    ck_assert_int_eq(arbiter_rank_from_wire(0), -1);
    ck_assert_int_eq(arbiter_rank_from_wire(3), -1);
}
END_TEST

START_TEST(state_words_and_names_round_trip)
{
    int s;

    for (s = 0; s < ARBITER_STATE_COUNT; s++)
        ck_assert_int_eq(arbiter_state_from_word(arbiter_state_name(s)), s);
    ck_assert_int_eq(arbiter_state_from_word("AGENT_SESSION_STATE_BLOCKED"), ARBITER_BLOCKED);
    ck_assert_int_eq(arbiter_state_from_word("nope"), -1);
    ck_assert_ptr_null(arbiter_state_name(ARBITER_STATE_COUNT));
}
END_TEST

Suite *arbiter_suite(void)
{
    Suite *s = suite_create("arbiter");
    TCase *tc = tcase_create("rules");
    int nrules = (int)(sizeof(record_rules) / sizeof(record_rules[0]));
    int nscreen = (int)(sizeof(screen_rows) / sizeof(screen_rows[0]));

    tcase_add_loop_test(tc, record_rule_maps_to_evidence, 0, nrules);
    tcase_add_loop_test(tc, record_rule_drives_stream_state, 0, nrules);
    tcase_add_test(tc, typed_frames_are_stream_evidence);
    tcase_add_test(tc, repeat_of_same_state_reports_no_change);
    tcase_add_test(tc, higher_rank_wins_for_every_pair_in_either_order);
    tcase_add_test(tc, a_tool_ending_after_a_permission_ends_blocked);
    tcase_add_test(tc, an_answered_elicitation_ends_blocked);
    tcase_add_test(tc, ending_blocked_without_a_wait_changes_nothing);
    tcase_add_test(tc, an_idle_notification_settles_stale_working_or_blocked_as_done);
    tcase_add_test(tc, ending_blocked_looks_at_its_own_rank);
    tcase_add_test(tc, session_end_makes_the_session_stopped);
    tcase_add_test(tc, no_evidence_falls_back_to_initial_state);
    tcase_add_test(tc, idle_claim_above_screen_is_dropped);
    tcase_add_loop_test(tc, screen_with_live_child_counts_only_idle_and_departure, 0, nscreen);
    tcase_add_test(tc, screen_idle_or_departure_corrects_older_stream_evidence);
    tcase_add_test(tc, screen_working_never_overrides_higher_rank);
    tcase_add_test(tc, invalid_rank_or_state_is_ignored);
    tcase_add_test(tc, state_words_and_names_round_trip);
    tcase_add_test(tc, wire_evidence_ranks_map_to_process_and_screen);
    suite_add_tcase(s, tc);
    return s;
}
