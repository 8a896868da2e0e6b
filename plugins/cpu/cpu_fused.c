/*
 * cpu_fused.c - TF_PRIM_FUSED: a straight-line program of UNARY and BINARY
 * steps run in one pass over its operands.
 *
 * The interpreter prepares a program once per call (live steps only,
 * registers placed in the operands or in reused stack slots) and then runs
 * it chunk by chunk inside the elementwise driver's rows
 * (cpu_elementwise_run.c), every step calling the very row function of its
 * UNARY or BINARY primitive (cpu_elementwise.c), so each output equals the
 * steps run as separate calls bit for bit. The call's structure was checked
 * by the host (TF_EXEC_VALIDATED) or by cpu_validate.c.
 */
#include <stdint.h>
#include <string.h>

#include "cpu_fused.h"

/*
 * A FUSED program runs chunk by chunk along each row the iteration hands out. Every
 * step calls the row function of its UNARY or BINARY primitive (so it rounds exactly
 * as that primitive does: the rows give the same value for an element whatever its
 * place in a row and its strides) on `chunk` elements. A register lives where its
 * value is kept: an input's in the input, read in place through its row stride; an
 * output's (ABI 1.3: any step params.outputs names, else the last) in that output,
 * written there and read back by later steps; every other register in a slot of a
 * buffer on the stack. A slot is reused once no later step reads its register, so a
 * program needs as many slots as such registers alive at once, and the chunk is as
 * long as FUSED_SCRATCH bytes allow for them: 64 to FUSED_CHUNK_MAX elements.
 */
#define FUSED_SCRATCH 8192  /* bytes of slots on the stack of a row call */
#define FUSED_CHUNK_MAX 256 /* elements: enough to amortise the calls of each step */
/* dst (stride in elements) = n elements of src. */
static void fused_store(char *dst, int64_t stride, const char *src, int64_t n, int64_t esize)
{
    if (stride == 1) {
        memcpy(dst, src, (size_t)(n * esize));
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        memcpy(dst + i * stride * esize, src + i * esize, (size_t)esize);
    }
}

/* Whether every operand of a row is dense (the compiled program's rows). */
static int fused_dense(const fused_prog *fp, const int64_t *s)
{
    for (int o = 0; o < fp->n_out + fp->n_in; o++) {
        if (s[o] != 1) {
            return 0;
        }
    }
    return 1;
}

/*
 * The row function. Outputs share no memory with any other operand (engine_abi.h),
 * so a step may write one and later steps read it there, within every row function's
 * restrict promises. In place (one output, which is one of the inputs,
 * TF_ENGINE_CAP_IN_PLACE) the last step writes a slot instead, copied out once every
 * step has read the chunk.
 */
static int fused_row(const void *ctx, int64_t n, char *const *p, const int64_t *s, cpu_err *err)
{
    const fused_prog *fp = ctx;
    if (fp->jit != NULL && fused_dense(fp, s)) {
        return fp->jit(n, p, fp->imm, fp->rows, fp->stream, NULL, err);
    }
    const int64_t es = fp->esize, slot_bytes = fp->chunk * fp->esize;
    _Alignas(64) char scratch[FUSED_SCRATCH];
    for (int64_t i = 0; i < n; i += fp->chunk) {
        const int64_t len = n - i < fp->chunk ? n - i : fp->chunk;
        for (const fused_step *st = fp->steps; st < fp->steps + fp->n_steps; st++) {
            char *q[3];
            int64_t qs[3];
            const int regs[3] = {st->dst, st->src[0], st->src[1]};
            for (int j = 0; j <= st->nsrc; j++) {
                const int where = fp->loc[regs[j]];
                if (where >= FUSED_LOC_IMM) { /* never written: only steps write */
                    q[j] = (char *)(uintptr_t)fp->imm[where - FUSED_LOC_IMM];
                    qs[j] = 0;
                    continue;
                }
                q[j] =
                    where >= 0 ? p[where] + i * s[where] * es : scratch + (-1 - where) * slot_bytes;
                qs[j] = where >= 0 ? s[where] : 1;
            }
            if (st->fn(NULL, len, q, qs, err) != 0) {
                return 1;
            }
        }
        if (fp->in_place) {
            const int last = fp->steps[fp->n_steps - 1].dst;
            fused_store(p[0] + i * s[0] * es, s[0], scratch + (-1 - fp->loc[last]) * slot_bytes,
                        len, es);
        }
        for (int o = 0; o < fp->n_streamed; o++) {
            const char *src = scratch + (-1 - fp->loc[fp->streamed_reg[o]]) * slot_bytes;
            if (s[o] == 1) {
                fp->stream(p[o] + i * es, src, (size_t)(len * es));
            } else {
                fused_store(p[o] + i * s[o] * es, s[o], src, len, es);
            }
        }
    }
    return 0;
}

