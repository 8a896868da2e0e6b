/*
 * tenferro/engine_abi.h - the engine plugin ABI, version 1.
 *
 * This header is written for people who ship compute engines for tenferro as
 * shared objects. It is self-contained: a plugin includes it (and dtype.h,
 * status.h, which it includes) and nothing else of tenferro, and never links
 * against libtenferro. Everything the plugin needs from the host arrives in a
 * table of function pointers (tf_host_api).
 *
 * ------------------------------------------------------------------------
 * Loading and negotiation
 * ------------------------------------------------------------------------
 * 1. The host dlopen()s the plugin with RTLD_NOW | RTLD_LOCAL and resolves
 *    exactly one symbol, TF_ENGINE_ENTRY_SYMBOL ("tf_engine_plugin_v1"). The
 *    ABI major is part of the name, so a plugin of another major cannot even
 *    resolve. Build plugins with -fvisibility=hidden and export only the entry
 *    (TF_ENGINE_EXPORT does that). Do not rely on static constructors.
 * 2. The host calls the entry with its host-services table. The entry must
 *    have no side effects and must return a pointer to a descriptor with
 *    static storage duration (or NULL to refuse the host, e.g. when
 *    host->abi_major differs from the plugin's).
 * 3. The host checks the descriptor: struct_size at least
 *    TF_ENGINE_PLUGIN_MIN_SIZE, abi_major equal to its own major, name
 *    non-empty, and every required function present. Any minor is accepted:
 *    a plugin built for an older minor simply lacks the fields added later
 *    (the host sees that from struct_size), and a plugin built for a newer
 *    minor has fields the host ignores. A descriptor stating a minor the host
 *    knows but a struct_size larger than that minor's struct is refused
 *    (TF_ERR_PLUGIN_STRUCT_SIZE): the host would read past the object.
 * 4. The host calls init() once per load. Failure refuses the plugin; the
 *    host then never calls it again (but does not unload it either).
 * 5. A loaded plugin is never unloaded while the host is alive.
 *
 * ------------------------------------------------------------------------
 * Size-prefixed structs
 * ------------------------------------------------------------------------
 * Every struct that crosses the boundary starts with `uint32_t struct_size`,
 * set by whoever fills the struct to sizeof() of its own definition. A reader
 * uses a field only if TF_ABI_HAS_FIELD() says the writer knew it. A struct
 * the plugin fills for the host (tf_device_info) arrives with struct_size set
 * by the host; the plugin writes only the fields that fit. Structs and tables
 * grow only at the end.
 *
 * ------------------------------------------------------------------------
 * Memory and ownership
 * ------------------------------------------------------------------------
 * Memory allocated on one side is freed on the same side. A plugin allocates
 * host memory through host->alloc/host->free (so the application's allocator
 * hook and its fault-injection tests see it). Device memory belongs to the
 * engine. Pointers passed into a plugin function are borrowed for the
 * duration of the call only, unless a comment says otherwise.
 *
 * ------------------------------------------------------------------------
 * Threads
 * ------------------------------------------------------------------------
 * - Plugin-level functions (init, device_count, device_info, create,
 *   shutdown) may be called from any thread, concurrently.
 * - An engine instance (tf_engine_state) is used by one thread at a time:
 *   the host serialises execute, upload, download, buffer_copy, supports and
 *   synchronize on one instance. Different instances may run concurrently.
 * - buffer_alloc and buffer_free may be called from any thread, concurrently
 *   with any other call on the same instance; they must be thread-safe.
 * - host->report_error records the error for the calling thread: call it from
 *   the thread that called into the plugin, before returning the status.
 *   Worker threads of a threaded engine must hand errors back to that thread.
 *
 * ------------------------------------------------------------------------
 * Operands and layout
 * ------------------------------------------------------------------------
 * Tensors are column-major by convention: the contiguous layout of shape
 * [d0, d1, ...] has strides [1, d0, d0*d1, ...]. An operand may have any
 * strides in elements (0 for a broadcast dimension, negative for a reversed
 * one) and an element offset from the start of its memory. Element
 * (i0, ..., ik) lives at offset + sum_j i_j * strides[j]. The host has
 * checked that every element it can address lies inside the memory.
 *
 * Output operands are dense and column-major (strides as above; the offset
 * may be non-zero) unless the primitive's description says it accepts a
 * strided output. An output never shares memory with an input, with one
 * exception an engine opts into: see TF_ENGINE_CAP_IN_PLACE.
 *
 * Every buffer holds at least one element's bytes, even for a tensor with no
 * elements, so `data`/`buffer` are never NULL.
 *
 * Signed zeros are part of a float result where IEEE 754 fixes them:
 *   - UNARY NEG, ABS, FLOOR, CEIL give the zero IEEE 754 gives (neg(+0) =
 *     -0, abs(-0) = +0, ceil(-0.5) = -0); SIGN gives +0 for both zeros
 *     (sign(-0) = +0, not -0);
 *   - BINARY MAX and MIN, and REDUCE MAX and MIN, are IEEE 754-2019
 *     maximum and minimum: NaN if any argument is NaN, and -0 < +0, so
 *     max(+0, -0) = max(-0, +0) = +0 and min(+0, -0) = min(-0, +0) = -0;
 *   - the primitives that only move or convert values (FILL, COPY,
 *     CONVERT between floats, SELECT, PAD, CONCATENATE, GATHER, SCATTER
 *     with REPLACE, DYNAMIC_SLICE, DYNAMIC_UPDATE_SLICE) keep every bit.
 * Elsewhere the sign of an exact zero result may differ between engines (an
 * accumulation that starts at +0 turns a sum of -0s into +0). `tenferro
 * check-engine` checks the sign of zeros in exactly the cases above, with +0
 * and -0 among their inputs.
 *
 * ------------------------------------------------------------------------
 * Complex dtypes (ABI 1.4)
 * ------------------------------------------------------------------------
 * TF_C64 and TF_C128 elements are C99 float complex / double complex (real
 * part, then imaginary part). The host never asks an engine built against
 * an older minor about them. For an engine of 1.4 or later they are:
 *   - every structural primitive (FILL, COPY, PAD, CONCATENATE, GATHER,
 *     SCATTER, DYNAMIC_SLICE, DYNAMIC_UPDATE_SLICE) and SELECT, as for any
 *     dtype; FILL and PAD take the imaginary part from the `imag` field of
 *     their params; SCATTER ADD adds complex values;
 *   - UNARY NEG, CONJ, SIGN (z / |z|, 0 for 0), EXP, LOG, SIN, COS, TANH,
 *     SQRT, RSQRT (1 / sqrt z), RECIPROCAL, SQUARE (complex result), and ABS,
 *     REAL, IMAG, ANGLE, whose out[0] is the part dtype (f32 for c64, f64
 *     for c128);
 *   - BINARY ADD, SUB, MUL, DIV, POW; and BINARY COMPLEX, whose inputs are
 *     the two parts (f32 or f64) and whose out[0] is the complex dtype;
 *   - COMPARE EQ and NE only (both parts equal; NaN in a part is unequal);
 *   - REDUCE SUM and PROD only (max and min have no order to follow);
 *   - CONVERT to and from every dtype: real and integer values become
 *     x + 0i (checked: as to the part dtype); complex to complex converts
 *     each part (checked: as f64 to f32); complex to a real or integer dtype
 *     is only the unchecked cast, which takes the real part (and converts it
 *     as a float), and complex to bool gives z != 0 (either part non-zero);
 *   - DOT_GENERAL, with the conjugation flags of tf_dot_general_params;
 *   - not IOTA, not FUSED.
 * Branch cuts and special values are those of C11 Annex G (cexp, clog,
 * csqrt, csin, ccos, ctanh, carg): LOG and SQRT are cut along the negative
 * real axis, continuous from above (log(-1 + 0i) = i pi, log(-1 - 0i) =
 * -i pi, sqrt(-1 +- 0i) = +-i), SQRT's result has a non-negative real part,
 * log(0) = -inf + 0i, sqrt(0) = 0, exp(+-inf...) as Annex G; ANGLE is
 * atan2(im, re) in [-pi, pi] (angle(-1 + 0i) = pi, angle(-1 - 0i) = -pi,
 * angle(0) = 0); ABS is hypot(re, im) (inf when a part is infinite, even if
 * the other is NaN). POW is exp(y log x) on that branch, with x^0 = 1 for
 * every x and 0^y = 0 when Re(y) > 0 (other powers of 0 are NaN). SIGN of
 * a value with an infinite part takes the infinite parts as +-1 and the
 * finite ones as 0 before dividing (sign(inf + 2i) = 1); NaN gives NaN.
 * RSQRT and RECIPROCAL of 0 give an infinite or NaN value as C's division
 * by zero does. MUL and DIV are C's complex operators (an infinite operand
 * gives an infinite result, not NaN + NaN i).
 *
 * Engines whose descriptor has TF_ENGINE_CAP_HOST_MEMORY compute on host
 * memory: every operand arrives with `data` pointing at element 0 of its
 * memory (offset not yet applied), whether the memory came from this engine's
 * buffer_alloc or from the application, and must finish the work before
 * execute returns (the host reads their memory directly). Other engines
 * receive `buffer` (a handle from their own buffer_alloc) and `data` NULL.
 */
