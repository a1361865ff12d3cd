// Every value Swift needs is a constant in include/CV4L2.h; libv4lconvert's functions are
// not variadic and import as they are. SwiftPM wants one C file in a C target.
#include "CV4L2.h"

#include <errno.h>
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
