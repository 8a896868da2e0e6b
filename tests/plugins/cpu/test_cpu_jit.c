/*
 * test_cpu_jit.c - the CPU engine's hot-program compiler (cpu_jit.c) against
 * its interpreter. A compiled FUSED program must give every output bit for bit
 * what the interpreter gives (which test_cpu_fused.c and test_cpu_fused_reduce.c
 * hold to the separate calls): the referee of the compiled path.
 *
 * Each program runs on an engine with jit=off (the reference) and on engines
 * with jit=always, serial and threaded, on the same input values: random
 * programs of every float op with immediates, 1 to 8 elementwise outputs or a
 * reduced output (every reduce op, the reduced register also an elementwise
 * output or not), f32 and f64, dense inputs and random layouts (strided rows
 * run interpreted, so one call mixes both), lengths around the generated
 * loop's chunk (256), REDUCE's 8 lanes and its unit (8192 positions), and rank
 * 2 shapes whose rows start inside a group of lanes. Then the paths a user can
 * reach: a compiler that does not exist (jit=always: the call fails with
 * TF_ERR_BACKEND and writes nothing; jit=auto: the call runs interpreted), one
 * that runs and fails, the store of compiled programs kept between processes
 * (a program loaded from it without a compiler, a foreign file there never
 * loaded, a folder open to others refused), the in-place form (out[0] one of the
 * inputs, through the plugin itself: cpu_direct.h), and the options' bad values.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cpu_direct.h"
#include "tf_ref.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define N_ENGINES 3

static const tf_dtype float_dtypes[] = {TF_F32, TF_F64};

/* [0]: jit=off, the reference; [1]: jit=always serial; [2]: jit=always, 4 threads. */
static tf_engine *engines[N_ENGINES];

typedef struct prog {
    uint32_t n_in, m; /* m: elementwise outputs named (0: the last step alone) */
    int reduce;       /* a reduced output (REDUCE op + 1), or 0 */
    tf_fused_step steps[TF_FUSED_MAX_STEPS];
    uint32_t outputs[TF_FUSED_MAX_OUTPUTS];
    double imm[TF_FUSED_MAX_IMMEDIATES];
    tf_fused_params params;
} prog;

