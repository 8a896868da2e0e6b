/*
 * test_ad_diff.c - the differential AD checker.
 *
 * Per-op finite differences cannot see a bug that needs two paths to meet:
 * an in-place write into a buffer that another pending cotangent still
 * refers to, a deferred batch reordering reads and writes, a cache replaying
 * the wrong program. This test generates random straight-line programs over
 * the whole op surface (tests/support/tf_gen.h: shared values, fan-out,
 * residual and cancelling paths, self operands, rank 0, broadcasting,
 * strided leaves, the linalg ops; one program in five complex: c128 leaves
 * beside f64 ones, conj/real/imag/abs/angle/complex and promotion between
 * them) and checks, for each, in f64 (c128 for complex values, gradients in
 * PyTorch's convention):
 *   - backward into the grad slots (twice: the second replays the prepared
 *     program over recycled buffers) == tf_runtime_grad == tf_runtime_vjp of
 *     the loss with a seed of one == tf_runtime_vjp of the output with W ==
 *     tf_runtime_grad inside no-grad (the plain and the fused rules);
 *   - <W, J t> from jvp == sum_i <grad_i, t_i> (the adjoint identity);
 *   - the HVP reverse over reverse == forward over reverse;
 *   - the same output and gradients with deferral off, auto and always and
 *     with 1 and 2 engine threads, and on big leaves (>= 32768 elements, so
 *     that the CPU engine's sessions defer under auto too);
 *   - central finite differences (gradient, JVP and HVP along random
 *     directions) on a sample of programs;
 *   - a subset on the Vulkan engine (lavapipe) against the CPU engine (a
 *     complex program it refuses, TF_ERR_UNSUPPORTED naming c128, is counted).
 * Deterministic by seed. A failing program is shrunk (ops dropped or
 * bypassed, the output moved earlier, unused leaves dropped, layouts made
 * dense, values rounded) while the same check still fails, and written out in
 * the oracle's format 2 with the check that failed and a one-line replay:
 *   TF_AD_DIFF_REPLAY=<file> test_ad_diff
 *
 * Environment: TF_AD_DIFF_SEEDS=FIRST:COUNT (the programs; default 1:N, the
 * CI range), TF_AD_DIFF_SECONDS=S (keep generating from FIRST for S seconds
 * instead), TF_AD_DIFF_OUT=DIR (where failing programs go; default the
 * working directory), TF_AD_DIFF_SHRINK=0 (write failing programs as
 * generated), TF_AD_DIFF_VERBOSE=1 (a line per program).
 */
#include <math.h>
#include <time.h>

#include <tenferro/extension.h>
#include <tenferro/ops.h>

#include "tf_gen.h"
#include "tf_prog.h"
#include "tf_shrink.h"
#include "tf_test.h"

/* The programs CI runs (about a minute on one core of the CI machine). */
#define CI_PROGRAMS 600

/* Tolerances: paths of one engine in f64 agree to rounding; finite
   differences with h = 1e-6 to about 1e-9 relative, given the margins. */
#define TOL_PATHS 1e-11
#define TOL_ADJOINT 1e-10
#define TOL_ADJOINT_F32 1e-6
#define TOL_HVP 1e-9
#define TOL_ENGINE 1e-9
#define TOL_FD 1e-5
#define FD_STEP 1e-6

static tf_engine *g_cpu1, *g_cpu2, *g_vulkan;
static tf_extension_module *g_linalg;
/* Complex programs checked, and those of the Vulkan subset the engine refused. */
static size_t g_complex_checked, g_vulkan_refused;

/* The checks, each of which the shrinker reruns alone. */
typedef enum check_id {
    CHK_RUN,      /* the reference path itself fails */
    CHK_PATHS,    /* backward, vjp, grad under no-grad vs grad */
    CHK_ADJOINT,  /* <W, jvp> vs sum <grad, t> */
    CHK_HVP,      /* reverse over reverse vs forward over reverse */
    CHK_VARIANTS, /* deferral modes and thread counts vs the reference */
    CHK_FD,       /* finite differences */
    CHK_VULKAN,   /* the Vulkan engine vs the CPU engine */
    CHK_COUNT_
} check_id;

static const char *const k_check_names[CHK_COUNT_] = {
    "reference run", "paths (backward, vjp, grad under no-grad vs grad)", "adjoint identity",
    "HVP both ways", "deferral modes and threads", "finite differences", "Vulkan vs CPU"};

