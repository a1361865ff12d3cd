// What every library camrec opens on first use (libav*, libx265, libasound) shares: opening it, and
// the one line that says which Debian package to install when it cannot be opened.
#ifndef CAMREC_LAZY_LOAD_H
#define CAMREC_LAZY_LOAD_H

#include <stddef.h>

// dlopen(library, RTLD_NOW | RTLD_LOCAL); NULL with the line in `error` when it cannot.
void *camrec_open_library(const char *library, const char *package, char *error, size_t size);

// "cannot load <what> (<detail>); install Debian's <package> (apt-get install <package>)".
void camrec_describe_load_failure(const char *what, const char *detail, const char *package, char *error, size_t size);

// A library that fails where a call needs it is a broken installation: "camrec: error: <line>" on
// stderr and exit status 73 (what camrec needs is unavailable).
_Noreturn void camrec_exit_unavailable(const char *line);

// CAMREC_LAZY_LOOKUP(type, (parameters), lookup): declares `found`, a library's function, looked up once by
// the expression `lookup` (which exits when it cannot be found) and kept for every later call.
#define CAMREC_LAZY_LOOKUP(type, parameters, lookup)                                      \
    static type (*function) parameters;                                                   \
    type (*found) parameters = __atomic_load_n(&function, __ATOMIC_ACQUIRE);              \
    if (!found) {                                                                         \
        found = (type (*) parameters)(lookup);                                            \
        __atomic_store_n(&function, found, __ATOMIC_RELEASE);                             \
    }

#endif
