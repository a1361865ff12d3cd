#include "CLazyLoad.h"

#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

void camrec_describe_load_failure(const char *what, const char *detail, const char *package, char *error, size_t size) {
    if (!error || size == 0) return;
    snprintf(error, size, "cannot load %s (%s); install Debian's %s (apt-get install %s)", what,
             detail ? detail : "unknown error", package, package);
}

void *camrec_open_library(const char *library, const char *package, char *error, size_t size) {
    void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!handle) camrec_describe_load_failure(library, dlerror(), package, error, size);
    return handle;
}

_Noreturn void camrec_exit_unavailable(const char *line) {
    fprintf(stderr, "camrec: error: %s\n", line);
    fflush(stderr);
    _exit(73);
}
