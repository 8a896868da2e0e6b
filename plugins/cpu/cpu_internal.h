/*
 * cpu_internal.h - shared declarations of the CPU reference engine.
 *
 * The engine is split by concern: cpu_engine.c (descriptor, lifecycle,
 * device, buffers, execute dispatch), cpu_validate.c (supports and the
 * structural checks of execute), cpu_pool.c (worker threads), cpu_iter.c
 * (strided n-d iteration), cpu_layout.c (fill, copy, pad, concatenate),
 * cpu_elementwise.c (fill, iota, unary, binary, compare, select; cpu_complex.c
 * has the complex rows),
 * cpu_elementwise_run.c (the elementwise driver: flat rows, streaming stores,
 * strided walks), cpu_fused.c (the FUSED interpreter), cpu_convert.c,
 * cpu_reduce.c, cpu_dot.c and cpu_index.c (gather, scatter, dynamic slices). Everything here has hidden visibility: the plugin exports
 * only tf_engine_plugin_v1.
 *
 * Kernels never call host->report_error themselves: they describe a failure
 * in a cpu_err and return non-zero, possibly on a worker thread; the execute
 * entry reports it on the calling thread.
 */
#ifndef TENFERRO_CPU_INTERNAL_H
#define TENFERRO_CPU_INTERNAL_H

#include <stddef.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <tenferro/engine_abi.h>

/* C11's CMPLX/CMPLXF: glibc's <complex.h> defines them for GCC only; clang has the
   same builtin (a constant expression, so the macros also serve in initialisers). */
#include <complex.h>
#ifndef CMPLX
#define CMPLX(x, y) __builtin_complex((double)(x), (double)(y))
#endif
#ifndef CMPLXF
#define CMPLXF(x, y) __builtin_complex((float)(x), (float)(y))
#endif

#if defined(__GNUC__) || defined(__clang__)
#define CPU_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define CPU_PRINTF(fmt, args)
#endif

/* The most operands one iteration walks together (FUSED: its outputs, then its inputs). */
#define CPU_MAX_OPS (TF_FUSED_MAX_OUTPUTS + TF_FUSED_MAX_INPUTS)

/* The most threads an engine uses, whatever options->threads asks. */
#define CPU_MAX_THREADS 256

/* How long a waiting pool thread spins before it sleeps (option spin_us; cpu_pool.c). */
#define CPU_SPIN_US_DEFAULT 100
#define CPU_SPIN_US_MAX 1000000

/* ===================================================================== */
/* Errors                                                                 */
/* ===================================================================== */

/* A failure described by a kernel, handed back to the calling thread. */
typedef struct cpu_err {
    tf_status status;
    char msg[256];
} cpu_err;

/* Fills *err and returns 1, so that kernels can `return tf__cpu_fail(...)`. */
int tf__cpu_fail(cpu_err *err, tf_status status, const char *fmt, ...) CPU_PRINTF(3, 4);

/* |s| as an unsigned magnitude: no overflow for INT64_MIN, which the stride of an
   axis of extent 1 may be (no element is ever addressed through it). */
static inline uint64_t tf__cpu_stride_mag(int64_t s)
{
    return s < 0 ? 0u - (uint64_t)s : (uint64_t)s;
}

/* Names used in messages. */
const char *tf__cpu_prim_name(uint32_t prim);
const char *tf__cpu_unary_name(uint32_t op);
const char *tf__cpu_binary_name(uint32_t op);
const char *tf__cpu_compare_name(uint32_t op);
const char *tf__cpu_reduce_name(uint32_t op);
const char *tf__cpu_gather_mode_name(uint32_t mode);
const char *tf__cpu_dtype_name(uint32_t dtype);

/* ===================================================================== */
/* Engine instance and thread pool                                        */
/* ===================================================================== */

typedef struct cpu_pool cpu_pool;

/* Power-of-two size classes of recycled buffers: 64 B .. 64 MiB. */
#define CPU_BUFFER_CLASSES 21

/*
 * Freed buffers kept for reuse, per size class, up to a byte budget. Guarded
 * by `busy` because buffers may be freed from any thread. It is only ever
 * tried, never waited for: a thread that finds it held allocates or frees
 * directly (an engine is used by one thread at a time, so that is rare), and
 * the common case costs two atomic operations instead of a mutex's calls.
 */
typedef struct cpu_buffer_cache {
    atomic_flag busy;
    void *head[CPU_BUFFER_CLASSES]; /* singly linked through the block header */
    size_t bytes;                   /* bytes held in the lists */
} cpu_buffer_cache;

