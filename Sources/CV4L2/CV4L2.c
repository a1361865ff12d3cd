#include "CV4L2.h"
#include <libv4l2.h>

int camrec_v4l2_open(const char *path, int flags) { return v4l2_open(path, flags); }
int camrec_v4l2_close(int fd) { return v4l2_close(fd); }
int camrec_v4l2_ioctl(int fd, unsigned long request, void *arg) { return v4l2_ioctl(fd, request, arg); }
void *camrec_v4l2_mmap(void *start, size_t length, int prot, int flags, int fd, long long offset) {
    return v4l2_mmap(start, length, prot, flags, fd, (int64_t)offset);
}
int camrec_v4l2_munmap(void *start, size_t length) { return v4l2_munmap(start, length); }
