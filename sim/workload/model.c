/* Models (model.h): parameter counts from the shapes, and the catalog reader. Every catalog
 * entry is checked as ics_model_check checks a command-line model, with the error located at
 * the entry. */
#include "workload/model.h"
#include "core/core.h"
#include "core/json.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#ifndef ICS_DEFAULT_MODELS
#define ICS_DEFAULT_MODELS "models/models.json"
#endif

static const char *const act_names[] = {"gelu", "swiglu", NULL};
static const char *const norm_names[] = {"layernorm", "rmsnorm", NULL};
static const char *const pos_names[] = {"learned", "rope", NULL};

const char *ics_activation_name(ics_activation a)
{
    return (unsigned)a < ICS_ACT_COUNT ? act_names[a] : "?";
}

ics_model ics_model_make(const char *name, int layers, int hidden, int heads, int ffn, int vocab,
                         int seq)
{
    ics_model m = {.source = "given on the command line",
                   .layers = layers,
                   .hidden = hidden,
                   .heads = heads,
                   .kv_heads = heads,
                   .ffn = ffn,
                   .vocab = vocab,
                   .seq = seq,
                   .act = ICS_ACT_GELU,
                   .norm = ICS_NORM_LAYERNORM,
                   .bias = true,
                   .pos = ICS_POS_LEARNED,
                   .tied_embeddings = true};
    g_strlcpy(m.name, name ? name : "custom", sizeof m.name);
    return m;
}

/* The one set of ranges (model.h). The largest shipped model (models/models.json) has 128
 * layers, hidden 25600, 160 heads, ffn 102400, vocabulary 128256 and sequence 8192; each bound
 * leaves room for a hundred times that while keeping every product the generator forms
 * (tokens x hidden, heads x head size) inside 64-bit counts. */
static const ics_field_range model_ranges[ICS_MODEL_FIELD_COUNT] = {
    [ICS_MODEL_LAYERS] = {"layers", 1, 100000}, [ICS_MODEL_HIDDEN] = {"hidden", 1, 1 << 22},
    [ICS_MODEL_HEADS] = {"heads", 1, 1 << 16},  [ICS_MODEL_KV_HEADS] = {"kv_heads", 1, 1 << 16},
    [ICS_MODEL_FFN] = {"ffn", 1, 1 << 24},      [ICS_MODEL_VOCAB] = {"vocab", 1, 1 << 24},
    [ICS_MODEL_SEQ] = {"seq", 1, 1 << 24},
};

const ics_field_range *ics_model_field_range(ics_model_field f)
{
    g_assert((unsigned)f < ICS_MODEL_FIELD_COUNT);
    return &model_ranges[f];
}

bool ics_model_check_field(ics_model_field f, int64_t v, const char *name, GError **error)
{
    const ics_field_range *r = ics_model_field_range(f);
    return ics_check_int(name, v, r->lo, r->hi, error);
}

static int field_value(const ics_model *m, ics_model_field f)
{
    switch (f) {
    case ICS_MODEL_LAYERS:
        return m->layers;
    case ICS_MODEL_HIDDEN:
        return m->hidden;
    case ICS_MODEL_HEADS:
        return m->heads;
    case ICS_MODEL_KV_HEADS:
        return m->kv_heads;
    case ICS_MODEL_FFN:
        return m->ffn;
    case ICS_MODEL_VOCAB:
        return m->vocab;
    case ICS_MODEL_SEQ:
        return m->seq;
    default:
        g_assert_not_reached();
    }
}

/* How field f is named in a message: names[f], else "model NAME: key" (transfer full). */
static char *field_name(const ics_model *m, const char *const *names, ics_model_field f)
{
    if (names && names[f])
        return g_strdup(names[f]);
    return g_strdup_printf("model %s: %s", m->name, model_ranges[f].key);
}

static bool divides(const ics_model *m, const char *const *names, ics_model_field f, int v,
                    ics_model_field of, GError **error)
{
    int n = field_value(m, of);
    if (n % v == 0)
        return true;
    char *name = field_name(m, names, f);
    g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT, "%s: expected a divisor of %s (%d), got %d",
                name, model_ranges[of].key, n, v);
    g_free(name);
    return false;
}

/* The MoE fields (only catalogs give them, so a message names the model and "moe.KEY"). The
 * bounds are the catalog reader's (read_moe). */
#define MOE_MAX_EXPERTS 65536
static bool moe_field(const ics_model *m, const char *key, int64_t v, int64_t lo, int64_t hi,
                      GError **error)
{
    char *name = g_strdup_printf("model %s: moe.%s", m->name, key);
    bool ok = ics_check_int(name, v, lo, hi, error);
    g_free(name);
    return ok;
}

