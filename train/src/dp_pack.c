/*
 * dp_pack.c - packing one bucket of gradients (dp_average.c) into a host
 * buffer with the 1/p scale of the mean fused into the copy.
 *
 * The copy is the bucket's one pass over its bytes of our own: the sum then
 * goes from this buffer straight into the all_reduce's output, and no
 * division pass follows. Built with -O3 (CMakeLists.txt): GCC's -O2 leaves
 * the scaling loops scalar; on x86-64 they are built for AVX-512, AVX2 and
 * the baseline, the widest picked at load time (one process: a 0.8 MB
 * bucket 0.08 -> 0.05 ms, docs/performance.md). A bucket larger than the
 * core's cache is written with non-temporal stores.
 *
 * The buffer is kept by the helper for the next call (a fresh 25 MiB
 * allocation is a new mapping, whose pages the kernel zeroes on first
 * touch); it is reused only when no tensor still holds it.
 */
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "dp_internal.h"

#if defined(__SSE2__)
/*
 * The same with non-temporal stores, for a bucket too large to stay in the
 * core's cache: the stores skip reading each destination line first, a
 * third of the copy's memory traffic (a 25 MiB bucket: ~1 ms of ~4 ms here,
 * docs/performance.md).
 */
static void scale_stream(tf_dtype dtype, const void *x, void *y, size_t n, double s)
{
    size_t i = 0;
    if (dtype == TF_F64) {
        const double *src = x;
        double *dst = y;
        for (; i < n && ((uintptr_t)(dst + i) & 15); i++)
            dst[i] = src[i] * s;
        __m128d v = _mm_set1_pd(s);
        for (; i + 2 <= n; i += 2)
            _mm_stream_pd(dst + i, _mm_mul_pd(_mm_loadu_pd(src + i), v));
        for (; i < n; i++)
            dst[i] = src[i] * s;
    } else {
        const float *src = x;
        float *dst = y, s32 = (float)s;
        for (; i < n && ((uintptr_t)(dst + i) & 15); i++)
            dst[i] = src[i] * s32;
        __m128 v = _mm_set1_ps(s32);
        for (; i + 4 <= n; i += 4)
            _mm_stream_ps(dst + i, _mm_mul_ps(_mm_loadu_ps(src + i), v));
        for (; i < n; i++)
            dst[i] = src[i] * s32;
    }
    _mm_sfence(); /* the streamed stores are visible before MPI reads the buffer */
}

/* Bytes from which a copy streams: the core's second-level cache (2 MiB if unknown). */
static size_t stream_bytes(void)
{
    long l2 = -1;
#ifdef _SC_LEVEL2_CACHE_SIZE
    l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    return l2 > 0 ? (size_t)l2 : (size_t)2 << 20;
}
#endif

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TT_SANITIZED 1
#endif
#endif
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__) && !defined(TT_SANITIZED)
/* the widest vectors the processor has, picked at load time (GCC, clang) */
#define WIDEST __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define WIDEST
#endif

WIDEST static void scale_f64(const double *restrict src, double *restrict dst, size_t n, double s)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = src[i] * s;
}

WIDEST static void scale_f32(const float *restrict src, float *restrict dst, size_t n, float s)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = src[i] * s;
}

/* y[i] = x[i] * s; x and y do not overlap. */
static void scale_copy(tf_dtype dtype, const void *x, void *y, size_t n, double s)
{
#if defined(__SSE2__)
    static atomic_size_t stream; /* 0 until read; every thread finds the same value */
    size_t from = atomic_load_explicit(&stream, memory_order_relaxed);
    if (!from)
        atomic_store_explicit(&stream, from = stream_bytes(), memory_order_relaxed);
    if (n * tf_dtype_size(dtype) >= from) {
        scale_stream(dtype, x, y, n, s);
        return;
    }
#endif
    if (dtype == TF_F64)
        scale_f64(x, y, n, s);
    else
        scale_f32(x, y, n, (float)s);
}

static void scale_in_place(tf_dtype dtype, void *y, size_t n, double s)
{
    if (dtype == TF_F64) {
        double *v = y;
        for (size_t i = 0; i < n; i++)
            v[i] *= s;
    } else {
        float *v = y, s32 = (float)s;
        for (size_t i = 0; i < n; i++)
            v[i] *= s32;
    }
}