#ifndef TENFERRO_ENGINE_ABI_H
#define TENFERRO_ENGINE_ABI_H

#include <stddef.h>
#include <stdint.h>

#include "dtype.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TF_ENGINE_ABI_MAJOR 1
/* 1.1: tf_exec.flags; 1.2: TF_PRIM_FUSED; 1.3: FUSED outputs; 1.4: complex dtypes;
   1.5: FUSED immediates; 1.6: FUSED reduced output */
#define TF_ENGINE_ABI_MINOR 6

#define TF_ENGINE_ENTRY_SYMBOL "tf_engine_plugin_v1"

#if defined(__GNUC__) || defined(__clang__)
#define TF_ENGINE_EXPORT __attribute__((visibility("default")))
#else
#define TF_ENGINE_EXPORT
#endif

/* True when the writer of *ptr (a size-prefixed struct) knew `field`. */
#define TF_ABI_HAS_FIELD(ptr, type, field) \
    ((ptr)->struct_size >= offsetof(type, field) + sizeof(((type *)0)->field))

/* ===================================================================== */
/* Host services                                                          */
/* ===================================================================== */

/* Log levels for tf_host_api.log. */
typedef enum tf_log_level {
    TF_LOG_ERROR = 0,
    TF_LOG_WARN = 1,
    TF_LOG_INFO = 2,
    TF_LOG_DEBUG = 3
} tf_log_level;

/*
 * The table of services the host gives every plugin. Valid from the entry
 * call until the host process ends; the plugin may keep the pointer.
 */
typedef struct tf_host_api {
    uint32_t struct_size;
    uint32_t abi_major; /* the host's TF_ENGINE_ABI_MAJOR */
    uint32_t abi_minor; /* the host's TF_ENGINE_ABI_MINOR */
    uint32_t reserved0;
    void *ctx; /* passed back as the first argument of every function below */

    /*
     * Allocates `size` bytes aligned to `align` (a power of two, at most
     * 4096; 0 means alignof(max_align_t)). Returns NULL on failure; the
     * plugin then returns TF_ERR_OUT_OF_MEMORY. size 0 returns a unique
     * non-NULL pointer. Thread-safe.
     */
    void *(*alloc)(void *ctx, size_t size, size_t align);
    /* Frees memory from alloc. NULL is a no-op. Thread-safe. */
    void (*free)(void *ctx, void *ptr);

    /*
     * Records the detail of a failure the plugin is about to return: the
     * status it will return and a message naming the op, dtypes and values.
     * The host copies the message. The host shows it as the cause of the
     * error the application sees. Call it on the calling thread.
     */
    void (*report_error)(void *ctx, tf_status status, const char *message);

    /* Emits a log line (copied). Silent unless the application set a log callback. */
    void (*log)(void *ctx, tf_log_level level, const char *message);
} tf_host_api;

/* ===================================================================== */
/* Devices                                                                */
/* ===================================================================== */

typedef enum tf_device_type {
    TF_DEVICE_CPU = 0,
    TF_DEVICE_INTEGRATED_GPU = 1,
    TF_DEVICE_DISCRETE_GPU = 2,
    TF_DEVICE_VIRTUAL_GPU = 3,
    TF_DEVICE_OTHER = 4
} tf_device_type;

/* Bits of tf_device_info.flags. */
#define TF_DEVICE_FLAG_F64 (1u << 0)         /* f64 arithmetic supported */
#define TF_DEVICE_FLAG_HOST_MEMORY (1u << 1) /* memory is host-addressable */
#define TF_DEVICE_FLAG_SOFTWARE (1u << 2)    /* a software implementation (e.g. lavapipe) */

