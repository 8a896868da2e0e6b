/*
 * test_loader.c - the plugin loader, the search path, scans, and engines as
 * the application sees them (creation, execution errors, placement,
 * lifetime).
 *
 * The plugins under test are the fixtures of tests/plugins/fixtures (in
 * TF_FIXTURE_DIR, never on the default search path) and the bundled CPU
 * engine. Every refusal is followed by a check that the CPU engine still
 * loads and computes. TENFERRO_PLUGIN_PATH is saved before and restored
 * after every test; checks that need a pristine loader (search order) run in
 * a forked child.
 */
#include "tf_test.h"
#include "tf_ref.h"
#include "tf_test_log.h"

#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef TF_FIXTURE_DIR
#error "TF_FIXTURE_DIR must be defined by the build"
#endif
#ifndef TF_TEST_PLUGIN_BUILD_DIR
#error "TF_TEST_PLUGIN_BUILD_DIR must be defined by the build"
#endif

#define ENV_PATH "TENFERRO_PLUGIN_PATH"
#define PLUGIN_SENTINEL ((tf_plugin *)(uintptr_t)0x5e5e5e50)
#define ENGINE_SENTINEL ((tf_engine *)(uintptr_t)0x5e5e5e60)
#define TENSOR_SENTINEL ((tf_tensor *)(uintptr_t)0x5e5e5e70)

static const char *fixture(const char *name)
{
    static char paths[8][1024];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, sizeof paths[0], "%s/tenferro-engine-%s.so", TF_FIXTURE_DIR, name);
    return p;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* `haystack` with every occurrence of `cut` removed (so digits in paths don't count). */
static void without(char *dst, size_t cap, const char *haystack, const char *cut)
{
    size_t n = 0, m = strlen(cut);
    while (*haystack && n + 1 < cap) {
        if (m && strncmp(haystack, cut, m) == 0) {
            haystack += m;
            continue;
        }
        dst[n++] = *haystack++;
    }
    dst[n] = '\0';
}

/*
 * The init-fails fixture numbers its init calls in its report ("init call
 * N"); returns N, or 0 if the text has no such number.
 */
static unsigned init_call_number(const char *text)
{
    const char *at = strstr(text, "init call ");
    unsigned n = 0;
    if (at && sscanf(at, "init call %u", &n) == 1)
        return n;
    return 0;
}

/* ---- per-test environment ---- */

static int g_env_had;
static char g_env_value[4096];

static int setup(void **state)
{
    const char *v = getenv(ENV_PATH);
    g_env_had = v != NULL;
    snprintf(g_env_value, sizeof g_env_value, "%s", v ? v : "");
    tf_error_clear();
    return 0;
}

static int teardown(void **state)
{
    if (g_env_had)
        setenv(ENV_PATH, g_env_value, 1);
    else
        unsetenv(ENV_PATH);
    tf_test_log_stop();
    tf_error_clear();
    return 0;
}

/* ---- the CPU engine as a canary ---- */

static void assert_cpu_adds(void)
{
    tf_engine *e = NULL;
    TF_ASSERT_OK(tf_engine_open("cpu", 1, &e));
    assert_string_equal(tf_engine_name(e), "cpu");
    double a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40};
    int64_t shape[1] = {4};
    tf_tensor *ta = NULL, *tb = NULL, *out = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F64, 1, shape, a, 4, &ta));
    TF_ASSERT_OK(tf_tensor_from_host(TF_F64, 1, shape, b, 4, &tb));
    TF_ASSERT_OK(tf_tensor_empty(e, TF_F64, 1, shape, &out));
    tf_binary_params p = {sizeof p, TF_BINARY_ADD};
    tf_tensor *ins[2] = {ta, tb};
    TF_ASSERT_OK(tf_engine_execute(e, TF_PRIM_BINARY, &p, 2, ins, 1, &out));
    double got[4];
    TF_ASSERT_OK(tf_tensor_copy_to_host(out, TF_F64, got, 4));
    for (int i = 0; i < 4; i++)
        assert_true(got[i] == a[i] + b[i]);
    tf_tensor_release(out);
    tf_tensor_release(tb);
    tf_tensor_release(ta);
    tf_engine_destroy(e);
}

/* ---- the malformed corpus ---- */

typedef struct refusal {
    const char *fixture;
    tf_status status;
    const char *needles[4]; /* in the message, paths cut out */
} refusal;

