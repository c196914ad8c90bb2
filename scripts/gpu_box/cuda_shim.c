/* cuda_shim.c: an LD_PRELOAD recorder of libcuda calls, writing the "LD_PRELOAD hook" layout of
 * ../shared/FORMATS.md ("Driver-call traces"): one JSON object per line,
 *
 *   {"ts":12345.678901234,"op_id":4242000000001,"pid":4242,"tid":4250,"depth":0,"phase":"B","name":"cuLaunchKernel"}
 *   {"ts":12345.678905678,"op_id":4242000000001,"pid":4242,"tid":4250,"depth":0,"phase":"E","name":"cuLaunchKernel","result_code":0}
 *
 * ts: seconds on CLOCK_MONOTONIC; op_id pairs a begin with its end (the process id times 10^9
 * plus a per-process counter, so the lines of several processes can share one file); depth: the
 * calls of this thread still open around this one; name: the exact function called, versioned
 * (cuMemAlloc_v2, cuLaunchKernel_ptsz ...).  End lines add result_code (the CUresult) and, for a
 * successful allocation, result_ptr ("0x..."): the device pointer it returned.  Lines starting
 * with '#' (a banner per process, a note when the cap is reached, a footer with counts at exit)
 * are not JSON: readers skip them.
 *
 * How calls are caught.  A program reaches libcuda in three ways, and each is covered:
 *  1. it links libcuda and calls cuLaunchKernel ...: the exported functions below interpose;
 *  2. it dlopen()s libcuda and dlsym()s a function from that handle (the CUDA runtime does this
 *     for cuGetProcAddress_v2, Triton for its functions): a handle lookup ignores LD_PRELOAD, so
 *     dlsym itself is wrapped and answers a wrapped name with the wrapper;
 *  3. it asks cuGetProcAddress / cuGetProcAddress_v2 for entry points (the CUDA runtime gets
 *     every driver function this way, cudaGetDriverEntryPoint too: the CUDA 13.0 runtime asks
 *     for each name with the version that introduced it, "cuLaunchKernel" at 4000 and, with the
 *     per-thread flag, at 7000, "cuCtxSynchronize" at 2000 and at 13000 ...): the wrapper calls
 *     the real one and, when the answer is a function listed below, hands back the wrapper
 *     instead.  The answer is identified by its address (the real function of each versioned
 *     name, looked up in libcuda), else by the name asked, the version and the per-thread flag,
 *     but only for versions up to SHIM_TABLE_CUDA_VERSION: a newer version may answer with an
 *     ABI the table does not know (CUDA 13.0 added cuCtxSynchronize_v2(CUcontext) that way), and
 *     a wrapper of the wrong ABI would corrupt the call.
 *
 * Environment: CUDA_SHIM_OUT (the file, appended to; default cuda_trace.jsonl; "%p" is replaced
 * by the process id), CUDA_SHIM_MAX_MB (stop writing call lines in a process after this many MB,
 * default 64; the calls themselves always go on).  Thread-safe: each line is one write(2) to an
 * O_APPEND descriptor; counters are atomic.
 *
 * Limits: dlsym(RTLD_NEXT, name) asked by another library is answered as if the shim had asked
 * (the definition after the shim, not after the caller): right for everything but another
 * interposer of the same name.  Functions not listed below are not recorded.
 *
 * Build: cc -O2 -fPIC -shared -o libcuda_shim.so cuda_shim.c -ldl -lpthread [-I$CUDA_HOME/include]
 * With cuda.h on the include path, every wrapper is checked against the real declaration
 * (a mismatch is a compile error); without it the few types needed are declared here.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__has_include) && !defined(CUDA_SHIM_NO_CUDA_H)
#if __has_include(<cuda.h>)
#include <cuda.h>
#define SHIM_HAVE_CUDA_H 1
#endif
#endif

#ifdef SHIM_HAVE_CUDA_H
#undef cuGetProcAddress /* cuda.h maps it to cuGetProcAddress_v2; both are defined below */
#else
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long cuuint64_t;
typedef int CUdriverProcAddressQueryResult;
typedef struct CUctx_st *CUcontext;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUlaunchConfig_st CUlaunchConfig;
#define CUDAAPI
#endif

