/* A model's calibration: what measurements of a real system (icsim calibrate, or a person by
 * hand) say its parts achieve, in place of the defaults taken from datasheets and NCCL's
 * constants. The table below is the one list of parameters: the reader (hw_load.c), the tuner
 * that applies them (collectives/tuner.c) and the fitter (calibrate/) all go by it. */
#include "hw/hw_internal.h"

#include <math.h>
#include <string.h>

/* Bounds are physical: wide enough for any real system, narrow enough that a fit cannot wander
 * into nonsense (a CTA faster than an NVLink bond, a latency of a second). */
static const ics_cal_param_info params[ICS_CAL_COUNT] = {
    [ICS_CAL_NVLINK_GBPS] = {"nvlink_gbps", "GB/s", 1, 200,
                             "what NCCL's copy kernels move per NVLink and direction, NVLS "
                             "aside (NCCL: 20 on Volta and Ampere, 20.6 on Hopper, 40.1 on "
                             "Blackwell)",
                             .published = true},
    [ICS_CAL_CTA_GBPS] = {"cta_gbps", "GB/s", 1, 200,
                          "what one channel's thread block copies per direction (half NCCL's "
                          "per-channel tree ceiling on one node: 19.35 on Hopper)",
                          .published = true},
    [ICS_CAL_SYNC_US] = {"sync_us", "us", 0, 50,
                         "a Simple slice's synchronization: fence and flag (half NCCL's "
                         "per-step latency inside a node: 1.7 on NVLink)",
                         .published = true},
    [ICS_CAL_NVLS_EFF] = {"nvls_eff", "", 0.1, 1,
                          "share of NCCL's per-NVLink figure NVLS reductions reach (NCCL: "
                          "0.85 Hopper, 0.74 Blackwell)",
                          .published = true},
    [ICS_CAL_HOP_SCALE_NVLINK] = {"hop_scale_nvlink", "x", 0.05, 20,
                                  "factor on NCCL's per-hop latencies over NVLink",
                                  .published = true},
    [ICS_CAL_HOP_SCALE_PCI] = {"hop_scale_pci", "x", 0.05, 20,
                               "factor on NCCL's per-hop latencies over PCIe", .published = true},
    [ICS_CAL_HOP_SCALE_NET] = {"hop_scale_net", "x", 0.05, 20,
                               "factor on NCCL's per-hop latencies across the network",
                               .published = true},
    [ICS_CAL_BASE_SCALE] = {"base_latency_scale", "x", 0.05, 20,
                            "factor on NCCL's base latency of a call (launch and start-up)",
                            .published = true},
    [ICS_CAL_NET_EFF] = {"net_eff", "", 0.1, 1,
                         "share of a NIC's line rate the network transport reaches (1)",
                         .published = false},
    [ICS_CAL_LAUNCH_US] =
        {"launch_us", "us", 0, 100,
         "host time to launch one GPU's kernel, paid in series by a thread "
         "that drives several GPUs (nccl-tests -g G: a floor of G launches; 3.8: NVIDIA's "
         "measured launch, CUDA Graphs blog)",
         .published = true},
    [ICS_CAL_PROXY_US] = {"proxy_us", "us", 0, 100,
                          "what a GPU's proxy thread spends posting one network send or receive "
                          "of a point-to-point call, in series (NCCL's network overhead: 1 on "
                          "Intel hosts, 2 on AMD)",
                          .published = true},
    [ICS_CAL_MSG_US] = {"msg_us", "us", 0, 100,
                        "what the network transport spends on each message (a step of NCCL's "
                        "network transport) in which its NIC sends nothing, LogGP's gap (0: "
                        "NCCL's own transports on ConnectX, hundreds of millions of messages a "
                        "second; plugin transports are not documented)",
                        .published = false},
};

const ics_cal_param_info *ics_hw_cal_param(ics_cal_param p)
{
    return (unsigned)p < ICS_CAL_COUNT ? &params[p] : NULL;
}

int ics_hw_cal_param_find(const char *key)
{
    for (int p = 0; p < ICS_CAL_COUNT; p++)
        if (strcmp(key, params[p].key) == 0)
            return p;
    return -1;
}

void ics_hw__calibration_clear(ics_hw_calibration *c)
{
    for (int p = 0; p < ICS_CAL_COUNT; p++)
        c->value[p] = NAN;
    c->source = NULL;
}

const ics_hw_calibration *ics_hw_calibration_of(const ics_hw *hw)
{
    return &hw->calibration;
}

double ics_hw_cal(const ics_hw *hw, ics_cal_param p)
{
    return (unsigned)p < ICS_CAL_COUNT ? hw->calibration.value[p] : NAN;
}

void ics_hw_cal_set(ics_hw *hw, ics_cal_param p, double value)
{
    g_assert((unsigned)p < ICS_CAL_COUNT);
    hw->calibration.value[p] = value;
}