/* Copies n bytes with non-temporal stores (cpu_elementwise_run.c). */
typedef void (*cpu_stream_copy_fn)(char *dst, const char *src, size_t n);
/* The widest such copy the running processor has. */
cpu_stream_copy_fn tf__cpu_stream_copy_choose(void);
/* Orders this thread's non-temporal stores before whatever it does next (the pool's
   completion signal, which is an ordinary release store). */
void tf__cpu_stream_fence(void);

/* The option fused: off, one output only, on (the default). */
enum { CPU_FUSED_OFF = 0, CPU_FUSED_ONE = 1, CPU_FUSED_ON = 2 };

/* The option jit (cpu_jit.c): off; auto (the default): a FUSED program is compiled when
   it runs again, on at least CPU_JIT_MIN_ELEMS elements, once its runs of that size have
   covered CPU_JIT_ELEMS elements in all (the bench's 2^22-element step: its second run; a
   2^16-element one: its 32nd); always: every program the compiler covers, the first time,
   and a failed compile fails the call. */
enum { CPU_JIT_OFF = 0, CPU_JIT_AUTO = 1, CPU_JIT_ALWAYS = 2 };
#define CPU_JIT_MIN_ELEMS (64 * 1024)
#define CPU_JIT_ELEMS ((int64_t)2 << 20)
typedef struct cpu_jit cpu_jit;
/* The engine's cache of compiled programs (NULL when jit is off), keeping them between
   processes in the folder the option jit_cache names (cpu_jit_store.h). */
tf_status tf__cpu_jit_create(const tf_host_api *host, int mode, const char *cc,
                             const char *cache, cpu_jit **out, cpu_err *err);
void tf__cpu_jit_destroy(cpu_jit *jit);

/* The options of create() (cpu_device.c says each extra key and its default). */
typedef struct cpu_options {
    int threads;
    size_t stream_bytes;
    int fused;
    int jit;
    char jit_cc[256];
    char jit_cache[400]; /* "" : auto */
    int64_t spin_us;
} cpu_options;

/* Reads create()'s options (the device's name for device_name); 0, or 1 with *err
   (TF_ERR_VALIDATION: a bad key or value, named). */
int tf__cpu_parse_options(const char *device_name, const tf_engine_options *o, cpu_options *opts,
                          cpu_err *err);
/* The one device's description: type, flags, processors, memory, name, driver. */
void tf__cpu_device_describe(tf_device_info *info);
/* Logs a warning (TF_LOG_WARN) when OpenBLAS runs its pre-AVX kernels on a processor
   with AVX2, as it does on one it does not know: the environment variable that fixes it. */
void tf__cpu_blas_check(const tf_host_api *host);

/* One engine instance. `pool` is NULL for a serial engine (threads == 1). */
struct tf_engine_state {
    const tf_host_api *host;
    int threads; /* threads used for a job, the calling one included (>= 1) */
    /* An elementwise job touching more bytes than this (the last-level cache) writes
       its output with non-temporal stores: it would not be in cache for its reader. */
    size_t stream_bytes;
    cpu_stream_copy_fn stream_copy;
    int fused; /* CPU_FUSED_*: what supports() says to TF_PRIM_FUSED (option fused) */
    int jit;   /* CPU_JIT_*: option jit */
    cpu_jit *jit_cache;
    cpu_pool *pool;
    cpu_buffer_cache cache;
};
typedef struct tf_engine_state cpu_engine;

/* A task of a pool job: runs task number `task`; non-zero on failure. */
typedef int (*cpu_task_fn)(const void *ctx, int64_t task, cpu_err *err);

/*
 * Starts `nworkers` (>= 1) threads, which spin for spin_ns (0: not at all) waiting for
 * a job before they sleep. Fails with TF_ERR_OUT_OF_MEMORY or TF_ERR_BACKEND.
 */
tf_status tf__cpu_pool_create(const tf_host_api *host, int nworkers, int64_t spin_ns,
                              cpu_pool **out, cpu_err *err);
/* Stops and joins every worker, then frees the pool. NULL is a no-op. */
void tf__cpu_pool_destroy(cpu_pool *pool);
/*
 * Runs tasks 0 .. ntasks-1 on the workers and the calling thread; returns
 * when all are done. On failure returns non-zero with *err of the failing task
 * of lowest number (the one a serial run would have met first).
 */
