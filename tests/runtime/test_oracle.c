/*
 * test_oracle.c - replays the oracle programs (shared/oracle/programs in
 * format 1 and programs-v2 in format 2; both described in
 * shared/oracle/OPS.md) through the public C API and compares them with their
 * PyTorch float64 references.
 *
 * Usage: test_oracle [DIR] (default: TF_ORACLE_DIR, the build's format 1
 * folder). Every program runs twice, in f64 and in f32, each as its own
 * cmocka test named after the file, on the engine TF_ORACLE_ENGINE names
 * (default cpu): inputs and constants are uploaded to it, results downloaded
 * (tests/support/tf_prog.h runs the programs). One replay makes the inputs
 * variables and the constants untracked constants, issues every op through a
 * session, and checks, each with OPS.md section 5's normwise error:
 *   - every intermediate's dtype, shape and its sum / weighted sum (the first
 *     op whose result diverges is named in the failure message),
 *   - the output and the loss = sum(output * W),
 *   - every input's gradient, from tf_eager_backward(loss) into the grad
 *     slots (the main path), and x0's again from tf_runtime_grad,
 *   - the JVP: sum over inputs of tf_runtime_jvp_optional(output, x_i, t_i),
 *   - the Hessian-vector product for x0 along v twice: reverse over reverse
 *     (grad of <grad(loss, x0), v>) and forward over reverse (jvp of
 *     grad(loss, x0) along v), so each method cross-checks the other.
 * JVP and HVP are skipped only where the file has no reference for them
 * (OPS.md 7.10). All checks of a program run before it fails, so one message
 * lists every discrepancy.
 *
 * Complex programs (a c128 leaf, constant or result; OPS.md 7.2-7.6) run the
 * same checks: c128 values in the f64 replay (the test is named "... c128"),
 * c64 in the f32 one ("... c64"), every error measured with the modulus, the
 * loss sum(Re(output * W)), gradients in PyTorch's convention and the HVP's
 * inner product sum(Re(conj(g) v)) (tf_prog_run.c). Every op, tenferro.linalg's
 * included, takes complex, so one outcome only is a skip, printed with the
 * library's message and counted in the summary line, never passed silently:
 *   - "engine refuses complex": on an engine other than the CPU reference
 *     engine, an op, a read or a derivative of complex values was
 *     TF_ERR_UNSUPPORTED naming the complex dtype (an engine of ABI minor < 4,
 *     or one that does not claim that primitive); any other failure of the
 *     same replay still fails it. On the CPU engine every failure fails.
 * The exit status is 0 only when every replayed program passed. Set
 * TF_ORACLE_VERBOSE=1 to print each replay's errors.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>

#include <tenferro/extension.h>
#include <tenferro/ops.h>

#include "tf_json.h"
#include "tf_prog.h"
#include "tf_test.h"

#ifndef TF_ORACLE_DIR
#error "TF_ORACLE_DIR must name the default programs directory"
#endif

/*
 * Tolerances on OPS.md's normwise error, err = max|got - ref| / max(max|ref|,
 * 1e-3) (the loss: |got - ref| / max(sum |W * output|, 1e-3)).
 *
 * f64: OPS.md expects <~1e-12 for values and <~1e-10 for derivatives (an
 * independent numpy replay agrees with PyTorch to ~1e-14; derivatives get
 * more room because reverse mode sums in another order and Hessian-vector
 * products chain two derivative passes).
 *
 * f32: max(F32_FACTOR * expect.f32_torch_err[key], F32_FLOOR). PyTorch's own
 * f32 error is the yardstick of each program's conditioning (cancellation,
 * exp of large values and long chains inflate it); our kernels round in a
 * different order (other summation trees, other exp/erf/log1p kernels), so
 * their error is of the same size but not the same sample: a factor of 10
 * covers that spread while still catching a wrong formula or a less stable
 * algorithm (those are off by 1e-3 or more, not by a factor of a few). The
 * floor of 5e-6 (about 40 f32 ulps; OPS.md suggests "a few 1e-6") applies
 * where PyTorch happened to land very close (OPS.md's median figure is
 * 1e-7, well below what a different but equally good rounding order gives).
 */
#define TOL64_VALUE 1e-12
#define TOL64_DERIV 1e-10
#define F32_FACTOR 10.0
#define F32_FLOOR 5e-6