/* The register a step's operand names: an input or step as it is, immediate j (ABI 1.5,
   TF_FUSED_IMM | j) as FUSED_IMM_REG + j. */
static int fused_reg(uint32_t r)
{
    return r & TF_FUSED_IMM ? FUSED_IMM_REG + (int)(r & ~TF_FUSED_IMM) : (int)r;
}

/* The output each register goes to (-1: none) and which registers the outputs depend on
   (need[r] != 0), walking the steps backwards; out_reg[o] is output operand o's register. */
static void fused_needed(const tf_fused_params *pp, int n_in, const int *out_reg, int n_out,
                         int *out_of, int *need)
{
    for (int r = 0; r < FUSED_REGS; r++) {
        out_of[r] = -1;
        need[r] = 0;
    }
    for (int o = 0; o < n_out; o++) {
        out_of[out_reg[o]] = o;
        need[out_reg[o]] = 1;
    }
    for (int k = (int)pp->n_steps - 1; k >= 0; k--) {
        const tf_fused_step *st = &pp->steps[k];
        if (need[n_in + k]) {
            need[fused_reg(st->a)] = 1;
            need[fused_reg(st->b)] |= st->kind == TF_FUSED_BINARY;
        }
    }
}

/*
 * The registers of the row function's output operands: the call's outputs, and with a
 * reduced output (1.6) the m elementwise ones and then, as operand m, the unit buffer
 * the reduced register is computed into (fused_reduce_run). A reduced register that is
 * also elementwise output o lives there: *dup = o, and the buffer is filled from it.
 */
static int fused_out_regs(const tf_exec *x, int *out_reg, int *dup)
{
    const tf_fused_params *pp = x->params;
    const int n_in = (int)x->n_inputs;
    *dup = -1;
    if (!TF_FUSED_PARAMS_REDUCE(pp)) {
        const int n_out = (int)x->n_outputs;
        for (int o = 0; o < n_out; o++) {
            out_reg[o] = n_in + (n_out > 1 ? (int)pp->outputs[o] : (int)pp->n_steps - 1);
        }
        return n_out;
    }
    const int m = (int)pp->n_outputs, red = n_in + (int)pp->reduce_step;
    for (int o = 0; o < m; o++) {
        out_reg[o] = n_in + (int)pp->outputs[o];
        *dup = out_reg[o] == red ? o : *dup;
    }
    if (*dup >= 0) {
        return m; /* a register lives in one place: no register names the buffer */
    }
    out_reg[m] = red;
    return m + 1;
}

/* Whether out[0] is one of the inputs: the in-place form (one output), where it is
   exactly that input's view, so the same memory tells it. */
static int fused_in_place(const tf_exec *x)
{
    for (uint32_t r = 0; x->n_outputs == 1 && r < x->n_inputs; r++) {
        if (x->inputs[r]->data == x->outputs[0]->data) {
            return 1;
        }
    }
    return 0;
}

/* Builds *fp from a validated call; returns the grain (costly if any live step is).
   *dup: as fused_out_regs says. stream: non-NULL to store a reduced call's elementwise
   outputs with it (fused_reduce_run), unless one of them holds the reduced register. */