/* What one check found. */
typedef struct finding {
    check_id check;
    char what[1536];
} finding;

static bool found(finding *f, check_id c, const char *fmt, ...) CMOCKA_PRINTF_ATTRIBUTE(3, 4);
static bool found(finding *f, check_id c, const char *fmt, ...)
{
    va_list ap;
    f->check = c;
    va_start(ap, fmt);
    vsnprintf(f->what, sizeof f->what, fmt, ap);
    va_end(ap);
    return false;
}

/* ---- reference values ---- */

/* The reference configuration: the CPU engine, one thread, f64, deferral off. */
static tfp_config reference_cfg(void)
{
    return (tfp_config){.engine = g_cpu1, .dtype = TF_F64, .defer = TF_DEFER_OFF,
                        .linalg = g_linalg};
}

typedef struct reference {
    tfp_data out, loss, grads[TFP_MAX_LEAVES];
} reference;

static void reference_free(reference *r)
{
    tfp_data_free(&r->out);
    tfp_data_free(&r->loss);
    for (int i = 0; i < TFP_MAX_LEAVES; i++)
        tfp_data_free(&r->grads[i]);
}

static void free_grads(tfp_data *g, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        tfp_data_free(&g[i]);
}

/* Forward on cfg: false (finding f) when the library fails. */
static bool forward(tfp_run *run, const tfp_program *p, const tfp_config *cfg, check_id c,
                    const char *where, finding *f)
{
    if (tfp_run_begin(run, p, cfg) && tfp_run_forward(run))
        return true;
    return found(f, c, "%s: %s", where, run->msg);
}

/* The reference: CPU, one thread, deferral off, gradients by tf_runtime_grad. */
static bool reference_run(const tfp_program *p, tfp_run *run, reference *ref, finding *f)
{
    tfp_config cfg = reference_cfg();
    if (!forward(run, p, &cfg, CHK_RUN, "reference forward", f))
        return false;
    if (!tfp_read(run, run->output, &ref->out) || !tfp_read(run, run->loss, &ref->loss) ||
        !tfp_grads(run, TFP_GRAD, ref->grads))
        return found(f, CHK_RUN, "reference derivatives: %s", run->msg);
    return true;
}

/* Compares every input's gradient with the reference's. */
static bool same_grads(const tfp_program *p, const tfp_data *got, const reference *ref,
                       double tol, check_id c, const char *how, finding *f)
{
    for (uint32_t i = 0; i < p->n_inputs; i++) {
        double err = tfp_err(&got[i], &ref->grads[i], 1e-3);
        if (!(err <= tol))
            return found(f, c, "%s: the gradient of x%u differs from tf_runtime_grad's by %.3g",
                         how, i, err);
    }
    return true;
}

/* ---- the checks ---- */

static bool check_paths(const tfp_program *p, tfp_run *run, const reference *ref, finding *f)
{
    static const struct {
        tfp_grad_path path;
        const char *name;
    } paths[] = {{TFP_BACKWARD, "backward into the grad slots"},
                 {TFP_VJP, "tf_runtime_vjp(output) with W"},
                 {TFP_VJP_ONE, "tf_runtime_vjp(loss) with a seed of one"},
                 {TFP_GRAD_NO_GRAD, "tf_runtime_grad under no-grad (fused rules)"},
                 {TFP_BACKWARD, "a second backward (cached program, reused buffers)"}};
    for (size_t k = 0; k < sizeof paths / sizeof paths[0]; k++) {
        tfp_data g[TFP_MAX_LEAVES];
        bool ok = tfp_grads(run, paths[k].path, g) ||
                  found(f, CHK_PATHS, "%s: %s", paths[k].name, run->msg);
        ok = ok && same_grads(p, g, ref, TOL_PATHS, CHK_PATHS, paths[k].name, f);
        free_grads(g, p->n_inputs);
        if (!ok)
            return false;
    }
    return true;
}

/* sum(Re(conj(a) b)) over the interleaved parts: the real inner product, in
   which a gradient (PyTorch's convention) pairs with a tangent. */
static double dot(const tfp_data *a, const tfp_data *b, double *abs_sum)
{
    double s = 0;
    for (size_t k = 0; k < a->count && k < b->count; k++) {
        s += a->data[k] * b->data[k];
        *abs_sum += fabs(a->data[k] * b->data[k]);
    }
    return s;
}