/* Groups divide the experts, and the groups a token may use hold its topk experts. */
static bool groups_fit(const ics_model *m, GError **error)
{
    const ics_moe *e = &m->moe;
    if (e->groups == 0)
        return true;
    if (e->experts % e->groups != 0) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                    "model %s: moe.groups: expected a divisor of the %d experts, got %d", m->name,
                    e->experts, e->groups);
        return false;
    }
    if (e->group_topk * (e->experts / e->groups) < e->topk) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                    "model %s: moe.group_topk: expected groups of %d experts enough to hold topk "
                    "%d, got %d",
                    m->name, e->experts / e->groups, e->topk, e->group_topk);
        return false;
    }
    return true;
}

static bool moe_check(const ics_model *m, GError **error)
{
    const ics_moe *e = &m->moe;
    if (e->experts == 0)
        return true;
    return moe_field(m, "experts", e->experts, 2, MOE_MAX_EXPERTS, error) &&
           moe_field(m, "topk", e->topk, 1, e->experts, error) &&
           moe_field(m, "ffn", e->ffn, 1, 1 << 24, error) &&
           moe_field(m, "shared_ffn", e->shared_ffn, 0, 1 << 24, error) &&
           moe_field(m, "dense_layers", e->dense_layers, 0, m->layers - 1, error) &&
           moe_field(m, "groups", e->groups, 0, e->experts, error) &&
           moe_field(m, "group_topk", e->group_topk, e->groups > 0 ? 1 : 0, e->groups, error) &&
           groups_fit(m, error);
}

bool ics_model_check_named(const ics_model *m, const char *const names[ICS_MODEL_FIELD_COUNT],
                           GError **error)
{
    for (int f = 0; f < ICS_MODEL_FIELD_COUNT; f++) {
        char *name = field_name(m, names, (ics_model_field)f);
        bool ok = ics_model_check_field((ics_model_field)f, field_value(m, (ics_model_field)f),
                                        name, error);
        g_free(name);
        if (!ok)
            return false;
    }
    if (m->head_dim < 0 || m->head_dim > 1 << 16) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                    "model %s: head_dim: expected 0 (hidden / heads) or 1..65536, got %d", m->name,
                    m->head_dim);
        return false;
    }
    return (m->head_dim > 0 ||
            divides(m, names, ICS_MODEL_HEADS, m->heads, ICS_MODEL_HIDDEN, error)) &&
           divides(m, names, ICS_MODEL_KV_HEADS, m->kv_heads, ICS_MODEL_HEADS, error) &&
           moe_check(m, error);
}

bool ics_model_check(const ics_model *m, GError **error)
{
    return ics_model_check_named(m, NULL, error);
}

/* ---- parameter counts ------------------------------------------------------------------------ */

double ics_model_head_dim(const ics_model *m)
{
    return m->head_dim > 0 ? m->head_dim : (double)m->hidden / m->heads;
}

static double norm_params(const ics_model *m)
{
    return m->norm == ICS_NORM_LAYERNORM ? 2.0 * m->hidden : (double)m->hidden;
}

/* Attention: column-parallel QKV (weights and biases split), row-parallel projection (weight
 * split, bias whole), its norm. */
void ics_model_attn_params(const ics_model *m, double *sharded, double *replicated)
{
    double h = m->hidden, dh = ics_model_head_dim(m), q = m->heads * dh;
    double qkv_out = q + 2.0 * m->kv_heads * dh;
    *sharded = h * qkv_out + q * h + (m->bias ? qkv_out : 0);
    *replicated = norm_params(m) + (m->bias ? h : 0);
}

/* An MLP of width ffn: column-parallel fc1, row-parallel fc2 (no norm: the layer's). */
static void mlp_params(const ics_model *m, double ffn, double *sharded, double *replicated)
{
    double h = m->hidden, fc1_out = (m->act == ICS_ACT_SWIGLU ? 2.0 : 1.0) * ffn;
    *sharded = h * fc1_out + ffn * h + (m->bias ? fc1_out : 0);
    *replicated = m->bias ? h : 0;
}

void ics_model_layer_params(const ics_model *m, double *sharded, double *replicated)
{
    double ash, arep, msh, mrep;
    ics_model_attn_params(m, &ash, &arep);
    mlp_params(m, m->ffn, &msh, &mrep);
    *sharded = ash + msh;
    *replicated = arep + mrep + norm_params(m);
}

