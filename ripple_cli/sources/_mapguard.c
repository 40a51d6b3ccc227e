/* ripple_cli.sources._mapguard: reading a file through mmap without dying
 * when the file shrinks underneath.
 *
 * A regular file is read through mmap windows (sources/files.py): the
 * decoder then works on the page cache itself, where read() copied every
 * byte into fresh memory first (a third of `verify`'s time on a 127 MB
 * stream).  The price of mmap is SIGBUS: a page of the mapping past the
 * file's end, once another process truncates the file, kills the reader
 * on its next touch.  This module catches that signal for the windows it
 * watches: it maps zero pages over the rest of the window, so that the
 * access that faulted reads zeros and goes on, and counts the fault; the
 * source looks at the count after each window and ends the input with one
 * line (the file shrank).  A SIGBUS anywhere else gets the disposition
 * that was there before.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_WINDOWS 64 /* a reader holds two or three at once */

typedef struct {
    volatile uintptr_t start, end; /* [start, end), 0 when free */
} Window;

static Window windows[MAX_WINDOWS];
static volatile sig_atomic_t faults;
static struct sigaction previous;
static int installed;
static uintptr_t page_mask;

static void
on_sigbus(int sig, siginfo_t *si, void *ctx)
{
    uintptr_t at = (uintptr_t)si->si_addr;
    for (int i = 0; i < MAX_WINDOWS; i++) {
        uintptr_t start = windows[i].start, end = windows[i].end;
        if (start && at >= start && at < end) {
            uintptr_t page = at & page_mask;
            /* mmap is a plain system call on Linux, safe in a handler */
            if (mmap((void *)page, end - page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) !=
                MAP_FAILED) {
                faults++;
                return; /* the access is made again, on a zero page */
            }
            break;
        }
    }
    /* not a window of ours: what was there before (the default ends the
     * process when the access is made again) */
    sigaction(SIGBUS, &previous, NULL);
    if (previous.sa_flags & SA_SIGINFO) {
        if (previous.sa_sigaction)
            previous.sa_sigaction(sig, si, ctx);
    }
    else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN)
        previous.sa_handler(sig);
}

static int
install(void)
{
    if (installed)
        return 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGBUS, &sa, &previous)) {
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    installed = 1;
    return 0;
}

/* watch(buffer) -> slot: faults inside the buffer's pages are caught. */
static PyObject *
py_watch(PyObject *Py_UNUSED(mod), PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE))
        return NULL;
    uintptr_t start = (uintptr_t)view.buf, end = start + (uintptr_t)view.len;
    PyBuffer_Release(&view); /* the address stays: the caller keeps the mapping until unwatch */
    if (install())
        return NULL;
    for (int i = 0; i < MAX_WINDOWS; i++) {
        if (!windows[i].start) {
            windows[i].end = end;
            windows[i].start = start; /* last: the handler takes a slot by its start */
            return PyLong_FromLong(i);
        }
    }
    PyErr_SetString(PyExc_RuntimeError, "too many mapped windows at once");
    return NULL;
}

static PyObject *
py_unwatch(PyObject *Py_UNUSED(mod), PyObject *arg)
{
    long i = PyLong_AsLong(arg);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    if (i < 0 || i >= MAX_WINDOWS) {
        PyErr_SetString(PyExc_ValueError, "not a window slot");
        return NULL;
    }
    windows[i].start = 0;
    windows[i].end = 0;
    Py_RETURN_NONE;
}

static PyObject *
py_faults(PyObject *Py_UNUSED(mod), PyObject *Py_UNUSED(arg))
{
    return PyLong_FromLong((long)faults);
}

static PyMethodDef methods[] = {
    {"watch", py_watch, METH_O, "watch(buffer) -> slot: a SIGBUS in its pages reads zeros and is counted."},
    {"unwatch", py_unwatch, METH_O, "unwatch(slot): before the mapping goes."},
    {"faults", py_faults, METH_NOARGS, "How many SIGBUS faults in watched windows so far."},
    {NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "ripple_cli.sources._mapguard",
    .m_doc = "SIGBUS in mmap windows of a file that shrank: zeros and a count (see sources/files.py).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__mapguard(void)
{
    page_mask = ~((uintptr_t)sysconf(_SC_PAGESIZE) - 1);
    return PyModule_Create(&module_def);
}
