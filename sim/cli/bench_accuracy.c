/* `icsim bench accuracy`: every real nccl-tests log in validate/data/nccl/ whose hardware a
 * model describes, simulated size by size; prints the relative busbw error per dataset, below
 * and from 1 MiB, and last the median error from 1 MiB over the single-node DGX logs. */
#include "calibrate/calibrate.h"
#include "cli/cli.h"
#include "cli/cli_common.h"
#include "collectives/comm.h"
#include "report/report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef ICS_HWMODELS_DIR
#define ICS_HWMODELS_DIR "hwmodels"
#endif
#define ICS_NCCL_DATA_DIR ICS_HWMODELS_DIR "/../validate/data/nccl"

/* Which model stands for the machine each log was measured on (its "hardware" object), and
 * how many nodes and GPUs per node its ranks used. single_dgx: counts towards the last line,
 * the figure the `accuracy` test ratchets; the lowprov_ logs come from a repository nobody
 * could identify (../shared/data/README.md), so they are shown but not counted. Logs absent
 * from this table have no model (4-GPU nodes without NVSwitch, Slingshot, EFA, ...). */
static const struct {
    const char *id;
    const char *model;
    int nodes, gpus_per_node;
    bool single_dgx;
    bool slow; /* minutes with the analytic engine (80 ranks): only with --all */
} datasets[] = {
    {"nvidia_dgxc_dgxh100_1node_allreduce", "dgx-h100.json", 1, 8, true, false},
    {"xxrjun_h100_1node_8gpu_all_gather", "dgx-h100.json", 1, 8, true, false},
    {"xxrjun_h100_1node_8gpu_sendrecv", "dgx-h100.json", 1, 8, true, false},
    {"xxrjun_h100_1node_8gpu_all_reduce", "dgx-h100.json", 1, 8, true, false},
    {"xxrjun_h100_1node_8gpu_reduce_scatter", "dgx-h100.json", 1, 8, true, false},
    {"xxrjun_h100_1node_8gpu_alltoall", "dgx-h100.json", 1, 8, true, false},
    {"oci_bm_gpu4_8_a100_1node_allreduce_fullsweep", "dgx-a100.json", 1, 8, true, false},
    {"lowprov_v100x8_hybridcubemesh_1node_allreduce_2019", "dgx1-v100.json", 1, 8, false, false},
    {"xxrjun_h100_10node_8gpn_all_reduce", "superpod-h100-ndr.json", 10, 8, false, true},
    {"xxrjun_h100_10node_8gpn_all_gather", "superpod-h100-ndr.json", 10, 8, false, true},
    {"xxrjun_h100_10node_8gpn_reduce_scatter", "superpod-h100-ndr.json", 10, 8, false, true},
    {"xxrjun_h100_10node_8gpn_alltoall", "superpod-h100-ndr.json", 10, 8, false, true},
    {"xxrjun_h100_10node_8gpn_sendrecv", "superpod-h100-ndr.json", 10, 8, false, true},
    /* the same cluster's pairwise runs: two nodes, 1 to 8 GPUs each, 4-16 GiB */
    {"xxrjun_h100_2node_1gpn_alltoall", "superpod-h100-ndr.json", 2, 1, false, false},
    {"xxrjun_h100_2node_1gpn_sendrecv", "superpod-h100-ndr.json", 2, 1, false, false},
    {"xxrjun_h100_2node_2gpn_alltoall", "superpod-h100-ndr.json", 2, 2, false, false},
    {"xxrjun_h100_2node_2gpn_sendrecv", "superpod-h100-ndr.json", 2, 2, false, false},
    {"xxrjun_h100_2node_4gpn_alltoall", "superpod-h100-ndr.json", 2, 4, false, false},
    {"xxrjun_h100_2node_4gpn_sendrecv", "superpod-h100-ndr.json", 2, 4, false, false},
    {"xxrjun_h100_2node_8gpn_alltoall", "superpod-h100-ndr.json", 2, 8, false, false},
    {"xxrjun_h100_2node_8gpn_sendrecv", "superpod-h100-ndr.json", 2, 8, false, false},
    {"xxrjun_h100_10node_1gpn_all_reduce", "superpod-h100-ndr.json", 10, 1, false, false},
    {"xxrjun_h100_10node_1gpn_all_gather", "superpod-h100-ndr.json", 10, 1, false, false},
    {"xxrjun_h100_10node_1gpn_reduce_scatter", "superpod-h100-ndr.json", 10, 1, false, false},
    {"xxrjun_h100_10node_1gpn_alltoall", "superpod-h100-ndr.json", 10, 1, false, false},
    {"xxrjun_h100_10node_1gpn_sendrecv", "superpod-h100-ndr.json", 10, 1, false, false},
    /* the same run directory at 2 and 4 GPUs a node (20 and 40 ranks) */
    {"xxrjun_h100_10node_2gpn_all_reduce", "superpod-h100-ndr.json", 10, 2, false, false},
    {"xxrjun_h100_10node_2gpn_all_gather", "superpod-h100-ndr.json", 10, 2, false, false},
    {"xxrjun_h100_10node_2gpn_reduce_scatter", "superpod-h100-ndr.json", 10, 2, false, false},
    {"xxrjun_h100_10node_2gpn_alltoall", "superpod-h100-ndr.json", 10, 2, false, false},
    {"xxrjun_h100_10node_2gpn_sendrecv", "superpod-h100-ndr.json", 10, 2, false, false},
    {"xxrjun_h100_10node_4gpn_all_reduce", "superpod-h100-ndr.json", 10, 4, false, false},
    {"xxrjun_h100_10node_4gpn_all_gather", "superpod-h100-ndr.json", 10, 4, false, false},
    {"xxrjun_h100_10node_4gpn_reduce_scatter", "superpod-h100-ndr.json", 10, 4, false, false},
    {"xxrjun_h100_10node_4gpn_alltoall", "superpod-h100-ndr.json", 10, 4, false, false},
    {"xxrjun_h100_10node_4gpn_sendrecv", "superpod-h100-ndr.json", 10, 4, false, false},
    {"snellius_h100x4_2node_all_reduce", "snellius-h100.json", 2, 4, false, false},
    {"snellius_h100x4_2node_all_gather", "snellius-h100.json", 2, 4, false, false},
    {"snellius_h100x4_2node_reduce_scatter", "snellius-h100.json", 2, 4, false, false},
    {"aws_p4de_a100_2node_efa_allreduce", "aws-p4de.json", 2, 8, false, false},
    {"alcf_sophia_dgxa100_2node_all_reduce", "superpod-a100-hdr.json", 2, 8, false, false},
    /* 16 x 100 Gb/s RoCEv2 ports a node, two per GPU (OCI's tutorial, an early, untuned run) */
    {"oci_bm_gpu4_8_a100_2node_roce_allreduce_fullsweep", "oci-bm-gpu4-8.json", 2, 8, false, false},
    /* hardware no log calibrated anything on: Blackwell, a multi-node NVLink rack, PCIe cards
     * bridged by NVLink, four H100 wired to each other (the first GPUs of the model: 2 of an HGX
     * B200, 8 of the NVL72 rack, one bridged pair) */
    {"gke_a4_b200_1node_2gpu_allgather", "hgx-b200.json", 1, 2, false, false},
    {"oci_gb200_mnnvl_2tray_8gpu_allreduce", "gb200-nvl72.json", 1, 8, false, false},
    {"nccl_issue1161_h100pcie_2gpu_nvlinkbridge_allreduce", "pcie-nvlink-bridge.json", 1, 2, false,
     false},
    {"snellius_h100x4_1node_all_reduce", "hgx-h100-4gpu.json", 1, 4, false, false},
    {"snellius_h100x4_1node_all_gather", "hgx-h100-4gpu.json", 1, 4, false, false},
    {"snellius_h100x4_1node_reduce_scatter", "hgx-h100-4gpu.json", 1, 4, false, false},
    /* PCIe-only GeForce cards: through host memory with the stock driver (NCCL's SHM), peer to
     * peer with a modified one */
    {"lowprov_rtx4090x8_pcie_noP2P_allreduce", "rtx4090-8gpu.json", 1, 8, false, false},
    {"lowprov_rtx4090x8_pcie_tinygradP2P_allreduce", "rtx4090-8gpu-p2p.json", 1, 8, false, false},
    /* HPE Slingshot 11 dragonfly (libfabric CXI through aws-ofi-nccl, whose costs per message
     * are not modelled), ALCF's runs with NCCL_NET_GDR_LEVEL=PHB */
    {"alcf_polaris_a100x4_2node_all_reduce", "polaris.json", 2, 4, false, false},
    {"alcf_polaris_a100x4_2node_all_gather", "polaris.json", 2, 4, false, false},
    {"alcf_polaris_a100x4_2node_alltoall", "polaris.json", 2, 4, false, false},
    {"alcf_polaris_a100x4_8node_all_reduce", "polaris.json", 8, 4, false, false},
    {"alcf_polaris_a100x4_8node_all_gather", "polaris.json", 8, 4, false, false},
    {"alcf_polaris_a100x4_8node_alltoall", "polaris.json", 8, 4, false, false},
    /* the same fabric and plugin under GH200 nodes (CSCS's run, NCCL_PROTO=^LL128) */
    {"cscs_alps_gh200_2node_8gpu_allreduce", "alps-gh200.json", 2, 4, false, false},
    /* one B200 a node, one 400 Gb/s RoCE NIC each (Google's gIB plugin) */
    {"gke_a4_b200_2node_1gpu_allgather", "gke-a4.json", 2, 1, false, false},
    /* TCP through GPUDirect-TCPXO (Google's FasTrak plugin), 8 x 200 Gb/s a node */
    {"gcp_a3mega_h100_2node_tcpxo_allreduce", "gcp-a3mega.json", 2, 8, false, false},
};

