/*
 * Nodes lent to another side (hybrid lending): at drain_time[k] drain_delta[k] > 0 nodes leave
 * (idle ones first, highest-numbered first; a busy node takes no new job and its jobs are requeued
 * drain_grace_s later, as preemption requeues them) or -drain_delta[k] come back (the last lent
 * first). A node that is off takes no job (the core's node_off).
 */
#include <math.h>

#include "plugins.h"
#include "preempt.h"

struct GpLending {
    int32_t n_drains, next_drain;
    const double *drain_time;
    const int32_t *drain_delta;
    double drain_grace_s;
    int32_t *lent_stack;
    int32_t lent_len;
    GpEvent *evict_heap; /* (time, node): requeue the jobs still on a lent node */
    int32_t evict_len, evict_cap;
};

static void lend_nodes(Sim *sim, struct GpLending *l, int32_t count, double now) {
    for (int idle_pass = 1; idle_pass >= 0 && count > 0; idle_pass--)
        for (int32_t node = sim->total_nodes - 1; node >= 0 && count > 0; node--) {
            if (sim->node_off[node]) continue;
            int idle = sim->node_free[node] == sim->node_gpus;
            if (idle != idle_pass) continue;
            gp_node_set_off(sim, node, 1);
            l->lent_stack[l->lent_len++] = node;
            count--;
            if (!idle)
                gp_event_push(sim, &l->evict_heap, &l->evict_len, &l->evict_cap,
                              (GpEvent){now + l->drain_grace_s, node});
        }
}

/* The jobs still on a lent node after the grace time go back to the queue. */
static void evict_node(Sim *sim, int32_t node, double now) {
    if (!sim->node_off[node]) return; /* it came back in the meantime */
    int32_t *found = (int32_t *)sim->node_scratch, count = 0;
    for (int32_t k = 0; k < sim->est_len; k++)
        if (gp_job_on_node(sim, sim->est_heap[k], node)) found[count++] = sim->est_heap[k];
    for (int32_t k = 0; k < count; k++) gp_preempt_vacate(sim, found[k], now, GP_PREEMPT_REQUEUE);
}

static double next_change(Sim *sim, void *state) {
    (void)sim;
    struct GpLending *l = state;
    double next = INFINITY;
    if (l->next_drain < l->n_drains) next = l->drain_time[l->next_drain];
    if (l->evict_len > 0 && l->evict_heap[0].time < next) next = l->evict_heap[0].time;
    return next;
}

/* a queued job may wait for a node to come back with nothing running */
static int drains_left(const Sim *sim, const void *state) {
    (void)sim;
    const struct GpLending *l = state;
    return l->next_drain < l->n_drains;
}

static void lending_instant(Sim *sim, void *state, double now) {
    struct GpLending *l = state;
    for (; l->next_drain < l->n_drains && l->drain_time[l->next_drain] <= now; l->next_drain++) {
        int32_t delta = l->drain_delta[l->next_drain];
        if (delta > 0) lend_nodes(sim, l, delta, now);
        for (; delta < 0 && l->lent_len > 0; delta++) {
            gp_node_set_off(sim, l->lent_stack[--l->lent_len], 0);
            sim->sched_requests++; /* a node resumed */
        }
    }
    while (l->evict_len > 0 && l->evict_heap[0].time <= now)
        evict_node(sim, gp_event_pop(l->evict_heap, &l->evict_len).job, now);
}

static void lending_free(void *state) {
    struct GpLending *l = state;
    if (!l) return;
    PyMem_RawFree(l->lent_stack);
    PyMem_RawFree(l->evict_heap);
    PyMem_RawFree(l);
}

static const GpHooks LENDING_HOOKS = {
    .next_event = next_change, .may_wake = drains_left, .after_arrivals = lending_instant, .free = lending_free};

/* Settings (engine/core.py Lending.for_engine): time_s (float64) and delta (int32) per event, grace_s.
 * Needs the preempt piece (any plugin) for the state of requeued jobs. */
static int lending_setup(Sim *sim, GpSettings *s) {
    void *time, *delta;
    Py_ssize_t count;
    double grace;
    if (gp_read_array(s, "time_s", 8, -1, 0, 0, &time, &count) < 0 ||
        gp_read_array(s, "delta", 4, count, 0, 0, &delta, NULL) < 0 || gp_read_double(s, "grace_s", &grace) < 0)
        return -1;
    if (count && !sim->preempt) {
        PyErr_SetString(PyExc_ValueError, "lending: drains need the preempt piece, for requeued jobs");
        return -1;
    }
    struct GpLending *l = PyMem_RawCalloc(1, sizeof(struct GpLending));
    if (l) l->lent_stack = PyMem_RawCalloc((size_t)sim->total_nodes, sizeof(int32_t));
    if (!l || !l->lent_stack || gp_enable_node_off(sim) < 0 || gp_add_piece(sim, s->piece, &LENDING_HOOKS, l) < 0) {
        lending_free(l);
        PyErr_NoMemory();
        return -1;
    }
    l->n_drains = (int32_t)count;
    l->drain_time = time;
    l->drain_delta = delta;
    l->drain_grace_s = grace;
    if (count) sim->whole_nodes = 0; /* nodes are no longer interchangeable */
    return 0;
}

const GpPlugin GP_LENDING_PLUGINS[] = {
    {"lending", "nodes lent to another side and back over time; jobs on a lent node requeued", lending_setup},
    {NULL, NULL, NULL},
};
