/* shim_demo.c: calls the stub libcuda (stub_libcuda.c) the three ways a real program reaches libcuda,
 * so that cuda_shim.c can be tested without a GPU; prints the stub's call counts as one JSON object.
 *
 *   direct (linked with -lcuda):      cuInit, cuCtxSynchronize
 *   dlopen + dlsym on the handle:     cuGetProcAddress_v2 (what the CUDA runtime does)
 *   through cuGetProcAddress_v2:      cuLaunchKernel x3 (one with gridDimX 0: error 1), cuLaunchKernel
 *                                     per-thread x1, cuMemAlloc x2, cuMemFree x1, cuMemcpyHtoDAsync
 *                                     per-thread x1, cuGetProcAddress (-> the v2 ABI) x1, through it
 *                                     cuStreamSynchronize per-thread x1 (which calls cuCtxSynchronize
 *                                     inside), cuEventSynchronize x1, an unknown name x1 (error 500),
 *                                     "cuCtxSynchronize" at 13000 (the _v2 ABI, given context 0x1234)
 *                                     x1, cuEventSynchronize asked first at 13010 (a version newer than
 *                                     the shim's table, its address not known yet: not wrapped, so
 *                                     not recorded) x1
 *   threads:                          THREADS threads x LAUNCHES cuLaunchKernel each
 *   `shim_demo fork`:                 also a forked child that makes one cuLaunchKernel and exits
 *                                     (its lines carry its own pid and op_ids; not in the counts)
 *
 * Build: cc -o shim_demo shim_demo.c -L. -lcuda -ldl -lpthread -Wl,-rpath,'$ORIGIN'
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 4
#define LAUNCHES 50

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long cuuint64_t;
typedef CUresult (*gpa_v2_t)(const char *, void **, int, cuuint64_t, int *);
typedef CUresult (*launch_t)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                             void **, void **);
typedef CUresult (*alloc_t)(CUdeviceptr *, size_t);
typedef CUresult (*free_t)(CUdeviceptr);
typedef CUresult (*htod_t)(CUdeviceptr, const void *, size_t, void *);
typedef CUresult (*one_t)(void *);

CUresult cuInit(unsigned int flags);
CUresult cuCtxSynchronize(void);

static launch_t launch;

static void *launcher(void *arg) {
    (void)arg;
    for (int i = 0; i < LAUNCHES; i++) launch(NULL, 4, 1, 1, 128, 1, 1, 0, NULL, NULL, NULL);
    return NULL;
}

static void *get_at(gpa_v2_t gpa, const char *name, int version, cuuint64_t flags) {
    void *fn = NULL;
    int status = -1;
    CUresult r = gpa(name, &fn, version, flags, &status);
    if (r != 0) return NULL;
    return fn;
}

static void *get(gpa_v2_t gpa, const char *name, cuuint64_t flags) { return get_at(gpa, name, 13000, flags); }

int main(int argc, char **argv) {
    cuInit(0);
    cuCtxSynchronize();
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 2;
    }
    gpa_v2_t gpa = (gpa_v2_t)dlsym(h, "cuGetProcAddress_v2");
    launch = (launch_t)get(gpa, "cuLaunchKernel", 0);
    launch_t launch_pt = (launch_t)get(gpa, "cuLaunchKernel", 2);
    alloc_t alloc = (alloc_t)get(gpa, "cuMemAlloc", 0);
    free_t release = (free_t)get(gpa, "cuMemFree", 0);
    htod_t htod_pt = (htod_t)get(gpa, "cuMemcpyHtoDAsync", 2);
    gpa_v2_t gpa2 = (gpa_v2_t)get(gpa, "cuGetProcAddress", 0);
    if (!launch || !launch_pt || !alloc || !release || !htod_pt || !gpa2) {
        fprintf(stderr, "cuGetProcAddress_v2 answered NULL\n");
        return 2;
    }
    one_t stream_sync_pt = (one_t)get(gpa2, "cuStreamSynchronize", 2);
    /* first asked at a version newer than the shim's table: its address is not known yet */
    one_t event_sync_newer = (one_t)get_at(gpa, "cuEventSynchronize", 13010, 0);
    one_t event_sync = (one_t)get(gpa, "cuEventSynchronize", 0);
    void *unknown = get(gpa, "cuNoSuchFunction", 0);
    one_t ctx_sync_v2 = (one_t)get(gpa, "cuCtxSynchronize", 0);

    launch(NULL, 2, 1, 1, 256, 1, 1, 0, NULL, NULL, NULL);
    launch(NULL, 2, 1, 1, 256, 1, 1, 0, NULL, NULL, NULL);
    launch(NULL, 0, 1, 1, 256, 1, 1, 0, NULL, NULL, NULL); /* error 1 */
    launch_pt(NULL, 8, 1, 1, 64, 1, 1, 0, NULL, NULL, NULL);
    CUdeviceptr a = 0, b = 0;
    alloc(&a, 1 << 20);
    alloc(&b, 4096);
    char host[64] = {0};
    htod_pt(a, host, sizeof host, NULL);
    stream_sync_pt(NULL);
    event_sync(NULL);
    ctx_sync_v2((void *)0x1234);
    event_sync_newer(NULL);
    release(b);

    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&th[i], NULL, launcher, NULL);
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    if (argc > 1 && strcmp(argv[1], "fork") == 0) {
        pid_t child = fork();
        if (child == 0) {
            launch(NULL, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
            exit(0); /* exit(), not _exit(): the shim writes its footer */
        }
        waitpid(child, NULL, 0);
    }

    unsigned long (*stub_calls)(const char *) = (unsigned long (*)(const char *))dlsym(h, "stub_calls");
    const char *names[] = {"cuInit", "cuLaunchKernel", "cuLaunchKernel_ptsz", "cuMemAlloc_v2", "cuMemFree_v2",
                           "cuMemcpyHtoDAsync_v2_ptsz", "cuStreamSynchronize_ptsz", "cuCtxSynchronize",
                           "cuCtxSynchronize_v2", "cuEventSynchronize", "cuGetProcAddress_v2"};
    unsigned long (*last_ctx)(void) = (unsigned long (*)(void))dlsym(h, "stub_last_ctx");
    printf("{\"unknown_is_null\":%s,\"last_ctx\":%lu", unknown ? "false" : "true", last_ctx());
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) printf(",\"%s\":%lu", names[i], stub_calls(names[i]));
    printf("}\n");
    return 0;
}
