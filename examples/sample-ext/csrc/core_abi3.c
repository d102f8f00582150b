/* The abi3 build of core.c: a separate translation unit so that both modules get their own
 * object file. setup.py defines Py_LIMITED_API and SAMPLE_MODULE_NAME=_core_abi3. */
#include "core.c"