static void check_refusal(const refusal *r)
{
    const char *path = fixture(r->fixture);
    char file[128];
    snprintf(file, sizeof file, "tenferro-engine-%s.so", r->fixture);
    for (int attempt = 0; attempt < 2; attempt++) {
        tf_plugin *p = PLUGIN_SENTINEL;
        tf_error_clear();
        tf_status st = tf_plugin_load(path, &p);
        if (st != r->status)
            fail_msg("%s (attempt %d): got %s, want %s: %s (cause: %s)", r->fixture, attempt + 1,
                     tf_status_name(st), tf_status_name(r->status), tf_error_message(),
                     tf_error_cause());
        assert_ptr_equal(p, PLUGIN_SENTINEL);
        assert_int_equal(tf_error_status(), r->status);
        if (init_call_number(tf_error_cause()) > 1)
            fail_msg("%s (attempt %d): init of a refused plugin was called again: \"%s\"",
                     r->fixture, attempt + 1, tf_error_cause());
        const char *msg = tf_error_message();
        if (!strstr(msg, file))
            fail_msg("%s: the message does not name the file: \"%s\"", r->fixture, msg);
        char rest[1024];
        without(rest, sizeof rest, msg, path);
        for (int i = 0; i < 4 && r->needles[i]; i++)
            if (!strstr(rest, r->needles[i]))
                fail_msg("%s: the message lacks \"%s\": \"%s\"", r->fixture, r->needles[i], msg);
        /* Opening an engine of it fails the same way and leaves *out alone. */
        tf_engine *e = ENGINE_SENTINEL;
        TF_ASSERT_STATUS(tf_engine_open(path, 1, &e), r->status);
        assert_ptr_equal(e, ENGINE_SENTINEL);
    }
    assert_cpu_adds();
}

static void test_bad_major(void **state)
{
    const refusal r = {"bad-major", TF_ERR_PLUGIN_ABI, {"2", "1"}};
    check_refusal(&r);
}

static void test_no_entry(void **state)
{
    /* the message says how to export it (issue 20, item 11) */
    const refusal r = {"no-entry",
                       TF_ERR_PLUGIN_SYMBOL,
                       {TF_ENGINE_ENTRY_SYMBOL, "TF_ENGINE_EXPORT", "-fvisibility=hidden",
                        "nm -D --defined-only"}};
    check_refusal(&r);
}

/*
 * A plugin of the next major exports only tf_engine_plugin_v2. engine.h maps
 * "another major" to TF_ERR_PLUGIN_ABI; the message must still say which
 * symbol was expected.
 */
static void test_next_major(void **state)
{
    const refusal r = {"next-major", TF_ERR_PLUGIN_ABI, {TF_ENGINE_ENTRY_SYMBOL, "2"}};
    check_refusal(&r);
}

static void test_small_struct(void **state)
{
    char found[32], minimum[32];
    snprintf(found, sizeof found, "%zu", offsetof(tf_engine_plugin, synchronize));
    snprintf(minimum, sizeof minimum, "%zu", (size_t)TF_ENGINE_PLUGIN_MIN_SIZE);
    const refusal r = {"small-struct", TF_ERR_PLUGIN_STRUCT_SIZE, {found, minimum}};
    check_refusal(&r);
}

static void test_null_fn(void **state)
{
    const refusal r = {"null-fn", TF_ERR_PLUGIN_MISSING_FUNCTION, {"execute"}};
    check_refusal(&r);
}

static void test_null_name(void **state)
{
    const refusal r = {"null-name", TF_ERR_PLUGIN_MISSING_FUNCTION, {"name"}};
    check_refusal(&r);
}

static void test_entry_null(void **state)
{
    const refusal r = {"entry-null", TF_ERR_PLUGIN_ABI, {NULL}};
    check_refusal(&r);
}

static void test_not_elf(void **state)
{
    const refusal r = {"notelf", TF_ERR_PLUGIN_LOAD, {NULL}};
    check_refusal(&r);
    /* dlerror()'s text is the cause. */
    tf_plugin *p = PLUGIN_SENTINEL;
    TF_ASSERT_STATUS(tf_plugin_load(fixture("notelf"), &p), TF_ERR_PLUGIN_LOAD);
    assert_true(tf_error_cause()[0] != '\0');
}

static void test_init_fails(void **state)
{
    const refusal r = {"init-fails", TF_ERR_PLUGIN_INIT, {NULL}};
    check_refusal(&r);
    for (int i = 0; i < 3; i++) {
        tf_plugin *p = PLUGIN_SENTINEL;
        TF_ASSERT_STATUS(tf_plugin_load(fixture("init-fails"), &p), TF_ERR_PLUGIN_INIT);
        const char *cause = tf_error_cause();
        /* The plugin's own report is the cause... */
        if (!strstr(cause, "init-fails fixture: refusing"))
            fail_msg("cause lacks the plugin's report: \"%s\" (message \"%s\")", cause,
                     tf_error_message());
        /* ...and init ran once in this process: "the host then never calls it again". */
        if (init_call_number(cause) > 1)
            fail_msg("load %d: init of a refused plugin was called again: \"%s\"", i + 1, cause);
    }
}