int tf__cpu_pool_run(cpu_pool *pool, int64_t ntasks, cpu_task_fn fn, const void *ctx,
                     cpu_err *err);

/* A piece [begin, end) of a range split by tf__cpu_parallel_for. */
typedef int (*cpu_range_fn)(const void *ctx, int64_t begin, int64_t end, cpu_err *err);

/*
 * Runs fn over [0, total): on the calling thread alone when the engine is
 * serial or total < 2 * grain, else split into at most engine->threads
 * pieces of at least `grain` each. Errors as for tf__cpu_pool_run.
 */
int tf__cpu_parallel_for(const cpu_engine *e, int64_t total, int64_t grain, cpu_range_fn fn,
                         const void *ctx, cpu_err *err);

/* ===================================================================== */
/* Views and iteration                                                    */
/* ===================================================================== */

/* A strided tensor with its element offset applied. */
typedef struct cpu_view {
    char *base; /* address of element (0, ..., 0); never dereferenced when empty */
    uint32_t dtype;
    size_t esize;
    int rank;
    int64_t shape[TF_MAX_RANK];
    int64_t strides[TF_MAX_RANK]; /* in elements */
} cpu_view;

/* The view of an operand of a HOST_MEMORY engine. */
void tf__cpu_view_from_operand(cpu_view *v, const tf_operand *op);
/* A dense column-major view of `shape` at `base`. */
void tf__cpu_view_dense(cpu_view *v, void *base, uint32_t dtype, int rank, const int64_t *shape);
/* Product of the extents (1 for rank 0). */
int64_t tf__cpu_view_numel(const cpu_view *v);
/* The same for an operand. */
int64_t tf__cpu_operand_numel(const tf_operand *op);
/* Whether op's strides are those of a dense column-major array of its shape
   (an axis of extent 1 may have any stride; an empty operand is dense). */
int tf__cpu_operand_dense(const tf_operand *op);
/* The same for an operand known to have elements (the elementwise fast path). */
static inline int tf__cpu_strides_dense(const tf_operand *op)
{
    int64_t expect = 1;
    for (uint32_t k = 0; k < op->rank; k++) {
        if (op->shape[k] != 1 && op->strides[k] != expect) {
            return 0;
        }
        expect *= op->shape[k];
    }
    return 1;
}
/* Moves base to element `index` along `axis` (index may equal the extent). */
void tf__cpu_view_shift(cpu_view *v, int axis, int64_t index);
/* Non-zero when no two indices of the view address the same element. */
int tf__cpu_view_is_injective(const cpu_view *v);

/*
 * Operands walked together over one shape, simplified: extent-1 axes
 * dropped and neighbouring axes merged where every operand's strides allow.
 * The walk is in column-major order of the simplified shape, which keeps the
 * column-major order of the original one unless CPU_ITER_SORT reordered it.
 */
typedef struct cpu_iter {
    int rank; /* >= 1 */
    int nops;
    int64_t total;
    int64_t shape[TF_MAX_RANK];
    int64_t strides[CPU_MAX_OPS][TF_MAX_RANK];
    char *base[CPU_MAX_OPS];
    size_t esize[CPU_MAX_OPS];
} cpu_iter;

/* tf__cpu_iter_init flag: order axes by operand 0's |stride| (outputs of COPY/FILL). */
#define CPU_ITER_SORT 1u

/* Walks `nops` views that share views[0]'s shape. */
void tf__cpu_iter_init(cpu_iter *it, int nops, const cpu_view *const *views, unsigned flags);

/*
 * One row of an iteration: n elements; p[k] is operand k's first element and
 * s[k] its stride in elements. Non-zero (with *err filled) stops the walk.
 */
typedef int (*cpu_row_fn)(const void *ctx, int64_t n, char *const *p, const int64_t *s,
                          cpu_err *err);

/*
 * A compiled FUSED program over n elements of dense rows: p[] the row operands (the
 * outputs, then the inputs), imm the program's immediates (8 bytes each), rows[k] the
 * row function of live step k (for the steps it calls), stream the non-temporal copy of
 * streamed outputs. lanes NULL: as fused_row; else (jit_lanes, n a multiple of 8, at a
 * position of the fold that is one too) the reduced register is folded into lanes[0..7]
 * instead of being written. Non-zero with *err filled on failure.
 */
typedef int (*cpu_jit_fn)(int64_t n, char *const *p, const void *imm, const cpu_row_fn *rows,
                          cpu_stream_copy_fn stream, double *lanes, cpu_err *err);

