/*
 * checkpoint_io.c - writing and reading safetensors files (checkpoint.h).
 *
 * Saving: the header is made from the tensors' dtypes and shapes, then each
 * tensor's bytes are written in row-major order straight from its memory
 * (downloaded first when it is in device memory), reordered through a chunk
 * buffer when its layout needs it, into a temporary file renamed over the
 * destination at the end. Loading: the whole header is read and checked
 * (checkpoint_json.c) before any tensor is made; each tensor's bytes are
 * read into memory of its own (through a chunk buffer when reordered), and
 * the tensor wraps that memory or is uploaded from it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint_internal.h"

/* Bytes moved per write or read of a reordered tensor: small enough to stay in the
   cache between the reordering and the system call that copies it. */
#define CHUNK_BYTES ((size_t)1 << 20)

/* The chunk buffer of one save or load, reused by every tensor (grown when a row is larger). */
typedef struct chunk {
    void *p;
    size_t cap;
} chunk;

static void *chunk_get(chunk *c, size_t bytes, const char *fn)
{
    if (bytes <= c->cap)
        return c->p;
    tt_free(c->p);
    c->cap = 0;
    if (!(c->p = tt_alloc(bytes))) {
        tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "%s: out of memory", fn);
        return NULL;
    }
    c->cap = bytes;
    return c->p;
}

static tf_status io_error(const char *fn, const char *what, const char *path)
{
    return tt_fail(TF_ERR_RUNTIME_STATE, "path", "%s: %s '%s': %s", fn, what, path,
                   strerror(errno));
}

static int write_all(int fd, const void *data, size_t n)
{
    const char *p = data;
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return 0;
        p += k;
        n -= (size_t)k;
    }
    return 1;
}

/* Reads n bytes at offset `at`; returns 0 on error or end of file (errno 0 then). */
static int read_all(int fd, void *data, size_t n, uint64_t at)
{
    char *p = data;
    while (n) {
        ssize_t k = pread(fd, p, n, (off_t)at);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (k == 0)
                errno = 0;
            return 0;
        }
        p += k;
        n -= (size_t)k;
        at += (uint64_t)k;
    }
    return 1;
}

/* Rows of axis 0 per chunk, and the chunk's size in bytes. */
static int64_t chunk_rows(size_t rank, const int64_t *shape, size_t esize, size_t *bytes)
{
    size_t row = esize;
    for (size_t m = 1; m < rank; m++)
        row *= (size_t)shape[m];
    int64_t rows = (int64_t)(CHUNK_BYTES / (row ? row : 1));
    if (rows < 1)
        rows = 1;
    if (rows > shape[0])
        rows = shape[0];
    *bytes = (size_t)rows * row;
    return rows;
}

/* ---- saving ---- */

/* The tensor's elements as dense column-major host bytes: *hold and *tmp are freed by the caller. */
static tf_status host_bytes(tf_tensor *t, const void **bytes, tf_tensor **hold, void **tmp)
{
    tf_status st = TF_OK;
    if (!tf_tensor_is_host_accessible(t)) {
        if ((st = tf_engine_download(tf_tensor_engine(t), t, hold)))
            return tt_fail_core(st, "checkpoint_save: download");
        t = *hold;
    }
    size_t n = tf_tensor_numel(t), count;
    if (tf_tensor_is_contiguous(t)) {
        st = tf_tensor_data(t, tf_tensor_dtype(t), bytes, &count);
        return st ? tt_fail_core(st, "checkpoint_save: reading a tensor") : TF_OK;
    }
    if (!(*tmp = tt_alloc(n * tf_dtype_size(tf_tensor_dtype(t)))))
        return tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "checkpoint_save: out of memory");
    if ((st = tf_tensor_copy_to_host(t, tf_tensor_dtype(t), *tmp, n)))
        return tt_fail_core(st, "checkpoint_save: reading a strided tensor");
    *bytes = *tmp;
    return TF_OK;
}

