/*
 * tf_gen.c - growing random programs op by op on their concrete values
 * (tf_gen.h): the generator's state, leaves, validation of each op (the
 * library accepts it, the result is finite and moderate, the operands keep
 * their margins) and the completion of the output. The op builders are in
 * tf_gen_ops.c.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tf_gen_internal.h"

/* ---- random numbers ---- */

uint64_t tfg_next(tfg_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double tfg_unif(tfg_rng *r, double lo, double hi)
{
    return lo + (hi - lo) * (double)(tfg_next(r) >> 11) * 0x1.0p-53;
}

uint32_t tfg_pick(tfg_rng *r, uint32_t n)
{
    return n ? (uint32_t)(tfg_next(r) % n) : 0;
}

bool tfg__chance(gen *g, double p)
{
    return tfg_unif(&g->rng, 0, 1) < p;
}

/* A value with 4 decimals, away from 0 (OPS.md: generated data is never 0). */
double tfg__datum(gen *g, double lo, double hi)
{
    double v;
    do
        v = round(tfg_unif(&g->rng, lo, hi) * 1e4) / 1e4;
    while (fabs(v) < 0.05);
    return v;
}

/* ---- shapes ---- */

size_t tfg__numel(uint32_t rank, const int64_t *shape)
{
    size_t n = 1;
    for (uint32_t i = 0; i < rank; i++)
        n *= (size_t)shape[i];
    return n;
}

bool tfg__broadcast(const tfp_data *a, const tfp_data *b, uint32_t *rank, int64_t *shape)
{
    uint32_t r = a->rank > b->rank ? a->rank : b->rank;
    for (uint32_t d = 0; d < r; d++) {
        int64_t x = d + a->rank >= r ? a->shape[d + a->rank - r] : 1;
        int64_t y = d + b->rank >= r ? b->shape[d + b->rank - r] : 1;
        if (x != y && x != 1 && y != 1)
            return false;
        shape[d] = x == 1 ? y : x;
    }
    *rank = r;
    return true;
}

size_t tfg__bcast_index(const tfp_data *arg, const tfp_data *res, size_t e)
{
    int64_t idx[TF_MAX_RANK];
    for (uint32_t d = 0; d < res->rank; d++) {
        idx[d] = (int64_t)(e % (size_t)res->shape[d]);
        e /= (size_t)res->shape[d];
    }
    size_t k = 0;
    for (uint32_t d = arg->rank; d-- > 0;) {
        int64_t i = idx[d + res->rank - arg->rank];
        k = k * (size_t)arg->shape[d] + (size_t)(arg->shape[d] == 1 ? 0 : i);
    }
    return k;
}

/* ---- values of the program so far ---- */

const tfp_data *tfg__val(gen *g, uint32_t id)
{
    return &g->vals[id];
}

bool tfg__is_float(gen *g, uint32_t id)
{
    return g->vals[id].dtype == TFP_F64 || g->vals[id].dtype == TFP_C128;
}

/*
 * A value to use as an operand: recent values and values already used are
 * preferred (so that results fan out and paths share values), leaves now and
 * then; `want` filters (NULL: any float value). UINT32_MAX when none fits.
 */
uint32_t tfg__pick_value(gen *g, bool (*want)(gen *, uint32_t, const void *), const void *ctx)
{
    uint32_t n = tfp_n_values(g->p), cand[512], m = 0;
    for (uint32_t id = 0; id < n && m < 512; id++)
        if (tfg__is_float(g, id) && (!want || want(g, id, ctx)))
            cand[m++] = id;
    if (!m)
        return UINT32_MAX;
    double roll = tfg_unif(&g->rng, 0, 1);
    if (roll < 0.45) /* one of the three newest */
        return cand[m - 1 - tfg_pick(&g->rng, m < 3 ? m : 3)];
    if (roll < 0.7) { /* a value used before: fan-out */
        uint32_t used[512], u = 0;
        for (uint32_t i = 0; i < m; i++)
            if (g->uses[cand[i]])
                used[u++] = cand[i];
        if (u)
            return used[tfg_pick(&g->rng, u)];
    }
    return cand[tfg_pick(&g->rng, m)];
}

/* ---- validating an op ---- */

static bool all_finite(const tfp_data *d, double limit)
{
    for (size_t k = 0; k < d->count; k++)
        if (!(fabs(d->data[k]) <= limit))
            return false;
    return true;
}

/* Drops the op just pushed, and its result from the run if it ran. */
static void undo(gen *g, bool ran)
{
    if (ran) {
        uint32_t id = tfp_op_value(g->p, g->run.n_done - 1);
        tf_eager_release(g->run.vals[id]);
        g->run.vals[id] = NULL;
        g->run.n_done--;
    }
    g->run.status = TF_OK;
    g->run.msg[0] = '\0';
    tfp_program_pop(g->p);
}

size_t tfg__value_limit(const gen *g)
{
    return g->opt->big ? 40000 : 120;
}

bool tfg__try(gen *g, tfp_op *op, uint32_t *id)
{
    bool pushed = tfp_program_push(g->p, op);
    tfp_op_free(op);
    if (!pushed)
        return false;
    if (!tfp_run_op(&g->run)) {
        undo(g, false);
        return false;
    }
    uint32_t v = tfp_op_value(g->p, g->p->n_ops - 1);
    tfp_data res;
    if (!tfp_read_value(&g->run, v, &res)) {
        undo(g, true);
        return false;
    }
    size_t limit = tfg__value_limit(g);
    bool cx = res.dtype == TFP_C128;
    g->p->has_complex = g->p->has_complex || cx;
    bool ok = ((res.dtype != TFP_F64 && !cx) || all_finite(&res, 1e3)) &&
              tfp_data_numel(&res) <= limit &&
              tfp_data_numel(&res) > 0 && tfg__margins(g, &g->p->ops[g->p->n_ops - 1], &res);
    if (!ok) {
        tfp_data_free(&res);
        undo(g, true);
        return false;
    }
    g->vals[v] = res;
    g->uses[v] = 0;
    const tfp_op *kept = &g->p->ops[g->p->n_ops - 1];
    for (uint32_t i = 0; i < kept->n_args; i++)
        g->uses[kept->args[i]]++;
    *id = v;
    return true;
}

/* ---- leaves ---- */

/* f64 or c128 data (each part of a complex element drawn alike). */
static void random_data(gen *g, tfp_data *d, tfp_dtype dtype, uint32_t rank,
                        const int64_t *shape, double lo, double hi)
{
    memset(d, 0, sizeof *d);
    d->dtype = dtype;
    d->rank = rank;
    memcpy(d->shape, shape, rank * sizeof shape[0]);
    d->count = tfg__numel(rank, shape) * (dtype == TFP_C128 ? 2 : 1);
    d->data = malloc((d->count ? d->count : 1) * sizeof *d->data);
    for (size_t k = 0; d->data && k < d->count; k++)
        d->data[k] = tfg__datum(g, lo, hi);
}

/* A leaf shape related to the program's base shape, so that ops broadcast. */
static uint32_t leaf_shape(gen *g, const int64_t *base, uint32_t base_rank, int64_t *shape)
{
    double roll = tfg_unif(&g->rng, 0, 1);
    if (roll < 0.08 && !g->opt->big)
        return 0; /* rank 0 */
    if (roll < 0.25 && !g->opt->big) { /* an unrelated shape */
        uint32_t rank = 1 + tfg_pick(&g->rng, 3);
        for (uint32_t i = 0; i < rank; i++)
            shape[i] = 1 + tfg_pick(&g->rng, 4);
        return rank;
    }
    uint32_t drop = roll < 0.45 ? tfg_pick(&g->rng, base_rank) : 0; /* a trailing suffix */
    uint32_t rank = base_rank - drop;
    for (uint32_t i = 0; i < rank; i++) {
        shape[i] = base[i + drop];
        if (i + drop > 0 && tfg__chance(g, 0.15))
            shape[i] = 1; /* stretched by broadcasting */
    }
    return rank;
}

static void make_leaves(gen *g)
{
    tfp_program *p = g->p;
    int64_t base[TF_MAX_RANK];
    uint32_t base_rank = 1 + tfg_pick(&g->rng, 3);
    for (uint32_t i = 0; i < base_rank; i++)
        base[i] = 1 + tfg_pick(&g->rng, i == 0 ? 5 : 4);
    if (g->opt->big) { /* 32800 f64 elements, above TF_DEFER_HOST_MIN_BYTES */
        base_rank = 2;
        base[0] = 4100;
        base[1] = 8;
    }
    p->n_inputs = 1 + tfg_pick(&g->rng, 3);
    p->n_consts = tfg_pick(&g->rng, 3);
    for (uint32_t i = 0; i < p->n_inputs + p->n_consts; i++) {
        tfp_leaf *l = i < p->n_inputs ? &p->inputs[i] : &p->consts[i - p->n_inputs];
        int64_t shape[TF_MAX_RANK];
        uint32_t rank = leaf_shape(g, base, base_rank, shape);
        if (g->opt->linalg && i == 0) { /* a matrix for the linalg ops to start from */
            rank = 2;
            shape[0] = 2 + tfg_pick(&g->rng, 3);
            shape[1] = 2 + tfg_pick(&g->rng, 3);
        }
        /* complex programs: x0 is c128, each other leaf is with even odds */
        bool cx = g->opt->with_complex && (i == 0 || tfg__chance(g, 0.5));
        tfp_dtype dt = cx ? TFP_C128 : TFP_F64;
        p->has_complex = p->has_complex || cx;
        random_data(g, &l->value, dt, rank, shape, -1.5, 1.5);
        /* a third of the real constants hold one value (decided off the stream, which stays
           as it was): the runner makes them with tf_session_full, FILLed memory whose value
           the host knows, so that deferred batches read them as FUSED immediates (ABI 1.5) */
        uint64_t h = (p->seed * 0x9e3779b97f4a7c15ull ^ (p->index + 1) * 0xbf58476d1ce4e5b9ull) +
                     i * 0x94d049bb133111ebull;
        h ^= h >> 31;
        if (i >= p->n_inputs && !cx && h % 3 == 0)
            for (size_t k = 1; l->value.data && k < l->value.count; k++)
                l->value.data[k] = l->value.data[0];
        l->layout = (tfp_layout)tfg_pick(&g->rng, 4);
        if (i < p->n_inputs)
            random_data(g, &l->tangent, dt, rank, shape, -1, 1);
    }
    /* scaled identities for the linalg ops' well-conditioned operands */
    for (uint32_t m = 2; g->opt->linalg && m <= 4 && p->n_consts < TFP_MAX_LEAVES; m++) {
        tfp_leaf *l = &p->consts[p->n_consts++];
        int64_t shape[2] = {m, m};
        memset(l, 0, sizeof *l);
        random_data(g, &l->value, TFP_F64, 2, shape, 0, 1);
        double c = (double)(2 + tfg_pick(&g->rng, 3));
        for (size_t k = 0; l->value.data && k < l->value.count; k++)
            l->value.data[k] = k % (m + 1) == 0 ? c : 0.0;
        g->identity[m] = p->n_inputs + p->n_consts - 1;
    }
}

/* ---- completing the program ---- */

/* Whether op k passes a derivative to its argument i. */
static bool differentiable_edge(const tfp_op *op, uint32_t i)
{
    if (strcmp(op->name, "compare") == 0 || strcmp(op->name, "sign") == 0)
        return false;
    return !(strcmp(op->name, "select") == 0 && i == 0);
}

/* reach[id]: the output depends on value id through differentiable edges. */
static void reach_back(const tfp_program *p, bool *reach)
{
    memset(reach, 0, tfp_n_values(p) * sizeof *reach);
    reach[p->output] = true;
    for (uint32_t k = p->n_ops; k-- > 0;) {
        if (!reach[tfp_op_value(p, k)])
            continue;
        for (uint32_t i = 0; i < p->ops[k].n_args; i++)
            if (differentiable_edge(&p->ops[k], i))
                reach[p->ops[k].args[i]] = true;
    }
}

/* Makes the output depend on every input: out + sum(tanh(x)) for those it
   does not (sin for a complex x: the leaves are inside its strip, not always
   inside tanh's, OPS.md 7.9). */
static bool connect_inputs(gen *g)
{
    tfp_program *p = g->p;
    bool reach[TFG_MAX_VALUES];
    for (uint32_t i = 0; i < p->n_inputs; i++) {
        p->output = tfp_op_value(p, p->n_ops - 1);
        reach_back(p, reach);
        if (reach[i])
            continue;
        uint32_t t, s, o, args[2];
        tfp_op op;
        tfp_op_init(&op, g->vals[i].dtype == TFP_C128 ? "sin" : "tanh", 1, &i);
        if (!tfg__try(g, &op, &t))
            return false;
        tfp_op_init(&op, "reduce_sum", 1, &t);
        tfp_attr_null(&op, "axes");
        if (!tfg__try(g, &op, &s))
            return false;
        args[0] = p->output;
        args[1] = s;
        tfp_op_init(&op, "add", 2, args);
        if (!tfg__try(g, &op, &o))
            return false;
    }
    p->output = tfp_op_value(p, p->n_ops - 1);
    return true;
}

static void drop_unused_consts(tfp_program *p)
{
    for (uint32_t c = p->n_consts; c-- > 0;)
        if (!tfp_value_used(p, p->n_inputs + c))
            tfp_program_drop_const(p, c);
}

static void finish(gen *g)
{
    tfp_program *p = g->p;
    const tfp_data *out = &g->vals[p->output];
    random_data(g, &p->weights, out->dtype, out->rank, out->shape, -1, 1);
    p->hvp_input = 0;
    random_data(g, &p->hvp_v, p->inputs[0].value.dtype, p->inputs[0].value.rank,
                p->inputs[0].value.shape, -1, 1);
    drop_unused_consts(p);
}

bool tfg_fd_safe(const tfp_program *p)
{
    for (uint32_t k = 0; k < p->n_ops; k++)
        if (strcmp(p->ops[k].name, "cast_round") == 0)
            return false;
    return true;
}

static void gen_end(gen *g)
{
    tfp_run_end(&g->run);
    for (uint32_t i = 0; i < TFG_MAX_VALUES; i++)
        tfp_data_free(&g->vals[i]);
}

bool tfg_program(uint64_t seed, uint64_t index, const tfg_options *options, tf_engine *cpu,
                 tf_extension_module *linalg, tfp_program *p, char *err, size_t err_size)
{
    static gen g; /* large; the generator is not reentrant (one thread per test program) */
    memset(&g, 0, sizeof g);
    g.rng.s = seed * 0x100000001b3ull ^ (index + 1) * 0x9e3779b97f4a7c15ull;
    g.opt = options;
    g.p = p;
    tfp_program_init(p);
    p->seed = seed;
    p->index = index;
    make_leaves(&g);
    tfp_config cfg = {.engine = cpu, .dtype = TF_F64, .defer = TF_DEFER_OFF, .linalg = linalg};
    if (!tfp_run_begin(&g.run, p, &cfg)) {
        snprintf(err, err_size, "%s", g.run.msg);
        gen_end(&g);
        tfp_program_free(p);
        return false;
    }
    for (uint32_t i = 0; i < p->n_inputs + p->n_consts; i++)
        tfp_read_value(&g.run, i, &g.vals[i]);
    uint32_t target = options->min_ops + tfg_pick(&g.rng, options->max_ops - options->min_ops + 1);
    for (uint32_t tries = 0; tries < 40 * target; tries++) {
        bool done = p->n_ops >= target && tfg__is_float(&g, tfp_op_value(p, p->n_ops - 1));
        if (done || tfp_n_values(p) + 8 >= TFG_MAX_VALUES)
            break;
        tfg__grow(&g);
    }
    bool ok = p->n_ops > 0 && tfg__is_float(&g, tfp_op_value(p, p->n_ops - 1)) &&
              connect_inputs(&g);
    if (ok)
        finish(&g);
    else
        snprintf(err, err_size, "seed %llu index %llu: could not complete a program",
                 (unsigned long long)seed, (unsigned long long)index);
    gen_end(&g);
    if (!ok)
        tfp_program_free(p);
    return ok;
}