static void test_not_found(void **state)
{
    tf_plugin *p = PLUGIN_SENTINEL;
    const char *missing = fixture("missing");
    TF_ASSERT_STATUS(tf_plugin_load(missing, &p), TF_ERR_PLUGIN_NOT_FOUND);
    assert_ptr_equal(p, PLUGIN_SENTINEL);
    assert_non_null(strstr(tf_error_message(), "tenferro-engine-missing.so"));

    TF_ASSERT_STATUS(tf_plugin_load("no-such-engine", &p), TF_ERR_PLUGIN_NOT_FOUND);
    assert_ptr_equal(p, PLUGIN_SENTINEL);
    assert_non_null(strstr(tf_error_message(), "no-such-engine"));

    tf_engine *e = ENGINE_SENTINEL;
    TF_ASSERT_STATUS(tf_engine_open("no-such-engine", 1, &e), TF_ERR_PLUGIN_NOT_FOUND);
    assert_ptr_equal(e, ENGINE_SENTINEL);
    TF_ASSERT_STATUS(tf_plugin_load(NULL, &p), TF_ERR_VALIDATION);
    assert_int_not_equal(tf_plugin_load("", &p), TF_OK);
    assert_ptr_equal(p, PLUGIN_SENTINEL);
    assert_cpu_adds();
}

/* ---- loading good plugins ---- */

static void test_load_twice_same_plugin(void **state)
{
    tf_plugin *a = NULL, *b = NULL, *c = NULL;
    TF_ASSERT_OK(tf_plugin_load("cpu", &a));
    TF_ASSERT_OK(tf_plugin_load("cpu", &b));
    assert_ptr_equal(a, b);
    assert_string_equal(tf_plugin_name(a), "cpu");
    assert_true(ends_with(tf_plugin_file(a), "/tenferro-engine-cpu.so"));
    TF_ASSERT_OK(tf_plugin_load(tf_plugin_file(a), &c));
    assert_ptr_equal(a, c);
    assert_true(tf_plugin_capabilities(a) & TF_ENGINE_CAP_HOST_MEMORY);
    assert_int_equal(tf_plugin_abi_major(a), TF_ENGINE_ABI_MAJOR);

    TF_ASSERT_OK(tf_plugin_load(fixture("devmem"), &a));
    TF_ASSERT_OK(tf_plugin_load(fixture("devmem"), &b));
    assert_ptr_equal(a, b);
    /* The same file by another spelling of its path is the same plugin. */
    char dotted[1100];
    snprintf(dotted, sizeof dotted, "%s/./tenferro-engine-devmem.so", TF_FIXTURE_DIR);
    TF_ASSERT_OK(tf_plugin_load(dotted, &c));
    assert_ptr_equal(a, c);

    assert_string_equal(tf_plugin_name(a), "devmem");
    assert_string_equal(tf_plugin_version(a), "0.1.0");
    assert_non_null(strstr(tf_plugin_description(a), "device memory"));
    assert_true(ends_with(tf_plugin_file(a), "/tenferro-engine-devmem.so"));
    assert_int_equal(tf_plugin_abi_major(a), 1);
    assert_int_equal(tf_plugin_abi_minor(a), TF_ENGINE_ABI_MINOR);
    assert_int_equal(tf_plugin_capabilities(a) & TF_ENGINE_CAP_HOST_MEMORY, 0);
    assert_int_equal(tf_plugin_device_count(a), 2);
}

static void test_newer_minor_accepted(void **state)
{
    tf_plugin *p = NULL;
    TF_ASSERT_OK(tf_plugin_load(fixture("newer-minor"), &p));
    assert_string_equal(tf_plugin_name(p), "newer-minor");
    assert_int_equal(tf_plugin_abi_major(p), TF_ENGINE_ABI_MAJOR);
    assert_int_equal(tf_plugin_abi_minor(p), TF_ENGINE_ABI_MINOR + 3);
    assert_string_equal(tf_plugin_description(p), "malformed-plugin fixture");
    tf_engine *e = NULL;
    TF_ASSERT_OK(tf_engine_create(p, NULL, &e));
    assert_ptr_equal(tf_engine_get_plugin(e), p);
    tf_engine_destroy(e);
}

typedef struct load_race {
    pthread_barrier_t *barrier;
    const char *path;
    tf_plugin *plugin;
    tf_status status;
} load_race;

static void *race_load(void *arg)
{
    load_race *r = arg;
    pthread_barrier_wait(r->barrier);
    r->status = tf_plugin_load(r->path, &r->plugin);
    return NULL;
}

/* Runs first, so that the plugin is not yet loaded when the threads race. */
static void test_concurrent_loads(void **state)
{
    enum {
        N = 8
    };
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, N);
    load_race r[N];
    pthread_t th[N];
    const char *path = fixture("faulty");
    for (int i = 0; i < N; i++) {
        r[i] = (load_race){&barrier, path, NULL, TF_ERR_BACKEND};
        assert_int_equal(pthread_create(&th[i], NULL, race_load, &r[i]), 0);
    }
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&barrier);
    for (int i = 0; i < N; i++) {
        assert_int_equal(r[i].status, TF_OK);
        assert_ptr_equal(r[i].plugin, r[0].plugin);
    }
}