/* Writes one tensor's bytes in row-major order. */
static tf_status write_tensor(int fd, tf_tensor *t, const char *path, chunk *ch)
{
    const void *bytes = NULL;
    tf_tensor *hold = NULL;
    void *tmp = NULL, *buf = NULL;
    tf_status st = host_bytes(t, &bytes, &hold, &tmp);
    size_t rank = tf_tensor_rank(t), esize = tf_dtype_size(tf_tensor_dtype(t));
    const int64_t *shape = tf_tensor_shape(t);
    size_t nbytes = tf_tensor_numel(t) * esize;
    if (!st && nbytes && ck_layout_trivial(rank, shape)) {
        if (!write_all(fd, bytes, nbytes))
            st = io_error("checkpoint_save", "cannot write", path);
    } else if (!st && nbytes) {
        size_t cb;
        int64_t rows = chunk_rows(rank, shape, esize, &cb);
        if (!(buf = chunk_get(ch, cb, "checkpoint_save")))
            st = TF_ERR_OUT_OF_MEMORY;
        for (int64_t i0 = 0; !st && i0 < shape[0]; i0 += rows) {
            int64_t i1 = i0 + rows < shape[0] ? i0 + rows : shape[0];
            ck_layout_rows((void *)bytes, buf, rank, shape, esize, i0, i1, 1);
            if (!write_all(fd, buf, cb / (size_t)rows * (size_t)(i1 - i0)))
                st = io_error("checkpoint_save", "cannot write", path);
        }
    }
    tt_free(tmp);
    tf_tensor_release(hold);
    return st;
}

/* The header of ck: entries in the order they are written (by element size, largest
   first, then as added). Names and metadata are borrowed from ck. */
static tf_status save_header(const tf_checkpoint *ck, ck_header *h, size_t *order)
{
    memset(h, 0, sizeof *h);
    h->e = tt_calloc(ck->n ? ck->n : 1, sizeof *h->e);
    if (!h->e)
        return tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "checkpoint_save: out of memory");
    size_t k = 0;
    uint64_t at = 0;
    for (size_t size = 8; size >= 1; size /= 2) {
        for (size_t i = 0; i < ck->n; i++) {
            tf_tensor *t = ck->items[i].tensor;
            if (tf_dtype_size(tf_tensor_dtype(t)) != size)
                continue;
            ck_entry *e = &h->e[k];
            order[k++] = i;
            e->name = ck->items[i].name;
            e->dtype = tf_tensor_dtype(t);
            e->rank = tf_tensor_rank(t);
            memcpy(e->shape, tf_tensor_shape(t), e->rank * sizeof e->shape[0]);
            e->begin = at;
            at += (uint64_t)tf_tensor_numel(t) * size;
            e->end = at;
        }
    }
    h->n = k;
    h->meta = ck->meta;
    h->n_meta = ck->n_meta;
    return TF_OK;
}

/* A new temporary file beside path: *fd open for writing, its name in tmp. */
static tf_status open_temporary(const char *path, char *tmp, size_t cap, int *fd)
{
    static atomic_uint counter;
    for (int tries = 0; tries < 100; tries++) {
        unsigned n = atomic_fetch_add(&counter, 1);
        if ((size_t)snprintf(tmp, cap, "%s.tmp%ld.%u", path, (long)getpid(), n) >= cap)
            return tt_fail(TF_ERR_VALIDATION, "path", "checkpoint_save: the path is too long");
        *fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (*fd >= 0)
            return TF_OK;
        if (errno != EEXIST)
            break;
    }
    return io_error("checkpoint_save", "cannot create a file beside", path);
}

static tf_status write_file(const tf_checkpoint *ck, int fd, const char *path)
{
    ck_header h;
    size_t *order = tt_calloc(ck->n ? ck->n : 1, sizeof *order);
    char *json = NULL;
    size_t len = 0;
    tf_status st = order ? save_header(ck, &h, order)
                         : tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "checkpoint_save: out of memory");
    if (!st)
        st = ck_header_write(&h, &json, &len);
    unsigned char head[8];
    for (int b = 0; b < 8; b++)
        head[b] = (unsigned char)((uint64_t)len >> (8 * b));
    if (!st && (!write_all(fd, head, 8) || !write_all(fd, json, len)))
        st = io_error("checkpoint_save", "cannot write", path);
    chunk ch = {NULL, 0};
    for (size_t k = 0; !st && k < h.n; k++)
        st = write_tensor(fd, ck->items[order[k]].tensor, path, &ch);
    tt_free(ch.p);
    if (order)
        tt_free(h.e);
    tt_free(order);
    tt_free(json);
    return st;
}