/* d loss along the JVP j: sum(Re(W j)) (OPS.md 7.5: no conjugation). */
static double loss_dot(const tfp_data *w, const tfp_data *j, double *abs_sum)
{
    if (w->dtype != TFP_C128 || j->dtype != TFP_C128)
        return dot(w, j, abs_sum);
    double s = 0;
    for (size_t k = 0; k + 1 < w->count && k + 1 < j->count; k += 2) {
        s += w->data[k] * j->data[k] - w->data[k + 1] * j->data[k + 1];
        *abs_sum += hypot(w->data[k], w->data[k + 1]) * hypot(j->data[k], j->data[k + 1]);
    }
    return s;
}

static bool check_adjoint(const tfp_program *p, tfp_run *run, const reference *ref, finding *f)
{
    tfp_data j;
    if (!tfp_jvp(run, &j))
        return found(f, CHK_ADJOINT, "jvp: %s", run->msg);
    double scale = 1e-3, lhs = loss_dot(&p->weights, &j, &scale), rhs = 0;
    for (uint32_t i = 0; i < p->n_inputs; i++)
        rhs += dot(&ref->grads[i], &p->inputs[i].tangent, &scale);
    tfp_data_free(&j);
    /*
     * A cast through f32 rounds the tangent and the cotangent, each its own
     * way, so the two sides agree only to f32 rounding of the terms before
     * they cancel (x - cast_round(x) has both sides near 1e-8): measured
     * against sum |W| * max |t| then.
     */
    double tol = TOL_ADJOINT;
    if (!tfg_fd_safe(p)) {
        double wsum = 0, tmax = 0;
        for (size_t k = 0; k < p->weights.count; k++)
            wsum += fabs(p->weights.data[k]);
        for (uint32_t i = 0; i < p->n_inputs; i++)
            for (size_t k = 0; k < p->inputs[i].tangent.count; k++)
                tmax = fmax(tmax, fabs(p->inputs[i].tangent.data[k]));
        scale += wsum * tmax;
        tol = TOL_ADJOINT_F32;
    }
    if (!(fabs(lhs - rhs) <= tol * scale))
        return found(f, CHK_ADJOINT, "<W, J t> = %.17g but sum <grad, t> = %.17g", lhs, rhs);
    return true;
}

static bool check_hvp(tfp_run *run, finding *f)
{
    tfp_data rr, fr;
    if (!tfp_hvp(run, false, &rr))
        return found(f, CHK_HVP, "reverse over reverse: %s", run->msg);
    if (!tfp_hvp(run, true, &fr)) {
        tfp_data_free(&rr);
        return found(f, CHK_HVP, "forward over reverse: %s", run->msg);
    }
    double err = tfp_err(&fr, &rr, 1e-3);
    tfp_data_free(&rr);
    tfp_data_free(&fr);
    if (!(err <= TOL_HVP))
        return found(f, CHK_HVP, "the two HVPs differ by %.3g", err);
    return true;
}

/* Output and backward's gradients on another configuration. */
static bool check_config(const tfp_program *p, const tfp_config *cfg, const reference *ref,
                         double tol, check_id c, const char *name, finding *f)
{
    tfp_run run;
    bool ok = forward(&run, p, cfg, c, name, f);
    tfp_data out, g[TFP_MAX_LEAVES];
    if (ok && !tfp_read(&run, run.output, &out))
        ok = found(f, c, "%s: reading the output: %s", name, run.msg);
    if (ok) {
        double err = tfp_err(&out, &ref->out, 1e-3);
        tfp_data_free(&out);
        if (!(err <= tol))
            ok = found(f, c, "%s: the output differs from the reference's by %.3g", name, err);
    }
    for (int k = 0; ok && k < 2; k++) {
        tfp_grad_path path = k ? TFP_GRAD : TFP_BACKWARD;
        char how[128];
        snprintf(how, sizeof how, "%s, %s", name, k ? "tf_runtime_grad" : "backward");
        ok = tfp_grads(&run, path, g) || found(f, c, "%s: %s", how, run.msg);
        ok = ok && same_grads(p, g, ref, tol, c, how, f);
        free_grads(g, p->n_inputs);
    }
    tfp_run_end(&run);
    return ok;
}

