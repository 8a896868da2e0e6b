/*
 * cpu_fixture.h - runs a primitive test group on the CPU engine twice: once
 * serial (threads = 1) and once threaded (threads = 4).
 */
#ifndef CPU_FIXTURE_H
#define CPU_FIXTURE_H

#include "tf_ref.h"

/* The engine of the group that is running (valid inside a test). */
extern tf_engine *cpu_engine;
/* The thread count of that engine (1 or 4). */
extern int cpu_threads;

/* Runs `tests` on the serial, then on the threaded engine; returns the failure count. */
int cpu_run_groups(const char *name, const struct CMUnitTest *tests, size_t count);

#define CPU_RUN_GROUPS(name, tests) cpu_run_groups(name, tests, sizeof(tests) / sizeof(tests[0]))

#endif /* CPU_FIXTURE_H */