static int64_t fused_prepare(const tf_exec *x, fused_prog *fp, int *dup,
                             cpu_stream_copy_fn stream)
{
    const tf_fused_params *pp = x->params;
    const uint32_t dtype = x->outputs[0]->dtype;
    const int n_in = (int)x->n_inputs, n_out = (int)x->n_outputs; /* 1.6: m + the buffer */
    int need[FUSED_REGS], out_of[FUSED_REGS], last_read[FUSED_REGS] = {0};
    int free_slots[TF_FUSED_MAX_STEPS], nfree = 0, nslots = 0;
    int64_t grain = CPU_GRAIN_CHEAP;

    int out_reg[CPU_MAX_OPS];
    const int n_regs_out = fused_out_regs(x, out_reg, dup);
    fused_needed(pp, n_in, out_reg, n_regs_out, out_of, need);
    for (int k = 0; k < (int)pp->n_steps; k++) {
        if (need[n_in + k]) {
            last_read[fused_reg(pp->steps[k].a)] = k;
            if (pp->steps[k].kind == TF_FUSED_BINARY) {
                last_read[fused_reg(pp->steps[k].b)] = k;
            }
        }
    }
    fp->dtype = dtype;
    fp->n_in = n_in;
    fp->n_out = n_out;
    fp->jit = fp->jit_lanes = NULL;
    fp->red_reg = TF_FUSED_PARAMS_REDUCE(pp) ? n_in + (int)pp->reduce_step : -1;
    fp->red_op = TF_FUSED_PARAMS_REDUCE(pp) ? pp->reduce - 1 : 0;
    fp->red_buf = TF_FUSED_PARAMS_REDUCE(pp) && *dup < 0 ? (int)pp->n_outputs : -1;
    fp->n_steps = 0;
    fp->in_place = !TF_FUSED_PARAMS_REDUCE(pp) && fused_in_place(x);
    const int m = TF_FUSED_PARAMS_REDUCE(pp) ? (int)pp->n_outputs : 0;
    fp->stream = TF_FUSED_PARAMS_REDUCE(pp) && *dup < 0 && m > 0 ? stream : NULL;
    fp->n_streamed = fp->stream ? m : 0;
    fp->esize = (int64_t)tf_dtype_size((tf_dtype)dtype);
    for (int r = 0; r < n_in; r++) {
        fp->loc[r] = n_out + r;
    }
    const uint32_t n_imm = TF_ABI_HAS_FIELD(pp, tf_fused_params, imm) ? pp->n_imm : 0;
    for (uint32_t j = 0; j < n_imm && j < TF_FUSED_MAX_IMMEDIATES; j++) {
        /* rounded as FILL rounds value.f into the dtype */
        tf_scalar v = {pp->imm[j], 0};
        tf__cpu_scalar_bytes(dtype, v, 0.0, fp->imm[j]);
        fp->loc[FUSED_IMM_REG + j] = FUSED_LOC_IMM + (int)j;
    }
    for (int k = 0; k < (int)pp->n_steps; k++) {
        const tf_fused_step *ps = &pp->steps[k];
        const int reg = n_in + k;
        if (!need[reg]) {
            continue;
        }
        const int binary = ps->kind == TF_FUSED_BINARY;
        fused_step *st = &fp->steps[fp->n_steps++];
        st->fn = binary ? tf__cpu_binary_row(dtype, ps->op) : tf__cpu_unary_row(dtype, ps->op);
        st->op = ps->op;
        fp->rows[fp->n_steps - 1] = st->fn;
        st->nsrc = binary ? 2 : 1;
        st->src[0] = fused_reg(ps->a);
        st->src[1] = fused_reg(ps->b);
        st->dst = reg;
        /* The own slot is taken before the operands' are freed: a row function's
           output never overlaps its inputs. */
        const int streamed = out_of[reg] >= 0 && out_of[reg] < fp->n_streamed;
        if (out_of[reg] >= 0 && !fp->in_place && !streamed) {
            fp->loc[reg] = out_of[reg];
        } else {
            fp->loc[reg] = -1 - (nfree > 0 ? free_slots[--nfree] : nslots++);
        }
        if (streamed) {
            fp->streamed_reg[out_of[reg]] = reg;
        }
        for (int j = 0; j < st->nsrc; j++) {
            const int r = st->src[j];
            /* a streamed output's slot is stored at the chunk's end: kept till then */
            const int kept = out_of[r] >= 0 && out_of[r] < fp->n_streamed;
            if (fp->loc[r] < 0 && last_read[r] == k && (j == 0 || r != st->src[0]) && !kept) {
                free_slots[nfree++] = -1 - fp->loc[r];
            }
        }
        const int64_t g =
            binary ? tf__cpu_binary_grain(ps->op) : tf__cpu_unary_grain(dtype, ps->op);
        grain = g < grain ? g : grain;
    }
    int64_t chunk = nslots > 0 ? FUSED_SCRATCH / (nslots * fp->esize) : FUSED_CHUNK_MAX;
    chunk = chunk < FUSED_CHUNK_MAX ? chunk : FUSED_CHUNK_MAX;
    fp->chunk = chunk - chunk % 16;
    return grain;
}

/* ---- ABI 1.6: a reduced output ------------------------------------------------------ */

/*
 * The program runs unit by unit of REDUCE's full reduction (CPU_RED_UNIT_ROWS
 * elements in the program shape's column-major order): each unit computes the
 * elementwise outputs in place and the reduced register, a chunk at a time, into a
 * buffer of one chunk that REDUCE's fold of the unit takes in at once
 * (tf__cpu_reduce_fold_feed: fed in pieces, the fold equals tf__cpu_reduce_unit of
 * the unit as one dense row). The buffer stays in the L1 cache, so the register is
 * written nowhere in memory, and the value is REDUCE's bit for bit. (A buffer of a
 * whole unit, folded afterwards, cost a quarter of the elementwise step: 64 KiB
 * written to and read back from L2 per unit.) Threads split the units; the calling
 * thread folds their results in order.
 */