static bool check_variants(const tfp_program *p, const reference *ref, finding *f)
{
    static const char *const modes[] = {"off", "auto", "always"};
    for (int t = 0; t < 2; t++)
        for (int m = TF_DEFER_OFF; m <= TF_DEFER_ALWAYS; m++) {
            if (t == 0 && m == TF_DEFER_OFF)
                continue; /* the reference's own configuration */
            tfp_config cfg = {.engine = t ? g_cpu2 : g_cpu1, .dtype = TF_F64, .defer = m,
                              .linalg = g_linalg};
            char name[64];
            snprintf(name, sizeof name, "cpu, %d thread(s), deferral %s", t + 1, modes[m]);
            if (!check_config(p, &cfg, ref, TOL_PATHS, CHK_VARIANTS, name, f))
                return false;
        }
    return true;
}

/* A copy of p with input i moved by h * dir[i] (dir NULL: only input `only` along v). */
static bool shifted(const tfp_program *p, const tfp_data *dir, uint32_t only, const tfp_data *v,
                    double h, tfp_program *q)
{
    if (!tfp_program_copy(q, p))
        return false;
    for (uint32_t i = 0; i < p->n_inputs; i++) {
        const tfp_data *d = dir ? &dir[i] : i == only ? v : NULL;
        for (size_t k = 0; d && k < q->inputs[i].value.count; k++)
            q->inputs[i].value.data[k] += h * d->data[k];
    }
    return true;
}

/*
 * Loss, output and (with `grads`) gradients of p moved by h along a
 * direction. The outputs start zeroed, so the caller frees them either way.
 */
static bool evaluate(const tfp_program *p, const tfp_data *dir, uint32_t only, const tfp_data *v,
                     double h, tfp_data *loss, tfp_data *out, tfp_data *grads, finding *f)
{
    tfp_program q;
    tfp_run run;
    tfp_config cfg = reference_cfg();
    memset(loss, 0, sizeof *loss);
    memset(out, 0, sizeof *out);
    if (grads)
        memset(grads, 0, p->n_inputs * sizeof *grads);
    if (!shifted(p, dir, only, v, h, &q))
        return found(f, CHK_FD, "out of memory");
    bool ok = forward(&run, &q, &cfg, CHK_FD, "a shifted forward", f);
    if (ok && !(tfp_read(&run, run.loss, loss) && tfp_read(&run, run.output, out) &&
                (!grads || tfp_grads(&run, TFP_GRAD, grads))))
        ok = found(f, CHK_FD, "a shifted evaluation: %s", run.msg);
    tfp_run_end(&run);
    tfp_program_free(&q);
    return ok;
}

/* (plus - minus) / 2h elementwise into plus. */
static void central(tfp_data *plus, const tfp_data *minus, double h)
{
    for (size_t k = 0; k < plus->count && k < minus->count; k++)
        plus->data[k] = (plus->data[k] - minus->data[k]) / (2 * h);
}

/* d loss and the JVP along the tangents, by central differences. */
static bool fd_along_tangents(const tfp_program *p, tfp_run *run, const reference *ref,
                              finding *f)
{
    tfp_data lp = {0}, lm = {0}, op = {0}, om = {0}, j = {0}, dir[TFP_MAX_LEAVES];
    for (uint32_t i = 0; i < p->n_inputs; i++)
        dir[i] = p->inputs[i].tangent; /* borrowed */
    bool ok = evaluate(p, dir, 0, NULL, FD_STEP, &lp, &op, NULL, f) &&
              evaluate(p, dir, 0, NULL, -FD_STEP, &lm, &om, NULL, f);
    if (ok) {
        central(&lp, &lm, FD_STEP);
        central(&op, &om, FD_STEP);
        double scale = 1e-3 + fabs(ref->loss.data[0]), ad = 0;
        for (uint32_t i = 0; i < p->n_inputs; i++)
            ad += dot(&ref->grads[i], &dir[i], &scale);
        ok = fabs(lp.data[0] - ad) <= TOL_FD * scale ||
             found(f, CHK_FD, "d loss along t: finite differences %.12g, gradients %.12g",
                   lp.data[0], ad);
    }
    if (ok && !tfp_jvp(run, &j))
        ok = found(f, CHK_FD, "jvp: %s", run->msg);
    if (ok) {
        double err = tfp_err(&op, &j, 1e-3);
        ok = err <= TOL_FD ||
             found(f, CHK_FD, "the JVP differs from finite differences by %.3g", err);
    }
    tfp_data *all[] = {&lp, &lm, &op, &om, &j};
    for (int k = 0; k < 5; k++)
        tfp_data_free(all[k]);
    return ok;
}