/* ---- search path ---- */

static void test_plugin_path_env_first(void **state)
{
    char value[2300];
    snprintf(value, sizeof value, "%s:/nonexistent/tenferro-test-dir", TF_FIXTURE_DIR);
    setenv(ENV_PATH, value, 1);
    char **dirs = NULL;
    size_t count = 0;
    TF_ASSERT_OK(tf_plugin_path_get(&dirs, &count));
    assert_true(count >= 2);
    assert_null(dirs[count]);
    assert_string_equal(dirs[0], TF_FIXTURE_DIR);
    assert_string_equal(dirs[1], "/nonexistent/tenferro-test-dir");
    int build_at = -1;
    for (size_t i = 0; i < count; i++)
        if (strcmp(dirs[i], TF_TEST_PLUGIN_BUILD_DIR) == 0)
            build_at = (int)i;
    assert_true(build_at >= 2);
    tf_plugin_path_free(dirs);

    /* Read afresh on every call: without the variable the build tree comes first. */
    unsetenv(ENV_PATH);
    TF_ASSERT_OK(tf_plugin_path_get(&dirs, &count));
    assert_true(count >= 1);
    assert_string_equal(dirs[0], TF_TEST_PLUGIN_BUILD_DIR);
    for (size_t i = 0; i < count; i++)
        assert_string_not_equal(dirs[i], TF_FIXTURE_DIR);
    tf_plugin_path_free(dirs);

    /* By name, the fixture folder is searched. */
    setenv(ENV_PATH, TF_FIXTURE_DIR, 1);
    tf_plugin *by_name = NULL, *by_path = NULL;
    TF_ASSERT_OK(tf_plugin_load("devmem", &by_name));
    TF_ASSERT_OK(tf_plugin_load(fixture("devmem"), &by_path));
    assert_ptr_equal(by_name, by_path);
}

/*
 * In a child (a fresh loader): with TENFERRO_PLUGIN_PATH = `path`, loading
 * `name` gives the plugin whose description is `want` (if not NULL) from a
 * file in `want_dir` (if not NULL). Exit status 0 if so.
 */
static int child_expect(const char *path, const char *name, const char *want, const char *want_dir)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        setenv(ENV_PATH, path, 1);
        tf_plugin *p = NULL;
        if (tf_plugin_load(name, &p) != TF_OK) {
            fprintf(stderr, "child: load %s: %s\n", name, tf_error_message());
            _exit(2);
        }
        if ((want && strcmp(tf_plugin_description(p), want) != 0) ||
            (want_dir && strncmp(tf_plugin_file(p), want_dir, strlen(want_dir)) != 0)) {
            fprintf(stderr, "child: %s with %s=%s gave \"%s\" from %s, want \"%s\" from %s\n", name,
                    ENV_PATH, path, tf_plugin_description(p), tf_plugin_file(p),
                    want ? want : "(any)", want_dir ? want_dir : "(any)");
            _exit(3);
        }
        _exit(0);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void test_search_order(void **state)
{
    char a[1100], b[1100], ab[2300], ba[2300];
    snprintf(a, sizeof a, "%s/path-a", TF_FIXTURE_DIR);
    snprintf(b, sizeof b, "%s/path-b", TF_FIXTURE_DIR);
    snprintf(ab, sizeof ab, "%s:%s", a, b);
    snprintf(ba, sizeof ba, "%s:%s", b, a);
    assert_int_equal(child_expect(ab, "shadow", "shadow fixture in path-a", a), 0);
    assert_int_equal(child_expect(ba, "shadow", "shadow fixture in path-b", b), 0);
    /* The variable's folders come before the build tree's... */
    assert_int_equal(child_expect(a, "cpu", "shadow fixture in path-a", a), 0);
    /* ...and a folder without the file is passed over. */
    assert_int_equal(child_expect(b, "cpu", NULL, TF_TEST_PLUGIN_BUILD_DIR), 0);
}

/* ---- scanning ---- */

typedef struct expected_candidate {
    const char *name;
    tf_status status;
} expected_candidate;