void ics_model_lora_params(const ics_model *m, int r, double *attn, double *mlp)
{
    double h = m->hidden, dh = ics_model_head_dim(m), q = m->heads * dh;
    double qkv_out = q + 2.0 * m->kv_heads * dh;
    double fc1_out = (m->act == ICS_ACT_SWIGLU ? 2.0 : 1.0) * m->ffn;
    *attn = (double)r * ((h + qkv_out) + (q + h));
    *mlp = (double)r * ((h + fc1_out) + ((double)m->ffn + h));
}

bool ics_model_is_moe_layer(const ics_model *m, int layer)
{
    return m->moe.experts > 0 && layer >= m->moe.dense_layers;
}

int ics_model_moe_layers(const ics_model *m)
{
    return m->moe.experts > 0 ? m->layers - m->moe.dense_layers : 0;
}

void ics_model_moe_params(const ics_model *m, double *replicated, double *shared, double *expert)
{
    double rep;
    *replicated = (double)m->moe.experts * m->hidden + norm_params(m);
    mlp_params(m, m->moe.shared_ffn, shared, &rep);
    *shared = m->moe.shared_ffn > 0 ? *shared + rep : 0;
    mlp_params(m, m->moe.ffn, expert, &rep);
    *expert += rep;
}

void ics_model_edge_params(const ics_model *m, double *word, double *position, double *final_norm,
                           double *output)
{
    *word = (double)m->vocab * m->hidden;
    *position = m->pos == ICS_POS_LEARNED ? (double)m->seq * m->hidden : 0;
    *final_norm = norm_params(m);
    *output = m->tied_embeddings ? 0 : *word;
}

/* All parameters of the layers, with `experts` of each MoE layer's routed experts counted. */
static double layers_params(const ics_model *m, double experts)
{
    double sh, rep, ash, arep, mrep, shared, expert;
    ics_model_layer_params(m, &sh, &rep);
    double n = (m->layers - ics_model_moe_layers(m)) * (sh + rep);
    if (ics_model_moe_layers(m) == 0)
        return n;
    ics_model_attn_params(m, &ash, &arep);
    ics_model_moe_params(m, &mrep, &shared, &expert);
    return n + ics_model_moe_layers(m) * (ash + arep + mrep + shared + experts * expert);
}

double ics_model_params(const ics_model *m)
{
    double word, pos, fin, out;
    ics_model_edge_params(m, &word, &pos, &fin, &out);
    return layers_params(m, m->moe.experts) + word + pos + fin + out;
}

/* C(a - b, k) / C(a, k): the chance that k of a items drawn without replacement miss b given
 * ones. */
static double miss_all(double a, double b, int k)
{
    double p = 1;
    for (int i = 0; i < k && p > 0; i++)
        p *= a - b - i > 0 ? (a - b - i) / (a - i) : 0;
    return p;
}

/* C(n, r), as a double (multiplicatively; lgamma would touch the global signgam) */
static double choose(int n, int r)
{
    double c = 1;
    r = MIN(r, n - r);
    for (int i = 1; i <= r; i++)
        c = c * (n - r + i) / i;
    return c;
}

double ics_model_moe_nodes_hit(const ics_model *m, int nodes)
{
    const ics_moe *e = &m->moe;
    if (nodes <= 1 || e->experts == 0)
        return 1;
    double E = e->experts, per_node = E / nodes;
    int G = e->groups, g = e->group_topk, k = e->topk;
    if (G == 0 || (G % nodes != 0 && nodes % G != 0))
        return nodes * (1 - miss_all(E, per_node, k));
    double S = E / G, M = g * S; /* a group's experts; those of a token's chosen groups */
    if (nodes % G == 0)          /* each group spans nodes / G whole nodes */
        return nodes * ((double)g / G) * (1 - miss_all(M, per_node, k));
    /* each node holds q whole groups, j of a token's g groups on it with the hypergeometric
     * chance C(q, j) C(G - q, g - j) / C(G, g) */
    int q = G / nodes;
    double miss = 0;
    for (int j = 0; j <= MIN(q, g); j++) {
        if (g - j > G - q)
            continue;
        double pj = choose(q, j) * choose(G - q, g - j) / choose(G, g);
        miss += pj * miss_all(M, j * S, k);
    }
    return nodes * (1 - miss);
}

double ics_model_active_params(const ics_model *m)
{
    double word, pos, fin, out;
    ics_model_edge_params(m, &word, &pos, &fin, &out);
    return layers_params(m, m->moe.topk) + word + pos + fin + out;
}