#define SHIM_VERSION "1"
#define SHIM_NOT_FOUND 500 /* CUDA_ERROR_NOT_FOUND */
#define SHIM_PER_THREAD_FLAG 2ULL /* CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM */
/* the table below lists every ABI of its functions up to this CUDA version (cuda.h of 13.0) */
#define SHIM_TABLE_CUDA_VERSION 13000

/* which default-stream flavour an entry is: any (no per-thread variant), legacy or per-thread */
enum { PT_ANY = 0, PT_LEGACY = 1, PT_PER_THREAD = 2 };

/* ---- the functions recorded ---------------------------------------------------------------
 * PLAIN(name, base asked of cuGetProcAddress, min version of this ABI, pt, (params), (args))
 * ALLOC(...) the same for an allocation whose first parameter `dptr` receives the pointer. */
#define STREAM_FUNCS(P, Q)                                                                                  \
    P(cuLaunchKernel, cuLaunchKernel_ptsz, "cuLaunchKernel", 0,                                            \
      (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,                  \
       unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, \
       CUstream hStream, void **kernelParams, void **extra),                                                 \
      (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,          \
       kernelParams, extra))                                                                                  \
    P(cuLaunchKernelEx, cuLaunchKernelEx_ptsz, "cuLaunchKernelEx", 11060,                                  \
      (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra),                     \
      (config, f, kernelParams, extra))                                                                      \
    P(cuLaunchCooperativeKernel, cuLaunchCooperativeKernel_ptsz, "cuLaunchCooperativeKernel", 9000,        \
      (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,                  \
       unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, \
       CUstream hStream, void **kernelParams),                                                               \
      (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,          \
       kernelParams))                                                                                         \
    P(cuGraphLaunch, cuGraphLaunch_ptsz, "cuGraphLaunch", 10000, (CUgraphExec hGraphExec, CUstream hStream), \
      (hGraphExec, hStream))                                                                                 \
    P(cuMemcpyAsync, cuMemcpyAsync_ptsz, "cuMemcpyAsync", 4000,                                            \
      (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream), (dst, src, ByteCount, hStream)) \
    P(cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_ptsz, "cuMemcpyHtoDAsync", 3020,                         \
      (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream),                    \
      (dstDevice, srcHost, ByteCount, hStream))                                                              \
    P(cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_ptsz, "cuMemcpyDtoHAsync", 3020,                         \
      (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream),                          \
      (dstHost, srcDevice, ByteCount, hStream))                                                              \
    P(cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2_ptsz, "cuMemcpyDtoDAsync", 3020,                         \
      (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream),                  \
      (dstDevice, srcDevice, ByteCount, hStream))                                                            \
    P(cuMemsetD8Async, cuMemsetD8Async_ptsz, "cuMemsetD8Async", 3020,                                      \
      (CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream), (dstDevice, uc, N, hStream))   \
    P(cuMemsetD32Async, cuMemsetD32Async_ptsz, "cuMemsetD32Async", 3020,                                  \
      (CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream), (dstDevice, ui, N, hStream))    \
    P(cuStreamSynchronize, cuStreamSynchronize_ptsz, "cuStreamSynchronize", 0, (CUstream hStream), (hStream)) \
    Q(cuMemAllocAsync, cuMemAllocAsync_ptsz, "cuMemAllocAsync", 11020,                                     \
      (CUdeviceptr * dptr, size_t bytesize, CUstream hStream), (dptr, bytesize, hStream))                   \
    P(cuMemFreeAsync, cuMemFreeAsync_ptsz, "cuMemFreeAsync", 11020, (CUdeviceptr dptr, CUstream hStream),  \
      (dptr, hStream))                                                                                       \
    /* synchronous copies: per-thread variants end in _ptds */                                             \
    P(cuMemcpy, cuMemcpy_ptds, "cuMemcpy", 4000, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount),     \
      (dst, src, ByteCount))                                                                                 \
    P(cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds, "cuMemcpyHtoD", 3020,                                         \
      (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount), (dstDevice, srcHost, ByteCount))      \
    P(cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds, "cuMemcpyDtoH", 3020,                                         \
      (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount), (dstHost, srcDevice, ByteCount))            \
    P(cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds, "cuMemcpyDtoD", 3020,                                         \
      (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount), (dstDevice, srcDevice, ByteCount))

