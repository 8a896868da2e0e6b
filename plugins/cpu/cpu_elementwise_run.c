/*
 * cpu_elementwise_run.c - the elementwise driver: runs a row function over
 * the outputs and inputs of a validated elementwise call (UNARY, BINARY,
 * COMPARE, SELECT, FUSED).
 *
 * The common case of eager code, every operand dense or one value broadcast,
 * is one flat row split across the threads, with no iterator built; an
 * output larger than the last-level cache is then written with non-temporal
 * stores (the widest the processor has). Everything else walks a cpu_iter
 * (cpu_iter.c) row by row.
 */
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) || defined(__SSE2__)
#include <immintrin.h>
#endif

#include "cpu_internal.h"

/* Bytes of output a streamed piece computes into the L1 cache before storing them. */
#define STREAM_CHUNK 4096

/*
 * Copies n bytes to dst, with non-temporal stores for its aligned part. The widest
 * store the processor has is used: a whole 64-byte line at once is what lets the
 * write-combining buffers skip the read, and mixing legacy SSE code with the AVX-512
 * state a libmvec row leaves behind costs more than the stores save.
 */
#define STREAM_COPY(NAME, ATTR, W, STORE)                       \
    ATTR static void NAME(char *dst, const char *src, size_t n) \
    {                                                           \
        size_t head = (size_t)(-(uintptr_t)dst & ((W)-1u));     \
        head = head < n ? head : n;                             \
        memcpy(dst, src, head);                                 \
        dst += head;                                            \
        src += head;                                            \
        n -= head;                                              \
        for (; n >= (W); n -= (W), dst += (W), src += (W)) {    \
            STORE;                                              \
        }                                                       \
        memcpy(dst, src, n);                                    \
    }

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
STREAM_COPY(stream_copy_avx512, __attribute__((target("avx512f"))), 64,
            _mm512_stream_si512((void *)dst, _mm512_loadu_si512((const void *)src)))
STREAM_COPY(stream_copy_avx, __attribute__((target("avx"))), 32,
            _mm256_stream_si256((__m256i *)(void *)dst,
                                _mm256_loadu_si256((const __m256i *)(const void *)src)))
#define HAVE_WIDE_STREAM 1
#endif
#ifdef __SSE2__
STREAM_COPY(stream_copy_narrow, , 16,
            _mm_stream_si128((__m128i *)(void *)dst,
                             _mm_loadu_si128((const __m128i *)(const void *)src)))
#else
static void stream_copy_narrow(char *dst, const char *src, size_t n)
{
    memcpy(dst, src, n); /* no non-temporal store in portable C */
}
#endif

cpu_stream_copy_fn tf__cpu_stream_copy_choose(void)
{
#ifdef HAVE_WIDE_STREAM
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        return stream_copy_avx512;
    }
    if (__builtin_cpu_supports("avx")) {
        return stream_copy_avx;
    }
#endif
    return stream_copy_narrow;
}

/* Every operand dense and of one shape: one flat row of `n` elements per piece. The
   operands are the outputs (only FUSED has more than one), then the inputs. */
typedef struct flat_job {
    cpu_row_fn fn;
    const void *ctx; /* the row function's */
    int nout;
    int nops;
    cpu_stream_copy_fn stream; /* non-NULL: write the outputs with it (see flat_piece) */
    char *base[CPU_MAX_OPS];
    size_t esize[CPU_MAX_OPS];
    int64_t stride[CPU_MAX_OPS]; /* 1, or 0 for an input that is one value broadcast */
} flat_job;

void tf__cpu_stream_fence(void)
{
#ifdef __SSE2__
    _mm_sfence();
#endif
}

/*
 * A piece [begin, end) of the flat row. A streamed job computes STREAM_CHUNK bytes
 * of output at a time into a buffer on the stack (the row functions are unchanged)
 * and stores them with non-temporal stores: for an output larger than the cache an
 * ordinary store first reads each line from memory, one third more traffic for a
 * binary op, and the line would be evicted before anyone reads it. Several outputs
 * (FUSED, all of one dtype) share the buffer in parts of whole cache lines.
 */