enum {
    K_OUTPUT,
    K_LOSS,
    K_GRADS,
    K_JVP,
    K_HVP,
    K_COUNT
};
static const char *const k_key_names[K_COUNT] = {"output", "loss", "grads", "jvp", "hvp"};

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

static tf_engine *g_engine;
static tf_extension_module *g_linalg;
static const char *g_engine_name = "cpu";

/* One cmocka test: a program file replayed in one dtype. */
typedef struct oracle_case {
    char *path;
    char *name; /* "<file> f64" */
    tf_dtype dtype;
} oracle_case;

/* What the run of all cases counted (for the summary line); [0] the f64
   replays, [1] the f32 ones. */
static size_t g_complex_passed[2], g_refused[2];

/* Why a replay was skipped (see the top of the file). */
typedef enum skip_reason {
    SKIP_NONE = 0,
    SKIP_ENGINE_REFUSES
} skip_reason;

/* The state of one replay. Every failure is appended to msg; nothing fails
   the cmocka test until everything is released. */
typedef struct replay {
    tfp_program prog;
    const tf_json *expect;
    tf_dtype dtype;
    tfp_run run;
    double tol[K_COUNT], worst[K_COUNT];
    double worst_inter;
    int failures, spec_error;
    char diverge[1024]; /* the first diverging intermediate */
    skip_reason skip;
    char skip_msg[1200];
    char msg[16384];
    size_t msg_len;
} replay;

/* ===================================================================== */
/* Reporting                                                              */
/* ===================================================================== */

static void report(replay *r, const char *fmt, ...) CMOCKA_PRINTF_ATTRIBUTE(2, 3);
static void report(replay *r, const char *fmt, ...)
{
    va_list ap;
    size_t room = sizeof r->msg - r->msg_len;
    if (room > 4) {
        int n = snprintf(r->msg + r->msg_len, room, "  ");
        va_start(ap, fmt);
        n += vsnprintf(r->msg + r->msg_len + 2, room - 2, fmt, ap);
        va_end(ap);
        r->msg_len += (size_t)n < room - 2 ? (size_t)n : room - 2;
        if (r->msg_len + 1 < sizeof r->msg) {
            r->msg[r->msg_len++] = '\n';
            r->msg[r->msg_len] = '\0';
        }
    }
    r->failures++;
}

/* A malformed program: reported as such, never skipped. */
static void spec_error(replay *r, const char *what)
{
    report(r, "malformed program: %s", what);
    r->spec_error = 1;
}

/*
 * Whether the run's failure is a non-reference engine refusing complex values
 * (see the top of the file): TF_ERR_UNSUPPORTED whose message names the
 * replay's complex dtype ("does not support binary complex for f64, f64 ->
 * c128", "does not support copy for c64 -> c64"), in an op, a read or a
 * derivative. The first is kept as the reason.
 */
static bool engine_refuses(replay *r, const char *what)
{
    const char *dt = tf_dtype_name(tf_dtype_complex_of(r->dtype));
    if (!r->prog.has_complex || strcmp(g_engine_name, "cpu") == 0 ||
        r->run.status != TF_ERR_UNSUPPORTED || !strstr(r->run.msg, dt))
        return false;
    if (!r->skip) {
        r->skip = SKIP_ENGINE_REFUSES;
        snprintf(r->skip_msg, sizeof r->skip_msg, "engine %s refuses complex: %s on %s (%s)",
                 g_engine_name, what, dt, r->run.msg);
    }
    return true;
}

/* The run's first failure, as a check that failed (unless the engine refused complex). */
static void report_run(replay *r)
{
    if (!engine_refuses(r, "a read or a derivative"))
        report(r, "%s", r->run.msg);
}

/* ===================================================================== */
/* Comparing                                                              */
/* ===================================================================== */

static void shape_str(const tfp_data *d, char *buf, size_t size)
{
    size_t len = (size_t)snprintf(buf, size, "[");
    for (uint32_t i = 0; i < d->rank && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, i ? ",%lld" : "%lld",
                                (long long)d->shape[i]);
    if (len < size)
        snprintf(buf + len, size - len, "]");
}

/* The reference tensor expect[key] (or expect[key][sub]) as data. */
static bool reference(replay *r, const tf_json *obj, const char *what, tfp_data *out)
{
    char err[256];
    if (tfp_data_from_json(obj, r->prog.format, out, err, sizeof err))
        return true;
    char line[400];
    snprintf(line, sizeof line, "%s: %s", what, err);
    spec_error(r, line);
    return false;
}