#define OTHER_FUNCS(P, Q)                                                                                   \
    P(cuInit, "cuInit", 0, PT_ANY, (unsigned int Flags), (Flags))                                          \
    P(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 7000, PT_ANY, (CUcontext * pctx, CUdevice dev), \
      (pctx, dev))                                                                                           \
    Q(cuMemAlloc_v2, "cuMemAlloc", 3020, PT_ANY, (CUdeviceptr * dptr, size_t bytesize), (dptr, bytesize))  \
    P(cuMemFree_v2, "cuMemFree", 3020, PT_ANY, (CUdeviceptr dptr), (dptr))                                 \
    P(cuCtxSynchronize, "cuCtxSynchronize", 0, PT_ANY, (void), ())                                         \
    P(cuCtxSynchronize_v2, "cuCtxSynchronize", 13000, PT_ANY, (CUcontext ctx), (ctx))                      \
    P(cuEventSynchronize, "cuEventSynchronize", 0, PT_ANY, (CUevent hEvent), (hEvent))

/* ---- the table ------------------------------------------------------------------------------ */
#define ENUM_STREAM(a, b, ...) IDX_##a, IDX_##b,
#define ENUM_OTHER(a, ...) IDX_##a,
enum {
    STREAM_FUNCS(ENUM_STREAM, ENUM_STREAM) OTHER_FUNCS(ENUM_OTHER, ENUM_OTHER) IDX_cuGetProcAddress,
    IDX_cuGetProcAddress_v2,
    N_FUNCS
};

/* prototypes of the wrappers, so that the table can take their addresses */
#define PROTO_STREAM(a, b, base, ver, params, args) CUresult CUDAAPI a params; CUresult CUDAAPI b params;
#define PROTO_OTHER(a, base, ver, pt, params, args) CUresult CUDAAPI a params;
STREAM_FUNCS(PROTO_STREAM, PROTO_STREAM)
OTHER_FUNCS(PROTO_OTHER, PROTO_OTHER)
CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                     CUdriverProcAddressQueryResult *symbolStatus);

struct entry {
    const char *name; /* exported, versioned name: what the lines call it */
    const char *base; /* what a program asks cuGetProcAddress for */
    int min_version;  /* the first CUDA version (1000 * major + 10 * minor) of this ABI */
    int pt;           /* PT_ANY, PT_LEGACY, PT_PER_THREAD */
    void *wrapper;
    void *real;       /* set once, atomically */
    unsigned long calls;
};

#define ROW_STREAM(a, b, base, ver, params, args) \
    {#a, base, ver, PT_LEGACY, (void *)a, NULL, 0}, {#b, base, ver, PT_PER_THREAD, (void *)b, NULL, 0},
#define ROW_OTHER(a, base, ver, pt, params, args) {#a, base, ver, pt, (void *)a, NULL, 0},
static struct entry table[N_FUNCS] = {
    STREAM_FUNCS(ROW_STREAM, ROW_STREAM) OTHER_FUNCS(ROW_OTHER, ROW_OTHER)
    {"cuGetProcAddress", "cuGetProcAddress", 0, PT_ANY, (void *)cuGetProcAddress, NULL, 0},
    {"cuGetProcAddress_v2", "cuGetProcAddress", 12000, PT_ANY, (void *)cuGetProcAddress_v2, NULL, 0},
};

/* ---- state ---------------------------------------------------------------------------------- */
typedef void *(*dlsym_fn)(void *, const char *);
static dlsym_fn real_dlsym_fn;
static pthread_once_t dlsym_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static int out_fd = -1;
static int opened_pid; /* the process that wrote its banner (a forked child writes its own) */
static long long max_bytes = 64LL << 20;
static long long bytes_written;
static unsigned long lines_dropped;
static unsigned long next_op;
static unsigned long gpa_queries, gpa_wrapped, dlsym_wrapped;
static int cap_noted;   /* set once the cap is reached: every later call line is dropped */
static int cur_pid;     /* getpid(), kept (set at load and in a forked child) */
static __thread int tl_depth;
static __thread long tl_tid; /* gettid(), kept per thread (0: not read yet) */

static void init_dlsym(void) {
    real_dlsym_fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!real_dlsym_fn) real_dlsym_fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
}

static void *real_dlsym(void *handle, const char *name) {
    pthread_once(&dlsym_once, init_dlsym);
    return real_dlsym_fn ? real_dlsym_fn(handle, name) : NULL;
}