/* Filled by the plugin's device_info(). struct_size is set by the host. */
typedef struct tf_device_info {
    uint32_t struct_size;
    uint32_t type;         /* tf_device_type */
    uint32_t flags;        /* TF_DEVICE_FLAG_* */
    uint32_t compute_units; /* cores, SMs or the like; 0 if unknown */
    uint64_t memory_bytes; /* memory usable by the engine; 0 if unknown */
    char name[128];        /* NUL-terminated, e.g. "Host CPU (x86_64)" */
    char driver[64];       /* NUL-terminated driver/library description, may be "" */
} tf_device_info;

/* ===================================================================== */
/* Primitives                                                             */
/* ===================================================================== */

/*
 * The primitive set. Every op of the library decomposes into these. Numbers
 * are part of the ABI and only ever appended to; an engine answers
 * supports() with 0 for a primitive it does not know.
 *
 * Notation: in[k] are the inputs, out[k] the outputs; "same shape" means the
 * same rank and extents. Broadcasting is never implicit: the host expresses
 * it with stride 0, so every elementwise input has exactly out[0]'s shape.
 *
 * TF_PRIM_LIST(X) lists them, one X(NAME, name, value) each: the enumerator
 * is TF_PRIM_<NAME>, `name` its lower-case spelling (#name is the string the
 * library prints, tf_prim_name()), `value` its number. Values run 0, 1, ...
 * without gaps in list order, so a table indexed by primitive can be
 * generated from the list (TF_PRIM_COUNT_ entries).
 */
