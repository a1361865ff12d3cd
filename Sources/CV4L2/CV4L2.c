// Every value Swift needs is a constant in include/CV4L2.h; libv4lconvert's functions are
// not variadic and import as they are (they are defined at the end of this file, forwarding to the
// library opened on first use).
#include "CV4L2.h"
#include "CLazyLoad.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <linux/netlink.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int camrec_open_uevent_socket(void) {
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_KOBJECT_UEVENT);
    if (fd < 0) return -errno;
    struct sockaddr_nl address;
    memset(&address, 0, sizeof address);
    address.nl_family = AF_NETLINK;
    address.nl_groups = 1;  // the kernel's own events (udevd re-sends them on group 2)
    if (bind(fd, (struct sockaddr *)&address, sizeof address) < 0) {
        int saved = errno;
        close(fd);
        return -saved;
    }
    return fd;
}

// libv4lconvert opened on first use, like libav* (Sources/CFFmpeg/LazyLibav.c): only a camera whose
// formats camrec cannot convert itself needs it, and a recording that does not maps none of its pages.
// Each function camrec calls is defined here with the header's prototype and forwards to the library's,
// looked up on the first call; a library that cannot be opened ends camrec in one line naming the package.
static void *v4lconvert_symbol(const char *name) {
    static void *handle;
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    char error[1024];
    pthread_mutex_lock(&lock);
    if (!handle) handle = camrec_open_library("libv4lconvert.so.0", "libv4lconvert0", error, sizeof error);
    void *opened = handle;
    pthread_mutex_unlock(&lock);
    if (!opened) camrec_exit_unavailable(error);
    void *found = dlsym(opened, name);
    if (!found) {
        camrec_describe_load_failure(name, dlerror(), "libv4lconvert0", error, sizeof error);
        camrec_exit_unavailable(error);
    }
    return found;
}

// V4LCONVERT(return type, name, (parameters), (arguments)): the function, forwarded.
#define V4LCONVERT(type, name, parameters, arguments)                                     \
    type name parameters { CAMREC_LAZY_LOOKUP(type, parameters, v4lconvert_symbol(#name)) return found arguments; }
#define V4LCONVERT_VOID(name, parameters, arguments)                                      \
    void name parameters { CAMREC_LAZY_LOOKUP(void, parameters, v4lconvert_symbol(#name)) found arguments; }

V4LCONVERT(struct v4lconvert_data *, v4lconvert_create, (int fd), (fd))
V4LCONVERT(struct v4lconvert_data *, v4lconvert_create_with_dev_ops, (int fd, void *dev_ops_priv, const struct libv4l_dev_ops *dev_ops),
           (fd, dev_ops_priv, dev_ops))
V4LCONVERT_VOID(v4lconvert_destroy, (struct v4lconvert_data *data), (data))
V4LCONVERT(const char *, v4lconvert_get_error_message, (struct v4lconvert_data *data), (data))
V4LCONVERT(int, v4lconvert_convert, (struct v4lconvert_data *data, const struct v4l2_format *src_fmt, const struct v4l2_format *dest_fmt,
           unsigned char *src, int src_size, unsigned char *dest, int dest_size),
           (data, src_fmt, dest_fmt, src, src_size, dest, dest_size))