#define MIB (1ULL << 20)

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v. 0 if empty. */
static double median(GArray *v)
{
    if (v->len == 0)
        return NAN;
    g_array_sort(v, cmp_double);
    double *d = (double *)v->data;
    return v->len % 2 ? d[v->len / 2] : 0.5 * (d[v->len / 2 - 1] + d[v->len / 2]);
}

static double max_of(const GArray *v)
{
    double m = NAN;
    for (guint i = 0; i < v->len; i++)
        if (i == 0 || g_array_index(v, double, i) > m)
            m = g_array_index(v, double, i);
    return m;
}

static void pct(GString *out, double x)
{
    if (isnan(x))
        g_string_append_printf(out, " %7s", "-");
    else
        g_string_append_printf(out, " %6.1f%%", 100.0 * x);
}

/* The flow engine's SimGrid platform is sealed at its first run: size it for every dataset's
 * system first. */
static void flow_presize(const ics_net_ops *backend, const char *only, bool all)
{
    if (strcmp(backend->name, "flow") != 0)
        return;
    for (size_t i = 0; i < G_N_ELEMENTS(datasets); i++) {
        if (only ? strcmp(only, datasets[i].id) != 0 : datasets[i].slow && !all)
            continue;
        char *model = g_strdup_printf("%s/%s", ICS_HWMODELS_DIR, datasets[i].model);
        ics_cli_setup su = {0};
        if (ics_cli_setup_open(&su, model, datasets[i].nodes > 1 ? datasets[i].nodes : 0))
            (void)ics_net_backend_ready(backend, su.t, NULL);
        ics_cli_setup_close(&su);
        g_free(model);
    }
}