#define TF_PRIM_LIST(X)                                                       \
    /*                                                                        \
     * FILL: no inputs; out[0] = value everywhere. Params: tf_fill_params.    \
     * out[0] may be strided (any strides, including repeated addresses).     \
     * All dtypes.                                                            \
     */                                                                       \
    X(FILL, fill, 0)                                                          \
    /*                                                                        \
     * IOTA: no inputs; out[0][i] = i[axis] converted to out[0]'s dtype.      \
     * Params: tf_iota_params. Dtypes f32, f64, i32, i64 (not complex).       \
     */                                                                       \
    X(IOTA, iota, 1)                                                          \
    /*                                                                        \
     * UNARY: out[0] = f(in[0]), elementwise, same shape and dtype. Params:   \
     * tf_unary_params. Float dtypes: every tf_unary_op except LOGICAL_NOT.   \
     * Integer dtypes: NEG, ABS, SIGN, SQUARE (wrapping on overflow).         \
     * Bool: LOGICAL_NOT. Complex (1.4): see "Complex dtypes" above; ABS,     \
     * REAL, IMAG and ANGLE of a complex input have a real out[0].            \
     */                                                                       \
    X(UNARY, unary, 2)                                                        \
    /*                                                                        \
     * BINARY: out[0] = f(in[0], in[1]), elementwise, all three the same      \
     * shape and dtype. Params: tf_binary_params. Floats: every arithmetic    \
     * op (IEEE semantics; POW as C pow, REM as C fmod: the result has the    \
     * dividend's sign). Integers: ADD, SUB, MUL wrap; DIV truncates toward   \
     * zero and REM has the dividend's sign; division by zero is an error     \
     * (TF_ERR_VALIDATION), INT_MIN / -1 gives INT_MIN and INT_MIN % -1       \
     * gives 0; POW with a negative exponent gives 1/x^-y truncated toward    \
     * zero (1 or -1 when |x| = 1, 0 when |x| > 1, and the division-by-zero   \
     * error when x = 0); MAX, MIN; AND, OR, XOR bitwise. Bool: AND, OR,      \
     * XOR, MAX (= or), MIN (= and). Complex (1.4): ADD, SUB, MUL, DIV, POW;  \
     * COMPLEX makes c64 (c128) out[0] from two f32 (f64) inputs, the real    \
     * and the imaginary parts.                                               \
     */                                                                       \
    X(BINARY, binary, 3)                                                      \
    /*                                                                        \
     * COMPARE: out[0] (bool) = in[0] op in[1], elementwise; in[0], in[1]     \
     * have the same dtype and all three the same shape. Params:              \
     * tf_compare_params. All dtypes (complex: EQ and NE only). NaN compares  \
     * unequal to everything.                                                 \
     */                                                                       \
    X(COMPARE, compare, 4)                                                    \
    /*                                                                        \
     * SELECT: out[0] = in[0] ? in[1] : in[2]; in[0] is bool, in[1], in[2]    \
     * and out[0] share a dtype; all four the same shape. No params.          \
     */                                                                       \
    X(SELECT, select, 5)                                                      \
    /*                                                                        \
     * CONVERT: out[0] = in[0] converted to out[0]'s dtype; same shape.       \
     * Params: tf_convert_params. Unchecked (cast): float to integer          \
     * truncates toward zero and saturates at the integer's range, NaN gives  \
     * 0; i64 to i32 wraps (keeps the low 32 bits, two's complement);         \
     * integer to float rounds to nearest; f64 to f32 rounds to nearest       \
     * (overflow gives inf); anything to bool gives (x != 0, so -0.0 gives    \
     * 0); bool to anything gives 0 or 1. Checked: fails with                 \
     * TF_ERR_OUT_OF_RANGE if any                                             \
     * element would change value: a non-integral, NaN or out-of-range float  \
     * to integer, an integer outside the target's range, an integer that a   \
     * float cannot hold exactly, a finite f64 that overflows f32, or a value \
     * other than 0 and 1 (-0.0 counts as 0) to bool. (f64 to f32 rounding of \
     * finite values, including underflow to zero, is allowed: it is how      \
     * every float conversion works.)                                         \
     */                                                                       \
    X(CONVERT, convert, 6)                                                    \
    /*                                                                        \
     * REDUCE: out[0] = reduction of in[0] over the axes in params.axes_mask; \
     * out[0] has in[0]'s rank with extent 1 on every reduced axis and the    \
     * same dtype. Params: tf_reduce_params. Empty groups give the identity   \
     * (SUM 0, PROD 1, MAX -inf or the integer minimum, MIN +inf or the       \
     * integer maximum). Float MAX/MIN fold as BINARY MAX/MIN do: NaN         \
     * propagates and -0 < +0 (IEEE 754-2019). Float SUM accumulates in the   \
     * dtype itself or wider, at the engine's choice. Integer SUM/PROD wrap.  \
     * Bool: MAX (any), MIN (all). Complex (1.4): SUM, PROD.                  \
     */                                                                       \
    X(REDUCE, reduce, 7)                                                      \
    /*                                                                        \
     * DOT_GENERAL: out[0] = contraction of in[0] (lhs) and in[1] (rhs).      \
     * Params: tf_dot_general_params. lhs_contracting[i] pairs with           \
     * rhs_contracting[i], lhs_batch[i] with rhs_batch[i]; paired extents are \
     * equal; no axis appears twice in one operand's lists. The free axes of  \
     * an operand are those in neither list. out[0]'s axes are: the lhs free  \
     * axes in ascending order, then the rhs free axes in ascending order,    \
     * then the batch axes in the order of lhs_batch. Every element is the    \
     * sum over all contracting indices of lhs * rhs (0 when a contracting    \
     * extent is 0). Dtypes: in[0], in[1], out[0] share a float, integer or   \
     * complex dtype (integer arithmetic wraps). Complex (1.4): with          \
     * TF_DOT_CONJ_LHS (TF_DOT_CONJ_RHS) in params.conjugate, lhs (rhs)       \
     * elements enter the products conjugated.                                \
     */                                                                       \
    X(DOT_GENERAL, dot_general, 8)                                            \
    /*                                                                        \
     * COPY: out[0] = in[0], same shape and dtype, element by element. Both   \
     * may be strided; out[0] must not address one element twice (no stride   \
     * 0 on an extent > 1) and must not overlap in[0]. This primitive         \
     * materialises transposes, broadcasts, reversals and slices, and writes  \
     * into strided views (e.g. a diagonal). All dtypes.                      \
     */                                                                       \
    X(COPY, copy, 9)                                                          \
    /*                                                                        \
     * PAD: out[0][j] = in[0][i] where j_k = low[k] + i_k * (interior[k] + 1) \
     * for every axis k, and params.value elsewhere. Elements whose j falls   \
     * outside out[0] are dropped (negative low/high crop). out[0] has        \
     * in[0]'s rank and dtype; its extents are given (high is implied).       \
     * Params: tf_pad_params. All dtypes.                                     \
     */                                                                       \
    X(PAD, pad, 10)                                                           \
    /*                                                                        \
     * CONCATENATE: out[0] = in[0], in[1], ... joined along params.axis; all  \
     * inputs have out[0]'s rank and dtype and its extents except along the   \
     * axis, whose extents add up to out[0]'s. One or more inputs. Params:    \
     * tf_concatenate_params. All dtypes.                                     \
     */                                                                       \
    X(CONCATENATE, concatenate, 11)                                           \
    /*                                                                        \
     * GATHER: in[0] = x, in[1] = index (i32 or i64). Params:                 \
     * tf_gather_params.                                                      \
     *   TF_GATHER_INDEX_SELECT: index has rank 1; out[0] has x's shape with  \
     *     extent len(index) on params.axis, and                              \
     *     out[.., j, ..] = x[.., index[j], ..] (j on the axis).              \
     *   TF_GATHER_ALONG_AXIS: index has x's rank, extents <= x's on every    \
     *     axis but params.axis; out[0] has index's shape, and                \
     *     out[i] = x[i with i_axis replaced by index[i]].                    \
     * An index outside [0, extent) fails with TF_ERR_OUT_OF_RANGE. out[0]    \
     * has x's dtype. All dtypes for x.                                       \
     */                                                                       \
    X(GATHER, gather, 12)                                                     \
    /*                                                                        \
     * SCATTER: in[0] = base, in[1] = index (i32 or i64), in[2] = updates.    \
     * out[0] = base with updates written at the positions GATHER with the    \
     * same params would read: out[.., index[j], ..] op= updates[.., j, ..]   \
     * (INDEX_SELECT), or out[i with i_axis = index[i]] op= updates[i]        \
     * (ALONG_AXIS; updates has index's shape). params.combine is ADD         \
     * (duplicates add up) or REPLACE (for duplicates the last in             \
     * column-major order of the index wins). out[0] has base's shape and     \
     * dtype. Index errors as for GATHER. Params: tf_gather_params.           \
     */                                                                       \
    X(SCATTER, scatter, 13)                                                   \
    /*                                                                        \
     * DYNAMIC_SLICE: in[0] = x, in[1] = starts (i32 or i64, rank 1, one per  \
     * axis of x). out[0] = the block of x of out[0]'s extents starting at    \
     * starts, each start first clamped to [0, x_extent - out_extent]. No     \
     * params.                                                                \
     */                                                                       \
    X(DYNAMIC_SLICE, dynamic_slice, 14)                                       \
    /*                                                                        \
     * DYNAMIC_UPDATE_SLICE: in[0] = base, in[1] = update (base's rank and    \
     * dtype, extents <= base's), in[2] = starts (as for DYNAMIC_SLICE).      \
     * out[0] = base with the block at the clamped starts replaced by update. \
     * No params.                                                             \
     */                                                                       \
    X(DYNAMIC_UPDATE_SLICE, dynamic_update_slice, 15)                         \
    /*                                                                        \
     * FUSED (ABI 1.2): out[0] = a straight-line elementwise program over     \
     * in[0 .. n-1] (1 <= n <= TF_FUSED_MAX_INPUTS), evaluated element by     \
     * element without arrays for its intermediate values. Params:            \
     * tf_fused_params. All operands share one real float dtype (f32, f64) and\
     * have out[0]'s shape (a broadcast input has stride 0, as everywhere).   \
     * Registers 0 .. n-1 hold the inputs' elements; step k sets register     \
     * n + k to UNARY op(r[a]) or BINARY op(r[a], r[b]), a and b < n + k;     \
     * out[0] is the last register. Every register holds a value of the       \
     * dtype: each step rounds as the primitive of the same op does, so the   \
     * result is the one the steps run as separate UNARY/BINARY calls give    \
     * (the CPU engine: bit for bit). supports() is asked with op 0; yes      \
     * means every valid program whose steps the engine supports as UNARY     \
     * and BINARY calls of that dtype (the host checks each step so). With    \
     * TF_ENGINE_CAP_IN_PLACE, out[0] may be exactly one of the inputs.       \
     * The host sends it for chains it generates itself (derivatives) and     \
     * for elementwise ops a session issues back to back; an engine that      \
     * does not know it answers 0 and gets the steps one by one.              \
     * ABI 1.3, several outputs: with tf_fused_params.n_outputs = m > 1,      \
     * out[i] (i < m) receives register n + outputs[i]; supports() is then    \
     * asked with op m - 1 (so op 0 is the one-output question of 1.2), the   \
     * dtypes being the n inputs' and then the m outputs'. Outputs share      \
     * memory with no input and no other output (no in-place form). The       \
     * host sends m > 1 only to engines built against 1.3 or later.           \
     * ABI 1.5, immediates: a step operand (a, or b of a BINARY step) of      \
     * TF_FUSED_IMM | j reads the scalar tf_fused_params.imm[j] (j < n_imm <= \
     * TF_FUSED_MAX_IMMEDIATES) at every element, rounded once to the         \
     * program's dtype as a FILL of that dtype with value.f = imm[j] rounds   \
     * it (so the result is the one an input filled with it gives: bit for    \
     * bit on the CPU engine). An immediate is not a register: no step        \
     * writes one, no output names one. supports() is asked as without them  \
     * (n inputs, m outputs). The host sends n_imm > 0 only to engines built  \
     * against 1.5 or later, and to older ones a struct ending above n_imm.   \
     * ABI 1.6, a reduced output: see tf_fused_params.reduce.                 \
     */                                                                       \
    X(FUSED, fused, 16)

