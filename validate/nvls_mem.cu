/* nvls_mem.cu: memory for NVLink SHARP: one physical allocation per GPU, all bound to one
 * multicast object, each GPU mapping both its own memory (unicast) and the multicast address.
 * A multimem load through the multicast address reads every GPU's copy and the NVSwitch
 * returns their sum; a multimem store writes every copy.
 * The driver API is reached through cudaGetDriverEntryPoint, so the binary needs no libcuda
 * at link time and never picks up the toolkit's stub library at run time.
 * Invariant: every GPU maps the same `total` bytes twice (unicast, multicast):
 * [signal words: gran][send buffer: buf][receive buffer: buf]. */
#include "coll_impl.cuh"

#include <cuda.h>

#if CUDART_VERSION >= 12010 /* multicast objects arrived in CUDA 12.1 */

#define ICSV_DRV_FUNCS(X)                                                                          \
    X(cuGetErrorString)                                                                            \
    X(cuDeviceGet)                                                                                 \
    X(cuDeviceGetAttribute)                                                                        \
    X(cuMemCreate)                                                                                 \
    X(cuMemRelease)                                                                                \
    X(cuMemAddressReserve)                                                                         \
    X(cuMemAddressFree)                                                                            \
    X(cuMemMap)                                                                                    \
    X(cuMemUnmap)                                                                                  \
    X(cuMemSetAccess)                                                                              \
    X(cuMemGetAllocationGranularity)                                                               \
    X(cuMulticastCreate)                                                                           \
    X(cuMulticastAddDevice)                                                                        \
    X(cuMulticastBindMem)                                                                          \
    X(cuMulticastUnbind)                                                                           \
    X(cuMulticastGetGranularity)

static struct {
#define ICSV_DRV_MEMBER(f) decltype(&::f) f;
    ICSV_DRV_FUNCS(ICSV_DRV_MEMBER)
#undef ICSV_DRV_MEMBER
} drv;

