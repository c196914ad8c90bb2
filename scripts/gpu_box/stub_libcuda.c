/* stub_libcuda.c: a fake libcuda.so.1 for testing cuda_shim.c on a machine without a GPU.
 *
 * It exports a few driver functions with the real signatures (types spelled out, no cuda.h) and a
 * cuGetProcAddress / cuGetProcAddress_v2 that hands them out by name, version and per-thread-stream
 * flag, the way the real driver does.  Each function counts its calls (stub_calls(name) reads the
 * count), so a test can check that the shim forwarded every call.  Particular behaviour a test
 * relies on:
 *   - cuLaunchKernel with gridDimX == 0 returns 1 (CUDA_ERROR_INVALID_VALUE);
 *   - cuMemAlloc_v2 returns 0x7f0000000000 + n * 0x100000 for its n-th call (n from 0);
 *   - cuEventSynchronize is handed out by cuGetProcAddress as an internal function whose
 *     address is not the exported one (the shim must then match the answer by name);
 *   - cuStreamSynchronize_ptsz calls cuCtxSynchronize through dlsym(RTLD_DEFAULT): a nested call;
 *   - "cuCtxSynchronize" asked at version 13000 or later is cuCtxSynchronize_v2(CUcontext), as in
 *     the CUDA 13.0 driver; stub_last_ctx() returns the context it was last given;
 *   - an unknown symbol gets 500 (CUDA_ERROR_NOT_FOUND).
 * Build: cc -fPIC -shared -Wl,-soname,libcuda.so.1 -Wl,-Bsymbolic -o libcuda.so.1 stub_libcuda.c -ldl
 * (-Bsymbolic: the stub's own references, the addresses cuGetProcAddress hands out above all, bind
 * to its own functions, as the real driver's do; without it they would bind to the preloaded
 * shim's wrappers of the same names and the test would not see the real hand-out path)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long cuuint64_t;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUctx_st *CUcontext;

enum { C_INIT, C_LAUNCH, C_LAUNCH_PTSZ, C_ALLOC, C_FREE, C_HTOD_ASYNC, C_HTOD_ASYNC_PTSZ, C_STREAM_SYNC,
       C_STREAM_SYNC_PTSZ, C_CTX_SYNC, C_CTX_SYNC_V2, C_EVENT_SYNC, C_GPA, C_GPA_V2, N_COUNTS };
static const char *count_names[N_COUNTS] = {
    "cuInit", "cuLaunchKernel", "cuLaunchKernel_ptsz", "cuMemAlloc_v2", "cuMemFree_v2", "cuMemcpyHtoDAsync_v2",
    "cuMemcpyHtoDAsync_v2_ptsz", "cuStreamSynchronize", "cuStreamSynchronize_ptsz", "cuCtxSynchronize",
    "cuCtxSynchronize_v2", "cuEventSynchronize", "cuGetProcAddress", "cuGetProcAddress_v2"};
static unsigned long counts[N_COUNTS];
#define COUNT(c) __atomic_fetch_add(&counts[c], 1, __ATOMIC_RELAXED)

unsigned long stub_calls(const char *name) {
    for (int i = 0; i < N_COUNTS; i++)
        if (strcmp(count_names[i], name) == 0) return __atomic_load_n(&counts[i], __ATOMIC_RELAXED);
    return (unsigned long)-1;
}

CUresult cuInit(unsigned int flags) { (void)flags; COUNT(C_INIT); return 0; }

static CUresult launch(unsigned int gx) { return gx == 0 ? 1 : 0; }

CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                        unsigned int by, unsigned int bz, unsigned int smem, CUstream s, void **params,
                        void **extra) {
    (void)f; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)smem; (void)s; (void)params; (void)extra;
    COUNT(C_LAUNCH);
    return launch(gx);
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                             unsigned int by, unsigned int bz, unsigned int smem, CUstream s, void **params,
                             void **extra) {
    (void)f; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)smem; (void)s; (void)params; (void)extra;
    COUNT(C_LAUNCH_PTSZ);
    return launch(gx);
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
    unsigned long n = COUNT(C_ALLOC);
    (void)bytesize;
    *dptr = 0x7f0000000000ULL + n * 0x100000ULL;
    return 0;
}

CUresult cuMemFree_v2(CUdeviceptr dptr) { (void)dptr; COUNT(C_FREE); return 0; }

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
    (void)dst; (void)src; (void)n; (void)s; COUNT(C_HTOD_ASYNC); return 0;
}

CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
    (void)dst; (void)src; (void)n; (void)s; COUNT(C_HTOD_ASYNC_PTSZ); return 0;
}

CUresult cuCtxSynchronize(void) { COUNT(C_CTX_SYNC); return 0; }

static CUcontext last_ctx;
unsigned long stub_last_ctx(void) { return (unsigned long)last_ctx; }
CUresult cuCtxSynchronize_v2(CUcontext ctx) { COUNT(C_CTX_SYNC_V2); last_ctx = ctx; return 0; }

CUresult cuStreamSynchronize(CUstream s) { (void)s; COUNT(C_STREAM_SYNC); return 0; }

CUresult cuStreamSynchronize_ptsz(CUstream s) {
    (void)s;
    COUNT(C_STREAM_SYNC_PTSZ);
    CUresult (*ctx_sync)(void) = (CUresult(*)(void))dlsym(RTLD_DEFAULT, "cuCtxSynchronize");
    return ctx_sync ? ctx_sync() : 999;
}

CUresult cuEventSynchronize(CUevent e) { (void)e; COUNT(C_EVENT_SYNC); return 0; }

/* what cuGetProcAddress hands out for cuEventSynchronize: not the exported address */
static CUresult internal_event_sync(CUevent e) { return cuEventSynchronize(e); }

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags, int *status);
CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags);