typedef enum tf_prim {
#define TF_PRIM_ENUM_(NAME, name, value) TF_PRIM_##NAME = value,
    TF_PRIM_LIST(TF_PRIM_ENUM_)
#undef TF_PRIM_ENUM_
    TF_PRIM_COUNT_ = 17 /* one past the last primitive of this header */
} tf_prim;

/*
 * The sub-operations of TF_PRIM_UNARY (and of FUSED's unary steps), one
 * X(NAME, name, value) each: enumerator TF_UNARY_<NAME>. The dtypes each is
 * defined for are those of TF_PRIM_UNARY above.
 */
#define TF_UNARY_OP_LIST(X)                                                 \
    X(NEG, neg, 0)                                                          \
    X(ABS, abs, 1)                                                          \
    X(SIGN, sign, 2) /* -1, +0 or 1 (sign(-0) = +0); NaN for NaN */         \
    X(EXP, exp, 3)                                                          \
    X(LOG, log, 4)                                                          \
    X(EXPM1, expm1, 5)                                                      \
    X(LOG1P, log1p, 6)                                                      \
    X(SIN, sin, 7)                                                          \
    X(COS, cos, 8)                                                          \
    X(TANH, tanh, 9)                                                        \
    X(SQRT, sqrt, 10)                                                       \
    X(RSQRT, rsqrt, 11) /* 1 / sqrt(x) */                                   \
    X(ERF, erf, 12)                                                         \
    X(SIGMOID, sigmoid, 13) /* 1 / (1 + exp(-x)), accurate for large |x| */ \
    X(RECIPROCAL, reciprocal, 14)                                           \
    X(SQUARE, square, 15)                                                   \
    X(LOGICAL_NOT, logical_not, 16) /* bool only */                         \
    X(FLOOR, floor, 17)                                                     \
    X(CEIL, ceil, 18)                                                       \
    X(CONJ, conj, 19)   /* 1.4, complex only */                             \
    X(REAL, real, 20)   /* 1.4, complex only; out[0] is the part dtype */   \
    X(IMAG, imag, 21)   /* 1.4, complex only; out[0] is the part dtype */   \
    X(ANGLE, angle, 22) /* 1.4, complex only; atan2(im, re), part dtype */

typedef enum tf_unary_op {
#define TF_UNARY_ENUM_(NAME, name, value) TF_UNARY_##NAME = value,
    TF_UNARY_OP_LIST(TF_UNARY_ENUM_)
#undef TF_UNARY_ENUM_
    TF_UNARY_COUNT_ = 23
} tf_unary_op;

/* Whether UNARY op `op` of a complex input gives the part dtype (f32 for c64, f64 for
   c128) rather than in[0]'s: ABS, REAL, IMAG, ANGLE (1.4). */
static inline int tf_unary_gives_part(uint32_t op)
{
    return op == TF_UNARY_ABS || op == TF_UNARY_REAL || op == TF_UNARY_IMAG ||
           op == TF_UNARY_ANGLE;
}

/*
 * The sub-operations of TF_PRIM_BINARY (and of FUSED's binary steps), one
 * X(NAME, name, value) each: enumerator TF_BINARY_<NAME>. The dtypes each is
 * defined for are those of TF_PRIM_BINARY above.
 */
#define TF_BINARY_OP_LIST(X)                                               \
    X(ADD, add, 0)                                                         \
    X(SUB, sub, 1)                                                         \
    X(MUL, mul, 2)                                                         \
    X(DIV, div, 3)                                                         \
    X(POW, pow, 4)                                                         \
    X(MAX, max, 5) /* floats: IEEE 754-2019, max(+0, -0) = +0, NaN wins */ \
    X(MIN, min, 6) /* floats: IEEE 754-2019, min(+0, -0) = -0, NaN wins */ \
    X(REM, rem, 7)                                                         \
    X(AND, and, 8)  /* integers and bool only */                           \
    X(OR, or, 9)    /* integers and bool only */                           \
    X(XOR, xor, 10) /* integers and bool only */                          \
    X(COMPLEX, complex, 11) /* 1.4: re (f32/f64), im -> c64/c128 */

typedef enum tf_binary_op {
#define TF_BINARY_ENUM_(NAME, name, value) TF_BINARY_##NAME = value,
    TF_BINARY_OP_LIST(TF_BINARY_ENUM_)
#undef TF_BINARY_ENUM_
    TF_BINARY_COUNT_ = 12
} tf_binary_op;

/* The comparisons of TF_PRIM_COMPARE, X(NAME, name, value): TF_COMPARE_<NAME>. */
#define TF_COMPARE_OP_LIST(X) \
    X(EQ, eq, 0)              \
    X(NE, ne, 1)              \
    X(LT, lt, 2)              \
    X(LE, le, 3)              \
    X(GT, gt, 4)              \
    X(GE, ge, 5)

typedef enum tf_compare_op {
#define TF_COMPARE_ENUM_(NAME, name, value) TF_COMPARE_##NAME = value,
    TF_COMPARE_OP_LIST(TF_COMPARE_ENUM_)
#undef TF_COMPARE_ENUM_
    TF_COMPARE_COUNT_ = 6
} tf_compare_op;

/* The reductions of TF_PRIM_REDUCE, X(NAME, name, value): TF_REDUCE_<NAME>. */
#define TF_REDUCE_OP_LIST(X) \
    X(SUM, sum, 0)           \
    X(PROD, prod, 1)         \
    X(MAX, max, 2)           \
    X(MIN, min, 3)