static void test_scan(void **state)
{
    setenv(ENV_PATH, TF_FIXTURE_DIR, 1);
    tf_plugin_candidate *cands = NULL;
    size_t count = 0;
    TF_ASSERT_OK(tf_plugin_scan(&cands, &count));
    char init_retried[1024] = "";
    static const expected_candidate want[] = {
        {"bad-major", TF_ERR_PLUGIN_ABI},
        {"no-entry", TF_ERR_PLUGIN_SYMBOL},
        {"next-major", TF_ERR_PLUGIN_ABI},
        {"small-struct", TF_ERR_PLUGIN_STRUCT_SIZE},
        {"null-fn", TF_ERR_PLUGIN_MISSING_FUNCTION},
        {"null-name", TF_ERR_PLUGIN_MISSING_FUNCTION},
        {"init-fails", TF_ERR_PLUGIN_INIT},
        {"entry-null", TF_ERR_PLUGIN_ABI},
        {"notelf", TF_ERR_PLUGIN_LOAD},
        {"newer-minor", TF_OK},
        {"devmem", TF_OK},
        {"faulty", TF_OK},
    };
    for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
        char file[1100];
        snprintf(file, sizeof file, "%s", fixture(want[w].name));
        size_t hits = 0;
        for (size_t i = 0; i < count; i++) {
            if (strcmp(cands[i].path, file) != 0)
                continue;
            hits++;
            const tf_plugin_candidate *c = &cands[i];
            assert_non_null(c->kind);
            assert_string_equal(c->kind, "engine");
            if (c->status != want[w].status)
                fail_msg("scan: %s: %s, want %s (%s)", want[w].name, tf_status_name(c->status),
                         tf_status_name(want[w].status), c->message ? c->message : "(null)");
            assert_non_null(c->message);
            if (want[w].status == TF_OK) {
                assert_string_equal(c->message, "");
                assert_non_null(c->plugin);
                tf_plugin *p = NULL;
                TF_ASSERT_OK(tf_plugin_load(file, &p));
                assert_ptr_equal(p, c->plugin);
            } else {
                assert_null(c->plugin);
                /* A refused init is never retried (checked last, below). */
                if (init_call_number(c->message) > 1)
                    snprintf(init_retried, sizeof init_retried, "%s", c->message);
                char base[128];
                snprintf(base, sizeof base, "tenferro-engine-%s.so", want[w].name);
                if (!strstr(c->message, base))
                    fail_msg("scan: %s: message does not name the file: \"%s\"", want[w].name,
                             c->message);
            }
        }
        if (hits != 1)
            fail_msg("scan: %s reported %zu times, want once", want[w].name, hits);
    }
    int saw_cpu = 0;
    for (size_t i = 0; i < count; i++) {
        assert_null(strstr(cands[i].path, "not-a-plugin"));
        assert_null(strstr(cands[i].path, "/path-a/"));
        assert_null(strstr(cands[i].path, "/path-b/"));
        assert_true(ends_with(cands[i].path, ".so"));
        if (ends_with(cands[i].path, "/tenferro-engine-cpu.so")) {
            saw_cpu = 1;
            assert_int_equal(cands[i].status, TF_OK);
        }
    }
    assert_true(saw_cpu); /* the build tree is still on the path */
    tf_plugin_scan_free(cands, count);
    if (init_retried[0])
        fail_msg("scan: init of a refused plugin was called again: \"%s\"", init_retried);
    tf_plugin_scan_free(NULL, 0);
    assert_cpu_adds();
}

/* ---- engines: options, execution errors ---- */

static tf_status create_faulty(const char *fail_after_key, const char *fail_after, tf_engine **out)
{
    return tfr_engine_create(fixture("faulty"), 1, fail_after_key, fail_after, out);
}

static void test_faulty_engine_error_reaches_caller(void **state)
{
    tf_engine *e = NULL;
    TF_ASSERT_OK(create_faulty("fail_after", "2", &e));
    assert_string_equal(tf_engine_name(e), "faulty");
    assert_true(tf_engine_uses_host_memory(e));
    int64_t shape[1] = {3};
    double a[3] = {1, 2, 3};
    tf_tensor *ta = NULL, *out = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F64, 1, shape, a, 3, &ta));
    TF_ASSERT_OK(tf_tensor_empty(e, TF_F64, 1, shape, &out));
    assert_int_equal(tf_tensor_placement(out), TF_PLACEMENT_ENGINE);
    assert_true(tf_tensor_is_host_accessible(out));
    tf_binary_params add = {sizeof add, TF_BINARY_ADD};
    tf_tensor *ins[2] = {ta, ta};

    /* Unsupported combinations never reach execute (so they don't count). */
    tf_binary_params mul = {sizeof mul, TF_BINARY_MUL};
    TF_ASSERT_STATUS(tf_engine_execute(e, TF_PRIM_BINARY, &mul, 2, ins, 1, &out),
                     TF_ERR_UNSUPPORTED);
    assert_non_null(strstr(tf_error_message(), "faulty"));

    TF_ASSERT_OK(tf_engine_execute(e, TF_PRIM_BINARY, &add, 2, ins, 1, &out));
    const void *data;
    size_t count;
    TF_ASSERT_OK(tf_tensor_data(out, TF_F64, &data, &count));
    assert_true(((const double *)data)[2] == 6);
    TF_ASSERT_OK(tf_engine_execute(e, TF_PRIM_BINARY, &add, 2, ins, 1, &out));
    for (int k = 0; k < 2; k++) {
        tf_error_clear();
        TF_ASSERT_STATUS(tf_engine_execute(e, TF_PRIM_BINARY, &add, 2, ins, 1, &out),
                         TF_ERR_BACKEND);
        assert_int_equal(tf_error_status(), TF_ERR_BACKEND);
        assert_true(tf_error_message()[0] != '\0');
        if (!strstr(tf_error_cause(), "injected fault"))
            fail_msg("cause is \"%s\" (message \"%s\")", tf_error_cause(), tf_error_message());
        assert_non_null(strstr(tf_error_message(), "engine 'faulty': binary add failed ("));
    }
    /* a primitive without sub-ops is named alone (issue 20, item 11: not "copy  failed") */
    TF_ASSERT_STATUS(tf_engine_execute(e, TF_PRIM_COPY, NULL, 1, ins, 1, &out), TF_ERR_BACKEND);
    if (!strstr(tf_error_message(), "engine 'faulty': copy failed (TF_ERR_BACKEND)"))
        fail_msg("message \"%s\"", tf_error_message());
    tf_tensor_release(out);
    tf_tensor_release(ta);
    tf_engine_destroy(e);
    assert_cpu_adds();

    /* Without the option it never fails. */
    TF_ASSERT_OK(create_faulty(NULL, NULL, &e));
    TF_ASSERT_OK(tf_tensor_empty(e, TF_F64, 1, shape, &out));
    tf_fill_params fill = {sizeof fill, 0, {1.0, 0}, 0};
    for (int i = 0; i < 20; i++)
        TF_ASSERT_OK(tf_engine_execute(e, TF_PRIM_FILL, &fill, 0, NULL, 1, &out));
    tf_tensor_release(out);
    tf_engine_destroy(e);
}