/* Compares got with the reference object under tolerance slot `key`. */
static void check_data(replay *r, const char *what, const tfp_data *got, const tf_json *ref_obj,
                       int key)
{
    tfp_data ref;
    if (!reference(r, ref_obj, what, &ref))
        return;
    char gs[96], rs[96];
    shape_str(got, gs, sizeof gs);
    shape_str(&ref, rs, sizeof rs);
    double err = tfp_err(got, &ref, 1e-3);
    if (isinf(err)) {
        report(r, "%s: shape %s, the reference's %s", what, gs, rs);
    } else {
        r->worst[key] = isnan(err) || !(err <= r->worst[key]) ? err : r->worst[key];
        if (!(err <= r->tol[key])) {
            bool cx = ref.dtype == TFP_C128;
            size_t at = 0, n = tfp_data_numel(&ref), w = cx ? 2 : 1;
            double d = -1;
            for (size_t k = 0; k < n; k++) {
                double dk = cx ? hypot(got->data[2 * k] - ref.data[2 * k],
                                       got->data[2 * k + 1] - ref.data[2 * k + 1])
                               : fabs(got->data[k] - ref.data[k]);
                if (!(dk <= d)) {
                    d = dk;
                    at = k;
                }
            }
            char gv[64] = "0", rv[64] = "0";
            if (n && cx) {
                snprintf(gv, sizeof gv, "%.17g%+.17gi", got->data[2 * at], got->data[2 * at + 1]);
                snprintf(rv, sizeof rv, "%.17g%+.17gi", ref.data[2 * at], ref.data[2 * at + 1]);
            } else if (n) {
                snprintf(gv, sizeof gv, "%.17g", got->data[w * at]);
                snprintf(rv, sizeof rv, "%.17g", ref.data[w * at]);
            }
            report(r, "%s: err %.3g > tol %.3g (element %zu: got %s, expected %s)", what, err,
                   r->tol[key], at, gv, rv);
        }
    }
    tfp_data_free(&ref);
}

/* The library's dtype of a value the reference gives as `ref_dtype` ("f64",
   "c128", "bool") in a replay at r->dtype: f64/c128 in the f64 replay,
   f32/c64 in the f32 one (a c128 value must not come back real). */
static tf_dtype replay_dtype(const replay *r, const tf_json *ref_dtype)
{
    const char *name = ref_dtype && ref_dtype->type == TF_JSON_STRING ? ref_dtype->string : "f64";
    if (strcmp(name, "bool") == 0)
        return TF_BOOL;
    return strcmp(name, "c128") == 0 ? tf_dtype_complex_of(r->dtype) : r->dtype;
}

/* The library's dtype of a result must be the replay's. */
static bool check_dtype(replay *r, const char *what, const tf_eager *e, tf_dtype want)
{
    tf_dtype got = tf_tensor_dtype(tf_eager_value(e));
    if (got == want)
        return true;
    report(r, "%s: dtype %s, expected %s", what, tf_dtype_name(got), tf_dtype_name(want));
    return false;
}

/*
 * Compares an op result's dtype, shape, sum and weighted sum with
 * expect.intermediates. A wrong shape or dtype is a failure at once; the
 * first result whose sums differ by more than the output tolerance (relative
 * to the weighted absolute sum) is remembered. In f64 that divergence fails
 * the replay even when a later op hides it (a wrong value is a wrong value);
 * in f32 the figures of intermediates are not bounded by f32_torch_err
 * (which measures the output only), so there it is printed to explain
 * another failure.
 */
