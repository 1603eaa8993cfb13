/* The unit suites, one line each.  Every tests/unit/test_NAME.c exports
 * `Suite *NAME_suite(void)`; tests/unit/main.c runs the suites listed here
 * in one runner (build/tests/unit_tests).
 *
 * Adding a suite is a one-line change: write tests/unit/test_NAME.c with its
 * NAME_suite() and add TEST_SUITE(NAME) below (the Makefile picks up every
 * tests/unit/test_*.c by itself).  Keep the list sorted. */
#ifndef AGENTHUB_TESTS_UNIT_TEST_LIST_H
#define AGENTHUB_TESTS_UNIT_TEST_LIST_H

#define TEST_SUITE_LIST(TEST_SUITE)                                                                \
    TEST_SUITE(admin)                                                                              \
    TEST_SUITE(arbiter)                                                                            \
    TEST_SUITE(auth)                                                                               \
    TEST_SUITE(base64)                                                                             \
    TEST_SUITE(batch)                                                                              \
    TEST_SUITE(bus)                                                                                \
    TEST_SUITE(cli_hook_input)                                                                     \
    TEST_SUITE(cli_hook_map)                                                                       \
    TEST_SUITE(cli_hook_spool)                                                                     \
    TEST_SUITE(cli_mcp)                                                                            \
    TEST_SUITE(cli_render)                                                                         \
    TEST_SUITE(cluster_wire)                                                                       \
    TEST_SUITE(gate)                                                                               \
    TEST_SUITE(grpc_compress)                                                                      \
    TEST_SUITE(grpc_json)                                                                          \
    TEST_SUITE(grpc_loopback)                                                                      \
    TEST_SUITE(grpc_protocol)                                                                      \
    TEST_SUITE(grpc_transport)                                                                     \
    TEST_SUITE(grpc_wire)                                                                          \
    TEST_SUITE(h2_server)                                                                          \
    TEST_SUITE(hash_map)                                                                           \
    TEST_SUITE(hex)                                                                                \
    TEST_SUITE(hostport)                                                                           \
    TEST_SUITE(hub_control)                                                                        \
    TEST_SUITE(hub_relay)                                                                          \
    TEST_SUITE(hub_session)                                                                        \
    TEST_SUITE(hub_snapshot)                                                                       \
    TEST_SUITE(intrusive_list)                                                                     \
    TEST_SUITE(jsonl)                                                                              \
    TEST_SUITE(keyset)                                                                             \
    TEST_SUITE(log)                                                                                \
    TEST_SUITE(log_disk)                                                                           \
    TEST_SUITE(pb_validate)                                                                        \
    TEST_SUITE(protowire)                                                                          \
    TEST_SUITE(reflection)                                                                         \
    TEST_SUITE(ring)                                                                               \
    TEST_SUITE(runner_frames)                                                                      \
    TEST_SUITE(runner_marks)                                                                       \
    TEST_SUITE(runner_uploader)                                                                    \
    TEST_SUITE(seq_index)                                                                          \
    TEST_SUITE(server_flags)                                                                       \
    TEST_SUITE(session)                                                                            \
    TEST_SUITE(store)                                                                              \
    TEST_SUITE(store_pg)                                                                           \
    TEST_SUITE(web)                                                                                \
    TEST_SUITE(wire_numbering)

#endif
