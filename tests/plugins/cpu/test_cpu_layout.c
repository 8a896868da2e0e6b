/*
 * test_cpu_layout.c - COPY, PAD and CONCATENATE of the CPU engine against
 * reference loops: every dtype, inputs of every layout, COPY into strided
 * outputs (a diagonal, reversed, stepped and transposed views) with the
 * untouched elements checked, PAD with negative (cropping) and interior
 * padding, CONCATENATE of one to four inputs including empty ones.
 */
#include "cpu_fixture.h"

static const tf_dtype all_dtypes[] = {TF_F32, TF_F64, TF_I32, TF_I64, TF_BOOL};

static tfr_gen any_values(void)
{
    return (tfr_gen){TFR_SPECIAL, -1000.0, 1000.0};
}

/* ===================================================================== */
/* COPY                                                                   */
/* ===================================================================== */

static void test_copy_dense_out(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 401);
    tfr_gen g = any_values();
    for (size_t d = 0; d < 5; d++) {
        for (int l = 0; l < TFR_LAYOUT_COUNT_; l++) {
            for (int t = 0; t < 8; t++) {
                int64_t shape[TF_MAX_RANK];
                char what[128], s[96];
                size_t rank = tfr_random_rank(&rng, 5);
                tfr_random_shape(&rng, rank, rank > 3 ? 4 : 6, 8, shape);
                tfr_input in;
                tfr_input_make(&in, &rng, cpu_engine, all_dtypes[d], rank, shape, (tfr_layout)l,
                               &g);
                snprintf(what, sizeof what, "copy %s %s from %s", tf_dtype_name(all_dtypes[d]),
                         tfr_shape_str(rank, shape, s, sizeof s), tfr_layout_name(in.layout));
                tf_tensor *out = tfr_output(cpu_engine, all_dtypes[d], rank, shape);
                tfr_exec_ok(what, cpu_engine, TF_PRIM_COPY, NULL, 1, &in.t, 1, &out);
                tf_scalar *got = tfr_read(out);
                tfr_check(what, all_dtypes[d], in.n, got, in.vals, NULL, (tfr_tol){0, 0});
                free(got);
                tf_tensor_release(out);
                tfr_input_free(&in);
            }
        }
    }
}

/* COPY into strided views: only the addressed elements change. */
static void test_copy_strided_out(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 402);
    tfr_gen g = any_values();
    for (size_t d = 0; d < 5; d++) {
        for (int l = 0; l < TFR_OUT_REPEATED; l++) { /* COPY may not repeat addresses */
            for (int t = 0; t < 10; t++) {
                int64_t shape[TF_MAX_RANK];
                char what[160], s[96];
                size_t rank = tfr_random_rank(&rng, 4);
                tfr_random_shape(&rng, rank, 5, 8, shape);
                tfr_input in;
                tfr_input_make(&in, &rng, cpu_engine, all_dtypes[d], rank, shape,
                               tfr_random_layout(&rng), &g);
                tf_tensor *root, *view;
                tfr_strided_output(&rng, cpu_engine, all_dtypes[d], rank, shape, (tfr_out_layout)l,
                                   &root, &view);
                snprintf(what, sizeof what, "copy %s %s from %s into a %s view",
                         tf_dtype_name(all_dtypes[d]), tfr_shape_str(rank, shape, s, sizeof s),
                         tfr_layout_name(in.layout), tfr_out_layout_name((tfr_out_layout)l));
                tfr_exec_ok(what, cpu_engine, TF_PRIM_COPY, NULL, 1, &in.t, 1, &view);
                tfr_check_strided_write(what, root, view, in.vals);
                tf_tensor_release(view);
                tf_tensor_release(root);
                tfr_input_free(&in);
            }
        }
    }
}

/* ===================================================================== */
/* PAD                                                                    */
/* ===================================================================== */

/* The input element that lands on output position j, or -1 for padding. */
static int64_t pad_source(size_t rank, const int64_t *shape, const tf_pad_params *p,
                          const int64_t *j)
{
    int64_t idx[TF_MAX_RANK];
    for (size_t k = 0; k < rank; k++) {
        int64_t t = j[k] - p->low[k], step = p->interior[k] + 1;
        if (t < 0 || t % step != 0 || t / step >= shape[k])
            return -1;
        idx[k] = t / step;
    }
    return tfr_index_linear(rank, shape, idx);
}

