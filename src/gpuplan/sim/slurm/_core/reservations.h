/* Advance reservations (reservations.c), as the scheduling passes and preemption see them. */
#ifndef GPUPLAN_RESERVATIONS_H
#define GPUPLAN_RESERVATIONS_H

#include "engine.h"

/*
 * Windows [win_start, win_end) on named nodes, for some accounts' jobs (bit a of win_accounts:
 * account a, < 64) or for none (0: maintenance). A job may use a node only if no window it may not
 * use overlaps its run (now .. now + estimate). Windows of a node are listed by start (CSR:
 * node_win_ids[node_win_offsets[n] .. [n + 1]]) and do not overlap.
 */
struct GpReservations {
    const double *win_start, *win_end;
    const uint64_t *win_accounts;
    const int32_t *job_account; /* per job; -1: in no reservation */
    const int64_t *node_win_offsets;
    const int32_t *node_win_ids;
    int32_t *node_win_next;   /* per node: windows before this one are over */
    const double *win_bounds; /* every window start and end, sorted: instants to schedule at */
    int32_t n_bounds, next_bound;
    int32_t n_windows;
};

/* Is `node` held over [from, until) by a reservation `job` may not use? (for plans ahead of now);
 * 0 without reservations. */
int gp_window_blocks_at(const Sim *sim, int32_t node, int32_t job, double from, double until);

/* When a reservation `job` may not use holds a node over [from, until): the first end of a
 * reservation at or after `from` (a later try's start, backfill's resv_end); NAN otherwise. */
double gp_reservation_end_after(const Sim *sim, int32_t job, double from, double until);

#endif
