/*
 * The kinds of Slurm pieces and their plugins, by the names users know. Each list is defined in
 * the piece's own file and ends with a {NULL} entry; the binding (engine/_core/module.c) takes one
 * plugin of each kind by name, keyword by keyword. To add a plugin of a kind (a preemption order,
 * a priority plugin), add an entry and its functions to that kind's file.
 */
#ifndef GPUPLAN_SLURM_PLUGINS_H
#define GPUPLAN_SLURM_PLUGINS_H

#include "pieces.h"

extern const GpPlugin GP_SCHED_PLUGINS[];        /* policies.c: sched/builtin, sched/easy, sched/backfill */
extern const GpPlugin GP_SELECT_PLUGINS[];       /* select.c: select/cons_tres, select/linear, ... */
extern const GpPlugin GP_PRIORITY_PLUGINS[];     /* priority.c: priority/multifactor */
extern const GpPlugin GP_QOS_PLUGINS[];          /* qos.c: QoS resource limits */
extern const GpPlugin GP_PREEMPT_PLUGINS[];      /* preempt.c: preempt/partition_prio, preempt/qos, ... */
extern const GpPlugin GP_RESERVATION_PLUGINS[];  /* reservations.c: advance reservations */
extern const GpPlugin GP_LENDING_PLUGINS[];      /* lending.c: nodes lent to another side */
extern const GpPlugin GP_TOPOLOGY_PLUGINS[];     /* topology.c: topology/block, topology/tree */
extern const GpPlugin GP_POWER_PLUGINS[];        /* power.c: power saving (SuspendTime) */

#endif