typedef struct fused_red_job {
    const cpu_engine *e;
    const fused_prog *fp;
    int nops; /* row operands: the m outputs, the buffer (operand m), the inputs */
    int buf;  /* the buffer's operand: m */
    int dup;  /* the elementwise output that holds the reduced register, or -1 */
    uint32_t dtype, op;
    int rank; /* the program's shape, extent-1 axes dropped and chained axes merged */
    int64_t shape[TF_MAX_RANK];
    int64_t numel, nunits;
    char *base[CPU_MAX_OPS];
    int64_t strides[CPU_MAX_OPS][TF_MAX_RANK];
    cpu_red_acc *units;
} fused_red_job;

/* The operands' views in row order, on the program's shape simplified. */
static void fused_red_layout(const tf_exec *x, fused_red_job *j)
{
    cpu_view v[CPU_MAX_OPS];
    const int m = j->buf;
    for (int o = 0; o < j->nops; o++) {
        if (o != m) {
            tf__cpu_view_from_operand(&v[o], o < m ? x->outputs[o] : x->inputs[o - m - 1]);
        }
    }
    const cpu_view *shape = &v[m + 1]; /* in[0]: the program's shape */
    j->rank = 0;
    j->numel = 1;
    for (int k = 0; k < shape->rank; k++) {
        const int64_t n = shape->shape[k];
        j->numel *= n;
        if (n == 1) {
            continue;
        }
        int chain = j->rank > 0;
        for (int o = 0; o < j->nops && chain; o++) {
            chain = o == m || v[o].strides[k] == j->strides[o][j->rank - 1] * j->shape[j->rank - 1];
        }
        if (chain) {
            j->shape[j->rank - 1] *= n;
            continue;
        }
        for (int o = 0; o < j->nops; o++) {
            j->strides[o][j->rank] = o == m ? 0 : v[o].strides[k];
        }
        j->shape[j->rank++] = n;
    }
    for (int o = 0; o < j->nops; o++) {
        j->base[o] = o == m ? NULL : v[o].base;
    }
    j->nunits = (j->numel + CPU_RED_UNIT_ROWS - 1) / CPU_RED_UNIT_ROWS;
}

/* Unit u: its elements computed row by row in pieces of at most one chunk, each
   piece's reduced register into buf (in the L1 cache) and fed to the unit's fold
   at once. */
static int fused_red_unit(const fused_red_job *j, int64_t u, char *buf, cpu_err *err)
{
    const int64_t es = j->fp->esize, begin = u * CPU_RED_UNIT_ROWS;
    const int64_t end = begin + CPU_RED_UNIT_ROWS < j->numel ? begin + CPU_RED_UNIT_ROWS : j->numel;
    int64_t idx[TF_MAX_RANK];
    char *p[CPU_MAX_OPS];
    int64_t s[CPU_MAX_OPS];
    cpu_red_fold fold;
    tf__cpu_reduce_fold_init(&fold, j->dtype, j->op, end - begin);
    for (int64_t pos = begin; pos < end;) {
        tf__cpu_unravel(pos, j->rank, j->shape, idx);
        int64_t n = j->rank > 0 ? j->shape[0] - idx[0] : 1;
        n = n < end - pos ? n : end - pos;
        for (int o = 0; o < j->nops; o++) {
            int64_t off = 0;
            for (int k = 0; k < j->rank; k++) {
                off += idx[k] * j->strides[o][k];
            }
            p[o] = o == j->buf ? buf : j->base[o] + off * es;
            s[o] = o == j->buf ? 1 : j->rank > 0 ? j->strides[o][0] : 0;
        }
        /* The compiled program folds whole groups of 8 of the fold's lanes itself, on a
           dense row, as far as the lanes go (fold.body) */
        const int64_t q = pos - begin, lanes_n = (n < fold.body - q ? n : fold.body - q) & ~7;
        if (j->fp->jit_lanes != NULL && q % 8 == 0 && lanes_n > 0 && fused_dense(j->fp, s)) {
            double lanes[8];
            tf__cpu_reduce_fold_get(&fold, lanes);
            if (j->fp->jit_lanes(lanes_n, p, j->fp->imm, j->fp->rows, j->fp->stream, lanes,
                                 err) != 0) {
                return 1;
            }
            tf__cpu_reduce_fold_put(&fold, lanes, lanes_n);
            pos += lanes_n;
            continue;
        }
        n = n < j->fp->chunk ? n : j->fp->chunk;
        if (fused_row(j->fp, n, p, s, err) != 0) {
            return 1;
        }
        /* a register lives in one place: in that output, read from there */
        const int from = j->dup >= 0 ? j->dup : j->buf;
        tf__cpu_reduce_fold_feed(&fold, p[from], n, s[from]);
        pos += n;
    }
    j->units[u] = tf__cpu_reduce_fold_close(&fold);
    return 0;
}