TF_TRAIN_API tf_status tf_checkpoint_save(const tf_checkpoint *ck, const char *path)
{
    if (!ck || !path || !path[0])
        return tt_fail(TF_ERR_VALIDATION, !ck ? "ck" : "path",
                       "checkpoint_save: NULL or empty argument");
    size_t cap = strlen(path) + 64;
    char *tmp = tt_alloc(cap);
    if (!tmp)
        return tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "checkpoint_save: out of memory");
    int fd = -1;
    tf_status st = open_temporary(path, tmp, cap, &fd);
    if (!st)
        st = write_file(ck, fd, path);
    if (fd >= 0 && close(fd) != 0 && !st)
        st = io_error("checkpoint_save", "cannot write", path);
    if (!st && rename(tmp, path) != 0)
        st = io_error("checkpoint_save", "cannot rename the written file to", path);
    if (st && fd >= 0)
        unlink(tmp);
    tt_free(tmp);
    return st;
}

/* ---- loading ---- */

static void release_buffer(void *user, void *data)
{
    (void)user;
    tt_free(data);
}

static tf_status read_error(const char *path, const char *name)
{
    if (errno == 0)
        return tt_fail(TF_ERR_VALIDATION, "path",
                       "checkpoint_load: '%s': the file ended while reading tensor '%.200s'",
                       path, name);
    return io_error("checkpoint_load", "cannot read", path);
}

/* Reads one entry's bytes (at data + e->begin) into column-major memory of its own. */
static tf_status read_entry(int fd, uint64_t data, const ck_entry *e, const char *path,
                            chunk *ch, void **out)
{
    size_t esize = tf_dtype_size(e->dtype), nbytes = (size_t)(e->end - e->begin);
    char *mem = tt_alloc(nbytes), *buf = NULL;
    if (!mem)
        return tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "checkpoint_load: out of memory");
    tf_status st = TF_OK;
    if (ck_layout_trivial(e->rank, e->shape)) {
        if (!read_all(fd, mem, nbytes, data + e->begin))
            st = read_error(path, e->name);
    } else {
        size_t cb;
        int64_t rows = chunk_rows(e->rank, e->shape, esize, &cb);
        if (!(buf = chunk_get(ch, cb, "checkpoint_load")))
            st = TF_ERR_OUT_OF_MEMORY;
        uint64_t at = data + e->begin;
        for (int64_t i0 = 0; !st && i0 < e->shape[0]; i0 += rows) {
            int64_t i1 = i0 + rows < e->shape[0] ? i0 + rows : e->shape[0];
            size_t n = cb / (size_t)rows * (size_t)(i1 - i0);
            if (!read_all(fd, buf, n, at))
                st = read_error(path, e->name);
            else
                ck_layout_rows(mem, buf, e->rank, e->shape, esize, i0, i1, 0);
            at += n;
        }
    }
    for (size_t i = 0; !st && e->dtype == TF_BOOL && i < nbytes; i++)
        if ((unsigned char)mem[i] > 1)
            st = tt_fail(TF_ERR_VALIDATION, "path",
                         "checkpoint_load: '%s': tensor '%.200s': a BOOL byte is 0x%02x, not 0 "
                         "or 1",
                         path, e->name, (unsigned char)mem[i]);
    if (st)
        tt_free(mem);
    else
        *out = mem;
    return st;
}

/* The tensor of one entry: host memory wrapped, or uploaded to engine. */
static tf_status load_entry(int fd, uint64_t data, const ck_entry *e, const char *path,
                            tf_engine *engine, chunk *ch, tf_tensor **out)
{
    size_t numel = (size_t)(e->end - e->begin) / tf_dtype_size(e->dtype);
    tf_tensor *t = NULL;
    tf_status st;
    if (numel == 0) {
        st = tf_tensor_from_host(e->dtype, e->rank, e->shape, NULL, 0, &t);
    } else {
        void *mem = NULL;
        if ((st = read_entry(fd, data, e, path, ch, &mem)))
            return st;
        st = tf_tensor_wrap_host(e->dtype, e->rank, e->shape, mem, numel, release_buffer, NULL,
                                 &t);
        if (st)
            tt_free(mem);
    }
    if (st)
        return tt_fail_core(st, "checkpoint_load: tensor '%.200s'", e->name);
    if (engine) {
        tf_tensor *dev = NULL;
        st = tf_engine_upload(engine, t, &dev);
        tf_tensor_release(t);
        if (st)
            return tt_fail_core(st, "checkpoint_load: uploading tensor '%.200s'", e->name);
        t = dev;
    }
    *out = t;
    return TF_OK;
}