static void test_engine_create_errors(void **state)
{
    tf_engine *e = ENGINE_SENTINEL;
    TF_ASSERT_STATUS(create_faulty("fail_later", "1", &e), TF_ERR_VALIDATION);
    assert_ptr_equal(e, ENGINE_SENTINEL);
    assert_non_null(strstr(tf_error_cause(), "fail_later"));
    TF_ASSERT_STATUS(create_faulty("fail_after", "soon", &e), TF_ERR_VALIDATION);
    assert_non_null(strstr(tf_error_cause(), "soon"));
    assert_ptr_equal(e, ENGINE_SENTINEL);

    tf_plugin *dm = NULL;
    TF_ASSERT_OK(tf_plugin_load(fixture("devmem"), &dm));
    tf_engine_options opt;
    memset(&opt, 0, sizeof opt);
    opt.struct_size = sizeof opt;
    opt.device_index = 5;
    TF_ASSERT_STATUS(tf_engine_create(dm, &opt, &e), TF_ERR_VALIDATION);
    assert_ptr_equal(e, ENGINE_SENTINEL);
    assert_non_null(strstr(tf_error_cause(), "no device 5"));

    tf_test_log_start(TF_LOG_INFO);
    opt.device_index = 0;
    opt.device_name = "devmem-1";
    TF_ASSERT_OK(tf_engine_create(dm, &opt, &e));
    assert_ptr_equal(tf_engine_get_plugin(e), dm);
    assert_int_equal(tf_test_log_count(TF_LOG_INFO, "on devmem-1"), 1);
    tf_engine_destroy(e);
    tf_engine_destroy(NULL);
}

