/*
 * checkpoint_layout.c - reordering tensors between tenferro's column-major
 * memory and safetensors' row-major bytes (checkpoint.h "Layout").
 *
 * Element (i0, ..., ik) of shape [d0, ..., dk] lives at sum i_m cs_m in
 * column-major order (cs_m = d0 ... d_{m-1}) and at sum i_m rs_m in row-major
 * order (rs_m = d_{m+1} ... dk). The copy walks the middle axes 1 .. k-1 one
 * index at a time and, for each, moves a 2-D block between axis 0 (stride 1
 * in column-major memory) and axis k (stride 1 in row-major memory) in tiles
 * (BLOCK_COPY_), so that both sides are read and written whole cache lines
 * at a time. Rows [i0, i1) of axis 0 at a time: axis 0 is the outermost axis
 * of row-major order, so a range of its rows is one contiguous chunk of the
 * file.
 */
#include <string.h>

#include "checkpoint_internal.h"

int ck_layout_trivial(size_t rank, const int64_t *shape)
{
    size_t big = 0;
    for (size_t m = 0; m < rank; m++)
        big += shape[m] > 1;
    return big <= 1;
}

/* One 2-D block: rows [i0, i1) of axis 0 by the whole last axis (extent c). */
typedef struct block {
    char *cm, *rm;
    int64_t i0, i1, c;
    int64_t cm_last; /* column-major stride of the last axis */
    int64_t rm_row;  /* row-major stride of axis 0 */
    int64_t cm_base, rm_base;
} block;

/*
 * One tile of TI rows of axis 0 by TJ elements of the last axis goes through
 * a buffer: the side that is strided in that direction is read (or written)
 * one whole run of TI (or TJ) contiguous elements at a time, so each cache
 * line is used whole at once; walking the tile element by element instead
 * thrashes the cache on the power-of-two strides of typical shapes (3 to 4
 * times slower here). TI x element size is 256 bytes, TJ x element size 128.
 */
#define BLOCK_COPY_(T, TI, TJ)                                                           \
    static void block_##T(const block *b, int to_rm)                                    \
    {                                                                                   \
        T *cm = (T *)(void *)b->cm + b->cm_base, *rm = (T *)(void *)b->rm + b->rm_base; \
        T tmp[TI][TJ];                                                                  \
        for (int64_t ib = b->i0; ib < b->i1; ib += TI) {                                \
            int64_t ni = ib + TI < b->i1 ? TI : b->i1 - ib;                             \
            for (int64_t jb = 0; jb < b->c; jb += TJ) {                                 \
                int64_t nj = jb + TJ < b->c ? TJ : b->c - jb;                           \
                T *c0 = cm + jb * b->cm_last + ib, *r0 = rm + (ib - b->i0) * b->rm_row + jb; \
                if (to_rm) {                                                            \
                    for (int64_t j = 0; j < nj; j++)                                    \
                        for (int64_t i = 0; i < ni; i++)                                \
                            tmp[i][j] = c0[j * b->cm_last + i];                         \
                    for (int64_t i = 0; i < ni; i++)                                    \
                        for (int64_t j = 0; j < nj; j++)                                \
                            r0[i * b->rm_row + j] = tmp[i][j];                          \
                } else {                                                                \
                    for (int64_t i = 0; i < ni; i++)                                    \
                        for (int64_t j = 0; j < nj; j++)                                \
                            tmp[i][j] = r0[i * b->rm_row + j];                          \
                    for (int64_t j = 0; j < nj; j++)                                    \
                        for (int64_t i = 0; i < ni; i++)                                \
                            c0[j * b->cm_last + i] = tmp[i][j];                         \
                }                                                                       \
            }                                                                           \
        }                                                                               \
    }
BLOCK_COPY_(uint8_t, 256, 128)
BLOCK_COPY_(uint32_t, 64, 32)
BLOCK_COPY_(uint64_t, 32, 16)

static void block_copy(const block *b, size_t esize, int to_rm)
{
    if (esize == 8)
        block_uint64_t(b, to_rm);
    else if (esize == 4)
        block_uint32_t(b, to_rm);
    else
        block_uint8_t(b, to_rm);
}

void ck_layout_rows(void *cm, void *rm, size_t rank, const int64_t *shape, size_t esize,
                    int64_t i0, int64_t i1, int to_rm)
{
    int64_t cs[TF_MAX_RANK], rs[TF_MAX_RANK];
    cs[0] = 1;
    for (size_t m = 1; m < rank; m++)
        cs[m] = cs[m - 1] * shape[m - 1];
    rs[rank - 1] = 1;
    for (size_t m = rank - 1; m > 0; m--)
        rs[m - 1] = rs[m] * shape[m];
    if (i0 >= i1 || cs[rank - 1] * shape[rank - 1] == 0)
        return;
    if (rank == 1) {
        memcpy(to_rm ? rm : (char *)cm + i0 * (int64_t)esize,
               to_rm ? (char *)cm + i0 * (int64_t)esize : rm, (size_t)(i1 - i0) * esize);
        return;
    }
    block b = {cm, rm, i0, i1, shape[rank - 1], cs[rank - 1], rs[0], 0, 0};
    int64_t idx[TF_MAX_RANK] = {0}; /* the middle axes' odometer, last middle axis fastest */
    for (;;) {
        b.cm_base = b.rm_base = 0;
        for (size_t m = 1; m + 1 < rank; m++) {
            b.cm_base += idx[m] * cs[m];
            b.rm_base += idx[m] * rs[m];
        }
        block_copy(&b, esize, to_rm);
        size_t m = rank - 1;
        while (m > 1 && ++idx[m - 1] == shape[m - 1])
            idx[--m] = 0;
        if (m <= 1)
            return;
    }
}
