/*
 * Compiled scheduling passes for the batch engine, registered by name in GP_POLICIES.
 *
 * Both follow the literature's definitions so results compare with published simulators:
 * - "fifo": strict first-come-first-served. Start jobs from the head of the queue while the head
 *   fits; a head that does not fit blocks everyone behind it (Slurm with no backfill,
 *   SchedulerType=sched/builtin over a queue ordered by submit time).
 * - "easy": EASY backfilling (Lifka 1995; Mu'alem and Feitelson 2001). After the FIFO step, the head
 *   gets a reservation at the shadow time: running jobs are taken in order of estimated end (then
 *   job id) until enough nodes would be free. `extra` is the number of nodes then free beyond the
 *   head's need. Jobs behind the head are then started, in queue order, if they fit now and either
 *   end by their estimate at or before the shadow time, or need no more than `extra` (which they
 *   then use up), so the head never starts later than its reservation.
 */
#include "engine.h"

static void fifo_pass(Sim *sim, double now) {
    int32_t head;
    while ((head = gp_queue_first(sim)) < sim->q_count && sim->q_nodes[head] <= sim->free_nodes)
        gp_start_slot(sim, head, now);
}

static void easy_pass(Sim *sim, double now) {
    fifo_pass(sim, now);
    int32_t head = gp_queue_first(sim);
    if (head == sim->q_count || sim->free_nodes == 0) return;

    int32_t need = sim->q_nodes[head];
    int32_t free_then = sim->free_nodes;
    double shadow = now;
    gp_walk_begin(sim);
    for (int32_t running; free_then < need && (running = gp_walk_next(sim)) >= 0;) {
        free_then += sim->nodes[running];
        shadow = sim->est_end[running];
    }
    int32_t extra = free_then - need;

    /* Backfill. Holes ask GP_GONE nodes, so the fit test skips them. */
    const int32_t *slot_nodes = sim->q_nodes;
    const double *slot_estimate = sim->q_estimate;
    int32_t free_now = sim->free_nodes, slots = sim->q_count;
    for (int32_t slot = head + 1; slot < slots && free_now > 0; slot++) {
        int32_t nodes = slot_nodes[slot];
        if (nodes > free_now) continue;
        if (now + slot_estimate[slot] <= shadow) {
            gp_start_slot(sim, slot, now);
        } else if (nodes <= extra) {
            extra -= nodes;
            gp_start_slot(sim, slot, now);
        } else {
            continue;
        }
        free_now = sim->free_nodes;
    }
}

const PolicyEntry GP_POLICIES[] = {
    {"fifo", fifo_pass},
    {"easy", easy_pass},
    {0, 0},
};