static void test_devmem_execute_and_placement(void **state)
{
    tf_engine *dev = NULL, *cpu = NULL;
    TF_ASSERT_OK(tf_engine_open(fixture("devmem"), 0, &dev));
    TF_ASSERT_OK(tf_engine_open("cpu", 1, &cpu));
    int64_t shape[2] = {3, 3};
    tf_tensor *m = NULL, *diag = NULL, *host = NULL, *out = TENSOR_SENTINEL;
    TF_ASSERT_OK(tf_tensor_empty(dev, TF_I64, 2, shape, &m));

    /* FILL everything with 0, then the diagonal (a strided output) with 1. */
    tf_fill_params fill = {sizeof fill, 0, {0.0, 0}, 0};
    TF_ASSERT_OK(tf_engine_execute(dev, TF_PRIM_FILL, &fill, 0, NULL, 1, &m));
    TF_ASSERT_OK(tf_tensor_diagonal(m, 0, 1, &diag));
    fill.value.i = 1;
    TF_ASSERT_OK(tf_engine_execute(dev, TF_PRIM_FILL, &fill, 0, NULL, 1, &diag));
    TF_ASSERT_OK(tf_engine_download(dev, m, &host));
    int64_t got[9];
    TF_ASSERT_OK(tf_tensor_copy_to_host(host, TF_I64, got, 9));
    for (int k = 0; k < 9; k++)
        assert_int_equal(got[k], k % 4 == 0 ? 1 : 0);
    tf_tensor_release(host);

    /* COPY materialises a transposed slice on the device. */
    int64_t vals[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    tf_tensor *h = NULL, *d = NULL, *tr = NULL, *dst = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(TF_I64, 2, shape, vals, 9, &h));
    TF_ASSERT_OK(tf_engine_upload(dev, h, &d));
    TF_ASSERT_OK(tf_tensor_transpose(d, (int[]){1, 0}, &tr));
    TF_ASSERT_OK(tf_tensor_empty(dev, TF_I64, 2, shape, &dst));
    TF_ASSERT_OK(tf_engine_execute(dev, TF_PRIM_COPY, NULL, 1, &tr, 1, &dst));
    TF_ASSERT_OK(tf_engine_download(dev, dst, &host));
    TF_ASSERT_OK(tf_tensor_copy_to_host(host, TF_I64, got, 9));
    const int64_t want_t[9] = {0, 3, 6, 1, 4, 7, 2, 5, 8};
    assert_memory_equal(got, want_t, sizeof want_t);
    tf_tensor_release(host);

    /* What devmem does not claim is refused before it runs, naming engine and dtype. */
    tf_binary_params add = {sizeof add, TF_BINARY_ADD};
    tf_tensor *ins[2] = {d, d};
    TF_ASSERT_STATUS(tf_engine_execute(dev, TF_PRIM_BINARY, &add, 2, ins, 1, &dst),
                     TF_ERR_UNSUPPORTED);
    assert_non_null(strstr(tf_error_message(), "devmem"));
    assert_non_null(strstr(tf_error_message(), "i64"));
    assert_true(strstr(tf_error_message(), tf_prim_op_name(TF_PRIM_BINARY, TF_BINARY_ADD)) ||
                strstr(tf_error_message(), tf_prim_name(TF_PRIM_BINARY)));
    assert_false(tf_engine_supports(dev, TF_PRIM_BINARY, TF_BINARY_ADD,
                                    (tf_dtype[]){TF_I64, TF_I64, TF_I64}, 3));
    assert_true(tf_engine_supports(dev, TF_PRIM_COPY, 0, (tf_dtype[]){TF_I64, TF_I64}, 2));

    /* Host memory into the device engine, device memory into the CPU engine. */
    TF_ASSERT_STATUS(tf_engine_execute(dev, TF_PRIM_COPY, NULL, 1, &h, 1, &dst), TF_ERR_PLACEMENT);
    tf_tensor *cpu_out = NULL;
    TF_ASSERT_OK(tf_tensor_empty(cpu, TF_I64, 2, shape, &cpu_out));
    TF_ASSERT_STATUS(tf_engine_execute(cpu, TF_PRIM_COPY, NULL, 1, &d, 1, &cpu_out),
                     TF_ERR_PLACEMENT);
    TF_ASSERT_STATUS(tf_engine_execute(dev, TF_PRIM_COPY, NULL, 1, &d, 1, &cpu_out),
                     TF_ERR_PLACEMENT);
    out = TENSOR_SENTINEL;
    TF_ASSERT_STATUS(tf_engine_upload(cpu, d, &out), TF_ERR_PLACEMENT);
    assert_ptr_equal(out, TENSOR_SENTINEL);
    TF_ASSERT_STATUS(tf_engine_download(cpu, d, &out), TF_ERR_PLACEMENT);
    assert_ptr_equal(out, TENSOR_SENTINEL);
    TF_ASSERT_STATUS(tf_engine_download(dev, cpu_out, &out), TF_ERR_PLACEMENT);
    assert_ptr_equal(out, TENSOR_SENTINEL);

    tf_tensor_release(cpu_out);
    tf_tensor_release(dst);
    tf_tensor_release(tr);
    tf_tensor_release(d);
    tf_tensor_release(h);
    tf_tensor_release(diag);
    tf_tensor_release(m);
    tf_engine_destroy(cpu);
    tf_engine_destroy(dev);
}

/* ---- device info ---- */

static void test_device_info(void **state)
{
    tf_plugin *cpu = NULL, *dm = NULL;
    TF_ASSERT_OK(tf_plugin_load("cpu", &cpu));
    TF_ASSERT_OK(tf_plugin_load(fixture("devmem"), &dm));
    assert_true(tf_plugin_device_count(cpu) >= 1);

    tf_device_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    TF_ASSERT_OK(tf_plugin_device_info(cpu, 0, &info));
    assert_int_equal(info.struct_size, sizeof info);
    assert_int_equal(info.type, TF_DEVICE_CPU);
    assert_true(info.flags & TF_DEVICE_FLAG_HOST_MEMORY);
    assert_true(info.name[0] != '\0');
    assert_non_null(memchr(info.name, '\0', sizeof info.name));
    assert_non_null(memchr(info.driver, '\0', sizeof info.driver));

    /* A caller that knows only the fields up to compute_units. */
    const uint32_t small = (uint32_t)offsetof(tf_device_info, memory_bytes);
    tf_plugin *plugins[2] = {cpu, dm};
    for (int i = 0; i < 2; i++) {
        memset(&info, 0xA5, sizeof info);
        info.struct_size = small;
        TF_ASSERT_OK(tf_plugin_device_info(plugins[i], 0, &info));
        assert_int_equal(info.struct_size, small);
        assert_int_not_equal(info.type, 0xA5A5A5A5u);
        const unsigned char *tail = (const unsigned char *)&info + small;
        for (size_t k = 0; k < sizeof info - small; k++)
            if (tail[k] != 0xA5)
                fail_msg("%s: byte %zu past struct_size %u was written", tf_plugin_name(plugins[i]),
                         small + k, small);
    }
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    TF_ASSERT_OK(tf_plugin_device_info(dm, 1, &info));
    assert_string_equal(info.name, "devmem-1");
    assert_int_equal(info.flags & TF_DEVICE_FLAG_HOST_MEMORY, 0);
    assert_int_not_equal(tf_plugin_device_info(dm, 2, &info), TF_OK);
    assert_int_not_equal(tf_plugin_device_info(cpu, tf_plugin_device_count(cpu), &info), TF_OK);
}