/* Walks elements [begin, end) of the iteration, row by row. */
int tf__cpu_iter_range(const cpu_iter *it, int64_t begin, int64_t end, cpu_row_fn fn,
                       const void *ctx, cpu_err *err);
/* Walks the whole iteration, split across the engine's threads above `grain`. */
int tf__cpu_iter_run(const cpu_engine *e, const cpu_iter *it, int64_t grain, cpu_row_fn fn,
                     const void *ctx, cpu_err *err);

/*
 * Elements per thread of an elementwise job: cheap ops move memory, costly ones
 * call libm. A cheap job over more bytes than the cache streams its output.
 * Below 256 Ki elements a piece a second thread loses: waking a pool worker and
 * sharing arrays that fit one core's L2 cost more than half of a memory-bound pass
 * (`tenferro bench --threads 2 growth`, mul forward + backward on the 2-core Xeon:
 * 64 Ki elements 48 us split against 20 us serial, 256 Ki 237-244 against 220;
 * from 1 Mi the split wins, 0.64-0.69 ms against 1.05). 32 Ki before.
 */
#define CPU_GRAIN_CHEAP (256 * 1024)
#define CPU_GRAIN_COSTLY (4 * 1024)

/*
 * Runs row function fn (with its ctx) over a validated elementwise call: its
 * outputs, then its inputs, all of out[0]'s shape; split across the engine's
 * threads above `grain` (cpu_elementwise_run.c).
 */
int tf__cpu_run_elementwise(const cpu_engine *e, const tf_exec *x, cpu_row_fn fn,
                            const void *ctx, int64_t grain, cpu_err *err);

/* The UNARY and BINARY row functions (NULL where the dtype lacks the op) and each op's
   grain, which FUSED steps call (cpu_elementwise.c). */
cpu_row_fn tf__cpu_unary_row(uint32_t dtype, uint32_t op);
cpu_row_fn tf__cpu_binary_row(uint32_t dtype, uint32_t op);
int64_t tf__cpu_unary_grain(uint32_t dtype, uint32_t op);
int64_t tf__cpu_binary_grain(uint32_t op);

/* The complex rows (cpu_complex.c): NULL for what the ABI does not define, or for a
   dtype that is not complex. UNARY's and COMPARE's dtype is the input's. */
cpu_row_fn tf__cpu_complex_unary_row(uint32_t dtype, uint32_t op);
cpu_row_fn tf__cpu_complex_binary_row(uint32_t dtype, uint32_t op);
cpu_row_fn tf__cpu_complex_compare_row(uint32_t dtype, uint32_t op);
/* Whether a complex UNARY op is cheap (moves memory rather than calling libm). */
int tf__cpu_complex_unary_is_cheap(uint32_t op);

/* The vectorised transcendental UNARY rows (cpu_vmath.c), which run in blocks of
   CPU_VMATH_BLOCK elements (the hot-program compiler's inline form too). */
#define CPU_VMATH_BLOCK 16
#define CPU_VMATH_ROWS(X) X(exp) X(log) X(expm1) X(log1p) X(sin) X(cos) X(tanh) X(erf)
#define CPU_VMATH_DECLARE(f)                                                                       \
    int tf__cpu_##f##_f32(const void *, int64_t, char *const *, const int64_t *, cpu_err *);        \
    int tf__cpu_##f##_f64(const void *, int64_t, char *const *, const int64_t *, cpu_err *);
CPU_VMATH_ROWS(CPU_VMATH_DECLARE)
#undef CPU_VMATH_DECLARE
/* Which libmvec variants the rows above call in this process: the letter of the x86
   vector function ABI ('e' AVX-512, 'd' AVX2, 'b' SSE2), or 0 where they call libm's
   scalar functions (a build without libmvec, or one whose loops are not vectorised:
   unoptimised, or under the sanitizers; checked on the exp rows once). */
int tf__cpu_vmath_isa(void);
/* The major version of the GCC that compiled those rows with libmvec, else 0. */
extern const int tf__cpu_vmath_gcc;

/* The column-major multi-index of `linear` in `shape`. */
void tf__cpu_unravel(int64_t linear, int rank, const int64_t *shape, int64_t *idx);

/* ===================================================================== */
/* Shared kernels                                                         */
/* ===================================================================== */