typedef enum tf_reduce_op {
#define TF_REDUCE_ENUM_(NAME, name, value) TF_REDUCE_##NAME = value,
    TF_REDUCE_OP_LIST(TF_REDUCE_ENUM_)
#undef TF_REDUCE_ENUM_
    TF_REDUCE_COUNT_ = 4
} tf_reduce_op;

/* The modes of TF_PRIM_GATHER and SCATTER, X(NAME, name, value): TF_GATHER_<NAME>. */
#define TF_GATHER_MODE_LIST(X)       \
    X(INDEX_SELECT, index_select, 0) \
    X(ALONG_AXIS, along_axis, 1)

typedef enum tf_gather_mode {
#define TF_GATHER_ENUM_(NAME, name, value) TF_GATHER_##NAME = value,
    TF_GATHER_MODE_LIST(TF_GATHER_ENUM_)
#undef TF_GATHER_ENUM_
} tf_gather_mode;

/* How TF_PRIM_SCATTER combines, X(NAME, name, value): TF_SCATTER_<NAME>. */
#define TF_SCATTER_COMBINE_LIST(X) \
    X(ADD, add, 0)                 \
    X(REPLACE, replace, 1)

typedef enum tf_scatter_combine {
#define TF_SCATTER_ENUM_(NAME, name, value) TF_SCATTER_##NAME = value,
    TF_SCATTER_COMBINE_LIST(TF_SCATTER_ENUM_)
#undef TF_SCATTER_ENUM_
} tf_scatter_combine;

/*
 * A value of any dtype: floats read `f`, integers and bool read `i`
 * (bool: i != 0), a complex value's real part reads `f` (its imaginary part
 * travels in the params that hold the scalar, `imag`).
 */
typedef struct tf_scalar {
    double f;
    int64_t i;
} tf_scalar;

typedef struct tf_fill_params {
    uint32_t struct_size;
    uint32_t reserved0;
    tf_scalar value;
    /* ABI 1.4: the imaginary part of a complex value (read when
       TF_ABI_HAS_FIELD(p, tf_fill_params, imag); 0 otherwise) */
    double imag;
} tf_fill_params;

typedef struct tf_iota_params {
    uint32_t struct_size;
    uint32_t axis;
} tf_iota_params;

typedef struct tf_unary_params {
    uint32_t struct_size;
    uint32_t op; /* tf_unary_op */
} tf_unary_params;

typedef struct tf_binary_params {
    uint32_t struct_size;
    uint32_t op; /* tf_binary_op */
} tf_binary_params;

typedef struct tf_compare_params {
    uint32_t struct_size;
    uint32_t op; /* tf_compare_op */
} tf_compare_params;

typedef struct tf_convert_params {
    uint32_t struct_size;
    uint32_t checked; /* non-zero: fail instead of changing a value */
} tf_convert_params;

typedef struct tf_reduce_params {
    uint32_t struct_size;
    uint32_t op;        /* tf_reduce_op */
    uint64_t axes_mask; /* bit k set: axis k is reduced */
} tf_reduce_params;

typedef struct tf_dot_general_params {
    uint32_t struct_size;
    uint32_t n_contracting;
    uint32_t n_batch;
    uint32_t reserved0;
    uint32_t lhs_contracting[TF_MAX_RANK];
    uint32_t rhs_contracting[TF_MAX_RANK];
    uint32_t lhs_batch[TF_MAX_RANK];
    uint32_t rhs_batch[TF_MAX_RANK];
    /* ABI 1.4: TF_DOT_CONJ_* bits, set only for complex dtypes (read when
       TF_ABI_HAS_FIELD(p, tf_dot_general_params, conjugate); 0 otherwise) */
    uint32_t conjugate;
    uint32_t reserved1; /* 0 */
} tf_dot_general_params;

/* tf_dot_general_params.conjugate (ABI 1.4): the operand enters conjugated. */
#define TF_DOT_CONJ_LHS (1u << 0)
#define TF_DOT_CONJ_RHS (1u << 1)

typedef struct tf_pad_params {
    uint32_t struct_size;
    uint32_t reserved0;
    tf_scalar value;
    int64_t low[TF_MAX_RANK];      /* may be negative */
    int64_t interior[TF_MAX_RANK]; /* >= 0 */
    /* ABI 1.4: the imaginary part of a complex value, as tf_fill_params.imag */
    double imag;
} tf_pad_params;

typedef struct tf_concatenate_params {
    uint32_t struct_size;
    uint32_t axis;
} tf_concatenate_params;

typedef struct tf_gather_params {
    uint32_t struct_size;
    uint32_t axis;
    uint32_t mode;    /* tf_gather_mode */
    uint32_t combine; /* tf_scatter_combine; SCATTER only */
} tf_gather_params;

/* The kind of a TF_PRIM_FUSED step, X(NAME, name, value): TF_FUSED_<NAME>. */
#define TF_FUSED_KIND_LIST(X)                                   \
    X(UNARY, unary, 0)   /* r[n + k] = tf_unary_op op (r[a]) */ \
    X(BINARY, binary, 1) /* r[n + k] = tf_binary_op op (r[a], r[b]) */

typedef enum tf_fused_kind {
#define TF_FUSED_ENUM_(NAME, name, value) TF_FUSED_##NAME = value,
    TF_FUSED_KIND_LIST(TF_FUSED_ENUM_)
#undef TF_FUSED_ENUM_
    TF_FUSED_KIND_COUNT_ = 2
} tf_fused_kind;

/*
 * The limits of one FUSED program. The host's deferred batches
 * (docs/runtime.md) hold up to TF_FUSED_MAX_STEPS steps since 1.5 (8 before),
 * of which at most TF_FUSED_MAX_OUTPUTS are written by one call.
 */
#define TF_FUSED_MAX_INPUTS 5
#define TF_FUSED_MAX_STEPS 16
#define TF_FUSED_MAX_OUTPUTS 8     /* ABI 1.3 */
#define TF_FUSED_MAX_IMMEDIATES 8  /* ABI 1.5 */
/* ABI 1.5: the operand encoding of immediate j (tf_fused_step.a, .b): TF_FUSED_IMM | j. */
#define TF_FUSED_IMM 0x80000000u

/* One step of a TF_PRIM_FUSED program (ABI 1.2). */
typedef struct tf_fused_step {
    uint32_t kind; /* tf_fused_kind */
    uint32_t op;   /* a tf_unary_op or tf_binary_op */
    uint32_t a, b; /* operand registers (1.5: or TF_FUSED_IMM | j); b is 0 for UNARY */
} tf_fused_step;

