/* nvls.cu: all_reduce inside the NVSwitch (NVLink SHARP), as NCCL's NVLS algorithm does it on
 * one node: rank r owns 1/n of the buffer; for each 16 bytes of it, one multimem.ld_reduce
 * brings back the sum of every GPU's copy and one multimem.st writes that sum to every GPU.
 * Each GPU moves size/n bytes each way, whatever n: what we time is the switch's reduction
 * rate. A barrier through a multicast signal word brackets the kernel.
 * Invariant: only code compiled for sm_90+ issues multimem; nvls_kernel_ready refuses to run
 * a binary that has none. */
#include "coll_impl.cuh"

#ifndef ICSV_CUDA_ARCHS
#define ICSV_CUDA_ARCHS "?"
#endif

struct nvls_args {
    const float *mc_in;
    float *mc_out;
    uint32_t *mc_sig;       /* this CTA's signal word, multicast address */
    const uint32_t *uc_sig; /* the same word in this GPU's own memory */
    int64_t count;
    int rank, nranks;
    uint32_t launch;
};

/* Every GPU's CTA b adds 1 to signal word b on all GPUs at once (multimem.red), then waits
 * until its own copy shows all n arrivals of this round. The fence makes this CTA's multimem
 * stores visible before its arrival; release/acquire order the rest. */
__device__ void nvls_barrier(const nvls_args &a, uint32_t round)
{
    __syncthreads();
#if __CUDA_ARCH__ >= 900
    if (threadIdx.x == 0) {
        const int sig_stride = 128 / sizeof(uint32_t); /* one line per CTA's word */
        uint32_t *mc = a.mc_sig + blockIdx.x * sig_stride;
        const uint32_t *uc = a.uc_sig + blockIdx.x * sig_stride;
        __threadfence_system();
        asm volatile("multimem.red.release.sys.global.add.u32 [%0], %1;" ::"l"(mc), "r"(1u)
                     : "memory");
        const uint32_t want = (uint32_t)a.nranks * round;
        uint64_t start = 0;
        for (uint32_t spins = 0; (int32_t)(ld_acquire_sys32(uc) - want) < 0; spins++) {
            if ((spins & 0xffff) == 0) { /* wrap-safe compare: counts grow by n per round */
                uint64_t now = globaltimer_ns();
                if (start == 0)
                    start = now;
                else if (now - start > ICSV_HANG_NS)
                    hang("nvls barrier", want, ld_acquire_sys32(uc));
            }
        }
    }
#endif
    __syncthreads();
}

#if __CUDA_ARCH__ >= 900
__device__ __forceinline__ float4 ld_reduce4(const float *mc)
{
    float4 v;
    asm volatile("multimem.ld_reduce.relaxed.sys.global.add.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "l"(mc)
                 : "memory");
    return v;
}

__device__ __forceinline__ void st4(float *mc, float4 v)
{
    asm volatile("multimem.st.relaxed.sys.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(mc),
                 "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w)
                 : "memory");
}

__device__ __forceinline__ float ld_reduce1(const float *mc)
{
    float v;
    asm volatile("multimem.ld_reduce.relaxed.sys.global.add.f32 %0, [%1];"
                 : "=f"(v)
                 : "l"(mc)
                 : "memory");
    return v;
}

__device__ __forceinline__ void st1(float *mc, float v)
{
    asm volatile("multimem.st.relaxed.sys.global.f32 [%0], %1;" ::"l"(mc), "f"(v) : "memory");
}
#endif

/* This rank's share, grid-strided over all its CTAs, U reductions in flight per thread. */
template <int U> __device__ void nvls_share(const nvls_args &a)
{
#if __CUDA_ARCH__ >= 900
    const int64_t per = align_up(div_up(a.count, a.nranks), 4);
    const int64_t begin = a.rank * per, len = clamp_len(a.count - begin, per);
    const int64_t npacks = len / 4, nt = (int64_t)gridDim.x * blockDim.x;
    const int64_t tid = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    const float *in = a.mc_in + begin;
    float *out = a.mc_out + begin;
    for (int64_t base = tid; base < npacks; base += nt * U) {
        float4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++)
            if (base + u * nt < npacks)
                v[u] = ld_reduce4(in + 4 * (base + u * nt));
#pragma unroll
        for (int u = 0; u < U; u++)
            if (base + u * nt < npacks)
                st4(out + 4 * (base + u * nt), v[u]);
    }
    for (int64_t i = npacks * 4 + tid; i < len; i += nt)
        st1(out + i, ld_reduce1(in + i));
#endif
}

template <int U> __global__ void __launch_bounds__(ICSV_THREADS) nvls_kernel(nvls_args a)
{
    nvls_barrier(a, 2 * a.launch + 1); /* every GPU's input is in place */
    nvls_share<U>(a);
    nvls_barrier(a, 2 * a.launch + 2); /* every GPU's output is complete */
}

bool nvls_kernel_ready(const icsv_gpus *g)
{
    cudaFuncAttributes attr;
    ICSV_CUDA(cudaSetDevice(g->dev[0]));
    ICSV_CUDA(cudaFuncGetAttributes(&attr, nvls_kernel<4>));
    if (attr.ptxVersion >= 90)
        return true;
    std::fprintf(stderr,
                 "icsim-validate: nvls: skipped: this binary runs compute_%d code on GPU 0, "
                 "which has no multimem instructions; rebuild with an sm_90 or newer "
                 "architecture in ICS_CUDA_ARCHS (now \"%s\")\n",
                 attr.ptxVersion, ICSV_CUDA_ARCHS);
    return false;
}

template <int U> static void launch_u(icsv_nvls *m, const coll_call *call, int ctas, uint32_t n)
{
    const icsv_gpus *g = call->g;
    for (int r = 0; r < g->n; r++) {
        nvls_args a = {(const float *)nvls_multicast(m, r, call->in[r]),
                       (float *)nvls_multicast(m, r, call->out[r]),
                       nvls_signal_mc(m, r),
                       nvls_signal_uc(m, r),
                       (int64_t)call->counts.count,
                       r,
                       g->n,
                       n};
        ICSV_CUDA(cudaSetDevice(g->dev[r]));
        nvls_kernel<U><<<ctas, ICSV_THREADS, 0, g->stream[r]>>>(a);
        ICSV_LAUNCHED();
    }
}

void nvls_launch(icsv_nvls *m, const coll_call *call, const icsv_kernel_params *p,
                 uint32_t launch_index)
{
    switch (p->unroll) {
    case 1:
        launch_u<1>(m, call, p->ctas, launch_index);
        break;
    case 2:
        launch_u<2>(m, call, p->ctas, launch_index);
        break;
    case 8:
        launch_u<8>(m, call, p->ctas, launch_index);
        break;
    default:
        launch_u<4>(m, call, p->ctas, launch_index);
        break;
    }
}