static tf_scalar pad_value(tfr_rng *rng, tf_dtype dtype)
{
    tf_scalar v = {tfr_rng_real(rng, -50.0, 50.0), tfr_rng_int(rng, -50, 50)};
    if (dtype == TF_BOOL)
        v.i = tfr_rng_int(rng, 0, 1);
    return v;
}

static void pad_once(tfr_rng *rng, tf_dtype dtype, size_t rank, const int64_t *shape,
                     const tf_pad_params *p, const int64_t *oshape)
{
    char what[256], s[96], o[96];
    tfr_gen g = any_values();
    tfr_input in;
    tfr_input_make(&in, rng, cpu_engine, dtype, rank, shape, tfr_random_layout(rng), &g);
    int n = snprintf(what, sizeof what, "pad %s %s -> %s from %s, low/interior",
                     tf_dtype_name(dtype), tfr_shape_str(rank, shape, s, sizeof s),
                     tfr_shape_str(rank, oshape, o, sizeof o), tfr_layout_name(in.layout));
    for (size_t k = 0; k < rank && n > 0 && (size_t)n < sizeof what; k++)
        n += snprintf(what + n, sizeof what - (size_t)n, " %lld/%lld", (long long)p->low[k],
                      (long long)p->interior[k]);
    tf_tensor *out = tfr_output(cpu_engine, dtype, rank, oshape);
    tfr_exec_ok(what, cpu_engine, TF_PRIM_PAD, p, 1, &in.t, 1, &out);
    size_t n_out = tfr_numel(rank, oshape);
    tf_scalar *got = tfr_read(out), *want = tfr_vals_alloc(n_out);
    int64_t j[TF_MAX_RANK] = {0};
    tf_scalar fill = tf_dtype_is_float(dtype) ? tfr_f(p->value.f) : tfr_i(p->value.i);
    for (size_t i = 0; i < n_out; i++, tfr_index_next(rank, oshape, j)) {
        int64_t src = pad_source(rank, shape, p, j);
        want[i] = src < 0 ? tfr_norm(dtype, fill) : in.vals[src];
    }
    tfr_check(what, dtype, n_out, got, want, NULL, tfr_tol_default(dtype));
    free(got);
    free(want);
    tf_tensor_release(out);
    tfr_input_free(&in);
}

static void test_pad_random(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 403);
    for (size_t d = 0; d < 5; d++) {
        for (int t = 0; t < 40; t++) {
            int64_t shape[TF_MAX_RANK], oshape[TF_MAX_RANK];
            size_t rank = tfr_random_rank(&rng, 4);
            tfr_random_shape(&rng, rank, 5, 10, shape);
            tf_pad_params p = {sizeof p, 0, pad_value(&rng, all_dtypes[d]), {0}, {0}, 0};
            for (size_t k = 0; k < rank; k++) {
                p.low[k] = tfr_rng_int(&rng, -3, 3);
                p.interior[k] = tfr_rng_int(&rng, 0, 2);
                int64_t span = shape[k] ? (shape[k] - 1) * (p.interior[k] + 1) + 1 : 0;
                int64_t ext = p.low[k] + span + tfr_rng_int(&rng, -3, 3); /* + high */
                oshape[k] = ext < 0 ? 0 : ext;
            }
            pad_once(&rng, all_dtypes[d], rank, shape, &p, oshape);
        }
    }
}

/* Cropping on both sides with interior padding, and a rank-0 pad (a copy). */
static void test_pad_edges(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 404);
    for (size_t d = 0; d < 5; d++) {
        int64_t shape[2] = {6, 4}, oshape[2] = {7, 3};
        tf_pad_params p = {sizeof p, 0, pad_value(&rng, all_dtypes[d]), {-4, 2}, {1, 0}, 0};
        pad_once(&rng, all_dtypes[d], 2, shape, &p, oshape); /* crop 4 in front, 2 behind */
        tf_pad_params q = {sizeof q, 0, pad_value(&rng, all_dtypes[d]), {0}, {0}, 0};
        int64_t scalar[1] = {0}; /* rank 0: a copy */
        pad_once(&rng, all_dtypes[d], 0, scalar, &q, scalar);
        int64_t one[1] = {0}, big[1] = {5}; /* an empty input becomes all padding */
        pad_once(&rng, all_dtypes[d], 1, one, &q, big);
        int64_t vec[1] = {3}, none[1] = {0}; /* everything cropped away */
        tf_pad_params r = {sizeof r, 0, pad_value(&rng, all_dtypes[d]), {-9}, {2}, 0};
        pad_once(&rng, all_dtypes[d], 1, vec, &r, none);
        int64_t sparse[1] = {11}; /* interior padding only: out = x0 v v x1 v v x2 ... */
        tf_pad_params s = {sizeof s, 0, pad_value(&rng, all_dtypes[d]), {0}, {2}, 0};
        int64_t four[1] = {4};
        pad_once(&rng, all_dtypes[d], 1, four, &s, sparse);
    }
}