/* A host tensor of t's elements: t itself (a new reference) when the host
   can read it, else a download from its engine. */
static tf_status on_host(const tf_tensor *t, tf_tensor **out)
{
    if (!tf_tensor_is_host_accessible(t)) {
        return tf_engine_download(tf_tensor_engine(t), t, out);
    }
    tf_tensor_retain((tf_tensor *)t);
    *out = (tf_tensor *)t;
    return TF_OK;
}

tf_status tt_dp_read(const tf_tensor *t, tf_dtype dtype, double scale, void *dst, size_t n)
{
    tf_tensor *h = NULL;
    tf_status st = on_host(t, &h);
    const void *src = NULL;
    size_t count = 0;
    if (!st && tf_tensor_is_contiguous(h) && tf_tensor_numel(h) == n &&
        tf_tensor_dtype(h) == dtype && !(st = tf_tensor_data(h, dtype, &src, &count))) {
        scale_copy(dtype, src, dst, n, scale); /* the one pass */
    } else if (!st && !(st = tf_tensor_copy_to_host(h, dtype, dst, n)) && scale != 1.0) {
        scale_in_place(dtype, dst, n, scale); /* a strided view: gathered first */
    }
    tf_tensor_release(h);
    return st;
}

void tt_pack_release(tt_pack *p)
{
    if (p && atomic_fetch_sub(&p->refs, 1) == 1) {
        tt_free(p->mem);
        tt_free(p);
    }
}

static void pack_done(void *user, void *data)
{
    (void)data;
    tt_pack_release(user);
}

/* The helper's buffer if no tensor holds it and it is large enough, else a new one. */
static tt_pack *pack_buffer(tf_dp *dp, size_t bytes)
{
    tt_pack *p = dp->pack;
    if (p && atomic_load(&p->refs) == 1 && p->cap >= bytes)
        return p;
    tt_pack_release(dp->pack);
    dp->pack = NULL;
    if (!(p = tt_calloc(1, sizeof *p)) || !(p->mem = tt_alloc(bytes ? bytes : 1))) {
        tt_free(p);
        return NULL;
    }
    atomic_init(&p->refs, 1);
    p->cap = bytes;
    return dp->pack = p;
}

tf_status tt_dp_pack(tf_dp *dp, const tf_optim *opt, tf_tensor *const *local, const size_t *idx,
                     size_t k, int with_mask, tf_dtype dtype, int64_t total, tf_tensor **out)
{
    size_t es = tf_dtype_size(dtype);
    double scale = 1.0 / (double)dp->size;
    tt_pack *buf = pack_buffer(dp, (size_t)total * es);
    if (!buf)
        return tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "dp_average_grads: out of memory for a bucket");
    char *at = buf->mem;
    tf_status st = TF_OK;
    for (size_t j = 0; j < k && !st; j++) {
        size_t n = tf_tensor_numel(tf_eager_value(opt->params[idx[j]].var));
        if (!local[idx[j]])
            memset(at, 0, n * es); /* all-zero bits are +0.0 in IEEE f32 and f64 */
        else if ((st = tt_dp_read(local[idx[j]], dtype, scale, at, n)))
            st = tt_fail_core(st, "dp_average_grads: reading a gradient");
        at += n * es;
    }
    /* the presence mask, scaled like the rest: its sum is positive where any rank had one */
    for (size_t i = 0; with_mask && i < opt->n_params; i++, at += es) {
        double v = local[i] ? scale : 0.0;
        float v32 = (float)v;
        memcpy(at, dtype == TF_F64 ? (const void *)&v : (const void *)&v32, es);
    }
    atomic_fetch_add(&buf->refs, 1); /* the tensor's */
    if (!st && (st = tf_tensor_wrap_host(dtype, 1, &total, buf->mem, (size_t)total, pack_done,
                                         buf, out)))
        st = tt_fail_core(st, "dp_average_grads: packing a bucket");
    if (st)
        atomic_fetch_sub(&buf->refs, 1); /* a refused wrap does not call pack_done */
    return st;
}