/* H v as the central difference of x0's gradient along v. */
static bool fd_hvp(const tfp_program *p, tfp_run *run, finding *f)
{
    tfp_data lp = {0}, lm = {0}, op = {0}, om = {0}, hv = {0};
    tfp_data gp[TFP_MAX_LEAVES], gm[TFP_MAX_LEAVES];
    memset(gp, 0, sizeof gp);
    memset(gm, 0, sizeof gm);
    uint32_t x0 = p->hvp_input;
    bool ok = evaluate(p, NULL, x0, &p->hvp_v, FD_STEP, &lp, &op, gp, f) &&
              evaluate(p, NULL, x0, &p->hvp_v, -FD_STEP, &lm, &om, gm, f);
    if (ok && !tfp_hvp(run, false, &hv))
        ok = found(f, CHK_FD, "hvp: %s", run->msg);
    if (ok) {
        central(&gp[x0], &gm[x0], FD_STEP);
        double err = tfp_err(&hv, &gp[x0], 1e-3);
        ok = err <= TOL_FD ||
             found(f, CHK_FD, "the HVP differs from finite differences by %.3g", err);
    }
    tfp_data *all[] = {&lp, &lm, &op, &om, &hv};
    for (int k = 0; k < 5; k++)
        tfp_data_free(all[k]);
    free_grads(gp, p->n_inputs);
    free_grads(gm, p->n_inputs);
    return ok;
}

static bool check_fd(const tfp_program *p, tfp_run *run, const reference *ref, finding *f)
{
    return fd_along_tangents(p, run, ref, f) && fd_hvp(p, run, f);
}

/* Which checks a program gets (the sample of finite differences, the Vulkan subset). */
typedef struct plan {
    bool fd, vulkan;
} plan;

/* Runs the checks (only `only`, unless CHK_COUNT_); false with the first finding. */
static bool check_program(const tfp_program *p, const plan *pl, check_id only, finding *f)
{
    reference ref;
    tfp_run run;
    memset(&ref, 0, sizeof ref);
    f->what[0] = '\0';
    bool all = only == CHK_COUNT_;
    bool ok = reference_run(p, &run, &ref, f);
    if (ok && (all || only == CHK_PATHS))
        ok = check_paths(p, &run, &ref, f);
    if (ok && (all || only == CHK_ADJOINT))
        ok = check_adjoint(p, &run, &ref, f);
    if (ok && (all || only == CHK_HVP))
        ok = check_hvp(&run, f);
    if (ok && (all || only == CHK_VARIANTS))
        ok = check_variants(p, &ref, f);
    if (ok && pl->fd && (all || only == CHK_FD))
        ok = check_fd(p, &run, &ref, f);
    if (ok && pl->vulkan && g_vulkan && (all || only == CHK_VULKAN)) {
        tfp_config cfg = {.engine = g_vulkan, .dtype = TF_F64, .defer = -1, .linalg = g_linalg};
        ok = check_config(p, &cfg, &ref, TOL_ENGINE, CHK_VULKAN, "vulkan", f);
        /* an engine that claims no complex refuses an op on c128 by name
           ("does not support binary complex for f64, f64 -> c128"): counted */
        if (!ok && p->has_complex && strstr(f->what, "TF_ERR_UNSUPPORTED") &&
            strstr(f->what, "c128")) {
            g_vulkan_refused += all;
            ok = true;
        }
    }
    tfp_run_end(&run);
    reference_free(&ref);
    return ok;
}

/* ===================================================================== */
/* Shrinking (tests/support/tf_shrink.h)                                  */
/* ===================================================================== */

/* The checker's predicate: the same check still fails. */
typedef struct same_check {
    plan pl;
    check_id check;
    finding first, last; /* as found, and on the last candidate kept */
} same_check;

/*
 * A finding's kind: its text without digits (values, element and input
 * numbers), up to the first 96 characters, so that a candidate failing the
 * same check in another way (a program shrunk until an input no longer
 * reaches the output, say) does not count as the same failure.
 */
static void kind_of(const char *what, char *out, size_t size)
{
    size_t n = 0;
    for (; *what && n + 1 < size && n < 96; what++)
        if (*what < '0' || *what > '9')
            out[n++] = *what;
    out[n] = '\0';
}

