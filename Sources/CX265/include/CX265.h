#ifndef CAMREC_CX265_H
#define CAMREC_CX265_H

// libx265 (Debian's libx265-dev for the header), opened on first use: camrec is not linked
// against it, so a recording that never encodes H.265 in software never maps it. Everything goes
// through the x265_api table, as libavcodec's wrapper does; its one entry point is the only
// symbol looked up.
#include <stddef.h>
#include <stdint.h>
#include <x265.h>

// The 8-bit api table, or NULL with the reason (naming the Debian package) in `error`.
const x265_api *camrec_x265_api(char *error, size_t size);

#endif
