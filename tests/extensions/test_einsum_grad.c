/*
 * test_einsum_grad.c - derivatives of tenferro.einsum against finite
 * differences in f64 (tf_gradcheck.h): reverse and forward mode, and the
 * gradient differentiated again (grad of grad; its forward mode is the
 * Hessian-vector product), on contractions, traces, diagonals, one-operand
 * sums, broadcasting (size 1 and '...'), hyperedges, rank-0 operands, long
 * chains and strided operands. The derivatives are those of the DOT_GENERAL
 * steps, views and sums einsum runs: pairwise einsums again.
 */
#include <math.h>
#include <string.h>

#include <tenferro/einsum.h>

#include "ext_test_util.h"
#include "tf_gradcheck.h"

static int setup(void **state)
{
    if (tft_cpu_setup(state))
        return -1;
    tf_extension_module *m;
    return tf_extension_load("einsum", &m) == TF_OK ? 0 : -1;
}

typedef struct grad_case {
    const char *subscripts;
    uint32_t n;
    gc_spec in[6];
} grad_case;

static tf_status gc_einsum(tf_session *s, tf_eager *const *xs, size_t n, void *user, tf_eager **out)
{
    const grad_case *c = user;
    tf_status st = tf_einsum_install(tf_session_runtime(s), NULL);
    return st ? st : tf_einsum(s, c->subscripts, n, xs, out);
}

#define P GC_PLAIN
static const grad_case k_cases[] = {
    {"ij,jk->ik", 2, {{2, {3, 4}, P}, {2, {4, 2}, P}}},
    {"ij,jk", 2, {{2, {3, 4}, GC_TRANSPOSED}, {2, {4, 2}, GC_REVERSED}}},
    {"ii", 1, {{2, {3, 3}, P}}},
    {"ii->i", 1, {{2, {3, 3}, GC_TRANSPOSED}}},
    {"iij->ij", 1, {{3, {2, 2, 3}, P}}},
    {"ijk->i", 1, {{3, {2, 3, 2}, P}}},
    {"ij->ji", 1, {{2, {2, 3}, P}}},
    {"i,j->ij", 2, {{1, {3}, P}, {1, {2}, GC_SLICED}}},
    {"ij,jk", 2, {{2, {3, 1}, P}, {2, {2, 4}, P}}}, /* j: 1 broadcasts against 2 */
    {"...ij,...jk->...ik", 2, {{3, {2, 2, 3}, P}, {3, {1, 3, 2}, P}}},
    {"ij,ij,ij->i", 3, {{2, {2, 3}, P}, {2, {2, 3}, P}, {2, {2, 3}, P}}},
    {",ij->ij", 2, {{0, {0}, P}, {2, {2, 3}, P}}},
    {"ab,bc,cd,de->ae", 4, {{2, {2, 3}, P}, {2, {3, 2}, P}, {2, {2, 3}, P}, {2, {3, 2}, P}}},
    {"pi,qj,ijkl,rk,sl->pqrs",
     5,
     {{2, {2, 2}, P}, {2, {2, 2}, P}, {4, {2, 2, 2, 2}, P}, {2, {2, 2}, P}, {2, {2, 2}, P}}},
    {"ab,bc,ca->", 3, {{2, {2, 3}, P}, {2, {3, 2}, P}, {2, {2, 2}, P}}},
    {"ijk,jil->kl", 2, {{3, {2, 3, 2}, P}, {3, {3, 2, 2}, P}}},
};
#undef P

static void run_case(const grad_case *c, int second)
{
    unsigned seed = 1234;
    tf_tensor *in[6];
    for (uint32_t i = 0; i < c->n; i++)
        in[i] = gc_random_view(&c->in[i], -1, 1, &seed);
    char what[96];
    snprintf(what, sizeof what, "einsum '%s'%s", c->subscripts, second ? ", second order" : "");
    gc_options o = {.tol = second ? 1e-5 : 1e-6};
    if (second) {
        gc_order2 inner = {gc_einsum, (void *)c};
        gc_check(what, g_cpu, gc_second_order, &inner, in, c->n, &o);
    } else {
        gc_check(what, g_cpu, gc_einsum, (void *)c, in, c->n, &o);
    }
    for (uint32_t i = 0; i < c->n; i++)
        tf_tensor_release(in[i]);
}

static void test_first_order(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++)
        run_case(&k_cases[i], 0);
}

static void test_second_order(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++)
        run_case(&k_cases[i], 1);
}

/* backward through einsum accumulates into the leaves like any op. */
static void test_backward_into_slots(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    TF_ASSERT_OK(tf_einsum_install(e.rt, NULL));
    const int64_t s[2] = {2, 2};
    const double a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8};
    tf_eager *x = ext_tensor(e.rt, 2, s, a, 1), *y = ext_tensor(e.rt, 2, s, b, 1);
    tf_eager *ops[2] = {x, y}, *loss;
    TF_ASSERT_OK(tf_einsum(e.s, "ij,ji->", 2, ops, &loss)); /* trace(x y) */
    TF_ASSERT_OK(tf_eager_backward(loss, g_cpu));
    tf_tensor *gx, *gy;
    TF_ASSERT_OK(tf_eager_grad(x, &gx));
    TF_ASSERT_OK(tf_eager_grad(y, &gy));
    /* d/dx_ij = y_ji, d/dy_ji = x_ij */
    const double wx[4] = {5, 7, 6, 8}, wy[4] = {1, 3, 2, 4};
    tft_expect_values(gx, wx, 4);
    tft_expect_values(gy, wy, 4);
    tf_tensor_release(gx);
    tf_tensor_release(gy);
    tf_eager_release(loss);
    tf_eager_release(x);
    tf_eager_release(y);
    tft_env_end(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_order),
        cmocka_unit_test(test_second_order),
        cmocka_unit_test(test_backward_into_slots),
    };
    return cmocka_run_group_tests(tests, setup, tft_cpu_teardown);
}
