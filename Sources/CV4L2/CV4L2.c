// Every value Swift needs is a constant in include/CV4L2.h; libv4lconvert's functions are
// not variadic and import as they are. SwiftPM wants one C file in a C target.
#include "CV4L2.h"