/* ===================================================================== */
/* CONCATENATE                                                            */
/* ===================================================================== */

static void concat_once(tfr_rng *rng, tf_dtype dtype, size_t rank, const int64_t *shape,
                        uint32_t axis, size_t n_in, const int64_t *parts)
{
    tfr_input in[4];
    tf_tensor *args[4];
    int64_t oshape[TF_MAX_RANK], pshape[TF_MAX_RANK], j[TF_MAX_RANK] = {0};
    char what[200], s[96];
    tfr_gen g = any_values();
    memcpy(oshape, shape, rank * sizeof *shape);
    oshape[axis] = 0;
    for (size_t k = 0; k < n_in; k++) {
        memcpy(pshape, shape, rank * sizeof *shape);
        pshape[axis] = parts[k];
        oshape[axis] += parts[k];
        tfr_input_make(&in[k], rng, cpu_engine, dtype, rank, pshape, tfr_random_layout(rng), &g);
        args[k] = in[k].t;
    }
    snprintf(what, sizeof what, "concatenate %zu %s inputs into %s along axis %u", n_in,
             tf_dtype_name(dtype), tfr_shape_str(rank, oshape, s, sizeof s), axis);
    tf_concatenate_params p = {sizeof p, axis};
    tf_tensor *out = tfr_output(cpu_engine, dtype, rank, oshape);
    tfr_exec_ok(what, cpu_engine, TF_PRIM_CONCATENATE, &p, n_in, args, 1, &out);
    size_t n_out = tfr_numel(rank, oshape);
    tf_scalar *got = tfr_read(out), *want = tfr_vals_alloc(n_out);
    for (size_t i = 0; i < n_out; i++, tfr_index_next(rank, oshape, j)) {
        int64_t idx[TF_MAX_RANK], pos = j[axis];
        size_t k = 0;
        while (pos >= parts[k])
            pos -= parts[k++];
        memcpy(idx, j, rank * sizeof *j);
        idx[axis] = pos;
        memcpy(pshape, shape, rank * sizeof *shape);
        pshape[axis] = parts[k];
        want[i] = in[k].vals[tfr_index_linear(rank, pshape, idx)];
    }
    tfr_check(what, dtype, n_out, got, want, NULL, (tfr_tol){0, 0});
    free(got);
    free(want);
    tf_tensor_release(out);
    for (size_t k = 0; k < n_in; k++)
        tfr_input_free(&in[k]);
}

static void test_concatenate(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 405);
    for (size_t d = 0; d < 5; d++) {
        for (int t = 0; t < 40; t++) {
            int64_t shape[TF_MAX_RANK], parts[4];
            size_t rank = 1 + (size_t)tfr_rng_int(&rng, 0, 3);
            tfr_random_shape(&rng, rank, 4, 5, shape);
            uint32_t axis = (uint32_t)tfr_rng_int(&rng, 0, (int64_t)rank - 1);
            size_t n_in = (size_t)tfr_rng_int(&rng, 1, 4);
            for (size_t k = 0; k < n_in; k++)
                parts[k] = tfr_rng_chance(&rng, 20) ? 0 : tfr_rng_int(&rng, 1, 4);
            concat_once(&rng, all_dtypes[d], rank, shape, axis, n_in, parts);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_copy_dense_out), cmocka_unit_test(test_copy_strided_out),
        cmocka_unit_test(test_pad_random),     cmocka_unit_test(test_pad_edges),
        cmocka_unit_test(test_concatenate),
    };
    return CPU_RUN_GROUPS("cpu layout", tests);
}
