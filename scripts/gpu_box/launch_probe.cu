// launch_probe.cu: the smallest CUDA program that allocates, copies, launches and synchronizes, to
// see under the LD_PRELOAD shim (cuda_shim.c) which libcuda calls the CUDA runtime makes for each
// runtime call, before the PyTorch run (scripts/gpu_box.sh, step driver).  Prints "launch_probe: ok"
// and the runtime and driver versions, or the first error.
// Build: nvcc -O2 -o launch_probe launch_probe.cu
#include <cstdio>
#include <cuda_runtime.h>

__global__ void scale(float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}

#define CHECK(call)                                                                          \
    do {                                                                                     \
        cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess) {                                                             \
            std::printf("launch_probe: %s failed: %s\n", #call, cudaGetErrorString(e_));    \
            return 1;                                                                        \
        }                                                                                    \
    } while (0)

int main() {
    const int n = 1 << 20, launches = 10;
    int runtime = 0, driver = 0;
    CHECK(cudaRuntimeGetVersion(&runtime));
    CHECK(cudaDriverGetVersion(&driver));
    static float host[1 << 20];
    for (int i = 0; i < n; i++) host[i] = 1.0f;
    float *dev = nullptr;
    cudaStream_t stream;
    cudaEvent_t done;
    CHECK(cudaMalloc(&dev, n * sizeof(float)));
    CHECK(cudaStreamCreate(&stream));
    CHECK(cudaEventCreate(&done));
    CHECK(cudaMemcpyAsync(dev, host, n * sizeof(float), cudaMemcpyHostToDevice, stream));
    for (int k = 0; k < launches; k++) scale<<<(n + 255) / 256, 256, 0, stream>>>(dev, 2.0f, n);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(done, stream));
    CHECK(cudaEventSynchronize(done));
    CHECK(cudaMemcpyAsync(host, dev, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(dev));
    const float want = 1024.0f;  // 2^10
    if (host[0] != want || host[n - 1] != want) {
        std::printf("launch_probe: wrong result %g (want %g)\n", host[0], want);
        return 1;
    }
    std::printf("launch_probe: ok (%d launches; runtime %d, driver %d)\n", launches, runtime, driver);
    return 0;
}