/* The log's variable as calibrate reads it (ics_meas_env_lookup: ctx its table), or else this
 * process's (what the user asked every log to run with). */
static const char *env_or_process(const char *name, void *ctx)
{
    const char *v = ics_meas_env_lookup(name, ctx);
    return v ? v : g_getenv(name);
}

/* What the summary lines are made of, over the logs run. */
typedef struct summary {
    GArray *dgx_large;   /* every error from 1 MiB of the single-node DGX logs */
    GArray *multi_small; /* each multi-node log's median error below 1 MiB */
    GArray *multi_large; /* ... and from 1 MiB */
    double worst_large;  /* the largest of multi_large, and its log */
    const char *worst_id;
    /* --tail, over the logs fitted: |error| of the busbw they settle at, and the time every
     * call adds, measured and simulated */
    GArray *tail_rate, *tail_real_us, *tail_sim_us;
} summary;

/* --tail: T = a + S / B fitted to the log's largest sizes, measured and simulated (report.h,
 * ics_report_tail_fit_top), B as busbw: which of the two a size's error comes from. */
static void tail_line(ics_coll_op op, int nranks, const GArray *bytes, const GArray *real,
                      const GArray *sim, summary *sum, GString *out)
{
    const double *b = (const double *)bytes->data;
    ics_report_tail fr, fs;
    double f = ics_coll_busbw_factor(op, nranks);
    bool real_ok = ics_report_tail_fit_top(b, (const double *)real->data, (int)bytes->len, &fr);
    if (!real_ok || !(f > 0)) {
        g_string_append_printf(out,
                               "#   tail: - (%d rows from 1 MiB within %gx of the largest; "
                               "3 with times growing with the size needed)\n",
                               fr.rows, ICS_REPORT_TAIL_SPAN);
        return;
    }
    if (!ics_report_tail_fit_top(b, (const double *)sim->data, (int)bytes->len, &fs)) {
        g_string_append(out, "#   tail: - (the simulated times do not grow with the size)\n");
        return;
    }
    double rb = fr.algbw_gbps * f, sb = fs.algbw_gbps * f;
    g_string_append_printf(out,
                           "#   tail of %d rows from %.0f MiB: busbw it settles at real %.1f "
                           "sim %.1f GB/s (%+.1f%%); time every call adds real %.1f sim "
                           "%.1f us\n",
                           fr.rows, fr.from_bytes / MIB, rb, sb, 100.0 * (sb - rb) / rb, fr.a_us,
                           fs.a_us);
    double e = fabs(sb - rb) / rb;
    g_array_append_val(sum->tail_rate, e);
    g_array_append_val(sum->tail_real_us, fr.a_us);
    g_array_append_val(sum->tail_sim_us, fs.a_us);
}