static int fused_red_piece(const void *ctx, int64_t begin, int64_t end, cpu_err *err)
{
    const fused_red_job *j = ctx;
    _Alignas(64) char buf[FUSED_CHUNK_MAX * 16]; /* one chunk of the widest dtype */
    int rc = 0;
    for (int64_t u = begin; u < end && rc == 0; u++) {
        rc = fused_red_unit(j, u, buf, err);
    }
    if (j->fp->stream) {
        tf__cpu_stream_fence();
    }
    return rc;
}

static int fused_reduce_run(const cpu_engine *e, const tf_exec *x, const fused_prog *fp,
                            int64_t grain, int dup, cpu_err *err)
{
    const tf_fused_params *pp = x->params;
    fused_red_job j;
    j.e = e;
    j.fp = fp;
    j.buf = (int)pp->n_outputs;
    j.nops = j.buf + 1 + (int)x->n_inputs;
    j.dup = dup;
    j.dtype = x->outputs[j.buf]->dtype;
    j.op = pp->reduce - 1;
    fused_red_layout(x, &j);
    const tf_operand *ro = x->outputs[j.buf];
    char *out = (char *)ro->data + ro->offset * fp->esize;
    if (j.numel <= 1) { /* REDUCE's empty value, or the one element itself */
        _Alignas(16) char cell[16]; /* the one element (esize <= 16) */
        cpu_red_acc unit;
        j.units = &unit;
        if (j.numel == 1 && fused_red_unit(&j, 0, cell, err) != 0) {
            return 1;
        }
        if (fp->stream) {
            tf__cpu_stream_fence();
        }
        if (j.numel == 1) { /* computed into cell, or (dup) into that output alone */
            const tf_operand *d = dup >= 0 ? x->outputs[dup] : NULL;
            const char *one = d ? (const char *)d->data + d->offset * fp->esize : cell;
            memcpy(out, one, (size_t)fp->esize);
        } else {
            tf__cpu_reduce_finish(j.dtype, j.op, NULL, 0, out);
        }
        return 0;
    }
    j.units = tf__cpu_alloc(e, (size_t)j.nunits * sizeof *j.units, err, "FUSED");
    if (j.units == NULL) {
        return 1;
    }
    int64_t g = grain / CPU_RED_UNIT_ROWS;
    int rc = tf__cpu_parallel_for(e, j.nunits, g > 0 ? g : 1, fused_red_piece, &j, err);
    if (rc == 0) {
        tf__cpu_reduce_finish(j.dtype, j.op, j.units, j.nunits, out);
    }
    tf__cpu_free(e, j.units);
    return rc;
}

int tf__cpu_exec_fused(const cpu_engine *e, const tf_exec *x, cpu_err *err)
{
    fused_prog fp;
    int dup;
    const tf_fused_params *pp = x->params;
    /* A reduced call's elementwise outputs are stored with non-temporal stores when
       its operands exceed the last-level cache, as run_flat streams the others' (an
       ordinary store reads each line first, and the line would leave the cache
       before anyone reads it); the values are the same */
    cpu_stream_copy_fn stream = NULL;
    if (TF_FUSED_PARAMS_REDUCE(pp)) {
        const size_t n = (size_t)tf__cpu_operand_numel(x->inputs[0]);
        const size_t es = tf_dtype_size((tf_dtype)x->inputs[0]->dtype);
        stream = n * es * (x->n_inputs + pp->n_outputs) > e->stream_bytes ? e->stream_copy : NULL;
    }
    int64_t grain = fused_prepare(x, &fp, &dup, stream);
    if (tf__cpu_jit_lookup(e, &fp, tf__cpu_operand_numel(x->inputs[0]), err) != 0) {
        return 1;
    }
    if (TF_FUSED_PARAMS_REDUCE(pp)) {
        return fused_reduce_run(e, x, &fp, grain, dup, err);
    }
    return tf__cpu_run_elementwise(e, x, fused_row, &fp, grain, err);
}
