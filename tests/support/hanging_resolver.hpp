// A resolver (net/resolver.hpp) that never answers until the test ends, as a DNS server that does
// not reply: each call blocks until the HangingResolver is destroyed, then fails. Its calls own
// what they wait on, so a call still blocked on a detached thread outlives the object safely.
#pragma once

#include <atomic>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "net/resolver.hpp"

namespace cubby::testing {

class HangingResolver {
 public:
  ~HangingResolver() { release_.set_value(); }
  Resolver resolver() {
    return [released = released_, calls = calls_](const std::string&,
                                                  int) -> Result<std::vector<SocketAddress>> {
      ++*calls;
      released.wait();
      return fail(Errc::io, "released");
    };
  }
  int calls() const { return *calls_; }

 private:
  std::promise<void> release_;
  std::shared_future<void> released_ = release_.get_future().share();
  std::shared_ptr<std::atomic<int>> calls_ = std::make_shared<std::atomic<int>>(0);
};

}  // namespace cubby::testing