double ics_model_matmul_params(const ics_model *m)
{
    double h = m->hidden, dh = ics_model_head_dim(m), q = m->heads * dh;
    double fc1_out = (m->act == ICS_ACT_SWIGLU ? 2.0 : 1.0) * m->ffn;
    double layer = h * (q + 2.0 * m->kv_heads * dh) + q * h + h * fc1_out + (double)m->ffn * h;
    return m->layers * layer + (double)m->vocab * h;
}

/* ---- the catalog ----------------------------------------------------------------------------- */

struct ics_model_catalog {
    GArray *models; /* ics_model */
    GStringChunk *strings;
};

/* A field in the one set of ranges (ics_model_field_range). */
static void read_int(ics_jr *r, const cJSON *o, ics_model_field f, bool req, int *out)
{
    const ics_field_range *range = ics_model_field_range(f);
    int64_t v;
    if (ics_jr_int(r, o, range->key, req, range->lo, range->hi, &v))
        *out = (int)v;
}

/* A divisibility rule, located at `key`. */
static void check_divides(ics_jr *r, const cJSON *o, const char *key, int v, const char *of, int n)
{
    if (ics_jr_ok(r) && n % v)
        ics_jr_fail(r, cJSON_GetObjectItemCaseSensitive(o, key), key,
                    "expected a divisor of %s (%d), got %d", of, n, v);
}

/* "moe": {"experts", "topk", "ffn", "shared_ffn", "dense_layers", "groups", "group_topk"},
 * bounds as moe_check's. */
static void read_moe(ics_jr *r, const cJSON *o, ics_model *m)
{
    static const char *const keys[] = {"experts",      "topk",   "ffn",        "shared_ffn",
                                       "dense_layers", "groups", "group_topk", NULL};
    const cJSON *e = ics_jr_obj(r, o, "moe", false);
    if (!e)
        return;
    size_t mark = ics_jr_push_key(r, "moe");
    int64_t v[7] = {0};
    if (ics_jr_keys(r, e, keys)) {
        ics_jr_int(r, e, "experts", true, 2, MOE_MAX_EXPERTS, &v[0]);
        ics_jr_int(r, e, "topk", true, 1, MAX(v[0], 1), &v[1]);
        ics_jr_int(r, e, "ffn", true, 1, 1 << 24, &v[2]);
        ics_jr_int(r, e, "shared_ffn", false, 0, 1 << 24, &v[3]);
        ics_jr_int(r, e, "dense_layers", false, 0, MAX(m->layers - 1, 0), &v[4]);
        ics_jr_int(r, e, "groups", false, 0, MAX(v[0], 0), &v[5]);
        /* group-limited routing: groups dividing the experts, a token's group_topk of them
         * holding its topk experts (moe_check's groups_fit, here with the value's place) */
        if (v[5] > 0 && ics_jr_ok(r) && v[0] % v[5] != 0)
            ics_jr_fail(r, cJSON_GetObjectItemCaseSensitive(e, "groups"), "groups",
                        "expected a divisor of the %" PRId64 " experts, got %" PRId64, v[0], v[5]);
        int64_t least = v[5] > 0 ? MAX(1, (v[1] * v[5] + v[0] - 1) / MAX(v[0], 1)) : 0;
        ics_jr_int(r, e, "group_topk", v[5] > 0, MIN(least, MAX(v[5], 0)), MAX(v[5], 0), &v[6]);
    }
    m->moe = (ics_moe){(int)v[0], (int)v[1], (int)v[2], (int)v[3], (int)v[4], (int)v[5], (int)v[6]};
    ics_jr_pop(r, mark);
}

