/*
 * cpu_fixture.c - the serial and threaded CPU engine fixtures.
 */
#include "cpu_fixture.h"

tf_engine *cpu_engine;
int cpu_threads;

static int open_engine(void **state)
{
    (void)state;
    tf_status st = tf_engine_open("cpu", cpu_threads, &cpu_engine);
    if (st != TF_OK) {
        print_error("tf_engine_open(\"cpu\", %d) -> %s: %s (cause: %s)\n", cpu_threads,
                    tf_status_name(st), tf_error_message(), tf_error_cause());
        return -1;
    }
    return 0;
}

static int close_engine(void **state)
{
    (void)state;
    tf_engine_destroy(cpu_engine);
    cpu_engine = NULL;
    return 0;
}

int cpu_run_groups(const char *name, const struct CMUnitTest *tests, size_t count)
{
    static const int threads[] = {1, 4};
    char group[128];
    int failures = 0;
    for (size_t i = 0; i < 2; i++) {
        cpu_threads = threads[i];
        snprintf(group, sizeof group, "%s (cpu, threads=%d)", name, cpu_threads);
        failures += _cmocka_run_group_tests(group, tests, count, open_engine, close_engine);
    }
    return failures;
}