static void check_intermediate(replay *r, uint32_t k)
{
    char name[16], what[128];
    uint32_t id = tfp_op_value(&r->prog, k);
    tfp_value_name(&r->prog, id, name, sizeof name);
    snprintf(what, sizeof what, "op %u (%s = %s)", k, name, r->prog.ops[k].name);
    const tf_json *ref = tf_json_get(tf_json_get(r->expect, "intermediates"), name);
    const tf_json *sum = tf_json_get(ref, "sum"), *wsum = tf_json_get(ref, "wsum");
    const tf_json *dt = tf_json_get(ref, "dtype"), *shape = tf_json_get(ref, "shape");
    if (!sum || !wsum || !dt || !shape || dt->type != TF_JSON_STRING ||
        sum->type != TF_JSON_NUMBER || wsum->type != TF_JSON_NUMBER ||
        shape->type != TF_JSON_ARRAY) {
        spec_error(r, "an expect.intermediates entry is missing or incomplete");
        return;
    }
    if (!check_dtype(r, what, r->run.vals[id], replay_dtype(r, dt)))
        return;
    tfp_data v;
    if (!tfp_read_value(&r->run, id, &v)) {
        report_run(r);
        return;
    }
    bool shape_ok = shape->count == v.rank;
    for (uint32_t i = 0; shape_ok && i < v.rank; i++)
        shape_ok = shape->items[i].type == TF_JSON_NUMBER &&
                   shape->items[i].number == (double)v.shape[i];
    double s = 0, ws = 0, abs_ws = 0;
    for (size_t e = 0; e < v.count; e++) {
        s += v.data[e];
        ws += v.data[e] * (double)(1 + e % 7);
        abs_ws += fabs(v.data[e]) * (double)(1 + e % 7);
    }
    tfp_data_free(&v);
    if (!shape_ok) {
        report(r, "%s: the shape differs from the reference's", what);
        return;
    }
    /* relative to the weighted absolute sum: a sum that cancels to ~0 is
       still judged on the size of its terms */
    double err = fmax(fabs(s - sum->number), fabs(ws - wsum->number)) / fmax(abs_ws, 1e-3);
    if (isnan(err) || err > r->worst_inter)
        r->worst_inter = err;
    if (!(err <= r->tol[K_OUTPUT]) && !r->diverge[0])
        snprintf(r->diverge, sizeof r->diverge,
                 "first diverging intermediate: %s: sum %.17g (expected %.17g), wsum %.17g "
                 "(expected %.17g), err %.3g",
                 what, s, sum->number, ws, wsum->number, err);
}

/* ===================================================================== */
/* The replay                                                             */
/* ===================================================================== */

/* Tolerances of this replay (see the top of the file). */
static void set_tolerances(replay *r)
{
    const tf_json *errs = tf_json_get(r->expect, "f32_torch_err");
    for (int k = 0; k < K_COUNT; k++) {
        r->worst[k] = 0.0;
        if (r->dtype == TF_F64) {
            r->tol[k] = k <= K_LOSS ? TOL64_VALUE : TOL64_DERIV;
            continue;
        }
        const tf_json *e = tf_json_get(errs, k_key_names[k]);
        bool optional = k == K_JVP || k == K_HVP; /* absent with its reference */
        if (!e || e->type != TF_JSON_NUMBER) {
            if (!optional || tf_json_get(r->expect, k_key_names[k]))
                spec_error(r, "an expect.f32_torch_err entry is missing");
            r->tol[k] = F32_FLOOR;
            continue;
        }
        r->tol[k] = fmax(F32_FACTOR * e->number, F32_FLOOR);
    }
}

/* OPS.md's loss error: relative to sum |W * output| of the reference. */
static void check_loss(replay *r)
{
    const tf_json *ref = tf_json_get(r->expect, "loss");
    tfp_data out, got;
    if (!ref || ref->type != TF_JSON_NUMBER ||
        !reference(r, tf_json_get(r->expect, "output"), "expect.output", &out)) {
        if (!ref || ref->type != TF_JSON_NUMBER)
            spec_error(r, "expect.loss is missing");
        return;
    }
    double abs_sum = 0.0; /* sum |W_k output_k|, moduli for complex */
    const tfp_data *w = &r->prog.weights;
    bool cx = out.dtype == TFP_C128 && w->dtype == TFP_C128;
    for (size_t k = 0; k < out.count && k < w->count; k += cx ? 2 : 1)
        abs_sum += cx ? hypot(w->data[k], w->data[k + 1]) * hypot(out.data[k], out.data[k + 1])
                      : fabs(w->data[k] * out.data[k]);
    tfp_data_free(&out);
    if (!tfp_read(&r->run, r->run.loss, &got)) {
        report_run(r);
        return;
    }
    double err = got.count == 1 ? fabs(got.data[0] - ref->number) / fmax(abs_sum, 1e-3) : INFINITY;
    r->worst[K_LOSS] = err;
    if (!(err <= r->tol[K_LOSS]))
        report(r, "loss: err %.3g > tol %.3g (got %.17g, expected %.17g)", err, r->tol[K_LOSS],
               got.count ? got.data[0] : 0.0, ref->number);
    tfp_data_free(&got);
}

