/* coll_impl.cuh: how coll.cu reaches the kernel files. One collective call is a coll_call:
 * per rank, the input and output pointers nccl-tests would pass (in-place ones point into the
 * output buffer). Launchers enqueue one kernel per GPU on its stream and return. */
#ifndef ICSV_COLL_IMPL_CUH
#define ICSV_COLL_IMPL_CUH

#include "gpus_impl.cuh"
#include "proto.cuh"

struct coll_call {
    const icsv_gpus *g;
    icsv_op op;
    icsv_dtype dtype;
    icsv_counts counts;
    bool in_place;
    char *in[ICSV_MAX_GPUS];
    char *out[ICSV_MAX_GPUS];
};

/* conn.cu: the ring connections (rank r sends to r+1): per rank and channel a FIFO of
 * 2 * slices slots of chunk_bytes / slices bytes, a tail and a head flag, and the persistent
 * conn_chan records (device memory). */
struct icsv_conn;
icsv_conn *conn_new(const icsv_gpus *g, const icsv_kernel_params *p);
void conn_free(icsv_conn *c);
conn_chan *conn_chans(const icsv_conn *c, int rank); /* device pointer, p->ctas records */
conn_geom conn_geometry(const icsv_conn *c);

/* ring.cu: all_reduce, all_gather, reduce_scatter around the ring (one CTA per channel). */
void ring_launch(const icsv_conn *c, const coll_call *call, const icsv_kernel_params *p);
/* sendrecv.cu: each rank sends its buffer to the next rank, receives the previous one's. */
void sendrecv_launch(const icsv_conn *c, const coll_call *call, const icsv_kernel_params *p);
/* ring.cu: one rank alone: every collective is a copy, as NCCL does it. */
void local_copy_launch(const coll_call *call, const icsv_kernel_params *p);

/* alltoall.cu: direct stores into every peer's output, then an arrival barrier. */
struct icsv_a2a;
icsv_a2a *a2a_new(const icsv_gpus *g, const icsv_kernel_params *p);
void a2a_free(icsv_a2a *a);
void a2a_launch(icsv_a2a *a, const coll_call *call, const icsv_kernel_params *p);

/* nvls_mem.cu: buffers bound to one multicast object (NVLink SHARP); nvls.cu: the kernels. */
struct icsv_nvls;
icsv_nvls *nvls_new(const icsv_gpus *g, uint64_t buf_bytes); /* NULL: printed why */
void nvls_free(icsv_nvls *m);
char *nvls_send_buffer(const icsv_nvls *m, int rank); /* unicast pointers, buf_bytes each */
char *nvls_recv_buffer(const icsv_nvls *m, int rank);
/* The multicast address of a unicast pointer into rank's buffers, and the signal words. */
char *nvls_multicast(const icsv_nvls *m, int rank, const char *unicast);
uint32_t *nvls_signal_mc(const icsv_nvls *m, int rank);
uint32_t *nvls_signal_uc(const icsv_nvls *m, int rank);
bool nvls_kernel_ready(const icsv_gpus *g); /* nvls.cu: built for sm_90+; else prints why */
void nvls_launch(icsv_nvls *m, const coll_call *call, const icsv_kernel_params *p,
                 uint32_t launch_index);

/* Calls F::run<T, UNROLL>(args...) for the run's element type and unroll: kernels are
 * templates so that the unrolled loads live in registers. */
template <class F, typename T, typename... A> void dispatch_unroll(int unroll, A... args)
{
    switch (unroll) {
    case 1:
        F::template run<T, 1>(args...);
        break;
    case 2:
        F::template run<T, 2>(args...);
        break;
    case 8:
        F::template run<T, 8>(args...);
        break;
    default:
        F::template run<T, 4>(args...);
        break;
    }
}

template <class F, typename... A> void dispatch(icsv_dtype t, int unroll, A... args)
{
    if (t == ICSV_BF16)
        dispatch_unroll<F, __nv_bfloat16>(unroll, args...);
    else
        dispatch_unroll<F, float>(unroll, args...);
}

__host__ __device__ __forceinline__ int64_t mod_ranks(int64_t k, int64_t n)
{
    return ((k % n) + n) % n;
}

__host__ __device__ __forceinline__ int64_t clamp_len(int64_t remaining, int64_t most)
{
    return remaining < 0 ? 0 : remaining < most ? remaining : most;
}

/* check.cu: inputs from a pattern, outputs compared with its exact reduction. */
void check_fill(const coll_call *call);
int64_t check_count_wrong(const coll_call *call, unsigned long long *const *counters);

#endif /* ICSV_COLL_IMPL_CUH */