/* Simulates one log; appends its line to out and its errors to the summary. Returns an exit
 * status. */
static int one(int i, const ics_net_ops *backend, const ics_coll_tuning *tuning, bool rows_too,
               bool tail, summary *sum, GString *out)
{
    char *path = g_strdup_printf("%s/%s.json", ICS_NCCL_DATA_DIR, datasets[i].id);
    char *model = g_strdup_printf("%s/%s", ICS_HWMODELS_DIR, datasets[i].model);
    int rc = ICS_EXIT_USAGE;
    ics_meas *meas = ics_meas_new(); /* the log as calibrate reads it: rows, environment, -g */
    ics_cli_setup su = {0};
    GArray *small = g_array_new(FALSE, FALSE, sizeof(double));
    GArray *large = g_array_new(FALSE, FALSE, sizeof(double));
    GString *detail = g_string_new(NULL); /* --rows: one line per size */
    /* --tail: from 1 MiB, each size and its real and simulated times */
    GArray *t_bytes = g_array_new(FALSE, FALSE, sizeof(double));
    GArray *t_real = g_array_new(FALSE, FALSE, sizeof(double));
    GArray *t_sim = g_array_new(FALSE, FALSE, sizeof(double));
    GError *err = NULL;
    if (!ics_meas_read_file(meas, path, NULL, &err)) {
        fprintf(stderr, "icsim bench accuracy: %s\n", err->message);
        g_error_free(err);
        goto done;
    }
    const ics_meas_table *tab = ics_meas_table_at(meas, 0);
    ics_coll_op op = tab->op;
    if (tab->dtype_bytes == 0) {
        fprintf(stderr, "icsim bench accuracy: %s: datatype \"%s\" has no known size\n", path,
                tab->dtype);
        goto done;
    }
    if (!ics_cli_setup_open(&su, model, datasets[i].nodes > 1 ? datasets[i].nodes : 0))
        goto done;
    /* the paths the log's own environment asked NCCL for (ALCF's NCCL_NET_GDR_LEVEL=PHB), over
     * the system's nccl_conf */
    if (tab->env) {
        ics_topo_paths paths;
        ics_coll_env_stack env = {ics_meas_env_lookup, (void *)tab, su.hw};
        ics_coll_paths_from(&paths, ics_coll_env_stacked, &env, NULL);
        ics_topo_set_paths(su.t, &paths);
    }
    int g = datasets[i].gpus_per_node, nranks = datasets[i].nodes * g;
    g_assert(ics_topo_nodes(su.t) == datasets[i].nodes && g <= ics_topo_gpus_per_node(su.t));
    if (!ics_net_backend_ready(backend, su.t, &err)) {
        fprintf(stderr, "icsim bench accuracy: %s\n", err->message);
        g_error_free(err);
        goto done;
    }
    ics_cli_setup_comm(&su, g, nranks, backend, NULL);
    ics_comm *comm = su.comm;
    /* As the log was launched: a thread that drove G GPUs (nccl-tests -g G) launched their
     * kernels in turn, which floors every call at G launches (comm.c). */
    ics_coll_tuning as_run = *tuning;
    /* NCCL_PROTO, NCCL_BUFFSIZE, ... as the log set them, else as this process does, over the
     * system's own settings (a TCPXO node's profile) */
    ics_coll_env_stack env = {env_or_process, (void *)tab, su.hw};
    ics_coll_tuning_from(&as_run, ics_coll_env_stacked, &env, NULL);
    as_run.gpus_per_thread = tab->gpus_per_thread; /* its "command"'s -g, as calibrate reads it */
    as_run.nccl_version = tab->nccl_version;       /* the defaults of the NCCL it ran */
    tuning = &as_run;
    int compared = 0;
    for (guint k = 0; k < tab->n_rows; k++) {
        const ics_meas_row *row = &tab->rows[k];
        if (row->oop.busbw_gbps <= 0 || row->size_bytes < 1)
            continue; /* too small for nccl-tests to print a bandwidth, or absent */
        /* from the log's time, not its busbw column: printed to 0.01 GB/s, a small size's
         * busbw carries one or two digits (ics_meas_busbw) */
        double real_bus = ics_meas_busbw(tab, row, &row->oop);
        ics_coll_row r = {0};
        uint64_t count;
        ics_coll_req req =
            ics_coll_req_nccltests(op, row->size_bytes, tab->dtype_bytes, 0, nranks, &count);
        ics_report_coll_request(&req, count, &r);
        ics_coll_result res;
        if (!ics_comm_run(comm, &req, tuning, &res)) {
            fprintf(stderr, "icsim bench accuracy: %s: %s cannot run with this tuning\n",
                    datasets[i].id, ics_coll_op_name(op));
            rc = ICS_EXIT_FAIL;
            goto done;
        }
        ics_report_coll_time(op, nranks, (double)res.time_ps / 1e6, &r);
        double e = fabs(r.busbw_gbps - real_bus) / real_bus;
        if (rows_too) {
            g_string_append_printf(detail,
                                   "#   %12" G_GUINT64_FORMAT " %9.2f %9.2f %8.4g %8.4g %+7.1f%% ",
                                   r.size_bytes, row->oop.time_us, r.time_us, real_bus,
                                   r.busbw_gbps, 100.0 * (r.busbw_gbps - real_bus) / real_bus);
            ics_report_coll_algo(&res, detail);
            g_string_append_c(detail, '\n');
        }
        g_array_append_val(r.size_bytes < MIB ? small : large, e);
        if (r.size_bytes >= MIB) {
            double sz = (double)r.size_bytes;
            g_array_append_val(t_bytes, sz);
            g_array_append_val(t_real, row->oop.time_us);
            g_array_append_val(t_sim, r.time_us);
        }
        if (datasets[i].single_dgx && r.size_bytes >= MIB)
            g_array_append_val(sum->dgx_large, e);
        compared++;
    }
    g_string_append_printf(out, "%-52s %-22s %3d x %d %5d", datasets[i].id, datasets[i].model,
                           datasets[i].nodes, g, compared);
    double mx_s = max_of(small), mx_l = max_of(large);
    double med_s = median(small), med_l = median(large);
    pct(out, med_s);
    pct(out, mx_s);
    pct(out, med_l);
    pct(out, mx_l);
    if (datasets[i].nodes > 1) {
        if (!isnan(med_s))
            g_array_append_val(sum->multi_small, med_s);
        if (!isnan(med_l))
            g_array_append_val(sum->multi_large, med_l);
        if (!isnan(med_l) && (!sum->worst_id || med_l > sum->worst_large)) {
            sum->worst_large = med_l;
            sum->worst_id = datasets[i].id;
        }
    }
    g_string_append_c(out, '\n');
    if (tail)
        tail_line(op, nranks, t_bytes, t_real, t_sim, sum, out);
    if (rows_too && detail->len) {
        g_string_append_printf(out, "#   %12s %9s %9s %8s %8s %8s %s\n", "size", "real us",
                               "sim us", "real bus", "sim bus", "error", "algo/proto/channels");
        g_string_append(out, detail->str);
    }
    rc = ICS_EXIT_OK;
done:
    g_string_free(detail, TRUE);
    g_array_free(t_bytes, TRUE);
    g_array_free(t_real, TRUE);
    g_array_free(t_sim, TRUE);
    g_array_free(small, TRUE);
    g_array_free(large, TRUE);
    ics_cli_setup_close(&su);
    ics_meas_free(meas);
    g_free(model);
    g_free(path);
    return rc;
}

