/* proto.cuh: the device side of NCCL's Simple protocol as our kernels use it: system-scope
 * flags, 16-byte vectorized copy/reduce, and one slice of a send/receive step.
 * Invariant: a slot of a receive FIFO is written only after its consumer released it (head),
 * and read only after its producer published it (tail); both counters only grow. */
#ifndef ICSV_PROTO_CUH
#define ICSV_PROTO_CUH

#include <cstdint>
#include <cuda_bf16.h>

#define ICSV_THREADS 512 /* per CTA, as NCCL's Simple kernels on Hopper */
/* A flag that does not move for this long means a peer never arrived: report, don't hang. */
#define ICSV_HANG_NS (30ull * 1000 * 1000 * 1000)

/* ---- flags ---------------------------------------------------------------------------- */

/* Acquire at system scope: later loads by this thread (and, after a __syncthreads, by the
 * CTA) see everything the peer GPU wrote before its matching release. A relaxed load would let
 * the SM read FIFO data that is older than the flag. */
__device__ __forceinline__ uint64_t ld_acquire_sys(const uint64_t *p)
{
    uint64_t v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ uint32_t ld_acquire_sys32(const uint32_t *p)
{
    uint32_t v;
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

/* Release at system scope: every store this thread made before (and, through a preceding
 * __syncthreads, every store of the CTA: release is cumulative) reaches the peer before the
 * flag does. NVLink may otherwise deliver the flag ahead of the data it guards. */
__device__ __forceinline__ void st_release_sys(uint64_t *p, uint64_t v)
{
    asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ uint64_t globaltimer_ns()
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

[[noreturn]] __device__ __forceinline__ void hang(const char *what, uint64_t want, uint64_t got)
{
    printf("icsim-validate: GPU block %d: %s stuck at %llu, waiting for %llu for 30 s: a peer "
           "never posted (no P2P path, or a kernel bug)\n",
           (int)blockIdx.x, what, (unsigned long long)got, (unsigned long long)want);
    __trap();
}

/* Spins until *flag >= want; one thread per CTA calls it. The timer is read once per 2^16
 * polls so that polling stays a plain load loop. */
__device__ __forceinline__ void wait_ge(const uint64_t *flag, uint64_t want, const char *what)
{
    uint64_t got = ld_acquire_sys(flag), start = 0;
    for (uint32_t spins = 0; got < want; spins++) {
        if ((spins & 0xffff) == 0) {
            uint64_t now = globaltimer_ns();
            if (start == 0)
                start = now;
            else if (now - start > ICSV_HANG_NS)
                hang(what, want, got);
        }
        got = ld_acquire_sys(flag);
    }
}

/* ---- 16-byte packs -------------------------------------------------------------------- */

template <typename T> struct pack_math;

template <> struct pack_math<float> {
    static __device__ __forceinline__ uint4 add(uint4 a, uint4 b)
    {
        return make_uint4(__float_as_uint(__uint_as_float(a.x) + __uint_as_float(b.x)),
                          __float_as_uint(__uint_as_float(a.y) + __uint_as_float(b.y)),
                          __float_as_uint(__uint_as_float(a.z) + __uint_as_float(b.z)),
                          __float_as_uint(__uint_as_float(a.w) + __uint_as_float(b.w)));
    }
    static __device__ __forceinline__ float add1(float a, float b)
    {
        return a + b;
    }
    static __device__ __forceinline__ float ld_volatile(const float *p)
    {
        return *(const volatile float *)p;
    }
};

template <> struct pack_math<__nv_bfloat16> {
    static __device__ __forceinline__ uint32_t add2(uint32_t a, uint32_t b)
    {
        __nv_bfloat162 x = *reinterpret_cast<__nv_bfloat162 *>(&a);
        __nv_bfloat162 y = *reinterpret_cast<__nv_bfloat162 *>(&b);
        __nv_bfloat162 s = __hadd2(x, y);
        return *reinterpret_cast<uint32_t *>(&s);
    }
    static __device__ __forceinline__ uint4 add(uint4 a, uint4 b)
    {
        return make_uint4(add2(a.x, b.x), add2(a.y, b.y), add2(a.z, b.z), add2(a.w, b.w));
    }
    static __device__ __forceinline__ __nv_bfloat16 add1(__nv_bfloat16 a, __nv_bfloat16 b)
    {
        return __hadd(a, b);
    }
    static __device__ __forceinline__ __nv_bfloat16 ld_volatile(const __nv_bfloat16 *p)
    {
        return __ushort_as_bfloat16(*(const volatile unsigned short *)p);
    }
};

__device__ __forceinline__ bool aligned16(const void *p)
{
    return ((uintptr_t)p & 15) == 0;
}

/* out = fifo_in + src (either may be null: then a copy), stored to dst and/or fifo_out; n
 * elements, by the whole CTA. FIFO loads bypass L1 (__ldcv): the SM may still hold this
 * slot's previous contents there, and L1 is not coherent with the peer's NVLink stores. Each
 * thread keeps UNROLL independent 16-byte loads in flight: that, not the thread count, is what
 * covers the latency of remote and HBM accesses. Unaligned ranges (odd per-rank blocks) take
 * the element-wise path. */
template <typename T, int UNROLL>
__device__ __forceinline__ void reduce_copy(const T *fifo_in, const T *src, T *dst, T *fifo_out,
                                            int64_t n)
{
    using M = pack_math<T>;
    constexpr int64_t V = 16 / sizeof(T);
    const bool vec = aligned16(fifo_in) && aligned16(src) && aligned16(dst) && aligned16(fifo_out);
    const int64_t npacks = vec ? n / V : 0, nt = blockDim.x;
    const uint4 *in4 = (const uint4 *)fifo_in, *src4 = (const uint4 *)src;
    uint4 *dst4 = (uint4 *)dst, *out4 = (uint4 *)fifo_out;
    for (int64_t base = threadIdx.x; base < npacks; base += nt * UNROLL) {
        uint4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            int64_t i = base + u * nt;
            if (i < npacks)
                v[u] = in4 ? __ldcv(in4 + i) : src4[i];
        }
        if (in4 && src4) {
#pragma unroll
            for (int u = 0; u < UNROLL; u++) {
                int64_t i = base + u * nt;
                if (i < npacks)
                    v[u] = M::add(v[u], src4[i]);
            }
        }
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            int64_t i = base + u * nt;
            if (i < npacks && dst4)
                dst4[i] = v[u];
            if (i < npacks && out4)
                out4[i] = v[u];
        }
    }
    for (int64_t i = npacks * V + threadIdx.x; i < n; i += nt) {
        T v = fifo_in ? M::ld_volatile(fifo_in + i) : src[i];
        if (fifo_in && src)
            v = M::add1(v, src[i]);
        if (dst)
            dst[i] = v;
        if (fifo_out)
            fifo_out[i] = v;
    }
}

/* ---- ring connections ----------------------------------------------------------------- */

/* One channel of one rank's connections: it sends to the next rank's FIFO and receives from
 * the previous rank into its own. Counters count slices since the connection was made and
 * persist across launches (stored back at kernel exit), as NCCL's conn->step does, so no flag
 * is ever reset while a peer might be reading it. */
struct conn_chan {
    char *fifo_out;          /* next rank's receive FIFO for this channel (peer memory) */
    uint64_t *tail_out;      /* next rank's tail: slices we have published to it */
    const char *fifo_in;     /* our receive FIFO */
    const uint64_t *tail_in; /* our tail, written by the previous rank */
    const uint64_t *head_in; /* our head, written by the next rank: slices it has consumed */
    uint64_t *head_out;      /* the previous rank's head: slices we have consumed */
    uint64_t send_step, recv_step;
};

/* The FIFO geometry every kernel of a connection shares. */
struct conn_geom {
    int slices;          /* slices per chunk: one handshake each */
    int nslots;          /* FIFO slots, 2 * slices: two chunks in flight, as NCCL's 8 steps */
    int64_t slot_bytes;  /* chunk_bytes / slices */
    int64_t chunk_bytes; /* most bytes one channel moves per step */
};

/* One step (a chunk) as NCCL's Primitives run it: `slices` slices, each waited for, moved
 * and posted. RECV: reduce (or copy) the previous rank's slice from our FIFO; SEND: store the
 * result into the next rank's FIFO. Every step uses exactly `slices` slots, even empty ones,
 * so sender and receiver count alike whatever the sizes. c lives in shared memory; thread 0
 * alone touches flags and counters. */
template <typename T, int UNROLL, bool RECV, bool SEND>
__device__ void step(conn_chan &c, const conn_geom &g, const T *src, T *dst, int64_t nelem)
{
    constexpr int64_t V = 16 / sizeof(T);
    const int64_t slot_elems = g.slot_bytes / (int64_t)sizeof(T);
    int64_t per = (nelem + g.slices - 1) / g.slices;
    per = (per + V - 1) / V * V; /* <= slot_elems: chunk_bytes is a multiple of 16 * slices */
    for (int s = 0; s < g.slices; s++) {
        int64_t off = s * per, len = nelem - off < per ? nelem - off : per;
        len = len < 0 ? 0 : len;
        if (threadIdx.x == 0) {
            if (RECV)
                wait_ge(c.tail_in, c.recv_step + 1, "tail (data from previous rank)");
            if (SEND) /* the slot we overwrite was consumed nslots steps ago */
                wait_ge(c.head_in,
                        c.send_step + 1 > (uint64_t)g.nslots ? c.send_step + 1 - g.nslots : 0,
                        "head (free slot at next rank)");
        }
        __syncthreads(); /* orders thread 0's acquire before everyone's FIFO accesses */
        const T *in = RECV ? (const T *)c.fifo_in + (c.recv_step % g.nslots) * slot_elems : nullptr;
        T *out = SEND ? (T *)c.fifo_out + (c.send_step % g.nslots) * slot_elems : nullptr;
        reduce_copy<T, UNROLL>(in, src ? src + off : nullptr, dst ? dst + off : nullptr, out, len);
        __syncthreads(); /* every thread's stores precede thread 0's release */
        if (threadIdx.x == 0) {
            if (SEND)
                st_release_sys(c.tail_out, ++c.send_step);
            if (RECV) /* release orders our FIFO reads before the producer may overwrite */
                st_release_sys(c.head_out, ++c.recv_step);
        }
    }
}

/* Loads channel blockIdx.x's connection into shared memory / stores its counters back. */
__device__ __forceinline__ void chan_load(conn_chan &c, const conn_chan *chans)
{
    if (threadIdx.x == 0)
        c = chans[blockIdx.x];
    __syncthreads();
}

__device__ __forceinline__ void chan_store(const conn_chan &c, conn_chan *chans)
{
    __syncthreads();
    if (threadIdx.x == 0) {
        chans[blockIdx.x].send_step = c.send_step;
        chans[blockIdx.x].recv_step = c.recv_step;
    }
}

__host__ __device__ __forceinline__ int64_t div_up(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

__host__ __device__ __forceinline__ int64_t align_up(int64_t a, int64_t b)
{
    return div_up(a, b) * b;
}

#endif /* ICSV_PROTO_CUH */
