/*
 * vk_fixture.h - the Vulkan engine tests' shared fixture: the Vulkan engine
 * (validation layer on) and the CPU reference engine, random operands that
 * exist identically on both, and comparisons.
 *
 * Every input is built as a host "root" tensor, uploaded to the Vulkan engine
 * with tf_engine_upload, and then given the same view on both sides
 * (transposed, reversed, broadcast with stride 0, stepped slice), so the CPU
 * engine sees the host view and the Vulkan engine the same view of its copy.
 */
#ifndef VK_FIXTURE_H
#define VK_FIXTURE_H

#include "tf_ref.h"
#include "tf_test_log.h"

extern tf_engine *vk_engine;
extern tf_engine *vk_cpu;

/* One operand on both engines. */
typedef struct vk_pair {
    tf_tensor *cpu; /* the view over the host root */
    tf_tensor *vk;  /* the same view over the uploaded root */
} vk_pair;

typedef enum vk_layout {
    VK_DENSE,
    VK_TRANSPOSED,
    VK_REVERSED,
    VK_BROADCAST,
    VK_STEPPED,
    VK_LAYOUT_COUNT_
} vk_layout;

/* Values drawn for an input: uniform in [lo, hi] (integers rounded; bool 0/1; complex:
   both parts). */
typedef struct vk_gen {
    double lo, hi;
} vk_gen;

/* A random operand of `shape` in the given layout. */
void vk_pair_make(vk_pair *p, tfr_rng *rng, tf_dtype dtype, size_t rank, const int64_t *shape,
                  vk_layout layout, vk_gen gen);
void vk_pair_free(vk_pair *p);
/* Empty dense outputs on both engines. */
void vk_pair_output(vk_pair *p, tf_dtype dtype, size_t rank, const int64_t *shape);

/* Runs prim on both engines (asserting success) and compares out[0] element by element. */
void vk_run_compare(const char *what, tf_prim prim, const void *params, size_t n_in, vk_pair *in,
                    vk_pair *out, double rtol, double atol);

/* Downloads a tensor to doubles (numel of them, 2 numel for complex: re, im of each
   element in turn; caller frees). */
double *vk_read(tf_engine *engine, const tf_tensor *t);
/* Compares two tensors' values (NaN equals NaN); complex: both parts, each within
   atol + rtol |element| (the modulus). */
void vk_compare(const char *what, const tf_tensor *cpu_t, const tf_tensor *vk_t, double rtol,
                double atol);

/*
 * The arguments of the accuracy checks of expm1 and log1p (test_vulkan_prims.c,
 * test_vulkan_fused.c), each in both functions' domain: signed zeros, the smallest normal
 * numbers, tiny values (where exp(x) and 1 + x round to 1 or next to it, so that the plain
 * forms exp(x) - 1 and log(1 + x) cancel), and ordinary ones. Writes at most VK_SMALL_ARGS
 * of them to x (values of `dtype`) and returns the count. VK_SMALL_ARGS_ULPS: the ulps the
 * shaders may be off there: f32 1.5 in IEEE arithmetic (Vulkan allows x / y 2.5 ulps), f64
 * 4 (math64.glsl's expm1 is exp(x) - 1 from |x| = 0.35 on).
 */
#define VK_SMALL_ARGS 64
#define VK_SMALL_ARGS_ULPS(dtype) ((dtype) == TF_F32 ? 4.0 : 8.0)
size_t vk_small_args(tf_dtype dtype, double *x);
/* A dense rank-1 Vulkan tensor of dtype holding x[0 .. n) (one reference; caller releases). */
tf_tensor *vk_upload_values(tf_dtype dtype, size_t n, const double *x);
/*
 * Fails unless element i of the Vulkan tensor t is within max_ulps units in the last place
 * (of dtype, at the reference's magnitude) of f(x[i]), computed in long double; a zero
 * reference needs a zero of the same sign.
 */
void vk_assert_ulps(const char *what, tf_dtype dtype, const tf_tensor *t, const double *x, size_t n,
                    long double (*f)(long double), double max_ulps);

/*
 * Puts a new Vulkan engine (with the extra option key = value, or none if key is NULL) in
 * place of vk_engine, returning the one it replaces, and captures DEBUG lines: the engine
 * logs each pipeline it creates once ("vulkan: pipeline <module> spec <n>"), which shows
 * which kernels a workload ran. vk_fresh_end destroys it and puts `saved` back.
 */
tf_engine *vk_fresh_begin(const char *key, const char *value);
void vk_fresh_end(tf_engine *saved);
/* Fails unless a pipeline of `module` was created since vk_fresh_begin. */
void vk_assert_pipeline_used(const char *module);

/* setup/teardown of a group: opens both engines, fails on validation messages. */
int vk_group_setup(void **state);
int vk_group_teardown(void **state);
/* Fails the running test if the validation layer spoke since the group began. */
void vk_assert_validation_clean(void);

#endif /* VK_FIXTURE_H */
