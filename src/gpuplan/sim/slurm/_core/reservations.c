/*
 * Advance reservations (scontrol create reservation): windows of time on named nodes, for some
 * accounts' jobs or for none (maintenance). The piece holds nodes against the jobs that may not use
 * them (the core asks it per candidate node, GpHoldOps) and makes every window's start and end an
 * instant to schedule at, while jobs are queued.
 */
#include <math.h>

#include "plugins.h"
#include "reservations.h"

/* Is window `w` one `job` may not use? (the job's account, -1 when it has none a mask can hold, is
 * not among the window's) */
static inline int held_against(const struct GpReservations *r, int32_t w, int32_t job) {
    int32_t account = r->job_account[job];
    return account < 0 || account > 63 || !((r->win_accounts[w] >> account) & 1);
}

/* Is `node` held, during the job's run [now, until), by a reservation the job may not use?
 * Windows over by `now` are never looked at again. */
static int window_blocks(Sim *sim, void *state, int32_t node, int32_t job, double now, double until) {
    (void)sim;
    struct GpReservations *r = state;
    int64_t first = r->node_win_offsets[node], last = r->node_win_offsets[node + 1];
    int64_t k = first + r->node_win_next[node];
    while (k < last && r->win_end[r->node_win_ids[k]] <= now) { /* over: never looked at again */
        k++;
        r->node_win_next[node]++;
    }
    for (; k < last; k++) {
        int32_t w = r->node_win_ids[k];
        if (r->win_start[w] >= until) break;
        if (held_against(r, w, job)) return 1;
    }
    return 0;
}

int gp_window_blocks_at(const Sim *sim, int32_t node, int32_t job, double from, double until) {
    const struct GpReservations *r = sim->reservations;
    if (!r) return 0;
    int64_t last = r->node_win_offsets[node + 1];
    for (int64_t k = r->node_win_offsets[node] + r->node_win_next[node]; k < last; k++) {
        int32_t w = r->node_win_ids[k];
        if (r->win_start[w] >= until) break;
        if (r->win_end[w] <= from) continue;
        if (held_against(r, w, job)) return 1;
    }
    return 0;
}

/*
 * reservation.c:job_test_resv sets resv_overlap when a reservation the job does not use overlaps
 * its run [from, until) on nodes of its partition; backfill.c:_attempt_backfill then takes
 * find_resv_end(from): the earliest end, at or after `from`, of any reservation (one the job may
 * use too), as a later start to try.
 */
double gp_reservation_end_after(const Sim *sim, int32_t job, double from, double until) {
    const struct GpReservations *r = sim->reservations;
    if (!r) return NAN;
    int overlap = 0;
    double first_end = INFINITY;
    for (int32_t w = 0; w < r->n_windows; w++) {
        if (r->win_end[w] < from) continue;
        if (r->win_end[w] < first_end) first_end = r->win_end[w];
        if (!overlap && r->win_start[w] < until && r->win_end[w] > from && held_against(r, w, job)) overlap = 1;
    }
    return overlap ? first_end : NAN;
}

/* The next window bound after the last instant (bounds already served are passed). */
static double next_bound(Sim *sim, void *state) {
    struct GpReservations *r = state;
    while (r->next_bound < r->n_bounds && r->win_bounds[r->next_bound] <= sim->now) r->next_bound++;
    return r->next_bound < r->n_bounds ? r->win_bounds[r->next_bound] : INFINITY;
}

/* a queued job may wait for a reservation to end with nothing running */
static int bounds_left(const Sim *sim, const void *state) {
    (void)sim;
    const struct GpReservations *r = state;
    return r->next_bound < r->n_bounds;
}

static void reservations_free(void *state) {
    struct GpReservations *r = state;
    if (!r) return;
    PyMem_RawFree(r->node_win_next);
    PyMem_RawFree(r);
}

static const GpHoldOps WINDOWS = {window_blocks};
static const GpHooks RESERVATION_HOOKS = {
    .next_event = next_bound, .may_wake = bounds_left, .free = reservations_free};

/* Settings (reservations.py ReservationInputs.for_engine): start, end (float64) and accounts
 * (uint64 mask) per window, job_account (int32) per job, node_offsets (int64, nodes + 1),
 * node_windows (int32), bounds (float64). */
static int reservations_setup(Sim *sim, GpSettings *s) {
    struct GpReservations r = {0};
    Py_ssize_t windows, listed, bounds, accounts;
    void *start, *end, *mask, *job_account, *offsets, *ids, *win_bounds;
    Py_ssize_t nodes = sim->total_nodes;
    if (gp_read_array(s, "start", 8, -1, 0, 0, &start, &windows) < 0 ||
        gp_read_array(s, "end", 8, windows, 0, 0, &end, NULL) < 0 ||
        gp_read_array(s, "accounts", 8, -1, 0, 0, &mask, &accounts) < 0 ||
        gp_read_array(s, "job_account", 4, s->n_jobs, 0, 0, &job_account, NULL) < 0 ||
        gp_read_array(s, "node_offsets", 8, nodes + 1, 0, 0, &offsets, NULL) < 0 ||
        gp_read_array(s, "node_windows", 4, -1, 0, 0, &ids, &listed) < 0 ||
        gp_read_array(s, "bounds", 8, -1, 0, 0, &win_bounds, &bounds) < 0)
        return -1;
    const int64_t *node_offsets = offsets;
    const int32_t *node_ids = ids;
    int ok = accounts == windows && node_offsets[0] == 0 && node_offsets[nodes] == listed;
    for (Py_ssize_t node = 0; ok && node < nodes; node++) ok = node_offsets[node] <= node_offsets[node + 1];
    for (Py_ssize_t k = 0; ok && k < listed; k++) ok = node_ids[k] >= 0 && node_ids[k] < windows;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError,
                        "reservations: start, end (float64) and account mask (uint64) per window, account per "
                        "job, node offsets (int64, nodes + 1), window ids (int32), bounds (float64)");
        return -1;
    }
    if (!windows) return 0; /* nothing held: the piece stays off */
    r.win_start = start;
    r.win_end = end;
    r.win_accounts = mask;
    r.job_account = job_account;
    r.node_win_offsets = node_offsets;
    r.node_win_ids = node_ids;
    r.win_bounds = win_bounds;
    r.n_bounds = (int32_t)bounds;
    r.n_windows = (int32_t)windows;
    struct GpReservations *state = PyMem_RawMalloc(sizeof(struct GpReservations));
    if (state) {
        *state = r;
        state->node_win_next = PyMem_RawCalloc((size_t)nodes, sizeof(int32_t));
    }
    if (!state || !state->node_win_next || gp_add_piece(sim, s->piece, &RESERVATION_HOOKS, state) < 0) {
        reservations_free(state);
        PyErr_NoMemory();
        return -1;
    }
    sim->reservations = state;
    sim->hold = &WINDOWS;
    sim->hold_state = state;
    sim->whole_nodes = 0; /* nodes are no longer interchangeable */
    return 0;
}

const GpPlugin GP_RESERVATION_PLUGINS[] = {
    {"reservations", "advance reservations: nodes held over windows of time for some accounts, or none",
     reservations_setup},
    {NULL, NULL, NULL},
};
