/* gpus.cu: opening the node's GPUs for one process: properties, streams, peer access, and
 * what the links between them look like from the P2P attributes.
 * Invariant: access[i][j] is true exactly when GPU i's kernels may store to GPU j's memory. */
#include "gpus_impl.cuh"

#include <cstring>

static void enable_peer(icsv_gpus *g, int i, int j)
{
    int can = 0;
    ICSV_CUDA(cudaDeviceCanAccessPeer(&can, g->dev[i], g->dev[j]));
    if (!can)
        return;
    ICSV_CUDA(cudaSetDevice(g->dev[i]));
    cudaError_t e = cudaDeviceEnablePeerAccess(g->dev[j], 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled)
        (void)cudaGetLastError(); /* clear it: not an error for us */
    else
        ICSV_CUDA(e);
    g->access[i][j] = true;
}

icsv_gpus *icsv_gpus_open(int ngpus)
{
    int avail = 0;
    ICSV_CUDA(cudaGetDeviceCount(&avail));
    int n = ngpus > 0 ? ngpus : avail;
    if (n > avail || n > ICSV_MAX_GPUS) {
        std::fprintf(stderr, "icsim-validate: -g %d: %d GPUs are visible (at most %d used)\n", n,
                     avail, ICSV_MAX_GPUS);
        return nullptr;
    }
    icsv_gpus *g = new icsv_gpus{};
    g->n = n;
    for (int r = 0; r < n; r++) {
        g->dev[r] = r;
        ICSV_CUDA(cudaGetDeviceProperties(&g->prop[r], r));
        ICSV_CUDA(cudaSetDevice(r));
        ICSV_CUDA(cudaStreamCreateWithFlags(&g->stream[r], cudaStreamNonBlocking));
        ICSV_CUDA(cudaStreamCreateWithFlags(&g->aux[r], cudaStreamNonBlocking));
        g->access[r][r] = true;
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (i != j)
                enable_peer(g, i, j);
    return g;
}

void icsv_gpus_free(icsv_gpus *g)
{
    if (!g)
        return;
    for (int r = 0; r < g->n; r++) {
        ICSV_CUDA(cudaSetDevice(g->dev[r]));
        ICSV_CUDA(cudaStreamDestroy(g->stream[r]));
        ICSV_CUDA(cudaStreamDestroy(g->aux[r]));
    }
    delete g;
}

int icsv_gpus_count(const icsv_gpus *g)
{
    return g->n;
}

void icsv_gpus_sync(const icsv_gpus *g)
{
    for (int r = 0; r < g->n; r++) {
        ICSV_CUDA(cudaStreamSynchronize(g->stream[r]));
        ICSV_CUDA(cudaStreamSynchronize(g->aux[r]));
    }
}

bool icsv_gpus_can_access(const icsv_gpus *g, int from, int to)
{
    return g->access[from][to];
}

bool icsv_gpus_require_peers(const icsv_gpus *g)
{
    for (int i = 0; i < g->n; i++)
        for (int j = 0; j < g->n; j++)
            if (!g->access[i][j]) {
                std::fprintf(stderr,
                             "icsim-validate: GPU %d cannot access GPU %d's memory (no P2P); "
                             "our kernels store into peers' memory directly. Try --kernel nccl, "
                             "or -g with GPUs that share NVLink or a PCIe switch\n",
                             i, j);
                return false;
            }
    return true;
}

/* NVLink carries native peer atomics, PCIe P2P (almost always) does not: a guess from the one
 * P2P attribute that tells them apart without NVML. */
static void guess_links(const icsv_gpus *g, icsv_hw *out)
{
    int nvlink = 0, pcie = 0, none = 0;
    for (int i = 0; i < g->n; i++)
        for (int j = i + 1; j < g->n; j++) {
            int atomics = 0;
            if (!g->access[i][j]) {
                none++;
                continue;
            }
            ICSV_CUDA(cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported,
                                                g->dev[i], g->dev[j]));
            atomics ? nvlink++ : pcie++;
        }
    const char *s = g->n < 2                   ? "none"
                    : nvlink && !pcie && !none ? "NVLink"
                    : nvlink                   ? "NVLink+PCIe"
                    : pcie && !none            ? "PCIe"
                                               : "PCIe (no P2P)";
    std::snprintf(out->intra_node, sizeof out->intra_node, "%s", s);
}

void icsv_gpus_describe(const icsv_gpus *g, icsv_hw *out)
{
    out->ngpus = g->n;
    for (int r = 0; r < g->n; r++) {
        const cudaDeviceProp &p = g->prop[r];
        out->dev[r].ordinal = g->dev[r];
        out->dev[r].pci_domain = p.pciDomainID;
        out->dev[r].pci_bus = p.pciBusID;
        out->dev[r].pci_device = p.pciDeviceID;
        std::snprintf(out->dev[r].name, sizeof out->dev[r].name, "%s", p.name);
    }
    out->sm_count = g->n ? g->prop[0].multiProcessorCount : 0;
    std::snprintf(out->cuda_arch, sizeof out->cuda_arch, "sm_%d%d", g->n ? g->prop[0].major : 0,
                  g->n ? g->prop[0].minor : 0);
    guess_links(g, out);
}