/* Every input's gradient by `path`, against expect.grads. */
static void check_grads(replay *r, tfp_grad_path path, uint32_t only, const char *how)
{
    tfp_data g[TFP_MAX_LEAVES];
    const tf_json *grads = tf_json_get(r->expect, "grads");
    if (!tfp_grads(&r->run, path, g)) {
        report_run(r);
        return;
    }
    for (uint32_t i = 0; i < r->prog.n_inputs; i++) {
        char name[16], what[64];
        tfp_value_name(&r->prog, i, name, sizeof name);
        snprintf(what, sizeof what, "grad %s (%s)", name, how);
        if (only == i || only == UINT32_MAX)
            check_data(r, what, &g[i], tf_json_get(grads, name), K_GRADS);
        tfp_data_free(&g[i]);
    }
}

static void check_derivative(replay *r, const char *what, bool ok, tfp_data *got, int key)
{
    if (!ok) {
        report_run(r);
        return;
    }
    check_data(r, what, got, tf_json_get(r->expect, k_key_names[key]), key);
    tfp_data_free(got);
}

/*
 * Whether the failure of op k is the skip (see the top of the file): a
 * non-reference engine refusing an op other than tenferro.linalg's on
 * complex values (engine_refuses). Anything else, a linalg op refusing a
 * complex operand included, is a failure of the replay.
 */
static bool classify_skip(replay *r, uint32_t k)
{
    bool linalg = false;
    if (!tfp_op_known(r->prog.ops[k].name, &linalg))
        return false;
    return !linalg && engine_refuses(r, r->prog.ops[k].name);
}

/* Everything after the inputs: ops, output, loss and the derivatives. */
static void replay_program(replay *r)
{
    set_tolerances(r);
    while (r->run.n_done < r->prog.n_ops) {
        if (!tfp_run_op(&r->run)) {
            if (!classify_skip(r, r->run.n_done))
                report_run(r);
            return;
        }
        check_intermediate(r, r->run.n_done - 1);
    }
    if (!tfp_run_forward(&r->run)) {
        report_run(r);
        return;
    }
    tfp_data out;
    const tf_json *ref_out = tf_json_get(r->expect, "output");
    if (check_dtype(r, "output", r->run.output, replay_dtype(r, tf_json_get(ref_out, "dtype"))) &&
        tfp_read(&r->run, r->run.output, &out)) {
        check_data(r, "output", &out, tf_json_get(r->expect, "output"), K_OUTPUT);
        tfp_data_free(&out);
    }
    check_loss(r);
    check_grads(r, TFP_BACKWARD, UINT32_MAX, "backward");
    check_grads(r, TFP_GRAD, r->prog.hvp_input, "tf_runtime_grad");
    tfp_data d;
    if (tf_json_get(r->expect, "jvp"))
        check_derivative(r, "jvp", tfp_jvp(&r->run, &d), &d, K_JVP);
    if (tf_json_get(r->expect, "hvp")) {
        check_derivative(r, "hvp (reverse over reverse)", tfp_hvp(&r->run, false, &d), &d, K_HVP);
        check_derivative(r, "hvp (forward over reverse)", tfp_hvp(&r->run, true, &d), &d, K_HVP);
    }
}

static void print_errors(const replay *r, const oracle_case *c)
{
    print_message("[ oracle ] %-24s", c->name);
    for (int k = 0; k < K_COUNT; k++)
        print_message(" %s %.2e/%.1e", k_key_names[k], r->worst[k], r->tol[k]);
    print_message(" inter %.2e\n", r->worst_inter);
}