typedef struct tf_fused_params {
    uint32_t struct_size;
    uint32_t n_steps;            /* 1 .. TF_FUSED_MAX_STEPS */
    const tf_fused_step *steps;  /* step k writes register n_inputs + k */
    /*
     * ABI 1.3 (read only when TF_ABI_HAS_FIELD(p, tf_fused_params, outputs)
     * holds; a 1.2 host's struct ends above): n_outputs is 0 or 1 for the
     * one output of 1.2 (the last step), else 2 .. TF_FUSED_MAX_OUTPUTS, and
     * outputs[i] is the step whose value out[i] receives: strictly
     * increasing, the last one n_steps - 1. outputs is ignored when
     * n_outputs <= 1.
     */
    uint32_t n_outputs;
    const uint32_t *outputs;
    /*
     * ABI 1.5 (read only when TF_ABI_HAS_FIELD(p, tf_fused_params, imm)
     * holds; older hosts' structs end above, and engines built against an
     * older minor receive a struct that ends above): n_imm scalar constants,
     * 0 .. TF_FUSED_MAX_IMMEDIATES, that operands TF_FUSED_IMM | j read; imm
     * is ignored when n_imm is 0. Each is rounded to the program's dtype
     * (f32: as (float)imm[j]) before any step reads it.
     */
    uint32_t n_imm;
    const double *imm;
    /*
     * ABI 1.6 (read only when TF_ABI_HAS_FIELD(p, tf_fused_params,
     * reduce_step) holds; the host sends reduce != 0 only to engines built
     * against 1.6 or later, and to older ones a struct ending above reduce):
     * reduce is 0, or 1 + a tf_reduce_op. Then the call has m + 1 outputs,
     * m = n_outputs (0 .. TF_FUSED_MAX_OUTPUTS - 1, counted exactly: outputs
     * is read whenever m >= 1): out[0 .. m) are elementwise outputs as above,
     * and out[m], of the program's dtype with every extent 1 (any rank),
     * receives that reduction over every element of register
     * n + reduce_step: the value the engine's REDUCE of the op over all axes
     * gives for a dense tensor of the program's shape holding the register
     * (the CPU engine: bit for bit). The program's shape is in[0]'s, which
     * every input and elementwise output has; the last step is the later of
     * outputs[m - 1] and reduce_step, which may also be an elementwise output.
     * supports() is asked with op TF_FUSED_REDUCE_QUERY(reduce_op, m), the
     * dtypes being the n inputs', the m outputs' and out[m]'s. So one pass
     * computes sum(f(x, y)) without writing f(x, y) anywhere.
     */
    uint32_t reduce;
    uint32_t reduce_step;
} tf_fused_params;

/* ABI 1.6: supports()'s op for a FUSED call with m elementwise outputs and a
   reduced output of tf_reduce_op r. Older engines refuse it unasked (their
   FUSED op is below TF_FUSED_MAX_OUTPUTS). */
#define TF_FUSED_REDUCE_QUERY(r, m) (0x100u | ((uint32_t)(r) << 4) | (uint32_t)(m))
/* Such a question read back: whether op q is one, its r and its m. */
#define TF_FUSED_QUERY_IS_REDUCE(q) (((q) & ~0xffu) == 0x100u)
#define TF_FUSED_QUERY_REDUCE_OP(q) ((q) >> 4 & 0xfu)
#define TF_FUSED_QUERY_OUTPUTS(q) ((q) & 0xfu)
/* 1 + the reduce op of FUSED params p, or 0: none, as every struct older than 1.6 says. */
#define TF_FUSED_PARAMS_REDUCE(p) \
    (TF_ABI_HAS_FIELD((p), tf_fused_params, reduce_step) ? (p)->reduce : 0u)

/* ===================================================================== */
/* Execution                                                              */
/* ===================================================================== */

typedef struct tf_engine_state tf_engine_state;   /* defined by the plugin */
typedef struct tf_engine_buffer tf_engine_buffer; /* defined by the plugin */

/* One tensor argument of a primitive. See "Operands and layout" above. */
typedef struct tf_operand {
    uint32_t struct_size;
    uint32_t dtype; /* tf_dtype */
    uint32_t rank;  /* 0 .. TF_MAX_RANK */
    uint32_t reserved0;
    const int64_t *shape;   /* rank extents, each >= 0 */
    const int64_t *strides; /* rank strides in elements */
    int64_t offset;         /* in elements, from `data` / the buffer's start */
    tf_engine_buffer *buffer; /* the engine's buffer, or NULL (host memory not from this engine) */
    void *data; /* host address of element 0 of the memory (HOST_MEMORY engines), else NULL */
} tf_operand;

/* One primitive to execute. All pointers are borrowed for the call. */
typedef struct tf_exec {
    uint32_t struct_size;
    uint32_t prim;          /* tf_prim */
    const void *params;     /* the primitive's params struct, NULL if it has none */
    uint32_t n_inputs;
    uint32_t n_outputs;
    const tf_operand *const *inputs;
    const tf_operand *const *outputs;
    /*
     * ABI 1.1: TF_EXEC_* bits. Read it only when TF_ABI_HAS_FIELD(exec,
     * tf_exec, flags) holds; a 1.0 host does not send it.
     */
    uint32_t flags;
    uint32_t reserved0; /* 0 */
} tf_exec;

/*
 * tf_exec.flags: the host has already checked this call against every rule of
 * this header for `prim` (operand counts, params, dtypes, shapes, strides and
 * bounds, outputs not aliasing inputs) and the engine's supports() answered
 * yes for it. An engine may then skip its own checks of the same rules; it
 * must still report what only it can know (out of device memory, a lost
 * device, data-dependent failures). libtenferro sets it on every call it
 * makes; a host that does not validate must leave it clear.
 */
#define TF_EXEC_VALIDATED (1u << 0)

/* Options for create(). Everything optional; zero/NULL means the default. */
typedef struct tf_engine_options {
    uint32_t struct_size;
    uint32_t device_index; /* which device of device_count() */
    int32_t threads;       /* 0: the plugin's default; 1: create no threads; N: up to N threads */
    uint32_t n_extra;
    const char *device_name; /* select the first device whose name contains this; NULL: by index */
    const char *const *extra_keys;   /* n_extra plugin-specific "key" = "value" pairs */
    const char *const *extra_values;
} tf_engine_options;

