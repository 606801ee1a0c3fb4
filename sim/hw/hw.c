/* The hardware-model object: what a loaded model holds (hw_internal.h: struct ics_hw), its
 * getters, and the names and derived figures of its parts. The loader (hw_load.c) and the
 * readers fill it; nothing here reads JSON. */
#include "hw/hw_internal.h"
#include "hw/dragonfly.h"

#include <math.h>

const char *const ics_hw_family_names[ICS_LINK_FAMILY_COUNT + 1] = {"nvlink", "pcie", "infiniband",
                                                                    "ethernet", NULL};
const char *const ics_hw_switch_kind_names[ICS_SWITCH_KIND_COUNT + 1] = {
    "nvswitch", "pcie_switch", "ib_switch", "eth_switch", NULL};

const char *ics_hw__str(ics_hw *hw, const char *s)
{
    return s ? g_string_chunk_insert_const(hw->strings, s) : NULL;
}

ics_hw *ics_hw__new(const char *path)
{
    ics_hw *hw = g_new0(ics_hw, 1);
    hw->path = g_strdup(path);
    hw->strings = g_string_chunk_new(4096);
    hw->standards = g_ptr_array_new_with_free_func(g_free);
    hw->gpu_types = g_ptr_array_new_with_free_func(g_free);
    hw->switch_types = g_ptr_array_new_with_free_func(g_free);
    hw->nic_types = g_ptr_array_new_with_free_func(g_free);
    hw->cpu_types = g_ptr_array_new_with_free_func(g_free);
    hw->standard_by_name = g_hash_table_new(g_str_hash, g_str_equal);
    hw->gpu_by_name = g_hash_table_new(g_str_hash, g_str_equal);
    hw->switch_by_name = g_hash_table_new(g_str_hash, g_str_equal);
    hw->nic_by_name = g_hash_table_new(g_str_hash, g_str_equal);
    hw->cpu_by_name = g_hash_table_new(g_str_hash, g_str_equal);
    hw->nccl_conf = g_hash_table_new(g_str_hash, g_str_equal);
    hw->nodes = 1;
    ics_hw__calibration_clear(&hw->calibration);
    return hw;
}

void ics_hw_free(ics_hw *hw)
{
    if (!hw)
        return;
    for (int i = 0; i < hw->node.n_cpus; i++)
        g_free((int *)hw->node.cpus[i].numa);
    g_free((void *)hw->node.cpus);
    g_free((void *)hw->node.pcie);
    g_free((void *)hw->node.nvswitches);
    g_free((void *)hw->node.nvbonds);
    g_ptr_array_free(hw->standards, TRUE);
    g_ptr_array_free(hw->gpu_types, TRUE);
    g_ptr_array_free(hw->switch_types, TRUE);
    g_ptr_array_free(hw->nic_types, TRUE);
    g_ptr_array_free(hw->cpu_types, TRUE);
    g_hash_table_destroy(hw->standard_by_name);
    g_hash_table_destroy(hw->gpu_by_name);
    g_hash_table_destroy(hw->switch_by_name);
    g_hash_table_destroy(hw->nic_by_name);
    g_hash_table_destroy(hw->cpu_by_name);
    g_hash_table_destroy(hw->nccl_conf);
    g_string_chunk_free(hw->strings);
    g_free(hw->path);
    g_free(hw->base_path);
    g_free(hw);
}

const char *ics_hw_name(const ics_hw *hw)
{
    return hw->name;
}

const char *ics_hw_path(const ics_hw *hw)
{
    return hw->path;
}

const char *ics_hw_base_path(const ics_hw *hw)
{
    return hw->base_path ? hw->base_path : hw->path;
}

const ics_hw_node *ics_hw_node_of(const ics_hw *hw)
{
    return &hw->node;
}

int ics_hw_nodes(const ics_hw *hw)
{
    return hw->nodes;
}

const ics_hw_fabric *ics_hw_fabric_of(const ics_hw *hw)
{
    return hw->is_cluster ? &hw->fabric : NULL;
}

const ics_hw_standard *ics_hw_standard_find(const ics_hw *hw, const char *name)
{
    return g_hash_table_lookup(hw->standard_by_name, name);
}

const ics_hw_standard *const *ics_hw_standards(const ics_hw *hw, int *n)
{
    *n = (int)hw->standards->len;
    return (const ics_hw_standard *const *)hw->standards->pdata;
}

const ics_hw_switch_type *ics_hw_switch_type_find(const ics_hw *hw, const char *name)
{
    return g_hash_table_lookup(hw->switch_by_name, name);
}

const ics_hw_switch_type *const *ics_hw_switch_types(const ics_hw *hw, int *n)
{
    *n = (int)hw->switch_types->len;
    return (const ics_hw_switch_type *const *)hw->switch_types->pdata;
}

const char *ics_link_family_name(ics_link_family f)
{
    return (unsigned)f < ICS_LINK_FAMILY_COUNT ? ics_hw_family_names[f] : "?";
}

const char *ics_switch_kind_name(ics_switch_kind k)
{
    return (unsigned)k < ICS_SWITCH_KIND_COUNT ? ics_hw_switch_kind_names[k] : "?";
}

uint64_t ics_hw_standard_bw(const ics_hw_standard *s, int width)
{
    double bits =
        (double)width * s->lanes * s->lane_gbps * 1e9 * s->enc_data_bits / s->enc_total_bits;
    return (uint64_t)llround(bits / 8.0);
}

void ics_hw_dragonfly_params(const ics_hw *hw, ics_dragonfly_params *p)
{
    const ics_hw_fabric *f = &hw->fabric;
    *p = (ics_dragonfly_params){.groups = f->groups,
                                .group_switches = f->group_switches,
                                .switch_nodes = f->switch_nodes,
                                .global_links = f->global_links,
                                .radix = f->radix,
                                .nics_per_node = hw->node.compute_nics,
                                .nodes = hw->nodes};
}

void ics_hw_fattree_params(const ics_hw *hw, ics_fattree_params *p)
{
    const ics_hw_node *node = &hw->node;
    const ics_hw_fabric *f = &hw->fabric;
    *p = (ics_fattree_params){.radix = f->radix,
                              .tiers = f->tiers,
                              .oversubscription = f->oversubscription,
                              .rail_optimized = f->rail_optimized,
                              .nodes_per_unit = f->nodes_per_unit,
                              .nodes = hw->nodes,
                              .nics_per_node = node->compute_nics};
    int per_rail[1024] = {0};
    for (int i = 0; i < node->n_pcie; i++) {
        const ics_hw_pcie *e = &node->pcie[i];
        if (e->kind != ICS_PCIE_NIC || e->role != ICS_NIC_COMPUTE)
            continue;
        p->rails = MAX(p->rails, e->rail + 1);
        per_rail[e->rail]++;
        p->max_nics_per_rail = MAX(p->max_nics_per_rail, per_rail[e->rail]);
    }
}