#define ICSV_CU(call)                                                                              \
    do {                                                                                           \
        CUresult icsv_r_ = (call);                                                                 \
        if (icsv_r_ != CUDA_SUCCESS) {                                                             \
            const char *icsv_m_ = "unknown driver error";                                          \
            drv.cuGetErrorString(icsv_r_, &icsv_m_);                                               \
            icsv_die(__FILE__, __LINE__, #call, icsv_m_);                                          \
        }                                                                                          \
    } while (0)

/* The ABI of CUDA 12.1, the first with multicast: newer drivers keep serving it. */
static bool load_symbol(const char *name, void **fp)
{
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
    cudaError_t e = cudaGetDriverEntryPointByVersion(name, fp, 12010, cudaEnableDefault, &q);
#else
    cudaError_t e = cudaGetDriverEntryPoint(name, fp, cudaEnableDefault, &q);
#endif
    if (e == cudaSuccess && q == cudaDriverEntryPointSuccess && *fp)
        return true;
    std::fprintf(stderr,
                 "icsim-validate: nvls: the CUDA driver has no %s (%s); NVLS needs a "
                 "driver for CUDA 12.1 or newer\n",
                 name, cudaGetErrorString(e));
    return false;
}

static bool drv_load()
{
    static bool loaded = false;
    void *fp = nullptr;
#define ICSV_DRV_LOAD(f)                                                                           \
    if (!load_symbol(#f, &fp))                                                                     \
        return false;                                                                              \
    drv.f = reinterpret_cast<decltype(drv.f)>(fp);
    if (!loaded) {
        ICSV_DRV_FUNCS(ICSV_DRV_LOAD)
    }
#undef ICSV_DRV_LOAD
    loaded = true;
    return true;
}

/* Hopper or newer, and an NVSwitch fabric that does SHARP (CU_DEVICE_ATTRIBUTE_MULTICAST_
 * SUPPORTED also needs the fabric manager running), on every GPU. */
static bool nvls_supported(const icsv_gpus *g)
{
    if (g->n < 2) {
        std::fprintf(stderr, "icsim-validate: nvls: skipped: needs at least 2 GPUs\n");
        return false;
    }
    for (int r = 0; r < g->n; r++) {
        CUdevice dev;
        int mc = 0;
        ICSV_CU(drv.cuDeviceGet(&dev, g->dev[r]));
        ICSV_CU(drv.cuDeviceGetAttribute(&mc, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, dev));
        if (g->prop[r].major >= 9 && mc)
            continue;
        std::fprintf(stderr,
                     "icsim-validate: nvls: skipped: GPU %d (%s, sm_%d%d) reports "
                     "CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED = %d; NVLS needs sm_90 or newer "
                     "behind NVSwitches with SHARP, and the fabric manager running\n",
                     r, g->prop[r].name, g->prop[r].major, g->prop[r].minor, mc);
        return false;
    }
    return true;
}

struct icsv_nvls {
    const icsv_gpus *g;
    size_t gran, buf, total;
    CUmemGenericAllocationHandle mc;
    CUmemGenericAllocationHandle phys[ICSV_MAX_GPUS];
    CUdeviceptr uc[ICSV_MAX_GPUS], mcva[ICSV_MAX_GPUS];
    int mapped; /* ranks 0 .. mapped-1 are bound and mapped */
};

static CUmemAllocationProp alloc_prop(int dev)
{
    CUmemAllocationProp p = {};
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = dev;
    p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    return p;
}

static void map_rank(icsv_nvls *m, int r)
{
    int dev = m->g->dev[r];
    CUmemAllocationProp ap = alloc_prop(dev);
    CUmemAccessDesc acc = {};
    acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    acc.location.id = dev;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    ICSV_CUDA(cudaSetDevice(dev));
    ICSV_CU(drv.cuMemCreate(&m->phys[r], m->total, &ap, 0));
    ICSV_CU(drv.cuMulticastBindMem(m->mc, 0, m->phys[r], 0, m->total, 0));
    ICSV_CU(drv.cuMemAddressReserve(&m->uc[r], m->total, m->gran, 0, 0));
    ICSV_CU(drv.cuMemMap(m->uc[r], m->total, 0, m->phys[r], 0));
    ICSV_CU(drv.cuMemSetAccess(m->uc[r], m->total, &acc, 1));
    ICSV_CU(drv.cuMemAddressReserve(&m->mcva[r], m->total, m->gran, 0, 0));
    ICSV_CU(drv.cuMemMap(m->mcva[r], m->total, 0, m->mc, 0));
    ICSV_CU(drv.cuMemSetAccess(m->mcva[r], m->total, &acc, 1));
    ICSV_CUDA(cudaMemset((void *)m->uc[r], 0, m->gran)); /* signals count from 0 */
    m->mapped = r + 1;
}

icsv_nvls *nvls_new(const icsv_gpus *g, uint64_t buf_bytes)
{
    if (!drv_load() || !nvls_supported(g))
        return nullptr;
    icsv_nvls *m = new icsv_nvls{};
    m->g = g;
    CUmulticastObjectProp mp = {};
    mp.numDevices = g->n;
    mp.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    mp.size = 2 * buf_bytes + 4096; /* what we will ask for, before rounding */
    size_t mc_gran = 0, uc_gran = 0;
    CUmemAllocationProp ap = alloc_prop(g->dev[0]);
    ICSV_CU(drv.cuMulticastGetGranularity(&mc_gran, &mp, CU_MULTICAST_GRANULARITY_RECOMMENDED));
    ICSV_CU(drv.cuMemGetAllocationGranularity(&uc_gran, &ap, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    m->gran = mc_gran > uc_gran ? mc_gran : uc_gran; /* both powers of two */
    m->buf = (size_t)align_up((int64_t)(buf_bytes ? buf_bytes : 16), (int64_t)m->gran);
    m->total = m->gran + 2 * m->buf;
    mp.size = m->total;
    ICSV_CU(drv.cuMulticastCreate(&m->mc, &mp));
    for (int r = 0; r < g->n; r++) { /* every device joins before any memory is bound */
        CUdevice dev;
        ICSV_CU(drv.cuDeviceGet(&dev, g->dev[r]));
        ICSV_CU(drv.cuMulticastAddDevice(m->mc, dev));
    }
    for (int r = 0; r < g->n; r++)
        map_rank(m, r);
    return m;
}

void nvls_free(icsv_nvls *m)
{
    if (!m)
        return;
    for (int r = 0; r < m->mapped; r++) {
        CUdevice dev;
        ICSV_CUDA(cudaSetDevice(m->g->dev[r]));
        ICSV_CU(drv.cuDeviceGet(&dev, m->g->dev[r]));
        ICSV_CU(drv.cuMemUnmap(m->mcva[r], m->total));
        ICSV_CU(drv.cuMemAddressFree(m->mcva[r], m->total));
        ICSV_CU(drv.cuMemUnmap(m->uc[r], m->total));
        ICSV_CU(drv.cuMemAddressFree(m->uc[r], m->total));
        ICSV_CU(drv.cuMulticastUnbind(m->mc, dev, 0, m->total));
        ICSV_CU(drv.cuMemRelease(m->phys[r]));
    }
    ICSV_CU(drv.cuMemRelease(m->mc));
    delete m;
}

char *nvls_send_buffer(const icsv_nvls *m, int rank)
{
    return (char *)m->uc[rank] + m->gran;
}

char *nvls_recv_buffer(const icsv_nvls *m, int rank)
{
    return (char *)m->uc[rank] + m->gran + m->buf;
}

char *nvls_multicast(const icsv_nvls *m, int rank, const char *unicast)
{
    return (char *)m->mcva[rank] + (unicast - (const char *)m->uc[rank]);
}

uint32_t *nvls_signal_mc(const icsv_nvls *m, int rank)
{
    return (uint32_t *)m->mcva[rank];
}

uint32_t *nvls_signal_uc(const icsv_nvls *m, int rank)
{
    return (uint32_t *)m->uc[rank];
}

#else /* CUDA < 12.1: no multicast objects to bind */

struct icsv_nvls {
    int unused;
};

icsv_nvls *nvls_new(const icsv_gpus *g, uint64_t buf_bytes)
{
    std::fprintf(stderr,
                 "icsim-validate: nvls: skipped: built with CUDA %d, multicast objects "
                 "need CUDA 12.1 or newer\n",
                 CUDART_VERSION);
    return nullptr;
}

void nvls_free(icsv_nvls *m)
{
}

char *nvls_send_buffer(const icsv_nvls *m, int rank)
{
    return nullptr;
}

char *nvls_recv_buffer(const icsv_nvls *m, int rank)
{
    return nullptr;
}

char *nvls_multicast(const icsv_nvls *m, int rank, const char *unicast)
{
    return nullptr;
}

uint32_t *nvls_signal_mc(const icsv_nvls *m, int rank)
{
    return nullptr;
}

uint32_t *nvls_signal_uc(const icsv_nvls *m, int rank)
{
    return nullptr;
}

#endif