static int setup(void **state)
{
    (void)state;
    static const struct {
        int threads;
        const char *jit;
    } configs[N_ENGINES] = {{1, "off"}, {1, "always"}, {4, "always"}};
    for (int k = 0; k < N_ENGINES; k++) {
        tf_status st =
            tfr_engine_create("cpu", configs[k].threads, "jit", configs[k].jit, &engines[k]);
        if (st != TF_OK) {
            print_error("cpu engine jit=%s: %s\n", configs[k].jit, tf_error_message());
            return -1;
        }
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (int k = 0; k < N_ENGINES; k++)
        tf_engine_destroy(engines[k]);
    return 0;
}

/* A random program: steps of every float op, some operands immediates, m outputs in
   order, and (reduce) the reduced step as test_cpu_fused_reduce.c picks it. */
static void prog_random(tfr_rng *rng, uint32_t n_in, uint32_t n_steps, int reduce, prog *p)
{
    memset(p, 0, sizeof *p);
    p->n_in = n_in;
    tfr_fused_random_steps(rng, n_in, n_steps, p->steps);
    uint32_t n_imm = tfr_rng_chance(rng, 50) ? (uint32_t)tfr_rng_int(rng, 1, 3) : 0;
    for (uint32_t j = 0; j < n_imm; j++)
        p->imm[j] = tfr_rng_chance(rng, 20) ? 0.0 : tfr_rng_real(rng, -2.0, 2.0);
    for (uint32_t k = 0; k < n_steps && n_imm > 0; k++) {
        tf_fused_step *st = &p->steps[k];
        if (tfr_rng_chance(rng, 25))
            st->a = TF_FUSED_IMM | (uint32_t)tfr_rng_int(rng, 0, n_imm - 1);
        else if (st->kind == TF_FUSED_BINARY && tfr_rng_chance(rng, 25))
            st->b = TF_FUSED_IMM | (uint32_t)tfr_rng_int(rng, 0, n_imm - 1);
    }
    uint32_t most = n_steps < TF_FUSED_MAX_OUTPUTS - 1 ? n_steps : TF_FUSED_MAX_OUTPUTS - 1;
    p->m = tfr_rng_chance(rng, 30) ? 0 : (uint32_t)tfr_rng_int(rng, 1, most);
    uint32_t n = 0;
    for (uint32_t k = 0; k < n_steps && n < p->m; k++) /* selection sampling, in order */
        if ((uint32_t)tfr_rng_int(rng, 0, n_steps - 1 - k) < p->m - n)
            p->outputs[n++] = k;
    if (!reduce && p->m > 0)
        p->outputs[p->m - 1] = n_steps - 1; /* the last output is the last step */
    uint32_t reduce_step = n_steps - 1;
    if (p->m > 0 && p->outputs[p->m - 1] == n_steps - 1)
        reduce_step =
            tfr_rng_chance(rng, 30) ? n_steps - 1 : (uint32_t)tfr_rng_int(rng, 0, n_steps - 1);
    p->reduce = reduce;
    p->params = (tf_fused_params){sizeof p->params,
                                  n_steps,
                                  p->steps,
                                  p->m,
                                  p->outputs,
                                  n_imm,
                                  p->imm,
                                  (uint32_t)reduce,
                                  reduce ? reduce_step : 0};
}

/* The outputs' count: the elementwise ones (at least one without a reduction), then the
   reduced one. */
static uint32_t n_outputs(const prog *p)
{
    if (p->reduce)
        return p->m + 1;
    return p->m > 0 ? p->m : 1;
}

/* Runs p on every engine with the same input values (seed) and compares the outputs
   with engine 0's bit for bit. */
static void check_prog(const prog *p, tf_dtype dtype, size_t rank, const int64_t *shape,
                       tfr_layout layout, uint64_t seed, const char *label)
{
    char desc[700], what[1000];
    tfr_fused_describe(p->n_in, p->params.n_steps, p->steps, desc, sizeof desc);
    snprintf(what, sizeof what, "%s %s rank %zu numel %zu layout %d [%s] m %u reduce %d imm %u",
             label, tf_dtype_name(dtype), rank, tfr_numel(rank, shape), (int)layout, desc, p->m,
             p->reduce, p->params.n_imm);
    static const int64_t ones[TF_MAX_RANK] = {1, 1, 1, 1, 1, 1, 1, 1};
    const uint32_t n_out = n_outputs(p);
    tf_scalar *want[TF_FUSED_MAX_OUTPUTS + 1] = {NULL};
    for (int k = 0; k < N_ENGINES; k++) {
        tfr_rng rng;
        tfr_rng_seed(&rng, seed);
        tfr_input in[TF_FUSED_MAX_INPUTS];
        tf_tensor *args[TF_FUSED_MAX_INPUTS], *out[TF_FUSED_MAX_OUTPUTS + 1];
        for (uint32_t i = 0; i < p->n_in; i++) {
            tfr_gen gen = {tfr_rng_chance(&rng, 15) ? TFR_SPECIAL : TFR_UNIFORM, -1.0, 1.0};
            tfr_input_make(&in[i], &rng, engines[k], dtype, rank, shape, layout, &gen);
            args[i] = in[i].t;
        }
        for (uint32_t o = 0; o < n_out; o++) {
            const int red = p->reduce && o == n_out - 1;
            out[o] = tfr_output(engines[k], dtype, red ? 0 : rank, red ? ones : shape);
        }
        tfr_exec_ok(what, engines[k], TF_PRIM_FUSED, &p->params, p->n_in, args, n_out, out);
        for (uint32_t o = 0; o < n_out; o++) {
            tf_scalar *got = tfr_read(out[o]);
            if (k == 0) {
                want[o] = got;
            } else {
                char which[1100];
                snprintf(which, sizeof which, "%s: engine %d, output %u", what, k, o);
                tfr_check_same_bits(which, dtype, tf_tensor_numel(out[o]), got, want[o]);
                free(got);
            }
            tf_tensor_release(out[o]);
        }
        for (uint32_t i = 0; i < p->n_in; i++)
            tfr_input_free(&in[i]);
    }
    for (uint32_t o = 0; o < n_out; o++)
        free(want[o]);
}

static void check_random(tfr_rng *rng, tf_dtype dtype, size_t rank, const int64_t *shape,
                         int reduce, tfr_layout layout, const char *label)
{
    uint32_t n_in = (uint32_t)tfr_rng_int(rng, 1, TF_FUSED_MAX_INPUTS);
    uint32_t n_steps = (uint32_t)tfr_rng_int(rng, 1, TF_FUSED_MAX_STEPS);
    prog p;
    prog_random(rng, n_in, n_steps, reduce, &p);
    check_prog(&p, dtype, rank, shape, layout, (uint64_t)tfr_rng_int(rng, 1, 1 << 30), label);
}

/* Random programs on dense vectors of random lengths, every reduce op or none. */
static void test_jit_random_dense(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 2401);
    for (size_t d = 0; d < COUNT(float_dtypes); d++)
        for (int t = 0; t < 60; t++) {
            const int64_t n = tfr_rng_int(&rng, 1, 3000);
            const int reduce = tfr_rng_chance(&rng, 50) ? (int)tfr_rng_int(&rng, 1, 4) : 0;
            check_random(&rng, float_dtypes[d], 1, &n, reduce, TFR_DENSE, "dense");
        }
}