/* The header's length and bytes: *json (tt_free it) and *data, where the data begins. */
static tf_status read_header(int fd, const char *path, char **json, uint64_t *len, uint64_t *data,
                             uint64_t *data_len)
{
    struct stat sb;
    if (fstat(fd, &sb) != 0)
        return io_error("checkpoint_load", "cannot stat", path);
    if (!S_ISREG(sb.st_mode))
        return tt_fail(TF_ERR_VALIDATION, "path", "checkpoint_load: '%s' is not a regular file",
                       path);
    uint64_t size = (uint64_t)sb.st_size;
    unsigned char head[8];
    if (size < 8 || !read_all(fd, head, 8, 0))
        return size < 8 ? tt_fail(TF_ERR_VALIDATION, "path",
                                  "checkpoint_load: '%s' has %llu bytes, fewer than the 8 of the "
                                  "header length",
                                  path, (unsigned long long)size)
                        : io_error("checkpoint_load", "cannot read", path);
    uint64_t n = 0;
    for (int b = 7; b >= 0; b--)
        n = (n << 8) | head[b];
    if (n < 2 || n > TF_CHECKPOINT_MAX_HEADER || n > size - 8)
        return tt_fail(TF_ERR_VALIDATION, "path",
                       "checkpoint_load: '%s': the header length %llu is %s", path,
                       (unsigned long long)n,
                       n < 2 ? "too small for a JSON object"
                       : n > TF_CHECKPOINT_MAX_HEADER ? "above the limit of 100,000,000 bytes"
                                                      : "past the end of the file");
    char *h = tt_alloc((size_t)n + 1);
    if (!h)
        return tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "checkpoint_load: out of memory");
    if (!read_all(fd, h, (size_t)n, 8)) {
        tt_free(h);
        return errno ? io_error("checkpoint_load", "cannot read", path)
                     : tt_fail(TF_ERR_VALIDATION, "path", "checkpoint_load: '%s' is truncated",
                               path);
    }
    h[n] = '\0';
    *json = h;
    *len = n;
    *data = 8 + n;
    *data_len = size - 8 - n;
    return TF_OK;
}

/* Makes every entry's tensor into ck, taking the names and metadata over from h. */
static tf_status fill(tf_checkpoint *ck, ck_header *h, int fd, uint64_t data, const char *path,
                      tf_engine *engine)
{
    chunk ch = {NULL, 0};
    for (size_t i = 0; i < h->n; i++) {
        tf_tensor *t = NULL;
        tf_status st = load_entry(fd, data, &h->e[i], path, engine, &ch, &t);
        if (!st && (st = ck_push(ck, h->e[i].name, t)))
            tf_tensor_release(t);
        if (st) {
            tt_free(ch.p);
            return st;
        }
        h->e[i].name = NULL;
    }
    tt_free(ch.p);
    ck->meta = h->meta;
    ck->n_meta = ck->cap_meta = h->n_meta;
    h->meta = NULL;
    h->n_meta = 0;
    return TF_OK;
}

TF_TRAIN_API tf_status tf_checkpoint_load(const char *path, tf_engine *engine,
                                          tf_checkpoint **out)
{
    if (!path || !out)
        return tt_fail(TF_ERR_VALIDATION, !path ? "path" : "out", "checkpoint_load: NULL argument");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return io_error("checkpoint_load", "cannot open", path);
    char *json = NULL;
    uint64_t len = 0, data = 0, data_len = 0;
    ck_header h;
    memset(&h, 0, sizeof h);
    tf_checkpoint *ck = NULL;
    tf_status st = read_header(fd, path, &json, &len, &data, &data_len);
    if (!st)
        st = ck_header_parse(path, json, (size_t)len, data_len, &h);
    if (!st)
        st = tf_checkpoint_create(&ck);
    if (!st)
        st = fill(ck, &h, fd, data, path, engine);
    close(fd);
    ck_header_free(&h);
    tt_free(json);
    if (st) {
        tf_checkpoint_destroy(ck);
        return st;
    }
    *out = ck;
    return TF_OK;
}
