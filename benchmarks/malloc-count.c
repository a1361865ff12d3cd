// LD_PRELOAD shim that counts heap allocations, for camrec's per-frame allocation figure.
// Writes "calls bytes large_calls large_bytes" to $MALLOC_COUNT_OUT at exit; "large" is >= 64 KiB,
// the size of anything that could be frame memory.
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static atomic_ullong calls, bytes, large_calls, large_bytes;

static void note(size_t size) {
    atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&bytes, size, memory_order_relaxed);
    if (size >= 65536) {
        atomic_fetch_add_explicit(&large_calls, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&large_bytes, size, memory_order_relaxed);
    }
}

void *malloc(size_t size) { note(size); return __libc_malloc(size); }
void *calloc(size_t n, size_t size) { note(n * size); return __libc_calloc(n, size); }
void *realloc(void *p, size_t size) { note(size); return __libc_realloc(p, size); }
void *memalign(size_t a, size_t size) { note(size); return __libc_memalign(a, size); }
void *aligned_alloc(size_t a, size_t size) { note(size); return __libc_memalign(a, size); }
int posix_memalign(void **out, size_t a, size_t size) {
    note(size);
    void *p = __libc_memalign(a, size);
    if (!p) return 12;
    *out = p;
    return 0;
}

__attribute__((destructor)) static void report(void) {
    const char *path = getenv("MALLOC_COUNT_OUT");
    if (!path) return;
    FILE *f = fopen(path, "w");
    if (!f) return;
    fprintf(f, "%llu %llu %llu %llu\n", (unsigned long long)calls, (unsigned long long)bytes,
            (unsigned long long)large_calls, (unsigned long long)large_bytes);
    fclose(f);
}
