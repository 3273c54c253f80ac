// Umbrella header for libcubby.
#pragma once

#include "cubby/cache.hpp"
#include "cubby/config.hpp"
#include "cubby/cubin.hpp"
#include "cubby/driver.hpp"
#include "cubby/entry.hpp"
#include "cubby/error.hpp"
#include "cubby/key.hpp"
#include "cubby/nvrtc.hpp"
#include "cubby/prefetch.hpp"
#include "cubby/types.hpp"
#include "cubby/version.hpp"
