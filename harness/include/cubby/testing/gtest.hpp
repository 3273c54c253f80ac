// The cubby GoogleTest harness (target cubby::gtest; cubby::gtest_main adds a main()).
// See README.md, "GoogleTest", and docs/reference.md, "GoogleTest harness".
#pragma once

#include "cubby/testing/environment.hpp"
#include "cubby/testing/kernel_test.hpp"
#include "cubby/testing/listener.hpp"
#include "cubby/testing/options.hpp"
#include "cubby/testing/session.hpp"