struct answer { const char *base; int min_version; int per_thread; /* -1 any */ void *fn; };

static CUresult lookup(const char *symbol, void **pfn, int version, cuuint64_t flags) {
    const struct answer answers[] = {
        {"cuInit", 0, -1, (void *)cuInit},
        {"cuLaunchKernel", 0, 0, (void *)cuLaunchKernel},
        {"cuLaunchKernel", 0, 1, (void *)cuLaunchKernel_ptsz},
        {"cuMemAlloc", 3020, -1, (void *)cuMemAlloc_v2},
        {"cuMemFree", 3020, -1, (void *)cuMemFree_v2},
        {"cuMemcpyHtoDAsync", 3020, 0, (void *)cuMemcpyHtoDAsync_v2},
        {"cuMemcpyHtoDAsync", 3020, 1, (void *)cuMemcpyHtoDAsync_v2_ptsz},
        {"cuStreamSynchronize", 0, 0, (void *)cuStreamSynchronize},
        {"cuStreamSynchronize", 0, 1, (void *)cuStreamSynchronize_ptsz},
        {"cuCtxSynchronize", 0, -1, (void *)cuCtxSynchronize},
        {"cuCtxSynchronize", 13000, -1, (void *)cuCtxSynchronize_v2},
        {"cuEventSynchronize", 0, -1, (void *)internal_event_sync},
        {"cuGetProcAddress", 0, -1, (void *)cuGetProcAddress},
        {"cuGetProcAddress", 12000, -1, (void *)cuGetProcAddress_v2},
    };
    int per_thread = (flags & 2ULL) != 0, best = -1;
    for (int i = 0; i < (int)(sizeof answers / sizeof answers[0]); i++) {
        if (strcmp(answers[i].base, symbol) != 0 || answers[i].min_version > version) continue;
        if (answers[i].per_thread >= 0 && answers[i].per_thread != per_thread) continue;
        if (best < 0 || answers[i].min_version > answers[best].min_version) best = i;
    }
    if (best < 0) {
        *pfn = NULL;
        return 500;
    }
    *pfn = answers[best].fn;
    return 0;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags, int *status) {
    COUNT(C_GPA_V2);
    CUresult r = lookup(symbol, pfn, version, flags);
    if (status) *status = r == 0 ? 0 : 1;
    return r;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags) {
    COUNT(C_GPA);
    return lookup(symbol, pfn, version, flags);
}
