/* cudart_probe.c: one call into the real CUDA runtime (libcudart), which loads "libcuda.so.1" and asks
 * it for the driver's entry points.  Run over the stub libcuda with the shim preloaded, it shows
 * on a machine without a GPU that the runtime gets cuGetProcAddress_v2 through the shim's dlsym
 * and every entry point through the shim's cuGetProcAddress (tests/core/test_gpu_box_script.py).
 * The call itself fails (the stub is no driver): it prints the runtime's error.
 * Build: cc -o cudart_probe cudart_probe.c -I$CUDA_HOME/include -L$CUDA_HOME/lib64 -lcudart -Wl,-rpath,$CUDA_HOME/lib64
 */
#include <cuda_runtime.h>
#include <stdio.h>

int main(void) {
    int n = -1;
    cudaError_t r = cudaGetDeviceCount(&n);
    printf("cudaGetDeviceCount: %d (%s), count %d\n", (int)r, cudaGetErrorString(r), n);
    return 0;
}
