// STUB: placeholder so the library links while this file is written; replace entirely.
#include "cubby/cache.hpp"