int ics_bench_accuracy(int argc, char **argv)
{
    char *engine = NULL, *only = NULL;
    gboolean all = FALSE, rows = FALSE, tail = FALSE;
    const GOptionEntry entries[] = {
        {"engine", 0, 0, G_OPTION_ARG_STRING, &engine,
         "analytic (default), packet or flow (SimGrid)", "ENGINE"},
        {"dataset", 0, 0, G_OPTION_ARG_STRING, &only, "run one dataset (its id)", "ID"},
        {"all", 0, 0, G_OPTION_ARG_NONE, &all, "also the slow (80-rank) datasets", NULL},
        {"rows", 0, 0, G_OPTION_ARG_NONE, &rows,
         "under each dataset, every size: real and simulated time and busbw, the error, and the "
         "algorithm, protocol and channels the tuner took",
         NULL},
        {"tail", 0, 0, G_OPTION_ARG_NONE, &tail,
         "under each dataset, T = a + S / B fitted to its largest sizes, measured and simulated: "
         "the busbw each settles at and the time every call adds",
         NULL},
        G_OPTION_ENTRY_NULL};
    int rc = ICS_EXIT_USAGE;
    GString *out = g_string_new(NULL);
    summary sum = {.dgx_large = g_array_new(FALSE, FALSE, sizeof(double)),
                   .multi_small = g_array_new(FALSE, FALSE, sizeof(double)),
                   .multi_large = g_array_new(FALSE, FALSE, sizeof(double)),
                   .tail_rate = g_array_new(FALSE, FALSE, sizeof(double)),
                   .tail_real_us = g_array_new(FALSE, FALSE, sizeof(double)),
                   .tail_sim_us = g_array_new(FALSE, FALSE, sizeof(double))};
    GError *warning = NULL;
    if (!ics_cli_parse("bench accuracy", "",
                       "Simulate the real nccl-tests logs of validate/data/nccl and print the "
                       "busbw error.",
                       entries, &argc, &argv))
        goto done;
    if (argc > 1) {
        fprintf(stderr, "icsim bench accuracy: expected no arguments, got \"%s\"\n", argv[1]);
        goto done;
    }
    const char *eng = engine ? engine : "analytic";
    const ics_net_ops *backend = ics_net_backend(eng);
    if (!backend) {
        fprintf(stderr,
                "icsim bench accuracy: --engine: expected analytic, packet or flow, got "
                "\"%s\"\n",
                eng);
        goto done;
    }
    ics_coll_tuning tuning;
    ics_coll_tuning_from_env(&tuning, NULL, &warning);
    g_string_append_printf(out, "# busbw |sim - real| / real, out of place, engine %s\n", eng);
    if (warning)
        g_string_append_printf(out, "# warning: %s\n", warning->message);
    g_string_append_printf(out, "%-52s %-22s %7s %5s %7s %7s %7s %7s\n", "# dataset", "model",
                           "ranks", "rows", "<1M med", "<1M max", ">=1M med", ">=1M max");
    int ran = 0;
    flow_presize(backend, only, all);
    for (size_t i = 0; i < G_N_ELEMENTS(datasets); i++) {
        if (only ? strcmp(only, datasets[i].id) != 0 : datasets[i].slow && !all)
            continue;
        rc = one((int)i, backend, &tuning, rows, tail, &sum, out);
        if (rc != ICS_EXIT_OK)
            goto done;
        ran++;
    }
    if (ran == 0) {
        fprintf(stderr, "icsim bench accuracy: --dataset: no dataset \"%s\" with a model\n", only);
        rc = ICS_EXIT_USAGE;
        goto done;
    }
    /* #18's goals read off these: the median over multi-node logs of each log's median */
    if (sum.multi_small->len || sum.multi_large->len) {
        g_string_append_printf(out, "median of the multi-node logs' medians (%u logs): below 1 MiB",
                               MAX(sum.multi_small->len, sum.multi_large->len));
        pct(out, median(sum.multi_small));
        g_string_append(out, ", from 1 MiB");
        pct(out, median(sum.multi_large));
        g_string_append_printf(out, "; worst from 1 MiB %.1f%% (%s)\n", 100.0 * sum.worst_large,
                               sum.worst_id);
    }
    if (sum.tail_rate->len)
        g_string_append_printf(out,
                               "tail (%u logs): median |error| of the busbw they settle at "
                               "%.1f%%; median time every call adds real %.1f us, sim %.1f us\n",
                               sum.tail_rate->len, 100.0 * median(sum.tail_rate),
                               median(sum.tail_real_us), median(sum.tail_sim_us));
    double m = median(sum.dgx_large);
    if (isnan(m))
        g_string_append(out, "median error >= 1MiB (single-node DGX): -\n");
    else
        g_string_append_printf(out, "median error >= 1MiB (single-node DGX): %.1f%%\n", 100.0 * m);
    rc = ICS_EXIT_OK;
    ics_cli_emit(out);
done:
    g_clear_error(&warning);
    g_array_free(sum.dgx_large, TRUE);
    g_array_free(sum.multi_small, TRUE);
    g_array_free(sum.multi_large, TRUE);
    g_array_free(sum.tail_rate, TRUE);
    g_array_free(sum.tail_real_us, TRUE);
    g_array_free(sum.tail_sim_us, TRUE);
    g_string_free(out, TRUE);
    g_free(engine);
    g_free(only);
    return rc;
}
