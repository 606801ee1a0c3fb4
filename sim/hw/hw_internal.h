/* Shared between the hardware-model object (hw.c), its loader (hw_load.c) and readers
 * (hw_catalog.c, hw_node.c, hw_fabric.c); not part of the public interface. Names here carry
 * the ics_hw__ prefix. Calls go one way: loader -> readers -> object. */
#ifndef ICS_HW_INTERNAL_H
#define ICS_HW_INTERNAL_H

#include "hw/hw.h"
#include "core/json.h"

struct ics_hw {
    char *path;
    const char *name;
    GStringChunk *strings; /* every string of the model */
    /* catalog: owned entries in definition order, and name -> entry */
    GPtrArray *standards, *gpu_types, *switch_types, *nic_types, *cpu_types;
    GHashTable *standard_by_name, *gpu_by_name, *switch_by_name, *nic_by_name, *cpu_by_name;
    ics_hw_node node; /* its arrays are owned (g_free) */
    int nodes;
    bool is_cluster;
    ics_hw_fabric fabric;
    ics_hw_calibration calibration;
    char *base_path;       /* a calibration overlay's base model, or NULL */
    GHashTable *nccl_conf; /* "nccl_conf": variable -> value, both interned in strings */
};

/* State of one load: the model being filled and the JSON reader with its documents. */
typedef struct {
    ics_hw *hw;
    ics_jr *r;
} ics_hw__ld;

/* ---- the object (hw.c) ---- */

/* An empty model loaded from `path` (transfer full; ics_hw_free). */
ics_hw *ics_hw__new(const char *path);
/* Interns a string in the model (transfer none; lives as long as hw). */
const char *ics_hw__str(ics_hw *hw, const char *s);
/* The names the readers accept, indexed by ics_link_family / ics_switch_kind, NULL-terminated. */
extern const char *const ics_hw_family_names[ICS_LINK_FAMILY_COUNT + 1];
extern const char *const ics_hw_switch_kind_names[ICS_SWITCH_KIND_COUNT + 1];

/* ---- the readers (hw_catalog.c, hw_node.c, hw_fabric.c), called by the loader (hw_load.c) ---- */

/* Reads the catalog sections (standards, gpus, switches, nics, cpus) present in obj: new names
 * add complete entries, known names override the keys given. In node and cluster files
 * (catalog_file false), where "gpus" is the GPU count and "cpus" the sockets, the GPU and CPU type
 * sections are "gpu_types" and "cpu_types". */
bool ics_hw__read_catalog_sections(ics_hw__ld *ld, const cJSON *obj, bool catalog_file);
/* A calibration overlay's "gpu_types" (what `icsim calibrate` fits of the compute model): each
 * entry names a GPU type of the base model and holds only its "compute" object, read over the
 * values the base gave. */
bool ics_hw__read_gpu_overlay(ics_hw__ld *ld, const cJSON *obj);

/* A catalog reference: the entry named by obj[key], with an error at that value when absent. */
const ics_hw_standard *ics_hw__ref_standard(ics_hw__ld *ld, const cJSON *obj, const char *key,
                                            bool required);
const ics_hw_gpu_type *ics_hw__ref_gpu(ics_hw__ld *ld, const cJSON *obj, const char *key);
const ics_hw_switch_type *ics_hw__ref_switch(ics_hw__ld *ld, const cJSON *obj, const char *key);
const ics_hw_nic_type *ics_hw__ref_nic(ics_hw__ld *ld, const cJSON *obj, const char *key);
const ics_hw_cpu_type *ics_hw__ref_cpu(ics_hw__ld *ld, const cJSON *obj, const char *key);

/* Reads a node object (all of its keys except the catalog sections). */
bool ics_hw__read_node(ics_hw__ld *ld, const cJSON *obj);
/* Reads a cluster's "fabric" object; the node has been read. */
bool ics_hw__read_fabric(ics_hw__ld *ld, const cJSON *obj);
/* The optional "nccl_conf" object of obj (hw_nccl_conf.c): its values replace those read before. */
bool ics_hw__read_nccl_conf(ics_hw__ld *ld, const cJSON *obj);
/* Every calibration value back to "not calibrated" (hw_calibration.c). */
void ics_hw__calibration_clear(ics_hw_calibration *c);

/* Keys of the catalog sections: in a catalog file, and as overrides in node and cluster files. */
#define ICS_HW__CATALOG_KEYS  "standards", "gpus", "switches", "nics", "cpus"
#define ICS_HW__OVERRIDE_KEYS "standards", "gpu_types", "switches", "nics", "cpu_types"

#endif
