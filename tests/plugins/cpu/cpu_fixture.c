/*
 * cpu_fixture.c - the serial and threaded CPU engine fixtures.
 */
#include "cpu_fixture.h"

tf_engine *cpu_engine;
int cpu_threads;

/* "0": stream every cheap dense elementwise output; NULL: the engine's default. */
static const char *cpu_stream_threshold;

static int open_engine(void **state)
{
    (void)state;
    tf_status st = tfr_engine_create("cpu", cpu_threads,
                                     cpu_stream_threshold ? "stream_threshold" : NULL,
                                     cpu_stream_threshold, &cpu_engine);
    if (st != TF_OK) {
        print_error("cpu engine (threads %d, stream_threshold %s) -> %s: %s (cause: %s)\n",
                    cpu_threads, cpu_stream_threshold ? cpu_stream_threshold : "default",
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
    static const struct {
        int threads;
        const char *stream_threshold;
    } configs[] = {{1, NULL}, {4, NULL}, {4, "0"}};
    char group[160];
    int failures = 0;
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) {
        cpu_threads = configs[i].threads;
        cpu_stream_threshold = configs[i].stream_threshold;
        snprintf(group, sizeof group, "%s (cpu, threads=%d%s)", name, cpu_threads,
                 cpu_stream_threshold ? ", every output streamed" : "");
        failures += _cmocka_run_group_tests(group, tests, count, open_engine, close_engine);
    }
    return failures;
}
