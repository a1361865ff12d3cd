#ifndef CAMREC_CV4L2_H
#define CAMREC_CV4L2_H

#include <linux/videodev2.h>
#include <stddef.h>
#include <sys/types.h>
#include <stdint.h>

// VIDIOC_* are function-like _IOWR macros and V4L2_PIX_FMT_* use v4l2_fourcc():
// neither imports into Swift, so each value Swift needs is a constant here.
static const unsigned long CAMREC_VIDIOC_QUERYCAP = VIDIOC_QUERYCAP;
static const unsigned long CAMREC_VIDIOC_ENUM_FMT = VIDIOC_ENUM_FMT;
static const unsigned long CAMREC_VIDIOC_G_FMT = VIDIOC_G_FMT;
static const unsigned long CAMREC_VIDIOC_S_FMT = VIDIOC_S_FMT;
static const unsigned long CAMREC_VIDIOC_TRY_FMT = VIDIOC_TRY_FMT;
static const unsigned long CAMREC_VIDIOC_REQBUFS = VIDIOC_REQBUFS;
static const unsigned long CAMREC_VIDIOC_QUERYBUF = VIDIOC_QUERYBUF;
static const unsigned long CAMREC_VIDIOC_QBUF = VIDIOC_QBUF;
static const unsigned long CAMREC_VIDIOC_DQBUF = VIDIOC_DQBUF;
static const unsigned long CAMREC_VIDIOC_EXPBUF = VIDIOC_EXPBUF;
static const unsigned long CAMREC_VIDIOC_STREAMON = VIDIOC_STREAMON;
static const unsigned long CAMREC_VIDIOC_STREAMOFF = VIDIOC_STREAMOFF;
static const unsigned long CAMREC_VIDIOC_G_PARM = VIDIOC_G_PARM;
static const unsigned long CAMREC_VIDIOC_S_PARM = VIDIOC_S_PARM;
static const unsigned long CAMREC_VIDIOC_G_PRIORITY = VIDIOC_G_PRIORITY;
static const unsigned long CAMREC_VIDIOC_S_PRIORITY = VIDIOC_S_PRIORITY;
static const unsigned long CAMREC_VIDIOC_ENUM_FRAMESIZES = VIDIOC_ENUM_FRAMESIZES;
static const unsigned long CAMREC_VIDIOC_ENUM_FRAMEINTERVALS = VIDIOC_ENUM_FRAMEINTERVALS;
static const unsigned long CAMREC_VIDIOC_ENUMINPUT = VIDIOC_ENUMINPUT;
static const unsigned long CAMREC_VIDIOC_G_INPUT = VIDIOC_G_INPUT;
static const unsigned long CAMREC_VIDIOC_S_INPUT = VIDIOC_S_INPUT;
static const unsigned long CAMREC_VIDIOC_QUERYCTRL = VIDIOC_QUERYCTRL;
static const unsigned long CAMREC_VIDIOC_G_CTRL = VIDIOC_G_CTRL;
static const unsigned long CAMREC_VIDIOC_S_CTRL = VIDIOC_S_CTRL;

static const unsigned int CAMREC_V4L2_PIX_FMT_YUYV = V4L2_PIX_FMT_YUYV;
static const unsigned int CAMREC_V4L2_PIX_FMT_UYVY = V4L2_PIX_FMT_UYVY;
static const unsigned int CAMREC_V4L2_PIX_FMT_YVYU = V4L2_PIX_FMT_YVYU;
static const unsigned int CAMREC_V4L2_PIX_FMT_VYUY = V4L2_PIX_FMT_VYUY;
static const unsigned int CAMREC_V4L2_PIX_FMT_NV12 = V4L2_PIX_FMT_NV12;
static const unsigned int CAMREC_V4L2_PIX_FMT_NV21 = V4L2_PIX_FMT_NV21;
static const unsigned int CAMREC_V4L2_PIX_FMT_NV12M = V4L2_PIX_FMT_NV12M;
static const unsigned int CAMREC_V4L2_PIX_FMT_YUV420 = V4L2_PIX_FMT_YUV420;
static const unsigned int CAMREC_V4L2_PIX_FMT_YVU420 = V4L2_PIX_FMT_YVU420;
static const unsigned int CAMREC_V4L2_PIX_FMT_YUV420M = V4L2_PIX_FMT_YUV420M;
static const unsigned int CAMREC_V4L2_PIX_FMT_YUV422P = V4L2_PIX_FMT_YUV422P;
static const unsigned int CAMREC_V4L2_PIX_FMT_NV16 = V4L2_PIX_FMT_NV16;
static const unsigned int CAMREC_V4L2_PIX_FMT_GREY = V4L2_PIX_FMT_GREY;
static const unsigned int CAMREC_V4L2_PIX_FMT_RGB24 = V4L2_PIX_FMT_RGB24;
static const unsigned int CAMREC_V4L2_PIX_FMT_BGR24 = V4L2_PIX_FMT_BGR24;
static const unsigned int CAMREC_V4L2_PIX_FMT_BGR32 = V4L2_PIX_FMT_BGR32;
static const unsigned int CAMREC_V4L2_PIX_FMT_XBGR32 = V4L2_PIX_FMT_XBGR32;
static const unsigned int CAMREC_V4L2_PIX_FMT_RGB32 = V4L2_PIX_FMT_RGB32;
static const unsigned int CAMREC_V4L2_PIX_FMT_XRGB32 = V4L2_PIX_FMT_XRGB32;
static const unsigned int CAMREC_V4L2_PIX_FMT_MJPEG = V4L2_PIX_FMT_MJPEG;
static const unsigned int CAMREC_V4L2_PIX_FMT_JPEG = V4L2_PIX_FMT_JPEG;
static const unsigned int CAMREC_V4L2_PIX_FMT_H264 = V4L2_PIX_FMT_H264;

// The kernel's device events (NETLINK_KOBJECT_UEVENT, its own multicast group, which any user may
// read and which needs no udev daemon): how camrec learns that a camera came back. Returns a
// non-blocking, close-on-exec socket, or -errno.
int camrec_open_uevent_socket(void);

// libv4lconvert converts the formats camrec has no converter of its own for (Bayer, old
// webcams' vendor formats). libv4l2's variadic v4l2_ioctl wrapper is not used: it converts
// inside DQBUF, hiding the buffer flags and bytesused that camrec's error counting needs.
#include <libv4l-plugin.h>
#include <libv4lconvert.h>

#endif