static int flat_piece(const void *ctx, int64_t begin, int64_t end, cpu_err *err)
{
    const flat_job *job = ctx;
    char *p[CPU_MAX_OPS];
    int64_t s[CPU_MAX_OPS];
    for (int o = 0; o < job->nops; o++) {
        s[o] = job->stride[o];
        p[o] = job->base[o] + begin * s[o] * (int64_t)job->esize[o];
    }
    if (!job->stream) {
        return job->fn(job->ctx, end - begin, p, s, err);
    }
    _Alignas(64) char chunk[STREAM_CHUNK];
    const int64_t part = STREAM_CHUNK / job->nout / 64 * 64; /* bytes of each output */
    const int64_t step = part / (int64_t)job->esize[0];
    char *out[TF_FUSED_MAX_OUTPUTS];
    int rc = 0;
    for (int o = 0; o < job->nout; o++) {
        out[o] = p[o];
        p[o] = chunk + o * part;
    }
    for (int64_t i = begin; i < end && rc == 0; i += step) {
        int64_t len = end - i < step ? end - i : step;
        rc = job->fn(job->ctx, len, p, s, err);
        for (int o = 0; o < job->nout; o++) {
            if (rc == 0) {
                job->stream(out[o], p[o], (size_t)len * job->esize[o]);
            }
            out[o] += len * (int64_t)job->esize[o];
        }
        for (int o = job->nout; o < job->nops; o++) {
            p[o] += len * s[o] * (int64_t)job->esize[o];
        }
    }
    tf__cpu_stream_fence();
    return rc;
}

/* Whether op (of out[0]'s shape, with elements) is one value broadcast: stride 0 on
   every axis of extent > 1. */
static int one_value(const tf_operand *op)
{
    for (uint32_t k = 0; k < op->rank; k++) {
        if (op->shape[k] != 1 && op->strides[k] != 0) {
            return 0;
        }
    }
    return 1;
}

/*
 * The common case of eager code, taken before any iterator is built: out[0]
 * dense, every input dense or one value broadcast (a scalar operand, a seed),
 * all of out[0]'s shape (which the host checked). Returns 1 after running it
 * (its status in *rc), 0 when it does not apply.
 * The output is streamed when the row is cheap (memory-bound), the operands
 * together exceed the last-level cache and the output is not also an input (in
 * place, its lines are read anyway). A costly row (exp, tanh...) is not: there the
 * stores of an ordinary loop drain while the next elements are computed, where a
 * streamed piece would compute and then store, one after the other.
 */
static int run_flat(const cpu_engine *e, const tf_exec *x, cpu_row_fn fn, const void *ctx,
                    int64_t grain, cpu_err *err, int *rc)
{
    const int nout = (int)x->n_outputs;
    flat_job job; /* the arrays' first nops entries are set below: no zeroing of the rest */
    job.fn = fn;
    job.ctx = ctx;
    job.nout = nout;
    job.nops = nout + (int)x->n_inputs;
    int64_t n = tf__cpu_operand_numel(x->outputs[0]);
    if (n == 0) {
        *rc = 0; /* nothing to do, and an empty operand's offset addresses nothing */
        return 1;
    }
    size_t bytes = 0;
    for (int o = 0; o < job.nops; o++) {
        const tf_operand *op = o < nout ? x->outputs[o] : x->inputs[o - nout];
        if (tf__cpu_strides_dense(op)) {
            job.stride[o] = 1;
        } else if (o >= nout && one_value(op)) {
            job.stride[o] = 0;
        } else {
            return 0;
        }
        job.esize[o] = tf_dtype_size((tf_dtype)op->dtype);
        job.base[o] = (char *)op->data + op->offset * (int64_t)job.esize[o];
        bytes += (size_t)(n * job.stride[o]) * job.esize[o];
    }
    int stream = grain == CPU_GRAIN_CHEAP && bytes > e->stream_bytes;
    for (int o = nout; o < job.nops; o++) { /* in place (one output only) */
        stream = stream && job.base[o] != job.base[0];
    }
    job.stream = stream ? e->stream_copy : NULL;
    if (n <= grain) {
        *rc = flat_piece(&job, 0, n, err);
    } else {
        *rc = tf__cpu_parallel_for(e, n, grain, flat_piece, &job, err);
    }
    return 1;
}

/* Walks the outputs and the inputs (all of out[0]'s shape), in that order, with one row
   function and its ctx. */
int tf__cpu_run_elementwise(const cpu_engine *e, const tf_exec *x, cpu_row_fn fn, const void *ctx,
                            int64_t grain, cpu_err *err)
{
    int rc;
    if (run_flat(e, x, fn, ctx, grain, err, &rc)) {
        return rc;
    }
    cpu_view v[CPU_MAX_OPS];
    const cpu_view *pv[CPU_MAX_OPS];
    const int nout = (int)x->n_outputs;
    int nops = nout + (int)x->n_inputs;

    for (int o = 0; o < nout; o++) {
        tf__cpu_view_from_operand(&v[o], x->outputs[o]);
    }
    for (uint32_t i = 0; i < x->n_inputs; i++) {
        tf__cpu_view_from_operand(&v[nout + (int)i], x->inputs[i]);
    }
    for (int o = 0; o < nops; o++) {
        pv[o] = &v[o];
    }
    cpu_iter it;
    tf__cpu_iter_init(&it, nops, pv, 0);
    return tf__cpu_iter_run(e, &it, grain, fn, ctx, err);
}
