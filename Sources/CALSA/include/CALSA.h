#ifndef CAMREC_CALSA_H
#define CAMREC_CALSA_H

#include <alsa/asoundlib.h>
#include <stddef.h>
#include <time.h>

// Opens libasound (what every other function here needs), or says in `error` why it cannot and
// which Debian package to install. 0 on success.
int camrec_alsa_try_load(char *error, size_t size);

// Macros and enums that Swift cannot use as they are.
static const int camrec_SND_PCM_STREAM_CAPTURE = SND_PCM_STREAM_CAPTURE;
static const int camrec_SND_PCM_NONBLOCK = SND_PCM_NONBLOCK;

#endif
