// libyuv (Debian's libyuv-dev): hand-tuned SIMD rows for the packed 4:2:2 to 4:2:0 conversions.
#include <libyuv/planar_functions.h>
#include <libyuv/convert.h>
