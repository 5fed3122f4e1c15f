/*
 * Network topology (TopologyPlugin=topology/block, topology/tree): nodes [k * block_nodes, (k + 1) *
 * block_nodes) hang off block (leaf switch) k. A multi-node job goes to the block with the fewest
 * eligible nodes that holds it (best fit), else across the fewest blocks, the fullest first; with
 * `require` a job of at most block_nodes nodes waits for one block. Both plugins place alike here.
 */
#include <stdlib.h>
#include <string.h>

#include "plugins.h"

struct GpTopology {
    int32_t block_nodes;
    int require;
    int32_t *block_count;         /* scratch per block: counts, then an order */
    int32_t *block_nodes_scratch; /* scratch per node */
};

static int int_cmp(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Of the `eligible` nodes in node_scratch (ascending), keep `count` by topology: all in the
 * best-fitting block, else from the blocks with the most eligible nodes; returns how many. */
static int32_t pick_by_block(Sim *sim, void *state, int32_t eligible, int32_t count) {
    struct GpTopology *topo = state;
    int32_t block_nodes = topo->block_nodes;
    int32_t blocks = (sim->total_nodes + block_nodes - 1) / block_nodes;
    int32_t *block_count = topo->block_count;
    memset(block_count, 0, (size_t)blocks * sizeof(int32_t));
    for (int32_t k = 0; k < eligible; k++) block_count[sim->node_scratch[k] / block_nodes]++;
    int32_t best = -1;
    for (int32_t b = 0; b < blocks; b++)
        if (block_count[b] >= count && (best < 0 || block_count[b] < block_count[best])) best = b;
    int32_t kept = 0;
    if (best >= 0) {
        for (int32_t k = 0; k < eligible && kept < count; k++)
            if (sim->node_scratch[k] / block_nodes == best) sim->node_scratch[kept++] = sim->node_scratch[k];
        return kept;
    }
    if (topo->require && count <= block_nodes) return 0; /* waits for one block */
    /* fewest blocks: the fullest blocks first (lowest-numbered on ties), each used up before the
     * next; the chosen blocks' eligible counts are marked negative */
    int32_t used = 0, *chosen = block_count + blocks;
    int32_t n_chosen = 0;
    while (used < count) {
        int32_t pick = -1;
        for (int32_t b = 0; b < blocks; b++)
            if (block_count[b] > 0 && (pick < 0 || block_count[b] > block_count[pick])) pick = b;
        used += block_count[pick];
        block_count[pick] = -1;
        chosen[n_chosen++] = pick;
    }
    int32_t *candidates = topo->block_nodes_scratch;
    memcpy(candidates, sim->node_scratch, (size_t)eligible * sizeof(int32_t));
    for (int32_t c = 0; c < n_chosen && kept < count; c++)
        for (int32_t k = 0; k < eligible && kept < count; k++)
            if (candidates[k] / block_nodes == chosen[c]) sim->node_scratch[kept++] = candidates[k];
    qsort(sim->node_scratch, (size_t)kept, sizeof(int32_t), int_cmp);
    return kept;
}

static void topology_free(void *state) {
    struct GpTopology *topo = state;
    if (!topo) return;
    PyMem_RawFree(topo->block_count);
    PyMem_RawFree(topo->block_nodes_scratch);
    PyMem_RawFree(topo);
}

static const GpPlaceOps BY_BLOCK = {pick_by_block};
static const GpHooks TOPOLOGY_HOOKS = {.free = topology_free};

/* Settings: nodes_per_block (int), require (bool). */
static int topology_setup(Sim *sim, GpSettings *settings) {
    int64_t block_nodes;
    int require;
    if (gp_read_int(settings, "nodes_per_block", &block_nodes) < 0 || gp_read_bool(settings, "require", &require) < 0)
        return -1;
    if (block_nodes < 1 || block_nodes > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "topology: at least one node per block");
        return -1;
    }
    struct GpTopology *topo = PyMem_RawCalloc(1, sizeof(struct GpTopology));
    if (topo) {
        topo->block_nodes = (int32_t)block_nodes;
        topo->require = require;
        int32_t blocks = (sim->total_nodes + topo->block_nodes - 1) / topo->block_nodes;
        topo->block_count = PyMem_RawCalloc(2 * (size_t)blocks, sizeof(int32_t));
        topo->block_nodes_scratch = PyMem_RawCalloc((size_t)sim->total_nodes, sizeof(int32_t));
    }
    if (!topo || !topo->block_count || !topo->block_nodes_scratch ||
        gp_add_piece(sim, settings->piece, &TOPOLOGY_HOOKS, topo) < 0) {
        topology_free(topo);
        PyErr_NoMemory();
        return -1;
    }
    sim->place = &BY_BLOCK;
    sim->place_state = topo;
    sim->place_require = require;
    if (require) sim->whole_nodes = 0; /* a fit depends on which nodes are free */
    return 0;
}

const GpPlugin GP_TOPOLOGY_PLUGINS[] = {
    {"topology/block", "network blocks: a multi-node job in the best-fitting block, else the fewest", topology_setup},
    {"topology/tree", "leaf switches: a multi-node job under the best-fitting switch, else the fewest", topology_setup},
    {NULL, NULL, NULL},
};
