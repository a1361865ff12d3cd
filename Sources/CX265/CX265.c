// libx265 opened on first use (dlopen + dlsym of x265_api_get_<build>), like libav* in
// Sources/CFFmpeg/LazyLibav.c: an H.264 recording has no use for its memory.
#include "CX265.h"
#include "CLazyLoad.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#define CAMREC_STRING(x) #x
#define CAMREC_VALUE(x) CAMREC_STRING(x)

static const char *const library_name = "libx265.so." CAMREC_VALUE(X265_BUILD);
static const char *const entry_name = "x265_api_get_" CAMREC_VALUE(X265_BUILD);
static const char *const package_name = "libx265-" CAMREC_VALUE(X265_BUILD);

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static const x265_api *(*api_get)(int);

const x265_api *camrec_x265_api(char *error, size_t size) {
    pthread_mutex_lock(&load_lock);
    if (!api_get) {
        void *handle = camrec_open_library(library_name, package_name, error, size);
        void *entry = handle ? dlsym(handle, entry_name) : NULL;
        if (!entry) {
            if (handle) camrec_describe_load_failure(entry_name, dlerror(), package_name, error, size);
            pthread_mutex_unlock(&load_lock);
            return NULL;
        }
        api_get = (const x265_api *(*)(int))entry;
    }
    pthread_mutex_unlock(&load_lock);
    const x265_api *api = api_get(8);
    if (!api) snprintf(error, size, "%s has no 8-bit encoder", library_name);
    return api;
}