/* Writes the tf_scalar as one element of `dtype` into out (16 bytes of room); a complex
   dtype takes value.f as its real part and imag as its imaginary part. */
void tf__cpu_scalar_bytes(uint32_t dtype, tf_scalar value, double imag, void *out);
/* dst = src element by element (same shape and element size; dst injective). */
int tf__cpu_copy_view(const cpu_engine *e, const cpu_view *dst, const cpu_view *src,
                      cpu_err *err);
/* Every element of dst = the element at `value` (esize bytes); dst may repeat addresses. */
int tf__cpu_fill_view(const cpu_engine *e, const cpu_view *dst, const void *value, cpu_err *err);

/* Scratch memory through the host allocator (64-byte aligned). */
void *tf__cpu_alloc(const cpu_engine *e, size_t nbytes, cpu_err *err, const char *what);
void tf__cpu_free(const cpu_engine *e, void *p);

/* ===================================================================== */
/* Primitives (inputs validated by tf__cpu_execute)                       */
/* ===================================================================== */

typedef int (*cpu_prim_fn)(const cpu_engine *e, const tf_exec *x, cpu_err *err);

/*
 * One kernel per entry of engine_abi.h's TF_PRIM_LIST, named after it:
 * tf__cpu_exec_fill, tf__cpu_exec_iota, ... tf__cpu_exec_fused (the dispatch
 * table of cpu_engine.c is generated from the same list, so a primitive
 * without its kernel does not link).
 */
#define CPU_EXEC_DECLARE(NAME, name, value) \
    int tf__cpu_exec_##name(const cpu_engine *e, const tf_exec *x, cpu_err *err);
TF_PRIM_LIST(CPU_EXEC_DECLARE)
#undef CPU_EXEC_DECLARE

/* Which (prim, op, dtypes) the kernels handle; the answer of supports(). */
int tf__cpu_supports(uint32_t prim, uint32_t op, const uint32_t *dtypes, uint32_t n_dtypes);
/* The kernel tables' coverage, per dtype and sub-operation. */
int tf__cpu_unary_supported(uint32_t dtype, uint32_t op);
int tf__cpu_binary_supported(uint32_t dtype, uint32_t op);
int tf__cpu_compare_supported(uint32_t dtype, uint32_t op);
int tf__cpu_reduce_supported(uint32_t dtype, uint32_t op);

/* A REDUCE accumulator: double for floats, 64-bit for integers, double complex. */
typedef union cpu_red_acc {
    double f;
    uint64_t u;
    int64_t i;
    double _Complex z;
} cpu_red_acc;
/* Reduced positions per unit of a reduced-inner REDUCE (cpu_reduce.c, "Determinism"). */
#define CPU_RED_UNIT_ROWS (8 * 1024)
/* A full REDUCE in units (ABI 1.6, FUSED's reduced output): unit u's fold of n dense
   elements at p, and the result from the units' folds in order (the empty value for
   none). A full REDUCE of one element is that element. */
cpu_red_acc tf__cpu_reduce_unit(uint32_t dtype, uint32_t op, const char *p, int64_t n);
/* The same fold of a unit of n elements fed in pieces, in order (strides any): equal to
   tf__cpu_reduce_unit of the whole unit bit for bit, whatever the pieces' lengths. */
typedef struct cpu_red_fold {
    const void *kernel;
    int64_t q;    /* elements fed so far */
    int64_t body; /* n - n % 8: positions below fold into lane position % 8, the rest lane 0 */
    cpu_red_acc lanes[8];
} cpu_red_fold;
/* A float fold's lanes as doubles, and back with n more elements folded into them. */
void tf__cpu_reduce_fold_get(const cpu_red_fold *f, double *lanes);
void tf__cpu_reduce_fold_put(cpu_red_fold *f, const double *lanes, int64_t n);
void tf__cpu_reduce_fold_init(cpu_red_fold *f, uint32_t dtype, uint32_t op, int64_t n);
void tf__cpu_reduce_fold_feed(cpu_red_fold *f, const char *p, int64_t n, int64_t s);
cpu_red_acc tf__cpu_reduce_fold_close(const cpu_red_fold *f);
void tf__cpu_reduce_finish(uint32_t dtype, uint32_t op, const cpu_red_acc *units, int64_t nunits,
                           char *out);
/* Structural checks of an execute call (counts, dtypes, params, shapes). */
int tf__cpu_validate(const tf_exec *x, cpu_err *err);

#endif /* TENFERRO_CPU_INTERNAL_H */