static int index_of_name(const char *name) {
    for (int i = 0; i < N_FUNCS; i++)
        if (strcmp(table[i].name, name) == 0) return i;
    return -1;
}

static void *libcuda_handle(void) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h) h = dlopen("libcuda.so", RTLD_NOW | RTLD_NOLOAD);
    return h;
}

static void set_real(int i, void *p) {
    void *expected = NULL;
    if (p && p != table[i].wrapper)
        __atomic_compare_exchange_n(&table[i].real, &expected, p, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/* the real function of entry i: set by dlsym or cuGetProcAddress, else looked up now */
static void *real_of(int i) {
    void *p = __atomic_load_n(&table[i].real, __ATOMIC_ACQUIRE);
    if (p) return p;
    p = real_dlsym(RTLD_NEXT, table[i].name);
    if (!p) {
        void *h = libcuda_handle();
        if (h) {
            p = real_dlsym(h, table[i].name);
            dlclose(h);
        }
    }
    set_real(i, p);
    return __atomic_load_n(&table[i].real, __ATOMIC_ACQUIRE);
}

static void resolve_all(void) {
    static int done;
    if (__atomic_load_n(&done, __ATOMIC_ACQUIRE)) return;
    void *h = libcuda_handle();
    if (!h) return;
    for (int i = 0; i < N_FUNCS; i++)
        if (!__atomic_load_n(&table[i].real, __ATOMIC_ACQUIRE)) set_real(i, real_dlsym(h, table[i].name));
    dlclose(h);
    __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
}

/* ---- output --------------------------------------------------------------------------------- */
static void raw_write(const char *buf, size_t len) {
    while (len > 0) {
        ssize_t w = write(out_fd, buf, len);
        if (w <= 0) return;
        buf += w;
        len -= (size_t)w;
    }
}

static int my_pid(void) {
    int pid = __atomic_load_n(&cur_pid, __ATOMIC_RELAXED);
    if (!pid) {
        pid = (int)getpid();
        __atomic_store_n(&cur_pid, pid, __ATOMIC_RELAXED);
    }
    return pid;
}

static long my_tid(void) {
    if (!tl_tid) tl_tid = (long)syscall(SYS_gettid);
    return tl_tid;
}

static void open_output(void) {
    int pid = my_pid();
    if (__atomic_load_n(&opened_pid, __ATOMIC_ACQUIRE) == pid) return;
    pthread_mutex_lock(&open_lock);
    if (opened_pid != pid) {
        const char *env = getenv("CUDA_SHIM_MAX_MB");
        if (env && *env) max_bytes = (long long)(atof(env) * 1048576.0);
        if (out_fd < 0) {
            const char *pattern = getenv("CUDA_SHIM_OUT");
            char path[4096];
            size_t k = 0;
            if (!pattern || !*pattern) pattern = "cuda_trace.jsonl";
            for (const char *c = pattern; *c && k + 16 < sizeof path; c++) {
                if (c[0] == '%' && c[1] == 'p') {
                    k += (size_t)snprintf(path + k, sizeof path - k, "%d", pid);
                    c++;
                } else {
                    path[k++] = *c;
                }
            }
            path[k] = 0;
            out_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        }
        if (out_fd >= 0) {
            char banner[256];
            int n = snprintf(banner, sizeof banner,
                             "# cuda_shim %s: pid %d, LD_PRELOAD layout (ts: s on CLOCK_MONOTONIC), "
                             "cap %lld bytes of call lines\n",
                             SHIM_VERSION, pid, max_bytes);
            raw_write(banner, (size_t)n);
        }
        __atomic_store_n(&opened_pid, pid, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&open_lock);
}

static void emit(const char *buf, int len) {
    open_output();
    if (out_fd < 0 || len <= 0) return;
    if (__atomic_load_n(&cap_noted, __ATOMIC_ACQUIRE)) {
        __atomic_fetch_add(&lines_dropped, 1, __ATOMIC_RELAXED);
        return;
    }
    long long before = __atomic_fetch_add(&bytes_written, len, __ATOMIC_RELAXED);
    if (before + len > max_bytes) {
        __atomic_fetch_sub(&bytes_written, len, __ATOMIC_RELAXED);
        __atomic_fetch_add(&lines_dropped, 1, __ATOMIC_RELAXED);
        if (!__atomic_exchange_n(&cap_noted, 1, __ATOMIC_ACQ_REL)) {
            char note[160];
            int n = snprintf(note, sizeof note, "# cuda_shim: pid %d: cap of %lld bytes reached, call lines stop here\n",
                             my_pid(), max_bytes);
            raw_write(note, (size_t)n);
        }
        return;
    }
    raw_write(buf, (size_t)len);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static long long trace_begin(int i) {
    int pid = my_pid();
    long long op = (long long)pid * 1000000000LL + (long long)__atomic_add_fetch(&next_op, 1, __ATOMIC_RELAXED);
    int depth = tl_depth++;
    char buf[320];
    int n = snprintf(buf, sizeof buf, "{\"ts\":%.9f,\"op_id\":%lld,\"pid\":%d,\"tid\":%ld,\"depth\":%d,\"phase\":\"B\","
                     "\"name\":\"%s\"}\n",
                     now_s(), op, pid, my_tid(), depth, table[i].name);
    __atomic_fetch_add(&table[i].calls, 1, __ATOMIC_RELAXED);
    emit(buf, n);
    return op;
}

static void trace_end(int i, long long op, int result, int has_ptr, unsigned long long ptr) {
    int depth = --tl_depth;
    char buf[360];
    int n = snprintf(buf, sizeof buf, "{\"ts\":%.9f,\"op_id\":%lld,\"pid\":%d,\"tid\":%ld,\"depth\":%d,\"phase\":\"E\","
                     "\"name\":\"%s\",\"result_code\":%d",
                     now_s(), op, my_pid(), my_tid(), depth, table[i].name, result);
    if (has_ptr && result == 0) n += snprintf(buf + n, sizeof buf - (size_t)n, ",\"result_ptr\":\"0x%llx\"", ptr);
    n += snprintf(buf + n, sizeof buf - (size_t)n, "}\n");
    emit(buf, n);
}

/* ---- the wrappers --------------------------------------------------------------------------- */
#define WRAP(name, params, args, has_ptr, ptr_expr)              \
    CUresult CUDAAPI name params {                               \
        typedef CUresult(CUDAAPI * fn_t) params;                 \
        fn_t real = (fn_t)real_of(IDX_##name);                   \
        if (!real) return (CUresult)SHIM_NOT_FOUND;              \
        long long op = trace_begin(IDX_##name);                  \
        CUresult r = real args;                                  \
        trace_end(IDX_##name, op, (int)r, has_ptr, (ptr_expr)); \
        return r;                                                \
    }
#define NO_PTR 0ULL
#define DPTR_OUT ((r == 0 && dptr) ? (unsigned long long)*dptr : 0ULL)
#define WRAP_STREAM_P(a, b, base, ver, params, args) WRAP(a, params, args, 0, NO_PTR) WRAP(b, params, args, 0, NO_PTR)
#define WRAP_STREAM_Q(a, b, base, ver, params, args) \
    WRAP(a, params, args, 1, DPTR_OUT) WRAP(b, params, args, 1, DPTR_OUT)
#define WRAP_OTHER_P(a, base, ver, pt, params, args) WRAP(a, params, args, 0, NO_PTR)
#define WRAP_OTHER_Q(a, base, ver, pt, params, args) WRAP(a, params, args, 1, DPTR_OUT)
STREAM_FUNCS(WRAP_STREAM_P, WRAP_STREAM_Q)
OTHER_FUNCS(WRAP_OTHER_P, WRAP_OTHER_Q)

/* the entry that stands for what cuGetProcAddress handed out for `symbol` (-1: none) */
static int match_answer(const char *symbol, void *answer, int version, cuuint64_t flags) {
    resolve_all();
    for (int i = 0; i < N_FUNCS; i++)
        if (__atomic_load_n(&table[i].real, __ATOMIC_ACQUIRE) == answer) return i;
    if (version > SHIM_TABLE_CUDA_VERSION) return -1; /* an ABI the table does not know may answer */
    int per_thread = (flags & SHIM_PER_THREAD_FLAG) != 0, best = -1;
    for (int i = 0; i < N_FUNCS; i++) {
        const struct entry *e = &table[i];
        if (strcmp(e->base, symbol) != 0 || e->min_version > version) continue;
        if (e->pt != PT_ANY && (e->pt == PT_PER_THREAD) != per_thread) continue;
        if (best < 0 || e->min_version > table[best].min_version) best = i;
    }
    return best;
}

static void swap_answer(const char *symbol, void **pfn, int version, cuuint64_t flags) {
    __atomic_fetch_add(&gpa_queries, 1, __ATOMIC_RELAXED);
    if (!symbol || !pfn || !*pfn || strncmp(symbol, "cu", 2) != 0) return;
    int i = match_answer(symbol, *pfn, version, flags);
    if (i < 0) return;
    set_real(i, *pfn);
    if (!__atomic_load_n(&table[i].real, __ATOMIC_ACQUIRE)) return;
    *pfn = table[i].wrapper;
    __atomic_fetch_add(&gpa_wrapped, 1, __ATOMIC_RELAXED);
}

CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                     CUdriverProcAddressQueryResult *symbolStatus) {
    typedef CUresult(CUDAAPI * fn_t)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
    fn_t real = (fn_t)real_of(IDX_cuGetProcAddress_v2);
    if (!real) return (CUresult)SHIM_NOT_FOUND;
    long long op = trace_begin(IDX_cuGetProcAddress_v2);
    CUresult r = real(symbol, pfn, cudaVersion, flags, symbolStatus);
    if (r == 0) swap_answer(symbol, pfn, cudaVersion, flags);
    trace_end(IDX_cuGetProcAddress_v2, op, (int)r, 0, 0);
    return r;
}

CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags) {
    typedef CUresult(CUDAAPI * fn_t)(const char *, void **, int, cuuint64_t);
    fn_t real = (fn_t)real_of(IDX_cuGetProcAddress);
    if (!real) return (CUresult)SHIM_NOT_FOUND;
    long long op = trace_begin(IDX_cuGetProcAddress);
    CUresult r = real(symbol, pfn, cudaVersion, flags);
    if (r == 0) swap_answer(symbol, pfn, cudaVersion, flags);
    trace_end(IDX_cuGetProcAddress, op, (int)r, 0, 0);
    return r;
}

/* dlsym: a recorded name looked up in any handle (libcuda's above all) gets the wrapper */
void *dlsym(void *handle, const char *name) {
    void *p = real_dlsym(handle, name);
    if (!p || name[0] != 'c' || name[1] != 'u') return p; /* p set: name was a string */
    int i = index_of_name(name);
    if (i < 0 || p == table[i].wrapper) return p;
    set_real(i, p);
    __atomic_fetch_add(&dlsym_wrapped, 1, __ATOMIC_RELAXED);
    return table[i].wrapper;
}

/* ---- fork and exit -------------------------------------------------------------------------- */
static void after_fork_child(void) {
    /* the child keeps the descriptor (O_APPEND) and starts its own counts and banner */
    opened_pid = 0;
    cur_pid = (int)getpid();
    tl_tid = 0;
    bytes_written = 0;
    lines_dropped = 0;
    next_op = 0;
    cap_noted = 0;
    gpa_queries = gpa_wrapped = dlsym_wrapped = 0;
    for (int i = 0; i < N_FUNCS; i++) table[i].calls = 0;
}

__attribute__((constructor)) static void shim_init(void) {
    cur_pid = (int)getpid();
    pthread_atfork(NULL, NULL, after_fork_child);
}

__attribute__((destructor)) static void shim_fini(void) {
    if (out_fd < 0 || opened_pid != my_pid()) return;
    char buf[4096];
    int n = snprintf(buf, sizeof buf,
                     "# cuda_shim: pid %d: %lld bytes of call lines, %lu lines dropped past the cap; cuGetProcAddress "
                     "answers %lu, wrapped %lu; dlsym answers wrapped %lu; calls:",
                     my_pid(), bytes_written, lines_dropped, gpa_queries, gpa_wrapped, dlsym_wrapped);
    for (int i = 0; i < N_FUNCS && n < (int)sizeof buf - 80; i++)
        if (table[i].calls) n += snprintf(buf + n, sizeof buf - (size_t)n, " %s=%lu", table[i].name, table[i].calls);
    n += snprintf(buf + n, sizeof buf - (size_t)n, "\n");
    raw_write(buf, (size_t)n);
}