static void test_replay(void **state)
{
    const oracle_case *c = *state;
    char err[600];
    replay *r = calloc(1, sizeof *r);
    assert_non_null(r);
    if (!tfp_read_file(c->path, &r->prog, err, sizeof err)) {
        tfp_program_free(&r->prog);
        free(r);
        fail_msg("malformed program: %s", err);
    }
    r->dtype = c->dtype;
    r->expect = tf_json_get(r->prog.dom, "expect");
    if (!r->expect || r->expect->type != TF_JSON_OBJECT)
        spec_error(r, "no \"expect\" object");
    tfp_config cfg = {.engine = g_engine, .dtype = c->dtype, .defer = -1, .linalg = g_linalg};
    if (!r->failures && tfp_run_begin(&r->run, &r->prog, &cfg))
        replay_program(r);
    else if (!r->failures)
        report_run(r);
    /* a diverging intermediate fails an f64 replay on its own; in f32 it
       only explains another failure (see check_intermediate) */
    int diverged = r->diverge[0] && (r->dtype == TF_F64 || r->failures);
    if (getenv("TF_ORACLE_VERBOSE"))
        print_errors(r, c);
    bool complex_program = r->prog.has_complex;
    tfp_run_end(&r->run);
    tfp_program_free(&r->prog);
    int failures = r->failures + diverged;
    size_t slot = r->dtype == TF_F64 ? 0 : 1;
    skip_reason skipped = failures ? SKIP_NONE : r->skip;
    if (skipped) {
        print_message("[ oracle ] %s: %s\n", c->name, r->skip_msg);
        g_refused[slot]++;
    } else if (!failures && complex_program) {
        g_complex_passed[slot]++;
    }
    if (failures)
        print_error("%s on %s: %d check(s) failed:\n%s%s%s%s", c->name, g_engine_name, failures,
                    diverged ? "  " : "", diverged ? r->diverge : "", diverged ? "\n" : "",
                    r->msg);
    free(r);
    if (failures)
        fail_msg("%s: %d check(s) failed (listed above)", c->name, failures);
    if (skipped)
        skip();
}

/* ===================================================================== */
/* The JSON reader the replay relies on                                   */
/* ===================================================================== */

static void test_json_reader(void **state)
{
    (void)state;
    static const char good[] = " {\"a\": [1, -2.5e3, 0.125, true, false, null],\n"
                               "  \"s\": \"q\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\","
                               " \"o\": {}, \"e\": []} ";
    char err[200];
    tf_json *v = tf_json_parse(good, sizeof good - 1, err, sizeof err);
    if (!v)
        fail_msg("%s", err);
    const tf_json *a = tf_json_get(v, "a"), *s = tf_json_get(v, "s");
    assert_int_equal(a->type, TF_JSON_ARRAY);
    assert_int_equal(a->count, 6);
    assert_true(a->items[0].number == 1.0 && a->items[1].number == -2500.0 &&
                a->items[2].number == 0.125);
    assert_true(a->items[3].boolean == 1 && a->items[4].boolean == 0);
    assert_int_equal(a->items[5].type, TF_JSON_NULL);
    assert_string_equal(s->string, "q\"\\/\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80");
    assert_int_equal(tf_json_get(v, "o")->type, TF_JSON_OBJECT);
    assert_int_equal(tf_json_get(v, "e")->count, 0);
    assert_null(tf_json_get(v, "missing"));
    tf_json_free(v);

    /* the shortest round-trip forms of the program files read back exactly */
    static const char nums[] = "[0.1, 5.396838135369152, -1e-300, 1.7976931348623157e308]";
    v = tf_json_parse(nums, sizeof nums - 1, err, sizeof err);
    assert_non_null(v);
    assert_true(v->items[0].number == 0.1 && v->items[1].number == 5.396838135369152);
    assert_true(v->items[2].number == -1e-300 && v->items[3].number == 1.7976931348623157e308);
    tf_json_free(v);

    static const char *const bad[] = {"[1,]",        "{\"a\":1,}",
                                      "01",          "1.",
                                      ".5",          "-",
                                      "1e",          "NaN",
                                      "[1] x",       "\"\x01\"",
                                      "\"\\ud800\"", "\"\\udc00\"",
                                      "\"\\x\"",     "{\"a\":1,\"a\":2}",
                                      "// c\n1",     "1e999",
                                      "[",           "\"abc",
                                      "{\"a\" 1}",   "tru",
                                      "{1:2}",       "",
                                      "[1 2]",       "'a'"};
    for (size_t i = 0; i < COUNT_OF(bad); i++) {
        err[0] = '\0';
        v = tf_json_parse(bad[i], strlen(bad[i]), err, sizeof err);
        if (v)
            fail_msg("accepted invalid JSON <%s>", bad[i]);
        if (strncmp(err, "line ", 5) != 0)
            fail_msg("no position in the error for <%s>: %s", bad[i], err);
    }
    assert_null(tf_json_parse("[1,\n  2,]", 9, err, sizeof err));
    assert_non_null(strstr(err, "line 2, column 5"));

    /* nesting is bounded instead of exhausting the stack */
    char deep[1001];
    memset(deep, '[', 1000);
    deep[1000] = '\0';
    assert_null(tf_json_parse(deep, 1000, err, sizeof err));
    assert_non_null(strstr(err, "nesting"));
    assert_null(tf_json_parse_file("/nonexistent/oracle.json", err, sizeof err));
    assert_non_null(strstr(err, "/nonexistent/oracle.json"));
}