/* Random programs over random shapes and layouts: strided rows run interpreted. */
static void test_jit_random_layouts(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 2402);
    for (size_t d = 0; d < COUNT(float_dtypes); d++)
        for (int t = 0; t < 60; t++) {
            int64_t shape[TF_MAX_RANK];
            size_t rank = (size_t)tfr_rng_int(&rng, 0, 4);
            tfr_random_shape(&rng, rank, rank > 2 ? 6 : 40, 8, shape);
            const int reduce = tfr_rng_chance(&rng, 50) ? (int)tfr_rng_int(&rng, 1, 4) : 0;
            check_random(&rng, float_dtypes[d], rank, shape, reduce, tfr_random_layout(&rng),
                         "layout");
        }
}

/* Lengths around the chunk, the lanes and REDUCE's unit; rank 2 shapes whose rows
   (3 or 13 long) start inside a group of 8 lanes, so one unit mixes the compiled
   fold of whole groups and the interpreter's. */
static void test_jit_lengths(void **state)
{
    (void)state;
    static const int64_t lengths[] = {7,    8,    9,    255,  256,   257,  1000,
                                      8191, 8192, 8193, 8200, 16385, 40003};
    tfr_rng rng;
    tfr_rng_seed(&rng, 2403);
    for (size_t d = 0; d < COUNT(float_dtypes); d++)
        for (size_t l = 0; l < COUNT(lengths); l++) {
            const int reduce = (int)(l % 5); /* none, then each op */
            check_random(&rng, float_dtypes[d], 1, &lengths[l], reduce, TFR_DENSE, "length");
            const int64_t rows = lengths[l] / 13 + 1;
            const int64_t inner[2] = {13, rows}, narrow[2] = {3, lengths[l] / 3 + 1};
            check_random(&rng, float_dtypes[d], 2, inner, reduce ? reduce : 1, TFR_DENSE,
                         "rows of 13");
            check_random(&rng, float_dtypes[d], 2, narrow, (int)(l % 4) + 1, TFR_DENSE,
                         "rows of 3");
        }
}

/* The elementwise bench's training step (exp(x) * y + x summed, and its gradient
   y * exp(x) + 1 written), on a length of many units split between threads. */