static bool fails_same(const tfp_program *q, void *ctx)
{
    same_check *c = ctx;
    finding f;
    if (check_program(q, &c->pl, c->check, &f) || f.check != c->check)
        return false;
    char a[128], b[128];
    kind_of(f.what, a, sizeof a);
    kind_of(c->first.what, b, sizeof b);
    if (strcmp(a, b) != 0)
        return false;
    c->last = f;
    return true;
}

/* ===================================================================== */
/* Reporting                                                              */
/* ===================================================================== */

/* s as a JSON string (quotes included) into out. */
static void json_string(const char *s, char *out, size_t size)
{
    size_t n = 0;
    out[n++] = '"';
    for (; *s && n + 8 < size; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') {
            out[n++] = '\\';
            out[n++] = (char)ch;
        } else if (ch < 0x20) {
            n += (size_t)snprintf(out + n, size - n, "\\u%04x", ch);
        } else {
            out[n++] = (char)ch;
        }
    }
    out[n++] = '"';
    out[n] = '\0';
}

static const char *g_argv0 = "test_ad_diff";

/* Writes the shrunk failing program; returns its path in path. */
static bool write_failure(const tfp_program *p, const finding *f, char *path, size_t size)
{
    const char *dir = getenv("TF_AD_DIFF_OUT");
    snprintf(path, size, "%s/ad_diff_%llu_%llu.json", dir && *dir ? dir : ".",
             (unsigned long long)p->seed, (unsigned long long)p->index);
    char what[3200], replay[1200], extra[5000], line[1100];
    json_string(f->what, what, sizeof what);
    snprintf(line, sizeof line, "TF_AD_DIFF_REPLAY=%s %s", path, g_argv0);
    json_string(line, replay, sizeof replay);
    snprintf(extra, sizeof extra, "{\"check\": \"%s\", \"finding\": %s, \"replay\": %s}",
             k_check_names[f->check], what, replay);
    return tfp_write_file(p, path, extra);
}

/* ===================================================================== */
/* The tests                                                              */
/* ===================================================================== */

/* How program `index` of a seed is made and checked (deterministic). */
static void options_for(uint64_t index, tfg_options *o, plan *pl)
{
    bool big = index % 8 == 7;
    bool with_complex = !big && index % 5 == 4;
    *o = (tfg_options){.min_ops = big ? 3 : 4, .max_ops = big ? 8 : 16,
                       .linalg = !big && !with_complex && index % 3 == 1, .big = big,
                       .with_complex = with_complex};
    pl->fd = !big && index % 3 == 0;
    pl->vulkan = !big && index % 4 == 2;
}

/* A decimal number ending at the end of s or at a ':' (fallback otherwise). */
static uint64_t parse_u64(const char *s, uint64_t fallback)
{
    char *end;
    unsigned long long v = s && *s ? strtoull(s, &end, 10) : 0;
    return s && *s && end != s && (!*end || *end == ':') ? (uint64_t)v : fallback;
}

/* How often each op was generated (printed with TF_AD_DIFF_VERBOSE). */
static struct {
    char name[24];
    size_t count;
} g_op_counts[96];

static void count_ops(const tfp_program *p)
{
    for (uint32_t k = 0; k < p->n_ops; k++) {
        size_t i = 0;
        while (i < 96 && g_op_counts[i].name[0] && strcmp(g_op_counts[i].name, p->ops[k].name))
            i++;
        if (i == 96)
            continue;
        snprintf(g_op_counts[i].name, sizeof g_op_counts[i].name, "%s", p->ops[k].name);
        g_op_counts[i].count++;
    }
}

static void print_op_counts(void)
{
    print_message("[ ad_diff ] ops generated:");
    for (size_t i = 0; i < 96 && g_op_counts[i].name[0]; i++)
        print_message(" %s %zu", g_op_counts[i].name, g_op_counts[i].count);
    print_message("\n");
}