/* ---- engine lifetime ---- */

static void *release_on_thread(void *tensor)
{
    tf_tensor_release(tensor);
    return NULL;
}

static void test_engine_outlives_destroy_while_tensors_live(void **state)
{
    tf_test_log_start(TF_LOG_INFO);
    tf_engine *e = NULL;
    TF_ASSERT_OK(tf_engine_open(fixture("devmem"), 0, &e));
    assert_int_equal(tf_test_log_count(TF_LOG_INFO, "devmem: create instance"), 1);

    double vals[4] = {1, 2, 3, 4};
    tf_tensor *h = NULL, *d = NULL, *rev = NULL, *back = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F64, 1, (int64_t[]){4}, vals, 4, &h));
    TF_ASSERT_OK(tf_engine_upload(e, h, &d));
    tf_engine_destroy(e);
    /* The tensor keeps the instance alive. */
    assert_int_equal(tf_test_log_count(TF_LOG_INFO, "devmem: destroy instance"), 0);
    tf_engine *owner = tf_tensor_engine(d);
    assert_ptr_equal(owner, e);
    TF_ASSERT_OK(tf_tensor_reverse(d, 1, (int[]){0}, &rev));
    TF_ASSERT_OK(tf_engine_download(owner, rev, &back));
    double got[4];
    TF_ASSERT_OK(tf_tensor_copy_to_host(back, TF_F64, got, 4));
    assert_true(got[0] == 4 && got[3] == 1);
    tf_tensor_release(back);
    tf_tensor_release(d);
    assert_int_equal(tf_test_log_count(TF_LOG_INFO, "devmem: destroy instance"), 0);
    /* The last tensor of the instance, released on another thread. */
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, release_on_thread, rev), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(tf_test_log_count(TF_LOG_INFO, "devmem: destroy instance"), 1);
    assert_int_equal(tf_test_log_count(TF_LOG_ERROR, "live buffers"), 0);

    /* Without tensors, destroy tears down at once. */
    TF_ASSERT_OK(tf_engine_open(fixture("devmem"), 0, &e));
    tf_engine_destroy(e);
    assert_int_equal(tf_test_log_count(TF_LOG_INFO, "devmem: destroy instance"), 2);

    /* A host-memory engine's tensors stay readable after destroy. */
    tf_engine *cpu = NULL;
    tf_tensor *t = NULL;
    TF_ASSERT_OK(tf_engine_open("cpu", 1, &cpu));
    TF_ASSERT_OK(tf_tensor_empty(cpu, TF_F64, 1, (int64_t[]){4}, &t));
    tf_fill_params fill = {sizeof fill, 0, {2.5, 0}, 0};
    TF_ASSERT_OK(tf_engine_execute(cpu, TF_PRIM_FILL, &fill, 0, NULL, 1, &t));
    tf_engine_destroy(cpu);
    const void *data;
    size_t count;
    TF_ASSERT_OK(tf_tensor_data(t, TF_F64, &data, &count));
    assert_true(((const double *)data)[3] == 2.5);
    tf_tensor_release(t);
    tf_tensor_release(h);
    if (tf_test_log_count(TF_LOG_ERROR, "") != 0)
        tf_test_log_dump();
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_concurrent_loads),
        T(test_bad_major),
        T(test_no_entry),
        T(test_next_major),
        T(test_small_struct),
        T(test_null_fn),
        T(test_null_name),
        T(test_entry_null),
        T(test_not_elf),
        T(test_init_fails),
        T(test_not_found),
        T(test_load_twice_same_plugin),
        T(test_newer_minor_accepted),
        T(test_plugin_path_env_first),
        T(test_search_order),
        T(test_scan),
        T(test_faulty_engine_error_reaches_caller),
        T(test_engine_create_errors),
        T(test_devmem_execute_and_placement),
        T(test_device_info),
        T(test_engine_outlives_destroy_while_tensors_live),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
