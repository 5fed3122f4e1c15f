/* Slurm's backfill cycle on named nodes (backfill_map.c), the state sched/backfill keeps for it. */
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

struct RunKey;
struct RunEntry;
struct WillRunMemo;

/*
 * The backfill map of named nodes: records [begin, end) with a bitmap of the nodes no reservation
 * of this cycle holds, n_words words each; scratch bitmaps; the running jobs in order of planned
 * end. Allocated on the first cycle.
 */
typedef struct {
    BackfillClock clock;
    double *map_begin, *map_end;
    uint64_t *map_bits;
    uint64_t *map_suffix; /* per record, n_words: the window's suffix intersections */
    int32_t *map_count;   /* per record: its nodes */
    uint8_t *map_gain;    /* per record: a node of the next record is not in it (it frees up at its end) */
    int32_t map_len, map_cap;
    uint64_t *bits_scratch; /* 6 x n_words */
    int32_t *word_scratch;  /* n_words: the words a reservation's nodes lie in */
    struct RunEntry *run_order; /* the running jobs by planned end: run_listed of them, kept between cycles */
    int32_t run_listed;
    int64_t run_ends_moved; /* sim->ends_moved when they were listed */
    uint32_t *run_mark; /* per job: listed in this listing (run_mark_epoch) */
    uint32_t run_mark_epoch;
    struct RunKey *run_fresh; /* jobs started since the last listing, to sort and merge */
    struct RunEntry *run_kept; /* scratch: the running jobs a will-run test releases one by one */
    struct WillRunMemo *memo; /* will-run answers of this cycle */
    int32_t *free_list;       /* the nodes with a free GPU (for the cycle's early end) */
    int32_t *prune_scratch;   /* free nodes by free GPUs, and those a reservation holds (early end) */
    double *map_clear;        /* per free node: until when no reservation of this cycle holds it; scratch */
    /* per job: its user (bf_max_job_user), or NULL; and jobs of each user tested in this cycle */
    const int32_t *job_user;
    int32_t n_users;
    int32_t *user_tested;
    /* A quiet cycle (one that started nothing, and whose every decision would be the same a little
     * later): the state version it saw, and until when the next cycles decide the same (now <=
     * quiet_through and now < quiet_before). full_cycles: run every cycle even so (for the tests
     * that show it changes no schedule). */
    int64_t quiet_version;
    double quiet_through, quiet_before;
    double quiet_ends_by; /* the latest map end (bf_window) with which it decides the same */
    int full_cycles;
    int full_tries; /* make every try in full (no short-record shortcut), for the tests too */
} BackfillMap;

/* One backfill cycle at `now`: starts the jobs it can. */
void gp_backfill_map_cycle(Sim *sim, BackfillMap *bf, double now);
void gp_backfill_map_free(BackfillMap *bf);

#endif