static void read_model(ics_jr *r, ics_model_catalog *c, const char *name, const cJSON *o)
{
    static const char *const keys[] = {
        "layers",     "hidden", "heads", "kv_heads", "ffn",    "vocab",           "seq",
        "activation", "norm",   "bias",  "position", "source", "tied_embeddings", "moe",
        "head_dim",   NULL};
    if (!ics_jr_keys(r, o, keys))
        return;
    ics_model m = ics_model_make(name, 0, 0, 0, 0, 0, 0);
    if (strlen(name) >= sizeof m.name) {
        ics_jr_fail(r, o, NULL, "expected a name shorter than %zu bytes, got %zu bytes",
                    sizeof m.name, strlen(name));
        return;
    }
    read_int(r, o, ICS_MODEL_LAYERS, true, &m.layers);
    read_int(r, o, ICS_MODEL_HIDDEN, true, &m.hidden);
    read_int(r, o, ICS_MODEL_HEADS, true, &m.heads);
    m.kv_heads = m.heads;
    read_int(r, o, ICS_MODEL_KV_HEADS, false, &m.kv_heads);
    read_int(r, o, ICS_MODEL_FFN, true, &m.ffn);
    read_int(r, o, ICS_MODEL_VOCAB, true, &m.vocab);
    read_int(r, o, ICS_MODEL_SEQ, true, &m.seq);
    int e;
    if (ics_jr_enum(r, o, "activation", true, act_names, &e))
        m.act = (ics_activation)e;
    if (ics_jr_enum(r, o, "norm", false, norm_names, &e))
        m.norm = (ics_norm)e;
    if (ics_jr_enum(r, o, "position", false, pos_names, &e))
        m.pos = (ics_position)e;
    ics_jr_bool(r, o, "bias", false, &m.bias);
    ics_jr_bool(r, o, "tied_embeddings", true, &m.tied_embeddings);
    const char *src;
    if (ics_jr_str(r, o, "source", true, &src))
        m.source = g_string_chunk_insert_const(c->strings, src);
    read_moe(r, o, &m);
    int64_t hd;
    if (ics_jr_int(r, o, "head_dim", false, 1, 1 << 16, &hd))
        m.head_dim = (int)hd;
    if (m.head_dim == 0)
        check_divides(r, o, "heads", m.heads, "hidden", m.hidden);
    check_divides(r, o, "kv_heads", m.kv_heads, "heads", m.heads);
    if (ics_jr_ok(r))
        g_array_append_val(c->models, m);
}

static void read_root(ics_jr *r, ics_model_catalog *c, const cJSON *root)
{
    static const char *const kinds[] = {"models", NULL};
    static const char *const keys[] = {"kind", "source", "models", NULL};
    if (!ics_jr_keys(r, root, keys))
        return;
    int kind;
    ics_jr_enum(r, root, "kind", true, kinds, &kind);
    const char *src;
    ics_jr_str(r, root, "source", false, &src);
    const cJSON *models = ics_jr_obj(r, root, "models", true);
    if (!models)
        return;
    size_t mark = ics_jr_push_key(r, "models");
    ics_jr_unique_keys(r, models);
    for (const cJSON *e = models->child; e && ics_jr_ok(r); e = e->next) {
        size_t m2 = ics_jr_push_key(r, e->string);
        read_model(r, c, e->string, e);
        ics_jr_pop(r, m2);
    }
    ics_jr_pop(r, mark);
}

static ics_model_catalog *finish(ics_jr *r, ics_model_catalog *c, const cJSON *root, GError **err)
{
    if (root)
        read_root(r, c, root);
    if (!ics_jr_ok(r) || !root) {
        g_propagate_error(err, ics_jr_take_error(r));
        ics_model_catalog_free(c);
        c = NULL;
    }
    ics_jr_free(r);
    return c;
}

static ics_model_catalog *catalog_new(void)
{
    ics_model_catalog *c = g_new0(ics_model_catalog, 1);
    c->models = g_array_new(FALSE, FALSE, sizeof(ics_model));
    c->strings = g_string_chunk_new(1024);
    return c;
}

ics_model_catalog *ics_model_catalog_load(const char *path, GError **err)
{
    ics_jr *r = ics_jr_new();
    return finish(r, catalog_new(), ics_jr_load(r, path), err);
}

ics_model_catalog *ics_model_catalog_load_text(const char *name, const char *text, size_t len,
                                               GError **err)
{
    ics_jr *r = ics_jr_new();
    return finish(r, catalog_new(), ics_jr_load_text(r, name, text, len), err);
}

ics_model_catalog *ics_model_catalog_load_default(GError **err)
{
    return ics_model_catalog_load(ICS_DEFAULT_MODELS, err);
}

void ics_model_catalog_free(ics_model_catalog *c)
{
    if (!c)
        return;
    g_array_free(c->models, TRUE);
    g_string_chunk_free(c->strings);
    g_free(c);
}

const ics_model *ics_model_find(const ics_model_catalog *c, const char *name)
{
    for (guint i = 0; i < c->models->len; i++)
        if (strcmp(g_array_index(c->models, ics_model, i).name, name) == 0)
            return &g_array_index(c->models, ics_model, i);
    return NULL;
}

int ics_model_count(const ics_model_catalog *c)
{
    return (int)c->models->len;
}

const ics_model *ics_model_get(const ics_model_catalog *c, int i)
{
    return &g_array_index(c->models, ics_model, i);
}