/* Bits of tf_engine_plugin.capabilities. */
#define TF_ENGINE_CAP_HOST_MEMORY (1u << 0) /* computes on host memory; see "Operands" */
#define TF_ENGINE_CAP_THREADS (1u << 1)     /* honours tf_engine_options.threads > 1 */
/*
 * ABI 1.1: in TF_PRIM_BINARY calls, outputs[0] may be exactly inputs[0]: the
 * same memory, offset, shape, strides and dtype (dense, as every output),
 * with inputs[1] sharing no memory with it. Each element must then be read
 * before it is written, as out[i] = in0[i] op in1[i] does. The host sends
 * such calls (to add into a buffer nothing else can see) only to engines
 * declaring this bit; there is never a partial overlap.
 * ABI 1.2: the same for TF_PRIM_FUSED, where outputs[0] may be exactly any
 * one of the inputs (the others share no memory with it).
 */
#define TF_ENGINE_CAP_IN_PLACE (1u << 2)
/*
 * ABI 1.3: the host may defer the elementwise ops a session issues back to
 * back and send them as one TF_PRIM_FUSED call (docs/runtime.md, "Deferred
 * elementwise chains"), by default: declare it when one FUSED pass over a
 * program is at least as fast as its steps run one call each (on a
 * HOST_MEMORY engine, for arrays past its caches: the host defers only
 * results of TF_DEFER_HOST_MIN_BYTES or more there). Without it an
 * application still gets deferral by asking for it (TF_DEFER_ALWAYS).
 */
#define TF_ENGINE_CAP_DEFER_CHAINS (1u << 3)

/*
 * The plugin descriptor returned by the entry symbol. Static storage; the
 * host never writes to it. Fields marked "required" must be non-NULL.
 */
typedef struct tf_engine_plugin {
    uint32_t struct_size; /* sizeof(tf_engine_plugin) as the plugin was built */
    uint32_t abi_major;   /* TF_ENGINE_ABI_MAJOR the plugin was built against */
    uint32_t abi_minor;   /* TF_ENGINE_ABI_MINOR the plugin was built against */
    uint32_t capabilities; /* TF_ENGINE_CAP_* */
    const char *name;     /* required, non-empty: the engine name apps ask for ("cpu") */
    const char *version;  /* required: the plugin's own version ("1.2.0") */
    const char *description; /* optional one-line description */

    /*
     * Required. Called once after the host accepted the descriptor. Sets
     * *plugin_ctx to the plugin's context, passed to every plugin-level
     * function. On failure returns an error (after report_error) and the
     * plugin is refused.
     */
    tf_status (*init)(const tf_host_api *host, void **plugin_ctx);
    /* Optional. Releases what init made. Called at most once, never before
       every engine instance is destroyed. */
    void (*shutdown)(void *plugin_ctx);

    /* Required. Number of devices this plugin can drive (0 is allowed). */
    uint32_t (*device_count)(void *plugin_ctx);
    /* Required. Fills *info (struct_size set by the host) for device `index`. */
    tf_status (*device_info)(void *plugin_ctx, uint32_t index, tf_device_info *info);

    /*
     * Required. Creates an engine instance on a device. `options` may be
     * NULL. No device / bad option -> error with report_error.
     */
    tf_status (*create)(void *plugin_ctx, const tf_engine_options *options, tf_engine_state **out);
    /* Required. Destroys an instance; every buffer of it has been freed. */
    void (*destroy)(tf_engine_state *engine);

    /*
     * Required. Non-zero if the engine executes `prim` (with sub-operation
     * `op`: the tf_unary_op, tf_binary_op, tf_compare_op or tf_reduce_op,
     * 0 for other primitives) for these dtypes: the inputs' dtypes, then the
     * outputs' dtypes, in operand order. Must not fail, must be cheap, and
     * must give the same answer for the same arguments for the whole life of
     * the instance (the host remembers answers). The host never calls
     * execute for a combination answered with 0.
     */
    int (*supports)(tf_engine_state *engine, uint32_t prim, uint32_t op,
                    const uint32_t *dtypes, uint32_t n_dtypes);

    /*
     * Required. Allocates `nbytes` (> 0) of engine memory. *host_ptr gets its
     * host address for HOST_MEMORY engines, NULL otherwise. Thread-safe.
     */
    tf_status (*buffer_alloc)(tf_engine_state *engine, size_t nbytes, tf_engine_buffer **out,
                              void **host_ptr);
    /* Required. Frees a buffer (after pending work on it). Thread-safe. */
    void (*buffer_free)(tf_engine_state *engine, tf_engine_buffer *buffer);
    /* Required. Copies nbytes from host memory into buffer at byte offset. */
    tf_status (*upload)(tf_engine_state *engine, tf_engine_buffer *buffer, size_t offset,
                        const void *src, size_t nbytes);
    /* Required. Copies nbytes from buffer at byte offset to host memory; waits for pending work. */
    tf_status (*download)(tf_engine_state *engine, const tf_engine_buffer *buffer, size_t offset,
                          void *dst, size_t nbytes);
    /* Required. Copies nbytes between buffers of this engine (byte offsets). */
    tf_status (*buffer_copy)(tf_engine_state *engine, const tf_engine_buffer *src,
                             size_t src_offset, tf_engine_buffer *dst, size_t dst_offset,
                             size_t nbytes);

    /*
     * Required. Executes one primitive. The host has validated ranks,
     * shapes, dtypes and params against the primitive's description and
     * asked supports() first; the engine still checks data-dependent
     * conditions (index ranges, integer division by zero, checked
     * conversions) and reports them as errors. May return before the work
     * is done (asynchronous engines); errors of such work surface at the
     * next download/synchronize.
     */
    tf_status (*execute)(tf_engine_state *engine, const tf_exec *exec);

    /* Required. Waits until all submitted work of the instance is done. */
    tf_status (*synchronize)(tf_engine_state *engine);
} tf_engine_plugin;

/* The smallest descriptor an ABI 1 host accepts: every field of 1.0. */
#define TF_ENGINE_PLUGIN_MIN_SIZE \
    (offsetof(tf_engine_plugin, synchronize) + sizeof(((tf_engine_plugin *)0)->synchronize))

/* The entry symbol's type. A plugin defines exactly:
 *   TF_ENGINE_EXPORT const tf_engine_plugin *tf_engine_plugin_v1(const tf_host_api *host);
 */
typedef const tf_engine_plugin *(*tf_engine_entry_fn)(const tf_host_api *host);

#ifdef __cplusplus
}
#endif
#endif /* TENFERRO_ENGINE_ABI_H */