/* Checks one generated program; on a finding shrinks and writes it, reporting the file. */
static bool run_one(uint64_t seed, uint64_t index, size_t *n_checked)
{
    tfg_options o;
    plan pl;
    options_for(index, &o, &pl);
    tfp_program p;
    char err[512];
    if (!tfg_program(seed, index, &o, g_cpu1, g_linalg, &p, err, sizeof err)) {
        print_error("generating program %llu of seed %llu: %s\n", (unsigned long long)index,
                    (unsigned long long)seed, err);
        return false;
    }
    pl.fd = pl.fd && tfg_fd_safe(&p);
    count_ops(&p);
    finding f;
    bool ok = check_program(&p, &pl, CHK_COUNT_, &f);
    (*n_checked)++;
    g_complex_checked += p.has_complex;
    if (getenv("TF_AD_DIFF_VERBOSE"))
        print_message("[ ad_diff ] seed %llu program %llu: %u ops%s%s%s%s: %s\n",
                      (unsigned long long)seed, (unsigned long long)index, p.n_ops,
                      o.big ? ", big" : "", o.linalg ? ", linalg" : "",
                      p.has_complex ? ", complex" : "", pl.fd ? ", fd" : "", ok ? "ok" : f.what);
    if (!ok) {
        same_check c = {.pl = pl, .check = f.check, .first = f, .last = f};
        uint32_t before = p.n_ops;
        tfp_config ref = reference_cfg();
        const char *sh = getenv("TF_AD_DIFF_SHRINK");
        if (!sh || strcmp(sh, "0") != 0)
            tfs_shrink(&p, fails_same, &c, &ref, 300);
        char path[1024];
        bool wrote = write_failure(&p, &c.last, path, sizeof path);
        print_error("seed %llu program %llu: %s: %s\n  shrunk from %u to %u ops; %s %s\n",
                    (unsigned long long)seed, (unsigned long long)index, k_check_names[f.check],
                    c.last.what, before, p.n_ops, wrote ? "replay with" : "could not write",
                    path);
        if (wrote)
            print_error("  TF_AD_DIFF_REPLAY=%s %s\n", path, g_argv0);
    }
    tfp_program_free(&p);
    return ok;
}

static void test_random_programs(void **state)
{
    (void)state;
    const char *seeds = getenv("TF_AD_DIFF_SEEDS");
    uint64_t first = 1, count = CI_PROGRAMS;
    if (seeds && *seeds) {
        first = parse_u64(seeds, 1);
        const char *colon = strchr(seeds, ':');
        count = colon ? parse_u64(colon + 1, CI_PROGRAMS) : CI_PROGRAMS;
    }
    double seconds = (double)parse_u64(getenv("TF_AD_DIFF_SECONDS"), 0);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    size_t failures = 0, checked = 0;
    /* programs 0 .. 99 of each seed: a time budget walks through the seeds */
    for (uint64_t k = 0;; k++) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        double elapsed = (double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec);
        if (seconds > 0 ? elapsed >= seconds : k >= count)
            break;
        failures += !run_one(first + k / 100, k % 100, &checked);
    }
    clock_gettime(CLOCK_MONOTONIC, &t);
    print_message("[ ad_diff ] %zu programs checked in %.1f s (%zu complex; %zu of the Vulkan "
                  "subset refused by the engine as complex), %zu failed%s\n",
                  checked,
                  (double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec),
                  g_complex_checked, g_vulkan_refused, failures,
                  g_vulkan ? "" : " (no Vulkan engine: its subset was not run)");
    if (getenv("TF_AD_DIFF_VERBOSE"))
        print_op_counts();
    if (failures)
        fail_msg("%zu of %zu generated programs failed (listed above)", failures, checked);
}

/* A program written out and read back is the same program, checked alike
   (a real one with linalg, and a complex one: c128 leaves, weights, tangents). */
