/*
 * cpu_fixture.h - runs a primitive test group on the CPU engine three times:
 * serial (threads = 1), threaded (threads = 4), and threaded with the option
 * stream_threshold=0, so that every cheap dense elementwise output takes the
 * non-temporal store path that only tensors larger than the cache take by default.
 */
#ifndef CPU_FIXTURE_H
#define CPU_FIXTURE_H

#include "tf_ref.h"

/* glibc defines C11's CMPLX for GCC only; clang has the same builtin. */
#include <complex.h>
#ifndef CMPLX
#define CMPLX(x, y) __builtin_complex((double)(x), (double)(y))
#endif

/* The engine of the group that is running (valid inside a test). */
extern tf_engine *cpu_engine;
/* The thread count of that engine (1 or 4). */
extern int cpu_threads;

/* Runs `tests` on each of the three engines; returns the failure count. */
int cpu_run_groups(const char *name, const struct CMUnitTest *tests, size_t count);

#define CPU_RUN_GROUPS(name, tests) cpu_run_groups(name, tests, sizeof(tests) / sizeof(tests[0]))

#endif /* CPU_FIXTURE_H */