/* ===================================================================== */
/* Test registration                                                      */
/* ===================================================================== */

static int group_setup(void **state)
{
    (void)state;
    if (tf_engine_open(g_engine_name, 1, &g_engine) != TF_OK) {
        fprintf(stderr, "test_oracle: cannot open engine '%s': %s\n", g_engine_name,
                tf_error_message());
        return -1;
    }
    return tf_extension_load("linalg", &g_linalg) == TF_OK ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    tf_engine_destroy(g_engine);
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted *.json file names of dir; -1 if it cannot be read. */
static long list_programs(const char *dir, char ***names)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    size_t n = 0, cap = 0;
    char **list = NULL;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        size_t len = strlen(ent->d_name);
        if (len <= 5 || strcmp(ent->d_name + len - 5, ".json") != 0)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **bigger = realloc(list, cap * sizeof *list);
            if (!bigger)
                break;
            list = bigger;
        }
        if (!(list[n] = strdup(ent->d_name)))
            break;
        n++;
    }
    closedir(d);
    if (n)
        qsort(list, n, sizeof *list, cmp_names);
    *names = list;
    return (long)n;
}

/* Allocates "<a><b><c>". */
static char *concat3(const char *a, const char *b, const char *c)
{
    size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
    char *s = malloc(la + lb + lc + 1);
    if (s) {
        memcpy(s, a, la);
        memcpy(s + la, b, lb);
        memcpy(s + la + lb, c, lc + 1);
    }
    return s;
}

/* Whether a program file has a c128 value (its features say so). */
static bool is_complex(const char *path)
{
    char err[256];
    tfp_program p;
    bool ok = tfp_read_file(path, &p, err, sizeof err), cx = ok && p.has_complex;
    tfp_program_free(&p);
    return cx;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : TF_ORACLE_DIR;
    const char *engine = getenv("TF_ORACLE_ENGINE");
    if (engine && *engine)
        g_engine_name = engine;
    char **files = NULL;
    long n = list_programs(dir, &files);
    if (n < 1) {
        fprintf(stderr, "test_oracle: %s: %s\n", dir,
                n < 0 ? strerror(errno) : "no *.json oracle programs");
        free(files);
        return 1;
    }
    size_t count = 1 + 2 * (size_t)n;
    struct CMUnitTest *tests = calloc(count, sizeof *tests);
    oracle_case *cases = calloc(2 * (size_t)n, sizeof *cases);
    if (!tests || !cases)
        return 1;
    tests[0] = (struct CMUnitTest){"json_reader", test_json_reader, NULL, NULL, NULL};
    size_t n_complex = 0;
    for (size_t i = 0; i < 2 * (size_t)n; i++) {
        oracle_case *c = &cases[i];
        c->dtype = i % 2 ? TF_F32 : TF_F64;
        c->path = concat3(dir, "/", files[i / 2]);
        if (!c->path)
            return 1;
        bool cx = is_complex(c->path);
        n_complex += cx && i % 2 == 0;
        /* a complex program's replays are named after their complex dtype */
        c->name = concat3(files[i / 2], c->dtype == TF_F64 ? (cx ? " c128" : " f64")
                                                           : (cx ? " c64" : " f32"), "");
        if (!c->name)
            return 1;
        tests[1 + i] = (struct CMUnitTest){c->name, test_replay, NULL, NULL, c};
    }
    int rc = _cmocka_run_group_tests("oracle", tests, count, group_setup, group_teardown);
    fprintf(stderr,
            "test_oracle: %s on engine %s: %ld programs replayed in f64 and f32, %zu of them "
            "complex: %zu passed in c128 and %zu in c64, %zu/%zu (c128/c64) refused by the "
            "engine; %d failed test(s)\n",
            dir, g_engine_name, n, n_complex, g_complex_passed[0], g_complex_passed[1],
            g_refused[0], g_refused[1], rc);
    for (size_t i = 0; i < 2 * (size_t)n; i++) {
        free(cases[i].path);
        free(cases[i].name);
    }
    for (long i = 0; i < n; i++)
        free(files[i]);
    free(files);
    free(cases);
    free(tests);
    return rc ? 1 : 0; /* a count would wrap: 256 failures must not exit 0 */
}