static void round_trip(const tfg_options *o)
{
    tfp_program p, q;
    char err[512], path[] = "ad_diff_round_trip.json";
    assert_true(tfg_program(7, 1, o, g_cpu1, g_linalg, &p, err, sizeof err));
    assert_true(p.has_complex == o->with_complex);
    assert_true(tfp_write_file(&p, path, "{\"check\": \"none\"}"));
    if (!tfp_read_file(path, &q, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(q.n_ops, p.n_ops);
    assert_int_equal(q.n_inputs, p.n_inputs);
    assert_int_equal(q.n_consts, p.n_consts);
    assert_int_equal(q.output, p.output);
    assert_true(q.has_complex == p.has_complex);
    for (uint32_t i = 0; i < p.n_inputs; i++) {
        assert_int_equal(q.inputs[i].layout, p.inputs[i].layout);
        assert_true(tfp_err(&q.inputs[i].value, &p.inputs[i].value, 1e-3) == 0);
        assert_true(tfp_err(&q.inputs[i].tangent, &p.inputs[i].tangent, 1e-3) == 0);
    }
    assert_true(tfp_err(&q.weights, &p.weights, 1e-3) == 0);
    assert_true(tfp_err(&q.hvp_v, &p.hvp_v, 1e-3) == 0);
    reference a, b;
    tfp_run ra, rb;
    finding f;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    assert_true(reference_run(&p, &ra, &a, &f));
    assert_true(reference_run(&q, &rb, &b, &f));
    assert_true(tfp_err(&a.out, &b.out, 1e-3) == 0 && tfp_err(&a.loss, &b.loss, 1e-3) == 0);
    for (uint32_t i = 0; i < p.n_inputs; i++)
        assert_true(tfp_err(&a.grads[i], &b.grads[i], 1e-3) == 0);
    tfp_run_end(&ra);
    tfp_run_end(&rb);
    reference_free(&a);
    reference_free(&b);
    tfp_program_free(&p);
    tfp_program_free(&q);
    remove(path);
}

static void test_round_trip(void **state)
{
    (void)state;
    tfg_options real = {.min_ops = 8, .max_ops = 12, .linalg = true};
    tfg_options cx = {.min_ops = 8, .max_ops = 12, .with_complex = true};
    round_trip(&real);
    round_trip(&cx);
}

/* The shrinker keeps what a predicate needs and drops the rest. */
static bool has_reduce_and_runs(const tfp_program *q, void *ctx)
{
    (void)ctx;
    bool has = false;
    for (uint32_t k = 0; k < q->n_ops; k++)
        has = has || strncmp(q->ops[k].name, "reduce_", 7) == 0;
    finding f;
    tfp_run run;
    reference ref;
    memset(&ref, 0, sizeof ref);
    bool runs = reference_run(q, &run, &ref, &f);
    tfp_run_end(&run);
    reference_free(&ref);
    return has && runs;
}

static void test_shrinker(void **state)
{
    (void)state;
    tfg_options o = {.min_ops = 12, .max_ops = 16};
    for (uint64_t index = 0; index < 40; index++) {
        tfp_program p;
        char err[512];
        assert_true(tfg_program(3, index, &o, g_cpu1, g_linalg, &p, err, sizeof err));
        if (!has_reduce_and_runs(&p, NULL)) {
            tfp_program_free(&p);
            continue;
        }
        uint32_t before = p.n_ops;
        tfp_config ref = reference_cfg();
        tfs_shrink(&p, has_reduce_and_runs, NULL, &ref, 300);
        assert_true(has_reduce_and_runs(&p, NULL));
        if (p.n_ops > 1 || p.n_ops >= before)
            fail_msg("program %llu: shrunk from %u to %u ops, expected 1",
                     (unsigned long long)index, before, p.n_ops);
        tfp_program_free(&p);
        return;
    }
    fail_msg("no program with a reduction among 40");
}

/* TF_AD_DIFF_REPLAY: one written program, every check. */
static int replay_file(const char *path)
{
    tfp_program p;
    char err[600];
    if (!tfp_read_file(path, &p, err, sizeof err)) {
        fprintf(stderr, "test_ad_diff: %s\n", err);
        return 2;
    }
    plan pl = {.fd = tfg_fd_safe(&p), .vulkan = true};
    finding f;
    bool ok = check_program(&p, &pl, CHK_COUNT_, &f);
    fprintf(stderr, "test_ad_diff: %s: %s%s%s\n", path, ok ? "every check passes" : k_check_names[f.check],
            ok ? "" : ": ", ok ? "" : f.what);
    tfp_program_free(&p);
    return ok ? 0 : 1;
}

static int group_setup(void **state)
{
    (void)state;
    if (tf_engine_open("cpu", 1, &g_cpu1) || tf_engine_open("cpu", 2, &g_cpu2) ||
        tf_extension_load("linalg", &g_linalg))
        return -1;
    if (tf_engine_open("vulkan", 1, &g_vulkan) != TF_OK) {
        fprintf(stderr, "test_ad_diff: no Vulkan engine (%s): its subset is not run\n",
                tf_error_message());
        g_vulkan = NULL;
    }
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    tf_engine_destroy(g_vulkan);
    tf_engine_destroy(g_cpu2);
    tf_engine_destroy(g_cpu1);
    return 0;
}

int main(int argc, char **argv)
{
    (void)argc;
    g_argv0 = argv[0];
    const char *replay = getenv("TF_AD_DIFF_REPLAY");
    if (replay && *replay) {
        if (group_setup(NULL))
            return 2;
        int rc = replay_file(replay);
        group_teardown(NULL);
        return rc;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_shrinker),
        cmocka_unit_test(test_random_programs),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown) ? 1 : 0;
}