static void test_jit_training_step(void **state)
{
    (void)state;
    prog p;
    memset(&p, 0, sizeof p);
    p.n_in = 2;
    p.m = 1;
    p.reduce = TF_REDUCE_SUM + 1;
    const tf_fused_step steps[5] = {
        {TF_FUSED_UNARY, TF_UNARY_EXP, 0, 0},
        {TF_FUSED_BINARY, TF_BINARY_MUL, 2, 1},
        {TF_FUSED_BINARY, TF_BINARY_ADD, 3, 0},
        {TF_FUSED_BINARY, TF_BINARY_MUL, 1, 2},
        {TF_FUSED_BINARY, TF_BINARY_ADD, TF_FUSED_IMM | 0, 5},
    };
    memcpy(p.steps, steps, sizeof steps);
    p.outputs[0] = 4;
    p.imm[0] = 1.0;
    p.params = (tf_fused_params){sizeof p.params,   5, p.steps, 1, p.outputs, 1, p.imm,
                                 TF_REDUCE_SUM + 1, 2};
    const int64_t n = (1 << 19) + 5;
    for (size_t d = 0; d < COUNT(float_dtypes); d++)
        check_prog(&p, float_dtypes[d], 1, &n, TFR_DENSE, 2404, "training step");
}

/* A serial CPU engine with the options jit, jit_cc and jit_cache. */
static tf_status engine_with_store(const char *jit, const char *cc, const char *cache,
                                   tf_engine **out)
{
    tf_plugin *plugin = NULL;
    tf_status st = tf_plugin_load("cpu", &plugin);
    if (st != TF_OK)
        return st;
    const char *keys[3] = {"jit", "jit_cc", "jit_cache"}, *values[3] = {jit, cc, cache};
    tf_engine_options opt;
    memset(&opt, 0, sizeof opt);
    opt.struct_size = sizeof opt;
    opt.threads = 1;
    opt.n_extra = 3;
    opt.extra_keys = keys;
    opt.extra_values = values;
    return tf_engine_create(plugin, &opt, out);
}

/* The same with no store: every compile is a real one. */
static tf_status engine_with_cc(const char *jit, const char *cc, tf_engine **out)
{
    return engine_with_store(jit, cc, "off", out);
}

static const tf_fused_step exp_add_steps[2] = {{TF_FUSED_UNARY, TF_UNARY_EXP, 0, 0},
                                               {TF_FUSED_BINARY, TF_BINARY_ADD, 1, 0}};

/* Under jit=always with the compiler cc, exp(x) + x fails with TF_ERR_BACKEND, a cause
   holding `cause`, and the output as it was. */
static void expect_always_fails(const char *cc, const char *cause)
{
    tf_engine *always = NULL;
    assert_int_equal(engine_with_cc("always", cc, &always), TF_OK);
    tf_fused_params fp = {sizeof fp, 2, exp_add_steps, 0, NULL, 0, NULL, 0, 0};
    const int64_t n = 70000;
    tfr_rng rng;
    tfr_rng_seed(&rng, 2405);
    tfr_gen gen = {TFR_UNIFORM, -1.0, 1.0};
    tfr_input in;
    tfr_input_make(&in, &rng, always, TF_F64, 1, &n, TFR_DENSE, &gen);
    tf_tensor *out = tfr_output(always, TF_F64, 1, &n);
    tfr_expect_reject(always, cc, TF_PRIM_FUSED, &fp, 1, &in.t, 1, &out, TF_ERR_BACKEND);
    tf_error_clear();
    assert_int_equal(tf_engine_execute(always, TF_PRIM_FUSED, &fp, 1, &in.t, 1, &out),
                     TF_ERR_BACKEND);
    if (strstr(tf_error_cause(), cause) == NULL)
        fail_msg("jit=always, jit_cc=%s: cause \"%s\", not \"%s\"", cc, tf_error_cause(), cause);
    tf_tensor_release(out);
    tfr_input_free(&in);
    tf_engine_destroy(always);
}

/* A compiler that runs and fails (false: exit status 1): the same, the status named. */
static void test_jit_compiler_fails(void **state)
{
    (void)state;
    expect_always_fails("false", "cpu: jit: \"false\" failed (status 1)");
}

