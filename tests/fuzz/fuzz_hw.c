/* libFuzzer target for the hardware-model reader: any bytes given to ics_hw_load_text yield
 * either a model whose wiring downstream code may trust, or one located error in the house
 * form. Anything else (a crash, a leak, a sanitizer report, a hang) is a bug in the reader.
 * Built with -fsanitize=fuzzer when ICS_FUZZ is on (clang); fuzz_hw_replay.c drives the same
 * function from files in every build. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/hw.h"
#include "core/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NAME "fuzz.json"

static void broken(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz_hw: %s: %s\n", what, detail ? detail : "");
    abort();
}

/* What hw.h promises of a returned node: every index in range, parents before children. */
static void check_node(const ics_hw_node *n)
{
    if (n->gpus < 1 || !n->gpu_type || !n->name)
        broken("node", "no GPUs, GPU type or name");
    for (int i = 0; i < n->n_cpus; i++)
        if (!n->cpus[i].type || n->cpus[i].n_numa < 1)
            broken("cpu", n->cpus[i].name);
    int gpus_in_tree = 0;
    for (int i = 0; i < n->n_pcie; i++) {
        const ics_hw_pcie *p = &n->pcie[i];
        if (!p->name)
            broken("pcie", "element without a name");
        if (p->kind == ICS_PCIE_HOST_BRIDGE ? p->parent != -1 : (p->parent < 0 || p->parent >= i))
            broken("pcie parent", p->name);
        if (p->kind != ICS_PCIE_HOST_BRIDGE && (!p->standard || p->lanes < 1))
            broken("pcie uplink", p->name);
        if (p->kind == ICS_PCIE_SWITCH && !p->switch_type)
            broken("pcie switch type", p->name);
        if (p->kind == ICS_PCIE_NIC && !p->nic_type)
            broken("pcie nic type", p->name);
        if (p->kind == ICS_PCIE_GPU && (p->gpu < 0 || p->gpu >= n->gpus))
            broken("pcie gpu index", p->name);
        gpus_in_tree += p->kind == ICS_PCIE_GPU;
    }
    if (n->n_pcie > 0 && gpus_in_tree != n->gpus)
        broken("pcie", "not every GPU exactly once");
    for (int i = 0; i < n->n_nvswitches; i++)
        if (!n->nvswitches[i].type || n->nvswitches[i].type->kind != ICS_SWITCH_NVSWITCH)
            broken("nvswitch type", n->nvswitches[i].name);
    int ends = n->gpus + n->n_nvswitches;
    for (int i = 0; i < n->n_nvbonds; i++) {
        const ics_hw_nvbond *b = &n->nvbonds[i];
        if (b->a < 0 || b->a >= ends || b->b < 0 || b->b >= ends || b->a == b->b || b->count < 1 ||
            !b->standard || b->standard->family != ICS_LINK_NVLINK)
            broken("nvlink bond", NULL);
    }
}

/* "fuzz.json[:line:col]: $...: expected ..., got ..." on one line. */
static void check_error(const GError *err)
{
    if (!err || err->domain != ICS_JSON_ERROR || !err->message)
        broken("error", "missing or of the wrong domain");
    const char *m = err->message;
    if (strncmp(m, NAME, strlen(NAME)) != 0 || strchr(m, '\n') || !strstr(m, ": $") ||
        !strstr(m, "expected ") || !strstr(m, ", got "))
        broken("error message has the wrong shape", m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    GError *err = NULL;
    ics_hw *hw = ics_hw_load_text(NAME, (const char *)data, size, &err);
    if (hw) {
        if (err)
            broken("result", "a model and an error");
        check_node(ics_hw_node_of(hw));
        int n;
        const ics_hw_standard *const *std = ics_hw_standards(hw, &n);
        for (int i = 0; i < n; i++)
            (void)ics_hw_standard_bw(std[i], 1);
        ics_hw_free(hw);
    } else {
        check_error(err);
        g_error_free(err);
    }
    return 0;
}
