/* Slurm's backfill cycle on named nodes (backfill_map.c). */
#ifndef GPUPLAN_BACKFILL_MAP_H
#define GPUPLAN_BACKFILL_MAP_H

#include "engine.h"

typedef struct {
    double epoch_s;      /* Unix time of t = 0: Slurm rounds on the epoch clock */
    double resolution_s; /* bf_resolution */
    double window_s;     /* bf_window */
    int64_t max_job_test; /* bf_max_job_test */
    int64_t max_job_user; /* bf_max_job_user (0: no limit) */
} BackfillClock;

/* One backfill cycle at `now` on a pool of whole-node jobs: starts the jobs it can. */
void gp_backfill_map_cycle(Sim *sim, const BackfillClock *clock, double now);

#endif