/* The interpreter's (engine 0's) exp(x) + x on n f64 values drawn with seed: the reference. */
static tf_scalar *exp_add_reference(uint64_t seed, int64_t n)
{
    tf_fused_params fp = {sizeof fp, 2, exp_add_steps, 0, NULL, 0, NULL, 0, 0};
    tfr_gen gen = {TFR_UNIFORM, -1.0, 1.0};
    tfr_rng rng;
    tfr_input in;
    tfr_rng_seed(&rng, seed);
    tfr_input_make(&in, &rng, engines[0], TF_F64, 1, &n, TFR_DENSE, &gen);
    tf_tensor *out = tfr_output(engines[0], TF_F64, 1, &n);
    tfr_exec_ok("the reference", engines[0], TF_PRIM_FUSED, &fp, 1, &in.t, 1, &out);
    tf_scalar *ref = tfr_read(out);
    tf_tensor_release(out);
    tfr_input_free(&in);
    return ref;
}

/* A compiler that cannot run: jit=always fails the call with TF_ERR_BACKEND and leaves
   the outputs as they were; jit=auto runs the program interpreted, right. */
static void test_jit_no_compiler(void **state)
{
    (void)state;
    expect_always_fails("/nonexistent/tenferro-cc", "cpu: jit: cannot run the compiler");
    tf_engine *autoe = NULL;
    assert_int_equal(engine_with_cc("auto", "/nonexistent/tenferro-cc", &autoe), TF_OK);
    tf_fused_params fp = {sizeof fp, 2, exp_add_steps, 0, NULL, 0, NULL, 0, 0};
    const int64_t n = 600000; /* 5 runs: above the work after which auto compiles */
    tfr_rng rng;
    tfr_gen gen = {TFR_UNIFORM, -1.0, 1.0};
    tfr_input in;
    tf_tensor *out;
    tf_scalar *want = exp_add_reference(2406, n);
    tfr_rng_seed(&rng, 2406);
    tfr_input_make(&in, &rng, autoe, TF_F64, 1, &n, TFR_DENSE, &gen);
    for (int run = 0; run < 5; run++) { /* past the runs after which auto compiles */
        out = tfr_output(autoe, TF_F64, 1, &n);
        tfr_exec_ok("jit=auto, no compiler", autoe, TF_PRIM_FUSED, &fp, 1, &in.t, 1, &out);
        tf_scalar *got = tfr_read(out);
        tfr_check_same_bits("jit=auto, no compiler", TF_F64, (size_t)n, got, want);
        free(got);
        tf_tensor_release(out);
    }
    free(want);
    tfr_input_free(&in);
    tf_engine_destroy(autoe);
}

/* exp(x) + x on 70000 f64 values (seed 2407) on engine e: TF_OK with the interpreter's
   bits, or (want != TF_OK) that status with the output untouched. */
static void run_exp_add(tf_engine *e, tf_status want, const char *what)
{
    tf_fused_params fp = {sizeof fp, 2, exp_add_steps, 0, NULL, 0, NULL, 0, 0};
    const int64_t n = 70000;
    tfr_gen gen = {TFR_UNIFORM, -1.0, 1.0};
    tfr_rng rng;
    tfr_input in;
    tf_tensor *out;
    tf_scalar *ref = exp_add_reference(2407, n);
    tfr_rng_seed(&rng, 2407);
    tfr_input_make(&in, &rng, e, TF_F64, 1, &n, TFR_DENSE, &gen);
    out = tfr_output(e, TF_F64, 1, &n);
    if (want == TF_OK) {
        tfr_exec_ok(what, e, TF_PRIM_FUSED, &fp, 1, &in.t, 1, &out);
        tf_scalar *got = tfr_read(out);
        tfr_check_same_bits(what, TF_F64, (size_t)n, got, ref);
        free(got);
    } else {
        tfr_expect_reject(e, what, TF_PRIM_FUSED, &fp, 1, &in.t, 1, &out, want);
    }
    free(ref);
    tf_tensor_release(out);
    tfr_input_free(&in);
}

