/*
 * sample_ext core: a small CPython extension with a C API of its own.
 *
 * One source, two modules:
 *   sample_ext._core       full CPython API (uses macros outside the Limited API)
 *   sample_ext._core_abi3  built with Py_LIMITED_API (abi3); setup.py defines
 *                          Py_LIMITED_API and SAMPLE_MODULE_NAME.
 *
 * Besides PyInit_*, the module exports plain C functions with default
 * visibility (sample_scale, sample_checksum, ...) so that ABI tools have a
 * C interface to compare between versions.
 *
 * SAMPLE_EXT_ABI selects the interface version:
 *   1  exports sample_scale, sample_checksum, sample_legacy_sum
 *   2  drops sample_legacy_sum, adds sample_checksum64 and sample_random_seed
 *      (the latter uses arc4random, which raises the glibc floor to 2.36)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#ifndef SAMPLE_MODULE_NAME
#define SAMPLE_MODULE_NAME _core
#endif
#ifndef SAMPLE_EXT_ABI
#define SAMPLE_EXT_ABI 1
#endif

#define SAMPLE_STR2(x) #x
#define SAMPLE_STR(x) SAMPLE_STR2(x)
#define SAMPLE_CAT2(a, b) a##b
#define SAMPLE_CAT(a, b) SAMPLE_CAT2(a, b)

#define SAMPLE_API __attribute__((visibility("default")))

/* ---- the exported C API --------------------------------------------------- */

SAMPLE_API double sample_scale(double value, double factor) { return value * factor; }

/* Adler-32 of a byte buffer. */
SAMPLE_API uint32_t sample_checksum(const unsigned char *data, size_t size) {
    uint32_t a = 1, b = 0;
    for (size_t i = 0; i < size; ++i) {
        a = (a + data[i]) % 65521u;
        b = (b + a) % 65521u;
    }
    return (b << 16) | a;
}

#if SAMPLE_EXT_ABI < 2
SAMPLE_API double sample_legacy_sum(const double *values, size_t count) {
    double total = 0.0;
    for (size_t i = 0; i < count; ++i) total += values[i];
    return total;
}
#else
/* FNV-1a, 64 bit. */
SAMPLE_API uint64_t sample_checksum64(const unsigned char *data, size_t size) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < size; ++i) {
        h ^= data[i];
        h *= 1099511628211ull;
    }
    return h;
}

SAMPLE_API uint32_t sample_random_seed(void) { return arc4random(); }
#endif

/* ---- Python bindings ---------------------------------------------------- */

static PyObject *py_scale(PyObject *self, PyObject *args) {
    PyObject *seq;
    double factor;
    (void)self;
    if (!PyArg_ParseTuple(args, "Od", &seq, &factor)) return NULL;
    PyObject *fast = PySequence_Fast(seq, "scale() expects a sequence of numbers");
    if (fast == NULL) return NULL;
#ifdef Py_LIMITED_API
    Py_ssize_t n = PySequence_Size(fast);
#else
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
#endif
    PyObject *out = PyList_New(n);
    if (out == NULL) {
        Py_DECREF(fast);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; ++i) {
#ifdef Py_LIMITED_API
        PyObject *item = PySequence_GetItem(fast, i); /* new reference */
#else
        PyObject *item = PySequence_Fast_GET_ITEM(fast, i); /* borrowed */
#endif
        double v = PyFloat_AsDouble(item);
#ifdef Py_LIMITED_API
        Py_DECREF(item);
#endif
        if (v == -1.0 && PyErr_Occurred()) {
            Py_DECREF(out);
            Py_DECREF(fast);
            return NULL;
        }
        PyObject *scaled = PyFloat_FromDouble(sample_scale(v, factor));
        if (scaled == NULL) {
            Py_DECREF(out);
            Py_DECREF(fast);
            return NULL;
        }
        PyList_SetItem(out, i, scaled); /* steals */
    }
    Py_DECREF(fast);
    return out;
}

/* The buffer protocol joined the Limited API in 3.11; below that, copy into bytes. */
#if defined(Py_LIMITED_API) && Py_LIMITED_API < 0x030B0000
#define SAMPLE_HAVE_BUFFER 0
#else
#define SAMPLE_HAVE_BUFFER 1
#endif

static PyObject *py_checksum(PyObject *self, PyObject *arg) {
    (void)self;
#if SAMPLE_HAVE_BUFFER
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) != 0) return NULL;
    uint32_t sum = sample_checksum((const unsigned char *)view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
#else
    PyObject *bytes = PyBytes_FromObject(arg);
    if (bytes == NULL) return NULL;
    char *buf;
    Py_ssize_t len;
    if (PyBytes_AsStringAndSize(bytes, &buf, &len) != 0) {
        Py_DECREF(bytes);
        return NULL;
    }
    uint32_t sum = sample_checksum((const unsigned char *)buf, (size_t)len);
    Py_DECREF(bytes);
#endif
    return PyLong_FromUnsignedLong(sum);
}

#if SAMPLE_EXT_ABI >= 2 && SAMPLE_HAVE_BUFFER
static PyObject *py_checksum64(PyObject *self, PyObject *arg) {
    (void)self;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) != 0) return NULL;
    uint64_t sum = sample_checksum64((const unsigned char *)view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLongLong(sum);
}
#endif

static PyMethodDef sample_methods[] = {
    {"scale", py_scale, METH_VARARGS, "scale(values, factor) -> list[float]"},
    {"checksum", py_checksum, METH_O, "checksum(buffer) -> int (Adler-32)"},
#if SAMPLE_EXT_ABI >= 2 && SAMPLE_HAVE_BUFFER
    {"checksum64", py_checksum64, METH_O, "checksum64(buffer) -> int (FNV-1a 64)"},
#endif
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef sample_module = {
    PyModuleDef_HEAD_INIT, SAMPLE_STR(SAMPLE_MODULE_NAME), "sample_ext core functions", -1, sample_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC SAMPLE_CAT(PyInit_, SAMPLE_MODULE_NAME)(void) {
    PyObject *m = PyModule_Create(&sample_module);
    if (m == NULL) return NULL;
    if (PyModule_AddIntConstant(m, "ABI_VERSION", SAMPLE_EXT_ABI) != 0) {
        Py_DECREF(m);
        return NULL;
    }
#ifdef Py_LIMITED_API
    if (PyModule_AddIntConstant(m, "LIMITED_API", 1) != 0) {
#else
    if (PyModule_AddIntConstant(m, "LIMITED_API", 0) != 0) {
#endif
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
