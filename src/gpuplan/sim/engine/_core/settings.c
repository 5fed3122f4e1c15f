/* Reading a piece's settings by name (pieces.h). */
#include "pieces.h"

static PyObject *lookup(GpSettings *s, const char *key, int optional) {
    PyObject *value = PyMapping_Check(s->mapping) ? PyMapping_GetItemString(s->mapping, key) : NULL;
    if (!value) {
        if (optional && (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_KeyError))) {
            PyErr_Clear();
            return NULL;
        }
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s: setting %s is missing", s->piece, key);
        return NULL;
    }
    s->read++;
    Py_DECREF(value); /* the mapping keeps it */
    return value;
}

int gp_read_double(GpSettings *s, const char *key, double *out) {
    PyObject *value = lookup(s, key, 0);
    if (!value) return -1;
    double v = PyFloat_AsDouble(value);
    if (v == -1.0 && PyErr_Occurred()) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be a number", s->piece, key);
        return -1;
    }
    *out = v;
    return 0;
}

int gp_read_int(GpSettings *s, const char *key, int64_t *out) {
    PyObject *value = lookup(s, key, 0);
    if (!value) return -1;
    PyObject *whole = PyNumber_Long(value);
    long long v = whole ? PyLong_AsLongLong(whole) : -1;
    Py_XDECREF(whole);
    if (v == -1 && PyErr_Occurred()) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be an integer", s->piece, key);
        return -1;
    }
    *out = (int64_t)v;
    return 0;
}

int gp_read_bool(GpSettings *s, const char *key, int *out) {
    PyObject *value = lookup(s, key, 0);
    if (!value) return -1;
    int v = PyObject_IsTrue(value);
    if (v < 0) return -1;
    *out = v;
    return 0;
}

int gp_read_object(GpSettings *s, const char *key, int optional, PyObject **out) {
    PyObject *value = lookup(s, key, optional);
    if (!value && PyErr_Occurred()) return -1;
    *out = value ? value : Py_None;
    return 0;
}

int gp_read_array(GpSettings *s, const char *key, Py_ssize_t itemsize, Py_ssize_t count, int writable,
                  int optional, void **out, Py_ssize_t *items) {
    PyObject *value = lookup(s, key, optional);
    *out = NULL;
    if (!value) return PyErr_Occurred() ? -1 : 0;
    if (value == Py_None && optional) return 0;
    if (s->buffers->count == GP_MAX_BUFFERS) {
        PyErr_SetString(PyExc_RuntimeError, "too many arrays in the settings");
        return -1;
    }
    Py_buffer *view = &s->buffers->views[s->buffers->count];
    if (PyObject_GetBuffer(value, view, writable ? PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS : PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    s->buffers->count++;
    if (view->len % itemsize || (count >= 0 && view->len != count * itemsize)) {
        if (count >= 0)
            PyErr_Format(PyExc_ValueError, "%s: %s: expected %zd items of %zd bytes, got %zd bytes", s->piece, key,
                         count, itemsize, view->len);
        else
            PyErr_Format(PyExc_ValueError, "%s: %s: expected items of %zd bytes, got %zd bytes", s->piece, key,
                         itemsize, view->len);
        return -1;
    }
    if (items) *items = view->len / itemsize;
    *out = view->buf;
    return 0;
}

int gp_settings_done(GpSettings *s) {
    Py_ssize_t size = PyMapping_Size(s->mapping);
    if (size < 0) return -1;
    if (size == s->read) return 0;
    /* list the keys: some of them no piece reads */
    PyObject *keys = PyMapping_Keys(s->mapping);
    if (!keys) return -1;
    PyErr_Format(PyExc_ValueError, "%s: unknown settings among %R", s->piece, keys);
    Py_DECREF(keys);
    return -1;
}

int gp_check_indices(const int32_t *values, Py_ssize_t count, Py_ssize_t bound, const char *message) {
    for (Py_ssize_t k = 0; k < count; k++)
        if (values[k] < 0 || values[k] >= bound) {
            PyErr_Format(PyExc_ValueError, message, k);
            return -1;
        }
    return 0;
}