/* The stored programs' files in dir (names ending in .so). */
static int count_stored(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ls %s/*.so 2>/dev/null | wc -l", dir);
    FILE *f = popen(cmd, "r");
    int n = -1;
    if (f == NULL || fscanf(f, "%d", &n) != 1)
        n = -1;
    if (f != NULL)
        pclose(f);
    return n;
}

/* The store (option jit_cache): a program compiled by one engine is loaded by the next
   without the compiler, bit for bit; a stored file that is not that program's (here
   garbage) is never loaded; a folder open to others, or a relative path, is refused at
   create with TF_ERR_VALIDATION. */
static void test_jit_store(void **state)
{
    (void)state;
    char root[] = "/tmp/tenferro-jit-store-test-XXXXXX";
    assert_non_null(mkdtemp(root));
    char cc[128], store[128], cmd[400];
    snprintf(cc, sizeof cc, "%s/cc", root);
    snprintf(store, sizeof store, "%s/store", root); /* made by the engine */
    FILE *f = fopen(cc, "w");
    assert_non_null(f);
    fputs("#!/bin/sh\nexec cc \"$@\"\n", f);
    fclose(f);
    assert_int_equal(chmod(cc, 0700), 0);

    tf_engine *e = NULL;
    assert_int_equal(engine_with_store("always", cc, store, &e), TF_OK);
    run_exp_add(e, TF_OK, "compiled into the store");
    tf_engine_destroy(e);
    assert_int_equal(count_stored(store), 1);

    assert_int_equal(unlink(cc), 0); /* from here on no compiler runs */
    assert_int_equal(engine_with_store("always", cc, store, &e), TF_OK);
    run_exp_add(e, TF_OK, "loaded from the store, no compiler");
    tf_engine_destroy(e);

    snprintf(cmd, sizeof cmd, "for f in %s/*.so; do head -c 4000 /dev/urandom > $f; done", store);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(engine_with_store("always", cc, store, &e), TF_OK);
    run_exp_add(e, TF_ERR_BACKEND, "a stored file that is not the program's");
    tf_engine_destroy(e);

    assert_int_equal(chmod(store, 0755), 0);
    e = NULL;
    tf_error_clear();
    assert_int_equal(engine_with_store("always", cc, store, &e), TF_ERR_VALIDATION);
    assert_null(e);
    assert_non_null(strstr(tf_error_cause(), "open to group or others"));
    assert_int_equal(engine_with_store("auto", "cc", "relative/folder", &e), TF_ERR_VALIDATION);
    assert_null(e);
    assert_non_null(strstr(tf_error_cause(), "jit_cache"));

    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    assert_int_equal(system(cmd), 0);
}

/*
 * In place (out[0] one of the inputs, as the core runs an update whose old value is
 * dead; only through the plugin itself, cpu_direct.h): random one-output programs
 * compiled (jit=always, serial and 4 threads, into a private store) on dense vectors,
 * out[0] any input, each equal bit for bit to the interpreter's out-of-place call on
 * the same values; and the compiles did happen (the store holds them).
 */
static void test_jit_in_place(void **state)
{
    (void)state;
    static const int64_t lengths[] = {1, 255, 256, 257, 1000, 40003, 300001};
    char store[] = "/tmp/tenferro-jit-in-place-XXXXXX", cmd[200];
    assert_non_null(mkdtemp(store));
    cpu_direct_open();
    const char *keys[2] = {"jit", "jit_cache"}, *off[1] = {"off"}, *always[2] = {"always", store};
    tf_engine_state *ref = cpu_direct_engine(1, 1, keys, off);
    tf_engine_state *on[2] = {cpu_direct_engine(1, 2, keys, always),
                              cpu_direct_engine(4, 2, keys, always)};
    tfr_rng rng;
    tfr_rng_seed(&rng, 2405);
    for (size_t d = 0; d < COUNT(float_dtypes); d++)
        for (size_t l = 0; l < COUNT(lengths); l++)
            for (int t = 0; t < 3; t++) {
                const tf_dtype dt = float_dtypes[d];
                const int64_t n = lengths[l], dense[1] = {1};
                const size_t bytes = (size_t)n * tf_dtype_size(dt);
                prog p;
                prog_random(&rng, (uint32_t)tfr_rng_int(&rng, 1, TF_FUSED_MAX_INPUTS),
                            (uint32_t)tfr_rng_int(&rng, 1, TF_FUSED_MAX_STEPS), 0, &p);
                p.m = 0; /* one output: the last step */
                p.params.n_outputs = 0;
                p.params.outputs = NULL;
                const uint32_t k_out = (uint32_t)tfr_rng_int(&rng, 0, p.n_in - 1);
                void *data[TF_FUSED_MAX_INPUTS], *sep = malloc(bytes), *copy = malloc(bytes);
                tf_operand in[TF_FUSED_MAX_INPUTS];
                for (uint32_t k = 0; k < p.n_in; k++) {
                    data[k] = malloc(bytes);
                    cpu_direct_fill(&rng, dt, (size_t)n, 5, data[k]);
                    in[k] = cpu_direct_operand(dt, 1, &n, dense, 0, data[k]);
                }
                char desc[700];
                tfr_fused_describe(p.n_in, p.params.n_steps, p.steps, desc, sizeof desc);
                tf_operand out = cpu_direct_operand(dt, 1, &n, dense, 0, sep);
                assert_int_equal(cpu_direct_fused(ref, &p.params, p.n_in, in, 1, &out, 0), TF_OK);
                for (int j = 0; j < 2; j++) {
                    memcpy(copy, data[k_out], bytes);
                    tf_operand in2[TF_FUSED_MAX_INPUTS];
                    memcpy(in2, in, sizeof in);
                    in2[k_out].data = copy;
                    const uint32_t flags = t % 2 ? TF_EXEC_VALIDATED : 0;
                    tf_status st = cpu_direct_fused(on[j], &p.params, p.n_in, in2, 1,
                                                    &in2[k_out], flags);
                    if (st != TF_OK)
                        fail_msg("in place, engine %d, %s: %s (%s)", j, desc, tf_status_name(st),
                                 g_direct.message);
                    for (int64_t i = 0; i < n; i++) {
                        const double got = tfr_load(dt, copy, i).f, want = tfr_load(dt, sep, i).f;
                        if (!tfr_same_bits(dt, got, want))
                            fail_msg("in place into input %u of %u, engine %d, %s, n %lld, [%s]: "
                                     "element %lld: %.17g, interpreted out of place %.17g",
                                     k_out, p.n_in, j, tf_dtype_name(dt), (long long)n, desc,
                                     (long long)i, got, want);
                    }
                }
                for (uint32_t k = 0; k < p.n_in; k++)
                    free(data[k]);
                free(sep);
                free(copy);
            }
    cpu_direct_close();
    assert_true(count_stored(store) > 0);
    snprintf(cmd, sizeof cmd, "rm -rf %s", store);
    assert_int_equal(system(cmd), 0);
}

/* The options' bad values are refused at create, with the option named. */
static void test_jit_bad_options(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"jit", "sometimes"}, {"jit", ""}, {"jit_cc", ""}, {"jit_cache", ""}};
    for (size_t c = 0; c < COUNT(cases); c++) {
        tf_engine *e = NULL;
        tf_error_clear();
        assert_int_equal(tfr_engine_create("cpu", 1, cases[c][0], cases[c][1], &e),
                         TF_ERR_VALIDATION);
        assert_null(e);
        assert_non_null(strstr(tf_error_cause(), cases[c][0]));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jit_random_dense), cmocka_unit_test(test_jit_random_layouts),
        cmocka_unit_test(test_jit_lengths),      cmocka_unit_test(test_jit_training_step),
        cmocka_unit_test(test_jit_no_compiler),  cmocka_unit_test(test_jit_compiler_fails),
        cmocka_unit_test(test_jit_store),        cmocka_unit_test(test_jit_in_place),
        cmocka_unit_test(test_jit_bad_options),
    };
    return cmocka_run_group_tests_name("cpu jit", tests, setup, teardown);
}
