/*
 * The Kubernetes model's compiled pieces, in the same extension as the batch engine
 * (gpuplan.sim.engine._batchcore): kube-scheduler's node choice and binding (nodes.c).
 */
#ifndef GPUPLAN_KUBE_H
#define GPUPLAN_KUBE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Add the types Scorer and NodeState and the function scoring_strategies to the module. */
int gp_kube_add_types(PyObject *module);

#endif
